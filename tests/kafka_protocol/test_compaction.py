"""Log compaction on real brokers, through an unmodified Kafka client (confluent-kafka): a
topic with cleanup.policy=compact keeps the latest value of each key at its offset on every
replica, readers see the offsets with gaps, a tombstone goes once delete.retention.ms has
passed, keyless records are refused, and the cleaned log survives a kill -9 of its leader."""

from __future__ import annotations

import threading
import time
import urllib.request
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry
from prometheus_client.parser import text_string_to_metric_families

from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition
from minikafka.storage import log_files
from minikafka.storage.record_batch import decode_records
from tests.cluster.conftest import ClusterFactory, wait_until
from tests.cluster.helpers import producer_config
from tests.kafka_protocol.test_confluent_kafka import consume_from_beginning, create_topic
from tests.kafka_protocol.test_topic_configs import alter, describe

pytestmark = pytest.mark.timeout(240)

TOPIC = "latest-by-key"
TP = TopicPartition(TOPIC, 0)
KEYS = [b"k%d" % i for i in range(8)]
ROUNDS = 5


def create_compacted_topic(bootstrap: str, **configs: str) -> None:
    """TOPIC: one partition, RF 3, min.insync 2, compacted as soon as anything is dirty."""
    create_topic(
        bootstrap,
        TOPIC,
        1,
        3,
        **{
            "cleanup.policy": "compact",
            "min.cleanable.dirty.ratio": "0.01",
            "min.insync.replicas": "2",
            **configs,
        },
    )


def produce(bootstrap: str, pairs: list[tuple[bytes, bytes | None]]) -> dict[bytes, list[int]]:
    """Send with acks=all (idempotent); each key's offsets, in order."""
    producer = Producer(producer_config(bootstrap, {"linger.ms": 0}))
    offsets: dict[bytes, list[int]] = {}
    errors: list[Any] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            offsets.setdefault(msg.key(), []).append(msg.offset())

    for key, value in pairs:
        producer.produce(TOPIC, value, key, partition=0, on_delivery=delivered)
        producer.flush(30)  # one batch each: cleaning works on records inside batches
    assert not errors, errors
    return offsets


def replica_keys(cluster: LocalCluster, broker_id: int) -> list[tuple[int, bytes | None]]:
    """(offset, key) of every record in the broker's replica, from its files."""
    out = []
    for _, batch in log_files.read_batches(cluster.log_dir(broker_id), TP):
        out += [(r.offset, r.key) for r in decode_records(batch)]
    return out


def cleaner_metrics(cluster: LocalCluster, broker_id: int) -> dict[str, float]:
    with urllib.request.urlopen(cluster.admin_url(broker_id) + "/metrics", timeout=10) as r:
        text = r.read().decode()
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if "cleaner" in sample.name
    }


def cleaned_everywhere(cluster: LocalCluster, superseded: set[int]) -> bool:
    return all(
        not superseded & {offset for offset, _ in replica_keys(cluster, b)}
        for b in cluster.broker_ids
    )


def test_a_compacted_topic_keeps_the_latest_value_of_each_key_on_every_replica(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides={"log.cleaner.backoff.ms": "200"})
    bootstrap = cluster.bootstrap_servers
    # A few records per segment: closed segments to clean.
    create_compacted_topic(bootstrap, **{"segment.bytes": "1024", "delete.retention.ms": "3000"})
    offsets: dict[bytes, list[int]] = {}
    for round_ in range(ROUNDS):
        for key, sent in produce(bootstrap, [(k, b"%s-%d" % (k, round_)) for k in KEYS]).items():
            offsets.setdefault(key, []).extend(sent)
    tombstone = produce(bootstrap, [(KEYS[0], None)])[KEYS[0]][0]
    # Later records roll the segments that hold the ones above (the active one is never
    # cleaned).
    padding = produce(bootstrap, [(b"pad-%d" % i, b"p" * 200) for i in range(12)])

    superseded = {o for sent in offsets.values() for o in sent[:-1]} | {offsets[KEYS[0]][-1]}
    wait_until(lambda: cleaned_everywhere(cluster, superseded), 60, "every replica to be compacted")

    # Every broker's cleaner says so on its admin endpoint.
    for b in cluster.broker_ids:
        cleaner = cleaner_metrics(cluster, b)
        assert cleaner["minikafka_log_cleaner_passes_total"] >= 1
        assert cleaner["minikafka_log_cleaner_records_removed_total"] >= len(superseded)
        # The last pass's share kept: under 100 (it removed something). It may be 0: a
        # pass over a segment whose every record was superseded keeps nothing.
        assert 0 <= cleaner["kafka_log_logcleaner_cleaner_recopy_percent"] < 100

    # A reader from offset 0 sees the latest value of each key, at the offset it was given,
    # and the offsets in between are gone.
    records = consume_from_beginning(bootstrap, TOPIC, 1)
    seen = [(m.offset(), m.key(), m.value()) for m in records]
    by_key = {k: (o, v) for o, k, v in seen}
    for key in KEYS[1:]:
        assert [o for o, k, _ in seen if k == key] == [offsets[key][-1]]
        assert by_key[key] == (offsets[key][-1], b"%s-%d" % (key, ROUNDS - 1))
    read_offsets = [o for o, _, _ in seen]
    assert read_offsets == sorted(read_offsets)
    assert len(read_offsets) < read_offsets[-1] + 1  # gaps
    assert {o for sent in padding.values() for o in sent} <= set(read_offsets)

    # The tombstone stays until its segment is older than delete.retention.ms, then goes.
    wait_until(
        lambda: all(
            tombstone not in {o for o, _ in replica_keys(cluster, b)} for b in cluster.broker_ids
        ),
        60,
        "the tombstone to be removed",
    )
    assert KEYS[0] not in {m.key() for m in consume_from_beginning(bootstrap, TOPIC, 1)}

    # The cleaned log outlives its leader: the next leader serves the same records.
    state = cluster.zk_client().get_partition_state(TP)
    assert state is not None
    cluster.kill(state.leader)
    wait_until(
        lambda: (
            (s := cluster.zk_client().get_partition_state(TP)) is not None
            and s.leader not in (-1, state.leader)
        ),
        60,
        "a new leader",
    )
    after = consume_from_beginning(bootstrap, TOPIC, 1)
    assert [(m.offset(), m.key(), m.value()) for m in after] == [r for r in seen if r[1] != KEYS[0]]


