"""Racks (`broker.rack`) on a real cluster: each broker registers its rack, Metadata and
DescribeCluster carry it to unmodified clients, and topics and added partitions get Kafka's
rack-aware replica placement (`AdminUtils.assignReplicasToBrokers`), or Kafka's refusal when
only some brokers have a rack. And KIP-392: with `replica.selector.class` rack-aware, a
librdkafka consumer with `client.rack` reads the follower on its rack (the leader answers
its Fetch with a preferred read replica), a follower behind its fetch offset is passed over,
and a consumer goes back to the leader when its follower is lost or answers that the fetch
offset is past its log end (OFFSET_OUT_OF_RANGE), reading every record once.

The shared cluster has three brokers on two racks (a, a, b), made by `LocalCluster(racks=)`
as `minikafka cluster up --racks a,a,b` makes it: with a replication factor of 2, every
partition must have one replica on each rack, which the rack-unaware placement does not do
(it puts partitions on brokers 1 and 2, both on rack a).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import ConfigResource, NewPartitions, ResourceType
from prometheus_client.parser import text_string_to_metric_families

from minikafka.client.librdkafka import consume_ready
from minikafka.cluster import LocalCluster
from tests.cluster.conftest import (  # noqa: F401
    ClusterFactory,
    make_cluster,
    started_cluster,
    wait_until,
)
from tests.cluster.helpers import (
    Record,
    admin_client,
    bootstrap,
    consuming,
    create_topic,
    http_get,
    partition_states,
    run_cli,
    send_values,
    set_configs,
)

pytestmark = pytest.mark.timeout(180)

RACKS = {1: "a", 2: "a", 3: "b"}
RACK_AWARE = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
OVERRIDES = {
    "replica.selector.class": RACK_AWARE,
    # A paused follower leaves the ISR within seconds, and keeps its ZooKeeper session
    # (and so its place in the leaders' metadata) meanwhile.
    "replica.lag.time.max.ms": "2000",
    "zookeeper.session.timeout.ms": "20000",
}


@pytest.fixture(scope="module")
def racked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with started_cluster(
        tmp_path_factory.mktemp("racks"), OVERRIDES, racks=[RACKS[b] for b in sorted(RACKS)]
    ) as lc:
        yield lc


def new_name() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


def assignment(cluster: LocalCluster, topic: str) -> dict[int, tuple[int, ...]]:
    """The topic's replica assignment as ZooKeeper has it (`/brokers/topics/<t>`)."""
    got = cluster.zk_client().get_assignment_and_version(topic)
    assert got is not None, topic
    return {p: tuple(r) for p, r in got.assignment.items()}


def racks_of(replicas: Sequence[int], racks: Mapping[int, str] = RACKS) -> list[str]:
    return sorted(racks[b] for b in replicas)


async def create_partitions(
    cluster: LocalCluster, topic: str, total: int, assignments: list[list[int]] | None = None
) -> None:
    """Kafka's CreatePartitions through librdkafka's AdminClient; KafkaException on a
    refusal."""
    new = (
        NewPartitions(topic, total)
        if assignments is None
        else NewPartitions(topic, total, assignments)
    )

    def call() -> None:
        admin = admin_client(cluster.bootstrap_servers)  # alive until the answer
        futures = admin.create_partitions([new], operation_timeout=30, request_timeout=60)
        futures[topic].result(timeout=90)

    await asyncio.to_thread(call)


# --- the racks reach ZooKeeper and the clients ---------------------------------------------


def test_each_broker_registers_its_rack_in_zookeeper(racked: LocalCluster) -> None:
    brokers = racked.zk_client().get_all_brokers()
    assert {b: info.rack for b, info in brokers.items()} == RACKS


async def test_metadata_carries_each_brokers_rack_to_an_unmodified_client(
    racked: LocalCluster,
) -> None:
    from aiokafka.client import AIOKafkaClient

    client = AIOKafkaClient(bootstrap_servers=racked.bootstrap_servers)
    await client.bootstrap()  # a Metadata request
    try:
        assert {b.nodeId: b.rack for b in client.cluster.brokers()} == RACKS
    finally:
        await client.close()


