"""Views of replicas only minikafka has, over its own RPC: a small internal client for tools.

`ReplicaViews.describe_replicas` asks each partition's leader, with minikafka's
DescribeReplicas, how it sees the partition's replicas (LEO, lag, ISR membership, time since
each follower last caught up, the HW). `ReplicaViews.fetch_replica_records` reads any
replica, leader or follower, up to its LEO, with a Fetch as Kafka's debug replica (replica
id -2). Kafka's protocol has neither, so Kafka's clients cannot ask; everything else (topics,
producing, consuming) is librdkafka's (`minikafka.client.librdkafka`).

Leaders and broker addresses come from minikafka's Metadata through `ClusterClient`; the
fetched record batches are decoded here (`parse_fetched_records`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType

from minikafka.client.bootstrap import DEFAULT_BOOTSTRAP
from minikafka.client.cluster import ClusterClient, now_ms
from minikafka.client.errors import KafkaTimeoutError
from minikafka.client.metadata import ClusterMetadata, PartitionMetadata
from minikafka.common import NO_LEADER, TopicPartition
from minikafka.protocol.errors import (
    CorruptRecordError,
    ErrorCode,
    KafkaError,
    LeaderNotAvailableError,
    NotLeaderOrFollowerError,
    error_for_code,
)
from minikafka.rpc.messages import (
    DEBUG_REPLICA_ID,
    DescribeReplicasRequest,
    DescribeReplicasResponse,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    PartitionReplicaStates,
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

_client_ids = itertools.count(1)


@dataclass(frozen=True)
class ReplicaDescription:
    """One replica of a partition as the partition's leader sees it (design §7)."""

    broker_id: int
    is_leader: bool
    in_isr: bool
    log_end_offset: int  # -1: unknown, it has not fetched from this leader yet
    # now - lastCaughtUpTimeMs on the leader; 0 for the leader itself; -1: the follower has
    # not caught up since this leader took over (and was not in the ISR then).
    last_caught_up_ms_ago: int
    lag: int | None  # leader LEO - replica LEO, in messages; None while its LEO is unknown


