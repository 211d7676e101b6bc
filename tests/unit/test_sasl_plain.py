"""SASL/PLAIN as Kafka's PlainSaslServer checks it: RFC 4616's message, Kafka's texts (the
same one for an unknown user and a wrong password), and nothing but
PlainAuthenticationError for whatever a client sends."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.security.plain import PlainAuthenticationError, authenticate_plain, plain_token

USERS = {"admin": "admin-secret", "alice": "alice-secret", "josé": "pässwörd"}
INVALID = "Authentication failed: Invalid username or password"


def test_success() -> None:
    assert authenticate_plain(b"\x00alice\x00alice-secret", USERS) == "alice"
    assert authenticate_plain(plain_token("admin", "admin-secret"), USERS) == "admin"
    assert authenticate_plain(plain_token("josé", "pässwörd"), USERS) == "josé"


def test_wrong_password_and_unknown_user_look_the_same() -> None:
    with pytest.raises(PlainAuthenticationError) as wrong:
        authenticate_plain(plain_token("alice", "admin-secret"), USERS)
    with pytest.raises(PlainAuthenticationError) as unknown:
        authenticate_plain(plain_token("mallory", "alice-secret"), USERS)
    assert str(wrong.value) == str(unknown.value) == INVALID
    # A password that is a prefix or an extension of the right one is wrong too.
    for password in ("alice-secre", "alice-secret!", "ALICE-SECRET"):
        with pytest.raises(PlainAuthenticationError, match=INVALID):
            authenticate_plain(plain_token("alice", password), USERS)


def test_authzid() -> None:
    assert authenticate_plain(b"alice\x00alice\x00alice-secret", USERS) == "alice"
    assert authenticate_plain(plain_token("alice", "alice-secret", authzid="alice"), USERS)
    with pytest.raises(PlainAuthenticationError) as e:
        authenticate_plain(b"admin\x00alice\x00alice-secret", USERS)
    assert str(e.value) == (
        "Authentication failed: Client requested an authorization id that is different from "
        "username"
    )
    # Checked only after the password: a wrong password says nothing about the authzid.
    with pytest.raises(PlainAuthenticationError, match=INVALID):
        authenticate_plain(b"admin\x00alice\x00wrong", USERS)


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (b"\x00\x00alice-secret", "Authentication failed: username not specified"),
        (b"\x00alice\x00", "Authentication failed: password not specified"),
        (b"\x00\x00", "Authentication failed: username not specified"),
    ],
)
def test_empty_fields(token: bytes, message: str) -> None:
    with pytest.raises(PlainAuthenticationError) as e:
        authenticate_plain(token, USERS)
    assert str(e.value) == message


@pytest.mark.parametrize(
    ("token", "count"),
    [
        (b"", 1),
        (b"alice", 1),
        (b"alice\x00alice-secret", 2),
        (b"\x00alice\x00alice-secret\x00", 4),
        (b"\x00alice\x00alice\x00secret", 4),
    ],
)
def test_wrong_number_of_fields(token: bytes, count: int) -> None:
    with pytest.raises(PlainAuthenticationError) as e:
        authenticate_plain(token, USERS)
    assert str(e.value) == f"Invalid SASL/PLAIN response: expected 3 tokens, got {count}"


def test_non_utf8_is_refused() -> None:
    with pytest.raises(PlainAuthenticationError, match="UTF-8"):
        authenticate_plain(b"\x00alice\x00alice-secret\xff", USERS)
    # Not read as U+FFFD: a stored password holding U+FFFD is not matched by bad bytes.
    with pytest.raises(PlainAuthenticationError, match="UTF-8"):
        authenticate_plain(b"\x00bob\x00\xff", {"bob": "\ufffd"})


def test_plain_token_refuses_what_the_message_cannot_carry() -> None:
    assert plain_token("alice", "alice-secret") == b"\x00alice\x00alice-secret"
    for username, password in (("", "pw"), ("alice", ""), ("a\x00b", "pw"), ("alice", "p\x00w")):
        with pytest.raises(ValueError):
            plain_token(username, password)


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=64)
    | st.lists(st.sampled_from(["", "alice", "alice-secret", "admin", "é", "\x00"]), max_size=6)
    .map("".join)
    .map(str.encode)
)
def test_fuzz_only_plain_errors_escape(token: bytes) -> None:
    try:
        user = authenticate_plain(token, USERS)
    except PlainAuthenticationError:
        return
    # Success only with a user's own password.
    authzid, username, password = token.decode().split("\x00")
    assert user == username and USERS[username] == password and authzid in ("", username)
