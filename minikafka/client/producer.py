"""The async producer: Kafka's KafkaProducer with its record accumulator and sender.

`send()` picks a partition, appends the record to that partition's open batch and returns a
future at once; a sender task drains ready batches, one ProduceRequest per leader, and
completes the futures from the response. Up to max.in.flight.requests.per.connection
requests are in flight per broker, several batches of one partition among them unless that
limit is 1 (Kafka's guaranteeMessageOrder: then a partition has one batch in flight at a
time). Retriable failures (a moved leader, a lost connection, a timeout) refresh metadata
and put the batch back at the head of its queue until delivery.timeout.ms; others fail the
batch's futures with the broker's KafkaError.

Kafka's send() runs on the caller's thread and the Sender on its own. Here both share the
event loop, so once a batch becomes ready by size (a new batch opened, or one filled up)
the next send() yields to it first: the sender ships full batches while the caller keeps
appending, instead of after buffer.memory has filled. Otherwise send() does not suspend
while the topic's partitions are known and the buffer has room.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import math
import time
from collections.abc import Sequence
from types import TracebackType

from minikafka.client.accumulator import (
    RECORD_OVERHEAD,
    ProducerBatch,
    RecordAccumulator,
    RecordMetadata,
    estimate_record_size,
)
from minikafka.client.cluster import (
    DEFAULT_BOOTSTRAP,
    ClusterClient,
    is_invalid_metadata,
    now_ms,
)
from minikafka.client.config_names import accepts_kafka_config
from minikafka.client.errors import IllegalStateError, KafkaTimeoutError
from minikafka.client.metadata import ClusterMetadata
from minikafka.client.partitioner import DefaultPartitioner
from minikafka.common import TopicPartition
from minikafka.protocol.errors import (
    KafkaError,
    MessageTooLargeError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from minikafka.protocol.messages import (
    ProducePartition,
    ProduceRequest,
    ProduceResponse,
    ProduceTopic,
)
from minikafka.storage import compression

log = logging.getLogger(__name__)

BytesLike = bytes | bytearray | memoryview | str
_client_ids = itertools.count(1)
_NO_HEADERS: tuple[tuple[str, bytes], ...] = ()
_time_ns = time.time_ns
_monotonic = time.monotonic


def parse_acks(acks: int | str) -> int:
    """`all`, `-1`, `0`, `1` (or the ints) -> the wire value."""
    if isinstance(acks, str):
        text = acks.strip().lower()
        if text == "all":
            return -1
        try:
            acks = int(text)
        except ValueError:
            raise ValueError(f"acks must be all, -1, 0 or 1, not {acks!r}") from None
    if acks not in (-1, 0, 1):
        raise ValueError(f"acks must be all, -1, 0 or 1, not {acks!r}")
    return acks


def _as_bytes(data: BytesLike | None) -> bytes | None:
    if data is None or type(data) is bytes:
        return data
    if isinstance(data, str):
        return data.encode()
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    # bytes(12345) would be 12,345 NUL bytes: refuse what is not already bytes or text.
    raise TypeError(
        f"keys, values and header values must be bytes or str, not {type(data).__name__} "
        f"({data!r:.40}); serialize it first, e.g. json.dumps(value).encode()"
    )


class _TopicInfo:
    """What send() needs of a topic, computed once per metadata snapshot (snapshots are
    immutable, so `metadata is cluster.metadata` says the answers still hold)."""

    __slots__ = ("available", "metadata", "partition_set", "partitions", "tps")

    def __init__(
        self,
        metadata: ClusterMetadata,
        topic: str,
        partitions: tuple[int, ...],
        tps: dict[int, TopicPartition],
    ) -> None:
        self.metadata = metadata
        self.partitions = partitions
        self.available = metadata.available_partitions_for_topic(topic)
        self.partition_set = frozenset(partitions)
        self.tps = tps  # shared across snapshots: one TopicPartition object per partition

    def tp(self, topic: str, partition: int) -> TopicPartition:
        tp = self.tps.get(partition)
        if tp is None:
            tp = self.tps[partition] = TopicPartition(topic, partition)
        return tp


DEFAULT_DELIVERY_TIMEOUT_MS = 120000


def check_compression_type(value: str) -> int:
    """The codec id of a compression.type (none, gzip, snappy, lz4, zstd); ValueError if
    it names none of them."""
    return compression.codec_id(value.strip().lower())


class Producer:
    """Kafka's KafkaProducer (no idempotence, no transactions); config names as Kafka's."""

    @accepts_kafka_config("producer")
    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] = DEFAULT_BOOTSTRAP,
        *,
        acks: int | str = 1,
        batch_size: int = 16384,
        linger_ms: int = 0,
        retries: int = 2147483647,
        retry_backoff_ms: int = 100,
        delivery_timeout_ms: int | None = None,
        request_timeout_ms: int = 30000,
        max_in_flight_requests_per_connection: int = 5,
        max_request_size: int = 1048576,
        buffer_memory: int = 33554432,
        max_block_ms: int = 60000,
        metadata_max_age_ms: int = 300000,
        client_id: str | None = None,
        compression_type: str = "none",
        partitioner: DefaultPartitioner | None = None,
    ) -> None:
        codec = check_compression_type(compression_type)
        if delivery_timeout_ms is None:
            # Kafka's default (120 s), raised to linger.ms + request.timeout.ms when those
            # are raised and delivery.timeout.ms is not given (as KafkaProducer does).
            delivery_timeout_ms = max(DEFAULT_DELIVERY_TIMEOUT_MS, linger_ms + request_timeout_ms)
        if delivery_timeout_ms < linger_ms + request_timeout_ms:
            # Kafka's ConfigException: otherwise a batch could expire before its first try.
            raise ValueError(
                "delivery.timeout.ms should be equal to or larger than "
                "linger.ms + request.timeout.ms"
            )
        if batch_size < 0 or linger_ms < 0 or retries < 0 or max_request_size <= 0:
            raise ValueError("batch.size, linger.ms and retries must not be negative")
        self.acks = parse_acks(acks)
        self.client_id = client_id or f"producer-{next(_client_ids)}"
        self._retries = retries
        self._request_timeout_ms = request_timeout_ms
        self._delivery_timeout_ms = delivery_timeout_ms
        self._max_request_size = max_request_size
        self._buffer_memory = buffer_memory
        self._max_record_size = min(max_request_size, buffer_memory)
        self._max_block_ms = max_block_ms
        self._cluster = ClusterClient(
            bootstrap_servers,
            client_id=self.client_id,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            metadata_max_age_ms=metadata_max_age_ms,
            max_in_flight_requests_per_connection=max_in_flight_requests_per_connection,
            allow_auto_topic_creation=True,  # Kafka's producer always asks
        )
        self._max_in_flight = max_in_flight_requests_per_connection
        self._accumulator = RecordAccumulator(
            batch_size=batch_size,
            linger_ms=linger_ms,
            retry_backoff_ms=retry_backoff_ms,
            delivery_timeout_ms=delivery_timeout_ms,
            guarantee_message_order=max_in_flight_requests_per_connection == 1,
            buffer_memory=buffer_memory,
            codec=codec,
        )
        self._partitioner = partitioner or DefaultPartitioner()
        self._topic_info: dict[str, _TopicInfo] = {}
        self._sender: asyncio.Task[None] | None = None
        self._in_flight: set[asyncio.Task[None]] = set()
        self._node_in_flight: dict[int, int] = {}  # produce requests in flight per broker
        self._awaiting_metadata: set[TopicPartition] = set()
        self._wakeup: asyncio.Event | None = None
        self._yield_due = False  # the next send() first yields to the loop
        self._space: asyncio.Event | None = None
        self._closed = False
        self._forced_close = False
        self._sender_error: BaseException | None = None

    @property
    def cluster(self) -> ClusterClient:
        return self._cluster

    @property
    def accumulator(self) -> RecordAccumulator:
        return self._accumulator

    async def __aenter__(self) -> Producer:
        self._start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _start(self) -> None:
        if self._sender is not None:
            return
        self._wakeup = asyncio.Event()
        self._space = asyncio.Event()
        self._cluster.add_listener(self._on_metadata_attempt)
        self._sender = asyncio.get_running_loop().create_task(
            self._run_sender(), name=f"{self.client_id}-sender"
        )

    def _on_metadata_attempt(self) -> None:
        for tp in self._awaiting_metadata:
            self._accumulator.unmute(tp)
        self._awaiting_metadata.clear()
        self._wake()

    def _wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError("Cannot perform operation after producer has been closed")
        if self._sender_error is not None:
            raise IllegalStateError(f"the producer's sender failed: {self._sender_error}")

    # --- sending ------------------------------------------------------------------------

    async def send(
        self,
        topic: str,
        value: BytesLike | None = None,
        key: BytesLike | None = None,
        partition: int | None = None,
        headers: Sequence[tuple[str, BytesLike]] | None = None,
        timestamp_ms: int | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Queue a record; returns (once queued) a future for its RecordMetadata.

        Waits at most max.block.ms for the topic's metadata and for buffer space. Failures,
        that one included, come back as the future's KafkaError, never raised here (except
        IllegalStateError after close, ValueError for bad arguments, and TypeError for a key,
        value or header value that is neither bytes nor str).
        """
        if self._yield_due:
            # The previous send made a batch ready: let the sender ship it now (the turn a
            # thread switch would give Kafka's Sender). Before appending, so that a caller
            # cancelled here has queued nothing.
            self._yield_due = False
            await asyncio.sleep(0)
        if self._closed or self._sender_error is not None:
            self._check_open()
        if self._sender is None:
            self._start()
        key_b = key if key is None or type(key) is bytes else _as_bytes(key)
        value_b = value if value is None or type(value) is bytes else _as_bytes(value)
        hdrs: Sequence[tuple[str, bytes]] = (
            [(str(k), _as_bytes(v) or b"") for k, v in headers] if headers else _NO_HEADERS
        )
        timestamp = _time_ns() // 1_000_000 if timestamp_ms is None else timestamp_ms
        try:
            appended = self._append_now(topic, key_b, value_b, partition, hdrs, timestamp)
            if appended is None:
                appended = await self._append_after_waiting(
                    topic, key_b, value_b, partition, hdrs, timestamp
                )
        except KafkaError as e:
            failed: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
            failed.set_exception(e)
            return failed
        future, batch_ready = appended
        if batch_ready:  # a batch became sendable by size: Kafka's sender.wakeup()
            self._wake()
            self._yield_due = True
        return future

    async def send_and_wait(
        self,
        topic: str,
        value: BytesLike | None = None,
        key: BytesLike | None = None,
        partition: int | None = None,
        headers: Sequence[tuple[str, BytesLike]] | None = None,
        timestamp_ms: int | None = None,
    ) -> RecordMetadata:
        """Send and await the acknowledgement; raises the record's KafkaError."""
        fut = await self.send(topic, value, key, partition, headers, timestamp_ms)
        return await fut

    async def partitions_for(self, topic: str) -> list[int]:
        """The topic's partition ids (waits up to max.block.ms for its metadata)."""
        self._check_open()
        t = await self._cluster.wait_for_topic(topic, self._max_block_ms)
        return sorted(t.partitions)

    def _record_size(
        self, key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes]]
    ) -> int:
        """The record's estimated size; raises MessageTooLargeError if it can never fit."""
        if headers:
            size = estimate_record_size(key, value, headers)
        else:
            size = RECORD_OVERHEAD
            if key is not None:
                size += len(key)
            if value is not None:
                size += len(value)
        if size > self._max_record_size:
            self._too_large(size)
        return size

    def _too_large(self, size: int) -> None:
        """Raise MessageTooLargeError for a record of `size` bytes that can never fit."""
        if size > self._max_request_size:
            raise MessageTooLargeError(
                f"The message is {size} bytes when serialized which is larger than "
                f"{self._max_request_size}, which is the value of the max.request.size "
                "configuration."
            )
        if size > self._buffer_memory:
            raise MessageTooLargeError(
                f"The message is {size} bytes when serialized which is larger than the total "
                "memory buffer you have configured with the buffer.memory configuration."
            )

    def _known_topic(self, topic: str) -> _TopicInfo | None:
        """The topic's partitions per the current metadata (cached per snapshot), or None
        if it has none yet."""
        info = self._topic_info.get(topic)
        md = self._cluster.metadata
        if info is not None and info.metadata is md:
            return info
        partitions = md.partitions_for_topic(topic)
        if partitions is None:
            return None
        if info is None:
            self._cluster.add_topics([topic])
        info = _TopicInfo(md, topic, partitions, {} if info is None else info.tps)
        self._topic_info[topic] = info
        return info

    def _append_now(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        headers: Sequence[tuple[str, bytes]],
        timestamp: int,
    ) -> tuple[asyncio.Future[RecordMetadata], bool] | None:
        """Append without waiting, or None if send() must wait (metadata or buffer space).
        Raises MessageTooLargeError. (It runs for every record: kept lean.)"""
        size = self._record_size(key, value, headers)
        info = self._topic_info.get(topic)
        if info is None or info.metadata is not self._cluster.metadata:
            info = self._known_topic(topic)
            if info is None:
                return None
        if partition is not None and partition not in info.partition_set:
            return None
        if self._accumulator.buffered_bytes + size > self._buffer_memory:
            return None
        return self._append_to(info, topic, key, value, partition, headers, timestamp, size)

    async def _append_after_waiting(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        headers: Sequence[tuple[str, bytes]],
        timestamp: int,
    ) -> tuple[asyncio.Future[RecordMetadata], bool]:
        size = self._record_size(key, value, headers)
        deadline = now_ms() + self._max_block_ms
        info = await self._wait_on_metadata(topic, partition, deadline)
        await self._wait_for_space(size, deadline)
        self._check_open()
        info = self._known_topic(topic) or info
        return self._append_to(info, topic, key, value, partition, headers, timestamp, size)

    def _append_to(
        self,
        info: _TopicInfo,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        headers: Sequence[tuple[str, bytes]],
        timestamp: int,
        size: int,
    ) -> tuple[asyncio.Future[RecordMetadata], bool]:
        """Returns the record's future and whether a batch became ready by size."""
        if partition is None:
            p = self._partitioner.partition(topic, key, info.partitions, info.available)
        else:
            p = partition
        acc = self._accumulator
        now = _monotonic() * 1000.0
        result = acc.append(
            info.tps.get(p) or info.tp(topic, p),
            timestamp,
            key,
            value,
            headers,
            now,
            abort_on_new_batch=True,
            size=size,
        )
        if result.future is None:
            # The sticky partition's batch is full: stick to another partition (KIP-480).
            self._partitioner.on_new_batch(topic, info.partitions, info.available, p)
            if partition is None:
                p = self._partitioner.partition(topic, key, info.partitions, info.available)
            result = acc.append(info.tp(topic, p), timestamp, key, value, headers, now, size=size)
        assert result.future is not None
        return result.future, result.new_batch_created or result.batch_became_full

    async def _wait_on_metadata(
        self, topic: str, partition: int | None, deadline: float
    ) -> _TopicInfo:
        self._cluster.add_topics([topic])
        info = self._known_topic(topic)
        if info is None:
            await self._cluster.wait_for_topic(topic, max(deadline - now_ms(), 0))
            info = self._known_topic(topic)
            if info is None:  # gone again already
                raise UnknownTopicOrPartitionError(f"Topic {topic} not present in metadata.")
        # Perhaps partitions were added since our last look; as Kafka's waitOnMetadata, ask
        # again (each broker learns of new partitions a little later than the controller)
        # until max.block.ms runs out.
        while partition is not None and partition not in info.partition_set:
            if now_ms() >= deadline:
                raise KafkaTimeoutError(
                    f"Partition {partition} of topic {topic} with partition count "
                    f"{len(info.partitions)} is not present in metadata after "
                    f"{self._max_block_ms} ms."
                )
            with contextlib.suppress(KafkaError):
                await self._cluster.refresh_metadata()
            info = self._known_topic(topic) or info
            if partition not in info.partition_set:
                backoff_ms = min(self._cluster.retry_backoff_ms, max(deadline - now_ms(), 0))
                await asyncio.sleep(backoff_ms / 1000)
        return info

    async def _wait_for_space(self, size: int, deadline: float) -> None:
        """Block while buffer.memory is used up (Kafka's BufferPool), up to max.block.ms."""
        assert self._space is not None
        while self._accumulator.buffered_bytes + size > self._buffer_memory:
            self._space.clear()
            remaining = deadline - now_ms()
            if remaining <= 0:
                raise KafkaTimeoutError(
                    "Failed to allocate memory within the configured max blocking time "
                    f"{self._max_block_ms} ms."
                )
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining / 1000.0):
                    await self._space.wait()

    # --- the sender -----------------------------------------------------------------------

    async def _run_sender(self) -> None:
        assert self._wakeup is not None
        acc = self._accumulator
        try:
            while True:
                self._wakeup.clear()
                now = now_ms()
                if acc.expire_batches(now):
                    self._freed()
                md = self._cluster.metadata
                check = acc.ready(md.leader_for, now)
                if check.unknown_leader_topics or self._cluster.metadata_is_stale():
                    self._cluster.request_update()
                # Kafka's client.ready(node): fewer than max.in.flight requests outstanding.
                in_flight = self._node_in_flight
                nodes = [n for n in check.ready_nodes if in_flight.get(n, 0) < self._max_in_flight]
                drained = (
                    acc.drain(md.leader_for, nodes, self._max_request_size, now) if nodes else {}
                )
                for node, batches in drained.items():
                    in_flight[node] = in_flight.get(node, 0) + 1
                    task = asyncio.get_running_loop().create_task(self._produce(node, batches))
                    self._in_flight.add(task)
                    task.add_done_callback(functools.partial(self._request_done, node, batches))
                if acc.closed and not acc.has_incomplete():
                    return
                if drained:
                    # More may be sendable (the next batch of a partition, up to the
                    # in-flight limit): look again once these requests are on their way.
                    await asyncio.sleep(0)
                    continue
                timeout = None if math.isinf(check.next_check_ms) else check.next_check_ms / 1000
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout):
                        await self._wakeup.wait()
        except asyncio.CancelledError:
            raise
        except Exception as e:
            # A bug, not a broker failure: fail what is queued rather than hang flush().
            log.exception("producer %s: sender failed", self.client_id)
            self._sender_error = e
            acc.abort_undrained(KafkaError(f"the producer's sender failed: {e}"))
            self._freed()

    def _request_done(
        self, node: int, batches: list[ProducerBatch], task: asyncio.Task[None]
    ) -> None:
        """A produce request is over: free its in-flight slot and let the sender use it."""
        self._in_flight.discard(task)
        left = self._node_in_flight.get(node, 0) - 1
        if left > 0:
            self._node_in_flight[node] = left
        else:
            self._node_in_flight.pop(node, None)
        if task.cancelled():
            # Cancelled before it ran (a forced close): nobody else will fail its batches.
            for b in batches:
                if not b.done.done():
                    self._fail(b, KafkaTimeoutError("Producer is closed forcefully."))
        self._wake()

    async def _produce(self, node: int, batches: list[ProducerBatch]) -> None:
        by_topic: dict[str, list[ProducePartition]] = {}
        for b in batches:
            by_topic.setdefault(b.tp.topic, []).append(
                ProducePartition(b.tp.partition, b.records())
            )
        request = ProduceRequest(
            self.acks,
            self._request_timeout_ms,
            [ProduceTopic(name, parts) for name, parts in by_topic.items()],
        )
        try:
            if self.acks == 0:
                await self._cluster.send(node, request, expect_response=False)
                for b in batches:
                    self._complete(b, -1)  # nobody tells us the offset
                return
            response: ProduceResponse = await self._cluster.send(node, request)
        except asyncio.CancelledError:
            for b in batches:
                self._fail(b, KafkaTimeoutError("Producer is closed forcefully."))
            raise
        except KafkaError as e:
            for b in batches:
                self._on_error(b, e)
            return
        # (`_request_done` wakes the sender once this task is over.)
        results = {(t.name, p.partition): p for t in response.topics for p in t.partitions}
        for b in batches:
            r = results.get((b.tp.topic, b.tp.partition))
            if r is None:
                self._fail(b, KafkaError(f"the produce response has no result for {b.tp}"))
            elif r.error_code == 0:
                self._complete(b, r.base_offset)
            else:
                self._on_error(b, error_for_code(r.error_code, r.error_message or ""))

    def _on_error(self, batch: ProducerBatch, error: KafkaError) -> None:
        now = now_ms()
        if is_invalid_metadata(error):
            self._cluster.request_update()
        can_retry = (
            error.retriable
            and batch.attempts < self._retries
            and now - batch.created_ms < self._delivery_timeout_ms
            and not self._forced_close
        )
        if can_retry:
            log.warning(
                "Got error produce response on topic-partition %s, retrying (%d attempts "
                "left). Error: %s",
                batch.tp,
                self._retries - batch.attempts - 1,
                error,
            )
            self._accumulator.reenqueue(batch, now, error)
            if is_invalid_metadata(error):
                # Retrying before the refresh lands would only ask the same broker again.
                self._accumulator.mute(batch.tp)
                self._awaiting_metadata.add(batch.tp)
        else:
            self._fail(batch, error)

    def _complete(self, batch: ProducerBatch, base_offset: int) -> None:
        self._accumulator.complete(batch, base_offset)
        self._freed()

    def _fail(self, batch: ProducerBatch, error: BaseException) -> None:
        self._accumulator.fail(batch, error)
        self._freed()

    def _freed(self) -> None:
        if self._space is not None:
            self._space.set()

    # --- flush and close ------------------------------------------------------------------

    async def flush(self) -> None:
        """Send everything queued now, ignoring linger.ms, and wait until each record has
        succeeded or failed (the futures say which)."""
        if self._sender is None:
            return
        acc = self._accumulator
        acc.begin_flush()
        self._wake()
        try:
            pending = [b.done for b in acc.incomplete_batches()]
            if pending:
                await asyncio.wait(pending)
        finally:
            acc.end_flush()

    async def close(self, timeout_ms: float | None = None) -> None:
        """Send what is queued and wait for it (at most `timeout_ms`, default forever, which
        delivery.timeout.ms bounds); then fail whatever is left and disconnect."""
        if self._closed:
            return
        self._closed = True
        self._accumulator.close()
        if self._sender is not None:
            self._wake()
            timeout = None if timeout_ms is None else timeout_ms / 1000.0
            done, _ = await asyncio.wait({self._sender}, timeout=timeout)
            if not done:
                self._forced_close = True
                self._accumulator.abort_undrained(
                    KafkaTimeoutError("Producer is closed forcefully.")
                )
                for task in list(self._in_flight):
                    task.cancel()
                self._sender.cancel()
            for task in [self._sender, *self._in_flight]:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        await self._cluster.close()
