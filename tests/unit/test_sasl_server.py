"""The SASL exchange of one connection (security/sasl_server.py), as Kafka's
SaslServerAuthenticator orders it: which requests may come when, what a handshake with a
mechanism the listener lacks answers, and PLAIN and SCRAM exchanges to their end."""

from __future__ import annotations

import pytest

from minikafka.protocol.errors import ErrorCode
from minikafka.security.plain import plain_token
from minikafka.security.principal import KafkaPrincipal
from minikafka.security.sasl_server import (
    API_VERSIONS,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    IllegalSaslState,
    SaslServerAuthenticator,
    SaslServerConfig,
    SaslState,
)
from minikafka.security.scram import ScramClient, ScramMechanism, make_credential

METADATA = 3
ALICE_256 = make_credential(ScramMechanism.SCRAM_SHA_256, "alice-secret")


def authenticator(*mechanisms: str) -> SaslServerAuthenticator:
    def lookup(mechanism: ScramMechanism, user: str):  # type: ignore[no-untyped-def]
        if user == "alice" and mechanism is ScramMechanism.SCRAM_SHA_256:
            return ALICE_256
        return None

    return SaslServerAuthenticator(
        SaslServerConfig(
            mechanisms or ("PLAIN", "SCRAM-SHA-256"), {"admin": "admin-secret"}, lookup
        )
    )


def test_api_versions_then_handshake_then_authenticate_then_anything() -> None:
    a = authenticator()
    a.check_request(API_VERSIONS)
    a.api_versions_answered()
    assert a.state is SaslState.HANDSHAKE
    assert a.handshake("PLAIN", 1).error_code == ErrorCode.NONE
    a.check_request(SASL_AUTHENTICATE)
    result = a.authenticate(plain_token("admin", "admin-secret"))
    assert (result.error_code, a.authenticated) == (ErrorCode.NONE, True)
    assert a.principal == KafkaPrincipal.user("admin")
    a.check_request(METADATA)  # anything, once authenticated


@pytest.mark.parametrize(
    "steps",
    [
        [METADATA],  # a request before any handshake
        [API_VERSIONS, API_VERSIONS],  # ApiVersions twice
        [API_VERSIONS, SASL_AUTHENTICATE],  # tokens before the handshake
        [SASL_AUTHENTICATE],
    ],
)
def test_requests_out_of_order_are_illegal(steps: list[int]) -> None:
    a = authenticator()
    with pytest.raises(IllegalSaslState):
        for api_key in steps:
            a.check_request(api_key)
            if api_key == API_VERSIONS:
                a.api_versions_answered()
    assert a.state is SaslState.FAILED


def test_a_request_between_handshake_and_authentication_is_illegal() -> None:
    a = authenticator()
    a.handshake("PLAIN", 1)
    with pytest.raises(IllegalSaslState):
        a.check_request(METADATA)


def test_a_mechanism_the_listener_lacks_is_answered_with_the_enabled_ones() -> None:
    a = authenticator("SCRAM-SHA-256")
    result = a.handshake("PLAIN", 1)
    assert result.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert result.mechanisms == ("SCRAM-SHA-256",)
    assert a.state is SaslState.FAILED
    with pytest.raises(IllegalSaslState):
        a.check_request(SASL_AUTHENTICATE)


@pytest.mark.parametrize(
    "token",
    [
        plain_token("admin", "wrong"),
        plain_token("nobody", "admin-secret"),
        b"",
        b"\x00\x00",
        b"\xff" * 100,
    ],
)
def test_a_failed_plain_exchange_answers_sasl_authentication_failed(token: bytes) -> None:
    a = authenticator()
    a.handshake("PLAIN", 1)
    result = a.authenticate(token)
    assert result.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert result.error_message
    assert "admin-secret" not in result.error_message
    assert a.state is SaslState.FAILED and a.principal is None
    with pytest.raises(IllegalSaslState):
        a.authenticate(plain_token("admin", "admin-secret"))


def test_scram_to_its_end_and_with_a_wrong_password() -> None:
    for password, ok in (("alice-secret", True), ("guess", False)):
        a = authenticator()
        a.handshake("SCRAM-SHA-256", 1)
        client = ScramClient(ScramMechanism.SCRAM_SHA_256, "alice", password)
        first = a.authenticate(client.first_message())
        assert first.error_code == ErrorCode.NONE and not a.authenticated
        final = a.authenticate(client.final_message(first.auth_bytes))
        if ok:
            client.verify_server_final(final.auth_bytes)
            assert a.principal == KafkaPrincipal.user("alice")
        else:
            assert final.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
            assert not a.authenticated


def test_an_unknown_scram_user_fails_at_the_first_message() -> None:
    a = authenticator()
    a.handshake("SCRAM-SHA-256", 1)
    client = ScramClient(ScramMechanism.SCRAM_SHA_256, "mallory", "x")
    assert a.authenticate(client.first_message()).error_code == (
        ErrorCode.SASL_AUTHENTICATION_FAILED
    )


def test_a_v0_handshake_means_bare_tokens() -> None:
    a = authenticator()
    a.handshake("PLAIN", 0)
    assert a.raw_tokens
    # No Kafka request at all until the bare token has authenticated the connection.
    with pytest.raises(IllegalSaslState):
        a.check_request(SASL_AUTHENTICATE)


def test_handshake_is_legal_only_before_a_mechanism_is_chosen() -> None:
    a = authenticator()
    a.handshake("PLAIN", 1)
    with pytest.raises(IllegalSaslState):
        a.check_request(SASL_HANDSHAKE)
