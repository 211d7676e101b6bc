"""Kafka's `sasl.jaas.config` values, as Kafka's JaasConfig and JaasContext read them.

The value of `sasl.jaas.config` or `listener.name.<listener>.<mechanism>.sasl.jaas.config`
is one JAAS login module entry:

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_alice="alice-secret";

Kafka reads it with java.io.StreamTokenizer (comments `//`, `/* */` and a lone `/`;
word characters letters, digits, `.`, `-`, `_`, `$`; quoted strings in `"` or `'` with
Java escapes, ending at the closing quote or the end of the line). This module ports that
tokenizer, so that whatever Kafka accepts parses to the same entry here, including its
quirks: a bare value must start with a letter (`iterations=4096` has no value: a number is
not a string; write `iterations="4096"`), and an option given twice keeps the last value.
JaasContext then wants exactly one login module and refuses JndiLoginModule (CVE-2023-25194).

Error messages name keys, never values: the config holds passwords. Where Kafka's message
would echo a token that is not certainly a key (a bare word where a key was expected may
be the tail of an unquoted password holding a space), this one names the last good key
instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

PLAIN_LOGIN_MODULE: Final = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE: Final = "org.apache.kafka.common.security.scram.ScramLoginModule"
# JaasUtils.DISALLOWED_LOGIN_MODULES_DEFAULT.
DISALLOWED_LOGIN_MODULES: Final = frozenset({"com.sun.security.auth.module.JndiLoginModule"})
CONTROL_FLAGS: Final = ("required", "requisite", "sufficient", "optional")

# PlainServerCallbackHandler.JAAS_USER_PREFIX.
USER_PREFIX: Final = "user_"


class JaasConfigError(ValueError):
    """A JAAS config Kafka would refuse. The message never holds an option's value."""


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    # Lower case: Kafka reads the flag case-insensitively.
    control_flag: str
    options: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        # Option values are passwords: only the keys are shown.
        keys = ", ".join(sorted(self.options))
        return f"JaasEntry({self.login_module} {self.control_flag} options: {keys})"


# ---------------------------------------------------------------------------------------
# java.io.StreamTokenizer, as JaasConfig sets it up

_TT_EOF: Final = -1
_TT_NUMBER: Final = -2
_TT_WORD: Final = -3
_NEED_CHAR: Final = 0x7FFFFFFF

_CT_WHITESPACE: Final = 1
_CT_DIGIT: Final = 2
_CT_ALPHA: Final = 4
_CT_QUOTE: Final = 8
_CT_COMMENT: Final = 16


def _character_types() -> list[int]:
    ct = [0] * 256
    # The default StreamTokenizer: letters and 160-255 make words, 0-32 is white space,
    # '/' starts a comment, '"' and "'" quote, digits '.' and '-' make numbers.
    for c in range(ord("a"), ord("z") + 1):
        ct[c] |= _CT_ALPHA
    for c in range(ord("A"), ord("Z") + 1):
        ct[c] |= _CT_ALPHA
    for c in range(160, 256):
        ct[c] |= _CT_ALPHA
    for c in range(0, ord(" ") + 1):
        ct[c] = _CT_WHITESPACE
    ct[ord("/")] = _CT_COMMENT
    ct[ord('"')] = _CT_QUOTE
    ct[ord("'")] = _CT_QUOTE
    for c in range(ord("0"), ord("9") + 1):
        ct[c] |= _CT_DIGIT
    ct[ord(".")] |= _CT_DIGIT
    ct[ord("-")] |= _CT_DIGIT
    # JaasConfig's additions: '-', '_' and '$' are word characters too.
    for ch in "-_$":
        ct[ord(ch)] |= _CT_ALPHA
    return ct


_CTYPE: Final = _character_types()


def _ctype(c: int) -> int:
    if c < 0:
        return _CT_WHITESPACE
    return _CTYPE[c] if c < 256 else _CT_ALPHA