@dataclass(frozen=True)
class PartitionReplicas:
    """A partition's replicas from its leader's view (minikafka's DescribeReplicas), or the
    error that kept the leader from answering (then `replicas` is empty)."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    high_watermark: int
    log_end_offset: int
    replicas: list[ReplicaDescription]  # in assignment order
    error: KafkaError | None = None

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


def partition_replicas(
    state: PartitionReplicaStates, assignment: Sequence[int] = ()
) -> PartitionReplicas:
    """A leader's DescribeReplicas entry -> PartitionReplicas: replicas in `assignment`
    order (any the leader reports beyond it follow in its order), lag against its LEO."""
    order = {b: i for i, b in enumerate(assignment)}
    # sorted() is stable: replicas outside `assignment` keep the leader's order.
    states = sorted(state.replicas, key=lambda r: order.get(r.broker_id, len(order)))
    leo = state.log_end_offset
    replicas = [
        ReplicaDescription(
            broker_id=r.broker_id,
            is_leader=r.broker_id == state.leader,
            in_isr=r.in_isr,
            log_end_offset=r.log_end_offset,
            last_caught_up_ms_ago=0 if r.broker_id == state.leader else r.last_caught_up_ms_ago,
            lag=None if r.log_end_offset < 0 else leo - r.log_end_offset,
        )
        for r in states
    ]
    return PartitionReplicas(
        state.topic,
        state.partition,
        state.leader,
        state.leader_epoch,
        state.high_watermark,
        leo,
        replicas,
    )


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


def _topic_error(name: str, code: int) -> KafkaError:
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        return error_for_code(code, f"Topic '{name}' does not exist.")
    return error_for_code(code, f"topic '{name}'")


class ReplicaViews:
    """minikafka's replica views of a cluster: DescribeReplicas and debug replica reads.

    `request_timeout_ms` bounds each request, `default_api_timeout_ms` a whole call that
    names no timeout of its own (retries included), `retry_backoff_ms` the wait between
    attempts: Kafka's admin client's settings, with its defaults.
    """

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] = DEFAULT_BOOTSTRAP,
        *,
        request_timeout_ms: int = 30000,
        retry_backoff_ms: int = 100,
        default_api_timeout_ms: int = 60000,
        client_id: str | None = None,
    ) -> None:
        self.client_id = client_id or f"replica-views-{next(_client_ids)}"
        self._request_timeout_ms = request_timeout_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._default_api_timeout_ms = default_api_timeout_ms
        self._cluster = ClusterClient(
            bootstrap_servers,
            client_id=self.client_id,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
        )

    async def __aenter__(self) -> ReplicaViews:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._cluster.close()

    async def describe_replicas(
        self, topics: Sequence[str] | None = None, timeout_ms: int | None = None
    ) -> list[PartitionReplicas]:
        """Each partition's replicas as its leader sees them: LEO, lag, ISR membership, time
        since each follower last caught up, and the partition's HW (all topics when `topics`
        is None). Sorted by topic and partition for all topics, else in the order asked.

        Each leader is found through metadata and asked; a partition whose leader cannot
        answer right now (no leader, leadership moved, broker unreachable) is asked again
        after a metadata refresh until `timeout_ms` (default.api.timeout.ms), and then comes
        back with its `error` set. A topic that does not exist raises
        UnknownTopicOrPartitionError.
        """
        timeout = self._default_api_timeout_ms if timeout_ms is None else timeout_ms
        deadline = now_ms() + timeout
        done: dict[TopicPartition, PartitionReplicas] = {}
        while True:
            parts = await self._partitions(topics)
            failed: dict[TopicPartition, KafkaError] = {}
            by_leader: dict[int, list[PartitionMetadata]] = {}
            for p in parts:
                if p.tp in done:
                    continue
                if p.leader == NO_LEADER:
                    failed[p.tp] = LeaderNotAvailableError(f"{p.tp} has no leader")
                else:
                    by_leader.setdefault(p.leader, []).append(p)
            remaining = max(1.0, min(self._request_timeout_ms, deadline - now_ms()))
            answers = await asyncio.gather(
                *(
                    self._cluster.send(
                        leader,
                        DescribeReplicasRequest(sorted({p.topic for p in ps})),
                        timeout_ms=remaining,
                    )
                    for leader, ps in by_leader.items()
                ),
                return_exceptions=True,
            )
            for (leader, ps), answer in zip(by_leader.items(), answers, strict=True):
                if isinstance(answer, KafkaError):
                    for p in ps:
                        failed[p.tp] = answer
                    continue
                if isinstance(answer, BaseException):
                    raise answer
                assert isinstance(answer, DescribeReplicasResponse)
                states = {(s.topic, s.partition): s for s in answer.partitions}
                for p in ps:
                    st = states.get((p.topic, p.partition))
                    if st is None:
                        failed[p.tp] = NotLeaderOrFollowerError(
                            f"broker {leader} does not lead {p.tp} (any more)"
                        )
                    elif st.error_code != ErrorCode.NONE:
                        failed[p.tp] = error_for_code(st.error_code, f"{p.tp} on broker {leader}")
                    else:
                        done[p.tp] = partition_replicas(st, p.replicas)
            retry = any(e.retriable for e in failed.values())
            # No new attempt that could only start after the backoff with no time left: its
            # own timeout would then replace the brokers' real answers as the error.
            if not retry or now_ms() + self._retry_backoff_ms >= deadline:
                return [
                    done.get(p.tp)
                    or PartitionReplicas(
                        p.topic, p.partition, p.leader, p.leader_epoch, -1, -1, [], failed[p.tp]
                    )
                    for p in parts
                ]
            log.info("describe replicas will be retried for %d partitions", len(failed))
            await asyncio.sleep(self._retry_backoff_ms / 1000.0)

    async def fetch_replica_records(
        self,
        broker_id: int,
        tp: TopicPartition,
        end_offset: int | None = None,
        *,
        max_bytes: int = 1 << 20,
        timeout_ms: int | None = None,
    ) -> dict[int, bytes | None]:
        """offset -> value of every record of `tp` in broker `broker_id`'s replica, leader or
        follower, from its log start to `end_offset` (default: that replica's LEO).

        Read with Fetch as Kafka's debug replica (replica id -2): the broker answers it from
        a follower too and up to its LEO, not the HW, and it counts as no follower's fetch.
        For tools that compare replicas over the wire; consumers read leaders up to the HW.
        Raises the partition's KafkaError (e.g. the broker has no replica of `tp`), or
        KafkaTimeoutError after `timeout_ms` (default.api.timeout.ms).
        """
        timeout = self._default_api_timeout_ms if timeout_ms is None else timeout_ms
        deadline = now_ms() + timeout
        if self._cluster.metadata.broker(broker_id) is None:
            await self._refresh([tp.topic])  # its address
        out: dict[int, bytes | None] = {}
        offset = 0  # below the log start: the answer says where the log starts
        end = end_offset
        while end is None or offset < end:
            remaining = deadline - now_ms()
            if remaining <= 0:
                raise KafkaTimeoutError(
                    f"Timed out after {timeout} ms reading {tp} from broker {broker_id} "
                    f"(at offset {offset})"
                )
            request = FetchRequest(
                DEBUG_REPLICA_ID,
                0,  # max_wait_ms: what is there now, no waiting for more
                0,
                max_bytes,
                [FetchTopic(tp.topic, [FetchPartition(tp.partition, offset, max_bytes)])],
            )
            response = await self._cluster.send(
                broker_id, request, timeout_ms=min(self._request_timeout_ms, remaining)
            )
            assert isinstance(response, FetchResponse)
            p = next(
                (
                    p
                    for t in response.topics
                    if t.name == tp.topic
                    for p in t.partitions
                    if p.partition == tp.partition
                ),
                None,
            )
            if p is None:
                raise KafkaError(f"broker {broker_id} did not answer for {tp}")
            if p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE and offset < p.log_start_offset:
                offset = p.log_start_offset
                continue
            if p.error_code != ErrorCode.NONE:
                raise error_for_code(p.error_code, f"{tp} on broker {broker_id}")
            if end is None:
                end = p.log_end_offset
            data = p.records if isinstance(p.records, bytes | bytearray | memoryview) else b""
            records, next_offset, error = parse_fetched_records(tp, data, offset)
            if error is not None:
                raise error
            out.update((r.offset, r.value) for r in records if r.offset < end)
            if next_offset <= offset:
                break  # nothing more: the replica ends below `end_offset`
            offset = next_offset
        return out

    async def _partitions(self, topics: Sequence[str] | None) -> list[PartitionMetadata]:
        """The partitions of `topics` (all topics when None) from fresh metadata: by topic in
        the order asked (sorted for all), then by partition. A topic being created (a
        transient error such as LEADER_NOT_AVAILABLE) is asked for again every
        retry.backoff.ms, for default.api.timeout.ms at most. A topic that does not exist, or
        whose error stays, raises its KafkaError (an ExceptionGroup when several do)."""
        deadline = now_ms() + self._default_api_timeout_ms
        wanted = None if topics is None else list(dict.fromkeys(topics))
        while True:
            md = await self._refresh(wanted)
            order = sorted(md.topics) if wanted is None else wanted
            errors: list[KafkaError] = []
            retry = False
            out: list[PartitionMetadata] = []
            for name in order:
                t = md.topics.get(name)
                if t is None:
                    errors.append(_topic_error(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                elif t.error_code != ErrorCode.NONE:
                    err = _topic_error(name, t.error_code)
                    retry = retry or err.retriable
                    errors.append(err)
                else:
                    out.extend(t.partitions[p] for p in sorted(t.partitions))
            if not retry or now_ms() >= deadline:
                if len(errors) == 1:
                    raise errors[0]
                if errors:
                    raise ExceptionGroup(f"{len(errors)} topics failed to describe", errors)
                return out
            # A topic being created answers LEADER_NOT_AVAILABLE for a moment.
            await asyncio.sleep(self._retry_backoff_ms / 1000.0)

    async def _refresh(self, topics: list[str] | None) -> ClusterMetadata:
        if topics is None:
            return await self._cluster.refresh_metadata(all_topics=True)
        return await self._cluster.refresh_metadata(topics)
