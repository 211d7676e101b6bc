"""Kafka's SslPrincipalMapper (KIP-371): `ssl.principal.mapping.rules` turns the
distinguished name of a client certificate into the principal's name.

The rules are a comma-separated list of `RULE:pattern/replacement/[LU]` and `DEFAULT`
(the default value). They are tried in order and the first whose pattern matches the
whole DN gives the name: the DN with the pattern replaced (`$1` refers to a group), then
lowercased with `/L` or uppercased with `/U`; `DEFAULT` gives the DN itself. When no rule
matches, Kafka fails the authentication (SslPrincipalMapper.NoMatchingRule): so does
`SslPrincipalMapper.name`. A client without a certificate is `User:ANONYMOUS`
(DefaultKafkaPrincipalBuilder).

The rules are split and parsed with Kafka's own regular expressions, so what Kafka accepts
or refuses (`default`, `DEFAULT/L`, `RULE:.../$1/L/U`...) is the same here. The patterns are
Java regular expressions run by Python's `re`, which agrees on what rules are written with
(groups, classes, `.*?`, anchors, `\\w`/`\\d`/`\\s`, which are ASCII in both, as here with
re.ASCII). Translated: named groups `(?<name>...)` and `\\Q...\\E` quoting. Refused with a
ValueError at parse time rather than run with another meaning: Java-only syntax Python
rejects (`\\p{Lower}`, ...) and class unions or intersections (`[a-z&&[^e]]`). Left as they
differ: `.` also matches `\\r`, U+0085, U+2028 and U+2029 in Python (Java stops at them).
The replacement follows Java's Matcher.appendReplacement (`$n`, `${name}`, `\\x` for a
literal x) after Kafka's escapeLiteralBackReferences (a `$n` beyond the pattern's groups is
literal text); a replacement Java would reject at authentication time is refused here when
the rules are read.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Final

from minikafka.security.principal import ANONYMOUS, KafkaPrincipal

DEFAULT_RULES: Final = "DEFAULT"

# Kafka's SslPrincipalMapper.RULE_PATTERN and RULE_SPLITTER, unchanged. Python's re gives
# the same matches for them (lazy groups, alternation order, empty matches in finditer);
# re.ASCII makes `\s` Java's [ \t\n\x0B\f\r].
_RULE_PATTERN: Final = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER: Final = re.compile(r"\s*(" + _RULE_PATTERN + r")\s*(,\s*|$)", re.ASCII)
_RULE_PARSER: Final = re.compile(_RULE_PATTERN, re.ASCII)
_BACK_REFERENCE: Final = re.compile(r"\$(\d+)")


class NoMatchingRule(Exception):
    """No rule maps the DN: Kafka fails the client's authentication."""


@dataclass(frozen=True)
class _Group:
    """A group reference in a replacement: its number or name."""

    ref: int | str


_Replacement = tuple[str | _Group, ...]


@dataclass(frozen=True)
class _Rule:
    is_default: bool
    pattern_text: str = ""  # as written, for str() (Kafka's Pattern.toString)
    replacement_text: str = ""
    to_lower: bool = False
    to_upper: bool = False
    pattern: re.Pattern[str] | None = None
    replacement: _Replacement = ()

    def apply(self, dn: str) -> str | None:
        if self.is_default:
            return dn
        assert self.pattern is not None
        if self.pattern.fullmatch(dn) is None:
            return None
        # Kafka: dn.replaceAll(pattern, replacement), every match replaced (Python's re.sub
        # allows an empty match after a non-empty one, as Java's find loop does).
        result = self.pattern.sub(lambda m: _expand(self.replacement, m), dn)
        if self.to_lower:
            return result.lower()
        if self.to_upper:
            return result.upper()
        return result

    def __str__(self) -> str:
        if self.is_default:
            return "DEFAULT"
        text = f"RULE:{self.pattern_text}/{self.replacement_text}"
        if self.to_lower:
            text += "/L"
        elif self.to_upper:
            text += "/U"
        return text


@dataclass(frozen=True)
class SslPrincipalMapper:
    rules: tuple[_Rule, ...]

    @classmethod
    def from_rules(cls, text: str | None) -> SslPrincipalMapper:
        """Parse `ssl.principal.mapping.rules` (None: `DEFAULT`). ValueError naming the bad
        rule on a syntax error, an invalid pattern or an invalid replacement."""
        parsed = (_parse_rule(r) for r in _split_rules(text))
        return cls(tuple(r for r in parsed if r is not None))

    def name(self, distinguished_name: str) -> str:
        """The principal name for a DN; NoMatchingRule when no rule applies."""
        for rule in self.rules:
            result = rule.apply(distinguished_name)
            if result is not None:
                return result
        raise NoMatchingRule(f"No rules apply to {distinguished_name}, rules {self._rules_text()}")

    def _rules_text(self) -> str:
        return "[" + ", ".join(str(r) for r in self.rules) + "]"

    def __str__(self) -> str:
        # Kafka's toString, which SslPrincipalMapperTest compares.
        return f"SslPrincipalMapper(rules = {self._rules_text()})"


def ssl_principal(dn: str | None, mapper: SslPrincipalMapper) -> KafkaPrincipal:
    """The principal of an SSL connection: the client certificate's subject mapped by the
    rules, `User:ANONYMOUS` without a certificate (DefaultKafkaPrincipalBuilder).
    NoMatchingRule when no rule maps the DN."""
    if dn is None:
        return ANONYMOUS
    return KafkaPrincipal.user(mapper.name(dn))


