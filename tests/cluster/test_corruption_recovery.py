"""Damaged segment files on a real 3-broker cluster (design §5, recovery).

A follower is killed with SIGKILL, its active segment is damaged on disk (torn mid-header,
torn mid-body, garbage appended, a byte flipped inside a committed batch above its recovery
point) and it is started again while the others go on taking acks=all writes. It must
start, keep no invalid batch (the broker log names the exact byte recovery cut at), fetch
what it lost from the leader, rejoin the ISR, and then, made leader by a preferred-replica
election, serve every acked record itself.

The last test covers a flipped byte *below* the recovery point, which recovery does not
re-read (as in Kafka, where the recovery point means "fsynced and validated"): the broker
starts with the corrupt batch and rejoins the ISR; as leader it serves the batch (the read
path sends segment bytes without decoding them), and what protects readers is the CRC
check on the other side: the consumer (librdkafka with check.crcs, Kafka's consumer
default) reports a bad message at that offset, and a follower re-fetching from scratch
refuses to append it.

Every fault is real: SIGKILL of a broker process, bytes changed in its files while it is
down; every check goes through ZooKeeper, a real Kafka client (confluent-kafka) or the
files on disk.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import re
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import KafkaError
from confluent_kafka import TopicPartition as KafkaTopicPartition

from minikafka.client.librdkafka import consume_ready
from minikafka.cluster import LocalCluster
from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.storage.checkpoint import RECOVERY_POINT_CHECKPOINT, OffsetCheckpointFile
from minikafka.storage.log_files import partition_dir
from minikafka.storage.record_batch import HEADER_SIZE, BatchHeader, iter_batches
from tests.cluster.conftest import SESSION_TIMEOUT_MS, ClusterFactory, wait_until_async
from tests.cluster.helpers import bootstrap, consuming, create_topic, deliver, metadata, producing

pytestmark = pytest.mark.timeout(120)

TOPIC = "damaged"
TP = TopicPartition(TOPIC, 0)
# Small segments: the active one holds a handful of batches, and the log has several.
SEGMENT_BYTES = 1024
RECORDS_PER_BATCH = 3
VALUE_BYTES = 40
OVERRIDES = {
    # Quick ISR changes (as tests/chaos' FAST), and only the test moves leaders.
    "replica.lag.time.max.ms": "2000",
    "isr.change.propagation.check.interval.ms": "200",
    "isr.change.propagation.blackout.ms": "500",
    "isr.change.propagation.max.delay.ms": "2000",
    "auto.leader.rebalance.enable": "false",
}
TOPIC_CONFIG = {"min.insync.replicas": "2", "segment.bytes": str(SEGMENT_BYTES)}
# A restarted broker waits for the killed process's ZooKeeper session to expire.
RESTART_TIMEOUT_S = SESSION_TIMEOUT_MS / 1000 + 30
_TRUNCATED_LINE = re.compile(
    r"truncated (\d+) invalid bytes of (\S+) \(invalid record batch at byte (\d+): ([^(]*)"
)


# --- reading replicas' files ---------------------------------------------------------------


@dataclass(frozen=True)
class DiskBatch:
    segment: Path
    position: int
    header: BatchHeader
    raw: bytes


def segment_files(cluster: LocalCluster, broker: int) -> list[Path]:
    return sorted(partition_dir(cluster.log_dir(broker), TP).glob("*.log"))


def strict_log(cluster: LocalCluster, broker: int) -> list[DiskBatch]:
    """Every batch of a replica's segment files, failing the test at any byte that is not
    part of a valid batch (bad CRC, torn batch, garbage) or at a gap in the offsets."""
    out: list[DiskBatch] = []
    for seg in segment_files(cluster, broker):
        data = seg.read_bytes()
        # iter_batches validates header and CRC, and raises at a trailing partial batch.
        for pos, h in iter_batches(data):
            out.append(DiskBatch(seg, pos, h, data[pos : pos + h.size_in_bytes]))
    for prev, cur in itertools.pairwise(out):
        assert cur.header.base_offset == prev.header.next_offset, (
            f"broker {broker}: batch at {cur.header.base_offset} after {prev.header.next_offset}"
        )
    return out


def raw_batches(cluster: LocalCluster, broker: int) -> list[tuple[int, bytes]]:
    return [(b.header.base_offset, b.raw) for b in strict_log(cluster, broker)]


def state(cluster: LocalCluster) -> LeaderAndIsr:
    got = cluster.zk_client().get_partition_state(TP)
    assert got is not None, f"no state znode for {TP}"
    return got


def current_run_log(cluster: LocalCluster, broker: int) -> str:
    """What the broker's current process has logged (broker.log is appended per start)."""
    text = cluster.broker_log_path(broker).read_text(errors="replace")
    return text[text.rfind("\n=== ") :]


