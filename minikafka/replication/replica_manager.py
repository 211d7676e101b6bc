"""The partitions this broker hosts, and the requests that act on them.

Controller requests (LeaderAndIsr, StopReplica) change roles under one lock, in arrival
order, fenced by the controller epoch and the broker epoch (design §8.8). Produce and fetch
go to the partition; requests that must wait (acks=all, long-polling fetches) wait in the
purgatory for the partition to move, not on a timer.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol, cast

from minikafka.clock import Clock
from minikafka.common import NO_LEADER, LeaderAndIsr, TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.protocol.errors import (
    ErrorCode,
    InvalidRequiredAcksError,
    InvalidTopicError,
    KafkaError,
    KafkaStorageError,
    NotEnoughReplicasAfterAppendError,
    NotLeaderOrFollowerError,
    OffsetNotAvailableError,
    OffsetOutOfRangeError,
    RecordValidationError,
    RequestTimedOutError,
    StaleBrokerEpochError,
    StaleControllerEpochError,
    UnknownTopicOrPartitionError,
)
from minikafka.replication.broker_topic_stats import BrokerTopicStats
from minikafka.replication.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    CachedPartition,
    ContextKind,
    FetchContext,
    FetchSession,
    FetchSessionCache,
    PartitionData,
)
from minikafka.replication.partition import Partition
from minikafka.replication.partition_state import (
    FollowerState,
    IsrChangePropagation,
    refresh_idle_followers,
)
from minikafka.replication.purgatory import FetchSessionKey, Purgatory
from minikafka.rpc.messages import (
    CONSUMER_REPLICA_ID,
    DEBUG_REPLICA_ID,
    EARLIEST_TIMESTAMP,
    INVALID_SESSION_ID,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    NO_LEADER_EPOCH,
    BrokerNode,
    EpochEndOffset,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopicResponse,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
    PartitionError,
    ProducePartitionResponse,
    RecordError,
    StopReplicaRequest,
    StopReplicaResponse,
)
from minikafka.rules.consumer_offsets import OFFSETS_TOPIC
from minikafka.rules.read_replica import RemoteReplica, preferred_read_replica
from minikafka.rules.replication_quota import (
    UNLIMITED_RATE,
    ReplicationQuotaManager,
    should_throttle,
)
from minikafka.storage.log import Log
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_manager import LogManager
from minikafka.storage.segment import LogSlice

log = logging.getLogger(__name__)

# New logs created between two turns of the event loop (about 0.2 ms each).
CREATE_LOGS_SLICE = 100
# From this many partitions on, a LeaderAndIsr is logged in one line, its partitions at DEBUG.
LARGE_LEADER_AND_ISR = 100

TopicConfigLoader = Callable[[list[str]], Awaitable[dict[str, LogConfig]]]
# (partition, new state, expected zk version) -> new zk version, or None if it moved on (§8.5)
IsrWriter = Callable[[TopicPartition, LeaderAndIsr, int], Awaitable[int | None]]
IsrChangeNotifier = Callable[[list[TopicPartition]], Awaitable[object]]


def _unauthorized(tp: TopicPartition) -> FetchPartitionResponse:
    """A fetched partition of a topic the client may not read (Kafka's errorResponse:
    no HW, no log start, empty records)."""
    return FetchPartitionResponse(
        tp.partition, int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), -1, -1, -1, None
    )


@dataclass(frozen=True)
class LogDirDescription:
    """One log dir for DescribeLogDirs: its absolute path, an error code (a dir that cannot
    be read is KAFKA_STORAGE_ERROR), the replicas asked about in it as (partition, size in
    bytes, offset lag), and its volume's total and usable bytes (-1: unknown)."""

    path: str
    error_code: int
    replicas: list[tuple[TopicPartition, int, int]]
    total_bytes: int = -1
    usable_bytes: int = -1


@dataclass(frozen=True)
class FollowerAssignment:
    """A partition this broker follows: whom to fetch from and in which leader epoch."""

    leader: BrokerNode
    leader_epoch: int


class FetcherManagerLike(Protocol):
    """What the replica manager needs from the replica fetchers (see `fetcher.py`)."""

    def add_partitions(self, partitions: Mapping[TopicPartition, FollowerAssignment]) -> None: ...

    async def remove_partitions(self, tps: set[TopicPartition]) -> None: ...


@dataclass(frozen=True)
class ClientMetadata:
    """What Kafka's ClientMetadata carries of a consumer's Fetch v11+ (KIP-392): its rack
    (`client.rack`, empty when unset), and the rack of each live broker it can reach (on
    the listener the request came in on), for choosing a preferred read replica. A consumer
    that sends it may read from a follower; one that does not (Fetch < v11) only from the
    leader."""

    rack_id: str
    broker_racks: Mapping[int, str | None]


