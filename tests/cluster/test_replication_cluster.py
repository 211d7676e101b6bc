"""Replication across real broker processes and a real ZooKeeper (issue 4).

Faults are real: SIGSTOP/SIGCONT and kill -9 of broker processes, and a state znode
rewritten behind a leader's back; records are produced and read by a real Kafka client
(confluent-kafka). What is checked is what a Kafka user relies on: acked records are on
every in-sync replica's disk, the ISR shrinks and grows by the lag rule and every broker
learns it, acks=all refuses to pretend, and no offset ever holds two records.
"""

from __future__ import annotations

import asyncio
import struct
import threading
import time
from collections import defaultdict

import crc32c
import pytest
from confluent_kafka import KafkaError, Message

from minikafka.client.librdkafka import position
from minikafka.cluster import LocalCluster
from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.protocol.errors import ErrorCode
from minikafka.storage import compression
from minikafka.storage.record_batch import build_batch
from minikafka.zk import paths
from tests.cluster.conftest import SESSION_TIMEOUT_MS, ClusterFactory, wait_until, wait_until_async
from tests.cluster.helpers import (
    bootstrap,
    consume_all,
    consume_records,
    create_topic,
    metadata,
    partition_states,
    produce_at,
    produce_values,
    producing,
    replica_batches,
    replica_records,
    run_cli,
    send_values,
)

pytestmark = pytest.mark.timeout(240)

LAG_MS = 2000
REPLICATION_OVERRIDES = {
    "replica.lag.time.max.ms": str(LAG_MS),
    # Kafka's 2.5 s / 5 s / 60 s propagation timings, shortened so tests take seconds.
    "isr.change.propagation.check.interval.ms": "200",
    "isr.change.propagation.blackout.ms": "500",
    "isr.change.propagation.max.delay.ms": "2000",
    "auto.leader.rebalance.enable": "false",  # only the faults move leaders
}
# Long enough that a broker paused for a few lag times keeps its ZooKeeper session, so
# what moves the ISR is the leader's lag rule and not the controller's broker-death path.
LONG_SESSION = {**REPLICATION_OVERRIDES, "zookeeper.session.timeout.ms": "30000"}
MIN_ISR_2 = {"min.insync.replicas": "2"}
TP = TopicPartition("t", 0)


def state(cluster: LocalCluster, tp: TopicPartition = TP) -> LeaderAndIsr:
    got = cluster.zk_client().get_partition_state(tp)
    assert got is not None, f"no state znode for {tp}"
    return got


def assignment(cluster: LocalCluster, tp: TopicPartition = TP) -> tuple[int, ...]:
    got = cluster.zk_client().get_assignment(tp.topic)
    assert got is not None
    return got[tp.partition]


def follower_not_controller(cluster: LocalCluster, st: LeaderAndIsr) -> int:
    """A follower whose pause leaves the controller running."""
    controller = cluster.controller()
    return next(r for r in st.isr if r != st.leader and (controller is None or r != controller[0]))


async def raw_produce(
    cluster: LocalCluster,
    broker_id: int,
    value: bytes,
    timeout_ms: int,
    batch: bytes | None = None,
) -> tuple[int, int]:
    """One acks=all produce straight to a broker: (error code, base offset). The batch holds
    `value`, unless `batch` is given."""
    if batch is None:
        batch = build_batch([value], base_offset=0, partition_leader_epoch=0)
    host, port = cluster.broker_address(broker_id)
    return await produce_at(host, port, TP, batch, acks=-1, timeout_ms=timeout_ms)


async def isr_in_metadata(
    cluster: LocalCluster, broker_id: int, tp: TopicPartition = TP
) -> list[int]:
    meta = await metadata(cluster, broker_id)
    topic = next(t for t in meta.topics if t.name == tp.topic)
    return sorted(next(p for p in topic.partitions if p.partition == tp.partition).isr)


async def wait_for_metadata_isr(
    cluster: LocalCluster, brokers: list[int], isr: list[int], timeout: float = 15.0
) -> None:
    async def everywhere() -> bool:
        return all([await isr_in_metadata(cluster, b) == sorted(isr) for b in brokers])

    await wait_until_async(everywhere, timeout, f"every broker's metadata to show ISR {isr}")


# --- acks=all puts records on every in-sync replica's disk -----------------------------------


