"""The async admin client: create, delete, list and describe topics, add partitions to them;
describe the cluster.

CreateTopics, DeleteTopics and CreatePartitions go to the controller, as Kafka's admin
client sends them;
NOT_CONTROLLER (the controller moved) refreshes metadata and retries the topics it concerned
until the call's timeout. Each topic succeeds or fails on its own: a call raises the failed
topic's KafkaError, or an ExceptionGroup of them when several failed (`except*` handles both).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from minikafka.client.cluster import DEFAULT_BOOTSTRAP, ClusterClient, now_ms
from minikafka.client.config_names import accepts_kafka_config
from minikafka.client.consumer import parse_fetched_records
from minikafka.client.errors import KafkaTimeoutError
from minikafka.client.metadata import ClusterMetadata, PartitionMetadata
from minikafka.common import NO_LEADER, TopicPartition
from minikafka.protocol.errors import (
    ErrorCode,
    KafkaError,
    LeaderNotAvailableError,
    NotControllerError,
    NotLeaderOrFollowerError,
    error_for_code,
)
from minikafka.protocol.messages import (
    DEBUG_REPLICA_ID,
    BrokerNode,
    CreatableTopic,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeReplicasRequest,
    DescribeReplicasResponse,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    PartitionReplicaStates,
    TopicResult,
)

log = logging.getLogger(__name__)

_client_ids = itertools.count(1)


@dataclass(frozen=True)
class NewTopic:
    """A topic to create. -1 partitions / replication factor: the broker's num.partitions /
    default.replication.factor. `replica_assignment` (partition -> brokers) replaces both."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str] = field(default_factory=dict)
    replica_assignment: Mapping[int, Sequence[int]] | None = None


@dataclass(frozen=True)
class NewPartitions:
    """Kafka's NewPartitions: the topic's new total partition count, and optionally the
    replicas of each new partition (partition `current count` first; all with the topic's
    replication factor). Without them the controller assigns replicas as for a new topic."""

    total_count: int
    new_assignments: Sequence[Sequence[int]] | None = None

    @classmethod
    def increase_to(
        cls, total_count: int, new_assignments: Sequence[Sequence[int]] | None = None
    ) -> NewPartitions:
        """Kafka's `NewPartitions.increaseTo`."""
        return cls(total_count, new_assignments)


@dataclass(frozen=True)
class TopicDescription:
    name: str
    partitions: list[PartitionMetadata]

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0


@dataclass(frozen=True)
class ClusterDescription:
    brokers: list[BrokerNode]
    controller_id: int  # -1: no controller right now

    @property
    def controller(self) -> BrokerNode | None:
        return next((b for b in self.brokers if b.node_id == self.controller_id), None)


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


def _topic_error(name: str, code: int, message: str | None) -> KafkaError:
    if message:
        return error_for_code(code, message)
    if code == ErrorCode.TOPIC_ALREADY_EXISTS:
        return error_for_code(code, f"Topic '{name}' already exists.")
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        return error_for_code(code, f"Topic '{name}' does not exist.")
    return error_for_code(code, f"topic '{name}'")


def _raise_collected(errors: list[KafkaError], what: str) -> None:
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ExceptionGroup(f"{len(errors)} topics failed to {what}", errors)


