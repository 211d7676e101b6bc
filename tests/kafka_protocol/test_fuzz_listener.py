"""A fixed budget of damaged Kafka requests, for every API key the codec knows, against a
live broker: it never crashes, keeps answering, and the records it had acknowledged are
where they were, byte for byte.

The frames are real requests (every field set, built with kio from the schema of each
API version) that are then damaged: bytes flipped, cut short, extended, overwritten with
0xff (lying lengths and counts), or a valid header followed by random bytes. The random
generator is seeded, so a failure is repeatable (MINIKAFKA_FUZZ_SEED, MINIKAFKA_FUZZ_FRAMES
change seed and budget)."""

from __future__ import annotations

import os
import random
import struct
import time

import pytest
from confluent_kafka import Producer
from kio.schema.api_versions.v3.request import ApiVersionsRequest

from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition as MkTopicPartition
from minikafka.protocol.kafka.codec import request_type
from minikafka.server.kafka_api.handler import SERVED_VERSIONS
from tests.cluster.conftest import ClusterFactory
from tests.kafka_protocol.test_confluent_kafka import consume_from_beginning, create_topic
from tests.kafka_protocol.wire import KafkaWire, request_frame
from tests.unit.test_kafka_codec import sample

pytestmark = pytest.mark.timeout(300)

SEED = int(os.environ.get("MINIKAFKA_FUZZ_SEED", "20261125"))
FRAMES = int(os.environ.get("MINIKAFKA_FUZZ_FRAMES", "10000"))


def damaged(rng: random.Random, frame: bytes) -> bytes:
    """One damage of a request's bytes (after the size field); the size is made to match."""
    body = bytearray(frame[4:])
    kind = rng.randrange(6)
    if kind == 0:  # flip a few bytes past the api key and version
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(4, len(body))
            body[i] ^= 1 << rng.randrange(8)
    elif kind == 1:  # cut short
        body = body[: rng.randrange(0, len(body))]
    elif kind == 2:  # extend with random bytes
        body += rng.randbytes(rng.randint(1, 64))
    elif kind == 3:  # a lying length or count: 0xff... somewhere
        i = rng.randrange(4, len(body))
        body[i : i + 4] = b"\xff\xff\xff\x7f"[: max(0, len(body) - i)]
    elif kind == 4:  # a valid header, then garbage
        body = body[:8] + rng.randbytes(rng.randint(0, 200))
    else:  # a huge array count right after the header's client id
        i = min(len(body), 10 + rng.randrange(0, 20))
        body[i:i] = b"\xff\xff\xff\xf0"
    return struct.pack(">i", len(body)) + bytes(body)


def test_damaged_requests_of_every_api_never_hurt_the_broker(
    make_cluster: ClusterFactory,
) -> None:
    cluster: LocalCluster = make_cluster()
    create_topic(cluster.bootstrap_servers, "kept", 1, 3, **{"min.insync.replicas": "2"})
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(300):
        producer.produce("kept", b"acknowledged-%d" % i)
    assert producer.flush(60) == 0
    before = [
        (m.offset(), m.value())
        for m in consume_from_beginning(cluster.bootstrap_servers, "kept", 1)
    ]
    assert len(before) == 300
    st = cluster.zk_client().get_partition_state(MkTopicPartition("kept", 0))
    assert st is not None
    target = st.leader  # the leader gets the damaged produce requests
    pid = cluster.pid(target)
    assert pid is not None

    rng = random.Random(SEED)
    versions = [(k, v) for k, (lo, hi) in SERVED_VERSIONS.items() for v in range(lo, hi + 1)]
    samples = {
        kv: request_frame(sample(request_type(*kv)), rng.randrange(2**31)) for kv in versions
    }
    w: KafkaWire | None = None
    sent = closed = 0
    started = time.monotonic()
    while sent < FRAMES:
        if w is None:
            w = KafkaWire(cluster.broker_host(target), cluster.broker_ports[target], timeout=5)
        frame = damaged(rng, samples[rng.choice(versions)])
        try:
            w.send_raw(frame)
            sent += 1
            # Read whatever comes back without waiting for it; a closed connection is a
            # legitimate answer to a bad frame: open another.
            w.sock.settimeout(0.005)
            while True:
                got = w.sock.recv(1 << 16)
                if not got:
                    raise ConnectionResetError
        except (TimeoutError, BlockingIOError):
            w.sock.settimeout(5)
        except (ConnectionError, OSError):
            closed += 1
            w.close()
            w = None
    if w is not None:
        w.close()
    elapsed = time.monotonic() - started
    print(f"fuzz: {sent} damaged frames in {elapsed:.1f} s, {closed} connections closed")

    # The broker is up and serving Kafka clients.
    with KafkaWire(cluster.broker_host(target), cluster.broker_ports[target]) as fresh:
        versions_request = ApiVersionsRequest(client_software_name="x", client_software_version="1")
        assert fresh.call(versions_request).error_code == 0
    assert cluster.pid(target) == pid and cluster.is_alive(target)  # the same process
    # No request failed inside the broker: each was refused by the decoder or answered.
    log = cluster.broker_log_path(target).read_text()
    assert "Traceback" not in log, log[log.index("Traceback") - 2000 :][:6000]
    # Every acknowledged record is where it was.
    after = [
        (m.offset(), m.value())
        for m in consume_from_beginning(cluster.bootstrap_servers, "kept", 1)
    ]
    assert after[: len(before)] == before
