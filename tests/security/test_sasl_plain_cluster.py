"""SASL PLAIN on a real cluster: `--security sasl_plaintext` (SCRAM between brokers, the
authorizer on) with PLAIN enabled beside SCRAM and its users in the listener's
`plain.sasl.jaas.config`, Kafka's JAAS syntax. An unmodified client (confluent-kafka)
logs in with PLAIN, produces with acks=all and consumes in a group under the ACLs it was
granted; a wrong password is refused. And the other mismatch of the TLS tests: a TLS
client on a port without TLS gets a closed connection, and the broker stays up."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from minikafka.cluster import LocalCluster
from tests.cluster.conftest import started_cluster
from tests.security.helpers import grant
from tests.security.test_sasl_ssl_cluster import closed

pytestmark = pytest.mark.timeout(300)

ALICE_PASSWORD = "alice-plain-secret"
PLAIN_USERS = {
    "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
    # The broker's own PLAIN login (username/password) is unused: brokers log in to each
    # other with SCRAM. The user_<name> options are who PLAIN lets in.
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'user_alice="{ALICE_PASSWORD}";'
    ),
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with started_cluster(
        tmp_path_factory.mktemp("plain"), overrides=PLAIN_USERS, security="sasl_plaintext"
    ) as c:
        admin = AdminClient(c.client_config())
        for f in admin.create_topics([NewTopic("plain-orders", 3, 3)]).values():
            f.result(60)

        def allow(rt: ResourceType, name: str, op: AclOperation) -> AclBinding:
            return AclBinding(
                rt, name, ResourcePatternType.LITERAL, "User:alice", "*", op,
                AclPermissionType.ALLOW,
            )  # fmt: skip

        grant(
            c,
            allow(ResourceType.TOPIC, "plain-orders", AclOperation.WRITE),
            allow(ResourceType.TOPIC, "plain-orders", AclOperation.READ),
            allow(ResourceType.GROUP, "alice-group", AclOperation.READ),
        )
        yield c


def as_alice(cluster: LocalCluster, password: str, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": cluster.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": password,
        **extra,
    }


def test_a_plain_user_produces_and_consumes_under_its_acls(cluster: LocalCluster) -> None:
    producer = Producer(
        as_alice(cluster, ALICE_PASSWORD, acks="all", **{"enable.idempotence": False})
    )
    errors: list[Any] = []
    values = [f"plain-{i}".encode() for i in range(30)]
    for v in values:
        producer.produce("plain-orders", v, on_delivery=lambda e, _m: errors.append(e))
    assert producer.flush(60) == 0
    assert errors == [None] * len(values)

    consumer = Consumer(
        as_alice(
            cluster, ALICE_PASSWORD, **{"group.id": "alice-group", "auto.offset.reset": "earliest"}
        )
    )
    consumer.subscribe(["plain-orders"])
    got: list[bytes] = []
    try:
        for _ in range(120):
            msg = consumer.poll(0.5)
            if msg is None:
                if len(got) >= len(values):
                    break
                continue
            assert msg.error() is None, msg.error()
            got.append(msg.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert sorted(got) == sorted(values)


def test_a_wrong_plain_password_is_refused(cluster: LocalCluster) -> None:
    seen: list[KafkaError] = []
    admin = AdminClient(as_alice(cluster, "not-the-password", error_cb=seen.append))
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    admin.poll(0)  # serves the error callback
    assert any(e.code() == KafkaError._AUTHENTICATION for e in seen), seen
    assert any("Invalid username or password" in e.str() for e in seen), seen


def test_a_tls_client_on_a_port_without_tls_is_closed(cluster: LocalCluster) -> None:
    host, port = cluster.broker_address(1)

    async def handshake() -> None:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        # Its ClientHello reads as a frame of some 369 MB: beyond sasl.server.max.receive.size.
        with pytest.raises((ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)):
            await asyncio.wait_for(asyncio.open_connection(host, port, ssl=context), 15)
        # The raw bytes of a ClientHello get no answer either: closed.
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(bytes.fromhex("16030100c8010000c40303") + bytes(200))
        await writer.drain()
        assert await closed(reader)
        writer.close()

    asyncio.run(handshake())
    assert all(cluster.is_alive(b) for b in cluster.broker_ids)
    # ...and a proper client is still served.
    admin = AdminClient(as_alice(cluster, ALICE_PASSWORD))
    assert "plain-orders" in admin.list_topics(timeout=15).topics