async def test_acks_all_records_are_on_every_in_sync_replica_disk(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides=REPLICATION_OVERRIDES)
    await create_topic(cluster, "t", 3, 3, MIN_ISR_2)
    values = [f"v{i}".encode() * 20 for i in range(900)]
    # Round robin over the partitions: the sticky partitioner may leave one without records
    # (it switches partition per batch), and every partition is checked below.
    partitions = [i % 3 for i in range(len(values))]
    acked = await asyncio.to_thread(
        send_values, cluster.bootstrap_servers, "t", values, {"acks": "all"}, partitions=partitions
    )
    states = partition_states(cluster, "t", 3)
    for p, st in states.items():
        assert sorted(st.isr) == [1, 2, 3]
        acked_here = {off: v for (part, off), v in zip(acked, values, strict=True) if part == p}
        end = max(acked_here) + 1  # the HW had passed every acked offset
        tp = TopicPartition("t", p)
        # Read the bytes of each replica's segment files as they are right after the acks.
        # Followers store the leader's batches as they are, so whole batches below the HW
        # must be byte-identical across replicas, and hold exactly the acked records.
        below = {
            b: [raw for h, raw in replica_batches(cluster.log_dir(b), tp) if h.next_offset <= end]
            for b in st.isr
        }
        leader_batches = below[st.leader]
        assert b"".join(leader_batches)
        for b in st.isr:
            assert below[b] == leader_batches, f"replica {b} of {tp} differs from the leader"
            assert replica_records(cluster.log_dir(b), tp, end) == acked_here


async def test_compressed_batches_replicate_as_sent_and_lying_records_are_refused(
    make_cluster: ClusterFactory,
) -> None:
    """Batches of every codec are stored and replicated byte for byte and read back; a
    batch whose (compressed) records do not match its header gets INVALID_RECORD and
    leaves every replica's log as it was."""
    cluster = make_cluster(overrides=REPLICATION_OVERRIDES)
    await create_topic(cluster, "t", 1, 3, MIN_ISR_2)
    sent: list[bytes] = []
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        values = [f"{codec} record {i} ".encode() * 10 for i in range(300)]
        props = {"acks": "all", "compression.type": codec}
        await asyncio.to_thread(
            send_values, cluster.bootstrap_servers, "t", values, props, partitions=[0] * len(values)
        )
        sent += values
    st = state(cluster)
    end = len(sent)
    leader_batches = replica_batches(cluster.log_dir(st.leader), TP)
    assert {h.attributes & 0x07 for h, _ in leader_batches} == {1, 2, 3, 4}
    assert sum(len(raw) for _, raw in leader_batches) < sum(map(len, sent)) / 3
    for b in st.isr:
        assert [raw for _, raw in replica_batches(cluster.log_dir(b), TP)] == [
            raw for _, raw in leader_batches
        ], f"replica {b} differs from the leader"
        assert list(replica_records(cluster.log_dir(b), TP, end).values()) == sent
    assert await consume_all(cluster, "t", end) == sent

    lying = bytearray(build_batch([b"a", b"b"], codec=compression.LZ4))
    struct.pack_into(">i", lying, 23, 2)  # last offset delta 2 and count 3: one is missing
    struct.pack_into(">i", lying, 57, 3)
    struct.pack_into(">I", lying, 17, crc32c.crc32c(bytes(lying[21:])))
    error, _ = await raw_produce(cluster, st.leader, b"", 10000, batch=bytes(lying))
    assert error == ErrorCode.INVALID_RECORD
    error, offset = await raw_produce(cluster, st.leader, b"after", 10000)
    assert (error, offset) == (ErrorCode.NONE, end)


# --- a paused follower leaves the ISR, every broker learns it, and it comes back -------------