def _split_rules(text: str | None) -> list[str]:
    if text is None:
        text = DEFAULT_RULES
    return [m.group(1) for m in _RULE_SPLITTER.finditer(text.strip())]


def _parse_rule(rule: str) -> _Rule | None:
    m = _RULE_PARSER.match(rule)
    if m is None:  # cannot happen: the last alternative matches anything
        raise ValueError(f"Invalid rule: {rule}")
    if m.end() != len(rule):
        raise ValueError(f"Invalid rule: `{rule}`, unmatched substring: `{rule[m.end() :]}`")
    if m.group(1) is not None:
        return _Rule(is_default=True)
    if m.group(2) is None:
        return None  # an empty rule, ignored as in Kafka
    pattern_text, replacement_text, case = m.group(2), m.group(4), m.group(6)
    pattern = _compile_java_regex(pattern_text, rule)
    return _Rule(
        is_default=False,
        pattern_text=pattern_text,
        replacement_text=replacement_text,
        to_lower=case == "L",
        to_upper=case == "U",
        pattern=pattern,
        replacement=_parse_replacement(replacement_text, pattern, rule),
    )


def _compile_java_regex(java: str, rule: str) -> re.Pattern[str]:
    python = _translate_java_regex(java)
    try:
        with warnings.catch_warnings():
            # Python warns (FutureWarning) where a Java class union or intersection would
            # be read as literal characters: refused instead of matching something else.
            warnings.simplefilter("error", FutureWarning)
            return re.compile(python, re.ASCII)
    except (re.error, FutureWarning) as e:
        raise ValueError(f"Invalid rule: `{rule}`: pattern `{java}`: {e}") from None


def _translate_java_regex(java: str) -> str:
    """The few Java regex constructs Python spells differently: `(?<name>` is `(?P<name>`,
    `\\Q...\\E` quotes, Java's `\\z` is Python's `\\Z`."""
    out: list[str] = []
    i, n = 0, len(java)
    in_class = False
    while i < n:
        c = java[i]
        if c == "\\" and i + 1 < n:
            nxt = java[i + 1]
            if nxt == "Q":
                end = java.find("\\E", i + 2)
                literal = java[i + 2 :] if end < 0 else java[i + 2 : end]
                out.append(re.escape(literal))
                i = n if end < 0 else end + 2
                continue
            out.append("\\Z" if nxt == "z" and not in_class else c + nxt)
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            # A `]` right after `[` or `[^` is a literal in both dialects.
            out.append(c)
            i += 1
            if i < n and java[i] == "^":
                out.append("^")
                i += 1
            if i < n and java[i] == "]":
                out.append("]")
                i += 1
            continue
        elif java.startswith("(?<", i) and i + 3 < n and java[i + 3] not in "=!":
            out.append("(?P<")
            i += 3
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _parse_replacement(text: str, pattern: re.Pattern[str], rule: str) -> _Replacement:
    """Kafka's escapeLiteralBackReferences, then Java's appendReplacement syntax, read once
    so that a replacement Java would reject when applying it is refused with the rules."""
    escaped = _escape_literal_back_references(text, pattern.groups)
    parts: list[str | _Group] = []
    literal: list[str] = []

    def bad(why: str) -> ValueError:
        return ValueError(f"Invalid rule: `{rule}`: replacement `{text}`: {why}")

    i, n = 0, len(escaped)
    while i < n:
        c = escaped[i]
        if c == "\\":
            if i + 1 == n:
                raise bad("character to be escaped is missing")
            literal.append(escaped[i + 1])
            i += 2
        elif c == "$":
            i += 1
            if i == n:
                raise bad("group index is missing after $")
            if escaped[i] == "{":
                end = escaped.find("}", i)
                if end < 0:
                    raise bad("named group reference is missing its }")
                name = escaped[i + 1 : end]
                if name not in pattern.groupindex:
                    raise bad(f"no group named {name}")
                ref: int | str = name
                i = end + 1
            else:
                if not ("0" <= escaped[i] <= "9"):
                    raise bad("illegal group reference")
                number = int(escaped[i])
                i += 1
                # Java reads further digits while they still name an existing group.
                while i < n and "0" <= escaped[i] <= "9":
                    longer = number * 10 + int(escaped[i])
                    if longer > pattern.groups:
                        break
                    number = longer
                    i += 1
                if number > pattern.groups:
                    raise bad(f"no group {number}")
                ref = number
            if literal:
                parts.append("".join(literal))
                literal.clear()
            parts.append(_Group(ref))
        else:
            literal.append(c)
            i += 1
    if literal:
        parts.append("".join(literal))
    return tuple(parts)


def _escape_literal_back_references(text: str, groups: int) -> str:
    """Kafka's Rule.escapeLiteralBackReferences (from Apache NiFi), step for step: a `$n`
    beyond the pattern's groups becomes `\\$n`, a literal. Like Kafka it finds the
    references in the text as written and inserts at those offsets into the text being
    changed, so only the first such reference is sure to be escaped where it stands."""
    if groups == 0:
        return text
    value = text
    for m in _BACK_REFERENCE.finditer(text):
        digits = m.group(1)
        if digits.startswith("0"):
            continue
        index = int(digits)
        while index > groups and index >= 10:
            index //= 10
        if index > groups:
            start = m.start(1)
            value = value[: start - 1] + "\\" + value[start - 1 :]
    return value


def _expand(replacement: _Replacement, match: re.Match[str]) -> str:
    out: list[str] = []
    for part in replacement:
        if isinstance(part, str):
            out.append(part)
        else:
            # Java appends nothing for a group that took no part in the match.
            out.append(match.group(part.ref) or "")
    return "".join(out)
