"""Any replica's records, a follower's as well as a leader's, read over Kafka's protocol as
Kafka's debugging consumer (replica id -2, `FetchRequest.DEBUGGING_CONSUMER_ID`): the
broker answers it from whatever replica it has, up to that replica's LEO rather than the
HW, and counts it as no follower's fetch. For tools that compare replicas over the wire
(chaos's replica check); consumers read leaders up to the HW.

The replica's LEO comes from ListOffsets as the debugging replica (the latest offset, not
the HW); the fetched record batches are decoded here (`parse_fetched_records`).
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass
from typing import Any

from minikafka.client.kafka_wire import KafkaConnection
from minikafka.common import TopicPartition
from minikafka.protocol.errors import (
    CorruptRecordError,
    ErrorCode,
    KafkaError,
    RequestTimedOutError,
    error_for_code,
)
from minikafka.storage.record_batch import (
    LOG_OVERHEAD,
    InvalidBatchError,
    InvalidBatchReason,
    decode_records,
    peek_offset_and_size,
    validate_batch,
)

# Kafka's FetchRequest.DEBUGGING_CONSUMER_ID (ListOffsetsRequest.DEBUGGING_REPLICA_ID).
DEBUG_REPLICA_ID = -2
LATEST_TIMESTAMP = -1  # ListOffsets: the end of the log (for the debugging replica, its LEO)


@dataclass(frozen=True, slots=True)
class FetchedRecord:
    """One record of a fetch response, with the partition it came from."""

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


def parse_fetched_records(
    tp: TopicPartition, data: bytes | bytearray | memoryview, fetch_offset: int
) -> tuple[list[FetchedRecord], int, KafkaError | None]:
    """The records at or after `fetch_offset` in fetched bytes, the offset after the last
    complete batch, and the error that stopped parsing early, if any.

    A fetch is a byte range of the log, so it may end in a partial batch: that is ignored,
    and fetched again next time. The first batch may start below the fetch offset.
    """
    view = memoryview(data)
    n = len(view)
    pos = 0
    next_offset = fetch_offset
    out: list[FetchedRecord] = []
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
                    FetchedRecord(
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


def debug_fetch_request(tp: TopicPartition, offset: int, max_bytes: int) -> Any:
    """Fetch v12 (the last version naming topics) as the debugging replica, sessionless,
    answered at once with what the replica has (max wait 0)."""
    from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
    from kio.schema.types import BrokerId, TopicName
    from kio.static.primitive import i32, i32Timedelta, i64

    return FetchRequest(
        replica_id=BrokerId(DEBUG_REPLICA_ID),
        max_wait=i32Timedelta.parse(datetime.timedelta(0)),
        min_bytes=i32(0),
        max_bytes=i32(max_bytes),
        topics=(
            FetchTopic(
                topic=TopicName(tp.topic),
                partitions=(
                    FetchPartition(
                        partition=i32(tp.partition),
                        fetch_offset=i64(offset),
                        partition_max_bytes=i32(max_bytes),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


def debug_list_offsets_request(tp: TopicPartition) -> Any:
    """ListOffsets v5 as the debugging replica: the replica's LEO, on a follower too."""
    from kio.schema.list_offsets.v5.request import (
        ListOffsetsPartition,
        ListOffsetsRequest,
        ListOffsetsTopic,
    )
    from kio.schema.types import BrokerId, TopicName
    from kio.static.primitive import i8, i32, i64

    return ListOffsetsRequest(
        replica_id=BrokerId(DEBUG_REPLICA_ID),
        isolation_level=i8(0),
        topics=(
            ListOffsetsTopic(
                name=TopicName(tp.topic),
                partitions=(
                    ListOffsetsPartition(
                        partition_index=i32(tp.partition), timestamp=i64(LATEST_TIMESTAMP)
                    ),
                ),
            ),
        ),
    )


def _answer_for(response_topics: Any, tp: TopicPartition, name_of: str, index_of: str) -> Any:
    return next(
        (
            p
            for t in response_topics
            if getattr(t, name_of) == tp.topic
            for p in t.partitions
            if getattr(p, index_of) == tp.partition
        ),
        None,
    )


async def replica_log_end_offset(
    connection: KafkaConnection, broker_id: int, tp: TopicPartition, timeout_s: float
) -> int:
    """Broker `broker_id`'s replica's LEO (KafkaError: the partition's error there)."""
    response = await connection.call(debug_list_offsets_request(tp), timeout_s)
    p = _answer_for(response.topics, tp, "name", "partition_index")
    if p is None:
        raise KafkaError(f"broker {broker_id} did not answer for {tp}")
    if p.error_code != ErrorCode.NONE:
        raise error_for_code(p.error_code, f"{tp} on broker {broker_id}")
    return int(p.offset)


async def read_replica(
    connection: KafkaConnection,
    broker_id: int,
    tp: TopicPartition,
    end_offset: int | None,
    *,
    max_bytes: int,
    timeout_ms: int,
    request_timeout_ms: int,
) -> dict[int, bytes | None]:
    """offset -> value of every record of `tp` in broker `broker_id`'s replica (reached on
    `connection`), from its log start to `end_offset` (None: that replica's LEO).

    Raises the partition's KafkaError (e.g. the broker has no replica of `tp`), NetworkError
    when the broker cannot be reached, RequestTimedOutError after `timeout_ms`.
    """
    deadline = time.monotonic() + timeout_ms / 1000

    def remaining_s(offset: int) -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RequestTimedOutError(
                f"Timed out after {timeout_ms} ms reading {tp} from broker {broker_id} "
                f"(at offset {offset})"
            )
        return min(request_timeout_ms / 1000, left)

    end = end_offset
    if end is None:
        end = await replica_log_end_offset(connection, broker_id, tp, remaining_s(0))
    out: dict[int, bytes | None] = {}
    offset = 0  # below the log start: the answer says where the log starts
    while offset < end:
        response = await connection.call(
            debug_fetch_request(tp, offset, max_bytes), remaining_s(offset)
        )
        p = _answer_for(response.responses, tp, "topic", "partition_index")
        if p is None:
            raise KafkaError(f"broker {broker_id} did not answer for {tp}")
        if p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE and offset < p.log_start_offset:
            offset = int(p.log_start_offset)
            continue
        if p.error_code != ErrorCode.NONE:
            raise error_for_code(p.error_code, f"{tp} on broker {broker_id}")
        records, next_offset, error = parse_fetched_records(tp, p.records or b"", offset)
        if error is not None:
            raise error
        out.update((r.offset, r.value) for r in records if r.offset < end)
        if next_offset <= offset:
            break  # nothing more: the replica ends below `end_offset`
        offset = next_offset
    return out
