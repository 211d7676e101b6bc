"""Consumer groups served to unmodified Kafka clients (confluent-kafka and kafka-python) by
real brokers and a real ZooKeeper: members split a topic's partitions with no overlap and
no gap, partitions move when a member leaves (cooperative-sticky moving only what it
must), committed offsets survive a restart of the consumer and a kill -9 of the group's
coordinator."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition as MkTopicPartition
from minikafka.rules.consumer_offsets import OFFSETS_TOPIC, partition_for
from tests.cluster.conftest import ClusterFactory, wait_until
from tests.kafka_protocol.test_confluent_kafka import create_topic

pytestmark = pytest.mark.timeout(300)

PARTITIONS = 6
# Short sessions, so a member that is gone without leaving is noticed within the test.
SESSION_MS = 6000


class Member:
    """A confluent-kafka group member polling in a thread of its own. It keeps its current
    assignment, every change of it, and every record it was given."""

    def __init__(self, bootstrap: str, group: str, topic: str, **conf: Any) -> None:
        self.name = conf.pop("client.id", f"member-{id(self)}")
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": self.name,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": SESSION_MS,
                "heartbeat.interval.ms": 500,
                **conf,
            }
        )
        self.topic = topic
        self.assignment: frozenset[int] = frozenset()
        self.revoked: list[frozenset[int]] = []
        self.records: list[tuple[int, int, bytes]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._close = True
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        c = self.consumer

        def on_revoke(_: Any, partitions: list[TopicPartition]) -> None:
            self.revoked.append(frozenset(p.partition for p in partitions))

        c.subscribe([self.topic], on_revoke=on_revoke)
        try:
            while not self._stop.is_set():
                msg = c.poll(0.2)
                with self._lock:
                    self.assignment = frozenset(p.partition for p in c.assignment())
                if msg is None:
                    continue
                if msg.error():
                    self.errors.append(str(msg.error()))
                    continue
                with self._lock:
                    self.records.append((msg.partition(), msg.offset(), msg.value()))
        finally:
            if self._close:
                c.close()

    def stop(self, *, close: bool = True) -> None:
        self._close = close
        self._stop.set()
        self.thread.join(30)


@pytest.fixture
def members() -> Iterator[list[Member]]:
    started: list[Member] = []
    yield started
    for m in started:
        if m.thread.is_alive():
            m.stop()


def split_is_exact(members: list[Member], partitions: int = PARTITIONS) -> bool:
    """Every partition owned by exactly one member, and every member owns some."""
    owned = [m.assignment for m in members]
    union = frozenset().union(*owned)
    return (
        all(owned)
        and union == frozenset(range(partitions))
        and sum(len(o) for o in owned) == partitions
    )


def produce(bootstrap: str, topic: str, n: int, start: int = 0) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(start, start + n):
        p.produce(topic, str(i).encode(), key=str(i).encode())
    assert p.flush(60) == 0


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        got = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
        return {tp.partition: tp.offset for tp in got}
    finally:
        c.close()


@pytest.mark.parametrize("n", [2, 3])
def test_members_split_the_partitions_with_no_overlap_and_no_gap(
    make_cluster: ClusterFactory, members: list[Member], n: int
) -> None:
    cluster = make_cluster(3)
    bs = cluster.bootstrap_servers
    create_topic(bs, "split", PARTITIONS, 3)
    members += [Member(bs, "g-split", "split") for _ in range(n)]
    wait_until(lambda: split_is_exact(members), 60, f"{n} members to split the partitions")
    # And they read what is produced: each record once, by the member owning its partition.
    produce(bs, "split", 300)
    wait_until(lambda: sum(len(m.records) for m in members) >= 300, 60, "all records read")
    for m in members:
        assert {p for p, _, _ in m.records} <= m.assignment
    values = sorted(int(v) for m in members for _, _, v in m.records)
    assert values == list(range(300))


def test_a_leaving_member_s_partitions_move_to_the_others(
    make_cluster: ClusterFactory, members: list[Member]
) -> None:
    cluster = make_cluster(3)
    bs = cluster.bootstrap_servers
    create_topic(bs, "leave", PARTITIONS, 3)
    members += [Member(bs, "g-leave", "leave") for _ in range(3)]
    wait_until(lambda: split_is_exact(members), 60, "3 members to split the partitions")
    leaving = members[2]
    leaving.stop()  # close(): LeaveGroup, so the others rebalance at once
    rest = members[:2]
    wait_until(lambda: split_is_exact(rest), 30, "the other 2 to take over its partitions")


def test_cooperative_sticky_moves_only_the_partitions_it_must(
    make_cluster: ClusterFactory, members: list[Member]
) -> None:
    cluster = make_cluster(3)
    bs = cluster.bootstrap_servers
    create_topic(bs, "sticky", PARTITIONS, 3)
    conf = {"partition.assignment.strategy": "cooperative-sticky"}
    members += [Member(bs, "g-sticky", "sticky", **conf) for _ in range(3)]
    wait_until(lambda: split_is_exact(members), 60, "3 members to split the partitions")
    before = {m.name: m.assignment for m in members}
    revoked_before = {m.name: len(m.revoked) for m in members}
    members[2].stop()
    rest = members[:2]
    wait_until(lambda: split_is_exact(rest), 30, "the other 2 to take over its partitions")
    for m in rest:
        # Each keeps what it had (nothing revoked from it) and gains a share of the rest.
        assert m.assignment > before[m.name]
        assert all(not r for r in m.revoked[revoked_before[m.name] :]), m.revoked


def test_a_restarted_consumer_resumes_from_its_committed_offsets(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(3)
    bs = cluster.bootstrap_servers
    create_topic(bs, "resume", 1, 3)
    produce(bs, "resume", 100)
    conf = {
        "bootstrap.servers": bs,
        "group.id": "g-resume",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    first = Consumer(conf)
    first.subscribe(["resume"])
    seen: list[int] = []
    deadline = time.monotonic() + 60
    while len(seen) < 40:
        assert time.monotonic() < deadline
        msg = first.poll(0.5)
        if msg is not None and not msg.error():
            seen.append(msg.offset())
    first.commit(offsets=[TopicPartition("resume", 0, seen[39] + 1)], asynchronous=False)
    first.close()
    assert committed(bs, "g-resume", "resume", 1) == {0: 40}

    second = Consumer(conf)
    second.subscribe(["resume"])
    try:
        deadline = time.monotonic() + 60
        while True:
            assert time.monotonic() < deadline
            msg = second.poll(0.5)
            if msg is not None and not msg.error():
                break
        assert (msg.offset(), msg.value()) == (40, b"40")
    finally:
        second.close()


def coordinator_of(cluster: LocalCluster, group: str, num_partitions: int) -> int:
    tp = MkTopicPartition(OFFSETS_TOPIC, partition_for(group, num_partitions))
    st = cluster.zk_client().get_partition_state(tp)
    assert st is not None
    return st.leader


def test_kill_9_of_the_coordinator_loses_no_acknowledged_commit(
    make_cluster: ClusterFactory,
) -> None:
    """A member commits after every record; the coordinator is killed mid-stream. The group
    finds the new coordinator, the member goes on, and every offset it had committed (the
    commit acknowledged) is still committed afterwards: nothing behind it is read again
    by a consumer that restarts."""
    cluster = make_cluster(3)
    bs = cluster.bootstrap_servers
    create_topic(bs, "coord", 3, 3)
    produce(bs, "coord", 300)
    group = "g-coord"
    consumer = Consumer(
        {
            "bootstrap.servers": bs,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": SESSION_MS,
        }
    )
    consumer.subscribe(["coord"])
    acknowledged: dict[int, int] = {}
    killed: int | None = None
    read = 0
    deadline = time.monotonic() + 120
    try:
        while read < 600:
            assert time.monotonic() < deadline, f"read {read} of 600"
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            read += 1
            try:
                consumer.commit(message=msg, asynchronous=False)
            except KafkaException:
                # Not acknowledged (the coordinator is moving): retried with the next record.
                pass
            else:
                acknowledged[msg.partition()] = msg.offset() + 1
            if read == 100:
                num_partitions = int(cluster.overrides["offsets.topic.num.partitions"])
                killed = coordinator_of(cluster, group, num_partitions)
                cluster.kill(killed)
                # More records after the kill: the member must go on to read them.
                produce(bootstrap_without(cluster, killed), "coord", 300, 300)
    finally:
        consumer.close()
    assert killed is not None
    now = committed(bootstrap_without(cluster, killed), group, "coord", 3)
    # A commit that failed at the client may still have been stored, never the reverse.
    assert all(now[p] >= offset for p, offset in acknowledged.items()), (now, acknowledged)


def bootstrap_without(cluster: LocalCluster, broker_id: int) -> str:
    return ",".join(
        f"{cluster.broker_host(b)}:{port}"
        for b, port in cluster.broker_ports.items()
        if b != broker_id
    )


def test_kafka_python_members_split_the_partitions_and_resume_from_their_commits(
    make_cluster: ClusterFactory,
) -> None:
    """kafka-python's own group client (its coordinator and range assignor, not
    librdkafka's): two members split the partitions, commit what they read, and a consumer
    of the same group started afterwards reads only what was produced since."""
    from kafka import KafkaConsumer

    cluster = make_cluster(3)
    bs = cluster.bootstrap_servers
    create_topic(bs, "kp-groups", PARTITIONS, 3)
    produce(bs, "kp-groups", 120)

    def consumer() -> KafkaConsumer:
        return KafkaConsumer(
            "kp-groups",
            bootstrap_servers=bs.split(","),
            group_id="g-kafka-python",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=500,
        )

    first, second = consumer(), consumer()
    read: dict[str, list[tuple[int, int]]] = {"first": [], "second": []}
    try:
        deadline = time.monotonic() + 90

        def poll_both() -> bool:
            for name, c in (("first", first), ("second", second)):
                for tp, records in c.poll(timeout_ms=200).items():
                    read[name] += [(tp.partition, r.offset) for r in records]
            owned = [{tp.partition for tp in c.assignment()} for c in (first, second)]
            split = (
                all(owned)
                and not owned[0] & owned[1]
                and owned[0] | owned[1] == set(range(PARTITIONS))
            )
            return split and len(set(read["first"] + read["second"])) >= 120

        while not poll_both():
            assert time.monotonic() < deadline, (read, first.assignment(), second.assignment())
        # Every record read; some maybe twice: a partition the first member read before the
        # second joined moves to the second without a commit, which reads it again from the
        # start (at least once, as in Kafka).
        seen = read["first"] + read["second"]
        unique = set(seen)
        assert len(unique) == 120
        for partition in range(PARTITIONS):
            offsets = sorted(o for p, o in unique if p == partition)
            assert offsets == list(range(len(offsets))), (partition, offsets)
        for c in (first, second):
            c.commit()
    finally:
        first.close()
        second.close()

    produce(bs, "kp-groups", 30, start=120)
    third = consumer()
    try:
        values: list[int] = []
        deadline = time.monotonic() + 60
        while len(values) < 30:
            assert time.monotonic() < deadline, values
            for records in third.poll(timeout_ms=500).values():
                values += [int(r.value) for r in records]
        assert sorted(values) == list(range(120, 150))
    finally:
        third.close()


def test_the_coordinator_exports_consumer_lag_under_the_exporter_s_names(
    make_cluster: ClusterFactory,
) -> None:
    """`kafka_consumergroup_lag{group,topic,partition}`: high watermark minus committed
    offset, from the broker coordinating the group (one broker, so sums count it once),
    whichever brokers lead the partitions."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    cluster = make_cluster(3)
    bs = cluster.bootstrap_servers
    create_topic(bs, "lagging", 3, 3)
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    for partition, n in ((0, 50), (1, 20), (2, 5)):
        for _ in range(n):
            p.produce("lagging", b"x", partition=partition)
    assert p.flush(60) == 0
    c = Consumer({"bootstrap.servers": bs, "group.id": "g-lag"})
    try:
        c.commit(
            offsets=[TopicPartition("lagging", 0, 30), TopicPartition("lagging", 1, 20)],
            asynchronous=False,
        )
    finally:
        c.close()

    def scrape() -> dict[int, dict[tuple[str, str], float]]:
        out: dict[int, dict[tuple[str, str], float]] = {}
        for b in cluster.broker_ids:
            with urllib.request.urlopen(cluster.admin_url(b) + "/metrics", timeout=10) as r:
                text = r.read().decode()
            out[b] = {
                (s.labels["topic"], s.labels["partition"]): s.value
                for family in text_string_to_metric_families(text)
                if family.name == "kafka_consumergroup_lag"
                for s in family.samples
                if s.labels["group"] == "g-lag"
            }
        return out

    lags = scrape()
    exporting = [b for b, values in lags.items() if values]
    assert len(exporting) == 1, lags
    (coordinator,) = exporting
    assert coordinator == coordinator_of(
        cluster, "g-lag", int(cluster.overrides["offsets.topic.num.partitions"])
    )
    assert lags[coordinator] == {("lagging", "0"): 20.0, ("lagging", "1"): 0.0}