def test_keyless_records_are_refused_and_a_policy_change_applies_at_once(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides={"log.cleaner.backoff.ms": "200"})
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "keys-only", 1, 3, **{"cleanup.policy": "compact"})
    producer = Producer(producer_config(bootstrap, {"retries": 0, "enable.idempotence": False}))
    errors: list[Any] = []
    for key in (None, b"k"):  # one request each: a refused batch fails as a whole
        producer.produce(
            "keys-only", b"v", key, partition=0, on_delivery=lambda e, _m: errors.append(e)
        )
        assert producer.flush(30) == 0
    assert errors[0] is not None and errors[0].code() == KafkaError.INVALID_RECORD
    assert errors[1] is None

    # A topic created with the default policy (delete) keeps every record, until
    # cleanup.policy gains compact (IncrementalAlterConfigs APPEND): then every broker's
    # cleaner compacts it, without a restart.
    create_topic(
        bootstrap, TOPIC, 1, 3, **{"segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01"}
    )
    sent = produce(bootstrap, [(b"same", b"v%d" % i) for i in range(12)])[b"same"]
    produce(bootstrap, [(b"pad-%d" % i, b"p" * 200) for i in range(8)])  # rolls segments
    assert not cleaned_everywhere(cluster, set(sent[:-1]))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    append = AlterConfigOpType.APPEND
    alter(admin, TOPIC, ConfigEntry("cleanup.policy", "compact", incremental_operation=append))
    assert describe(admin, TOPIC)["cleanup.policy"].value == "delete,compact"
    wait_until(lambda: cleaned_everywhere(cluster, set(sent[:-1])), 60, "compaction to start")


@pytest.mark.parametrize(
    "victims",
    [
        pytest.param((1, 2, 3), id="each-broker-once"),
        # Each restart waits for the killed broker's session to expire: minutes, -m slow.
        pytest.param(
            (1, 2, 3) * 4,
            id="each-broker-four-times",
            marks=[pytest.mark.slow, pytest.mark.timeout(600)],
        ),
    ],
)
def test_the_latest_acknowledged_value_of_every_key_survives_kill_9_during_cleaning(
    make_cluster: ClusterFactory, victims: tuple[int, ...]
) -> None:
    """Brokers are killed (-9) and restarted over and over while records stream in and the
    cleaners rewrite and swap segments: afterwards every replica holds, for every key, the
    latest value the producer had acknowledged, and a reader from offset 0 ends on it."""
    cluster = make_cluster(
        overrides={
            "log.cleaner.backoff.ms": "50",
            # A killed follower leaves the ISR at once, so the HW, and the leader's cleaner
            # behind it, move past what it had fetched: when it is back it fetches from inside
            # a run of batches the cleaner emptied and merged into one.
            "replica.lag.disconnected.max.ms": "1000",
        }
    )
    bootstrap = cluster.bootstrap_servers
    create_compacted_topic(bootstrap, **{"segment.bytes": "8192"})
    acked: dict[bytes, tuple[int, bytes]] = {}  # key -> (offset, value) of its latest ack
    errors: list[Any] = []
    done = threading.Event()

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        elif msg.key() not in acked or acked[msg.key()][0] < msg.offset():
            acked[msg.key()] = (msg.offset(), msg.value())

    def stream() -> None:
        producer = Producer(producer_config(bootstrap, {"linger.ms": 5, "batch.size": 4096}))
        i = 0
        while not done.is_set():  # about 1,000 records/s
            value = b"v%06d" % i + b"." * 80
            producer.produce(TOPIC, value, b"key-%02d" % (i % 40), 0, delivered)
            i += 1
            if i % 10 == 0:
                producer.poll(0.01)
        assert producer.flush(60) == 0  # every record acknowledged or failed, and reported

    streamer = threading.Thread(target=stream)
    streamer.start()
    try:
        for victim in victims:
            time.sleep(1.0)
            cluster.kill(victim)
            time.sleep(0.5)
            cluster.start_broker(victim)
    finally:
        done.set()
        streamer.join(90)
    assert not errors, errors[:3]
    assert len(acked) == 40

    def replica_has_latest(broker_id: int) -> bool:
        records: dict[int, tuple[bytes | None, bytes | None]] = {}
        for _, batch in log_files.read_batches(cluster.log_dir(broker_id), TP):
            records.update((r.offset, (r.key, r.value)) for r in decode_records(batch))
        return all(records.get(o) == (k, v) for k, (o, v) in acked.items())

    wait_until(
        lambda: all(replica_has_latest(b) for b in cluster.broker_ids),
        90,
        "every replica to hold every key's latest acknowledged value",
    )
    last_seen: dict[bytes, bytes] = {}
    for m in consume_from_beginning(bootstrap, TOPIC, 1):
        last_seen[m.key()] = m.value()
    assert last_seen == {k: v for k, (_, v) in acked.items()}
    # The cleaners did work meanwhile (the kills did not just stop them).
    assert (
        sum(
            cleaner_metrics(cluster, b)["minikafka_log_cleaner_passes_total"]
            for b in cluster.broker_ids
        )
        >= 1
    )
