"""What the request handlers of both protocols call: the broker's parts and the rules a
Kafka request and its inter-broker RPC counterpart share.

Kafka's APIs (server/kafka_api/) read Metadata from here (the metadata cache, with a
requested topic it lacks looked up in ZooKeeper and auto-created), append records and list
offsets through the replica manager (clients may not write `__consumer_offsets`), and ask
the admin manager (topics, configs) and the producer id manager. They and minikafka's RPC
between brokers (server/rpc_apis.py) both fetch here (fetched bytes are counted per topic)
and ask for leader epochs' end offsets.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Protocol, cast

from minikafka.common import TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.config.dynamic import BrokerConfigLayers
from minikafka.controller.events import ApiError
from minikafka.protocol.errors import (
    CoordinatorNotAvailableError,
    ErrorCode,
    InvalidTopicError,
    KafkaError,
    TopicAlreadyExistsError,
)
from minikafka.protocol.transport import FileRegion
from minikafka.replication.replica_manager import (
    ClientMetadata,
    LogDirDescription,
    ReplicaManager,
)
from minikafka.rpc.messages import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataResponse,
    MetadataTopic,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    ProducePartitionResponse,
)
from minikafka.rules.consumer_offsets import OFFSETS_TOPIC
from minikafka.rules.election import ElectionType
from minikafka.rules.reassignment import ReplicaAssignment
from minikafka.server.acl_store import AclStore
from minikafka.server.admin_manager import AdminManager, NewTopic, validate_topic_name
from minikafka.server.admin_zk_store import KazooAdminZkStore
from minikafka.server.authorization import RequestAuthorizer
from minikafka.server.metadata_cache import MetadataCache
from minikafka.server.producer_ids import PRODUCER_ID_BLOCK_SIZE, ProducerIdManager
from minikafka.server.scram_credentials import ScramCredentialAdmin, ScramCredentialCache
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

    async def elect_leaders(
        self, partitions: Iterable[TopicPartition], election_type: ElectionType
    ) -> dict[TopicPartition, int | ApiError]: ...
    async def alter_partition_reassignments(
        self, reassignments: dict[TopicPartition, tuple[int, ...] | None]
    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]: ...

    async def list_partition_reassignments(
        self, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment]: ...


class BrokerServices:
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
        store = KazooAdminZkStore(zk)
        self.admin = AdminManager(
            store,
            metadata_cache,
            controller,
            lambda: self.config,
            lambda: self.config_layers,
        )
        self.cluster_id = cluster_id  # /cluster/id, read or created at startup
        # SCRAM users: the cache SASL reads, and AlterUserScramCredentials' rules.
        self.scram_credentials = ScramCredentialCache()
        self.scram_admin = ScramCredentialAdmin(store)
        # Who may do what (authorization.py): allows everything until the broker gives it
        # an ACL authorizer (authorizer.class.name).
        self.authorizer = RequestAuthorizer(None)
        # The ACLs in ZooKeeper and CreateAcls/DeleteAcls' writes (acl_store.py): set by the
        # broker with an authorizer (its cache is then `authorizer.acls`), else None.
        self.acl_store: AclStore | None = None
        self.user_store = store
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

    def now_ms(self) -> int:
        return self._now_ms()

    async def metadata(
        self,
        topics: list[str] | None,
        allow_auto_topic_creation: bool,
        listener: str,
    ) -> MetadataResponse:
        """The cluster as this broker's metadata cache has it, with the brokers' addresses on
        `listener`, and `topics` (None: every topic the cache has); requested topics it lacks
        are looked up, and maybe auto-created. Kafka's allowAutoTopicCreation: producers
        send true, consumers their allow.auto.create.topics, admin clients false."""
        found = self.cache.get_topic_metadata(topics)
        if topics is not None:
            found = [
                await self._unknown_topic_metadata(t.name, allow_auto_topic_creation)
                if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else t
                for t in found
            ]
        return MetadataResponse(
            self.cache.alive_brokers_on(listener), self.cache.controller_id, found
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

    async def produce(
        self,
        acks: int,
        timeout_ms: int,
        entries: Mapping[TopicPartition, bytes | bytearray | memoryview | None],
    ) -> dict[TopicPartition, ProducePartitionResponse]:
        """Append each partition's records as the replica manager decides (acks,
        min.insync.replicas, acks=all waiting for the ISR) and return each partition's
        result; a partition given None (no records) is refused."""
        # Only the group coordinator writes its internal topic (Kafka: "Cannot append to
        # internal topic"); a client's records there could not be loaded as groups.
        internal = {tp for tp in entries if tp.topic == OFFSETS_TOPIC}
        results = await self.rm.append_records(
            acks, timeout_ms, {tp: r for tp, r in entries.items() if tp not in internal}
        )
        for tp in internal:
            results[tp] = ProducePartitionResponse(
                tp.partition,
                int(ErrorCode.INVALID_TOPIC_EXCEPTION),
                -1,
                -1,
                f"Cannot append to internal topic {tp.topic}",
            )
        return results

    async def delete_records(
        self, timeout_ms: int, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, tuple[int, int]]:
        """DeleteRecords: per partition (error code, low watermark). A partition the
        metadata lacks is UNKNOWN_TOPIC_OR_PARTITION; one this broker does not host,
        NOT_LEADER_OR_FOLLOWER (Kafka's getPartitionOrError: the client looks again)."""
        results: dict[TopicPartition, tuple[int, int]] = {}
        asked: dict[TopicPartition, int] = {}
        for tp, offset in offsets.items():
            if self.cache.partition_state(tp) is None:
                results[tp] = (int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), -1)
            elif tp not in self.rm.partitions:
                results[tp] = (int(ErrorCode.NOT_LEADER_OR_FOLLOWER), -1)
            else:
                asked[tp] = offset
        if asked:
            cache = self.cache
            results.update(
                await self.rm.delete_records(
                    timeout_ms, asked, lambda broker: broker in cache.live_brokers
                )
            )
        return results

    def describe_log_dirs(self, partitions: set[TopicPartition] | None) -> list[LogDirDescription]:
        """DescribeLogDirs: this broker's log dirs with its replicas of `partitions` (None:
        all of them)."""
        return self.rm.describe_log_dirs(partitions)

    async def fetch(
        self,
        req: FetchRequest,
        readable: Callable[[str], bool] | None = None,
        client: ClientMetadata | None = None,
    ) -> FetchResponse:
        """A consumer's or a follower's fetch, counted in the topics' byte rates.
        `readable`: which topics a consumer may READ (None: all); `client`: a consumer's
        Fetch v11+; see ReplicaManager.fetch_messages."""
        resp = await self.rm.fetch_messages(req, readable, client)
        stats = self.rm.topic_stats
        to_follower = req.replica_id >= 0
        partitions = self.rm.partitions
        for t in resp.topics:
            for r in t.partitions:
                records = r.records
                if records is None:
                    size = 0
                elif isinstance(records, bytes | bytearray | memoryview):
                    size = len(records)
                else:
                    size = cast(FileRegion, records).size  # sent with sendfile
                as_follower = False
                if size and not to_follower:
                    p = partitions.get(TopicPartition(t.name, r.partition))
                    as_follower = p is not None and not p.is_leader
                stats.record_fetch(
                    t.name,
                    size,
                    failed=r.error_code != ErrorCode.NONE,
                    to_follower=to_follower,
                    as_follower=as_follower,
                )
        return resp

    async def init_producer_id(self) -> int:
        """A new producer id for an idempotent producer (epoch 0), as Kafka's transaction
        coordinator answers a producer without a transactional id."""
        try:
            return await self.producer_ids.generate()
        except ZkError as e:
            raise CoordinatorNotAvailableError(f"no producer id block from ZooKeeper: {e}") from e

    async def list_offsets(self, req: ListOffsetsRequest) -> ListOffsetsResponse:
        return self.rm.list_offsets(req)

    async def offsets_for_leader_epoch(
        self, req: OffsetForLeaderEpochRequest
    ) -> OffsetForLeaderEpochResponse:
        return self.rm.offsets_for_leader_epoch(req)