# --- producing and consuming ---------------------------------------------------------------


async def produce(
    cluster: LocalCluster,
    label: str,
    batches: int,
    acked: dict[int, bytes],
    exclude: Sequence[int] = (),
) -> None:
    """`batches` batches of RECORDS_PER_BATCH unique values, acks=all (idempotent: a retry
    writes nothing twice); each acked offset goes into `acked`. Fails the test if a send
    fails."""
    props = {"acks": "all", "linger.ms": 50, "request.timeout.ms": 20_000}

    def run() -> None:
        with producing(bootstrap(cluster, exclude), props) as producer:
            for b in range(batches):
                values = [
                    f"{label}-{b:03d}-{r}-".encode().ljust(VALUE_BYTES, b"x")
                    for r in range(RECORDS_PER_BATCH)
                ]
                # Delivered together (deliver flushes): one batch per group.
                delivered = deliver(producer, TOPIC, values, partitions=[0] * len(values))
                for v, msg in zip(values, delivered, strict=True):
                    offset = msg.offset()
                    assert offset is not None and offset not in acked
                    acked[offset] = v

    await asyncio.to_thread(run)


def read_from_start(
    servers: str, end: int, timeout: float
) -> tuple[dict[int, bytes | None], KafkaError | None]:
    got: dict[int, bytes | None] = {}
    # auto.offset.reset "error" (Kafka's "none"): an offset out of range is an error too.
    with consuming(servers, {"auto.offset.reset": "error"}) as consumer:
        consumer.assign([KafkaTopicPartition(TOPIC, 0, 0)])
        deadline = time.monotonic() + timeout
        position = 0
        while position < end:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(f"consumer stuck at {position} of {end}: {got}")
            for msg in consume_ready(consumer, 1000, min(remaining, 0.5)):
                if (err := msg.error()) is not None:
                    if err.code() in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN):
                        continue  # librdkafka connects again
                    return got, err
                offset = msg.offset()
                assert offset is not None and offset not in got, f"offset {offset} returned twice"
                got[offset] = msg.value()
                position = offset + 1
    return {o: v for o, v in got.items() if o < end}, None


async def consume_from(
    servers: str, end: int, timeout: float = 20.0
) -> tuple[dict[int, bytes | None], KafkaError | None]:
    """offset -> value of every record in [0, end) a consumer reads, checking every batch's
    CRC, and the error that stopped it (None if it got to `end`)."""
    return await asyncio.to_thread(read_from_start, servers, end, timeout)


# --- the scenario --------------------------------------------------------------------------


@dataclass
class Scenario:
    cluster: LocalCluster
    damaged: int  # the follower that is killed and damaged (first in the assignment)
    leader: int
    other: int
    acked: dict[int, bytes] = field(default_factory=dict)

    @property
    def end(self) -> int:
        return max(self.acked) + 1


