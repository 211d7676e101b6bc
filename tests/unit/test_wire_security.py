"""The tools' own Kafka connections (client/kafka_wire.py) take the librdkafka security
properties their librdkafka clients take, and refuse the ones they cannot honour."""

from __future__ import annotations

import ssl

import pytest

from minikafka.client.client_security import ClientSecurityError
from minikafka.client.wire_security import PLAINTEXT_WIRE, wire_security


def test_plaintext_is_the_default() -> None:
    assert wire_security({}) == PLAINTEXT_WIRE
    assert wire_security({"security.protocol": "PLAINTEXT"}).ssl_context is None


def test_sasl_ssl_gives_a_verifying_context_and_the_credentials() -> None:
    wire = wire_security(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
        }
    )
    assert wire.ssl_context is not None
    assert wire.ssl_context.verify_mode == ssl.CERT_REQUIRED and wire.ssl_context.check_hostname
    assert wire.sasl is not None and wire.sasl.username == "alice"
    assert "alice-secret" not in repr(wire)


def test_sasl_plaintext_has_no_tls_and_endpoint_checks_can_be_turned_off() -> None:
    wire = wire_security(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "u",
            "sasl.password": "p",
        }
    )
    assert wire.ssl_context is None and wire.sasl is not None
    tls = wire_security(
        {"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "none"}
    )
    assert tls.ssl_context is not None and not tls.ssl_context.check_hostname
    assert tls.sasl is None


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"security.protocol": "SSL", "ssl.keystore.location": "x"}, "ssl.keystore.location"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}, "needs sasl.username"),
        ({"security.protocol": "SSL", "ssl.ca.location": "/nonexistent/ca.pem"}, "TLS settings"),
        ({"security.protocol": "SSL", "ssl.key.location": "k.pem"}, "ssl.key.location without"),
    ],
)
def test_what_these_connections_cannot_honour_is_refused(
    props: dict[str, str], message: str
) -> None:
    with pytest.raises(ClientSecurityError, match=message):
        wire_security(props)
