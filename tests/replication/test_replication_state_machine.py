"""A hypothesis state machine over one partition replicated on three brokers (design §12.1).

Each broker is the real replication stack without sockets: its own LogManager over its own
directory, a ReplicaManager, and ReplicaFetchers that are stepped by the test instead of
running their loop. A fetch is the fetcher's own request handled by the leader's own
`fetch_messages` (follower fetch state, HW, ISR expansion, DelayedProduce wake-ups) and
answered into the fetcher's own append / truncation code, so no rule is re-implemented
here. Time comes from a ManualClock, and each run has its own event loop that only runs
while a step does (the step, the ISR writes it starts, the requests it wakes), so every run
is deterministic.

The test plays the controller. It sends LeaderAndIsr to every broker at once, and the state
znode is a fake whose conditional writes succeed while the writer's zkVersion is current
(the leader's ISR changes "as if the ZooKeeper write succeeded").

Rules: acks=all produce; one fetcher pass of a follower, or of each follower
(OffsetsForLeaderEpoch while it reconciles, a fetch after); the clock moving; the
`isr-expiration` check; the HW (and recovery-point) checkpoint tasks; a follower restart,
clean or crash (a fresh LogManager and ReplicaManager over the same directory: logs
recovered, HW = clamp(checkpoint, log start, LEO), truncation by leader epoch with the
leader); a new leader epoch with the same leader or another ISR member (clean election); a
leader crash with failover to an ISR member (the old leader restarts and follows).

Invariants, after every step: the leader is in its ISR; its HW is at most the LEO of every
ISR member; its HW never decreases while it stays leader; every acked record is in the
leader's log with the bytes it was acked with, below the HW if the same broker has led
since it was acked; every ISR member's log is byte-identical to the leader's below the HW.
At the end every follower catches up: all logs and epoch histories are identical, and every
acked record is below the HW.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from minikafka.clock import ManualClock
from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.protocol.errors import ErrorCode
from minikafka.replication.fetcher import FetchPhase, ReplicaFetcher
from minikafka.replication.partition import Partition
from minikafka.replication.replica_manager import FollowerAssignment, ReplicaManager
from minikafka.rpc.connection import BrokerConnection
from minikafka.rpc.framing import decode_response, encode_response
from minikafka.rpc.messages import (
    BrokerNode,
    FetchRequest,
    FetchResponse,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    OffsetForLeaderEpochRequest,
    ProducePartitionResponse,
)
from minikafka.storage.checkpoint import REPLICATION_OFFSET_CHECKPOINT, OffsetCheckpointFile
from minikafka.storage.log import Log
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_manager import LogManager
from minikafka.storage.record_batch import build_batch, decode_all, iter_batches

TP = TopicPartition("t", 0)
BROKERS = (1, 2, 3)
LAG_MS = 10_000
# Small segments and fetches: rolls, multi-segment truncation, partial catch-up.
LOG_CONFIG = LogConfig(segment_bytes=400, index_interval_bytes=100)
FETCH_MAX_BYTES = 200
NEVER_MS = 10**9  # acks=all requests wait for the HW or a leadership change, not a timer

T = TypeVar("T")


class FakeStateZnode:
    """The partition's state znode: conditional writes against a version (§8.5)."""

    def __init__(self) -> None:
        self.leader = BROKERS[0]
        self.epoch = 0
        self.isr: tuple[int, ...] = BROKERS
        self.version = 0

    async def write(self, tp: TopicPartition, new: LeaderAndIsr, expected: int) -> int | None:
        if expected != self.version:
            return None
        assert new.leader == self.leader and new.leader_epoch == self.epoch
        self.isr = tuple(new.isr)
        self.version += 1
        return self.version

    async def notify(self, tps: list[TopicPartition]) -> None:
        pass


def _through_the_wire(body: object, response_type: type) -> object:
    """Encode and decode a response as the network would: the leader's file regions
    become bytes, the follower gets memoryviews."""
    chunks = encode_response(0, body)
    wire = b"".join(
        c if isinstance(c, bytes | bytearray | memoryview) else c.read() for c in chunks
    )
    for c in chunks:
        if not isinstance(c, bytes | bytearray | memoryview):
            c.close()
    return decode_response(wire[4:], response_type).body


