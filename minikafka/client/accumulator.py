"""The producer's record accumulator: records gather per partition into batches, which the
sender drains per leader when they are full, have lingered long enough, or a flush asks.

No I/O and no clock of its own: every decision takes `now_ms`, so tests drive it step by
step. At most one batch per partition is in flight (the partition is "muted" from drain
until its batch completes), which keeps records in order across retries without
idempotence; a retried batch goes back to the head of its queue.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field

from minikafka.client.errors import IllegalStateError, KafkaTimeoutError
from minikafka.common import TopicPartition
from minikafka.storage.record_batch import HEADER_SIZE, RecordBatchBuilder

# msgpack array header, offset/timestamp deltas, nil/bin headers: a generous upper bound.
RECORD_OVERHEAD = 32


def estimate_record_size(
    key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes]]
) -> int:
    size = RECORD_OVERHEAD + len(key or b"") + len(value or b"")
    for name, data in headers:
        size += len(name.encode()) + len(data) + 10
    return size


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where an acknowledged record went. `offset` is -1 with acks=0 (nobody answers)."""

    topic: str
    partition: int
    offset: int
    timestamp: int


class ProducerBatch:
    """Records for one partition that travel, and succeed or fail, together."""

    def __init__(self, tp: TopicPartition, created_ms: float) -> None:
        self.tp = tp
        self.created_ms = created_ms
        self.last_attempt_ms = created_ms
        self.attempts = 0
        self.last_error: BaseException | None = None  # of the last failed attempt
        self.estimated_size = 0
        self._builder = RecordBatchBuilder()
        self._records: list[tuple[asyncio.Future[RecordMetadata], int]] = []  # (future, ts)
        self._built: bytes | None = None
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def __repr__(self) -> str:
        return f"ProducerBatch({self.tp}, {len(self._records)} records)"

    @property
    def record_count(self) -> int:
        return len(self._records)

    @property
    def closed(self) -> bool:
        return self._built is not None

    def try_append(
        self,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes]],
        timestamp: int,
        size: int,
        batch_size: int,
    ) -> asyncio.Future[RecordMetadata] | None:
        """Append if the batch is open and has room (an empty batch takes any record)."""
        if self._built is not None or (self._records and self.estimated_size + size > batch_size):
            return None
        self._builder.append(value, key, timestamp, headers)
        fut: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
        self._records.append((fut, timestamp))
        self.estimated_size += size
        return fut

    def is_full(self, batch_size: int) -> bool:
        return self._built is not None or self.estimated_size >= batch_size

    def records(self) -> bytes:
        """Close the batch for appends and return its bytes (built once; base offset 0, the
        leader stamps the real one)."""
        if self._built is None:
            self._built = self._builder.build()
        return self._built

    def complete(self, base_offset: int) -> None:
        for i, (fut, ts) in enumerate(self._records):
            if not fut.done():
                offset = base_offset + i if base_offset >= 0 else -1
                fut.set_result(RecordMetadata(self.tp.topic, self.tp.partition, offset, ts))
        if not self.done.done():
            self.done.set_result(None)

    def fail(self, error: BaseException) -> None:
        for fut, _ in self._records:
            if not fut.done():
                fut.set_exception(error)
        if not self.done.done():
            self.done.set_result(None)


@dataclass(slots=True)
class ReadyCheck:
    ready_nodes: set[int] = field(default_factory=set)
    # How long until some batch may become sendable (linger, backoff or expiry); inf: never.
    next_check_ms: float = math.inf
    unknown_leader_topics: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class AppendResult:
    future: asyncio.Future[RecordMetadata] | None  # None: aborted for a new batch
    batch_is_full: bool
    new_batch_created: bool


