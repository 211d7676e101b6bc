"""The partitions this broker hosts, and the requests that act on them.

Controller requests (LeaderAndIsr, StopReplica) change roles under one lock, in arrival
order, fenced by the controller epoch and the broker epoch (DESIGN §8.8). Produce and fetch
go to the partition; requests that must wait (acks=all, long-polling fetches) wait in the
purgatory for the partition to move, not on a timer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from minikafka.clock import Clock
from minikafka.common import NO_LEADER, LeaderAndIsr, TopicPartition
from minikafka.protocol.errors import (
    ErrorCode,
    InvalidRequiredAcksError,
    KafkaError,
    KafkaStorageError,
    NotEnoughReplicasAfterAppendError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    RequestTimedOutError,
    StaleBrokerEpochError,
    StaleControllerEpochError,
    UnknownTopicOrPartitionError,
)
from minikafka.protocol.messages import (
    CONSUMER_REPLICA_ID,
    DEBUG_REPLICA_ID,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    NO_LEADER_EPOCH,
    BrokerNode,
    EpochEndOffset,
    FetchPartition,
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
    StopReplicaRequest,
    StopReplicaResponse,
)
from minikafka.replication.partition import Partition
from minikafka.replication.partition_state import IsrChangePropagation
from minikafka.replication.purgatory import Purgatory
from minikafka.server.config import BrokerConfig
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_manager import LogManager
from minikafka.storage.segment import LogSlice

log = logging.getLogger(__name__)

TopicConfigLoader = Callable[[list[str]], Awaitable[dict[str, LogConfig]]]
# (partition, new state, expected zk version) -> new zk version, or None if it moved on (§8.5)
IsrWriter = Callable[[TopicPartition, LeaderAndIsr, int], Awaitable[int | None]]
IsrChangeNotifier = Callable[[list[TopicPartition]], Awaitable[object]]


@dataclass(frozen=True)
class FollowerAssignment:
    """A partition this broker follows: whom to fetch from and in which leader epoch."""

    leader: BrokerNode
    leader_epoch: int


class FetcherManagerLike(Protocol):
    """What the replica manager needs from the replica fetchers (see `fetcher.py`)."""

    def add_partitions(self, partitions: Mapping[TopicPartition, FollowerAssignment]) -> None: ...

    async def remove_partitions(self, tps: set[TopicPartition]) -> None: ...


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
        self.fetcher_manager: FetcherManagerLike | None = None
        self._state_change_lock = asyncio.Lock()
        self._isr_writer = isr_writer
        self._isr_change_notifier = isr_change_notifier
        self.isr_propagation = IsrChangePropagation(
            config.isr_change_propagation_blackout_ms,
            config.isr_change_propagation_max_delay_ms,
            clock.now_ms(),
        )
        self.failed_isr_updates = 0  # Kafka's FailedIsrUpdatesPerSec, as a count
        self._isr_tasks: set[asyncio.Task[None]] = set()

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
            self.check_controller_request(req.controller_epoch, req.broker_epoch)
            self.controller_epoch = req.controller_epoch
            errors: list[PartitionError] = []
            to_lead: list[LeaderAndIsrPartitionState] = []
            to_follow: list[LeaderAndIsrPartitionState] = []
            for st in req.partition_states:
                tp = TopicPartition(st.topic, st.partition)
                current = self.partitions.get(tp)
                code = ErrorCode.NONE
                if self.broker_id not in st.replicas:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif current is not None and st.leader_epoch <= current.leader_epoch:
                    # Kafka ignores states that are not newer than what it has (§7.8).
                    log.info(
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
            new_tps = [
                TopicPartition(st.topic, st.partition)
                for st in to_lead + to_follow
                if TopicPartition(st.topic, st.partition) not in self.partitions
            ]
            configs = (
                await self._load_topic_configs(sorted({tp.topic for tp in new_tps}))
                if new_tps
                else {}
            )
            for tp in new_tps:
                self._create_partition(tp, configs.get(tp.topic))
            leaders = {b.node_id: b for b in req.live_leaders}
            await self._make_leaders(to_lead)
            await self._make_followers(to_follow, leaders)
            return LeaderAndIsrResponse(int(ErrorCode.NONE), errors)

    def _create_partition(self, tp: TopicPartition, config: LogConfig | None) -> Partition:
        lg = self.log_manager.get_or_create_log(tp, config)
        p = Partition(tp, self.broker_id, lg, self._clock, self.config.replica_lag_time_max_ms)
        self.partitions[tp] = p
        return p

    async def _make_leaders(self, states: list[LeaderAndIsrPartitionState]) -> None:
        if not states:
            return
        tps = {TopicPartition(st.topic, st.partition) for st in states}
        if self.fetcher_manager is not None:
            await self.fetcher_manager.remove_partitions(tps)
        for st in states:
            tp = TopicPartition(st.topic, st.partition)
            self.partitions[tp].make_leader(st)
            self.purgatory.notify(tp)

    async def _make_followers(
        self, states: list[LeaderAndIsrPartitionState], leaders: Mapping[int, BrokerNode]
    ) -> None:
        if not states:
            return
        tps = {TopicPartition(st.topic, st.partition) for st in states}
        if self.fetcher_manager is not None:
            await self.fetcher_manager.remove_partitions(tps)
        to_fetch: dict[TopicPartition, FollowerAssignment] = {}
        for st in states:
            tp = TopicPartition(st.topic, st.partition)
            self.partitions[tp].make_follower(st)
            # Waiting produce requests fail with NOT_LEADER_OR_FOLLOWER once woken.
            self.purgatory.notify(tp)
            node = leaders.get(st.leader)
            if st.leader == NO_LEADER or node is None:
                log.info("%s: no live leader to follow yet (leader %d)", tp, st.leader)
                continue
            to_fetch[tp] = FollowerAssignment(node, st.leader_epoch)
        if to_fetch and self.fetcher_manager is not None:
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
                results[tp] = ProducePartitionResponse(tp.partition, int(e.code), -1, -1, e.message)
                continue
            except OSError as e:
                err = KafkaStorageError(f"append to {tp} failed: {e}")
                results[tp] = ProducePartitionResponse(tp.partition, int(err.code), -1, -1, str(e))
                continue
            self.purgatory.notify(tp)  # new data for waiting fetches
            results[tp] = ProducePartitionResponse(
                tp.partition, int(ErrorCode.NONE), info.first_offset, p.log.log_start_offset
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

    async def fetch_messages(self, req: FetchRequest) -> FetchResponse:
        keys = [TopicPartition(t.name, p.partition) for t in req.topics for p in t.partitions]
        # Responses without their data, and the file slices to fill them with: a delayed
        # fetch re-checks sizes each time a partition moves, but reads the bytes only once.
        responses: dict[TopicPartition, FetchPartitionResponse] = {}
        slices: dict[TopicPartition, LogSlice | None] = {}

        def read_all(first_read: bool) -> int:
            total = 0
            budget = req.max_bytes
            for t in req.topics:
                for fp in t.partitions:
                    tp = TopicPartition(t.name, fp.partition)
                    r, data = self._read_partition(
                        req.replica_id,
                        tp,
                        fp,
                        min(budget, fp.partition_max_bytes),
                        min_one_batch=total == 0,
                        # Kafka updates a follower's fetch state once per fetch, when it
                        # arrives, not again when a delayed fetch re-reads.
                        update_follower_state=first_read,
                    )
                    responses[tp], slices[tp] = r, data
                    size = 0 if data is None else data.size
                    total += size
                    budget = max(0, budget - size)
            return total

        total = read_all(first_read=True)
        errors = any(r.error_code != ErrorCode.NONE for r in responses.values())
        if req.max_wait_ms > 0 and total < req.min_bytes and not errors and keys:
            # DelayedFetch: re-read when any of these partitions moves, until enough bytes.
            def enough() -> bool:
                n = read_all(first_read=False)
                return n >= req.min_bytes or any(
                    r.error_code != ErrorCode.NONE for r in responses.values()
                )

            await self.purgatory.wait_until(keys, enough, req.max_wait_ms / 1000)
        by_topic: dict[str, list[FetchPartitionResponse]] = {}
        for t in req.topics:
            by_topic[t.name] = []
            for fp in t.partitions:
                tp = TopicPartition(t.name, fp.partition)
                r, data = responses[tp], slices[tp]
                if data is not None:
                    # Sent with sendfile straight from the segment file (zero-copy).
                    r = replace(r, records=data.region())
                by_topic[t.name].append(r)
        return FetchResponse(
            int(ErrorCode.NONE),
            [FetchTopicResponse(name, parts) for name, parts in by_topic.items()],
        )

    def _read_partition(
        self,
        replica_id: int,
        tp: TopicPartition,
        fp: FetchPartition,
        max_bytes: int,
        *,
        min_one_batch: bool,
        update_follower_state: bool,
    ) -> tuple[FetchPartitionResponse, LogSlice | None]:
        """The partition's response with empty records, and the slice that holds them."""
        try:
            p = self._partition_or_error(tp)
            result = p.read_records(
                fp.fetch_offset,
                max_bytes,
                fp.current_leader_epoch,
                fetch_only_from_leader=replica_id != DEBUG_REPLICA_ID,
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
            return FetchPartitionResponse(tp.partition, int(e.code), hw, lso, leo, None), None
        if (
            replica_id >= 0
            and update_follower_state
            and p.update_follower_fetch_state(
                replica_id, fp.fetch_offset, fp.log_start_offset, result.log_end_offset
            )
        ):
            self.purgatory.notify(tp)  # the HW moved: acks=all producers may be done
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
        return response, result.info.slice

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
                    if lp.timestamp == EARLIEST_TIMESTAMP:
                        offset = p.log.log_start_offset
                    elif lp.timestamp == LATEST_TIMESTAMP:
                        # Consumers see up to the HW; replicas and tools up to the LEO.
                        offset = (
                            p.high_watermark
                            if req.replica_id == CONSUMER_REPLICA_ID
                            else p.log_end_offset
                        )
                    else:
                        raise KafkaError("timestamp lookups are not supported")
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

    async def shrink_isrs(self) -> None:
        """The `isr-expiration` task (every replica.lag.time.max.ms / 2)."""
        if self._isr_writer is None:
            return
        now = self._clock.now_ms()
        for p in self.leader_partitions():
            if p.isr_write_in_flight:
                continue
            out = p.replica_state.out_of_sync_replicas(p.log_end_offset, set(p.isr), now)
            if not out:
                continue
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

    def leader_partitions(self) -> list[Partition]:
        return [p for p in self.partitions.values() if p.is_leader]

    async def shutdown(self) -> None:
        for t in list(self._isr_tasks):
            t.cancel()
        if self.fetcher_manager is not None:
            await self.fetcher_manager.remove_partitions(set(self.partitions))
        # Wake every waiting request so it answers before the sockets close.
        self.purgatory.notify_all()
