"""A mutual-TLS cluster (`cluster up --security ssl`): every client, brokers included,
shows a certificate the cluster's CA signed, and is known by its common name
(ssl.principal.mapping.rules). Unmodified clients produce with acks=all and consume in a
group with a client certificate; a client without one, or with one from another CA, is
refused at the handshake; brokers replicate to each other over the same listener."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka.cluster import LocalCluster
from minikafka.security.certs import make_ca
from tests.cluster.conftest import started_cluster

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with started_cluster(tmp_path_factory.mktemp("mtls"), security="ssl") as c:
        admin = AdminClient(c.client_config())
        for f in admin.create_topics(
            [NewTopic(t, 3, 3, config={"min.insync.replicas": "2"}) for t in ("m1", "m2", "m3")]
        ).values():
            f.result(60)
        yield c


def test_confluent_kafka_with_a_client_certificate(cluster: LocalCluster) -> None:
    config = cluster.client_config()
    assert config["security.protocol"] == "SSL"
    sent = [f"m-{i}".encode() for i in range(100)]
    producer = Producer({**config, "acks": "all"})
    for v in sent:
        producer.produce("m1", v)
    assert producer.flush(60) == 0
    consumer = Consumer({**config, "group.id": "g-mtls", "auto.offset.reset": "earliest"})
    consumer.subscribe(["m1"])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < len(sent) and time.monotonic() < deadline:
        msg = consumer.poll(1)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    assert sorted(got) == sorted(sent)
    md = AdminClient(config).list_topics(timeout=30)
    for p in md.topics["m1"].partitions.values():
        assert sorted(p.isrs) == sorted(p.replicas) and len(p.replicas) == 3


def test_kafka_python_aiokafka_and_kcat_with_a_client_certificate(cluster: LocalCluster) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.helpers import create_ssl_context
    from kafka import KafkaConsumer, KafkaProducer

    config = cluster.client_config()
    keystore = config["ssl.certificate.location"]
    cafile = config["ssl.ca.location"]
    kp: dict[str, Any] = {
        "bootstrap_servers": cluster.bootstrap_servers,
        "security_protocol": "SSL",
        "ssl_cafile": cafile,
        "ssl_certfile": keystore,
        "ssl_keyfile": keystore,
    }
    producer = KafkaProducer(acks="all", **kp)
    for f in [producer.send("m2", f"kp-{i}".encode()) for i in range(50)]:
        f.get(timeout=60)
    producer.close()
    consumer = KafkaConsumer(
        "m2", group_id="g-kp", auto_offset_reset="earliest", consumer_timeout_ms=30000, **kp
    )
    got = []
    for record in consumer:
        got.append(record.value)
        if len(got) == 50:
            break
    consumer.close()
    assert len(set(got)) == 50

    async def aio() -> int:
        auth: dict[str, Any] = {
            "bootstrap_servers": cluster.bootstrap_servers,
            "security_protocol": "SSL",
            "ssl_context": create_ssl_context(cafile=cafile, certfile=keystore, keyfile=keystore),
        }
        p = AIOKafkaProducer(acks="all", **auth)
        await p.start()
        try:
            for i in range(50):
                await p.send_and_wait("m3", f"aio-{i}".encode())
        finally:
            await p.stop()
        c = AIOKafkaConsumer("m3", group_id="g-aio", auto_offset_reset="earliest", **auth)
        await c.start()
        seen: set[bytes] = set()
        try:
            deadline = time.monotonic() + 60
            while len(seen) < 50 and time.monotonic() < deadline:
                for records in (await c.getmany(timeout_ms=1000)).values():
                    seen |= {r.value for r in records}
        finally:
            await c.stop()
        return len(seen)

    assert asyncio.run(aio()) == 50

    assert shutil.which("kcat")
    settings = [f"-X{k}={v}" for k, v in config.items() if k != "bootstrap.servers"]
    done = subprocess.run(
        ["kcat", "-b", cluster.bootstrap_servers, *settings, "-C", "-t", "m3", "-e", "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert len(set(done.stdout.split())) == 50


def handshake(cluster: LocalCluster, context: ssl.SSLContext) -> None:
    host, port = cluster.broker_address(1)

    async def run() -> None:
        reader, writer = await asyncio.open_connection(host, port, ssl=context)
        try:
            # TLS 1.3 reports a refused client certificate with the first read.
            writer.write(b"\x00\x00\x00\x00")
            await writer.drain()
            data = await asyncio.wait_for(reader.read(1), 10)
            if data == b"":
                raise ConnectionResetError("closed by the broker")
        finally:
            writer.close()

    asyncio.run(run())


def test_a_client_without_a_certificate_or_with_a_stranger_ca_is_refused(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    cafile = cluster.client_config()["ssl.ca.location"]
    without = ssl.create_default_context(cafile=cafile)
    with pytest.raises((ssl.SSLError, ConnectionError)):
        handshake(cluster, without)

    other = make_ca(tmp_path / "other")
    stranger = other.issue(tmp_path / "other", "stranger", hosts=["127.0.0.1"])
    context = ssl.create_default_context(cafile=cafile)
    context.load_cert_chain(str(stranger.keystore))
    with pytest.raises((ssl.SSLError, ConnectionError)):
        handshake(cluster, context)

    # A client that does not trust the cluster's CA refuses the broker.
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(cluster, ssl.create_default_context())
    assert all(cluster.is_alive(b) for b in cluster.broker_ids)