async def test_a_paused_follower_leaves_the_isr_by_the_lag_rule_and_rejoins_after_sigcont(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides=LONG_SESSION)
    await create_topic(cluster, "t", 1, 3, MIN_ISR_2)
    await produce_values(cluster, "t", [b"before"] * 10)
    before = state(cluster)
    follower = follower_not_controller(cluster, before)
    zk = cluster.zk_client()
    notifications_before = zk.stat(paths.ISR_CHANGE_NOTIFICATION).cversion

    cluster.pause(follower)
    paused_at = time.monotonic()
    # A follower is out of sync only while it is behind (Kafka's rule, §7.3): an idle one
    # whose LEO equals the leader's stays in. So something gets appended right away.
    await produce_values(cluster, "t", [b"behind"], acks=1, exclude=[follower])
    wait_until(lambda: follower not in state(cluster).isr, 15, "the ISR to shrink", 0.01)
    shrink_s = time.monotonic() - paused_at
    # isr-expiration runs every lag/2 and removes a follower not caught up for `lag`, so the
    # shrink lands within 1.5 x lag of its last fetch (+ a ZooKeeper write); and not before
    # lag minus the long-poll wait, the most it can have been idle when it was paused.
    assert LAG_MS / 1000 - 0.6 <= shrink_s <= 1.5 * LAG_MS / 1000 + 0.5, shrink_s
    shrunk = state(cluster)
    assert shrunk.leader == before.leader and shrunk.leader_epoch == before.leader_epoch
    assert sorted(shrunk.isr) == sorted(r for r in before.isr if r != follower)

    # The leader writes an isr_change_notification, the controller reads and deletes it
    # (each creation and deletion bumps the parent's cversion) ...
    wait_until(
        lambda: (
            zk.stat(paths.ISR_CHANGE_NOTIFICATION).cversion >= notifications_before + 2
            and not zk.get_children(paths.ISR_CHANGE_NOTIFICATION)
        ),
        10,
        "an ISR change notification to be written and consumed",
    )
    # ... and sends UpdateMetadata: every running broker answers Metadata with the new ISR.
    live = [b for b in cluster.broker_ids if b != follower]
    await wait_for_metadata_isr(cluster, live, list(shrunk.isr))
    # Kafka's tool lists it as under-replicated: fewer in sync than assigned.
    under = run_cli(
        "topics",
        "--bootstrap-server",
        bootstrap(cluster, exclude=[follower]),
        "--describe",
        "--under-replicated-partitions",
    )
    isr_text = ",".join(map(str, shrunk.isr))
    assert under.returncode == 0, under.stderr
    assert under.stdout.splitlines() == [
        f"\tTopic: t\tPartition: 0\tLeader: {shrunk.leader}\tReplicas: "
        f"{','.join(map(str, assignment(cluster)))}\tIsr: {isr_text}"
    ]
    # acks=all goes on with two of three in sync (min.insync.replicas=2).
    during = [f"during-{i}".encode() for i in range(20)]
    await produce_values(cluster, "t", during, acks="all", exclude=[follower])

    cluster.resume(follower)
    resumed_at = time.monotonic()
    wait_until(lambda: follower in state(cluster).isr, 30, "the follower to rejoin", 0.01)
    print(f"shrink after {shrink_s:.2f}s, rejoin after {time.monotonic() - resumed_at:.2f}s")
    await wait_for_metadata_isr(cluster, cluster.broker_ids, [1, 2, 3])
    under = run_cli(
        "topics",
        "--bootstrap-server",
        cluster.bootstrap_servers,
        "--describe",
        "--under-replicated-partitions",
    )
    assert under.returncode == 0 and under.stdout == ""
    # It rejoined because it caught up: it holds what was acked while it was stopped.
    end = state(cluster)
    assert end.leader_epoch == before.leader_epoch  # no election: the leader did it all
    got = replica_records(cluster.log_dir(follower), TP, 31)
    assert [got[o] for o in range(11, 31)] == during


# --- two paused followers: acks=all refuses, nothing acked is lost -------------------------


async def test_with_two_followers_paused_acks_all_is_refused_then_recovers(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides=LONG_SESSION)
    await create_topic(cluster, "t", 1, 3, MIN_ISR_2)
    first = [f"first-{i}".encode() for i in range(10)]
    await produce_values(cluster, "t", first, acks="all")
    st = state(cluster)
    followers = [r for r in st.isr if r != st.leader]
    for f in followers:
        cluster.pause(f)
    # Appended while the ISR still names both followers: the wait ends when the leader
    # shrinks the ISR to itself, below min.insync.replicas.
    code, _ = await raw_produce(cluster, st.leader, b"in-doubt", timeout_ms=15_000)
    assert code == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    assert state(cluster).isr == (st.leader,)
    leader_records = len(replica_records(cluster.log_dir(st.leader), TP, 1 << 30))
    # Now refused before the append: the leader's log does not grow.
    code, _ = await raw_produce(cluster, st.leader, b"refused", timeout_ms=5_000)
    assert code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert len(replica_records(cluster.log_dir(st.leader), TP, 1 << 30)) == leader_records

    for f in followers:
        cluster.resume(f)
    wait_until(lambda: len(state(cluster).isr) == 3, 30, "both followers to rejoin")
    second = [f"second-{i}".encode() for i in range(10)]
    await produce_values(cluster, "t", second, acks="all")
    got = [r.value for r in await consume_records(cluster, "t")]
    assert got == [*first, b"in-doubt", *second]  # in doubt is not lost: it was appended
    assert b"refused" not in got


# --- kill -9 of the leader in the middle of an acks=all stream --------------------------------


