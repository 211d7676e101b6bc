"""The group coordinator on a broker: the sans-IO core (coordinator/group) wired to the
event loop, the replica manager and the log.

- Appends go to the leader's replica of the offsets partition with acks=all and
  `offsets.commit.timeout.ms`, as Kafka's coordinator appends (a commit is acknowledged
  only once every in-sync replica has it).
- The core's deadlines (heartbeats, joins, syncs) run on one loop timer, re-armed after
  every call into the core.
- Leadership of an offsets partition (LeaderAndIsr) loads its groups from the log (read
  on the loop a chunk at a time, decoded in a worker thread); losing it (LeaderAndIsr as
  follower, StopReplica) unloads them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from minikafka.clock import Clock
from minikafka.common import TopicPartition
from minikafka.coordinator.group.group_coordinator import (
    GroupConfig,
    GroupCoordinator,
    JoinRequest,
    Record,
)
from minikafka.coordinator.group.group_metadata import JoinResult, SyncResult
from minikafka.coordinator.group.offsets_topic import OffsetCommitValue
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.rules.consumer_offsets import OFFSETS_TOPIC
from minikafka.storage.record_batch import build_batch, decode_records, iter_batches

if TYPE_CHECKING:
    from minikafka.replication.replica_manager import ReplicaManager

log = logging.getLogger(__name__)
T = TypeVar("T")

# Kafka's offsets.load.buffer.size: how much of the log one read brings in while loading.
LOAD_BUFFER_BYTES = 5 * 1024 * 1024
LOAD_RETRY_BACKOFF_S = 1.0


def decode_offsets_records(data: bytes, offset: int) -> tuple[list[Record], int]:
    """The keyed records at or after `offset` in `data` (whole batches of an offsets
    partition, in offset order), and the offset after the last batch (runs in a worker
    thread: pure, on bytes already read)."""
    out: list[Record] = []
    for pos, h in iter_batches(data):
        if h.last_offset >= offset and h.record_count > 0:
            for r in decode_records(data, pos):
                if r.offset >= offset and r.key is not None:
                    out.append((r.key, r.value))
        offset = max(offset, h.last_offset + 1)
    return out, offset


def _resolve(fut: asyncio.Future[T]) -> Callable[[T], None]:
    """A core callback that answers the request awaiting `fut` (once; a request whose
    connection went is cancelled, and its late answer dropped)."""

    def set_result(value: T) -> None:
        if not fut.done():
            fut.set_result(value)

    return set_result


class GroupCoordinatorAdapter:
    def __init__(
        self,
        config: GroupConfig,
        replica_manager: ReplicaManager,
        clock: Clock,
        *,
        commit_timeout_ms: int,
    ) -> None:
        self.rm = replica_manager
        self.clock = clock
        self.commit_timeout_ms = commit_timeout_ms
        self.core = GroupCoordinator(config, clock, self)
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline: int | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    # --- GroupStore ----------------------------------------------------------------------

    def append(
        self, partition: int, records: list[Record], done: Callable[[ErrorCode], None]
    ) -> None:
        self._spawn(self._append(partition, records, done))

    async def _append(
        self, partition: int, records: list[Record], done: Callable[[ErrorCode], None]
    ) -> None:
        tp = TopicPartition(OFFSETS_TOPIC, partition)
        batch = build_batch(
            [v for _, v in records], keys=[k for k, _ in records], timestamp=self.clock.now_ms()
        )
        try:
            results = await self.rm.append_records(-1, self.commit_timeout_ms, {tp: batch})
            code = ErrorCode(results[tp].error_code)
        except KafkaError as e:
            code = e.code
        except Exception:
            log.exception("appending to %s failed", tp)
            code = ErrorCode.UNKNOWN_SERVER_ERROR
        done(code)
        self._rearm()

    # --- timers ------------------------------------------------------------------------

    def _rearm(self) -> None:
        deadline = self.core.next_deadline()
        if deadline == self._timer_deadline:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_deadline = deadline
        if deadline is not None:
            delay = max(0.0, (deadline - self.clock.now_ms()) / 1000)
            self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_deadline = None
        self.core.expire()
        self._rearm()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- requests ----------------------------------------------------------------------

    async def join_group(self, req: JoinRequest) -> JoinResult:
        fut: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        self.core.join_group(req, _resolve(fut))
        self._rearm()
        return await fut

    async def sync_group(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Mapping[str, bytes],
    ) -> SyncResult:
        fut: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        self.core.sync_group(
            group_id,
            generation,
            member_id,
            group_instance_id,
            protocol_type,
            protocol_name,
            assignments,
            _resolve(fut),
        )
        self._rearm()
        return await fut

    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation: int
    ) -> ErrorCode:
        error = self.core.heartbeat(group_id, member_id, group_instance_id, generation)
        self._rearm()
        return error

    def leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        result = self.core.leave_group(group_id, leaving)
        self._rearm()
        return result

    async def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation: int,
        offsets: Mapping[TopicPartition, OffsetCommitValue],
    ) -> dict[TopicPartition, ErrorCode]:
        fut: asyncio.Future[dict[TopicPartition, ErrorCode]] = (
            asyncio.get_running_loop().create_future()
        )
        self.core.commit_offsets(
            group_id,
            member_id,
            group_instance_id,
            generation,
            offsets,
            _resolve(fut),
        )
        self._rearm()
        return await fut

    async def delete_offsets(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        fut: asyncio.Future[tuple[ErrorCode, dict[TopicPartition, ErrorCode]]] = (
            asyncio.get_running_loop().create_future()
        )
        self.core.delete_offsets(group_id, partitions, lambda e, r: _resolve(fut)((e, r)))
        return await fut

    async def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        fut: asyncio.Future[dict[str, ErrorCode]] = asyncio.get_running_loop().create_future()
        self.core.delete_groups(group_ids, _resolve(fut))
        self._rearm()
        return await fut

    def expire_offsets(self) -> int:
        n = self.core.expire_offsets()
        if n:
            log.info("expired %d committed offsets", n)
        return n

    # --- leadership of __consumer_offsets ----------------------------------------------

    def on_leadership_change(self, became_leader: Mapping[int, int], resigned: list[int]) -> None:
        """`became_leader`: offsets partition -> leader epoch now led here; `resigned`:
        offsets partitions no longer led here."""
        for partition in resigned:
            if partition in self.core.owned or partition in self.core.loading:
                log.info("%s-%d: unloading its groups", OFFSETS_TOPIC, partition)
            self.core.unload_partition(partition)
        for partition, epoch in became_leader.items():
            if self.core.loading.get(partition) == epoch or self.core.owned.get(partition) == epoch:
                continue
            self.core.begin_loading(partition, epoch)
            self._spawn(self._load(partition, epoch))
        self._rearm()

    async def _load(self, partition: int, epoch: int) -> None:
        """Read the partition's log to its end and hand its records to the core. The log
        is read on the loop (a chunk at a time: the cleaner and retention change its
        segments there) and decoded in a worker thread. A failed load is tried again
        while the partition is still ours to load."""
        tp = TopicPartition(OFFSETS_TOPIC, partition)
        loop = asyncio.get_running_loop()
        while self.core.loading.get(partition) == epoch:
            p = self.rm.partitions.get(tp)
            if p is None:
                return
            lg = p.log
            records: list[Record] = []
            try:
                offset, end = lg.log_start_offset, lg.log_end_offset
                while offset < end:
                    data = lg.read(offset, LOAD_BUFFER_BYTES, end).read()
                    if not data:
                        break
                    chunk, offset = await loop.run_in_executor(
                        self.rm.log_manager.io_executor, decode_offsets_records, data, offset
                    )
                    records += chunk
                    if self.core.loading.get(partition) != epoch:
                        return
            except Exception:
                log.exception("%s: loading its groups failed; trying again", tp)
                await asyncio.sleep(LOAD_RETRY_BACKOFF_S)
                continue
            if self.core.finish_loading(partition, epoch, records):
                groups = sum(1 for g in self.core.groups.values() if g.partition == partition)
                log.info(
                    "%s: loaded %d groups from %d records (leader epoch %d)",
                    tp,
                    groups,
                    len(records),
                    epoch,
                )
            self._rearm()
            return

    def shutdown(self) -> None:
        self.core.shutdown()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for task in self._tasks:
            task.cancel()
