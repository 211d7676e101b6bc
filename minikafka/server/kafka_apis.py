"""Request dispatch: one method per API, each a thin translation to the component that owns
the rule (replica manager, metadata cache, controller, ZooKeeper admin path)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from minikafka.common import PLAINTEXT, TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.config.dynamic import BrokerConfigLayers
from minikafka.coordinator.group.offsets_topic import OFFSETS_TOPIC
from minikafka.protocol.errors import (
    CoordinatorNotAvailableError,
    ErrorCode,
    InvalidTopicError,
    KafkaError,
    NotControllerError,
    TopicAlreadyExistsError,
    UnsupportedVersionError,
)
from minikafka.protocol.transport import FileRegion
from minikafka.replication.replica_manager import ReplicaManager
from minikafka.rpc.framing import RequestHeader
from minikafka.rpc.messages import (
    API_TYPES,
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeReplicasRequest,
    DescribeReplicasResponse,
    FetchRequest,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    ListOffsetsRequest,
    MetadataRequest,
    MetadataResponse,
    MetadataTopic,
    OffsetForLeaderEpochRequest,
    PartitionRef,
    PartitionReplicaStates,
    ProducePartitionResponse,
    ProduceRequest,
    ProduceResponse,
    ProduceTopicResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    TopicResult,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from minikafka.server.admin_manager import (
    AdminManager,
    NewPartitions,
    NewTopic,
    validate_topic_name,
)
from minikafka.server.admin_manager import TopicResult as AdminTopicResult
from minikafka.server.admin_zk_store import KazooAdminZkStore
from minikafka.server.metadata_cache import MetadataCache
from minikafka.server.network import NO_RESPONSE, Handler
from minikafka.server.producer_ids import PRODUCER_ID_BLOCK_SIZE, ProducerIdManager
from minikafka.zk.client import ZkClient, ZkError

if TYPE_CHECKING:
    from minikafka.server.group_coordinator_adapter import GroupCoordinatorAdapter

log = logging.getLogger(__name__)


class ControllerLike(Protocol):
    """The part of the controller the request handlers use."""

    @property
    def is_active(self) -> bool: ...

    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> list[TopicPartition]: ...

    def is_topic_queued_for_deletion(self, topic: str) -> bool: ...


class KafkaApis:
    def __init__(
        self,
        config: BrokerConfig,
        replica_manager: ReplicaManager,
        metadata_cache: MetadataCache,
        zk: ZkClient,
        controller: ControllerLike | None,
        now_ms: Callable[[], int],
        *,
        cluster_id: str | None = None,
        config_layers: BrokerConfigLayers | None = None,
    ) -> None:
        self.config = config  # the settings in force (the broker replaces it when they change)
        # server.properties and the dynamic broker configs (the broker keeps it current).
        self.config_layers = config_layers or BrokerConfigLayers(config)
        self.admin = AdminManager(
            KazooAdminZkStore(zk),
            metadata_cache,
            controller,
            lambda: self.config,
            lambda: self.config_layers,
        )
        self.cluster_id = cluster_id  # /cluster/id, read or created at startup
        self.producer_ids = ProducerIdManager(
            lambda: asyncio.to_thread(
                zk.allocate_producer_id_block, config.broker_id, PRODUCER_ID_BLOCK_SIZE
            )
        )
        self.rm = replica_manager
        self.cache = metadata_cache
        self.controller = controller
        self._now_ms = now_ms
        # Set by the broker once created (server/group_coordinator_adapter.py).
        self.group_coordinator: GroupCoordinatorAdapter | None = None
        self._handlers: dict[type, Callable[[Any], Awaitable[Any]]] = {
            ApiVersionsRequest: self.handle_api_versions,
            MetadataRequest: self.handle_metadata,
            ProduceRequest: self.handle_produce,
            FetchRequest: self.handle_fetch,
            ListOffsetsRequest: self.handle_list_offsets,
            OffsetForLeaderEpochRequest: self.handle_offsets_for_leader_epoch,
            LeaderAndIsrRequest: self.handle_leader_and_isr,
            UpdateMetadataRequest: self.handle_update_metadata,
            StopReplicaRequest: self.handle_stop_replica,
            ControlledShutdownRequest: self.handle_controlled_shutdown,
            CreateTopicsRequest: self.handle_create_topics,
            DeleteTopicsRequest: self.handle_delete_topics,
            CreatePartitionsRequest: self.handle_create_partitions,
            DescribeReplicasRequest: self.handle_describe_replicas,
        }

    def handler_for(self, listener: str) -> Handler:
        """The socket server's handler for one listener: Metadata answers with the brokers'
        addresses on the listener the request came in on (as Kafka does), so a client that
        bootstrapped from an external address is sent external addresses."""

        async def handle(header: RequestHeader, request: Any) -> Any:
            if isinstance(request, MetadataRequest):
                return await self.handle_metadata(request, listener)
            return await self.handle(header, request)

        return handle

    async def handle(self, header: RequestHeader, request: Any) -> Any:
        handler = self._handlers.get(type(request))
        if handler is None:
            raise UnsupportedVersionError(f"{type(request).__name__} is not supported")
        return await handler(request)

    # --- client APIs ---------------------------------------------------------------------

    async def handle_api_versions(self, req: ApiVersionsRequest) -> ApiVersionsResponse:
        keys = [
            ApiVersion(int(key), 0, 0)
            for key, (req_type, _) in API_TYPES.items()
            if req_type in self._handlers
        ]
        return ApiVersionsResponse(int(ErrorCode.NONE), keys)

    async def handle_metadata(
        self, req: MetadataRequest, listener: str = PLAINTEXT
    ) -> MetadataResponse:
        topics = self.cache.get_topic_metadata(req.topics)
        if req.topics is not None:
            topics = [
                await self._unknown_topic_metadata(t.name, req.allow_auto_topic_creation)
                if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else t
                for t in topics
            ]
        return MetadataResponse(
            self.cache.alive_brokers_on(listener), self.cache.controller_id, topics
        )

    async def _unknown_topic_metadata(self, name: str, allow_auto_create: bool) -> MetadataTopic:
        """A requested topic missing from the metadata cache. ZooKeeper decides whether it
        exists: a topic being created (or whose UpdateMetadata has not reached us yet) is
        LEADER_NOT_AVAILABLE, so clients retry; only a topic absent from ZooKeeper is
        UNKNOWN_TOPIC_OR_PARTITION, which clients can then trust to fail at once. With
        auto.create.topics.enable and the client's allowAutoTopicCreation it is created
        with num.partitions and default.replication.factor (Kafka's createTopic in
        KafkaApis), answered LEADER_NOT_AVAILABLE until its leaders are elected."""
        not_yet = MetadataTopic(int(ErrorCode.LEADER_NOT_AVAILABLE), name, [])
        try:
            validate_topic_name(name)
        except InvalidTopicError as e:
            return MetadataTopic(int(e.code), name, [])
        try:
            if await self.admin.topic_exists(name):
                return not_yet
            if not (allow_auto_create and self.config.auto_create_topics_enable):
                return MetadataTopic(int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), name, [])
            await self.admin.create_topic(NewTopic(name))
        except ZkError as e:
            # No ZooKeeper now: we cannot tell, so the client retries (a retriable code).
            log.info("metadata for unknown topic %s: ZooKeeper unavailable (%s)", name, e)
            return not_yet
        except TopicAlreadyExistsError:
            pass  # another broker's client asked at the same moment
        except KafkaError as e:
            log.info("auto-creation of topic %s failed: %s", name, e)
            return MetadataTopic(int(e.code), name, [])
        log.info("auto-created topic %s (auto.create.topics.enable)", name)
        return not_yet

    async def handle_produce(self, req: ProduceRequest) -> Any:
        # Decoded requests carry records as a memoryview of the received frame.
        entries = {
            TopicPartition(t.name, p.partition): (
                p.records if isinstance(p.records, bytes | bytearray | memoryview) else None
            )
            for t in req.topics
            for p in t.partitions
        }
        # Only the group coordinator writes its internal topic (Kafka: "Cannot append to
        # internal topic"); a client's records there could not be loaded as groups.
        internal = {tp for tp in entries if tp.topic == OFFSETS_TOPIC}
        results = await self.rm.append_records(
            req.acks, req.timeout_ms, {tp: r for tp, r in entries.items() if tp not in internal}
        )
        for tp in internal:
            results[tp] = ProducePartitionResponse(
                tp.partition,
                int(ErrorCode.INVALID_TOPIC_EXCEPTION),
                -1,
                -1,
                f"Cannot append to internal topic {tp.topic}",
            )
        if req.acks == 0:
            return NO_RESPONSE
        return ProduceResponse(
            [
                ProduceTopicResponse(
                    t.name, [results[TopicPartition(t.name, p.partition)] for p in t.partitions]
                )
                for t in req.topics
            ]
        )

    async def handle_fetch(self, req: FetchRequest) -> Any:
        resp = await self.rm.fetch_messages(req)
        stats = self.rm.topic_stats
        to_follower = req.replica_id >= 0
        for t in resp.topics:
            for r in t.partitions:
                records = r.records
                if records is None:
                    size = 0
                elif isinstance(records, bytes | bytearray | memoryview):
                    size = len(records)
                else:
                    size = cast(FileRegion, records).size  # sent with sendfile
                stats.record_fetch(
                    t.name, size, failed=r.error_code != ErrorCode.NONE, to_follower=to_follower
                )
        return resp

    async def handle_init_producer_id(self) -> int:
        """A new producer id for an idempotent producer (epoch 0), as Kafka's transaction
        coordinator answers a producer without a transactional id."""
        try:
            return await self.producer_ids.generate()
        except ZkError as e:
            raise CoordinatorNotAvailableError(f"no producer id block from ZooKeeper: {e}") from e

    async def handle_list_offsets(self, req: ListOffsetsRequest) -> Any:
        return self.rm.list_offsets(req)

    async def handle_offsets_for_leader_epoch(self, req: OffsetForLeaderEpochRequest) -> Any:
        return self.rm.offsets_for_leader_epoch(req)

    # --- controller -> broker ------------------------------------------------------------

    def now_ms(self) -> int:
        return self._now_ms()

    async def handle_leader_and_isr(self, req: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        try:
            resp = await self.rm.become_leader_or_follower(req)
        except KafkaError as e:
            log.warning("rejected LeaderAndIsr from controller %d: %s", req.controller_id, e)
            return LeaderAndIsrResponse(int(e.code), [])
        self._on_offsets_leadership_change(
            [st.partition for st in req.partition_states if st.topic == OFFSETS_TOPIC]
        )
        return resp

    def _on_offsets_leadership_change(self, partitions: list[int]) -> None:
        """Kafka's onLeadershipChange: the group coordinator loads the groups of the
        offsets partitions led here now and unloads the others among `partitions`."""
        if self.group_coordinator is None or not partitions:
            return
        led: dict[int, int] = {}
        resigned: list[int] = []
        for partition in partitions:
            p = self.rm.partitions.get(TopicPartition(OFFSETS_TOPIC, partition))
            if p is not None and p.is_leader:
                led[partition] = p.leader_epoch
            else:
                resigned.append(partition)
        self.group_coordinator.on_leadership_change(led, resigned)

    async def handle_update_metadata(self, req: UpdateMetadataRequest) -> UpdateMetadataResponse:
        try:
            self.rm.check_controller_request(req.controller_epoch, req.broker_epoch)
        except KafkaError as e:
            log.warning("rejected UpdateMetadata from controller %d: %s", req.controller_id, e)
            return UpdateMetadataResponse(int(e.code))
        self.rm.controller_epoch = req.controller_epoch
        self.cache.update(req)
        return UpdateMetadataResponse(int(ErrorCode.NONE))

    async def handle_stop_replica(self, req: StopReplicaRequest) -> StopReplicaResponse:
        try:
            resp = await self.rm.stop_replicas(req)
        except KafkaError as e:
            log.warning("rejected StopReplica from controller %d: %s", req.controller_id, e)
            return StopReplicaResponse(int(e.code), [])
        self._on_offsets_leadership_change(
            [sp.partition for sp in req.partitions if sp.topic == OFFSETS_TOPIC]
        )
        return resp

    async def handle_controlled_shutdown(
        self, req: ControlledShutdownRequest
    ) -> ControlledShutdownResponse:
        try:
            if self.controller is None or not self.controller.is_active:
                raise NotControllerError(f"broker {self.config.broker_id} is not the controller")
            remaining = await self.controller.controlled_shutdown(req.broker_id, req.broker_epoch)
        except KafkaError as e:
            return ControlledShutdownResponse(int(e.code), [])
        return ControlledShutdownResponse(
            int(ErrorCode.NONE), [PartitionRef(tp.topic, tp.partition) for tp in remaining]
        )

    # --- admin (the RPC's copies, for tests; Kafka's are server/kafka_api/topics.py) ------

    async def handle_create_topics(self, req: CreateTopicsRequest) -> CreateTopicsResponse:
        results = await self.admin.create_topics(
            [
                NewTopic(t.name, t.num_partitions, t.replication_factor, t.assignments, t.configs)
                for t in req.topics
            ],
            req.timeout_ms,
            req.validate_only,
        )
        return CreateTopicsResponse([_topic_result(r) for r in results])

    async def handle_delete_topics(self, req: DeleteTopicsRequest) -> DeleteTopicsResponse:
        results = await self.admin.delete_topics(list(req.topic_names), req.timeout_ms)
        return DeleteTopicsResponse([_topic_result(r) for r in results])

    async def handle_create_partitions(
        self, req: CreatePartitionsRequest
    ) -> CreatePartitionsResponse:
        results = await self.admin.create_partitions(
            [NewPartitions(t.name, t.count, t.assignments) for t in req.topics],
            req.timeout_ms,
            req.validate_only,
        )
        return CreatePartitionsResponse([_topic_result(r) for r in results])

    async def handle_describe_replicas(self, req: DescribeReplicasRequest) -> Any:
        """minikafka's own: the leader's view of each replica (LEO, lag, caught-up age)."""
        now = self._now_ms()
        out: list[PartitionReplicaStates] = []
        for tp, p in sorted(self.rm.partitions.items()):
            if not p.is_leader or (req.topics is not None and tp.topic not in req.topics):
                continue
            out.append(
                PartitionReplicaStates(
                    tp.topic,
                    tp.partition,
                    int(ErrorCode.NONE),
                    p.leader_id,
                    p.leader_epoch,
                    p.high_watermark,
                    p.log_end_offset,
                    p.replica_states(now),
                )
            )
        return DescribeReplicasResponse(out)


def _topic_result(r: AdminTopicResult) -> TopicResult:
    return TopicResult(r.name, r.error_code, r.error_message)