class AckedStream:
    """Unique values sent with acks=all, in a thread of its own, until stopped; remembers
    (partition, offset) of each one acked. librdkafka retries what fails (a leader gone);
    not idempotent, so a retried record may be in the log twice: what is checked is that
    every acked one is where its ack said."""

    def __init__(self, cluster: LocalCluster, topic: str) -> None:
        self.cluster = cluster
        self.topic = topic
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.failed: list[bytes] = []
        self._stop = threading.Event()

    def run(self) -> None:
        props = {
            "acks": "all",
            "enable.idempotence": False,
            "linger.ms": 2,
            "request.timeout.ms": 10_000,
            "message.timeout.ms": 60_000,  # Kafka's delivery.timeout.ms
        }
        with producing(self.cluster.bootstrap_servers, props) as producer:
            i = 0
            while not self._stop.is_set():
                value = f"{i:08d}".encode()
                i += 1
                producer.produce(self.topic, value, on_delivery=self._settle)
                producer.poll(0)
                while len(producer) >= 200 and not self._stop.is_set():
                    producer.poll(0.1)  # bounded in flight: wait for acks
            producer.flush(90)  # each one acked or failed within message.timeout.ms

    def _settle(self, err: KafkaError | None, msg: Message) -> None:
        value = msg.value()
        assert value is not None
        if err is None:
            self.acked[value] = position(msg)
        else:
            self.failed.append(value)  # in doubt: may or may not be in the log

    def stop(self) -> None:
        self._stop.set()


async def test_kill_9_of_the_leader_during_acks_all_loses_nothing_and_replicas_never_diverge(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides=REPLICATION_OVERRIDES)
    await create_topic(cluster, "t", 2, 3, MIN_ISR_2)
    before = state(cluster)
    stream = AckedStream(cluster, "t")
    running = asyncio.create_task(asyncio.to_thread(stream.run))
    await wait_until_async(lambda: len(stream.acked) >= 500, 30, "500 acks before the kill")
    cluster.kill(before.leader)
    acked_at_kill = len(stream.acked)
    await wait_until_async(
        lambda: state(cluster).leader not in (before.leader, -1),
        SESSION_TIMEOUT_MS / 1000 + 20,
        "a new leader",
    )
    await wait_until_async(
        lambda: len(stream.acked) >= acked_at_kill + 500, 60, "500 acks after the failover"
    )
    stream.stop()
    await running
    after = state(cluster)
    assert after.leader in before.isr and after.leader_epoch > before.leader_epoch

    # The killed leader comes back: it recovers its log, truncates whatever it had that
    # the new leader never got (by leader epoch), catches up and rejoins the ISR.
    cluster.restart(before.leader)
    wait_until(
        lambda: all(len(st.isr) == 3 for st in partition_states(cluster, "t", 2).values()),
        60,
        "every replica back in the ISR",
    )
    assert "no clean shutdown marker" in cluster.broker_log_path(before.leader).read_text()

    # Every acknowledged record is there, at the offset it was acked with, in order.
    records = await consume_records(cluster, "t")
    by_partition: dict[int, list[tuple[int, bytes | None]]] = defaultdict(list)
    for r in records:
        by_partition[r.partition].append((r.offset, r.value))
    consumed = {(p, off): v for p, recs in by_partition.items() for off, v in recs}
    for recs in by_partition.values():
        offsets = [off for off, _ in recs]
        assert offsets == sorted(set(offsets))  # in order, each offset once
    lost = {v: at for v, at in stream.acked.items() if consumed.get(at) != v}
    assert not lost, f"{len(lost)} acked records lost or moved, e.g. {list(lost.items())[:3]}"

    # No offset holds two different records on any two replicas.
    for p in range(2):
        tp = TopicPartition("t", p)
        logs = {b: replica_records(cluster.log_dir(b), tp, 1 << 62) for b in cluster.broker_ids}
        for a in cluster.broker_ids:
            for b in cluster.broker_ids:
                common = logs[a].keys() & logs[b].keys()
                diverged = [o for o in common if logs[a][o] != logs[b][o]]
                assert not diverged, f"{tp}: replicas {a} and {b} differ at offsets {diverged[:5]}"


# --- an ISR write that loses a race with someone else's write --------------------------------