async def prepare(make_cluster: ClusterFactory) -> Scenario:
    """A topic with replicas [D, L, O] (D preferred), acked data in several segments, D
    shut down cleanly once (so its recovery-point checkpoint is its LEO then, not 0) and
    back as a follower of L, more acked data, then D killed with SIGKILL."""
    cluster = make_cluster(overrides=OVERRIDES)
    controller = cluster.controller()
    assert controller is not None
    # Neither the damaged broker nor the interim leader is the controller: killing D then
    # costs no controller failover.
    d, leader = [b for b in cluster.broker_ids if b != controller[0]]
    s = Scenario(cluster, d, leader, controller[0])
    await create_topic(cluster, TOPIC, -1, -1, TOPIC_CONFIG, assignment={0: [d, leader, s.other]})
    await wait_until_async(
        lambda: state(cluster).leader == d and len(state(cluster).isr) == 3, 15, "D to lead"
    )
    await produce(cluster, "before-clean-restart", 10, s.acked)
    assert len(segment_files(cluster, d)) >= 2, "expected several segments"

    # Controlled shutdown moves leadership to L; the clean close checkpoints the recovery
    # point. D comes back as a follower (no automatic rebalance).
    assert cluster.terminate(d) == 0
    assert recovery_point(cluster, d) == s.end
    cluster.start_broker(d)
    await wait_until_async(
        lambda: state(cluster).leader == leader and len(state(cluster).isr) == 3,
        20,
        "D back in the ISR as a follower",
    )
    # Batch by batch until D's active segment holds a few batches, all of them above the
    # recovery point.
    recovered_from = s.end
    for _ in range(20):
        await produce(cluster, "above-recovery-point", 1, s.acked)
        active = segment_files(cluster, d)[-1]
        in_active = [b for b in strict_log(cluster, d) if b.segment == active]
        if len(in_active) >= 3 and in_active[0].header.base_offset >= recovered_from:
            break
    else:
        pytest.fail("D's active segment never held three batches above the recovery point")
    # acks=all with D in the ISR: D has every acked record (in its page cache at least).
    assert d in state(cluster).isr
    cluster.kill(d)
    assert not cluster.is_alive(d)
    return s


def recovery_point(cluster: LocalCluster, broker: int) -> int:
    points = OffsetCheckpointFile(cluster.log_dir(broker) / RECOVERY_POINT_CHECKPOINT).read()
    assert TP in points, f"no recovery point for {TP} in broker {broker}'s checkpoint"
    return points[TP]


@dataclass(frozen=True)
class Damage:
    segment: Path
    position: int  # where the first invalid byte now is
    invalid_bytes: int  # how many bytes from there on recovery must cut
    reason: str  # InvalidBatchReason text recovery must report
    batch: BatchHeader | None  # the acked batch damaged (None: garbage after the last one)