def test_a_restarted_static_member_gets_its_partitions_back_without_a_rebalance(
    make_cluster: ClusterFactory, members: list[Member]
) -> None:
    """KIP-345: a member with `group.instance.id` that closes (static members send no
    LeaveGroup) and comes back within its session gets the same partitions, and the other
    member is never asked to give any up."""
    cluster = make_cluster(3)
    bs = cluster.bootstrap_servers
    create_topic(bs, "static", PARTITIONS, 3)
    members += [
        Member(bs, "g-static", "static", **{"group.instance.id": f"instance-{i}"}) for i in range(2)
    ]
    wait_until(lambda: split_is_exact(members), 60, "2 static members to split the partitions")
    before = [m.assignment for m in members]
    revoked_before = len(members[0].revoked)
    members[1].stop()
    members[1] = Member(bs, "g-static", "static", **{"group.instance.id": "instance-1"})
    wait_until(lambda: members[1].assignment, 30, "the restarted member's partitions")
    assert [m.assignment for m in members] == before
    assert len(members[0].revoked) == revoked_before


def test_the_offsets_topic_is_compacted_and_a_new_coordinator_loads_the_latest_commits(
    make_cluster: ClusterFactory,
) -> None:
    """Hundreds of commits of the same partitions in small segments: the log cleaner keeps
    the latest commit per key in `__consumer_offsets`, and after a kill -9 of the
    coordinator the new one, loading the compacted log, has exactly the latest offsets."""
    from minikafka.storage.record_batch import decode_records
    from tests.cluster.helpers import replica_batches

    cluster = make_cluster(
        3,
        overrides={
            "offsets.topic.num.partitions": "1",
            "offsets.topic.segment.bytes": "4096",
            "log.cleaner.backoff.ms": "200",
        },
    )
    bs = cluster.bootstrap_servers
    create_topic(bs, "compacted-commits", 3, 3)
    c = Consumer({"bootstrap.servers": bs, "group.id": "g-compact"})
    commits = 300
    try:
        for i in range(1, commits + 1):
            c.commit(
                offsets=[TopicPartition("compacted-commits", p, i * 10 + p) for p in range(3)],
                asynchronous=False,
            )
    finally:
        c.close()
    tp = MkTopicPartition(OFFSETS_TOPIC, 0)
    leader = coordinator_of(cluster, "g-compact", 1)

    def records_left() -> int:
        return sum(h.record_count for h, _ in replica_batches(cluster.log_dir(leader), tp))

    # 300 commits of 3 partitions are 900 records; once cleaned, a few segments' worth.
    wait_until(lambda: records_left() < commits, 60, "the offsets log to be compacted")
    keys = [
        r.key
        for h, data in replica_batches(cluster.log_dir(leader), tp)
        for r in decode_records(data)
    ]
    assert len(keys) < commits

    cluster.kill(leader)
    alive = bootstrap_without(cluster, leader)
    assert committed(alive, "g-compact", "compacted-commits", 3) == {
        p: commits * 10 + p for p in range(3)
    }