async def test_a_leaders_isr_write_after_a_version_conflict_fails_and_the_partition_converges(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides=REPLICATION_OVERRIDES)  # short session: the controller
    await create_topic(cluster, "t", 1, 3, MIN_ISR_2)  # acts on the paused follower's expiry
    await produce_values(cluster, "t", [b"x"] * 5)
    before = state(cluster)
    follower = follower_not_controller(cluster, before)
    zk = cluster.zk_client()
    path = paths.partition_state("t", 0)
    # Someone rewrites the state znode: same content, new version the leader has not seen.
    data = zk.get_data(path)
    assert data is not None
    bumped = zk.set_data(path, data)
    assert bumped == before.zk_version + 1

    cluster.pause(follower)
    # Something to fall behind on (bootstrapping from the leader: the follower is paused).
    await produce_values(cluster, "t", [b"behind"], acks=1, exclude=[follower])
    leader_log = cluster.broker_log_path(before.leader)
    wait_until(
        lambda: "failed ISR updates: 1)" in leader_log.read_text(),
        1.5 * LAG_MS / 1000 + 5,
        "the leader's conditional ISR write to fail",
    )
    # The write was refused, so the znode still names the paused follower.
    assert follower in state(cluster).isr and state(cluster).zk_version == bumped

    # The controller settles it: on the follower's session expiry it removes it with an
    # epoch bump and sends the leader LeaderAndIsr with the znode's current version ...
    wait_until(
        lambda: follower not in state(cluster).isr,
        SESSION_TIMEOUT_MS / 1000 + 20,
        "the controller to remove the expired follower",
    )
    removed = state(cluster)
    assert removed.leader == before.leader and removed.leader_epoch > before.leader_epoch
    # ... after which the leader's own ISR writes succeed again: the resumed follower
    # catches up and the leader adds it with a conditional write on that version.
    cluster.resume(follower)
    wait_until(lambda: follower in state(cluster).isr, 40, "the follower to be added back")
    rejoined = state(cluster)
    assert rejoined.leader_epoch == removed.leader_epoch  # the leader's write, not an election
    await wait_for_metadata_isr(cluster, cluster.broker_ids, [1, 2, 3])
    await produce_values(cluster, "t", [b"y"] * 5, acks="all")


# --- offline election: only from the ISR, unless unclean election is enabled --------------


async def test_an_offline_partition_waits_for_an_isr_member_unless_unclean_election_is_on(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides=REPLICATION_OVERRIDES)
    leader, follower = 1, 2
    topics = ("clean", "unclean")
    for topic, enabled in (("clean", "false"), ("unclean", "true")):
        await create_topic(
            cluster,
            topic,
            -1,
            -1,
            {"unclean.leader.election.enable": enabled},
            assignment={0: [leader, follower]},
        )
    first = [b"seen-by-both"] * 5
    for topic in topics:
        await produce_values(cluster, topic, first, acks="all")
    # The follower dies and misses what comes next; the ISR becomes the leader alone.
    cluster.kill(follower)
    for topic in topics:
        await produce_values(cluster, topic, [b"only-on-the-leader"] * 5, exclude=[follower])
    wait_until(
        lambda: all(state(cluster, TopicPartition(t, 0)).isr == (leader,) for t in topics),
        SESSION_TIMEOUT_MS / 1000 + 15,
        "both ISRs to shrink to the leader",
    )
    # Then the leader dies too, and the follower, which is not in the ISR, comes back.
    cluster.kill(leader)
    wait_until(
        lambda: state(cluster, TopicPartition("clean", 0)).leader == -1,
        SESSION_TIMEOUT_MS / 1000 + 15,
        "clean-0 to go offline",
    )
    cluster.restart(follower)
    wait_until(
        lambda: state(cluster, TopicPartition("unclean", 0)).leader == follower,
        30,
        "the unclean election of the out-of-sync follower",
    )
    unclean = state(cluster, TopicPartition("unclean", 0))
    assert unclean.isr == (follower,)
    # Without unclean election the partition stays offline, its last ISR kept, so that the
    # replica holding every acked record can lead when it returns.
    clean = state(cluster, TopicPartition("clean", 0))
    assert clean.leader == -1 and clean.isr == (leader,)
    # What the unclean election cost: the records only the old leader had are gone.
    got = [r.value for r in await consume_records(cluster, "unclean", exclude=[leader])]
    assert got == first

    cluster.restart(leader)
    wait_until(
        lambda: state(cluster, TopicPartition("clean", 0)).leader == leader,
        30,
        "clean-0 to come back with its ISR member as leader",
    )
    got = [r.value for r in await consume_records(cluster, "clean")]
    assert got == [*first, *[b"only-on-the-leader"] * 5]  # nothing acked was lost
    # The old leader follows the unclean leader's history: its extra records are truncated
    # by leader epoch, so the two replicas agree offset by offset.
    wait_until(
        lambda: len(state(cluster, TopicPartition("unclean", 0)).isr) == 2,
        30,
        "the old leader to rejoin unclean-0",
    )
    tp = TopicPartition("unclean", 0)
    assert replica_records(cluster.log_dir(leader), tp, 1 << 62) == replica_records(
        cluster.log_dir(follower), tp, 1 << 62
    )