def damage_active_segment(s: Scenario, kind: str) -> Damage:
    """Damage the newest segment of the (stopped) broker D the way `kind` says."""
    cluster = s.cluster
    rp = recovery_point(cluster, s.damaged)
    assert 0 < rp < s.end, f"recovery point {rp} should lie between 0 and {s.end}"
    batches = strict_log(cluster, s.damaged)  # intact before we touch it
    active = segment_files(cluster, s.damaged)[-1]
    in_active = [b for b in batches if b.segment == active]
    assert len(in_active) >= 2, f"the active segment holds {len(in_active)} batches"
    size = active.stat().st_size
    if kind == "garbage-appended":
        garbage = random.Random(7).randbytes(300)
        with active.open("ab") as f:
            f.write(garbage)
        # Whatever recovery finds wrong with it first (magic, length, CRC): all of it goes.
        return Damage(active, size, len(garbage), "", None)

    if kind == "byte-flipped-above-recovery-point":
        candidates = [b for b in in_active if b.header.base_offset >= rp]
    else:
        candidates = in_active
    victim = candidates[len(candidates) // 2]
    assert victim.header.next_offset <= s.end, "the damaged batch must hold acked records"
    pos, batch_size = victim.position, victim.header.size_in_bytes
    if kind == "torn-mid-header":
        cut = pos + HEADER_SIZE // 2
        _truncate(active, cut)
        return Damage(active, pos, cut - pos, "truncated", victim.header)
    if kind == "torn-mid-body":
        cut = pos + HEADER_SIZE + (batch_size - HEADER_SIZE) // 2
        _truncate(active, cut)
        return Damage(active, pos, cut - pos, "truncated", victim.header)
    assert kind == "byte-flipped-above-recovery-point"
    _flip_byte(active, pos + HEADER_SIZE + (batch_size - HEADER_SIZE) // 2)
    return Damage(active, pos, size - pos, "CRC mismatch", victim.header)


def _truncate(path: Path, size: int) -> None:
    with path.open("r+b") as f:
        f.truncate(size)


def _flip_byte(path: Path, position: int) -> None:
    with path.open("r+b") as f:
        f.seek(position)
        byte = f.read(1)[0]
        f.seek(position)
        f.write(bytes([byte ^ 0xFF]))


async def restart_damaged(s: Scenario) -> None:
    """Start D again; it must come up and register, whatever its files hold."""
    info = s.cluster.start_broker(s.damaged, timeout=RESTART_TIMEOUT_S)
    assert info is not None and info.id == s.damaged
    assert s.cluster.is_alive(s.damaged), "the broker died on its damaged log"
    assert s.damaged in s.cluster.registrations()


async def make_damaged_broker_leader(s: Scenario) -> LeaderAndIsr:
    """Preferred-replica election (D is first in the assignment), as Kafka's
    kafka-preferred-replica-election.sh requests it: through the admin znode."""
    cluster = s.cluster
    cluster.zk_client().create_preferred_replica_election([TP])
    await wait_until_async(lambda: state(cluster).leader == s.damaged, 20, "D to be leader")

    async def d_says_it_leads() -> bool:
        meta = await metadata(cluster, s.damaged)
        topic = next(t for t in meta.topics if t.name == TOPIC)
        return topic.partitions[0].leader == s.damaged

    await wait_until_async(d_says_it_leads, 15, "D's metadata to name D the leader")
    return state(cluster)


# --- damage above the recovery point: cut, re-fetched, served --------------------------------


@pytest.mark.parametrize(
    "kind",
    [
        "torn-mid-header",
        "torn-mid-body",
        "garbage-appended",
        "byte-flipped-above-recovery-point",
    ],
)
async def test_damaged_follower_recovers_refetches_and_serves_every_acked_record(
    make_cluster: ClusterFactory, kind: str
) -> None:
    s = await prepare(make_cluster)
    cluster, d = s.cluster, s.damaged
    damage = damage_active_segment(s, kind)
    # The cluster stays available without D: more acked writes it has to fetch later.
    await produce(cluster, "while-down", 6, s.acked, exclude=[d])
    assert d not in state(cluster).isr

    await restart_damaged(s)
    # 1. Recovery found the damage exactly where it is and cut from there.
    run_log = current_run_log(cluster, d)
    assert "no clean shutdown marker" in run_log
    cuts = _TRUNCATED_LINE.findall(run_log)
    assert len(cuts) == 1, f"expected one truncation in the broker log, got {cuts}"
    n_bytes, segment_name, position, reason = cuts[0]
    assert segment_name == damage.segment.name
    assert int(position) == damage.position
    assert int(n_bytes) == damage.invalid_bytes
    assert reason.startswith(damage.reason)

    # 2. It rejoins the ISR ...
    await wait_until_async(lambda: d in state(cluster).isr, 20, "D to rejoin the ISR")
    # ... with a log of valid batches only, byte for byte the leader's once caught up.
    await wait_until_async(
        lambda: raw_batches(cluster, d) == raw_batches(cluster, s.leader),
        10,
        "D's log to equal the leader's",
    )
    if damage.batch is not None:
        # The damaged batch is there again: re-fetched, not kept.
        refetched = [b for b in strict_log(cluster, d) if b.header == damage.batch]
        assert len(refetched) == 1

    # 3. Every acked record is readable at its acked offset, and the replicas agree byte
    # for byte below the HW.
    got, error = await consume_from(cluster.bootstrap_servers, s.end)
    assert error is None
    assert got == s.acked
    below_hw = {
        b: [raw for off, raw in raw_batches(cluster, b) if off < s.end] for b in cluster.broker_ids
    }
    assert below_hw[d] == below_hw[s.leader] == below_hw[s.other]

    # 4. D leads and serves everything itself, the re-fetched records included.
    led = await make_damaged_broker_leader(s)
    host, port = cluster.broker_address(d)
    got, error = await consume_from(f"{host}:{port}", s.end)
    assert error is None
    assert got == s.acked
    after = state(cluster)
    assert after.leader == d and after.leader_epoch == led.leader_epoch  # D served all of it


# --- a flipped byte below the recovery point --------------------------------------------------


async def test_byte_flipped_below_recovery_point_is_not_found_at_startup_and_no_reader_accepts_it(
    make_cluster: ClusterFactory,
) -> None:
    s = await prepare(make_cluster)
    cluster, d = s.cluster, s.damaged
    rp = recovery_point(cluster, d)
    segments = segment_files(cluster, d)
    # Recovery starts at the segment holding the recovery point: damage one before it.
    rp_segment = max(i for i, seg in enumerate(segments) if int(seg.name.split(".")[0]) <= rp)
    assert rp_segment >= 1, f"no segment entirely below the recovery point {rp}"
    # A batch in the middle of the first segment: a consumer gets the records before it.
    first_segment = [b for b in strict_log(cluster, d) if b.segment == segments[0]]
    assert len(first_segment) >= 3
    victim = first_segment[len(first_segment) // 2]
    assert victim.header.base_offset > 0 and victim.header.next_offset <= rp
    _flip_byte(victim.segment, victim.position + HEADER_SIZE + 5)
    await produce(cluster, "while-down", 3, s.acked, exclude=[d])

    await restart_damaged(s)
    run_log = current_run_log(cluster, d)
    assert "no clean shutdown marker" in run_log
    assert not _TRUNCATED_LINE.findall(run_log), "recovery is not expected to look there"
    # It catches up past the corrupt batch, which it already has, and rejoins the ISR.
    await wait_until_async(lambda: d in state(cluster).isr, 20, "D to rejoin the ISR")
    with pytest.raises(Exception, match="CRC mismatch"):
        strict_log(cluster, d)  # the corrupt batch is still in D's first segment

    # As leader, D serves the batch as it is on disk; the consumer's CRC check stops there,
    # after returning every record before it.
    await make_damaged_broker_leader(s)
    host, port = cluster.broker_address(d)
    got, error = await consume_from(f"{host}:{port}", s.end)
    assert error is not None and error.code() == KafkaError._BAD_MSG, error
    assert f"at offset {victim.header.base_offset} " in error.str()
    assert "failed CRC32C check" in error.str()
    assert got == {o: v for o, v in s.acked.items() if o < victim.header.base_offset}

    # A follower that lost its disk fetches from D from offset 0 and never appends it.
    follower = s.leader  # a follower of D now, and not the controller
    assert cluster.terminate(follower) == 0
    shutil.rmtree(cluster.log_dir(follower))
    cluster.start_broker(follower)
    await wait_until_async(
        lambda: "append of fetched data failed" in current_run_log(cluster, follower),
        20,
        "the follower to refuse the fetched batch",
    )
    refusal = next(
        line
        for line in current_run_log(cluster, follower).splitlines()
        if "append of fetched data failed" in line
    )
    assert "CRC mismatch" in refusal
    kept = strict_log(cluster, follower)  # only valid batches ...
    assert all(b.header.next_offset <= victim.header.base_offset for b in kept)  # ... before it
    assert follower not in state(cluster).isr
