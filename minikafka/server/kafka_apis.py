"""Request dispatch: one method per API, each a thin translation to the component that owns
the rule (replica manager, metadata cache, controller, ZooKeeper admin path)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from minikafka.common import PLAINTEXT, TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.config.dynamic import (
    AlterableConfig,
    BrokerConfigLayers,
    DescribedConfig,
    ResourceType,
    altered_broker_configs,
    altered_topic_overrides,
    broker_entity,
    describe_broker,
    describe_broker_default,
    describe_topic,
    replaced_broker_configs,
    replaced_topic_overrides,
)
from minikafka.controller.assignment import (
    assign_replicas,
    new_partitions_assignment,
    random_start_index,
    validate_manual_assignment,
)
from minikafka.coordinator.group.offsets_topic import OFFSETS_TOPIC
from minikafka.protocol.errors import (
    CoordinatorNotAvailableError,
    ErrorCode,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    KafkaError,
    NotControllerError,
    RequestTimedOutError,
    TopicAlreadyExistsError,
    TopicDeletionDisabledError,
    UnknownTopicOrPartitionError,
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
from minikafka.server.metadata_cache import MetadataCache
from minikafka.server.network import NO_RESPONSE, Handler
from minikafka.server.producer_ids import PRODUCER_ID_BLOCK_SIZE, ProducerIdManager
from minikafka.zk.client import ZkBadVersionError, ZkClient, ZkError, ZkNoNodeError

if TYPE_CHECKING:
    from minikafka.server.group_coordinator_adapter import GroupCoordinatorAdapter

log = logging.getLogger(__name__)

# CreatePartitions re-reads and re-validates a topic whose assignment changed between its
# read and its conditional write (another admin), at most this many times.
CREATE_PARTITIONS_ATTEMPTS = 5

_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def validate_topic_name(name: str) -> None:
    """Kafka's Topic.validate."""
    if name in (".", ".."):
        raise InvalidTopicError(f"Topic name cannot be '{name}'")
    if not _LEGAL_TOPIC.match(name):
        raise InvalidTopicError(
            f"Topic name '{name}' is illegal: it must be 1-249 characters of "
            "ASCII alphanumerics, '.', '_' and '-'"
        )


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
        self.cluster_id = cluster_id  # /cluster/id, read or created at startup
        self.producer_ids = ProducerIdManager(
            lambda: asyncio.to_thread(
                zk.allocate_producer_id_block, config.broker_id, PRODUCER_ID_BLOCK_SIZE
            )
        )
        self.rm = replica_manager
        self.cache = metadata_cache
        self.zk = zk
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
            if await asyncio.to_thread(self.zk.topic_exists, name):
                return not_yet
            if not (allow_auto_create and self.config.auto_create_topics_enable):
                return MetadataTopic(int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), name, [])
            await self._create_topic(CreatableTopic(name, -1, -1, {}, {}), validate_only=False)
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

    # --- configs (DescribeConfigs, IncrementalAlterConfigs: Kafka listener only) ---------

    async def describe_configs(
        self,
        resource_type: int,
        name: str,
        keys: list[str] | None,
        include_synonyms: bool,
    ) -> list[DescribedConfig]:
        """One resource's configs; KafkaError with Kafka's code for what cannot be described."""
        if resource_type == ResourceType.TOPIC:
            validate_topic_name(name)
            try:
                if not await asyncio.to_thread(self.zk.topic_exists, name):
                    raise UnknownTopicOrPartitionError(f"Topic {name} does not exist.")
                overrides = await asyncio.to_thread(self.zk.get_topic_config, name)
            except ZkError as e:
                raise KafkaError(f"cannot read topic {name}'s config: {e}") from e
            return describe_topic(self.config_layers, overrides, keys, include_synonyms)
        if resource_type == ResourceType.BROKER:
            if not name:
                return describe_broker_default(self.config_layers, keys, include_synonyms)
            self._check_own_broker_id(name, " or empty string,")
            return describe_broker(self.config_layers, keys, include_synonyms)
        raise InvalidRequestError(f"Unsupported resource type: {resource_type}")

    def _check_own_broker_id(self, name: str, alternative: str = ",") -> None:
        if name != str(self.config.broker_id):
            raise InvalidRequestError(
                f"Unexpected broker id, expected {self.config.broker_id}{alternative} but "
                f"received {name}"
            )

    async def incremental_alter_configs(
        self,
        resource_type: int,
        name: str,
        changes: list[AlterableConfig],
        validate_only: bool,
    ) -> None:
        """Change a topic's overrides or a broker's dynamic configs (SET, DELETE, APPEND,
        SUBTRACT) and tell every broker, or only check the change; KafkaError with Kafka's
        code when it cannot be made."""
        if resource_type == ResourceType.BROKER:
            await self._change_broker_config(
                name,
                validate_only,
                lambda entity, current: altered_broker_configs(
                    self.config_layers, entity, current, changes
                ),
            )
            return
        await self._change_topic_config(
            resource_type,
            name,
            validate_only,
            lambda current: altered_topic_overrides(self.config, current, changes),
        )

    async def alter_configs(
        self,
        resource_type: int,
        name: str,
        configs: list[tuple[str, str | None]],
        validate_only: bool,
    ) -> None:
        """AlterConfigs (the non-incremental API): the topic's overrides, or the broker
        entity's dynamic configs, become exactly `configs`, or the change is only checked."""
        if resource_type == ResourceType.BROKER:
            await self._change_broker_config(
                name,
                validate_only,
                lambda entity, _current: replaced_broker_configs(
                    self.config_layers, entity, configs
                ),
            )
            return
        await self._change_topic_config(
            resource_type,
            name,
            validate_only,
            lambda _current: replaced_topic_overrides(self.config, configs),
        )

    async def _change_broker_config(
        self,
        name: str,
        validate_only: bool,
        configs_after: Callable[[str, dict[str, str]], dict[str, str]],
    ) -> None:
        """Write a broker entity's dynamic configs (`/config/brokers/<id>`, or `<default>` for
        the resource named "") with a change notification every broker reads; only this
        broker's own id or the default can be changed through it, as in Kafka."""
        if name:
            self._check_own_broker_id(name)
        entity = broker_entity(name)
        try:
            current = await asyncio.to_thread(self.zk.get_broker_config, entity)
            new = configs_after(entity, current)
            if validate_only or new == current:
                return
            await asyncio.to_thread(self.zk.change_broker_config, entity, new)
        except ZkError as e:
            raise KafkaError(f"cannot change the broker config {entity}: {e}") from e
        log.info("broker config %s: %s -> %s", entity, current, new)

    async def _change_topic_config(
        self,
        resource_type: int,
        name: str,
        validate_only: bool,
        overrides_after: Callable[[dict[str, str]], dict[str, str]],
    ) -> None:
        """Write the topic's overrides `overrides_after` makes of its current ones (checked
        there) to `/config/topics/<t>` with a change notification for every broker."""
        if resource_type != ResourceType.TOPIC:
            raise InvalidRequestError(
                "AlterConfigs is only supported for topics and brokers, but resource type is "
                f"{resource_type}"
            )
        validate_topic_name(name)
        try:
            if not await asyncio.to_thread(self.zk.topic_exists, name):
                raise UnknownTopicOrPartitionError(f"Topic {name} does not exist.")
            current = await asyncio.to_thread(self.zk.get_topic_config, name)
            new = overrides_after(current)
            if validate_only or new == current:
                return
            await asyncio.to_thread(self.zk.change_topic_config, name, new)
        except ZkError as e:
            raise KafkaError(f"cannot change topic {name}'s config: {e}") from e
        log.info("topic %s: config overrides %s -> %s", name, current, new)

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

    # --- admin ---------------------------------------------------------------------------

    async def handle_create_topics(self, req: CreateTopicsRequest) -> CreateTopicsResponse:
        results: dict[str, TopicResult] = {}
        created: dict[str, int] = {}
        seen: set[str] = set()
        for t in req.topics:
            if t.name in seen:
                results[t.name] = TopicResult(
                    t.name, int(ErrorCode.INVALID_REQUEST), "Duplicate topic in request."
                )
                continue
            seen.add(t.name)
            try:
                partitions = await self._create_topic(t, validate_only=req.validate_only)
                results[t.name] = TopicResult(t.name, int(ErrorCode.NONE))
                if not req.validate_only:
                    created[t.name] = partitions
            except KafkaError as e:
                results[t.name] = TopicResult(t.name, int(e.code), e.message)
        if created and req.timeout_ms > 0:
            # Kafka's DelayedCreatePartitions: answer once every new partition has a leader
            # in this broker's metadata, or REQUEST_TIMED_OUT (the topic still gets created).
            done = await self._wait_for_metadata(
                lambda: all(
                    self.cache.all_partitions_have_leaders(name, n) for name, n in created.items()
                ),
                req.timeout_ms,
            )
            if not done:
                for name, n in created.items():
                    if not self.cache.all_partitions_have_leaders(name, n):
                        err = RequestTimedOutError(
                            f"topic {name} was created but not all {n} partitions have "
                            f"leaders after {req.timeout_ms} ms"
                        )
                        results[name] = TopicResult(name, int(err.code), err.message)
        return CreateTopicsResponse([results[t.name] for t in req.topics if t.name in results])

    async def create_topic(self, t: CreatableTopic) -> int:
        """Create a topic as CreateTopics does (for the broker's own internal topics)."""
        return await self._create_topic(t, validate_only=False)

    async def _create_topic(self, t: CreatableTopic, *, validate_only: bool) -> int:
        validate_topic_name(t.name)
        live = await asyncio.to_thread(self.zk.get_broker_ids)
        self.config.log_config().with_overrides(t.configs).validate()
        if t.assignments:
            if t.num_partitions != -1 or t.replication_factor != -1:
                raise InvalidRequestError(
                    "Both numPartitions or replicationFactor and replicasAssignments were set."
                )
            assignment = {p: tuple(r) for p, r in t.assignments.items()}
            validate_manual_assignment(assignment, live)
        else:
            partitions = self.config.num_partitions if t.num_partitions == -1 else t.num_partitions
            rf = (
                self.config.default_replication_factor
                if t.replication_factor == -1
                else t.replication_factor
            )
            if partitions <= 0:
                raise InvalidPartitionsError("Number of partitions must be larger than 0.")
            if rf <= 0:
                raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
            if rf > len(live):
                raise InvalidReplicationFactorError(
                    f"Replication factor: {rf} larger than available brokers: {len(live)}."
                )
            assignment = assign_replicas(
                live, partitions, rf, start_index=random_start_index(len(live), None)
            )
        if not validate_only:
            await asyncio.to_thread(self.zk.create_topic, t.name, assignment, dict(t.configs))
            log.info("created topic %s with assignment %s", t.name, assignment)
        return len(assignment)

    async def handle_delete_topics(self, req: DeleteTopicsRequest) -> DeleteTopicsResponse:
        results: dict[str, TopicResult] = {}
        requested: list[str] = []
        for name in req.topic_names:
            try:
                if not self.config.delete_topic_enable:
                    raise TopicDeletionDisabledError(
                        "Topic deletion is disabled (delete.topic.enable=false)."
                    )
                # A name no topic can have names none that exists (and no znode path).
                legal = bool(_LEGAL_TOPIC.match(name)) and name not in (".", "..")
                if not legal or not await asyncio.to_thread(self.zk.topic_exists, name):
                    raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
                await asyncio.to_thread(self.zk.request_topic_deletion, name)
                requested.append(name)
                results[name] = TopicResult(name, int(ErrorCode.NONE))
            except KafkaError as e:
                results[name] = TopicResult(name, int(e.code), e.message)
        if requested and req.timeout_ms > 0:
            done = await self._wait_for_metadata(
                lambda: not any(self.cache.contains_topic(n) for n in requested), req.timeout_ms
            )
            if not done:
                for name in requested:
                    if self.cache.contains_topic(name):
                        err = RequestTimedOutError(
                            f"deletion of {name} was requested but has not completed "
                            f"after {req.timeout_ms} ms"
                        )
                        results[name] = TopicResult(name, int(err.code), err.message)
        return DeleteTopicsResponse([results[n] for n in req.topic_names if n in results])

    async def handle_create_partitions(
        self, req: CreatePartitionsRequest
    ) -> CreatePartitionsResponse:
        """Kafka's handleCreatePartitionsRequest + ZkAdminManager.createPartitions: the new
        partitions go into the topic's assignment znode (a conditional write of the whole
        assignment); the controller's watch on it creates them."""
        names = list(dict.fromkeys(t.name for t in req.topics))
        if self.controller is None or not self.controller.is_active:
            return CreatePartitionsResponse(
                [TopicResult(n, int(ErrorCode.NOT_CONTROLLER)) for n in names]
            )
        counts: dict[str, int] = {}
        for t in req.topics:
            counts[t.name] = counts.get(t.name, 0) + 1
        results: dict[str, TopicResult] = {}
        changed: dict[str, int] = {}
        for t in req.topics:
            if t.name in results:
                continue
            if counts[t.name] > 1:
                results[t.name] = TopicResult(
                    t.name, int(ErrorCode.INVALID_REQUEST), "Duplicate topic in request."
                )
                continue
            if self.controller.is_topic_queued_for_deletion(t.name):
                err: KafkaError = InvalidTopicError("The topic is queued for deletion.")
                results[t.name] = TopicResult(t.name, int(err.code), err.message)
                continue
            try:
                await self._create_partitions(t, validate_only=req.validate_only)
            except KafkaError as e:
                results[t.name] = TopicResult(t.name, int(e.code), e.message)
                continue
            results[t.name] = TopicResult(t.name, int(ErrorCode.NONE))
            if not req.validate_only:
                changed[t.name] = t.count
        if changed and req.timeout_ms > 0:
            # Kafka's DelayedCreatePartitions: answer once every partition of the topics has
            # a leader in this broker's metadata, or REQUEST_TIMED_OUT (the partitions are
            # still added).
            done = await self._wait_for_metadata(
                lambda: all(
                    self.cache.all_partitions_have_leaders(name, n) for name, n in changed.items()
                ),
                req.timeout_ms,
            )
            if not done:
                for name, n in changed.items():
                    if not self.cache.all_partitions_have_leaders(name, n):
                        err = RequestTimedOutError(
                            f"partitions were added to topic {name} but not all {n} "
                            f"partitions have leaders after {req.timeout_ms} ms"
                        )
                        results[name] = TopicResult(name, int(err.code), err.message)
        return CreatePartitionsResponse([results[n] for n in names])

    async def _create_partitions(self, t: CreatePartitionsTopic, *, validate_only: bool) -> None:
        if not _LEGAL_TOPIC.match(t.name) or t.name in (".", ".."):
            raise UnknownTopicOrPartitionError(f"The topic '{t.name}' does not exist.")
        for _ in range(CREATE_PARTITIONS_ATTEMPTS):
            got = await asyncio.to_thread(self.zk.get_assignment_and_version, t.name)
            if got is None:
                raise UnknownTopicOrPartitionError(f"The topic '{t.name}' does not exist.")
            existing, version, topic_id = got
            brokers = await asyncio.to_thread(self.zk.get_broker_ids)
            added = new_partitions_assignment(t.name, existing, brokers, t.count, t.assignments)
            if validate_only:
                return
            try:
                await asyncio.to_thread(
                    self.zk.set_topic_assignment,
                    t.name,
                    {**existing, **added},
                    version,
                    topic_id,
                )
            except ZkBadVersionError:
                log.info("assignment of topic %s changed while adding partitions; again", t.name)
                continue
            except ZkNoNodeError:
                raise UnknownTopicOrPartitionError(
                    f"The topic '{t.name}' does not exist."
                ) from None
            log.info(
                "Creating %d partitions for '%s' with the following replica assignment: %s",
                len(added),
                t.name,
                added,
            )
            return
        raise KafkaError(
            f"the assignment of topic {t.name} kept changing while partitions were added to it"
        )

    async def _wait_for_metadata(self, condition: Callable[[], bool], timeout_ms: int) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        while not condition():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            await self.cache.wait_for_change(remaining)
        return True

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