def test_describe_cluster_carries_each_brokers_rack(racked: LocalCluster) -> None:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=racked.bootstrap_servers)
    try:
        described = admin.describe_cluster()
    finally:
        admin.close()
    assert {b["broker_id"]: b["rack"] for b in described["brokers"]} == RACKS


def test_the_racks_are_kept_for_the_next_start(racked: LocalCluster) -> None:
    """As `cluster up --racks` keeps them: a cluster built again on the data dir (a later
    `cluster up`, `cluster restart`) writes the same broker.rack for each broker."""
    again = LocalCluster(racked.data_dir)
    assert {b: again.broker_properties(b)["broker.rack"] for b in again.broker_ids} == RACKS


# --- placement -----------------------------------------------------------------------------


async def test_a_new_topic_has_one_replica_on_each_rack(racked: LocalCluster) -> None:
    topic = new_name()
    await create_topic(racked, topic, 12, 2)
    got = assignment(racked, topic)
    assert sorted(got) == list(range(12))
    assert all(racks_of(replicas) == ["a", "b"] for replicas in got.values()), got
    # Leaders walk Kafka's rack-alternated broker list, rack a's and b's brokers in turn.
    alternated = [1, 3, 2]
    assert all(
        got[p + 1][0] == alternated[(alternated.index(got[p][0]) + 1) % 3] for p in range(11)
    ), got


async def test_three_replicas_on_two_racks_cover_both_racks(racked: LocalCluster) -> None:
    topic = new_name()
    await create_topic(racked, topic, 6, 3)
    got = assignment(racked, topic)
    assert all(sorted(r) == [1, 2, 3] for r in got.values()), got


async def test_added_partitions_have_one_replica_on_each_rack(racked: LocalCluster) -> None:
    topic = new_name()
    await create_topic(racked, topic, 2, 2)
    await create_partitions(racked, topic, 10)
    got = assignment(racked, topic)
    assert sorted(got) == list(range(10))
    assert all(racks_of(replicas) == ["a", "b"] for replicas in got.values()), got


# --- some brokers with a rack, some without: Kafka refuses to place replicas -------------------


async def test_some_brokers_without_a_rack_is_kafkas_unknown_server_error(
    make_cluster: ClusterFactory,  # noqa: F811 (the fixture imported above)
) -> None:
    """Kafka's AdminOperationException ("Not all brokers have rack information ..."), which
    is no ApiException: UNKNOWN_SERVER_ERROR, for topic creation, and for adding partitions
    even to a topic that says where they go."""
    cluster = make_cluster(2, broker_overrides={1: {"broker.rack": "a"}})
    with pytest.raises(KafkaException) as refused:
        await create_topic(cluster, "placed", 2, 2)
    error: KafkaError = refused.value.args[0]
    assert error.code() == KafkaError.UNKNOWN, error
    assert cluster.zk_client().get_assignment_and_version("placed") is None
    # With its own assignment a topic needs no placement, as in Kafka.
    await create_topic(cluster, "own", -1, -1, assignment={0: [1, 2]})
    with pytest.raises(KafkaException) as refused:
        await create_partitions(cluster, "own", 2, [[2, 1]])
    error = refused.value.args[0]
    assert error.code() == KafkaError.UNKNOWN, error
    assert sorted(assignment(cluster, "own")) == [0]


# --- minikafka cluster up --racks ---------------------------------------------------------------


def test_cluster_up_refuses_a_rack_count_unlike_the_broker_count(tmp_path: Path) -> None:
    result = run_cli(
        "cluster", "up", "--data-dir", str(tmp_path / "c"), "--brokers", "3", "--racks", "a,b"
    )
    assert result.returncode != 0
    assert "--racks names 2 rack(s) but the cluster has 3 brokers" in result.stderr
    assert not (tmp_path / "c" / "cluster.json").exists()


# --- KIP-392: consumers read the closest replica ---------------------------------------------


BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout_total"
AS_FOLLOWER = "minikafka_follower_bytes_out_total"
FETCHES = "kafka_server_brokertopicmetrics_totalfetchrequests_total"


