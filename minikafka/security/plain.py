"""SASL/PLAIN (RFC 4616) as Kafka's broker runs it, sans IO.

Mirrors Kafka's PlainSaslServer with PlainServerCallbackHandler: the client's single
message is `[authzid] NUL authcid NUL passwd`; the users are the `user_<name>="<password>"`
options of the listener's PlainLoginModule JAAS config (see jaas.plain_users). Every
failure is a SaslAuthenticationException in Kafka, so its text is what the client gets in
SaslAuthenticate's error_message; an unknown user and a wrong password give the same text.

Unlike Kafka, which decodes with Java's replacing UTF-8 decoder, a message that is not
UTF-8 is refused rather than read with U+FFFD in place of the bad bytes.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Final

PLAIN_MECHANISM: Final = "PLAIN"

_INVALID_CREDENTIALS: Final = "Authentication failed: Invalid username or password"
# Compared against when the user is unknown, so that an unknown user costs the same
# constant-time comparison as a known one with a wrong password.
_NO_PASSWORD: Final = b"\x00" * 32


class PlainAuthenticationError(Exception):
    """A failed SASL/PLAIN authentication; the message is safe to send to the client."""


def authenticate_plain(token: bytes, users: Mapping[str, str]) -> str:
    """The authenticated user name for a client's SASL/PLAIN message, checked against
    `users` (user name -> password); PlainAuthenticationError otherwise."""
    try:
        response = token.decode("utf-8")
    except UnicodeDecodeError:
        raise PlainAuthenticationError("Invalid SASL/PLAIN response: not valid UTF-8") from None
    # Kafka's extractTokens: split at up to three NULs, so that a fourth field is counted
    # and refused rather than folded into the password.
    tokens = response.split("\x00", 3)
    if len(tokens) != 3:
        raise PlainAuthenticationError(
            f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}"
        )
    authzid, username, password = tokens
    if not username:
        raise PlainAuthenticationError("Authentication failed: username not specified")
    if not password:
        raise PlainAuthenticationError("Authentication failed: password not specified")
    expected = users.get(username)
    expected_bytes = expected.encode("utf-8") if expected is not None else _NO_PASSWORD
    # On the encoded bytes: compare_digest on str takes ASCII only.
    matches = hmac.compare_digest(password.encode("utf-8"), expected_bytes)
    if expected is None or not matches:
        raise PlainAuthenticationError(_INVALID_CREDENTIALS)
    # Kafka checks the authorization id only once the credentials are good, so that it
    # tells an unauthenticated client nothing.
    if authzid and authzid != username:
        raise PlainAuthenticationError(
            "Authentication failed: Client requested an authorization id that is different "
            "from username"
        )
    return username


def plain_token(username: str, password: str, *, authzid: str = "") -> bytes:
    """A client's SASL/PLAIN message (Kafka's clients send no authzid). ValueError for an
    empty field or one holding NUL, which the message cannot carry."""
    if not username or not password:
        raise ValueError("SASL/PLAIN needs a non-empty username and password")
    if "\x00" in username or "\x00" in password or "\x00" in authzid:
        raise ValueError("SASL/PLAIN fields cannot hold NUL")
    return f"{authzid}\x00{username}\x00{password}".encode()
