"""The async consumer: manual assignment, positions, and Kafka's fetcher.

Each assigned partition has a position (the next offset to return) or a pending reset
(earliest / latest, resolved with ListOffsets at its leader). `poll()` sends one
FetchRequest per leader for the partitions that have a position and nothing buffered, and
returns buffered records; fetches stay in flight across polls, as Kafka's do. A response whose
fetch offset no longer matches the position (the user seeked meanwhile) is dropped.

Leader changes: NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH,
LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION and a lost connection refresh metadata and
back the partition off for retry.backoff.ms before it is fetched again, from the leader the
new metadata names. OFFSET_OUT_OF_RANGE resets the position per auto.offset.reset.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
from collections import deque
from collections.abc import Coroutine, Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal

from minikafka.client.cluster import DEFAULT_BOOTSTRAP, ClusterClient, is_invalid_metadata, now_ms
from minikafka.client.config_names import accepts_kafka_config
from minikafka.client.errors import IllegalStateError, KafkaTimeoutError, NoOffsetForPartitionError
from minikafka.common import TopicPartition
from minikafka.protocol.errors import (
    CorruptRecordError,
    ErrorCode,
    KafkaError,
    OffsetOutOfRangeError,
    error_for_code,
)
from minikafka.protocol.messages import (
    CONSUMER_REPLICA_ID,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    ListOffsetsPartition,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from minikafka.storage.record_batch import (
    LOG_OVERHEAD,
    InvalidBatchError,
    InvalidBatchReason,
    decode_records,
    peek_offset_and_size,
    validate_batch,
)

log = logging.getLogger(__name__)

OffsetResetStrategy = Literal["earliest", "latest", "none"]
_client_ids = itertools.count(1)

_TIMESTAMP_OF = {"earliest": EARLIEST_TIMESTAMP, "latest": LATEST_TIMESTAMP}


@dataclass(frozen=True, slots=True)
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    leader_epoch: int = -1  # partition leader epoch of the batch it came in

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(slots=True)
class _PartitionState:
    position: int | None = None
    reset: Literal["earliest", "latest"] | None = None  # an explicit seek_to_*, pending
    generation: int = 0  # bumped by every seek: stale ListOffsets answers are dropped
    next_attempt_ms: float = 0.0  # retry.backoff.ms after a failed fetch or reset
    high_watermark: int | None = None
    log_start_offset: int | None = None


@dataclass(slots=True)
class _CompletedFetch:
    tp: TopicPartition
    fetch_offset: int
    records: deque[ConsumerRecord]
    next_offset: int  # the position once all records are returned
    error: KafkaError | None = None  # raised once the records before it are returned
    position: int = -1  # the partition's position as far as this fetch is concerned

    def __post_init__(self) -> None:
        self.position = self.fetch_offset


def parse_fetched_records(
    tp: TopicPartition, data: bytes | bytearray | memoryview, fetch_offset: int
) -> tuple[list[ConsumerRecord], int, KafkaError | None]:
    """The records at or after `fetch_offset` in fetched bytes, the offset after the last
    complete batch, and the error that stopped parsing early, if any.

    A fetch is a byte range of the log, so it may end in a partial batch: that is ignored,
    and fetched again next time. The first batch may start below the fetch offset.
    """
    view = memoryview(data)
    n = len(view)
    pos = 0
    next_offset = fetch_offset
    out: list[ConsumerRecord] = []
    while n - pos >= LOG_OVERHEAD:
        _, size = peek_offset_and_size(view, pos)
        if size > n - pos:
            break
        try:
            header = validate_batch(view, pos, n)
            records = decode_records(view, pos) if header.next_offset > fetch_offset else []
        except InvalidBatchError as e:
            if e.reason is InvalidBatchReason.TRUNCATED:
                break
            return (
                out,
                next_offset,
                CorruptRecordError(
                    f"Received a corrupt record batch for partition {tp} at offset "
                    f"{next_offset}: {e}. If needed, seek past it to continue consumption."
                ),
            )
        for r in records:
            if r.offset >= fetch_offset:
                out.append(
                    ConsumerRecord(
                        tp.topic,
                        tp.partition,
                        r.offset,
                        r.timestamp,
                        r.key,
                        r.value,
                        r.headers,
                        header.partition_leader_epoch,
                    )
                )
        next_offset = max(next_offset, header.next_offset)
        pos += size
    if pos == 0 and n > 0:
        return (
            out,
            next_offset,
            KafkaError(
                f"Failed to make progress reading messages at {tp}={fetch_offset}: the fetch "
                "response is not empty but holds no complete record batch (a batch larger "
                "than max.partition.fetch.bytes?)"
            ),
        )
    return out, next_offset, None


class Consumer:
    """Kafka's KafkaConsumer with manual assignment only (no groups, no committed offsets)."""

    @accepts_kafka_config("consumer")
    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] = DEFAULT_BOOTSTRAP,
        *,
        auto_offset_reset: OffsetResetStrategy = "latest",
        fetch_min_bytes: int = 1,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 52428800,
        max_partition_fetch_bytes: int = 1048576,
        max_poll_records: int = 500,
        request_timeout_ms: int = 30000,
        retry_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300000,
        default_api_timeout_ms: int = 60000,
        client_id: str | None = None,
        allow_auto_create_topics: bool = True,
    ) -> None:
        if auto_offset_reset not in ("earliest", "latest", "none"):
            raise ValueError(
                f"auto.offset.reset must be earliest, latest or none, not {auto_offset_reset!r}"
            )
        if max_poll_records < 1:
            raise ValueError("max.poll.records must be at least 1")
        self.client_id = client_id or f"consumer-{next(_client_ids)}"
        self._auto_offset_reset: OffsetResetStrategy = auto_offset_reset
        self._fetch_min_bytes = fetch_min_bytes
        self._fetch_max_wait_ms = fetch_max_wait_ms
        self._fetch_max_bytes = fetch_max_bytes
        self._max_partition_fetch_bytes = max_partition_fetch_bytes
        self._max_poll_records = max_poll_records
        self._request_timeout_ms = request_timeout_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._default_api_timeout_ms = default_api_timeout_ms
        self._cluster = ClusterClient(
            bootstrap_servers,
            client_id=self.client_id,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            metadata_max_age_ms=metadata_max_age_ms,
            allow_auto_topic_creation=allow_auto_create_topics,
        )
        self._assignment: dict[TopicPartition, _PartitionState] = {}
        self._completed: deque[_CompletedFetch] = deque()
        self._fetching_nodes: set[int] = set()
        self._resetting: set[TopicPartition] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._pending_error: KafkaError | None = None
        self._wakeup = asyncio.Event()
        self._listening = False
        self._closed = False

    @property
    def cluster(self) -> ClusterClient:
        return self._cluster

    async def __aenter__(self) -> Consumer:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError("This consumer has already been closed.")

    def _state(self, tp: TopicPartition) -> _PartitionState:
        st = self._assignment.get(tp)
        if st is None:
            raise IllegalStateError(f"No current assignment for partition {tp}")
        return st

    # --- assignment and positions ------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Replace the assignment; partitions that stay keep their positions."""
        self._check_open()
        wanted = list(dict.fromkeys(partitions))
        self._assignment = {tp: self._assignment.get(tp) or _PartitionState() for tp in wanted}
        self._completed = deque(cf for cf in self._completed if cf.tp in self._assignment)
        self._cluster.add_topics(tp.topic for tp in wanted)
        self._wakeup.set()

    async def assign_topic(
        self, topic: str, timeout_ms: float | None = None
    ) -> list[TopicPartition]:
        """Assign all partitions of `topic` (replacing the assignment, like `assign`). Waits
        up to `timeout_ms` (default.api.timeout.ms) for the topic to appear in metadata."""
        partitions = await self.partitions_for(topic, timeout_ms)
        tps = [TopicPartition(topic, p) for p in partitions]
        self.assign(tps)
        return tps

    async def partitions_for(self, topic: str, timeout_ms: float | None = None) -> list[int]:
        self._check_open()
        timeout = self._default_api_timeout_ms if timeout_ms is None else timeout_ms
        t = await self._cluster.wait_for_topic(topic, timeout)
        return sorted(t.partitions)

    def assignment(self) -> set[TopicPartition]:
        return set(self._assignment)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Fetch from `offset` next (the next poll returns records from it)."""
        if offset < 0:
            raise ValueError(f"seek offset must not be negative: {offset}")
        st = self._state(tp)
        st.position, st.reset = offset, None
        st.generation += 1
        self._wakeup.set()

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        """Lazily (at the next poll or position) move to the log start offset; no
        partitions: all assigned ones."""
        self._seek_to("earliest", partitions)

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        """Lazily move to the end (the high watermark: the next offset to be committed)."""
        self._seek_to("latest", partitions)

    def _seek_to(
        self, strategy: Literal["earliest", "latest"], partitions: Sequence[TopicPartition]
    ) -> None:
        for tp in partitions or list(self._assignment):
            st = self._state(tp)
            st.position, st.reset = None, strategy
            st.generation += 1
        self._wakeup.set()

    async def position(self, tp: TopicPartition, timeout_ms: float | None = None) -> int:
        """The offset of the next record poll would return for `tp` (resolving a pending
        reset first; KafkaTimeoutError if that takes longer than `timeout_ms`)."""
        self._check_open()
        self._start()
        st = self._state(tp)
        timeout = self._default_api_timeout_ms if timeout_ms is None else timeout_ms
        deadline = now_ms() + timeout
        while st.position is None:
            self._wakeup.clear()
            self._raise_pending_error()
            next_retry = self._maybe_reset_positions()
            remaining = deadline - now_ms()
            if remaining <= 0:
                raise KafkaTimeoutError(
                    f"Timeout of {int(timeout)}ms expired before the position for partition "
                    f"{tp} could be determined"
                )
            await self._wait(min(remaining, next_retry))
            st = self._state(tp)
        return st.position

    def highwater(self, tp: TopicPartition) -> int | None:
        """The high watermark the last fetch of `tp` reported (None before any fetch)."""
        return self._state(tp).high_watermark

    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: float | None = None
    ) -> dict[TopicPartition, int]:
        return await self._list_offsets_blocking(partitions, EARLIEST_TIMESTAMP, timeout_ms)

    async def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: float | None = None
    ) -> dict[TopicPartition, int]:
        """The high watermark of each partition (what a consumer can read up to)."""
        return await self._list_offsets_blocking(partitions, LATEST_TIMESTAMP, timeout_ms)

    # --- poll -----------------------------------------------------------------------------

    async def poll(self, timeout_ms: float) -> list[ConsumerRecord]:
        """Records from the assigned partitions, waiting up to `timeout_ms` for some.

        Returns at most max.poll.records, in offset order per partition. Raises an error a
        fetch met once the records before it have been returned (e.g. OffsetOutOfRangeError
        with auto.offset.reset="none", CorruptRecordError).
        """
        self._check_open()
        if not self._assignment:
            raise IllegalStateError(
                "Consumer is not subscribed to any topics or assigned any partitions"
            )
        self._start()
        deadline = now_ms() + timeout_ms
        while True:
            self._wakeup.clear()
            records = self._drain_completed()
            if records:
                self._send_fetches()  # pipeline the next fetches while the caller works
                return records
            self._raise_pending_error()
            next_retry = min(self._maybe_reset_positions(), self._send_fetches())
            remaining = deadline - now_ms()
            if remaining <= 0:
                return []
            await self._wait(min(remaining, next_retry))

    async def _wait(self, timeout_ms: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(timeout_ms, 0) / 1000.0):
                await self._wakeup.wait()

    def _start(self) -> None:
        if not self._listening:
            self._cluster.add_listener(self._wakeup.set)
            self._listening = True

    def _raise_pending_error(self) -> None:
        if self._pending_error is not None:
            error, self._pending_error = self._pending_error, None
            raise error

    def _drain_completed(self) -> list[ConsumerRecord]:
        out: list[ConsumerRecord] = []
        while self._completed and len(out) < self._max_poll_records:
            cf = self._completed[0]
            st = self._assignment.get(cf.tp)
            if st is None or st.position != cf.position:
                self._completed.popleft()  # unassigned or seeked since it was fetched
                continue
            while cf.records and len(out) < self._max_poll_records:
                record = cf.records.popleft()
                out.append(record)
                cf.position = record.offset + 1
            if cf.records:
                st.position = cf.position
                break  # max.poll.records reached; the rest next time
            st.position = cf.position = max(cf.position, cf.next_offset)
            self._completed.popleft()
            if cf.error is not None:
                if out:
                    # Return what came before the error first; raise it at the next poll.
                    self._pending_error = cf.error
                    break
                raise cf.error
        return out

    # --- fetching -------------------------------------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _send_fetches(self) -> float:
        """Start one fetch per leader that has fetchable partitions and none in flight.
        Returns the ms until a backed-off partition may be fetched again (inf: none)."""
        now = now_ms()
        if self._cluster.metadata_is_stale():
            self._cluster.request_update()  # metadata.max.age.ms
        md = self._cluster.metadata
        buffered = {cf.tp for cf in self._completed}
        by_node: dict[int, list[tuple[TopicPartition, int, int]]] = {}
        next_retry = math.inf
        for tp, st in self._assignment.items():
            if st.position is None or tp in buffered:
                continue
            if st.next_attempt_ms > now:
                next_retry = min(next_retry, st.next_attempt_ms - now)
                continue
            leader = md.leader_for(tp)
            if leader is None:
                self._cluster.request_update()  # its listener wakes us
                continue
            if leader in self._fetching_nodes:
                continue
            by_node.setdefault(leader, []).append((tp, st.position, md.leader_epoch_for(tp)))
        for node, parts in by_node.items():
            self._fetching_nodes.add(node)
            self._spawn(self._fetch(node, parts))
        return next_retry

    async def _fetch(self, node: int, parts: list[tuple[TopicPartition, int, int]]) -> None:
        by_topic: dict[str, list[FetchPartition]] = {}
        for tp, offset, epoch in parts:
            by_topic.setdefault(tp.topic, []).append(
                FetchPartition(tp.partition, offset, self._max_partition_fetch_bytes, epoch)
            )
        request = FetchRequest(
            CONSUMER_REPLICA_ID,
            self._fetch_max_wait_ms,
            self._fetch_min_bytes,
            self._fetch_max_bytes,
            [FetchTopic(name, ps) for name, ps in by_topic.items()],
        )
        try:
            response: FetchResponse = await self._cluster.send(
                node, request, timeout_ms=self._request_timeout_ms + self._fetch_max_wait_ms
            )
        except KafkaError as e:
            log.info("fetch from broker %d failed: %s", node, e)
            self._back_off((tp for tp, _, _ in parts), refresh=True)
            return
        finally:
            self._fetching_nodes.discard(node)
            self._wakeup.set()
        offsets = {tp: offset for tp, offset, _ in parts}
        for t in response.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition)
                if tp in offsets:
                    self._handle_fetched(tp, offsets[tp], p)

    def _handle_fetched(
        self, tp: TopicPartition, fetch_offset: int, p: FetchPartitionResponse
    ) -> None:
        st = self._assignment.get(tp)
        if st is None or st.position != fetch_offset:
            return  # seeked or unassigned while the fetch was in flight
        if p.error_code == ErrorCode.NONE:
            st.high_watermark, st.log_start_offset = p.high_watermark, p.log_start_offset
            data = p.records if isinstance(p.records, bytes | bytearray | memoryview) else b""
            records, next_offset, error = parse_fetched_records(tp, data, fetch_offset)
            if records or error is not None or next_offset > fetch_offset:
                self._completed.append(
                    _CompletedFetch(tp, fetch_offset, deque(records), next_offset, error)
                )
            return
        error = error_for_code(p.error_code)
        if p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
            if self._auto_offset_reset == "none":
                self._pending_error = OffsetOutOfRangeError(
                    f"Fetch position {fetch_offset} is out of range for partition {tp}"
                )
                return
            log.info(
                "Fetch position %d is out of range for partition %s, resetting offset",
                fetch_offset,
                tp,
            )
            st.position, st.reset = None, None  # auto.offset.reset decides
            st.generation += 1
        elif is_invalid_metadata(error) or error.retriable:
            log.info("fetch of %s at offset %d failed: %s", tp, fetch_offset, error)
            self._back_off([tp], refresh=is_invalid_metadata(error))
        else:
            self._pending_error = error

    def _back_off(self, tps: Iterable[TopicPartition], *, refresh: bool) -> None:
        until = now_ms() + self._retry_backoff_ms
        for tp in tps:
            st = self._assignment.get(tp)
            if st is not None:
                st.next_attempt_ms = until
        if refresh:
            self._cluster.request_update()

    # --- offset resets --------------------------------------------------------------------

    def _maybe_reset_positions(self) -> float:
        """Start ListOffsets for partitions without a position. Returns the ms until a
        backed-off one may be tried again (inf: none)."""
        now = now_ms()
        md = self._cluster.metadata
        by_node: dict[int, list[tuple[TopicPartition, int, int]]] = {}
        next_retry = math.inf
        for tp, st in self._assignment.items():
            if st.position is not None or tp in self._resetting:
                continue
            if st.next_attempt_ms > now:
                next_retry = min(next_retry, st.next_attempt_ms - now)
                continue
            strategy = st.reset or self._auto_offset_reset
            if strategy == "none":
                raise NoOffsetForPartitionError(
                    f"Undefined offset with no reset policy for partitions: [{tp}]"
                )
            leader = md.leader_for(tp)
            if leader is None:
                self._cluster.request_update()
                continue
            by_node.setdefault(leader, []).append((tp, _TIMESTAMP_OF[strategy], st.generation))
        for node, parts in by_node.items():
            self._resetting.update(tp for tp, _, _ in parts)
            self._spawn(self._reset_offsets(node, parts))
        return next_retry

    async def _reset_offsets(self, node: int, parts: list[tuple[TopicPartition, int, int]]) -> None:
        try:
            results = await self._send_list_offsets(node, [(tp, ts) for tp, ts, _ in parts])
        finally:
            self._resetting.difference_update(tp for tp, _, _ in parts)
            self._wakeup.set()
        for tp, _, generation in parts:
            st = self._assignment.get(tp)
            if st is None or st.generation != generation or st.position is not None:
                continue  # seeked meanwhile
            result = results[tp]
            if isinstance(result, KafkaError):
                if result.retriable or is_invalid_metadata(result):
                    self._back_off([tp], refresh=is_invalid_metadata(result))
                else:
                    self._pending_error = result
            else:
                st.position, st.reset = result.offset, None
                log.debug("reset position of %s to %d", tp, result.offset)

    async def _send_list_offsets(
        self, node: int, parts: list[tuple[TopicPartition, int]]
    ) -> dict[TopicPartition, ListOffsetsPartitionResponse | KafkaError]:
        md = self._cluster.metadata
        by_topic: dict[str, list[ListOffsetsPartition]] = {}
        for tp, ts in parts:
            by_topic.setdefault(tp.topic, []).append(
                ListOffsetsPartition(tp.partition, ts, md.leader_epoch_for(tp))
            )
        request = ListOffsetsRequest(
            CONSUMER_REPLICA_ID, [ListOffsetsTopic(n, ps) for n, ps in by_topic.items()]
        )
        out: dict[TopicPartition, ListOffsetsPartitionResponse | KafkaError] = {}
        try:
            response: ListOffsetsResponse = await self._cluster.send(node, request)
        except KafkaError as e:
            return {tp: e for tp, _ in parts}
        for t in response.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition)
                out[tp] = p if p.error_code == ErrorCode.NONE else error_for_code(p.error_code)
        for tp, _ in parts:
            out.setdefault(tp, KafkaError(f"the ListOffsets response has no result for {tp}"))
        return out

    async def _list_offsets_blocking(
        self, partitions: Iterable[TopicPartition], timestamp: int, timeout_ms: float | None
    ) -> dict[TopicPartition, int]:
        self._check_open()
        timeout = self._default_api_timeout_ms if timeout_ms is None else timeout_ms
        deadline = now_ms() + timeout
        remaining_tps = list(dict.fromkeys(partitions))
        self._cluster.add_topics(tp.topic for tp in remaining_tps)
        found: dict[TopicPartition, int] = {}
        last_error: KafkaError | None = None
        while remaining_tps:
            md = self._cluster.metadata
            by_node: dict[int, list[tuple[TopicPartition, int]]] = {}
            missing_leader = False
            for tp in remaining_tps:
                leader = md.leader_for(tp)
                if leader is None:
                    missing_leader = True
                else:
                    by_node.setdefault(leader, []).append((tp, timestamp))
            results = await asyncio.gather(
                *(self._send_list_offsets(node, parts) for node, parts in by_node.items())
            )
            refresh = missing_leader
            for result in results:
                for tp, r in result.items():
                    if isinstance(r, KafkaError):
                        if not (r.retriable or is_invalid_metadata(r)):
                            raise r
                        last_error = r
                        refresh = refresh or is_invalid_metadata(r)
                    else:
                        found[tp] = r.offset
            remaining_tps = [tp for tp in remaining_tps if tp not in found]
            if not remaining_tps:
                break
            left = deadline - now_ms()
            if left <= 0:
                detail = f": {last_error}" if last_error is not None else ""
                raise KafkaTimeoutError(
                    f"Failed to get offsets by times in {int(timeout)}ms{detail}"
                )
            await asyncio.sleep(min(self._retry_backoff_ms, left) / 1000.0)
            if refresh:
                with contextlib.suppress(KafkaError):
                    await self._cluster.refresh_metadata()
        return found

    # --- close ----------------------------------------------------------------------------

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._cluster.close()