def topic_metrics(cluster: LocalCluster, broker_id: int, topic: str) -> dict[str, float]:
    """The broker's per-topic counters of `topic` (0 for those it has not counted yet),
    from its Prometheus metrics."""
    status, body = http_get(cluster.admin_url(broker_id) + "/metrics")
    assert status == 200, body
    out = dict.fromkeys((BYTES_OUT, AS_FOLLOWER, FETCHES), 0.0)
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name in out and sample.labels.get("topic") == topic:
                out[sample.name] = sample.value
    return out


def bytes_out(cluster: LocalCluster, broker_id: int, topic: str) -> tuple[float, float]:
    """(record bytes the broker sent consumers of `topic`, of them as a follower)."""
    m = topic_metrics(cluster, broker_id, topic)
    return m[BYTES_OUT], m[AS_FOLLOWER]


def read_from(
    servers: str, topic: str, offset: int, count: int, rack: str | None, timeout: float = 60.0
) -> list[Record]:
    """`count` records of partition 0 from `offset`, read by a librdkafka consumer with
    client.rack `rack` (None: unset)."""
    props = {} if rack is None else {"client.rack": rack}
    with consuming(servers, props) as consumer:
        consumer.assign([KafkaTopicPartition(topic, 0, offset)])
        return poll_records(consumer, count, timeout)


def poll_records(consumer: object, count: int, timeout: float = 60.0) -> list[Record]:
    got: list[Record] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        for msg in consume_ready(consumer, count - len(got), 0.5):  # type: ignore[arg-type]
            err = msg.error()
            if err is not None:
                assert not err.fatal(), err
                continue
            got.append(Record.of(msg))
    return got


def values(n: int, start: int = 0) -> list[bytes]:
    return [f"v{i}".encode() for i in range(start, start + n)]


async def led_by_1_followed_by_3(cluster: LocalCluster) -> str:
    """A topic of one partition led by broker 1 (rack a), followed by broker 3 (rack b)."""
    topic = new_name()
    await create_topic(cluster, topic, -1, -1, assignment={0: [1, 3]})
    wait_until(lambda: partition_states(cluster, topic, 1)[0].leader == 1, 30, "leader 1")
    return topic


async def test_a_consumer_on_a_followers_rack_reads_every_record_from_that_follower(
    racked: LocalCluster,
) -> None:
    topic = await led_by_1_followed_by_3(racked)
    await asyncio.to_thread(send_values, racked.bootstrap_servers, topic, values(200))
    got = await asyncio.to_thread(read_from, racked.bootstrap_servers, topic, 0, 200, "b")
    assert [(r.offset, r.value) for r in got] == list(enumerate(values(200)))
    leader_out, _ = bytes_out(racked, 1, topic)
    follower_out, as_follower = bytes_out(racked, 3, topic)
    # Every record came from the follower: the leader only named it (empty answers).
    assert leader_out == 0
    assert as_follower == follower_out > 0


async def test_a_consumer_without_a_rack_reads_the_leader(racked: LocalCluster) -> None:
    topic = await led_by_1_followed_by_3(racked)
    await asyncio.to_thread(send_values, racked.bootstrap_servers, topic, values(100))
    for rack in (None, "a"):  # no rack; the leader's rack
        got = await asyncio.to_thread(read_from, racked.bootstrap_servers, topic, 0, 100, rack)
        assert [(r.offset, r.value) for r in got] == list(enumerate(values(100)))
    leader_out, _ = bytes_out(racked, 1, topic)
    assert leader_out > 0
    assert bytes_out(racked, 3, topic) == (0, 0)


