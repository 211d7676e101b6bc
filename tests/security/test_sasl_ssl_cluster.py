"""A SASL_SSL cluster (`cluster up --security sasl_ssl`): SCRAM over TLS for clients and
between brokers. Real ZooKeeper, real broker processes, and unmodified clients
(confluent-kafka, kafka-python, aiokafka, kcat) as the judges: each authenticates as a
user created with AlterUserScramCredentials, produces with acks=all to three replicas and
consumes in a group. Then what must not get in: wrong and unknown credentials, a mechanism
the listener lacks, requests before authentication, garbage tokens, a plaintext client,
and a forged controller request from a peer that has not authenticated."""

from __future__ import annotations

import asyncio
import json
import shutil
import ssl
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
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
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.kafka.client_codec import exchange, request_frame
from minikafka.rpc import messages as m
from minikafka.rpc.framing import RequestHeader, encode_request
from minikafka.security.sasl_client import AuthenticationFailedError
from minikafka.server.listener_security import sasl_client_authenticate
from tests.cluster.conftest import started_cluster, wait_until
from tests.cluster.helpers import http_get
from tests.rpc.test_framing import SAMPLES as RPC_SAMPLES
from tests.security.helpers import add_user, as_user, ca, grant, tls_context

pytestmark = pytest.mark.timeout(300)

PASSWORD = "alice-secret"
ALLOW = AclPermissionType.ALLOW


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with started_cluster(tmp_path_factory.mktemp("sasl-ssl"), security="sasl_ssl") as c:
        add_user(c, "alice", PASSWORD)
        admin = AdminClient(c.client_config())
        # The cluster's authorizer allows alice what a producer and a consumer need, on every
        # topic and group (test_authorization.py tests what ACLs allow and refuse).
        grant(
            c,
            *(
                AclBinding(rt, name, ResourcePatternType.LITERAL, "User:alice", "*", op, ALLOW)
                for rt, name, op in (
                    (ResourceType.TOPIC, "*", AclOperation.ALL),
                    (ResourceType.GROUP, "*", AclOperation.ALL),
                    (ResourceType.BROKER, "kafka-cluster", AclOperation.IDEMPOTENT_WRITE),
                )
            ),
        )
        for f in admin.create_topics(
            [NewTopic(t, 3, 3, config={"min.insync.replicas": "2"}) for t in CLIENTS]
        ).values():
            f.result(60)
        yield c


CLIENTS = ("confluent", "kafka-python", "aiokafka", "kcat")


def values(client: str, n: int = 60) -> list[bytes]:
    return [f"{client}-{i}".encode() for i in range(n)]


def test_scram_users_are_stored_in_zookeeper_as_kafka_stores_them(cluster: LocalCluster) -> None:
    raw = cluster.zk_client().get_data("/config/users/alice")
    assert raw is not None
    stored = json.loads(raw)
    assert stored["version"] == 1
    assert set(stored["config"]) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    fields = dict(kv.split("=", 1) for kv in stored["config"]["SCRAM-SHA-512"].split(","))
    assert set(fields) == {"salt", "stored_key", "server_key", "iterations"}
    assert fields["iterations"] == "4096"
    assert PASSWORD not in raw.decode()


def test_confluent_kafka(cluster: LocalCluster) -> None:
    sent = values("confluent")
    producer = Producer(as_user(cluster, "alice", PASSWORD, acks="all", **{"linger.ms": 5}))
    errors: list[object] = []
    for v in sent:
        producer.produce("confluent", v, on_delivery=lambda err, _m: errors.append(err))
    assert producer.flush(60) == 0
    assert errors == [None] * len(sent)
    consumer = Consumer(
        as_user(
            cluster,
            "alice",
            PASSWORD,
            **{"group.id": "g-confluent", "auto.offset.reset": "earliest"},
        )
    )
    consumer.subscribe(["confluent"])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < len(sent) and time.monotonic() < deadline:
        msg = consumer.poll(1)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.commit(asynchronous=False)
    consumer.close()
    assert sorted(got) == sorted(sent)


