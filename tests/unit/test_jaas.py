"""Kafka's `sasl.jaas.config` values, read as Kafka's JaasConfig (java.io.StreamTokenizer)
and JaasContext read them: Kafka's documented examples, quoting and escapes, what Kafka
refuses, and errors that never repeat a password."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.security.jaas import (
    PLAIN_LOGIN_MODULE,
    SCRAM_LOGIN_MODULE,
    JaasConfigError,
    JaasEntry,
    check_login_module,
    client_credentials,
    parse_jaas_config,
    plain_users,
)

# Kafka's documentation (security.html), the properties file's line continuations joined.
PLAIN_BROKER = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" '
    'user_admin="admin-secret" user_alice="alice-secret";'
)
SCRAM_CLIENT = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="alice" password="alice-secret";'
)


def test_kafkas_plain_example() -> None:
    entry = parse_jaas_config(PLAIN_BROKER)
    assert entry.login_module == PLAIN_LOGIN_MODULE and entry.control_flag == "required"
    assert plain_users(entry) == {"admin": "admin-secret", "alice": "alice-secret"}
    assert client_credentials(entry) == ("admin", "admin-secret")
    check_login_module(entry, "PLAIN")


def test_kafkas_scram_example() -> None:
    entry = parse_jaas_config(SCRAM_CLIENT)
    assert entry == JaasEntry(
        SCRAM_LOGIN_MODULE, "required", {"username": "alice", "password": "alice-secret"}
    )
    assert plain_users(entry) == {}
    assert client_credentials(entry) == ("alice", "alice-secret")
    check_login_module(entry, "SCRAM-SHA-256")
    check_login_module(entry, "SCRAM-SHA-512")


def test_the_file_layout_parses_the_same() -> None:
    # As in a kafka_server_jaas.conf section body: newlines and indentation between options.
    text = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required\n"
        '    username="admin"\n    password="admin-secret"\n'
        '    user_admin="admin-secret"\n    user_alice="alice-secret";\n'
    )
    assert parse_jaas_config(text) == parse_jaas_config(PLAIN_BROKER)


def test_quoting_escapes_and_bare_words() -> None:
    entry = parse_jaas_config(
        r"""m.Module REQUIRED a="with \"quotes\" and spaces" b='single "q"' """
        r"""c="back\\slash\ttab\101" d=bare-word_1.2$x e="" f="semi;colon=sign";"""
    )
    assert entry.control_flag == "required"
    assert entry.options == {
        "a": 'with "quotes" and spaces',
        "b": 'single "q"',
        "c": "back\\slash\ttabA",
        "d": "bare-word_1.2$x",
        "e": "",
        "f": "semi;colon=sign",
    }


def test_comments_and_repeated_keys() -> None:
    entry = parse_jaas_config("Module /* block\n comment */ optional // line comment\n a=x a=y ;")
    assert entry.control_flag == "optional" and entry.options == {"a": "y"}


@pytest.mark.parametrize("flag", ["required", "requisite", "sufficient", "optional", "Optional"])
def test_control_flags(flag: str) -> None:
    assert parse_jaas_config(f"Module {flag};").control_flag == flag.lower()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Login module not specified"),
        ("  // only a comment", "Login module not specified"),
        ("Module", "Login module control flag not specified"),
        ("Module required", "not terminated by semi-colon"),
        ('Module required password="admin-secret"', "not terminated by semi-colon"),
        ('Module required password="admin-secret;', "not terminated by semi-colon"),
        ("Module mandatory;", "Invalid login module control flag 'mandatory'"),
        ("Module required; Other required;", "contains 2 login modules, should be 1 module"),
        ("Module required a=;", "Value not specified for key 'a'"),
        ("Module required a=1234;", "a value starting with a digit must be quoted"),
        ("Module required a;", "Value not specified for the first option"),
        ("Module required =x;", "Value not specified for the first option"),
        ('"" required;', "Login module not specified"),
        ("com.sun.security.auth.module.JndiLoginModule required;", "is not allowed"),
    ],
)
def test_refused(text: str, message: str) -> None:
    with pytest.raises(JaasConfigError, match=message):
        parse_jaas_config(text)


@pytest.mark.parametrize(
    "text",
    [
        'Module required password="admin-secret"',  # no ';'
        'Module required password="admin-secret"; Other required;',
        'Module "admin-secret";',  # a quoted control flag
        "Module required password=admin-secret extra;",
        "Module required password=admin secret;",  # unquoted value with a space
        'Module required password="admin-secret" user_x=9;',
        'Module bogus password="admin-secret";',
    ],
)
def test_errors_never_repeat_a_password(text: str) -> None:
    with pytest.raises(JaasConfigError) as e:
        parse_jaas_config(text)
    assert "secret" not in str(e.value)


def test_repr_hides_option_values() -> None:
    text = repr(parse_jaas_config(PLAIN_BROKER))
    assert "user_alice" in text and "secret" not in text


def test_client_credentials_need_both() -> None:
    assert client_credentials(parse_jaas_config('Module required username="a";')) is None
    assert client_credentials(parse_jaas_config('Module required password="a";')) is None


def test_check_login_module() -> None:
    with pytest.raises(JaasConfigError) as e:
        check_login_module(parse_jaas_config(SCRAM_CLIENT), "PLAIN")
    assert PLAIN_LOGIN_MODULE in str(e.value) and "secret" not in str(e.value)
    with pytest.raises(JaasConfigError, match=SCRAM_LOGIN_MODULE):
        check_login_module(parse_jaas_config(PLAIN_BROKER), "SCRAM-SHA-256")
    with pytest.raises(JaasConfigError, match="GSSAPI"):
        check_login_module(parse_jaas_config(PLAIN_BROKER), "GSSAPI")


def test_empty_user_name_is_no_user() -> None:
    entry = parse_jaas_config('Module required user_="x" user_bob="y";')
    assert plain_users(entry) == {"bob": "y"}


JAAS_PIECES = st.sampled_from(
    [
        PLAIN_LOGIN_MODULE,
        "required",
        "optional",
        " ",
        "\n",
        ";",
        "=",
        '"',
        "'",
        "\\",
        "/",
        "*",
        "//",
        "/*",
        "*/",
        "user_alice",
        '"alice-secret"',
        "-",
        "-1",
        "1.5",
        ".",
        "$",
        "\\777",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=80) | st.lists(JAAS_PIECES, max_size=12).map("".join))
def test_fuzz_only_jaas_errors_escape(text: str) -> None:
    try:
        entry = parse_jaas_config(text)
    except JaasConfigError:
        return
    assert entry.login_module and entry.control_flag in (
        "required",
        "requisite",
        "sufficient",
        "optional",
    )
    plain_users(entry)
    client_credentials(entry)