async def test_a_follower_behind_the_fetch_offset_is_passed_over_until_it_catches_up(
    racked: LocalCluster,
) -> None:
    """Broker 3 paused out of the ISR while records are written: a consumer on its rack
    asking for records 3 does not have reads them from the leader (were it sent to 3, it
    would wait on a frozen broker); once 3 is back in the ISR, the next records come from
    3. Every record once, none lost."""
    topic = await led_by_1_followed_by_3(racked)
    servers = bootstrap(racked, exclude=[3])
    await asyncio.to_thread(send_values, servers, topic, values(50))
    racked.pause(3)
    try:
        # Written by the leader alone: 3 falls behind, and out of the ISR (Kafka leaves a
        # follower at the leader's log end in it, fetching or not).
        await asyncio.to_thread(send_values, servers, topic, values(50, 50), {"acks": 1})
        wait_until(lambda: partition_states(racked, topic, 1)[0].isr == (1,), 30, "ISR [1]")
        with consuming(servers, {"client.rack": "b"}) as consumer:
            consumer.assign([KafkaTopicPartition(topic, 0, 60)])
            # At once from the leader: sent to the frozen broker 3, the consumer would have
            # nothing until 3's ZooKeeper session expired (20 s) and it left the metadata.
            behind = await asyncio.to_thread(poll_records, consumer, 40, 10.0)
            assert [(r.offset, r.value) for r in behind] == list(
                zip(range(60, 100), values(40, 60), strict=True)
            )
            racked.resume(3)
            wait_until(
                lambda: partition_states(racked, topic, 1)[0].isr == (1, 3), 30, "ISR [1, 3]"
            )
            leader_out, _ = bytes_out(racked, 1, topic)
            assert leader_out > 0
            assert bytes_out(racked, 3, topic) == (0, 0)
            # The leader names 3 again: the consumer's (empty) fetches reach it.
            wait_until(
                lambda: topic_metrics(racked, 3, topic)[FETCHES] > 0, 30, "fetches at broker 3"
            )
            await asyncio.to_thread(send_values, servers, topic, values(50, 100))
            caught_up = await asyncio.to_thread(poll_records, consumer, 50)
        assert [(r.offset, r.value) for r in caught_up] == list(
            zip(range(100, 150), values(50, 100), strict=True)
        )
        assert bytes_out(racked, 1, topic)[0] == leader_out  # the leader sent no more
        assert bytes_out(racked, 3, topic)[1] > 0
    finally:
        if racked.is_paused(3):
            racked.resume(3)


# --- KIP-392: back to the leader ----------------------------------------------------------------


class LogLines(logging.Logger):
    """librdkafka's log lines (its `logger` property, served in poll())."""

    def __init__(self) -> None:
        super().__init__(f"librdkafka.{uuid.uuid4().hex[:8]}", logging.DEBUG)
        self.lines: list[str] = []

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        self.lines.append(str(msg) % args if args else str(msg))


THROTTLE = "leader.replication.throttled.rate"


def broker_config(cluster: LocalCluster, broker_id: int, name: str) -> str | None:
    """The value of config `name` in force on the broker (DescribeConfigs, which
    librdkafka sends to that broker)."""
    admin = admin_client(cluster.bootstrap_servers)  # alive until the answer
    resource = ConfigResource(ResourceType.BROKER, str(broker_id))
    (future,) = admin.describe_configs([resource]).values()
    value: str | None = future.result(30)[name].value
    return value


async def test_a_consumer_whose_follower_freezes_goes_back_to_the_leader(
    racked: LocalCluster,
) -> None:
    """Broker 3 frozen (SIGSTOP) while a consumer on its rack reads from it, for longer than
    its ZooKeeper session: librdkafka gives up on the fetch the frozen broker never answers
    (socket.timeout.ms), reverts to the leader (its broker-down path), and the leader, for
    which 3 is gone, serves the consumer itself. Every record once, in order. Broker 3 then
    comes back on a new session and rejoins the ISR."""
    topic = await led_by_1_followed_by_3(racked)
    servers = bootstrap(racked, exclude=[3])
    await asyncio.to_thread(send_values, servers, topic, values(50))
    epoch = racked.registrations()[3].epoch
    # A frozen broker's fetch is given up after socket.timeout.ms (+ fetch.wait.max.ms):
    # librdkafka's default of a minute would make a long test.
    with consuming(servers, {"client.rack": "b", "socket.timeout.ms": 3000}) as consumer:
        consumer.assign([KafkaTopicPartition(topic, 0, 0)])
        before = await asyncio.to_thread(poll_records, consumer, 50)
        assert bytes_out(racked, 1, topic)[0] == 0  # read from 3
        racked.pause(3)
        try:
            racked.expire_session(3)  # as a pause past zookeeper.session.timeout.ms would
            await asyncio.to_thread(send_values, servers, topic, values(50, 50))
            after = await asyncio.to_thread(poll_records, consumer, 50, 30.0)
        finally:
            racked.resume(3)
    assert [(r.offset, r.value) for r in before + after] == list(enumerate(values(100)))
    assert bytes_out(racked, 1, topic)[0] > 0  # the leader served the rest
    racked.wait_for_registered([3], 30, newer_than={3: epoch})
    wait_until(lambda: partition_states(racked, topic, 1)[0].isr == (1, 3), 30, "ISR [1, 3]")
    assert bytes_out(racked, 3, topic)[1] > 0


