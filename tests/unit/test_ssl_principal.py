"""ssl.principal.mapping.rules: Kafka's SslPrincipalMapperTest, case for case, and the
principal of an SSL connection (DefaultKafkaPrincipalBuilder)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.security.principal import ANONYMOUS, KafkaPrincipal
from minikafka.security.ssl_principal import NoMatchingRule, SslPrincipalMapper, ssl_principal


@pytest.mark.parametrize(
    "rules",
    [
        "DEFAULT",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
        "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
    ],
)
def test_valid_rules(rules: str) -> None:
    SslPrincipalMapper.from_rules(rules)


@pytest.mark.parametrize(
    "rules",
    [
        "default",
        "DEFAUL",
        "DEFAULT/L",
        "DEFAULT/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
        "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
    ],
)
def test_invalid_rules(rules: str) -> None:
    with pytest.raises(ValueError, match="Invalid rule"):
        SslPrincipalMapper.from_rules(rules)


def test_unmatched_substring_is_named() -> None:
    with pytest.raises(ValueError, match="unmatched substring: `/U`"):
        SslPrincipalMapper.from_rules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U")


def test_ssl_principal_mapper() -> None:
    mapper = SslPrincipalMapper.from_rules(
        ", ".join(
            [
                "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
                "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
                "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
                "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
                "DEFAULT",
            ]
        )
    )
    assert mapper.name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "duke"
    assert mapper.name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert mapper.name("cn=duke,ou=sme,dc=mycp,dc=com") == "DUKE@SME"
    assert mapper.name("cN=duke,OU=JavaSoft,O=Sun Microsystems") == "DUKE"
    assert (
        mapper.name("OU=JavaSoft,O=Sun Microsystems,C=US") == "OU=JavaSoft,O=Sun Microsystems,C=US"
    )


@pytest.mark.parametrize(
    ("expected", "rules"),
    [
        # seeing is believing
        ("[]", ""),
        ("[DEFAULT]", "DEFAULT"),
        ("[RULE:/]", "RULE://"),
        ("[RULE:/.*]", "RULE:/.*/"),
        ("[RULE:/.*/L]", "RULE:/.*/L"),
        ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
        ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
        ("[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "),
        ("[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "),
        (
            "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
            "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ",
        ),
        # empty rules are ignored
        ("[]", ",   , , ,      , , ,   "),
        ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
        ("[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "),
        ("[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"),
        # escape sequences
        ("[RULE:\\/\\\\\\(\\)\\n\\t/\\/\\/]", "RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//"),
        ("[RULE:\\**\\/+/*/L, RULE:\\/*\\**/**]", "RULE:\\**\\/+/*/L,RULE:\\/*\\**/**/"),
        # rules rule
        (
            "[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
            "RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT",
        ),
    ],
)
def test_rules_splitting(expected: str, rules: str) -> None:
    assert str(SslPrincipalMapper.from_rules(rules)) == f"SslPrincipalMapper(rules = {expected})"


def test_comma_with_whitespace() -> None:
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT")
    assert mapper.name("CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"


def test_default_when_unset() -> None:
    assert str(SslPrincipalMapper.from_rules(None)) == "SslPrincipalMapper(rules = [DEFAULT])"
    assert SslPrincipalMapper.from_rules(None).name("CN=a,OU=b") == "CN=a,OU=b"


def test_first_matching_rule_wins() -> None:
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=([^,]*),.*$/$1/U, RULE:^CN=([^,]*),.*$/$1/L")
    assert mapper.name("CN=Alice,OU=x") == "ALICE"


def test_no_matching_rule_fails() -> None:
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
    with pytest.raises(NoMatchingRule, match=r"No rules apply to CN=a,OU=Other"):
        mapper.name("CN=a,OU=Other")
    # Nothing, not even DEFAULT: every DN fails.
    with pytest.raises(NoMatchingRule):
        SslPrincipalMapper.from_rules("").name("CN=a")


def test_out_of_range_reference_is_literal() -> None:
    # Kafka's escapeLiteralBackReferences: $4 with three groups is the text "$4"; $12 with
    # one group is group 1 then "2".
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=(a)(b)(c)$/$1@$4/, RULE:^CN=(x)$/$12/")
    assert mapper.name("CN=abc") == "a@$4"
    assert mapper.name("CN=x") == "x2"


def test_java_replacement_syntax() -> None:
    # `\x` is a literal x (Python's re.sub would turn \n into a newline); ${name} is a
    # named group, declared the Java way.
    mapper = SslPrincipalMapper.from_rules(r"RULE:^CN=(?<user>[^,]*).*$/\n${user}\$/")
    assert mapper.name("CN=bob,OU=x") == "nbob$"


def test_quoted_pattern() -> None:
    mapper = SslPrincipalMapper.from_rules(r"RULE:^\QCN=a.b\E,(.*)$/$1/")
    assert mapper.name("CN=a.b,OU=x") == "OU=x"
    with pytest.raises(NoMatchingRule):
        mapper.name("CN=aXb,OU=x")


@pytest.mark.parametrize(
    ("rules", "why"),
    [
        ("RULE:^CN=(.*)$/$1$/", "group index is missing"),
        ("RULE:^CN=(.*)$/$x/", "illegal group reference"),
        ("RULE:^CN=(.*)$/${nope}/", "no group named nope"),
        ("RULE:^CN=.*$/$1/", "no group 1"),
        ("RULE:^CN=(\\p{Lower}+)$/$1/", "pattern"),
        ("RULE:^CN=([a-z&&[^e]]+)$/$1/", "pattern"),
        ("RULE:^CN=((.*)$/$1/", "pattern"),
    ],
)
def test_bad_pattern_or_replacement_is_refused(rules: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        SslPrincipalMapper.from_rules(rules)


def test_ssl_principal() -> None:
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=([^,]*),OU=minikafka$/$1/, DEFAULT")
    assert ssl_principal(None, mapper) == ANONYMOUS
    assert ssl_principal("CN=client1,OU=minikafka", mapper) == KafkaPrincipal.user("client1")
    assert ssl_principal("CN=x,O=y", mapper) == KafkaPrincipal.user("CN=x,O=y")


@given(st.text())
def test_default_is_identity(dn: str) -> None:
    assert SslPrincipalMapper.from_rules("DEFAULT").name(dn) == dn


@given(st.from_regex(r"[A-Za-z0-9 ]{1,20}", fullmatch=True))
def test_lower_and_upper(cn: str) -> None:
    dn = f"CN={cn},OU=x"
    assert SslPrincipalMapper.from_rules("RULE:^CN=([^,]*),.*$/$1/L").name(dn) == cn.lower()
    assert SslPrincipalMapper.from_rules("RULE:^CN=([^,]*),.*$/$1/U").name(dn) == cn.upper()