class _Tokenizer:
    """A port of StreamTokenizer.nextToken with slash-slash and slash-star comments on."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._pos = 0
        self._peekc = _NEED_CHAR
        self.ttype = _NEED_CHAR
        self.sval: str | None = None

    def _read(self) -> int:
        if self._pos >= len(self._text):
            return -1
        c = ord(self._text[self._pos])
        self._pos += 1
        return c

    def next_token(self) -> int:
        # A loop where Java recurses after a comment: a long run of comments must not
        # exhaust Python's stack.
        while True:
            token = self._next_token_or_comment()
            if token is not None:
                self.ttype = token
                return token

    def _next_token_or_comment(self) -> int | None:
        self.sval = None
        c = self._peekc
        if c < 0:
            c = _NEED_CHAR
        if c == _NEED_CHAR:
            c = self._read()
            if c < 0:
                return _TT_EOF
        self._peekc = _NEED_CHAR
        ctype = _ctype(c)
        while ctype & _CT_WHITESPACE:
            c = self._read()
            if c < 0:
                return _TT_EOF
            ctype = _ctype(c)

        if ctype & _CT_DIGIT:
            # A number: its value is of no use to JaasConfig, which wants strings; only
            # where it ends matters. A lone '-' is an ordinary character.
            if c == ord("-"):
                c = self._read()
                if c != ord(".") and not ord("0") <= c <= ord("9"):
                    self._peekc = c
                    return ord("-")
            seen_dot = False
            while True:
                if c == ord(".") and not seen_dot:
                    seen_dot = True
                elif not ord("0") <= c <= ord("9"):
                    break
                c = self._read()
            self._peekc = c
            return _TT_NUMBER

        if ctype & _CT_ALPHA:
            chars: list[str] = []
            while True:
                chars.append(chr(c))
                c = self._read()
                if not _ctype(c) & (_CT_ALPHA | _CT_DIGIT):
                    break
            self._peekc = c
            self.sval = "".join(chars)
            return _TT_WORD

        if ctype & _CT_QUOTE:
            return self._quoted(c)

        if c == ord("/"):
            c = self._read()
            if c == ord("*"):
                prevc = 0
                while True:
                    c = self._read()
                    if c == ord("/") and prevc == ord("*"):
                        return None
                    if c == ord("\r"):
                        c = self._read()
                        if c == ord("\n"):
                            c = self._read()
                    elif c == ord("\n"):
                        c = self._read()
                    if c < 0:
                        return _TT_EOF
                    prevc = c
            # '//', or a lone '/' (a comment character of its own): to the end of the
            # line, the character after the '/' skipped first, as Java does.
            self._skip_line()
            return None

        return c

    def _skip_line(self) -> None:
        while True:
            c = self._read()
            if c in (ord("\n"), ord("\r")) or c < 0:
                self._peekc = c
                return

    def _quoted(self, quote: int) -> int:
        chars: list[str] = []
        d = self._read()
        # Java ends a quoted string at its quote, the end of the line or the end of input:
        # an unclosed quote is not an error of its own.
        while d >= 0 and d != quote and d not in (ord("\n"), ord("\r")):
            if d == ord("\\"):
                c = self._read()
                first = c
                if ord("0") <= c <= ord("7"):
                    # Octal: up to three digits, \377 at most.
                    c -= ord("0")
                    c2 = self._read()
                    if ord("0") <= c2 <= ord("7"):
                        c = (c << 3) + (c2 - ord("0"))
                        c2 = self._read()
                        if ord("0") <= c2 <= ord("7") and first <= ord("3"):
                            c = (c << 3) + (c2 - ord("0"))
                            d = self._read()
                        else:
                            d = c2
                    else:
                        d = c2
                else:
                    c = _ESCAPES.get(c, c)
                    d = self._read()
                # Java's (char) -1 for a backslash at the end of input.
                chars.append(chr(c) if c >= 0 else "\uffff")
            else:
                chars.append(chr(d))
                d = self._read()
        self._peekc = _NEED_CHAR if d == quote else d
        self.sval = "".join(chars)
        return quote


_ESCAPES: Final = {
    ord("a"): 0x07,
    ord("b"): 0x08,
    ord("f"): 0x0C,
    ord("n"): 0x0A,
    ord("r"): 0x0D,
    ord("t"): 0x09,
    ord("v"): 0x0B,
}


# ---------------------------------------------------------------------------------------
# JaasConfig and JaasContext


def parse_jaas_config(text: str) -> JaasEntry:
    """The login module entry of a `sasl.jaas.config` value: Kafka's JaasConfig, then
    JaasContext's checks (exactly one module, not a disallowed one)."""
    tokenizer = _Tokenizer(text)
    entries: list[JaasEntry] = []
    while tokenizer.next_token() != _TT_EOF:
        entries.append(_parse_entry(tokenizer))
    if not entries:
        raise JaasConfigError("Login module not specified in JAAS config")
    if len(entries) != 1:
        raise JaasConfigError(
            f"JAAS config property contains {len(entries)} login modules, should be 1 module"
        )
    entry = entries[0]
    if entry.login_module.strip() in DISALLOWED_LOGIN_MODULES:
        raise JaasConfigError(f"{entry.login_module.strip()} is not allowed")
    return entry