async def test_a_consumer_past_its_followers_log_end_goes_back_to_the_leader(
    racked: LocalCluster,
) -> None:
    """Broker 3 out of the ISR and held behind by the leader's replication throttle (alive,
    answering): a consumer on its rack, sent to it, seeks past 3's log end. Broker 3 answers
    OFFSET_OUT_OF_RANGE, librdkafka takes it as the follower being behind ("reverting to
    leader"), not as an offset to reset, and the leader, which does not name a follower
    without the fetch offset, serves the records: each one once, none skipped."""
    topic = new_name()
    # Partition 1 (followed by 2, in sync) only feeds the leader's throttle rate.
    await create_topic(
        racked,
        topic,
        -1,
        -1,
        {"leader.replication.throttled.replicas": "*"},
        assignment={0: [1, 3], 1: [1, 2]},
    )
    wait_until(
        lambda: [s.leader for s in partition_states(racked, topic, 2).values()] == [1, 1],
        30,
        "leader 1",
    )
    servers = bootstrap(racked, exclude=[3])
    await asyncio.to_thread(send_values, servers, topic, values(50), partitions=[0] * 50)
    log = LogLines()
    set_configs(racked, ResourceType.BROKER, "1", {THROTTLE: "1"})
    try:
        wait_until(lambda: broker_config(racked, 1, THROTTLE) == "1", 30, "the throttle in force")
        with consuming(servers, {"client.rack": "b", "logger": log}) as consumer:
            consumer.assign([KafkaTopicPartition(topic, 0, 0)])
            before = await asyncio.to_thread(poll_records, consumer, 50)
            assert bytes_out(racked, 1, topic)[0] == 0  # read from 3
            racked.pause(3)
            try:
                # The fetch 3 has waiting at the leader may take the first record along;
                # the rest are written once 3 is out of the ISR, and stay on the leader.
                await asyncio.to_thread(
                    send_values, servers, topic, values(1, 50), {"acks": 1}, partitions=[0]
                )
                wait_until(lambda: partition_states(racked, topic, 2)[0].isr == (1,), 30, "ISR [1]")
                await asyncio.to_thread(
                    send_values, servers, topic, values(49, 51), {"acks": 1}, partitions=[0] * 49
                )
                # Throttled bytes to 2 (in sync, never held back) put the leader's rate
                # over its 1 B/s for the next ~10 s: 3, out of the ISR, gets nothing.
                await asyncio.to_thread(send_values, servers, topic, [b"x"], partitions=[1])
            finally:
                racked.resume(3)
            consumer.seek(KafkaTopicPartition(topic, 0, 80))
            after = await asyncio.to_thread(poll_records, consumer, 20, 30.0)
    finally:
        set_configs(racked, ResourceType.BROKER, "1", {THROTTLE: None})
    assert [(r.offset, r.value) for r in before] == list(enumerate(values(50)))
    assert [(r.offset, r.value) for r in after] == list(
        zip(range(80, 100), values(20, 80), strict=True)
    )
    reverted = [line for line in log.lines if "reverting to leader" in line]
    assert reverted and "fetching from broker 3 (leader 1)" in reverted[0], log.lines
    assert bytes_out(racked, 1, topic)[0] > 0  # the leader served offsets 80 to 99
    wait_until(lambda: partition_states(racked, topic, 2)[0].isr == (1, 3), 30, "ISR [1, 3]")
