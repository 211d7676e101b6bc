"""How the controller's decisions reach the brokers: Kafka's `ControllerChannelManager` and
`ControllerBrokerRequestBatch`.

`ControllerChannelManager` keeps, per live broker, one queue, one sender task and one
connection (Kafka's `RequestSendThread`): requests go out one at a time in the order they
were queued; a request that fails on the network is retried, with backoff, on a new
connection until it gets a response or the broker is removed. Responses go to an optional
callback.

`ControllerBrokerRequestBatch` collects what one controller step decided (LeaderAndIsr,
UpdateMetadata, StopReplica per broker) and sends it as one request per broker and kind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeAlias

from minikafka.common import PLAINTEXT, LeaderAndIsr, TopicPartition
from minikafka.controller.context import ControllerContext
from minikafka.protocol.errors import KafkaError, RequestTimedOutError
from minikafka.rpc.connection import (
    PLAINTEXT_CONNECTIONS,
    BrokerConnection,
    ConnectionSecurity,
    NetworkError,
)
from minikafka.rpc.messages import (
    NO_LEADER_EPOCH,
    BrokerNode,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    StopReplicaPartition,
    StopReplicaRequest,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
from minikafka.zk.codecs import BrokerInfo

log = logging.getLogger(__name__)

ControllerRequest: TypeAlias = LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest
# Gets the typed response, or the KafkaError the broker answered the request with.
ResponseCallback: TypeAlias = Callable[[object], None]
# (broker id, partitions of the request, response or error): StopReplica for topic deletion.
StopReplicaCallback: TypeAlias = Callable[[int, list[TopicPartition], object], None]


class BrokerRequestSender(Protocol):
    """Where the controller's requests go; tests capture them instead."""

    def add_broker(self, broker: BrokerInfo) -> None:
        """Start a channel to a live broker (no-op if it has one)."""
        ...

    def remove_broker(self, broker_id: int) -> None:
        """Stop the broker's channel; requests still queued for it are dropped."""
        ...

    def send(
        self, broker_id: int, request: ControllerRequest, callback: ResponseCallback | None = None
    ) -> None:
        """Queue a request; dropped (with a warning) if the broker has no channel."""
        ...

    async def close(self) -> None:
        """Remove every broker; the sender can be used again afterwards."""
        ...


def broker_node(info: BrokerInfo, inter_broker_listener: str = PLAINTEXT) -> BrokerNode:
    """A live broker as the controller describes it to the brokers: its inter-broker
    address, and all of its advertised listeners."""
    ep = info.inter_broker_endpoint(inter_broker_listener)
    return BrokerNode(info.id, ep.host, ep.port, info.rack, list(info.endpoints))


# --- ControllerChannelManager ------------------------------------------------------------------

SLOW_REQUEST_S = 1.0  # requests answered after this long are logged, with their size


def _partition_count(request: ControllerRequest) -> int:
    if isinstance(request, StopReplicaRequest):
        return len(request.partitions)
    return len(request.partition_states)


@dataclass(slots=True)
class _QueueItem:
    request: ControllerRequest
    callback: ResponseCallback | None


ConnectionFactory: TypeAlias = Callable[[BrokerInfo], BrokerConnection]


class _RequestSendTask:
    """One broker's queue and sender (Kafka's `RequestSendThread`)."""

    def __init__(
        self,
        broker: BrokerInfo,
        connect: ConnectionFactory,
        request_timeout_s: float,
        retry_backoff_s: float,
        max_retry_backoff_s: float,
    ) -> None:
        self.broker = broker
        self.queue: asyncio.Queue[_QueueItem] = asyncio.Queue()
        self._connect = connect
        self._request_timeout_s = request_timeout_s
        self._retry_backoff_s = retry_backoff_s
        self._max_retry_backoff_s = max_retry_backoff_s
        self._conn: BrokerConnection | None = None
        self.task = asyncio.create_task(self._run(), name=f"controller-to-broker-{broker.id}")

    async def _run(self) -> None:
        try:
            while True:
                item = await self.queue.get()
                started = time.monotonic()
                response = await self._send_until_answered(item.request)
                took = time.monotonic() - started
                if took >= SLOW_REQUEST_S:
                    # At scale, where the controller's time goes: encoding, the broker's
                    # queue and its handling, all in this figure.
                    log.info(
                        "%s of %d partitions to broker %d answered in %.2fs",
                        type(item.request).__name__,
                        _partition_count(item.request),
                        self.broker.id,
                        took,
                    )
                if item.callback is not None:
                    try:
                        item.callback(response)
                    except Exception:
                        log.exception("response callback for broker %d failed", self.broker.id)
        finally:
            await self._disconnect()

    async def _send_until_answered(self, request: ControllerRequest) -> object:
        backoff = self._retry_backoff_s
        while True:
            try:
                if self._conn is None or not self._conn.connected:
                    await self._disconnect()
                    self._conn = self._connect(self.broker)
                    await self._conn.connect()
                response: object = await self._conn.send(request, timeout_s=self._request_timeout_s)
                return response
            except (NetworkError, RequestTimedOutError) as e:
                # Kafka retries the same request until the broker answers or is removed:
                # the request must not be skipped, later ones depend on its effects.
                log.warning(
                    "controller's connection to broker %d (%s:%d) failed: %s; retrying in %.1fs",
                    self.broker.id,
                    self.broker.host,
                    self.broker.port,
                    e,
                    backoff,
                )
                await self._disconnect()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self._max_retry_backoff_s)
            except KafkaError as e:
                # The broker answered with a request-level error: delivered, not retried.
                log.warning("broker %d rejected %s: %s", self.broker.id, type(request).__name__, e)
                return e

    async def _disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()