class RecordAccumulator:
    def __init__(
        self,
        *,
        batch_size: int = 16384,
        linger_ms: float = 0,
        retry_backoff_ms: float = 100,
        delivery_timeout_ms: float = 120000,
    ) -> None:
        self.batch_size = batch_size
        self.linger_ms = linger_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.delivery_timeout_ms = delivery_timeout_ms
        self._batches: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._muted: set[TopicPartition] = set()
        self._incomplete: set[ProducerBatch] = set()
        self._flushes_in_progress = 0
        self._closed = False
        self._drain_index = 0
        self.buffered_bytes = 0

    # --- appending ----------------------------------------------------------------------

    def append(
        self,
        tp: TopicPartition,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes]],
        now_ms: float,
        *,
        abort_on_new_batch: bool = False,
    ) -> AppendResult:
        """Add a record to the partition's last batch, or to a new batch when it is full.

        With `abort_on_new_batch`, a record that would need a new batch is not appended (the
        sticky partitioner then picks another partition first, as KIP-480 does)."""
        if self._closed:
            raise IllegalStateError("Cannot perform operation after producer has been closed")
        size = estimate_record_size(key, value, headers)
        dq = self._batches.setdefault(tp, deque())
        if dq:
            last = dq[-1]
            fut = last.try_append(key, value, headers, timestamp, size, self.batch_size)
            if fut is not None:
                self.buffered_bytes += size
                return AppendResult(fut, len(dq) > 1 or last.is_full(self.batch_size), False)
        if abort_on_new_batch:
            return AppendResult(None, False, False)
        batch = ProducerBatch(tp, now_ms)
        fut = batch.try_append(key, value, headers, timestamp, size, self.batch_size)
        assert fut is not None  # an empty batch takes any record
        dq.append(batch)
        self._incomplete.add(batch)
        self.buffered_bytes += size
        return AppendResult(fut, len(dq) > 1 or batch.is_full(self.batch_size), True)

    # --- sending ------------------------------------------------------------------------

    def ready(self, leader_of: Callable[[TopicPartition], int | None], now_ms: float) -> ReadyCheck:
        """Which leaders have something to send now (Kafka's `RecordAccumulator.ready`).

        A leader is ready when any of its unmuted partitions holds a batch that is full,
        has lingered for linger.ms (retry.backoff.ms after a failed attempt), or must go
        now because of a flush or close.
        """
        check = ReadyCheck()
        for tp, dq in self._batches.items():
            if not dq:
                continue
            first = dq[0]
            # Delivery timeout counts for batches stuck behind an unknown leader too.
            check.next_check_ms = min(
                check.next_check_ms, first.created_ms + self.delivery_timeout_ms - now_ms
            )
            leader = leader_of(tp)
            if leader is None:
                check.unknown_leader_topics.add(tp.topic)
                continue
            if tp in self._muted or leader in check.ready_nodes:
                continue
            backing_off = (
                first.attempts > 0 and first.last_attempt_ms + self.retry_backoff_ms > now_ms
            )
            waited = now_ms - first.last_attempt_ms
            time_to_wait = self.retry_backoff_ms if backing_off else self.linger_ms
            sendable = (
                len(dq) > 1
                or first.is_full(self.batch_size)
                or waited >= time_to_wait
                or self._closed
                or self._flushes_in_progress > 0
            )
            if sendable and not backing_off:
                check.ready_nodes.add(leader)
            else:
                check.next_check_ms = min(check.next_check_ms, time_to_wait - waited)
        check.next_check_ms = max(check.next_check_ms, 0.0)
        return check

    def drain(
        self,
        leader_of: Callable[[TopicPartition], int | None],
        nodes: Collection[int],
        max_request_size: int,
        now_ms: float,
    ) -> dict[int, list[ProducerBatch]]:
        """Take the head batch of each unmuted partition led by one of `nodes`, up to
        max.request.size per node (the first batch always goes), and mute those partitions.
        The starting partition rotates so that none starves under the size limit."""
        out: dict[int, list[ProducerBatch]] = {}
        if not nodes:
            return out
        sizes: dict[int, int] = {}
        tps = list(self._batches)
        if not tps:
            return out
        start = self._drain_index % len(tps)
        self._drain_index += 1
        for tp in tps[start:] + tps[:start]:
            dq = self._batches[tp]
            if not dq or tp in self._muted:
                continue
            leader = leader_of(tp)
            if leader is None or leader not in nodes:
                continue
            first = dq[0]
            if first.attempts > 0 and first.last_attempt_ms + self.retry_backoff_ms > now_ms:
                continue
            size = first.estimated_size + HEADER_SIZE
            if leader in out and sizes[leader] + size > max_request_size:
                continue
            first.records()  # closes it for appends
            dq.popleft()
            self._muted.add(tp)
            out.setdefault(leader, []).append(first)
            sizes[leader] = sizes.get(leader, 0) + size
        return out

    def reenqueue(
        self, batch: ProducerBatch, now_ms: float, error: BaseException | None = None
    ) -> None:
        """A retriable failure: back to the head of its queue, after retry.backoff.ms."""
        batch.attempts += 1
        batch.last_attempt_ms = now_ms
        batch.last_error = error
        self._batches.setdefault(batch.tp, deque()).appendleft(batch)
        self._muted.discard(batch.tp)

    def complete(self, batch: ProducerBatch, base_offset: int) -> None:
        batch.complete(base_offset)
        self._deallocate(batch)

    def fail(self, batch: ProducerBatch, error: BaseException) -> None:
        batch.fail(error)
        self._deallocate(batch)

    def _deallocate(self, batch: ProducerBatch) -> None:
        """The batch is done for good: it no longer holds memory, nor its partition's turn."""
        if batch in self._incomplete:
            self._incomplete.discard(batch)
            self.buffered_bytes -= batch.estimated_size
        self._muted.discard(batch.tp)

    def expire_batches(self, now_ms: float) -> list[ProducerBatch]:
        """Fail queued (not in-flight) batches that are past delivery.timeout.ms."""
        expired: list[ProducerBatch] = []
        for tp, dq in self._batches.items():
            while dq and now_ms - dq[0].created_ms >= self.delivery_timeout_ms:
                batch = dq.popleft()
                last = f" (last error: {batch.last_error})" if batch.last_error else ""
                self.fail(
                    batch,
                    KafkaTimeoutError(
                        f"Expiring {batch.record_count} record(s) for {tp}: "
                        f"{int(now_ms - batch.created_ms)} ms has passed since batch creation"
                        + last
                    ),
                )
                expired.append(batch)
        return expired

    # --- flush and close ----------------------------------------------------------------

    def begin_flush(self) -> None:
        self._flushes_in_progress += 1

    def end_flush(self) -> None:
        self._flushes_in_progress -= 1

    @property
    def flush_in_progress(self) -> bool:
        return self._flushes_in_progress > 0

    def close(self) -> None:
        """No more appends; everything queued becomes sendable at once."""
        self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed

    def incomplete_batches(self) -> list[ProducerBatch]:
        return list(self._incomplete)

    def has_incomplete(self) -> bool:
        return bool(self._incomplete)

    def queued(self, tp: TopicPartition) -> Iterator[ProducerBatch]:
        return iter(self._batches.get(tp, ()))

    def is_muted(self, tp: TopicPartition) -> bool:
        return tp in self._muted

    def mute(self, tp: TopicPartition) -> None:
        self._muted.add(tp)

    def unmute(self, tp: TopicPartition) -> None:
        self._muted.discard(tp)

    def abort_undrained(self, error: BaseException) -> list[ProducerBatch]:
        """Fail every queued batch (a forced close); in-flight ones finish on their own."""
        aborted: list[ProducerBatch] = []
        for dq in self._batches.values():
            while dq:
                batch = dq.popleft()
                self.fail(batch, error)
                aborted.append(batch)
        return aborted