def test_kafka_python(cluster: LocalCluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    auth: dict[str, Any] = {
        "bootstrap_servers": cluster.bootstrap_servers,
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice",
        "sasl_plain_password": PASSWORD,
        "ssl_cafile": ca(cluster),
    }
    sent = values("kafka-python")
    producer = KafkaProducer(acks="all", **auth)
    for f in [producer.send("kafka-python", v) for v in sent]:
        f.get(timeout=60)
    producer.close()
    consumer = KafkaConsumer(
        "kafka-python",
        group_id="g-kafka-python",
        auto_offset_reset="earliest",
        consumer_timeout_ms=30000,
        **auth,
    )
    got: list[bytes] = []
    for record in consumer:
        got.append(record.value)
        if len(got) == len(sent):
            break
    consumer.commit()
    consumer.close()
    assert sorted(got) == sorted(sent)


def test_aiokafka(cluster: LocalCluster) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.helpers import create_ssl_context

    sent = values("aiokafka")

    async def run() -> list[bytes]:
        auth: dict[str, Any] = {
            "bootstrap_servers": cluster.bootstrap_servers,
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": "alice",
            "sasl_plain_password": PASSWORD,
            "ssl_context": create_ssl_context(cafile=ca(cluster)),
        }
        producer = AIOKafkaProducer(acks="all", **auth)
        await producer.start()
        try:
            for v in sent:
                await producer.send_and_wait("aiokafka", v)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            "aiokafka", group_id="g-aiokafka", auto_offset_reset="earliest", **auth
        )
        await consumer.start()
        got: list[bytes] = []
        try:
            deadline = time.monotonic() + 60
            while len(got) < len(sent) and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=1000)).values():
                    got += [r.value for r in records]
            await consumer.commit()
        finally:
            await consumer.stop()
        return got

    assert sorted(asyncio.run(run())) == sorted(sent)