class ReplicaManager:
    def __init__(
        self,
        config: BrokerConfig,
        log_manager: LogManager,
        clock: Clock,
        load_topic_configs: TopicConfigLoader,
        *,
        isr_writer: IsrWriter | None = None,
        isr_change_notifier: IsrChangeNotifier | None = None,
    ) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.log_manager = log_manager
        self._clock = clock
        self._load_topic_configs = load_topic_configs
        self.partitions: dict[TopicPartition, Partition] = {}
        self.controller_epoch = 0
        self.broker_epoch = -1  # set after registration in ZooKeeper
        self.purgatory = Purgatory()
        # KIP-227: followers' fetch sessions; whatever notifies the purgatory about a
        # partition (append, HW, ISR, role change) also marks it dirty in the sessions.
        self.fetch_sessions: FetchSessionCache[FollowerState | None] = FetchSessionCache(
            config.max_incremental_fetch_session_cache_slots,
            config.min_incremental_fetch_session_eviction_ms,
        )
        self.purgatory.on_notify = self.fetch_sessions.mark_dirty
        # KIP-73: the bytes sent to followers of throttled replicas (this broker as leader)
        # and fetched for them (as follower), each against its throttled rate.
        self.leader_quota = ReplicationQuotaManager(
            clock,
            window_num=config.replication_quota_window_num,
            window_size_seconds=config.replication_quota_window_size_seconds,
            bound=config.leader_replication_throttled_rate,
        )
        self.follower_quota = ReplicationQuotaManager(
            clock,
            window_num=config.replication_quota_window_num,
            window_size_seconds=config.replication_quota_window_size_seconds,
            bound=config.follower_replication_throttled_rate,
        )
        self.fetcher_manager: FetcherManagerLike | None = None
        # Set once this broker asks for its controlled shutdown: partitions it becomes a
        # follower of are not fetched any more, so that it does not catch up and rejoin the
        # ISRs the controller is taking it out of (each would need removing again when it
        # stops).
        self.leaving = False
        self._state_change_lock = asyncio.Lock()
        self._isr_writer = isr_writer
        self._isr_change_notifier = isr_change_notifier
        self.isr_propagation = IsrChangePropagation(
            config.isr_change_propagation_blackout_ms,
            config.isr_change_propagation_max_delay_ms,
            clock.now_ms(),
        )
        self.failed_isr_updates = 0  # Kafka's FailedIsrUpdatesPerSec, as a count
        self.isr_shrinks = 0  # IsrShrinksPerSec, as a count
        self.isr_expands = 0  # IsrExpandsPerSec, as a count
        self.topic_stats = BrokerTopicStats()
        self._isr_tasks: set[asyncio.Task[None]] = set()
        # replica.lag.disconnected.max.ms: when each follower broker's fetch connection to
        # this broker last closed (the ISR check needs no more: a later fetch is newer).
        self.fetch_connections_lost: dict[int, int] = {}
        self._disconnect_checks: set[asyncio.TimerHandle] = set()
        self._shut_down = False

    # --- controller requests -------------------------------------------------------------

    def check_controller_request(self, controller_epoch: int, broker_epoch: int) -> None:
        if controller_epoch < self.controller_epoch:
            raise StaleControllerEpochError(
                f"controller epoch {controller_epoch} is older than {self.controller_epoch}"
            )
        # -1 = the sender does not know our epoch (Kafka treats that as current).
        if broker_epoch != -1 and broker_epoch < self.broker_epoch:
            raise StaleBrokerEpochError(
                f"broker epoch {broker_epoch} is older than ours ({self.broker_epoch})"
            )

    async def become_leader_or_follower(self, req: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        async with self._state_change_lock:
            started = time.monotonic()
            self.check_controller_request(req.controller_epoch, req.broker_epoch)
            self.controller_epoch = req.controller_epoch
            errors: list[PartitionError] = []
            to_lead: list[LeaderAndIsrPartitionState] = []
            to_follow: list[LeaderAndIsrPartitionState] = []
            # A line per partition, or for a large request one line for all (below): at
            # 100,000 partitions the lines alone cost seconds.
            large = len(req.partition_states) >= LARGE_LEADER_AND_ISR
            level = logging.DEBUG if large else logging.INFO
            ignored = 0
            for st in req.partition_states:
                tp = TopicPartition(st.topic, st.partition)
                current = self.partitions.get(tp)
                code = ErrorCode.NONE
                if self.broker_id not in st.replicas:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif current is not None and st.leader_epoch <= current.leader_epoch:
                    # Kafka ignores states that are not newer than what it has (§7.8).
                    ignored += 1
                    log.log(
                        level,
                        "%s: ignoring LeaderAndIsr with leader epoch %d (current %d)",
                        tp,
                        st.leader_epoch,
                        current.leader_epoch,
                    )
                    code = ErrorCode.STALE_CONTROLLER_EPOCH
                elif st.leader == self.broker_id:
                    to_lead.append(st)
                else:
                    to_follow.append(st)
                errors.append(PartitionError(st.topic, st.partition, int(code)))
            new_tps = list(
                dict.fromkeys(
                    TopicPartition(st.topic, st.partition)
                    for st in to_lead + to_follow
                    if TopicPartition(st.topic, st.partition) not in self.partitions
                )
            )
            configs = (
                await self._load_topic_configs(sorted({tp.topic for tp in new_tps}))
                if new_tps
                else {}
            )
            failed = await self._create_partitions(new_tps, configs)
            if failed:
                # Kafka answers KAFKA_STORAGE_ERROR for a replica it cannot create.
                errors = [
                    replace(e, error_code=int(ErrorCode.KAFKA_STORAGE_ERROR))
                    if TopicPartition(e.topic, e.partition) in failed
                    else e
                    for e in errors
                ]
                to_lead = [
                    st for st in to_lead if TopicPartition(st.topic, st.partition) not in failed
                ]
                to_follow = [
                    st for st in to_follow if TopicPartition(st.topic, st.partition) not in failed
                ]
            created = time.monotonic()
            leaders = {b.node_id: b for b in req.live_leaders}
            await self._make_leaders(to_lead, level)
            await self._make_followers(to_follow, leaders, level)
            if large or new_tps:
                log.info(
                    "LeaderAndIsr from controller %d (epoch %d): %d partitions, %d new (created "
                    "in %.2fs), leading %d, following %d, ignored %d (not a newer leader "
                    "epoch); done in %.2fs",
                    req.controller_id,
                    req.controller_epoch,
                    len(req.partition_states),
                    len(new_tps) - len(failed),
                    created - started,
                    len(to_lead),
                    len(to_follow),
                    ignored,
                    time.monotonic() - started,
                )
            return LeaderAndIsrResponse(int(ErrorCode.NONE), errors)

    async def _create_partitions(
        self, tps: list[TopicPartition], configs: Mapping[str, LogConfig]
    ) -> set[TopicPartition]:
        """Create the replicas of a LeaderAndIsr's new partitions; returns those that failed.

        A LeaderAndIsr may bring thousands. Their logs are created on the event loop, a slice
        of CREATE_LOGS_SLICE at a time with the loop free in between: a log is a few
        metadata syscalls (0.2 ms), and in worker threads each of those waited for the GIL
        behind the busy loop (up to its 5 ms switch interval), 2 ms a log in all. Their
        directories are made durable (one fsync per log dir, in a thread) before they are
        registered, so before the LeaderAndIsr is answered."""
        lm = self.log_manager
        new_logs = [tp for tp in tps if lm.get_log(tp) is None]
        dirs = lm.dirs_for_new_logs(new_logs)
        opened: dict[TopicPartition, Log] = {}
        failed: set[TopicPartition] = set()
        for start in range(0, len(new_logs), CREATE_LOGS_SLICE):
            if start:
                await asyncio.sleep(0)
            for tp in new_logs[start : start + CREATE_LOGS_SLICE]:
                try:
                    opened[tp] = lm.open_new_log(tp, dirs[tp], configs.get(tp.topic))
                except Exception as e:
                    log.error("%s: cannot create its log: %s", tp, e)
                    failed.add(tp)
        if opened:
            await asyncio.get_running_loop().run_in_executor(
                lm.io_executor, lm.sync_log_dirs, {dirs[tp] for tp in opened}
            )
        for tp in tps:
            if tp in failed:
                continue
            replica_log = lm.add_log(tp, dirs[tp], opened[tp]) if tp in opened else lm.get_log(tp)
            assert replica_log is not None
            self.partitions[tp] = Partition(
                tp, self.broker_id, replica_log, self._clock, self.config.replica_lag_time_max_ms
            )
        return failed

    async def _make_leaders(
        self, states: list[LeaderAndIsrPartitionState], log_level: int = logging.INFO
    ) -> None:
        if not states:
            return
        tps = {TopicPartition(st.topic, st.partition) for st in states}
        if self.fetcher_manager is not None:
            await self.fetcher_manager.remove_partitions(tps)
        # No fsync here: the new epoch's entry reaches disk before the log's recovery point
        # passes it (leader_epoch_cache.py), so thousands of partitions change leader in
        # one pass of CPU work.
        for st in states:
            tp = TopicPartition(st.topic, st.partition)
            self.partitions[tp].make_leader(st, log_level)
            self.purgatory.notify(tp)

    async def _make_followers(
        self,
        states: list[LeaderAndIsrPartitionState],
        leaders: Mapping[int, BrokerNode],
        log_level: int = logging.INFO,
    ) -> None:
        if not states:
            return
        tps = {TopicPartition(st.topic, st.partition) for st in states}
        if self.fetcher_manager is not None:
            await self.fetcher_manager.remove_partitions(tps)
        to_fetch: dict[TopicPartition, FollowerAssignment] = {}
        for st in states:
            tp = TopicPartition(st.topic, st.partition)
            self.partitions[tp].make_follower(st, log_level)
            # Waiting produce requests fail with NOT_LEADER_OR_FOLLOWER once woken.
            self.purgatory.notify(tp)
            node = leaders.get(st.leader)
            if st.leader == NO_LEADER or node is None:
                log.log(log_level, "%s: no live leader to follow yet (leader %d)", tp, st.leader)
                continue
            to_fetch[tp] = FollowerAssignment(node, st.leader_epoch)
        if to_fetch and self.fetcher_manager is not None:
            if self.leaving:
                log.info("not fetching %d partitions: this broker is shutting down", len(to_fetch))
            else:
                self.fetcher_manager.add_partitions(to_fetch)

    async def stop_replicas(self, req: StopReplicaRequest) -> StopReplicaResponse:
        async with self._state_change_lock:
            self.check_controller_request(req.controller_epoch, req.broker_epoch)
            self.controller_epoch = req.controller_epoch
            tps = {TopicPartition(p.topic, p.partition) for p in req.partitions}
            if self.fetcher_manager is not None:
                await self.fetcher_manager.remove_partitions(tps)
            errors: list[PartitionError] = []
            for sp in req.partitions:
                tp = TopicPartition(sp.topic, sp.partition)
                code = ErrorCode.NONE
                current = self.partitions.get(tp)
                if (
                    current is not None
                    and sp.leader_epoch != NO_LEADER_EPOCH
                    and sp.leader_epoch < current.leader_epoch
                ):
                    code = ErrorCode.FENCED_LEADER_EPOCH
                elif sp.delete_partition:
                    self.partitions.pop(tp, None)
                    try:
                        self.log_manager.delete_log(tp)
                    except OSError as e:
                        log.error("%s: deleting the log failed: %s", tp, e)
                        code = ErrorCode.KAFKA_STORAGE_ERROR
                elif current is not None:
                    # Stop being leader or follower; the replica stays on disk.
                    current.become_offline()
                self.purgatory.notify(tp)
                errors.append(PartitionError(sp.topic, sp.partition, int(code)))
            # As Kafka: a topic's metrics go once none of its partitions is left here.
            deleted = {sp.topic for sp in req.partitions if sp.delete_partition}
            for topic in deleted - {tp.topic for tp in self.partitions}:
                self.topic_stats.remove(topic)
            return StopReplicaResponse(int(ErrorCode.NONE), errors)

    # --- produce -------------------------------------------------------------------------

    def _partition_or_error(self, tp: TopicPartition) -> Partition:
        p = self.partitions.get(tp)
        if p is None:
            raise UnknownTopicOrPartitionError(f"this broker has no replica of {tp}")
        return p

    async def append_records(
        self,
        required_acks: int,
        timeout_ms: int,
        entries: Mapping[TopicPartition, bytes | bytearray | memoryview | None],
    ) -> dict[TopicPartition, ProducePartitionResponse]:
        if required_acks not in (-1, 0, 1):
            raise InvalidRequiredAcksError(f"acks must be -1, 0 or 1, got {required_acks}")
        results: dict[TopicPartition, ProducePartitionResponse] = {}
        # (partition, offset the HW must reach, its leadership_losses at append time)
        waiting: dict[TopicPartition, tuple[Partition, int, int]] = {}
        for tp, records in entries.items():
            try:
                p = self._partition_or_error(tp)
                if records is None:
                    raise KafkaError("no records")
                info = p.append_records_to_leader(
                    records, required_acks, p.log.config.min_insync_replicas
                )
            except KafkaError as e:
                self.topic_stats.record_failed_produce(tp.topic)
                results[tp] = ProducePartitionResponse(
                    tp.partition,
                    int(e.code),
                    -1,
                    -1,
                    e.message,
                    [RecordError(i, why) for i, why in e.record_errors]
                    if isinstance(e, RecordValidationError)
                    else [],
                )
                continue
            except OSError as e:
                self.topic_stats.record_failed_produce(tp.topic)
                err = KafkaStorageError(f"append to {tp} failed: {e}")
                results[tp] = ProducePartitionResponse(tp.partition, int(err.code), -1, -1, str(e))
                continue
            self.topic_stats.record_produce(tp.topic, info.num_records, info.valid_bytes)
            self.purgatory.notify(tp)  # new data for waiting fetches
            results[tp] = ProducePartitionResponse(
                tp.partition,
                int(ErrorCode.NONE),
                info.first_offset,
                p.log.log_start_offset,
                log_append_time=info.max_timestamp if p.log.config.log_append_time else -1,
            )
            if required_acks == -1:
                waiting[tp] = (p, info.last_offset + 1, p.leadership_losses)
        if waiting:
            await self._await_replication(waiting, timeout_ms, results)
        return results

    async def _await_replication(
        self,
        waiting: dict[TopicPartition, tuple[Partition, int, int]],
        timeout_ms: int,
        results: dict[TopicPartition, ProducePartitionResponse],
    ) -> None:
        """DelayedProduce (§6): done when each partition's HW reached its last offset + 1,
        or it lost leadership; REQUEST_TIMED_OUT for the rest at the deadline."""

        def settled(tp: TopicPartition) -> bool:
            p, required, losses = waiting[tp]
            return (
                not p.is_leader
                or p.leadership_losses != losses
                or self.partitions.get(tp) is not p
                or p.high_watermark >= required
            )

        await self.purgatory.wait_until(
            waiting, lambda: all(settled(tp) for tp in waiting), timeout_ms / 1000
        )
        for tp, (p, required, losses) in waiting.items():
            base = results[tp]
            error: KafkaError | None = None
            if self.partitions.get(tp) is not p or not p.is_leader or p.leadership_losses != losses:
                error = NotLeaderOrFollowerError(f"leadership of {tp} changed while waiting")
            elif p.high_watermark >= required:
                min_isr = p.log.config.min_insync_replicas
                if len(p.isr) < min_isr:
                    error = NotEnoughReplicasAfterAppendError(
                        f"ISR of {tp} shrank to {sorted(p.isr)}, below min.insync.replicas "
                        f"{min_isr}, after the append"
                    )
            else:
                error = RequestTimedOutError(f"{tp}: not replicated within {timeout_ms} ms")
            if error is not None:
                results[tp] = ProducePartitionResponse(
                    tp.partition,
                    int(error.code),
                    base.base_offset,
                    base.log_start_offset,
                    error.message,
                )

    # --- fetch ---------------------------------------------------------------------------

    async def fetch_messages(
        self,
        req: FetchRequest,
        readable: Callable[[str], bool] | None = None,
        client: ClientMetadata | None = None,
    ) -> FetchResponse:
        """Fetch, through a KIP-227 fetch session when the request names one (see
        `fetch_session.py`): full requests read what they list, incremental ones only the
        session partitions that changed.

        `client`: a consumer's Fetch v11+ (see ClientMetadata): followers serve it, and the
        leader may answer it with a preferred read replica instead of records.

        `readable` (a consumer's fetch with an authorizer): whether the client may READ a
        topic. As Kafka's handleFetchRequest, every partition of the fetch (a full request's,
        or every partition of an incremental request's session, listed or not) of a topic it
        may not read is answered TOPIC_AUTHORIZATION_FAILED without being read, stays in the
        session, and neither ends nor holds up a long poll."""
        incremental = req.session_epoch not in (INITIAL_EPOCH, FINAL_EPOCH)
        fetch_data: dict[TopicPartition, PartitionData] = {}
        forgotten: list[TopicPartition] = []
        if incremental:
            fetch_data = {
                TopicPartition(t.name, p.partition): PartitionData(
                    p.fetch_offset,
                    p.partition_max_bytes,
                    p.current_leader_epoch,
                    p.log_start_offset,
                )
                for t in req.topics
                for p in t.partitions
            }
            forgotten = [
                TopicPartition(f.name, part) for f in req.forgotten_topics for part in f.partitions
            ]
        ctx = self.fetch_sessions.new_context(
            req.session_id,
            req.session_epoch,
            fetch_data,
            forgotten,
            privileged=req.replica_id >= 0,
            now_ms=self._clock.now_ms(),
        )
        if ctx.kind is ContextKind.SESSION_ERROR:
            return FetchResponse(int(ctx.error), [], INVALID_SESSION_ID)
        if ctx.kind is ContextKind.INCREMENTAL:
            return await self._fetch_incremental(req, ctx, readable, client)
        return await self._fetch_full(
            req, create_session=ctx.kind is ContextKind.FULL, readable=readable, client=client
        )

    async def _fetch_full(
        self,
        req: FetchRequest,
        *,
        create_session: bool,
        readable: Callable[[str], bool] | None = None,
        client: ClientMetadata | None = None,
    ) -> FetchResponse:
        denied: set[str] = (
            set() if readable is None else {t.name for t in req.topics if not readable(t.name)}
        )
        keys = [
            TopicPartition(t.name, p.partition)
            for t in req.topics
            if t.name not in denied
            for p in t.partitions
        ]
        # Responses without their data, and the file slices to fill them with: a delayed
        # fetch re-checks sizes each time a partition moves, but reads the bytes only once.
        responses: dict[TopicPartition, FetchPartitionResponse] = {}
        slices: dict[TopicPartition, LogSlice | None] = {}
        settled: dict[TopicPartition, bool] = {}

        def read_all(first_read: bool) -> int:
            total = 0
            budget = req.max_bytes
            for t in req.topics:
                for fp in t.partitions:
                    tp = TopicPartition(t.name, fp.partition)
                    if t.name in denied:
                        responses[tp], slices[tp], settled[tp] = _unauthorized(tp), None, False
                        continue
                    r, data, done = self._read_partition(
                        req.replica_id,
                        tp,
                        fp.fetch_offset,
                        fp.current_leader_epoch,
                        fp.log_start_offset,
                        min(budget, fp.partition_max_bytes),
                        min_one_batch=total == 0,
                        # Kafka updates a follower's fetch state once per fetch, when it
                        # arrives, not again when a delayed fetch re-reads.
                        update_follower_state=first_read,
                        client=client,
                    )
                    responses[tp], slices[tp], settled[tp] = r, data, done
                    size = 0 if data is None else data.size
                    total += size
                    budget = max(0, budget - size)
            return total

        def failed() -> bool:
            # An error, or a consumer sent to another replica: answered at once (Kafka's).
            return any(
                responses[tp].error_code != ErrorCode.NONE
                or responses[tp].preferred_read_replica >= 0
                for tp in keys
            )

        total = read_all(first_read=True)
        if req.max_wait_ms > 0 and total < req.min_bytes and not failed() and keys:
            # DelayedFetch: re-read when any of these partitions moves, until enough bytes.
            def enough() -> bool:
                n = read_all(first_read=False)
                return n >= req.min_bytes or failed()

            await self.purgatory.wait_until(keys, enough, req.max_wait_ms / 1000)
        session_id = INVALID_SESSION_ID
        if create_session:
            session_id = self._create_fetch_session(req, responses, slices, settled)
        by_topic: dict[str, list[FetchPartitionResponse]] = {}
        throttled_bytes = 0
        for t in req.topics:
            by_topic[t.name] = []
            for fp in t.partitions:
                tp = TopicPartition(t.name, fp.partition)
                r, data = responses[tp], slices[tp]
                if data is not None:
                    try:
                        # Sent with sendfile straight from the segment file (zero-copy).
                        r = replace(r, records=data.region())
                    except OSError as e:
                        # Out of descriptors, or the segment went since the read: this
                        # partition's part fails (the client fetches it again).
                        log.warning("%s: cannot send the records read: %s", tp, e)
                        r = replace(r, error_code=int(ErrorCode.KAFKA_STORAGE_ERROR), records=b"")
                        data = None
                    if data is not None and req.replica_id >= 0 and self._leader_throttles(tp):
                        throttled_bytes += data.size
                by_topic[t.name].append(r)
        self._record_leader_throttled(throttled_bytes)
        return FetchResponse(
            int(ErrorCode.NONE),
            [FetchTopicResponse(name, parts) for name, parts in by_topic.items()],
            session_id,
        )

    def _create_fetch_session(
        self,
        req: FetchRequest,
        responses: Mapping[TopicPartition, FetchPartitionResponse],
        slices: Mapping[TopicPartition, LogSlice | None],
        settled: Mapping[TopicPartition, bool],
    ) -> int:
        """Kafka's FullFetchContext: a session caching what this full fetch asked for and
        what its response carries; INVALID_SESSION_ID if there is no slot."""
        cached: dict[TopicPartition, CachedPartition] = {}
        for t in req.topics:
            for fp in t.partitions:
                tp = TopicPartition(t.name, fp.partition)
                cp = CachedPartition(
                    fp.fetch_offset,
                    fp.partition_max_bytes,
                    fp.current_leader_epoch,
                    fp.log_start_offset,
                )
                r, data = responses[tp], slices[tp]
                cp.maybe_update_response(
                    0 if data is None else data.size,
                    r.high_watermark,
                    r.log_start_offset,
                    r.error_code,
                    preferred_read_replica=r.preferred_read_replica,
                )
                cached[tp] = cp
        session = self.fetch_sessions.maybe_create_session(
            self._clock.now_ms(), req.replica_id >= 0, cached
        )
        if session is None:
            return INVALID_SESSION_ID
        for tp, cp in cached.items():
            # A partition that moved after its last read (between the delayed fetch's
            # completing check and now) notified no session yet: it is not settled, or
            # it would go idle with news its fetcher never got.
            done = settled[tp] and not self._moved_while_idle(
                tp, cp, req.replica_id, self._follower_state(tp, req.replica_id)
            )
            self._settle(session, req.replica_id, tp, done)
        return session.id

    def _follower_state(self, tp: TopicPartition, replica_id: int) -> FollowerState | None:
        p = self.partitions.get(tp)
        if p is None or replica_id < 0:
            return None
        return p.replica_state.followers.get(replica_id)

    def _settle(
        self,
        session: FetchSession[FollowerState | None],
        replica_id: int,
        tp: TopicPartition,
        done: bool,
    ) -> None:
        state = None
        if done and replica_id >= 0:
            state = self._follower_state(tp, replica_id)
            cp = session.partitions.get(tp)
            # A follower partition is idle only with a fetch state to refresh, one that
            # knows the follower is at its fetch offset: a read that did not update it (in a
            # delayed fetch's wait) after a reset (a new leader) leaves it dirty, so its next
            # fetch updates it; idle, its LEO would stay unknown and hold the HW back.
            done = state is not None and cp is not None and state.log_end_offset == cp.fetch_offset
        session.settle(tp, done, state)

    def _moved_while_idle(
        self, tp: TopicPartition, cp: CachedPartition, replica_id: int, state: object
    ) -> bool:
        """An idle session partition no longer matches what its fetcher was last told."""
        p = self.partitions.get(tp)
        if p is None or (replica_id != DEBUG_REPLICA_ID and not p.is_leader):
            return True
        lg = p.log
        if (
            lg.high_watermark != cp.high_watermark
            or lg.log_start_offset != cp.local_log_start_offset
            or cp.current_leader_epoch not in (NO_LEADER_EPOCH, p.leader_epoch)
        ):
            return True
        if replica_id < 0:
            return False
        follower = p.replica_state.followers.get(replica_id)
        return (
            lg.log_end_offset != cp.fetch_offset
            or follower is None
            or follower is not state
            or follower.log_end_offset != cp.fetch_offset
            or replica_id not in p.isr
        )

    async def _fetch_incremental(
        self,
        req: FetchRequest,
        ctx: FetchContext[FollowerState | None],
        readable: Callable[[str], bool] | None = None,
        client: ClientMetadata | None = None,
    ) -> FetchResponse:
        """Kafka's IncrementalFetchContext, reading only dirty session partitions.

        Idle partitions (a follower at the leader's LEO, nothing moved since) are not read:
        their follower fetch state is refreshed in one loop, so a caught-up follower stays
        caught up (lastCaughtUpTimeMs keeps advancing) without appearing on the wire. A
        long poll waits in the purgatory under the session's key, not under each partition:
        whatever moves a session partition (purgatory.notify) marks it dirty and has the
        request checked, which reads just that partition; it completes once min_bytes are
        there or a partition has an error, or at max_wait.
        Every partition in the response had something new (Kafka's rule): records, a HW
        or log start change, or an error.
        """
        session = ctx.session
        assert session is not None
        replica_id = req.replica_id
        now = self._clock.now_ms()
        for tp in session.due_for_check(now, self.fetch_sessions.check_ms):
            if self._moved_while_idle(tp, session.partitions[tp], replica_id, session.idle[tp]):
                session.mark_dirty(tp)  # a change that bypassed the purgatory: read it
        if replica_id >= 0 and session.idle:
            # Only follower states are idle in a follower's session (see _settle).
            refresh_idle_followers(cast(Iterable[FollowerState], session.idle.values()), now)
        reads: dict[TopicPartition, tuple[FetchPartitionResponse, LogSlice | None, bool]] = {}
        total = 0
        errors = False
        # Every session partition is authorized on every fetch (Kafka's), idle ones too.
        denied: set[TopicPartition] = (
            set()
            if readable is None
            else {tp for tp in session.partitions if not readable(tp.topic)}
        )

        def read(tps: list[TopicPartition], first_read: bool) -> None:
            nonlocal total, errors
            for tp in tps:
                cp = session.partitions.get(tp)
                if cp is None:
                    continue
                if tp in denied:
                    # Unsettled: dirty again next time, read once the topic is allowed.
                    reads[tp] = (_unauthorized(tp), None, False)
                    continue
                previous = reads.get(tp)
                if previous is not None and previous[1] is not None:
                    total -= previous[1].size
                r, data, done = self._read_partition(
                    replica_id,
                    tp,
                    cp.fetch_offset,
                    cp.current_leader_epoch,
                    cp.fetcher_log_start_offset,
                    min(max(0, req.max_bytes - total), cp.max_bytes),
                    min_one_batch=total == 0,
                    update_follower_state=first_read,
                    client=client,
                )
                reads[tp] = (r, data, done)
                if data is not None:
                    total += data.size
                if r.error_code != ErrorCode.NONE or r.preferred_read_replica >= 0:
                    errors = True  # answered at once

        read([*session.dirty, *(tp for tp in denied if tp not in session.dirty)], first_read=True)
        # Nothing the client may read: answered at once (Kafka does not wait then either).
        readable_left = not denied or len(denied) < len(session.partitions)
        if req.max_wait_ms > 0 and total < req.min_bytes and not errors and readable_left:
            # DelayedFetch, watching the session: whatever moves one of its partitions
            # (purgatory.notify, through the session cache's partition index) queues that
            # partition here and checks this fetch under the session's key, once the
            # notifying step is done; the check reads just the queued partitions.
            # Superseded by the next epoch, closed or shut down (tp None): done at once.
            moved: dict[TopicPartition, None] = {}
            released = False
            key = FetchSessionKey(session.id)

            def on_session_moved(tp: TopicPartition | None) -> None:
                nonlocal released
                if tp is None:
                    released = True
                else:
                    moved[tp] = None
                self.purgatory.check_and_complete(key)

            def read_moved() -> None:
                if moved:
                    batch = list(moved)
                    moved.clear()
                    read(batch, first_read=False)

            def complete() -> bool:
                read_moved()
                return released or total >= req.min_bytes or errors

            session.waiter = on_session_moved
            try:
                await self.purgatory.wait_until([key], complete, req.max_wait_ms / 1000)
            finally:
                if session.waiter is on_session_moved:
                    session.waiter = None
            if not self.fetch_sessions.is_current(session, ctx.expected_epoch):
                # Kafka: a later request moved the session on (a duplicate).
                return FetchResponse(int(ErrorCode.INVALID_FETCH_SESSION_EPOCH), [], session.id)
            # What moved after the check that completed this fetch and before it resumed:
            # read now, or a partition read before that could be settled idle with news.
            read_moved()
        by_topic: dict[str, list[FetchPartitionResponse]] = {}
        throttled_bytes = 0
        for tp, (r, data, done) in reads.items():
            cp = session.partitions.get(tp)
            if cp is None:
                continue
            include = cp.maybe_update_response(
                0 if data is None else data.size,
                r.high_watermark,
                r.log_start_offset,
                r.error_code,
                preferred_read_replica=r.preferred_read_replica,
            )
            self._settle(session, replica_id, tp, done)
            if include:
                if data is not None:
                    r = replace(r, records=data.region())  # zero-copy, as for full fetches
                    if replica_id >= 0 and self._leader_throttles(tp):
                        throttled_bytes += data.size
                by_topic.setdefault(tp.topic, []).append(r)
        self._record_leader_throttled(throttled_bytes)
        return FetchResponse(
            int(ErrorCode.NONE),
            [FetchTopicResponse(name, parts) for name, parts in by_topic.items()],
            session.id,
        )

    def _read_partition(
        self,
        replica_id: int,
        tp: TopicPartition,
        fetch_offset: int,
        current_leader_epoch: int,
        follower_log_start_offset: int,
        max_bytes: int,
        *,
        min_one_batch: bool,
        update_follower_state: bool,
        client: ClientMetadata | None = None,
    ) -> tuple[FetchPartitionResponse, LogSlice | None, bool]:
        """The partition's response with empty records, the slice that holds them, and
        whether the fetcher is settled: nothing more for it until the partition moves (at
        the end of what it may read, no error, and a follower already in the ISR).

        A consumer's fetch with client metadata (Fetch v11+) may read a follower (up to the
        HW the follower knows; past its log end OFFSET_OUT_OF_RANGE, and the consumer goes
        back to the leader), and the leader may answer it with a preferred read replica
        instead of records (Kafka's ReplicaManager.readFromLocalLog)."""
        consumer = replica_id == CONSUMER_REPLICA_ID
        try:
            p = self._partition_or_error(tp)
            if consumer and client is not None and p.is_leader:
                preferred = self._preferred_read_replica(p, client, fetch_offset)
                if preferred is not None:
                    # Kafka skips the read and sends the leader's offsets with the choice.
                    p.check_leader_epoch(current_leader_epoch)
                    response = FetchPartitionResponse(
                        tp.partition,
                        int(ErrorCode.NONE),
                        p.high_watermark,
                        p.log.log_start_offset,
                        p.log_end_offset,
                        b"",
                        preferred,
                    )
                    return response, None, False
            result = p.read_records(
                fetch_offset,
                max_bytes,
                current_leader_epoch,
                # Kafka's fetchOnlyFromLeader: followers' fetches, and consumers' without
                # client metadata; tools with the debugging replica id read any replica.
                fetch_only_from_leader=replica_id >= 0 or (consumer and client is None),
                up_to_high_watermark=replica_id == CONSUMER_REPLICA_ID,
                min_one_batch=min_one_batch,
            )
        except KafkaError as e:
            hw = lso = leo = -1
            known = self.partitions.get(tp)
            if known is not None and isinstance(e, OffsetOutOfRangeError):
                # The follower needs both ends to decide how to recover (§9).
                hw, lso, leo = (
                    known.high_watermark,
                    known.log.log_start_offset,
                    known.log_end_offset,
                )
            return (
                FetchPartitionResponse(tp.partition, int(e.code), hw, lso, leo, None),
                None,
                False,
            )
        if (
            replica_id >= 0
            and update_follower_state
            and p.update_follower_fetch_state(
                replica_id, fetch_offset, follower_log_start_offset, result.log_end_offset
            )
        ):
            # The HW moved (acks=all producers may be done) or the follower's log start did
            # (DeleteRecords waits for it).
            self.purgatory.notify(tp)
        if replica_id >= 0 and update_follower_state:
            self.maybe_expand_isr(p, replica_id)
        # The HW as of now: it may just have moved with this very fetch.
        response = FetchPartitionResponse(
            tp.partition,
            int(ErrorCode.NONE),
            p.high_watermark,
            p.log.log_start_offset,
            p.log_end_offset,
            b"",
        )
        if replica_id >= 0:
            in_sync = replica_id in p.isr
            settled = fetch_offset >= result.log_end_offset and in_sync
            if (
                result.info.slice is not None
                and self.leader_quota.bound < UNLIMITED_RATE
                and should_throttle(
                    self.leader_quota, p.log.config.leader_throttled, tp, self.broker_id, in_sync
                )
            ):
                # Kafka's shouldLeaderThrottle: an empty record set for now.
                return response, None, settled
        elif replica_id == CONSUMER_REPLICA_ID:
            settled = fetch_offset >= result.high_watermark
        else:
            settled = fetch_offset >= result.log_end_offset
        return response, result.info.slice, settled

    def _leader_throttles(self, tp: TopicPartition) -> bool:
        """Kafka's leader quota isThrottled: the topic lists this broker's replica of `tp`
        in leader.replication.throttled.replicas."""
        p = self.partitions.get(tp)
        return p is not None and p.log.config.leader_throttled.throttles(
            tp.partition, self.broker_id
        )

    def _record_leader_throttled(self, size: int) -> None:
        """Count what a replica fetch's answer carries for throttled replicas (Kafka's
        sizeOfThrottledPartitions), in sync or not, against the leader's quota."""
        if size:
            self.leader_quota.record(size)

    def _preferred_read_replica(
        self, p: Partition, client: ClientMetadata, fetch_offset: int
    ) -> int | None:
        """Kafka's findPreferredReadReplica, on the leader (replica.selector.class)."""
        selector = self.config.replica_selector_class
        if not selector or not client.rack_id:
            return None
        now = self._clock.now_ms()
        followers = [
            RemoteReplica(
                st.broker_id,
                st.log_start_offset,
                st.log_end_offset,
                now - st.last_caught_up_time_ms,
            )
            for st in p.replica_state.followers.values()
        ]
        return preferred_read_replica(
            selector, client.rack_id, fetch_offset, self.broker_id, followers, client.broker_racks
        )

    # --- offsets -------------------------------------------------------------------------

    def list_offsets(self, req: ListOffsetsRequest) -> ListOffsetsResponse:
        topics: list[ListOffsetsTopicResponse] = []
        for t in req.topics:
            parts: list[ListOffsetsPartitionResponse] = []
            for lp in t.partitions:
                tp = TopicPartition(t.name, lp.partition)
                try:
                    p = self._partition_or_error(tp)
                    if req.replica_id != DEBUG_REPLICA_ID and not p.is_leader:
                        raise NotLeaderOrFollowerError(f"not the leader of {tp}")
                    p.check_leader_epoch(lp.current_leader_epoch)
                    # KIP-207: a new leader whose HW has not reached the offset its epoch
                    # began at would answer a consumer a latest offset lower than the old
                    # leader's; it answers OFFSET_NOT_AVAILABLE (retriable) until it has.
                    epoch_start = p.replica_state.leader_epoch_start_offset
                    lagging: KafkaError | None = (
                        OffsetNotAvailableError(
                            f"the high watermark of {tp} ({p.high_watermark}) is below the "
                            f"start of leader epoch {p.leader_epoch} ({epoch_start})"
                        )
                        if req.replica_id == CONSUMER_REPLICA_ID
                        and p.is_leader
                        and epoch_start > p.high_watermark
                        else None
                    )
                    if lp.timestamp == EARLIEST_TIMESTAMP:
                        offset = p.log.log_start_offset
                    elif lp.timestamp == LATEST_TIMESTAMP:
                        if lagging is not None:
                            raise lagging
                        # Consumers see up to the HW; replicas and tools up to the LEO.
                        offset = (
                            p.high_watermark
                            if req.replica_id == CONSUMER_REPLICA_ID
                            else p.log_end_offset
                        )
                    else:
                        # By timestamp: among what this reader may see (consumers: below
                        # the HW); no such record is offset -1, timestamp -1 (Kafka's).
                        visible = (
                            p.high_watermark
                            if req.replica_id == CONSUMER_REPLICA_ID
                            else p.log_end_offset
                        )
                        found = (
                            p.log.offset_for_max_timestamp(visible)
                            if lp.timestamp == MAX_TIMESTAMP
                            else p.log.offset_for_timestamp(lp.timestamp, visible)
                        )
                        if found is None and lagging is not None:
                            raise lagging  # the record may be there once the HW catches up
                        offset, timestamp = found if found is not None else (-1, -1)
                        parts.append(
                            ListOffsetsPartitionResponse(
                                lp.partition, int(ErrorCode.NONE), offset, p.leader_epoch, timestamp
                            )
                        )
                        continue
                    parts.append(
                        ListOffsetsPartitionResponse(
                            lp.partition, int(ErrorCode.NONE), offset, p.leader_epoch
                        )
                    )
                except KafkaError as e:
                    parts.append(ListOffsetsPartitionResponse(lp.partition, int(e.code)))
            topics.append(ListOffsetsTopicResponse(t.name, parts))
        return ListOffsetsResponse(topics)

    def offsets_for_leader_epoch(
        self, req: OffsetForLeaderEpochRequest
    ) -> OffsetForLeaderEpochResponse:
        topics: list[OffsetForLeaderTopicResult] = []
        for t in req.topics:
            parts: list[EpochEndOffset] = []
            for op in t.partitions:
                tp = TopicPartition(t.name, op.partition)
                try:
                    p = self._partition_or_error(tp)
                    if not p.is_leader:
                        raise NotLeaderOrFollowerError(f"not the leader of {tp}")
                    p.check_leader_epoch(op.current_leader_epoch)
                    epoch, end = p.log.end_offset_for_epoch(op.leader_epoch)
                    parts.append(EpochEndOffset(op.partition, int(ErrorCode.NONE), epoch, end))
                except KafkaError as e:
                    parts.append(EpochEndOffset(op.partition, int(e.code), NO_LEADER_EPOCH, -1))
            topics.append(OffsetForLeaderTopicResult(t.name, parts))
        return OffsetForLeaderEpochResponse(topics)

    # --- DeleteRecords -------------------------------------------------------------------

    async def delete_records(
        self,
        timeout_ms: int,
        offsets: Mapping[TopicPartition, int],
        alive: Callable[[int], bool],
    ) -> dict[TopicPartition, tuple[int, int]]:
        """Kafka's deleteRecords: each partition's log start moves on its leader at once;
        the request then waits (DelayedDeleteRecords) until the low watermark, the lowest
        log start among the leader and its followers on live brokers (`alive`), reached
        the offset asked for: the followers learn the new start from their next fetch and
        report theirs in the one after. Per partition (error code, low watermark); those
        still short at `timeout_ms` are REQUEST_TIMED_OUT with the low watermark seen first."""
        results: dict[TopicPartition, tuple[int, int]] = {}
        waiting: dict[TopicPartition, tuple[Partition, int]] = {}
        for tp, offset in offsets.items():
            if tp.topic == OFFSETS_TOPIC:  # Kafka's only internal topic without transactions
                err: KafkaError = InvalidTopicError(
                    f"Cannot delete records of internal topic {tp.topic}"
                )
                results[tp] = (int(err.code), -1)
                continue
            try:
                p = self._partition_or_error(tp)
                requested = p.delete_records_on_leader(offset)
                low = p.low_watermark_if_leader(alive)
            except KafkaError as e:
                results[tp] = (int(e.code), -1)
                continue
            self.purgatory.notify(tp)  # followers' fetch sessions carry the new log start
            results[tp] = (int(ErrorCode.NONE), low)
            if low < requested:
                waiting[tp] = (p, requested)
        if not waiting:
            return results

        def reached(tp: TopicPartition) -> bool:
            p, requested = waiting[tp]
            if self.partitions.get(tp) is not p or not p.is_leader:
                return True  # answered NOT_LEADER_OR_FOLLOWER below
            return p.low_watermark_if_leader(alive) >= requested

        await self.purgatory.wait_until(
            waiting, lambda: all(reached(tp) for tp in waiting), timeout_ms / 1000
        )
        for tp, (p, requested) in waiting.items():
            if self.partitions.get(tp) is not p:
                results[tp] = (int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), -1)
            elif not p.is_leader:
                results[tp] = (int(ErrorCode.NOT_LEADER_OR_FOLLOWER), -1)
            elif (low := p.low_watermark_if_leader(alive)) >= requested:
                results[tp] = (int(ErrorCode.NONE), low)
            else:
                results[tp] = (int(ErrorCode.REQUEST_TIMED_OUT), results[tp][1])
        return results

    # --- DescribeLogDirs -----------------------------------------------------------------

    def describe_log_dirs(self, partitions: set[TopicPartition] | None) -> list[LogDirDescription]:
        """Kafka's describeLogDirs: every log dir of this broker with its replicas of
        `partitions` (None: all). The offset lag of a current (not future) log is Kafka's
        max(0, HW - LEO), which is 0 on a leader and on a follower alike (a follower's HW is
        capped by its LEO); future logs (AlterReplicaLogDirs) do not exist here."""
        out: list[LogDirDescription] = []
        for d, logs in self.log_manager.logs_by_dir().items():
            path = str(d.absolute())
            try:
                usage = shutil.disk_usage(d)
            except OSError as e:
                log.warning("Unable to describe replica dirs for %s: %s", path, e)
                out.append(LogDirDescription(path, int(ErrorCode.KAFKA_STORAGE_ERROR), []))
                continue
            replicas = [
                (tp, lg.size_in_bytes, max(0, lg.high_watermark - lg.log_end_offset))
                for tp, lg in sorted(logs.items())
                if partitions is None or tp in partitions
            ]
            out.append(
                LogDirDescription(path, int(ErrorCode.NONE), replicas, usage.total, usage.free)
            )
        return out

    # --- ISR changes, written by the leader itself (§7.3, §7.4, §8.5) ------------------

    def maybe_expand_isr(self, p: Partition, follower_id: int) -> None:
        if (
            self._isr_writer is None
            or not p.is_leader
            or p.isr_write_in_flight
            or not p.replica_state.can_join_isr(follower_id, p.high_watermark, set(p.isr))
        ):
            return
        log.info(
            "%s: expanding ISR from %s to %s (follower LEO %d, HW %d)",
            p.tp,
            list(p.isr),
            [*p.isr, follower_id],
            p.replica_state.followers[follower_id].log_end_offset,
            p.high_watermark,
        )
        task = asyncio.create_task(self._write_isr(p, (*p.isr, follower_id)))
        self._isr_tasks.add(task)
        task.add_done_callback(self._isr_tasks.discard)

    def fetch_connection_closed(self, replica_id: int) -> None:
        """A connection that carried follower `replica_id`'s fetches closed: unless it
        fetches again, it leaves the ISRs of the partitions it followed here after
        replica.lag.disconnected.max.ms (minikafka's own; Kafka waits for the controller
        to see the broker's ZooKeeper session expire)."""
        max_ms = self.config.replica_lag_disconnected_max_ms
        if max_ms < 0 or self._shut_down:
            return  # off, or this broker's own shutdown closed the connection
        self.fetch_connections_lost[replica_id] = self._clock.now_ms()
        log.info(
            "the fetch connection of follower %d closed; it leaves the ISRs it is in here "
            "unless it fetches again within %d ms",
            replica_id,
            max_ms,
        )
        loop = asyncio.get_running_loop()

        def check() -> None:
            self._disconnect_checks.discard(handle)
            task = asyncio.create_task(self.shrink_isrs())
            self._isr_tasks.add(task)
            task.add_done_callback(self._isr_tasks.discard)

        handle = loop.call_later(max_ms / 1000, check)
        self._disconnect_checks.add(handle)

    async def shrink_isrs(self) -> None:
        """The `isr-expiration` task (every replica.lag.time.max.ms / 2), and the check
        after a follower's fetch connection closed."""
        if self._isr_writer is None:
            return
        now = self._clock.now_ms()
        disconnected_max_ms = self.config.replica_lag_disconnected_max_ms
        for p in self.leader_partitions():
            if p.isr_write_in_flight:
                continue
            isr = set(p.isr)
            out = p.replica_state.out_of_sync_replicas(p.log_end_offset, isr, now)
            gone = p.replica_state.disconnected_replicas(
                isr, self.fetch_connections_lost, now, disconnected_max_ms
            )
            out |= gone
            if not out:
                continue
            if gone:
                p.replica_state.presume_gone(gone)
                log.info(
                    "%s: followers %s lost their fetch connection %d ms or more ago and "
                    "have not fetched since",
                    p.tp,
                    sorted(gone),
                    disconnected_max_ms,
                )
            log.info(
                "%s: shrinking ISR from %s to %s; leader LEO %d, HW %d; out of sync: %s",
                p.tp,
                list(p.isr),
                [r for r in p.isr if r not in out],
                p.log_end_offset,
                p.high_watermark,
                {r: p.replica_state.followers[r].log_end_offset for r in sorted(out)},
            )
            await self._write_isr(p, tuple(r for r in p.isr if r not in out))

    async def _write_isr(self, p: Partition, new_isr: tuple[int, ...]) -> None:
        assert self._isr_writer is not None
        epoch, expected = p.leader_epoch, p.zk_version
        new = LeaderAndIsr(self.broker_id, epoch, new_isr, p.controller_epoch, expected)
        p.isr_write_in_flight = True
        try:
            version = await self._isr_writer(p.tp, new, expected)
        except Exception as e:  # ZooKeeper unreachable: keep the old ISR, retry later
            log.warning("%s: ISR update to %s failed: %s", p.tp, list(new_isr), e)
            version = None
        finally:
            p.isr_write_in_flight = False
        if version is None:
            # The controller changed the state meanwhile; its LeaderAndIsr will follow.
            self.failed_isr_updates += 1
            log.warning(
                "%s: ISR not updated to %s, keeping %s (failed ISR updates: %d)",
                p.tp,
                list(new_isr),
                list(p.isr),
                self.failed_isr_updates,
            )
            return
        if self.partitions.get(p.tp) is not p or not p.is_leader or p.leader_epoch != epoch:
            return  # superseded by a newer LeaderAndIsr while we wrote
        if len(new_isr) < len(p.isr):
            self.isr_shrinks += 1
        else:
            self.isr_expands += 1
        p.update_isr(new_isr, version)
        self.purgatory.notify(p.tp)
        self.isr_propagation.record_change(p.tp, self._clock.now_ms())

    async def propagate_isr_changes(self) -> None:
        """The `isr-change-propagation` task: tell the controller via ZooKeeper."""
        tps = self.isr_propagation.take_if_due(self._clock.now_ms())
        if not tps or self._isr_change_notifier is None:
            return
        try:
            await self._isr_change_notifier(tps)
        except Exception as e:
            log.warning("ISR change notification failed: %s; will retry", e)
            self.isr_propagation.put_back(tps)

    # --- housekeeping --------------------------------------------------------------------

    def cleanup_logs(self) -> int:
        """The `log-retention` task. Retention moves log start offsets, which fetch sessions
        must report: partitions whose log start moved are marked as moved."""
        starts = {tp: p.log.log_start_offset for tp, p in self.partitions.items()}
        deleted = self.log_manager.cleanup_logs()
        if deleted:
            for tp, p in list(self.partitions.items()):
                if p.log.log_start_offset != starts.get(tp):
                    self.purgatory.notify(tp)
        return deleted

    def leader_partitions(self) -> list[Partition]:
        return [p for p in self.partitions.values() if p.is_leader]

    async def shutdown(self) -> None:
        self._shut_down = True
        for h in self._disconnect_checks:
            h.cancel()
        self._disconnect_checks.clear()
        for t in list(self._isr_tasks):
            t.cancel()
        if self.fetcher_manager is not None:
            await self.fetcher_manager.remove_partitions(set(self.partitions))
        # Wake every waiting request so it answers before the sockets close.
        self.purgatory.notify_all()
        self.fetch_sessions.wake_all()