class ControllerChannelManager:
    """Per-broker request channels of the active controller."""

    def __init__(
        self,
        controller_id: int,
        *,
        request_timeout_ms: int = 30000,
        connect_timeout_ms: int = 10000,
        retry_backoff_ms: int = 100,
        max_retry_backoff_ms: int = 1000,
        connection_factory: ConnectionFactory | None = None,
        inter_broker_listener: str = PLAINTEXT,
        connection_security: ConnectionSecurity = PLAINTEXT_CONNECTIONS,
    ) -> None:
        self.controller_id = controller_id
        self._request_timeout_s = request_timeout_ms / 1000
        self._retry_backoff_s = retry_backoff_ms / 1000
        self._max_retry_backoff_s = max_retry_backoff_ms / 1000

        def connect(broker: BrokerInfo) -> BrokerConnection:
            ep = broker.inter_broker_endpoint(inter_broker_listener)
            return BrokerConnection(
                ep.host,
                ep.port,
                client_id=f"controller-{controller_id}",
                connect_timeout_s=connect_timeout_ms / 1000,
                security=connection_security,
            )

        self._connect: ConnectionFactory = connection_factory or connect
        self._brokers: dict[int, _RequestSendTask] = {}
        self._stopping: set[asyncio.Task[None]] = set()

    @property
    def broker_ids(self) -> set[int]:
        return set(self._brokers)

    def queue_size(self, broker_id: int) -> int:
        sender = self._brokers.get(broker_id)
        return 0 if sender is None else sender.queue.qsize()

    def add_broker(self, broker: BrokerInfo) -> None:
        if broker.id in self._brokers:
            return
        self._brokers[broker.id] = _RequestSendTask(
            broker,
            self._connect,
            self._request_timeout_s,
            self._retry_backoff_s,
            self._max_retry_backoff_s,
        )

    def remove_broker(self, broker_id: int) -> None:
        sender = self._brokers.pop(broker_id, None)
        if sender is None:
            return
        sender.task.cancel()
        # Awaited by close(); the task closes its connection as it is cancelled.
        self._stopping.add(sender.task)
        sender.task.add_done_callback(self._stopping.discard)

    def send(
        self, broker_id: int, request: ControllerRequest, callback: ResponseCallback | None = None
    ) -> None:
        sender = self._brokers.get(broker_id)
        if sender is None:
            log.warning(
                "not sending %s to broker %d: it is not alive", type(request).__name__, broker_id
            )
            return
        sender.queue.put_nowait(_QueueItem(request, callback))

    async def close(self) -> None:
        for broker_id in list(self._brokers):
            self.remove_broker(broker_id)
        stopping = list(self._stopping)
        if stopping:
            await asyncio.gather(*stopping, return_exceptions=True)


# --- ControllerBrokerRequestBatch -------------------------------------------------------------


