"""ACLs allow exactly what they grant, on a SASL_SSL cluster whose authorizer is Kafka's
AclAuthorizer (`cluster up --security sasl_ssl` turns it on, the admin user a super user).
Unmodified clients (confluent-kafka) as users with different ACLs: a producer without
WRITE is refused with TOPIC_AUTHORIZATION_FAILED, a consumer without READ on its group with
GROUP_AUTHORIZATION_FAILED, a user sees in Metadata only the topics it may DESCRIBE, and a
prefixed ACL covers topics created after it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from minikafka.cluster import LocalCluster
from tests.cluster.conftest import started_cluster
from tests.security.helpers import grant

pytestmark = pytest.mark.timeout(300)

USERS = ("carol", "dave", "erin", "frank")
LITERAL, PREFIXED = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED


def acl(
    rt: ResourceType, name: str, user: str, op: AclOperation, pattern: Any = LITERAL
) -> AclBinding:
    return AclBinding(rt, name, pattern, f"User:{user}", "*", op, AclPermissionType.ALLOW)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with started_cluster(tmp_path_factory.mktemp("authz"), security="sasl_ssl") as c:
        admin = AdminClient(c.client_config())
        for f in admin.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion(
                    u, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), f"{u}-pw".encode()
                )
                for u in USERS
            ]
        ).values():
            f.result(30)
        for f in admin.create_topics([NewTopic("orders", 3, 3)]).values():
            f.result(60)
        grant(
            c,
            # carol: a producer of orders.
            acl(ResourceType.TOPIC, "orders", "carol", AclOperation.WRITE),
            acl(ResourceType.TOPIC, "orders", "carol", AclOperation.DESCRIBE),
            # dave: may read orders, but no group.
            acl(ResourceType.TOPIC, "orders", "dave", AclOperation.READ),
            # erin: everything on topics and groups starting with logs-.
            acl(ResourceType.TOPIC, "logs-", "erin", AclOperation.ALL, PREFIXED),
            acl(ResourceType.GROUP, "logs-", "erin", AclOperation.ALL, PREFIXED),
        )
        yield c


def as_user(cluster: LocalCluster, user: str, **extra: Any) -> dict[str, Any]:
    admin = cluster.client_config()
    return {
        "bootstrap.servers": cluster.bootstrap_servers,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": f"{user}-pw",
        "ssl.ca.location": admin["ssl.ca.location"],
        **extra,
    }


def produce(cluster: LocalCluster, user: str, topic: str, n: int = 20) -> list[KafkaError | None]:
    producer = Producer(as_user(cluster, user, acks="all", **{"message.timeout.ms": 20000}))
    errors: list[KafkaError | None] = []
    for i in range(n):
        producer.produce(topic, b"v%d" % i, on_delivery=lambda err, _m: errors.append(err))
    producer.flush(60)
    return errors


def consume_error_or_values(
    cluster: LocalCluster, user: str, topic: str, group: str, expected: int
) -> tuple[int | None, list[bytes]]:
    """The first error code the consumer reports, or the values it read."""
    consumer = Consumer(
        as_user(cluster, user, **{"group.id": group, "auto.offset.reset": "earliest"})
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < expected and time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                return msg.error().code(), got
            got.append(msg.value())
    finally:
        consumer.close()
    return None, got


def test_a_producer_with_write_is_served_and_one_without_is_refused(
    cluster: LocalCluster,
) -> None:
    assert produce(cluster, "carol", "orders") == [None] * 20
    refused = produce(cluster, "frank", "orders")
    assert refused and all(
        e is not None and e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED for e in refused
    ), refused


def test_a_consumer_without_read_on_its_group_is_refused(cluster: LocalCluster) -> None:
    code, _ = consume_error_or_values(cluster, "dave", "orders", "dave-group", 20)
    assert code == KafkaError.GROUP_AUTHORIZATION_FAILED
    grant(cluster, acl(ResourceType.GROUP, "dave-group", "dave", AclOperation.READ))
    code, values = consume_error_or_values(cluster, "dave", "orders", "dave-group", 20)
    assert code is None and len(values) >= 20


def test_metadata_shows_only_the_topics_a_user_may_describe(cluster: LocalCluster) -> None:
    def topics(user: str) -> set[str]:
        md = AdminClient(as_user(cluster, user)).list_topics(timeout=30)
        return {t for t in md.topics if not t.startswith("__")}

    assert "orders" in topics("carol")
    assert "orders" not in topics("frank")


def test_a_prefixed_acl_covers_topics_created_after_it(cluster: LocalCluster) -> None:
    admin = AdminClient(cluster.client_config())
    for f in admin.create_topics([NewTopic("logs-new", 1, 3)]).values():
        f.result(60)
    assert produce(cluster, "erin", "logs-new") == [None] * 20
    code, values = consume_error_or_values(cluster, "erin", "logs-new", "logs-readers", 20)
    assert code is None and sorted(values) == sorted(b"v%d" % i for i in range(20))
    # Not beyond the prefix.
    assert all(e is not None for e in produce(cluster, "erin", "orders", 3))