class InProcessConnection:
    """Stands in for a fetcher's BrokerConnection: the request goes straight to the source
    broker's replica manager, the way its KafkaApis would hand it over."""

    def __init__(self, target: Callable[[], ReplicaManager]) -> None:
        self._target = target

    async def send(self, request: object, timeout_s: float | None = None) -> object:
        rm = self._target()
        if isinstance(request, FetchRequest):
            return _through_the_wire(await rm.fetch_messages(request), FetchResponse)
        if isinstance(request, OffsetForLeaderEpochRequest):
            return rm.offsets_for_leader_epoch(request)
        raise AssertionError(f"unexpected request {request!r}")


class SteppedFetcherManager:
    """The replica manager's fetcher manager, with ReplicaFetchers that never run their
    loop: `step` runs one pass of it (truncate if any partition is still truncating, else
    fetch), ignoring backoff delays."""

    def __init__(
        self, rm: ReplicaManager, config: BrokerConfig, rm_of: Callable[[int], ReplicaManager]
    ) -> None:
        self._rm = rm
        self._config = config
        self._rm_of = rm_of
        self.fetchers: dict[int, ReplicaFetcher] = {}

    def add_partitions(self, partitions: Mapping[TopicPartition, FollowerAssignment]) -> None:
        for tp, a in partitions.items():
            source = a.leader.node_id
            if source not in self.fetchers:
                self.fetchers[source] = ReplicaFetcher(a.leader, self._rm, self._config)
            self.fetchers[source].add_partitions({tp: a.leader_epoch})

    async def remove_partitions(self, tps: set[TopicPartition]) -> None:
        for source, f in list(self.fetchers.items()):
            f.remove_partitions(tps)
            if not f.partitions:
                del self.fetchers[source]

    def phase(self) -> FetchPhase | None:
        for f in self.fetchers.values():
            if TP in f.partitions:
                return f.partitions[TP].phase
        return None

    def _source(self, broker_id: int) -> Callable[[], ReplicaManager]:
        return lambda: self._rm_of(broker_id)

    async def step(self) -> None:
        for source, f in list(self.fetchers.items()):
            if not f.partitions:
                continue
            conn = cast(BrokerConnection, InProcessConnection(self._source(source)))
            truncating = {
                tp: s for tp, s in f.partitions.items() if s.phase is FetchPhase.TRUNCATING
            }
            if truncating:
                await f._truncate(conn, truncating)
            else:
                await f._fetch(conn, dict(f.partitions))


class BrokerProcess:
    """One broker's replication stack over its log dir; a restart makes a new one."""

    def __init__(
        self,
        broker_id: int,
        log_dir: Path,
        clock: ManualClock,
        znode: FakeStateZnode,
        rm_of: Callable[[int], ReplicaManager],
    ) -> None:
        self.broker_id = broker_id
        self.config = BrokerConfig(
            broker_id=broker_id,
            log_dirs=(str(log_dir),),
            replica_lag_time_max_ms=LAG_MS,
            replica_fetch_wait_max_ms=0,
            replica_fetch_max_bytes=FETCH_MAX_BYTES,
        )
        self.log_manager = LogManager([log_dir], LOG_CONFIG, clock=clock)
        self.log_manager.startup()

        async def no_overrides(topics: list[str]) -> dict[str, LogConfig]:
            return {}

        self.rm = ReplicaManager(
            self.config,
            self.log_manager,
            clock,
            no_overrides,
            isr_writer=znode.write,
            isr_change_notifier=znode.notify,
        )
        self.fetchers = SteppedFetcherManager(self.rm, self.config, rm_of)
        self.rm.fetcher_manager = self.fetchers

    @property
    def partition(self) -> Partition:
        return self.rm.partitions[TP]

    @property
    def log(self) -> Log:
        return self.rm.partitions[TP].log

    async def stop(self, *, clean: bool) -> None:
        await self.rm.shutdown()
        if clean:
            self.log_manager.shutdown()  # HW checkpoint, flush, clean-shutdown marker
        else:
            self.log_manager.close_without_shutdown()  # kill -9: page cache survives


@dataclass
class PendingProduce:
    task: asyncio.Task[dict[TopicPartition, ProducePartitionResponse]]
    broker_id: int
    partition: Partition
    leadership_losses: int
    base_offset: int
    values: list[bytes]

    @property
    def required_hw(self) -> int:
        return self.base_offset + len(self.values)


