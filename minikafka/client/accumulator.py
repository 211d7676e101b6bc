"""The producer's record accumulator: records gather per partition into batches, which the
sender drains per leader when they are full, have lingered long enough, or a flush asks.

No I/O and no clock of its own: every decision takes `now_ms`, so tests drive it step by
step. As in Kafka, with `guarantee_message_order` (the producer's
max.in.flight.requests.per.connection = 1) a partition is "muted" from drain while one of
its batches is in flight, which keeps records in order across retries without idempotence;
otherwise several batches of a partition may be in flight at once (the producer bounds the
requests per connection), and a retry may reorder them, as Kafka documents. A retried batch
goes back to the head of its queue (Kafka's reenqueue) and waits retry.backoff.ms; the
batches behind it wait too.

Batches encode their records into buffers from a `BufferPool` (Kafka's), reused batch
after batch.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from minikafka.client.errors import IllegalStateError, KafkaTimeoutError
from minikafka.common import TopicPartition
from minikafka.storage import compression
from minikafka.storage.record_batch import HEADER_SIZE, RecordBatchBuilder, new_record_buffer

# A v2 record's length, attributes, timestamp and offset deltas, key/value lengths and
# header count (Kafka's DefaultRecord.MAX_RECORD_OVERHEAD is 21): a generous upper bound.
RECORD_OVERHEAD = 32


def estimate_record_size(
    key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes]]
) -> int:
    size = RECORD_OVERHEAD + len(key or b"") + len(value or b"")
    for name, data in headers:
        size += len(name.encode()) + len(data) + 10
    return size


class RecordMetadata(NamedTuple):
    """Where an acknowledged record went. `offset` is -1 with acks=0 (nobody answers).
    (A NamedTuple: one is built per acknowledged record, ~5x cheaper than a frozen
    dataclass.)"""

    topic: str
    partition: int
    offset: int
    timestamp: int


class BufferPool:
    """Kafka's BufferPool, for the buffers records are encoded into: a batch takes one when
    it opens and gives it back when it closes (its bytes are then built, so nothing refers
    to the buffer any more), and the next batch reuses it, allocation included.

    At most `max_free` buffers are kept; a buffer that grew past batch.size (a record larger
    than a batch) is dropped rather than kept, as Kafka frees buffers of odd sizes.
    buffer.memory itself is accounted for by the accumulator's `buffered_bytes`.
    """

    def __init__(self, batch_size: int, max_free: int) -> None:
        self.batch_size = batch_size
        self.max_free = max_free
        self._free: list[bytearray] = []
        self.allocated = 0  # buffers created (not taken from the free list)
        self.reused = 0  # buffers taken from the free list

    @property
    def free_count(self) -> int:
        return len(self._free)

    def allocate(self) -> bytearray:
        if self._free:
            self.reused += 1
            return self._free.pop()
        self.allocated += 1
        return new_record_buffer(self.batch_size)

    def deallocate(self, buffer: bytearray, used: int) -> None:
        """Take back a buffer that held `used` bytes (the next builder writes over them)."""
        if used <= self.batch_size and len(self._free) < self.max_free:
            self._free.append(buffer)


class ProducerBatch:
    """Records for one partition that travel, and succeed or fail, together."""

    __slots__ = (
        "_append_record",
        "_builder",
        "_built",
        "_futures",
        "_loop",
        "_pool",
        "_timestamps",
        "attempts",
        "codec",
        "created_ms",
        "done",
        "estimated_size",
        "last_attempt_ms",
        "last_error",
        "tp",
    )

    def __init__(
        self,
        tp: TopicPartition,
        created_ms: float,
        pool: BufferPool | None = None,
        codec: int = compression.NONE,
    ) -> None:
        self.tp = tp
        self.codec = codec
        self.created_ms = created_ms
        self.last_attempt_ms = created_ms
        self.attempts = 0
        self.last_error: BaseException | None = None  # of the last failed attempt
        self.estimated_size = 0
        self._pool = pool
        self._builder = RecordBatchBuilder(buffer=None if pool is None else pool.allocate())
        self._append_record = self._builder.append
        self._futures: list[asyncio.Future[RecordMetadata]] = []
        self._timestamps: list[int] = []
        self._built: bytes | None = None
        self._loop = asyncio.get_running_loop()
        self.done: asyncio.Future[None] = self._loop.create_future()

    def __repr__(self) -> str:
        return f"ProducerBatch({self.tp}, {len(self._futures)} records)"

    @property
    def record_count(self) -> int:
        return len(self._futures)

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
        if self._built is not None or (self._futures and self.estimated_size + size > batch_size):
            return None
        self._append_record(value, key, timestamp, headers)
        fut: asyncio.Future[RecordMetadata] = self._loop.create_future()
        self._futures.append(fut)
        self._timestamps.append(timestamp)
        self.estimated_size += size
        return fut

    def is_full(self, batch_size: int) -> bool:
        return self._built is not None or self.estimated_size >= batch_size

    def records(self) -> bytes:
        """Close the batch for appends and return its bytes (built once; base offset 0, the
        leader stamps the real one). The encoding buffer goes back to the pool."""
        if self._built is None:
            self._built = self._builder.build(self.codec)
            self._release_buffer(self._builder.size_in_bytes)
        return self._built

    def _release_buffer(self, used: int) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.deallocate(self._builder.release_buffer(), used)

    def complete(self, base_offset: int) -> None:
        topic, partition = self.tp.topic, self.tp.partition
        timestamps = self._timestamps
        for i, fut in enumerate(self._futures):
            if not fut.done():
                offset = base_offset + i if base_offset >= 0 else -1
                fut.set_result(RecordMetadata(topic, partition, offset, timestamps[i]))
        self._finish()

    def fail(self, error: BaseException) -> None:
        for fut in self._futures:
            if not fut.done():
                fut.set_exception(error)
        self._finish()

    def _finish(self) -> None:
        if self._built is None:  # failed before it was ever sent (expired, aborted)
            self._release_buffer(0)
        if not self.done.done():
            self.done.set_result(None)


@dataclass(slots=True)
class ReadyCheck:
    ready_nodes: set[int] = field(default_factory=set)
    # How long until some batch may become sendable (linger, backoff or expiry); inf: never.
    next_check_ms: float = math.inf
    unknown_leader_topics: set[str] = field(default_factory=set)


class AppendResult(NamedTuple):
    future: asyncio.Future[RecordMetadata] | None  # None: aborted for a new batch
    # Kafka's batchIsFull: the partition has a batch ready by size (its last batch is full,
    # or a full one waits ahead of it).
    batch_is_full: bool
    new_batch_created: bool
    # This record made the partition's open batch full: with new_batch_created, the moment
    # a batch becomes sendable by size (worth waking the sender for; later records only add
    # to the backlog).
    batch_became_full: bool = False


_new_tuple = tuple.__new__


class RecordAccumulator:
    def __init__(
        self,
        *,
        batch_size: int = 16384,
        linger_ms: float = 0,
        retry_backoff_ms: float = 100,
        delivery_timeout_ms: float = 120000,
        guarantee_message_order: bool = True,
        buffer_memory: int = 33554432,
        codec: int = compression.NONE,
    ) -> None:
        self.batch_size = batch_size
        self.codec = codec  # compression.type: each batch's records compressed when built
        self.linger_ms = linger_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.delivery_timeout_ms = delivery_timeout_ms
        self.guarantee_message_order = guarantee_message_order
        self.pool = BufferPool(batch_size, max(1, buffer_memory // max(batch_size, 1)))
        self._batches: dict[TopicPartition, deque[ProducerBatch]] = {}
        # Partitions with a batch in flight, and that batch (only with guarantee_message_order).
        self._in_flight_muted: dict[TopicPartition, ProducerBatch] = {}
        # Partitions the caller muted (the producer: until a metadata refresh).
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
        size: int | None = None,
    ) -> AppendResult:
        """Add a record to the partition's last batch, or to a new batch when it is full.

        With `abort_on_new_batch`, a record that would need a new batch is not appended (the
        sticky partitioner then picks another partition first, as KIP-480 does). `size` is
        the record's `estimate_record_size`, if the caller has it already."""
        if self._closed:
            raise IllegalStateError("Cannot perform operation after producer has been closed")
        if size is None:
            size = estimate_record_size(key, value, headers)
        batch_size = self.batch_size
        dq = self._batches.get(tp)
        if dq is None:
            dq = self._batches[tp] = deque()
        elif dq:
            last = dq[-1]
            fut = last.try_append(key, value, headers, timestamp, size, batch_size)
            if fut is not None:
                self.buffered_bytes += size
                filled = last.estimated_size
                became_full = filled >= batch_size and filled - size < batch_size
                # (tuple.__new__: the NamedTuple's own __new__ is Python; this runs per record)
                return _new_tuple(
                    AppendResult, (fut, len(dq) > 1 or filled >= batch_size, False, became_full)
                )
        if abort_on_new_batch:
            return AppendResult(None, False, False)
        batch = ProducerBatch(tp, now_ms, self.pool, self.codec)
        fut = batch.try_append(key, value, headers, timestamp, size, batch_size)
        assert fut is not None  # an empty batch takes any record
        dq.append(batch)
        self._incomplete.add(batch)
        self.buffered_bytes += size
        full = batch.is_full(batch_size)  # a record as large as a batch
        return AppendResult(fut, len(dq) > 1 or full, True, full)

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
            if tp in self._muted or tp in self._in_flight_muted or leader in check.ready_nodes:
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
        max.request.size per node (the first batch always goes); with
        guarantee_message_order, mute those partitions until their batch completes. One
        batch per partition per call, as in Kafka: the caller drains again for the next
        request. The starting partition rotates so that none starves under the size limit.
        """
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
            if not dq or tp in self._muted or tp in self._in_flight_muted:
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
            if self.guarantee_message_order:
                self._in_flight_muted[tp] = first
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
        self._unmute_in_flight(batch)

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
        self._unmute_in_flight(batch)

    def _unmute_in_flight(self, batch: ProducerBatch) -> None:
        if self._in_flight_muted.get(batch.tp) is batch:
            del self._in_flight_muted[batch.tp]

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
        """Muted by the caller, or (guarantee_message_order) while a batch is in flight."""
        return tp in self._muted or tp in self._in_flight_muted

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