class ControllerBrokerRequestBatch:
    """Requests of one controller step, merged per broker (Kafka's class of this name).

    UpdateMetadata partition states are taken from the context when the batch is sent, so
    each broker learns a partition's final state of the step once (and the step's tens of
    thousands of adds at a failover cost a dict entry each, not a state each).
    Requests go only to live (or shutting-down) brokers, in Kafka's order: LeaderAndIsr,
    then UpdateMetadata, then StopReplica.
    """

    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        sender: BrokerRequestSender,
        stop_replica_callback: StopReplicaCallback | None = None,
        inter_broker_listener: str = PLAINTEXT,
    ) -> None:
        self.controller_id = controller_id
        self.inter_broker_listener = inter_broker_listener
        self.context = context
        self.sender = sender
        self.stop_replica_callback = stop_replica_callback
        self.leader_and_isr: dict[int, dict[TopicPartition, LeaderAndIsrPartitionState]] = {}
        self.update_metadata_brokers: set[int] = set()
        # An ordered set: the partitions whose state UpdateMetadata will carry.
        self.update_metadata_partitions: dict[TopicPartition, None] = {}
        self.update_metadata_deleted_topics: set[str] = set()
        self.stop_replica: dict[int, dict[TopicPartition, StopReplicaPartition]] = {}

    def is_empty(self) -> bool:
        return not (self.leader_and_isr or self.update_metadata_brokers or self.stop_replica)

    def new_batch(self) -> None:
        if not self.is_empty():
            # Left over from a step that failed half-way (Kafka throws here); those decisions
            # are re-derived from ZooKeeper by whoever acts next, so drop them.
            log.warning("dropping unsent controller requests of a failed step")
            self.clear()

    def clear(self) -> None:
        self.leader_and_isr.clear()
        self.update_metadata_brokers.clear()
        self.update_metadata_partitions.clear()
        self.update_metadata_deleted_topics.clear()
        self.stop_replica.clear()

    def add_leader_and_isr_request_for_brokers(
        self,
        broker_ids: Iterable[int],
        tp: TopicPartition,
        leader_and_isr: LeaderAndIsr,
        replicas: Sequence[int],
        is_new: bool = False,
    ) -> None:
        """LeaderAndIsr for `tp` to `broker_ids`, and UpdateMetadata for it to every broker."""
        moving = self.context.reassignment_states.get(tp)
        state = LeaderAndIsrPartitionState(
            topic=tp.topic,
            partition=tp.partition,
            controller_epoch=leader_and_isr.controller_epoch,
            leader=leader_and_isr.leader,
            leader_epoch=leader_and_isr.leader_epoch,
            isr=list(leader_and_isr.isr),
            zk_version=leader_and_isr.zk_version,
            replicas=list(replicas),
            is_new=is_new,
            adding_replicas=[] if moving is None else list(moving.adding),
            removing_replicas=[] if moving is None else list(moving.removing),
        )
        for broker_id in broker_ids:
            if broker_id >= 0:
                self.leader_and_isr.setdefault(broker_id, {})[tp] = state
        # add_update_metadata_request_for_brokers(live or shutting down, [tp]), inlined: this
        # runs for every partition a failover touches.
        self.update_metadata_brokers.update(self.context.live_brokers.keys())
        self.update_metadata_partitions[tp] = None

    def add_update_metadata_request_for_brokers(
        self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition] = ()
    ) -> None:
        """UpdateMetadata (the live brokers, plus these partitions' states as the context has
        them when the batch is sent) to `broker_ids`.

        Partitions of topics queued for deletion are announced as deleted topics instead:
        Kafka marks them with leader -2 so brokers drop them from their metadata.
        """
        self.update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        pending = self.update_metadata_partitions
        for tp in partitions:
            pending[tp] = None

    def _update_metadata_states(self) -> list[UpdateMetadataPartitionState]:
        """The states of the partitions added, sorted; their topics queued for deletion are
        announced as deleted instead."""
        ctx = self.context
        online = ctx.live_broker_ids  # shutting-down brokers count as offline (Kafka's)
        states = []
        for tp in ctx.sorted_partitions(self.update_metadata_partitions):
            if ctx.is_topic_queued_for_deletion(tp.topic):
                self.update_metadata_deleted_topics.add(tp.topic)
                continue
            leadership = ctx.partition_leadership.get(tp)
            if leadership is None:
                continue  # no leader assigned yet: nothing to say (Kafka skips it too)
            replicas = ctx.partition_replicas(tp)
            states.append(
                UpdateMetadataPartitionState(
                    topic=tp.topic,
                    partition=tp.partition,
                    controller_epoch=leadership.controller_epoch,
                    leader=leadership.leader,
                    leader_epoch=leadership.leader_epoch,
                    isr=list(leadership.isr),
                    zk_version=leadership.zk_version,
                    replicas=list(replicas),
                    offline_replicas=[r for r in replicas if r not in online],
                )
            )
        return states

    def add_deleted_topics(self, broker_ids: Iterable[int], topics: Iterable[str]) -> None:
        """UpdateMetadata telling `broker_ids` that these topics no longer exist."""
        self.update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        self.update_metadata_deleted_topics.update(topics)

    def add_stop_replica_request_for_brokers(
        self, broker_ids: Iterable[int], tp: TopicPartition, delete_partition: bool
    ) -> None:
        leadership = self.context.partition_leadership.get(tp)
        # KIP-570: the leader epoch lets a broker ignore a stale StopReplica; a deletion is
        # never stale, so it carries none.
        epoch = NO_LEADER_EPOCH
        if not delete_partition and leadership is not None:
            epoch = leadership.leader_epoch
        for broker_id in broker_ids:
            if broker_id >= 0:
                self.stop_replica.setdefault(broker_id, {})[tp] = StopReplicaPartition(
                    tp.topic, tp.partition, delete_partition, epoch
                )

    def send_update_metadata_request(
        self,
        broker_ids: Iterable[int],
        controller_epoch: int,
        partitions: Iterable[TopicPartition] = (),
        deleted_topics: Iterable[str] = (),
    ) -> None:
        """UpdateMetadata alone, in a batch of its own, sent at once (Kafka's
        `KafkaController.sendUpdateMetadataRequest`)."""
        self.new_batch()
        self.add_update_metadata_request_for_brokers(broker_ids, partitions)
        self.add_deleted_topics(broker_ids, deleted_topics)
        self.send_requests_to_brokers(controller_epoch)

    def send_requests_to_brokers(self, controller_epoch: int) -> None:
        ctx = self.context
        live = ctx.live_or_shutting_down_broker_ids
        try:
            for broker_id in sorted(self.leader_and_isr):
                if broker_id not in live:
                    continue
                states = self.leader_and_isr[broker_id]
                leader_ids = {s.leader for s in states.values()}
                self.sender.send(
                    broker_id,
                    LeaderAndIsrRequest(
                        controller_id=self.controller_id,
                        controller_epoch=controller_epoch,
                        broker_epoch=ctx.broker_epoch(broker_id),
                        partition_states=[states[tp] for tp in ctx.sorted_partitions(states)],
                        live_leaders=[
                            broker_node(ctx.live_brokers[b], self.inter_broker_listener)
                            for b in sorted(leader_ids & live)
                        ],
                    ),
                )

            if self.update_metadata_brokers:
                partition_states = self._update_metadata_states()
                live_brokers = [
                    broker_node(ctx.live_brokers[b], self.inter_broker_listener)
                    for b in sorted(live)
                ]
                deleted = sorted(self.update_metadata_deleted_topics)
                topic_ids = {
                    s.topic: ctx.topic_ids[s.topic]
                    for s in partition_states
                    if s.topic in ctx.topic_ids
                }
                for broker_id in sorted(self.update_metadata_brokers & live):
                    self.sender.send(
                        broker_id,
                        UpdateMetadataRequest(
                            controller_id=self.controller_id,
                            controller_epoch=controller_epoch,
                            broker_epoch=ctx.broker_epoch(broker_id),
                            partition_states=partition_states,
                            live_brokers=live_brokers,
                            deleted_topics=deleted,
                            topic_ids=topic_ids,
                        ),
                    )

            for broker_id in sorted(self.stop_replica):
                if broker_id not in live:
                    continue
                by_tp = self.stop_replica[broker_id]
                for delete in (False, True):
                    tps = [
                        tp
                        for tp in ctx.sorted_partitions(by_tp)
                        if by_tp[tp].delete_partition is delete
                    ]
                    if not tps:
                        continue
                    callback: ResponseCallback | None = None
                    if delete and self.stop_replica_callback is not None:
                        callback = self._stop_replica_response_handler(broker_id, tps)
                    self.sender.send(
                        broker_id,
                        StopReplicaRequest(
                            controller_id=self.controller_id,
                            controller_epoch=controller_epoch,
                            broker_epoch=ctx.broker_epoch(broker_id),
                            partitions=[by_tp[tp] for tp in tps],
                        ),
                        callback,
                    )
        finally:
            self.clear()

    def _stop_replica_response_handler(
        self, broker_id: int, tps: list[TopicPartition]
    ) -> ResponseCallback:
        assert self.stop_replica_callback is not None
        on_response = self.stop_replica_callback

        def handle(response: object) -> None:
            on_response(broker_id, tps, response)

        return handle