class Admin:
    """Kafka's AdminClient for topics and the cluster description."""

    @accepts_kafka_config("admin")
    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] = DEFAULT_BOOTSTRAP,
        *,
        request_timeout_ms: int = 30000,
        retry_backoff_ms: int = 100,
        default_api_timeout_ms: int = 60000,
        client_id: str | None = None,
    ) -> None:
        self.client_id = client_id or f"adminclient-{next(_client_ids)}"
        self._request_timeout_ms = request_timeout_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._default_api_timeout_ms = default_api_timeout_ms
        self._cluster = ClusterClient(
            bootstrap_servers,
            client_id=self.client_id,
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
        )
        self._cluster.track_all_topics()

    @property
    def cluster(self) -> ClusterClient:
        return self._cluster

    async def __aenter__(self) -> Admin:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # --- topics -----------------------------------------------------------------------------

    async def create_topics(
        self,
        new_topics: Sequence[NewTopic],
        timeout_ms: int | None = None,
        *,
        validate_only: bool = False,
    ) -> None:
        """Create topics; returns once the controller has answered for each of them.

        `timeout_ms` (default.api.timeout.ms) bounds how long the controller waits for the
        topics' metadata to spread, and the whole call including retries. A topic the
        controller timed out on (REQUEST_TIMED_OUT) may still be created.
        """
        timeout = self._default_api_timeout_ms if timeout_ms is None else timeout_ms
        by_name = {t.name: t for t in new_topics}

        def request(names: list[str]) -> CreateTopicsRequest:
            return CreateTopicsRequest(
                [
                    CreatableTopic(
                        t.name,
                        t.num_partitions if t.replica_assignment is None else -1,
                        t.replication_factor if t.replica_assignment is None else -1,
                        None
                        if t.replica_assignment is None
                        else {p: list(r) for p, r in t.replica_assignment.items()},
                        dict(t.configs),
                    )
                    for t in (by_name[n] for n in names)
                ],
                timeout,
                validate_only,
            )

        def results(response: Any) -> list[TopicResult]:
            assert isinstance(response, CreateTopicsResponse)
            return response.topics

        errors = await self._controller_call(list(by_name), request, results, timeout)
        _raise_collected(errors, "create")

    async def delete_topics(self, names: Sequence[str], timeout_ms: int | None = None) -> None:
        """Delete topics (the controller marks them for deletion and removes them)."""
        timeout = self._default_api_timeout_ms if timeout_ms is None else timeout_ms

        def request(pending: list[str]) -> DeleteTopicsRequest:
            return DeleteTopicsRequest(pending, timeout)

        def results(response: Any) -> list[TopicResult]:
            assert isinstance(response, DeleteTopicsResponse)
            return response.topics

        errors = await self._controller_call(list(dict.fromkeys(names)), request, results, timeout)
        _raise_collected(errors, "delete")

    async def create_partitions(
        self,
        new_partitions: Mapping[str, NewPartitions],
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> None:
        """Add partitions to existing topics (Kafka's `createPartitions`); returns once the
        controller has answered for each topic, i.e. once the new partitions have leaders
        in its metadata (or its wait timed out: REQUEST_TIMED_OUT, and they are added still).

        Raises the failed topic's KafkaError (an ExceptionGroup when several failed):
        UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS (the count is not an increase),
        INVALID_REPLICA_ASSIGNMENT, INVALID_REPLICATION_FACTOR (fewer live brokers than the
        topic's replication factor), INVALID_TOPIC_EXCEPTION (queued for deletion).
        Producers and consumers see the new partitions at their next metadata refresh.
        """
        timeout = self._default_api_timeout_ms if timeout_ms is None else timeout_ms
        topics = dict(new_partitions)

        def topic(name: str) -> CreatePartitionsTopic:
            new = topics[name]
            assignments = (
                None if new.new_assignments is None else [list(r) for r in new.new_assignments]
            )
            return CreatePartitionsTopic(name, new.total_count, assignments)

        def request(names: list[str]) -> CreatePartitionsRequest:
            return CreatePartitionsRequest([topic(n) for n in names], timeout, validate_only)

        def results(response: Any) -> list[TopicResult]:
            assert isinstance(response, CreatePartitionsResponse)
            return response.results

        errors = await self._controller_call(list(topics), request, results, timeout)
        _raise_collected(errors, "add partitions")

    async def _controller_call(
        self,
        names: list[str],
        make_request: Callable[[list[str]], Any],
        results_of: Callable[[Any], list[TopicResult]],
        timeout_ms: int,
    ) -> list[KafkaError]:
        """Send to the controller until every topic has an answer other than NOT_CONTROLLER
        (or the deadline passes); returns the failures in the order of `names`."""
        deadline = now_ms() + timeout_ms
        answers: dict[str, KafkaError | None] = {}
        pending = list(names)
        last_error: KafkaError | None = None
        md = self._cluster.metadata
        while pending:
            if md.controller() is None or last_error is not None:
                try:
                    md = await self._cluster.refresh_metadata(topics=[])
                except KafkaError as e:
                    if not e.retriable:
                        raise
                    last_error = e
            controller = md.controller()
            if controller is None:
                if last_error is None or isinstance(last_error, NotControllerError):
                    last_error = NotControllerError("no controller is known")
            else:
                try:
                    response = await self._cluster.send(
                        controller.node_id,
                        make_request(pending),
                        timeout_ms=timeout_ms + self._request_timeout_ms,
                    )
                except KafkaError as e:
                    if not e.retriable:
                        raise
                    last_error = e
                else:
                    last_error = None
                    for r in results_of(response):
                        if r.error_code == ErrorCode.NOT_CONTROLLER:
                            last_error = NotControllerError(f"broker {controller.node_id}")
                        elif r.name in pending:
                            answers[r.name] = (
                                None
                                if r.error_code == ErrorCode.NONE
                                else _topic_error(r.name, r.error_code, r.error_message)
                            )
                    pending = [n for n in pending if n not in answers]
                    if pending and last_error is None:
                        last_error = KafkaError(f"no answer for topics {pending}")
            if not pending:
                break
            remaining = deadline - now_ms()
            if remaining <= 0:
                raise KafkaTimeoutError(
                    f"Timed out after {timeout_ms} ms waiting for the controller "
                    f"(topics {', '.join(pending)}; last error: {last_error})"
                )
            log.info("admin call to the controller will be retried: %s", last_error)
            await asyncio.sleep(min(self._retry_backoff_ms, remaining) / 1000.0)
        return [e for e in (answers.get(n) for n in names) if e is not None]

    async def list_topics(self) -> list[str]:
        md = await self._refresh(None)
        return sorted(md.topics)

    async def describe_topics(self, names: Sequence[str] | None = None) -> list[TopicDescription]:
        """Partitions with leader, leader epoch, replicas, ISR and offline replicas, per topic
        (all topics when `names` is None), in the order asked (sorted for all). A topic that
        does not exist raises UnknownTopicOrPartitionError."""
        deadline = now_ms() + self._default_api_timeout_ms
        wanted = None if names is None else list(dict.fromkeys(names))
        while True:
            md = await self._refresh(wanted)
            order = sorted(md.topics) if wanted is None else wanted
            errors: list[KafkaError] = []
            retry = False
            out: list[TopicDescription] = []
            for name in order:
                t = md.topics.get(name)
                if t is None:
                    errors.append(_topic_error(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None))
                elif t.error_code != ErrorCode.NONE:
                    err = _topic_error(name, t.error_code, None)
                    retry = retry or err.retriable
                    errors.append(err)
                else:
                    parts = [t.partitions[p] for p in sorted(t.partitions)]
                    out.append(TopicDescription(name, parts))
            if not retry or now_ms() >= deadline:
                _raise_collected(errors, "describe")
                return out
            # A topic being created answers LEADER_NOT_AVAILABLE for a moment.
            await asyncio.sleep(self._retry_backoff_ms / 1000.0)

    async def describe_cluster(self) -> ClusterDescription:
        md = await self._refresh([])
        brokers = sorted(md.brokers.values(), key=lambda b: b.node_id)
        return ClusterDescription(brokers, md.controller_id)

    # --- replicas (minikafka's own DescribeReplicas) ----------------------------------------

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
            parts = [p for d in await self.describe_topics(topics) for p in d.partitions]
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

    async def _refresh(self, topics: list[str] | None) -> ClusterMetadata:
        if topics is None:
            return await self._cluster.refresh_metadata(all_topics=True)
        return await self._cluster.refresh_metadata(topics)

    async def close(self) -> None:
        await self._cluster.close()