def test_kcat(cluster: LocalCluster) -> None:
    assert shutil.which("kcat"), "kcat is missing: scripts/test installs Debian's kcat package"
    settings = [
        "-X",
        "security.protocol=SASL_SSL",
        "-X",
        "sasl.mechanisms=SCRAM-SHA-512",
        "-X",
        "sasl.username=alice",
        "-X",
        f"sasl.password={PASSWORD}",
        "-X",
        f"ssl.ca.location={ca(cluster)}",
    ]

    def kcat(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            ["kcat", "-b", cluster.bootstrap_servers, *settings, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    sent = {v.decode() for v in values("kcat")}
    kcat("-P", "-t", "kcat", "-X", "request.required.acks=-1", stdin="\n".join(sent) + "\n")
    out = kcat("-G", "g-kcat", "-o", "beginning", "-e", "-q", "kcat")
    assert set(out.split()) == sent


# --- straight to one broker, on Kafka's protocol over TLS -------------------------------


async def authenticate(
    cluster: LocalCluster, broker: int, user: str, password: str, mechanism: str
) -> None:
    host, port = cluster.broker_address(broker)
    reader, writer = await asyncio.open_connection(host, port, ssl=tls_context(cluster))
    try:
        await sasl_client_authenticate(mechanism, user, password, reader, writer)
    finally:
        writer.close()


def can_authenticate(cluster: LocalCluster, broker: int, user: str, password: str) -> bool:
    try:
        asyncio.run(authenticate(cluster, broker, user, password, "SCRAM-SHA-256"))
    except AuthenticationFailedError:
        return False
    return True


def test_a_password_change_takes_effect_on_every_broker_without_a_restart(
    cluster: LocalCluster,
) -> None:
    add_user(cluster, "bob", "first-password")
    for b in cluster.broker_ids:
        wait_until(lambda b=b: can_authenticate(cluster, b, "bob", "first-password"), 30)
    add_user(cluster, "bob", "second-password", iterations=8192)
    for b in cluster.broker_ids:
        wait_until(lambda b=b: can_authenticate(cluster, b, "bob", "second-password"), 30)
        assert not can_authenticate(cluster, b, "bob", "first-password")


async def closed(reader: asyncio.StreamReader, timeout: float = 10) -> bool:
    """The broker ended the connection (EOF or reset) without another answer."""
    try:
        data = await asyncio.wait_for(reader.read(1), timeout)
    except (ConnectionError, ssl.SSLError):
        return True
    return data == b""


def test_what_does_not_authenticate_gets_kafkas_errors_and_a_closed_connection(
    cluster: LocalCluster,
) -> None:
    from kio.schema.metadata.v9.request import MetadataRequest
    from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
    from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

    controller_before = cluster.controller()
    host, port = cluster.broker_address(1)

    async def connect() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(host, port, ssl=tls_context(cluster))

    async def run() -> None:
        # Wrong password, unknown user: SASL_AUTHENTICATION_FAILED, then the broker closes.
        for user, password in (("alice", "wrong"), ("mallory", PASSWORD)):
            with pytest.raises(AuthenticationFailedError, match="failed"):
                await authenticate(cluster, 1, user, password, "SCRAM-SHA-512")

        # A mechanism the listener does not enable: the ones it does, then closed.
        reader, writer = await connect()
        answer = await exchange(reader, writer, SaslHandshakeRequest(mechanism="PLAIN"), 1, "test")
        assert answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert set(answer.mechanisms) == {"SCRAM-SHA-512", "SCRAM-SHA-256"}
        assert await closed(reader)

        # A request before authenticating: closed, unanswered.
        reader, writer = await connect()
        writer.write(
            request_frame(
                MetadataRequest(
                    topics=None,
                    allow_auto_topic_creation=False,
                    include_cluster_authorized_operations=False,
                    include_topic_authorized_operations=False,
                ),
                1,
                "test",
            )
        )
        assert await closed(reader)

        # Garbage and oversized SCRAM tokens: SASL_AUTHENTICATION_FAILED, closed.
        for token in (b"\x00garbage\xff", b"n,,n=alice,r=" + b"A" * 100_000):
            reader, writer = await connect()
            await exchange(
                reader, writer, SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 1, "test"
            )
            answer = await exchange(
                reader, writer, SaslAuthenticateRequest(auth_bytes=token), 2, "test"
            )
            assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
            assert await closed(reader)

        # A frame beyond sasl.server.max.receive.size before authenticating: closed.
        reader, writer = await connect()
        writer.write(struct.pack(">i", 10_000_000) + b"\x00" * 1024)
        assert await closed(reader)

        # A plaintext client on the TLS port: no answer it could read, and closed.
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(request_frame(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 1, "t"))
        assert await closed(reader)

        # A forged controller request (controller epoch 1,000,000, leader 99), and every
        # other request brokers send each other, over TLS without SASL: the broker closes
        # the connection and changes nothing.
        forged = m.LeaderAndIsrRequest(
            99,
            1_000_000,
            1,
            [m.LeaderAndIsrPartitionState("confluent", 0, 1_000_000, 99, 50, [99], 0, [99])],
            [m.BrokerNode(99, "127.0.0.1", 1, None)],
        )
        for request in [forged, *RPC_SAMPLES]:
            reader, writer = await connect()
            api_key = m.API_KEY_OF_REQUEST[type(request)]
            for chunk in encode_request(RequestHeader(int(api_key), 0, 7, "x"), request):
                writer.write(bytes(chunk))
            assert await closed(reader), type(request).__name__

    asyncio.run(run())
    # Everything is as it was: every broker up, the same controller, leaders unchanged.
    assert all(cluster.is_alive(b) for b in cluster.broker_ids)
    assert cluster.controller() == controller_before
    token = {"Authorization": f"Bearer {cluster.admin_token()}"}  # a secured cluster's
    status, body = http_get(f"{cluster.admin_url(1)}/v1/broker", headers=token)
    assert status == 200
    assert json.loads(body)["metadata"]["controller_id"] == controller_before[0]  # type: ignore[index]
    log = Path(cluster.broker_log_path(1)).read_text()
    assert "before SASL authentication" in log


def test_brokers_reach_each_other_over_sasl_ssl(cluster: LocalCluster) -> None:
    """Replication and the controller's requests run on the secured listener: every
    partition of the topics above has its three replicas in sync."""
    raw = cluster.zk_client().get_data("/brokers/ids/1")
    assert raw is not None
    assert json.loads(raw)["listener_security_protocol_map"] == {"SASL_SSL": "SASL_SSL"}
    admin = AdminClient(cluster.client_config())
    md = admin.list_topics(timeout=30)
    for topic in CLIENTS:
        for p in md.topics[topic].partitions.values():
            assert sorted(p.isrs) == sorted(p.replicas) and len(p.replicas) == 3
