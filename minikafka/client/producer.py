"""The async producer: Kafka's KafkaProducer with its record accumulator and sender.

`send()` picks a partition, appends the record to that partition's open batch and returns a
future at once; a sender task drains ready batches, one ProduceRequest per leader, and
completes the futures from the response. Retriable failures (a moved leader, a lost
connection, a timeout) refresh metadata and put the batch back at the head of its queue until
delivery.timeout.ms; others fail the batch's futures with the broker's KafkaError.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
from collections.abc import Sequence
from types import TracebackType

from minikafka.client.accumulator import (
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
    wall_clock_ms,
)
from minikafka.client.errors import IllegalStateError, KafkaTimeoutError
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

log = logging.getLogger(__name__)

BytesLike = bytes | bytearray | memoryview | str
_client_ids = itertools.count(1)


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
    if data is None:
        return None
    if isinstance(data, str):
        return data.encode()
    return bytes(data)


class Producer:
    """Kafka's KafkaProducer (no idempotence, no transactions); config names as Kafka's."""

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] = DEFAULT_BOOTSTRAP,
        *,
        acks: int | str = 1,
        batch_size: int = 16384,
        linger_ms: int = 0,
        retries: int = 2147483647,
        retry_backoff_ms: int = 100,
        delivery_timeout_ms: int = 120000,
        request_timeout_ms: int = 30000,
        max_in_flight_requests_per_connection: int = 5,
        max_request_size: int = 1048576,
        buffer_memory: int = 33554432,
        max_block_ms: int = 60000,
        metadata_max_age_ms: int = 300000,
        client_id: str | None = None,
        partitioner: DefaultPartitioner | None = None,
    ) -> None:
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
        self._max_block_ms = max_block_ms
        self._cluster = ClusterClient(
            bootstrap_servers,
            client_id=self.client_id,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            metadata_max_age_ms=metadata_max_age_ms,
            max_in_flight_requests_per_connection=max_in_flight_requests_per_connection,
        )
        self._accumulator = RecordAccumulator(
            batch_size=batch_size,
            linger_ms=linger_ms,
            retry_backoff_ms=retry_backoff_ms,
            delivery_timeout_ms=delivery_timeout_ms,
        )
        self._partitioner = partitioner or DefaultPartitioner()
        self._sender: asyncio.Task[None] | None = None
        self._in_flight: set[asyncio.Task[None]] = set()
        self._awaiting_metadata: set[TopicPartition] = set()
        self._wakeup: asyncio.Event | None = None
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
        IllegalStateError after close and ValueError for bad arguments).
        """
        self._check_open()
        self._start()
        key_b, value_b = _as_bytes(key), _as_bytes(value)
        hdrs = [(str(k), _as_bytes(v) or b"") for k, v in headers or ()]
        timestamp = wall_clock_ms() if timestamp_ms is None else timestamp_ms
        try:
            return await self._append(topic, key_b, value_b, partition, hdrs, timestamp)
        except KafkaError as e:
            failed: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
            failed.set_exception(e)
            return failed

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

    async def _append(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        headers: list[tuple[str, bytes]],
        timestamp: int,
    ) -> asyncio.Future[RecordMetadata]:
        size = estimate_record_size(key, value, headers)
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
        deadline = now_ms() + self._max_block_ms
        partitions = await self._wait_on_metadata(topic, partition, deadline)
        await self._wait_for_space(size, deadline)
        self._check_open()
        md = self._cluster.metadata
        available = md.available_partitions_for_topic(topic)
        p = self._choose(topic, key, partition, partitions, available)
        acc = self._accumulator
        result = acc.append(
            TopicPartition(topic, p),
            timestamp,
            key,
            value,
            headers,
            now_ms(),
            abort_on_new_batch=True,
        )
        if result.future is None:
            # The sticky partition's batch is full: stick to another partition (KIP-480).
            self._partitioner.on_new_batch(topic, partitions, available, p)
            p = self._choose(topic, key, partition, partitions, available)
            result = acc.append(TopicPartition(topic, p), timestamp, key, value, headers, now_ms())
        assert result.future is not None
        if result.batch_is_full or result.new_batch_created:
            self._wake()
        return result.future

    def _choose(
        self,
        topic: str,
        key: bytes | None,
        partition: int | None,
        partitions: Sequence[int],
        available: Sequence[int],
    ) -> int:
        if partition is not None:
            return partition
        return self._partitioner.partition(topic, key, partitions, available)

    async def _wait_on_metadata(
        self, topic: str, partition: int | None, deadline: float
    ) -> Sequence[int]:
        self._cluster.add_topics([topic])
        partitions = self._cluster.metadata.partitions_for_topic(topic)
        if partitions is None:
            await self._cluster.wait_for_topic(topic, max(deadline - now_ms(), 0))
            partitions = self._cluster.metadata.partitions_for_topic(topic) or ()
        if partition is not None and partition not in partitions:
            # Perhaps partitions were added since our last look.
            with contextlib.suppress(KafkaError):
                await self._cluster.refresh_metadata()
            partitions = self._cluster.metadata.partitions_for_topic(topic) or partitions
            if partition not in partitions:
                raise UnknownTopicOrPartitionError(
                    f"Partition {partition} of topic {topic} with partition count "
                    f"{len(partitions)} is not present in metadata."
                )
        return partitions

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
                drained = acc.drain(md.leader_for, check.ready_nodes, self._max_request_size, now)
                for node, batches in drained.items():
                    task = asyncio.get_running_loop().create_task(self._produce(node, batches))
                    self._in_flight.add(task)
                    task.add_done_callback(self._in_flight.discard)
                if acc.closed and not acc.has_incomplete():
                    return
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
        finally:
            self._wake()
        results = {(t.name, p.partition): p for t in response.topics for p in t.partitions}
        for b in batches:
            r = results.get((b.tp.topic, b.tp.partition))
            if r is None:
                self._fail(b, KafkaError(f"the produce response has no result for {b.tp}"))
            elif r.error_code == 0:
                self._complete(b, r.base_offset)
            else:
                self._on_error(b, error_for_code(r.error_code, r.error_message or ""))
        self._wake()

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
