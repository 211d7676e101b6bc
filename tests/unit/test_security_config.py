"""Security settings with Kafka's names (config/security.py): listener protocols, the
`listener.name.<listener>.` prefix, SASL mechanisms and JAAS configs, how brokers
authenticate to each other, and the settings minikafka refuses rather than ignores."""

from __future__ import annotations

import pytest

from minikafka.config.broker import BrokerConfig
from minikafka.protocol.errors import InvalidConfigError
from minikafka.security.principal import KafkaPrincipal

SCRAM_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="broker" password="broker-secret";'
)
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-pw";'
)


def config(**props: str) -> BrokerConfig:
    return BrokerConfig.from_properties({"broker.id": "1", **props})


def secured(**props: str) -> BrokerConfig:
    return config(
        **{
            "listeners": "INTERNAL://:9093,EXTERNAL://:9094",
            "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,EXTERNAL:SASL_PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            "listener.name.internal.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
            "listener.name.internal.plain.sasl.jaas.config": PLAIN_JAAS,
            "listener.name.external.plain.sasl.jaas.config": PLAIN_JAAS,
            **props,
        }
    )


def test_a_plaintext_broker_needs_no_security_settings() -> None:
    sec = config().security()
    assert not sec.secured
    assert sec.inter_broker_mechanism is None and sec.inter_broker_credentials is None


def test_sasl_listeners_take_their_mechanisms_users_and_the_inter_broker_credentials() -> None:
    sec = secured(**{"listener.name.external.sasl.enabled.mechanisms": "PLAIN"}).security()
    assert sec.listeners["INTERNAL"].sasl_mechanisms == ("SCRAM-SHA-512", "PLAIN")
    # The listener's own setting wins over sasl.enabled.mechanisms.
    assert sec.listeners["EXTERNAL"].sasl_mechanisms == ("PLAIN",)
    assert dict(sec.listeners["EXTERNAL"].plain_users) == {
        "admin": "admin-secret",
        "alice": "alice-pw",
    }
    assert sec.inter_broker_mechanism == "SCRAM-SHA-512"
    assert sec.inter_broker_credentials == ("broker", "broker-secret")
    assert "broker-secret" not in repr(sec)


def test_security_inter_broker_protocol_names_the_inter_broker_listener() -> None:
    cfg = config(
        **{
            "listeners": "SASL_PLAINTEXT://:9093",
            "security.inter.broker.protocol": "SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        }
    )
    assert cfg.resolved_listeners().inter_broker == "SASL_PLAINTEXT"
    with pytest.raises(InvalidConfigError, match="Only one of"):
        config(
            **{
                "listeners": "PLAINTEXT://:9093",
                "security.inter.broker.protocol": "PLAINTEXT",
                "inter.broker.listener.name": "PLAINTEXT",
            }
        )


@pytest.mark.parametrize(
    ("props", "message"),
    [
        # Kafka's default mechanism is GSSAPI, which minikafka lacks.
        ({"sasl.enabled.mechanisms": "GSSAPI"}, "GSSAPI is not implemented"),
        ({"sasl.enabled.mechanisms": "OAUTHBEARER"}, "OAUTHBEARER is not implemented"),
        ({"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"}, "must be one of"),
        ({"listener.name.internal.scram-sha-512.sasl.jaas.config": ""}, "sasl.jaas.config"),
        ({"listener.name.external.plain.sasl.jaas.config": SCRAM_JAAS}, "PlainLoginModule"),
        ({"sasl.jaas.config": PLAIN_JAAS}, "listener.name.<listener>"),
        ({"listener.name.nosuch.sasl.enabled.mechanisms": "PLAIN"}, "not one of the broker"),
        ({"listener.name.internal.gssapi.sasl.jaas.config": "x"}, "GSSAPI"),
        ({"ssl.keymanager.algorithm": "SunX509"}, "ssl.keymanager.algorithm"),
        ({"ssl.no.such.thing": "1"}, "ssl.no.such.thing"),
        ({"connections.max.reauth.ms": "60000"}, "connections.max.reauth.ms"),
        # Kafka's ACL authorizer is the one minikafka has; any other class is refused.
        ({"authorizer.class.name": "com.example.Authorizer"}, "authorizer.class.name"),
        (
            {"authorizer.class.name": "kafka.security.auth.SimpleAclAuthorizer"},
            "kafka.security.authorizer.AclAuthorizer",
        ),
        ({"super.users": "alice"}, "super.users"),
        # AclAuthorizer.configure parses every part between semicolons.
        ({"super.users": "User:admin;;User:alice"}, "super.users"),
    ],
)
def test_what_minikafka_does_not_implement_is_refused_by_name(
    props: dict[str, str], message: str
) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        secured(**props)


def test_plain_needs_its_users() -> None:
    with pytest.raises(
        InvalidConfigError, match=r"listener\.name\.external\.plain\.sasl\.jaas\.config"
    ):
        config(
            **{
                "listeners": "EXTERNAL://:9094,PLAINTEXT://:9093",
                "listener.security.protocol.map": "EXTERNAL:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT",
                "sasl.enabled.mechanisms": "PLAIN",
            }
        )


def test_ssl_settings_per_listener_and_super_users() -> None:
    cfg = config(
        **{
            "listeners": "PLAINTEXT://:9093,SSL://:9094",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": "/certs/broker.keystore.pem",
            "listener.name.ssl.ssl.client.auth": "required",
            "super.users": "User:admin;User:CN=broker1,OU=minikafka",
        }
    )
    sec = cfg.security()
    tls = sec.listeners["SSL"].ssl
    assert tls is not None and tls.client_auth.value == "required"
    assert sec.listeners["PLAINTEXT"].ssl is None
    assert sec.super_users == {
        KafkaPrincipal.user("admin"),
        KafkaPrincipal.user("CN=broker1,OU=minikafka"),
    }


def test_the_acl_authorizer_is_turned_on_by_its_class_name() -> None:
    assert not config().security().authorizer
    sec = secured(
        **{
            "authorizer.class.name": " kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:admin; User:broker;",
        }
    ).security()
    assert sec.authorizer
    # Each part trimmed; Java's split drops the trailing empty one.
    assert sec.super_users == {KafkaPrincipal.user("admin"), KafkaPrincipal.user("broker")}
