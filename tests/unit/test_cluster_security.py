"""A secured local cluster's broker settings (cluster/security.py): every mode turns Kafka's
ACL authorizer on, with the admin and every broker's principal as super users, and the
settings load as a broker loads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.cluster.security import SECURITY_MODES, ClusterSecurity, SecurityMode
from minikafka.config.broker import BrokerConfig
from minikafka.security.principal import KafkaPrincipal


@pytest.mark.parametrize(
    ("mode", "brokers"),
    [
        # Brokers present their own certificates: CN=broker<N> maps to User:broker<N>.
        ("ssl", {"admin", "broker1", "broker2", "broker3"}),
        # Brokers log in to each other as the admin.
        ("sasl_ssl", {"admin"}),
        ("sasl_plaintext", {"admin"}),
    ],
)
def test_every_mode_turns_the_acl_authorizer_on_with_the_brokers_as_super_users(
    tmp_path: Path, mode: SecurityMode, brokers: set[str]
) -> None:
    security = ClusterSecurity(tmp_path, mode, "127.0.0.1")
    security.prepare([1, 2, 3])
    props = security.broker_properties(2, "127.0.0.1", 19093, [1, 2, 3])
    assert props["authorizer.class.name"] == "kafka.security.authorizer.AclAuthorizer"
    config = BrokerConfig.from_properties(
        {"broker.id": "2", "zookeeper.connect": "127.0.0.1:2181", **props}
    )
    loaded = config.security()
    assert loaded.authorizer
    assert loaded.super_users == {KafkaPrincipal.user(u) for u in brokers}
    assert not config.allow_everyone_if_no_acl_found


def test_the_modes_are_the_three_above() -> None:
    assert set(SECURITY_MODES) == {"ssl", "sasl_ssl", "sasl_plaintext"}