def _parse_entry(tokenizer: _Tokenizer) -> JaasEntry:
    login_module = tokenizer.sval
    if not login_module:
        # Java's AppConfigurationEntry refuses a null or empty module name.
        raise JaasConfigError("Login module not specified in JAAS config")
    if tokenizer.next_token() == _TT_EOF:
        raise JaasConfigError("Login module control flag not specified in JAAS config")
    flag = tokenizer.sval
    if flag is None:
        raise JaasConfigError("Login module control flag is not available in the JAAS config")
    if flag.lower() not in CONTROL_FLAGS:
        # A bare word here is a misplaced key or a misspelt flag; a quoted string could be
        # anything, a password included.
        shown = f" '{flag}'" if tokenizer.ttype == _TT_WORD else ""
        raise JaasConfigError(
            f"Invalid login module control flag{shown} in JAAS config "
            f"(expected one of {', '.join(CONTROL_FLAGS)})"
        )
    options: dict[str, str] = {}
    last_key: str | None = None
    while tokenizer.next_token() != _TT_EOF and tokenizer.ttype != ord(";"):
        key = tokenizer.sval
        if tokenizer.next_token() != ord("="):
            which = f"an option after key '{last_key}'" if last_key else "the first option"
            raise JaasConfigError(
                f"Value not specified for {which} in JAAS config: expected key=value "
                "(quote a value holding spaces or punctuation)"
            )
        if key is None:
            # Java would keep a null key (a number or punctuation before '=').
            raise JaasConfigError("Option name missing before '=' in JAAS config")
        if tokenizer.next_token() == _TT_EOF or tokenizer.sval is None:
            hint = (
                " (a value starting with a digit must be quoted)"
                if tokenizer.ttype == _TT_NUMBER
                else ""
            )
            raise JaasConfigError(f"Value not specified for key '{key}' in JAAS config{hint}")
        options[key] = tokenizer.sval
        last_key = key
    if tokenizer.ttype != ord(";"):
        raise JaasConfigError("JAAS config entry not terminated by semi-colon")
    return JaasEntry(login_module, flag.lower(), options)


# ---------------------------------------------------------------------------------------
# What the login modules read


def plain_users(entry: JaasEntry) -> dict[str, str]:
    """The users a PLAIN listener accepts: its `user_<name>="<password>"` options, as
    PlainServerCallbackHandler looks them up. `user_` alone names no user (an empty user
    name is refused before any lookup)."""
    return {
        key[len(USER_PREFIX) :]: value
        for key, value in entry.options.items()
        if key.startswith(USER_PREFIX) and len(key) > len(USER_PREFIX)
    }


def client_credentials(entry: JaasEntry) -> tuple[str, str] | None:
    """The `username` and `password` options: who this side authenticates as when it is
    the client (a broker connecting to another over a SASL inter-broker listener). None
    unless both are there."""
    username = entry.options.get("username")
    password = entry.options.get("password")
    if username is None or password is None:
        return None
    return username, password


_MODULE_FOR_MECHANISM: Final[Mapping[str, str]] = {
    "PLAIN": PLAIN_LOGIN_MODULE,
    "SCRAM-SHA-256": SCRAM_LOGIN_MODULE,
    "SCRAM-SHA-512": SCRAM_LOGIN_MODULE,
}


def check_login_module(entry: JaasEntry, mechanism: str) -> None:
    """JaasConfigError unless `entry` is the login module of SASL `mechanism` (Kafka would
    accept the config and then fail every authentication: PlainServerCallbackHandler reads
    users only from a PlainLoginModule entry)."""
    expected = _MODULE_FOR_MECHANISM.get(mechanism)
    if expected is None:
        supported = ", ".join(_MODULE_FOR_MECHANISM)
        raise JaasConfigError(
            f"SASL mechanism {mechanism!r} is not supported (supported: {supported})"
        )
    if entry.login_module != expected:
        raise JaasConfigError(
            f"SASL mechanism {mechanism} needs login module {expected} in its "
            f"sasl.jaas.config, not {entry.login_module}"
        )


# ---------------------------------------------------------------------------------------
# JAAS login files (`-Djava.security.auth.login.config=<file>`)

# The login module of ZooKeeper's DIGEST-MD5 SASL, client and server side.
ZK_DIGEST_LOGIN_MODULE: Final = "org.apache.zookeeper.server.auth.DigestLoginModule"


def parse_jaas_file(text: str) -> dict[str, tuple[JaasEntry, ...]]:
    """A JAAS login configuration file, as Java's ConfigFile reads it: sections
    `Name { <module> <flag> key="value" ...; ... };`, by name. The entries inside a section
    are read as `parse_jaas_config` reads one (the same tokenizer: Java's ConfigFile also
    takes `*` in bare words, which no ZooKeeper or Kafka option needs)."""
    tokenizer = _Tokenizer(text)
    sections: dict[str, tuple[JaasEntry, ...]] = {}
    while tokenizer.next_token() != _TT_EOF:
        name = tokenizer.sval
        if tokenizer.ttype != _TT_WORD or not name:
            raise JaasConfigError("JAAS file: expected a login context name")
        if tokenizer.next_token() != ord("{"):
            raise JaasConfigError(f"JAAS file: expected '{{' after login context {name}")
        entries: list[JaasEntry] = []
        while tokenizer.next_token() != ord("}"):
            if tokenizer.ttype == _TT_EOF:
                raise JaasConfigError(f"JAAS file: login context {name} has no closing '}}'")
            try:
                entries.append(_parse_entry(tokenizer))
            except JaasConfigError as e:
                raise JaasConfigError(f"JAAS file, login context {name}: {e}") from None
        if tokenizer.next_token() != ord(";"):
            raise JaasConfigError(f"JAAS file: expected ';' after login context {name}'s '}}'")
        if name in sections:
            # Java's ConfigFile: "Can not specify multiple entries for <name>".
            raise JaasConfigError(f"JAAS file: login context {name} is given twice")
        sections[name] = tuple(entries)
    return sections