def read_bytes(lg: Log, end: int) -> bytes:
    """The log's batches from its start up to offset `end` (a batch boundary), as stored."""
    out = bytearray()
    offset = lg.log_start_offset
    while offset < end:
        info = lg.read(offset, 1 << 20, max_offset=end)
        if info.slice is None:
            break
        chunk = info.read()
        out += chunk
        offset = [h for _, h in iter_batches(chunk)][-1].next_offset
    return bytes(out)


def values_by_offset(lg: Log) -> dict[int, bytes | None]:
    return {r.offset: r.value for r in decode_all(read_bytes(lg, lg.log_end_offset))}


def epoch_history(lg: Log) -> list[tuple[int, int]]:
    """Epoch entries that cover at least one record (a leader records an epoch's start at
    its LEO before writing anything in it; followers only learn epochs from batches)."""
    leo = lg.log_end_offset
    return [
        (e.epoch, e.start_offset) for e in lg.leader_epoch_cache.entries if e.start_offset < leo
    ]


class ReplicationMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="minikafka-replication-sm-"))
        self.loop = asyncio.new_event_loop()
        self.clock = ManualClock()
        self.znode = FakeStateZnode()
        self.brokers: dict[int, BrokerProcess] = {}
        for b in BROKERS:
            self.brokers[b] = self._new_process(b)
        self.pending: list[PendingProduce] = []
        self.acked: dict[int, tuple[bytes, int]] = {}  # offset -> (value, tenure it was acked in)
        self.tenure = 0  # bumped whenever another broker becomes leader
        self.leader_hw = 0
        self.next_value = 0
        self._send_state(BROKERS)

    # --- plumbing ------------------------------------------------------------------------

    def _run(self, coro: Awaitable[T]) -> T:
        async def step() -> T:
            result = await coro
            await self._settle()
            return result

        return self.loop.run_until_complete(step())

    def _new_process(self, broker_id: int) -> BrokerProcess:
        return BrokerProcess(
            broker_id, self.tmp / f"b{broker_id}", self.clock, self.znode, self._rm_of
        )

    def _rm_of(self, broker_id: int) -> ReplicaManager:
        return self.brokers[broker_id].rm

    @property
    def leader(self) -> BrokerProcess:
        return self.brokers[self.znode.leader]

    @property
    def followers(self) -> list[int]:
        return [b for b in BROKERS if b != self.znode.leader]

    def _send_state(self, targets: tuple[int, ...] | list[int]) -> None:
        """The controller's LeaderAndIsr with the znode's current state."""
        z = self.znode
        st_ = LeaderAndIsrPartitionState(
            TP.topic, TP.partition, 1, z.leader, z.epoch, list(z.isr), z.version, list(BROKERS)
        )
        leaders = [BrokerNode(z.leader, "127.0.0.1", 9092 + z.leader)]
        for b in targets:
            resp = self._run(
                self.brokers[b].rm.become_leader_or_follower(
                    LeaderAndIsrRequest(0, 1, -1, [st_], leaders)
                )
            )
            assert [e.error_code for e in resp.partition_errors] == [ErrorCode.NONE]

    def _controller_write(self, leader: int, isr: tuple[int, ...]) -> None:
        z = self.znode
        if leader != z.leader:
            self.tenure += 1
            self.leader_hw = 0
        z.leader, z.epoch, z.isr, z.version = leader, z.epoch + 1, isr, z.version + 1

    @staticmethod
    async def _until(cond: Callable[[], bool], max_yields: int = 100) -> None:
        """Yield to the loop's other tasks until `cond` holds (nothing here waits on time)."""
        for _ in range(max_yields):
            if cond():
                return
            await asyncio.sleep(0)
        raise AssertionError("condition not reached")

    @staticmethod
    async def _drain(tasks: list[asyncio.Task[T]]) -> None:
        """Wait for (cancelled) tasks to finish."""
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _settle(self) -> None:
        """Let what the step set off finish: ISR writes started by a fetch, then the acks=all
        requests whose DelayedProduce condition now holds (each must complete: the purgatory
        has to wake it)."""
        while isr_tasks := [t for b in self.brokers.values() for t in b.rm._isr_tasks]:
            await asyncio.gather(*isr_tasks)
        still: list[PendingProduce] = []
        for pp in self.pending:
            if self._produce_settled(pp) and not pp.task.done():
                try:
                    async with asyncio.timeout(5):
                        await asyncio.shield(pp.task)
                except TimeoutError:
                    raise AssertionError(
                        f"acks=all request for offsets from {pp.base_offset} was not completed "
                        "although its DelayedProduce condition holds"
                    ) from None
            if pp.task.done():
                self._complete(pp)
            else:
                still.append(pp)
        self.pending = still

    def _produce_settled(self, pp: PendingProduce) -> bool:
        """DelayedProduce's completion condition (§6), from the outside."""
        p = pp.partition
        return (
            self.brokers[pp.broker_id].rm.partitions.get(TP) is not p
            or not p.is_leader
            or p.leadership_losses != pp.leadership_losses
            or p.high_watermark >= pp.required_hw
        )

    def _complete(self, pp: PendingProduce) -> None:
        r = pp.task.result()[TP]
        if r.error_code != ErrorCode.NONE:
            return  # not acked (leadership moved): in doubt, may or may not survive
        assert r.base_offset == pp.base_offset
        assert pp.partition.is_leader and pp.partition.high_watermark >= pp.required_hw
        for i, v in enumerate(pp.values):
            assert pp.base_offset + i not in self.acked  # an acked offset was reused
            self.acked[pp.base_offset + i] = (v, self.tenure)

    # --- rules ---------------------------------------------------------------------------

    @rule(n=st.integers(1, 3))
    def produce(self, n: int) -> None:
        values = [f"v{self.next_value + i}".encode() for i in range(n)]
        self.next_value += n
        leader = self.leader
        p = leader.partition
        base = p.log_end_offset
        task = self.loop.create_task(
            leader.rm.append_records(-1, NEVER_MS, {TP: build_batch(values)})
        )
        self.pending.append(
            PendingProduce(task, leader.broker_id, p, p.leadership_losses, base, values)
        )
        # The append happens as soon as the request runs; only the answer waits.
        self._run(self._until(lambda: p.log_end_offset == base + n))

    @rule(data=st.data())
    def follower_fetches(self, data: st.DataObject) -> None:
        """One pass of one follower's fetcher: OffsetsForLeaderEpoch while it reconciles,
        else a fetch."""
        b = data.draw(st.sampled_from(self.followers), label="follower")
        self._run(self.brokers[b].fetchers.step())

    @rule()
    def fetch_round(self) -> None:
        """Every follower's fetcher makes one pass (in broker order)."""
        for b in self.followers:
            self._run(self.brokers[b].fetchers.step())

    @rule(ms=st.sampled_from([1, LAG_MS // 2, LAG_MS + 1]))
    def time_passes(self, ms: int) -> None:
        self.clock.advance(ms)

    @rule()
    def isr_expiration(self) -> None:
        self._run(self.leader.rm.shrink_isrs())

    @rule(data=st.data(), recovery_points=st.booleans())
    def checkpoint_task(self, data: st.DataObject, recovery_points: bool) -> None:
        b = data.draw(st.sampled_from(BROKERS), label="broker")
        self.brokers[b].log_manager.checkpoint_high_watermarks()
        if recovery_points:
            self.brokers[b].log_manager.checkpoint_recovery_points_and_log_starts()

    @rule(data=st.data(), clean=st.booleans(), reconcile=st.booleans())
    def follower_restarts(self, data: st.DataObject, clean: bool, reconcile: bool) -> None:
        """A follower's process stops (cleanly, or killed) and a new one starts over its log
        dir; the controller tells it the current state. With `reconcile`, its fetcher's
        first pass (OffsetsForLeaderEpoch and truncation, §9) happens at once."""
        b = data.draw(st.sampled_from(self.followers), label="follower")
        self._restart(b, clean=clean)
        self._send_state([b])
        if reconcile:
            self._run(self.brokers[b].fetchers.step())

    def _restart(self, b: int, *, clean: bool) -> None:
        old = self.brokers[b]
        # A dead process answers nothing: its waiting produce requests are in doubt.
        dead = [pp.task for pp in self.pending if pp.broker_id == b]
        for t in dead:
            t.cancel()
        self.pending = [pp for pp in self.pending if pp.broker_id != b]
        self._run(self._drain(dead))
        self._run(old.stop(clean=clean))
        checkpointed = OffsetCheckpointFile(
            self.tmp / f"b{b}" / REPLICATION_OFFSET_CHECKPOINT
        ).read()
        new = self._new_process(b)
        self.brokers[b] = new
        lg = new.log_manager.get_log(TP)
        assert lg is not None
        # §5: HW = clamp(checkpointed HW, log start, LEO).
        clamped = min(max(checkpointed.get(TP, 0), lg.log_start_offset), lg.log_end_offset)
        assert lg.high_watermark == clamped

    @rule(data=st.data())
    def controller_election(self, data: st.DataObject) -> None:
        """The controller writes a new leader epoch with any ISR member as leader and the
        ISR unchanged: the same leader (an epoch bump, e.g. after a broker change that left
        this ISR alone) or another one (preferred-replica election; the old leader follows)."""
        new = data.draw(st.sampled_from(self.znode.isr), label="leader")
        self._controller_write(new, self.znode.isr)
        self._send_state(BROKERS)

    @precondition(lambda self: len(self.znode.isr) > 1)
    @rule(data=st.data())
    def leader_crashes(self, data: st.DataObject) -> None:
        """The leader dies; the controller elects an ISR member and drops the old leader from
        the ISR (§8.3, §8.4 offline election); the old leader restarts and follows."""
        old = self.znode.leader
        new = data.draw(st.sampled_from([b for b in self.znode.isr if b != old]), label="leader")
        self._restart(old, clean=False)
        self._controller_write(new, tuple(b for b in self.znode.isr if b != old))
        self._send_state(BROKERS)

    # --- invariants ----------------------------------------------------------------------

    @invariant()
    def leader_stays_in_isr(self) -> None:
        p = self.leader.partition
        assert p.is_leader and p.leader_epoch == self.znode.epoch
        assert self.znode.leader in p.isr
        assert tuple(p.isr) == self.znode.isr

    @invariant()
    def hw_at_most_every_isr_leo(self) -> None:
        hw = self.leader.partition.high_watermark
        for b in self.leader.partition.isr:
            assert hw <= self.brokers[b].log.log_end_offset, (b, hw)

    @invariant()
    def hw_never_decreases_while_leading(self) -> None:
        hw = self.leader.partition.high_watermark
        assert hw >= self.leader_hw
        self.leader_hw = hw

    @invariant()
    def acked_records_survive(self) -> None:
        leader = self.leader
        if not self.acked:
            return
        have = values_by_offset(leader.log)
        for offset, (value, tenure) in self.acked.items():
            assert have.get(offset) == value, f"acked offset {offset} lost or changed"
            if tenure == self.tenure:
                assert offset < leader.partition.high_watermark

    @invariant()
    def isr_logs_identical_below_hw(self) -> None:
        leader = self.leader
        hw = leader.partition.high_watermark
        expected = read_bytes(leader.log, hw)
        for b in leader.partition.isr:
            if b != leader.broker_id:
                assert read_bytes(self.brokers[b].log, hw) == expected, b

    # --- the end -------------------------------------------------------------------------

    def teardown(self) -> None:
        try:
            # Only after a run that passed (teardown also runs when a step failed).
            if sys.exc_info()[1] is None:
                self._catch_up_and_compare()
        finally:
            for pp in self.pending:
                pp.task.cancel()
            self.loop.run_until_complete(self._drain([pp.task for pp in self.pending]))
            for bp in self.brokers.values():
                self.loop.run_until_complete(bp.stop(clean=False))
            self.loop.close()
            shutil.rmtree(self.tmp, ignore_errors=True)

    def _caught_up(self) -> bool:
        leo = self.leader.partition.log_end_offset
        return all(
            self.brokers[b].fetchers.phase() is FetchPhase.FETCHING
            and self.brokers[b].log.log_end_offset == leo
            for b in self.followers
        )

    def _catch_up_and_compare(self) -> None:
        """Followers fetch until they have the leader's log (and the HW covers it)."""
        for _ in range(200):
            if (
                self._caught_up()
                and self.leader.partition.high_watermark == self.leader.log.log_end_offset
            ):
                break
            for b in self.followers:
                self._run(self.brokers[b].fetchers.step())
        else:
            raise AssertionError("followers did not catch up")
        leader = self.leader
        leo = leader.log.log_end_offset
        expected = read_bytes(leader.log, leo)
        for b in self.followers:
            lg = self.brokers[b].log
            assert read_bytes(lg, leo) == expected, b
            assert epoch_history(lg) == epoch_history(leader.log), b
        assert all(o < leader.partition.high_watermark for o in self.acked)
        self.acked_records_survive()


ReplicationMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("MINIKAFKA_HYPOTHESIS_EXAMPLES", "150")),
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestReplicationStateMachine = ReplicationMachine.TestCase
