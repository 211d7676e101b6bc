"""Apache Kafka's protocol on the client listeners: Kafka clients in, KafkaApis inside.

Each handler reads a kio request of any version it serves (fields older versions lack take
Kafka's defaults), calls the same KafkaApis / ReplicaManager code the internal RPC uses,
and describes the response once as plain values; `entities.build` makes the response of
the version the client asked for. Record batches pass through as the bytes they are: a
batch a Kafka client sends is validated and stored as sent, and served as stored.

The APIs served so far are in HANDLED_VERSIONS (a subset of what the codec decodes);
ApiVersions advertises exactly them, so a client never sends a request this module cannot
answer. A request for another API is a client bug: the connection is closed, as Kafka does.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from minikafka.common import kafka_uuid_text, parse_kafka_uuid
from minikafka.config.dynamic import AlterableConfig
from minikafka.coordinator.group.offsets_topic import OFFSETS_TOPIC
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.kafka.codec import (
    SUPPORTED_VERSIONS,
    KafkaRequest,
    encode_response,
    response_type,
)
from minikafka.protocol.kafka.entities import as_list, build, field_or, millis
from minikafka.protocol.kafka.fetch_response import (
    Chunk,
    FetchPartitionData,
    FetchTopicData,
    encode_fetch_response,
)
from minikafka.protocol.kafka.produce_response import (
    ProducePartitionData,
    ProduceTopicData,
    encode_produce_response,
)
from minikafka.rpc import messages as m
from minikafka.security.operations import ResourceType, authorized_operations
from minikafka.server.kafka_apis import KafkaApis
from minikafka.server.kafka_group_apis import ClientInfo, KafkaGroupApis
from minikafka.server.network import NO_RESPONSE

log = logging.getLogger(__name__)

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS, OFFSET_FOR_LEADER_EPOCH = 18, 19, 20, 23
CREATE_PARTITIONS, DESCRIBE_CLUSTER, INIT_PRODUCER_ID = 37, 60, 22
DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 44

ZERO_UUID = uuid.UUID(int=0)  # Kafka's "no topic id"

# Consumers send replica id -1, tools reading any replica up to its LEO Kafka's debugging
# id -2 (FetchRequest.DEBUGGING_CONSUMER_ID); anything else on a client listener is refused
# (followers replicate over the inter-broker RPC).
CONSUMER_REPLICA_ID = m.CONSUMER_REPLICA_ID
DEBUG_REPLICA_ID = m.DEBUG_REPLICA_ID

_Handler = Callable[[int, Any], Awaitable[dict[str, Any] | None]]


class KafkaProtocolApis:
    """One per listener (Metadata answers with the addresses of the listener asked)."""

    def __init__(self, apis: KafkaApis, listener: str, ready: asyncio.Event | None = None) -> None:
        self.apis = apis
        self.listener = listener
        # As Kafka's socket server (startProcessingRequests): clients' requests wait until
        # the broker has started (registered, and told of the cluster by the controller).
        # Before that its metadata is empty, and a client told "no brokers" may start over
        # from its bootstrap list (librdkafka's re-bootstrap), stalling its producer.
        self._ready = ready
        self._handlers: dict[int, _Handler] = {
            API_VERSIONS: self.api_versions,
            METADATA: self.metadata,
            LIST_OFFSETS: self.list_offsets,
            CREATE_TOPICS: self.create_topics,
            DELETE_TOPICS: self.delete_topics,
            CREATE_PARTITIONS: self.create_partitions,
            OFFSET_FOR_LEADER_EPOCH: self.offset_for_leader_epoch,
            DESCRIBE_CLUSTER: self.describe_cluster,
            INIT_PRODUCER_ID: self.init_producer_id,
            DESCRIBE_CONFIGS: self.describe_configs,
            INCREMENTAL_ALTER_CONFIGS: self.incremental_alter_configs,
            ALTER_CONFIGS: self.alter_configs,
        }
        # The group APIs get the client's id and address too (a member's client id/host).
        self._group_handlers = KafkaGroupApis(apis, listener).handlers()
        # Produce and Fetch are served by `handle` itself (their responses are written by
        # hand: kio's writer is too slow for every produce, and fetched records go out
        # zero-copy).
        self.versions: dict[int, tuple[int, int]] = {
            key: SUPPORTED_VERSIONS[key]
            for key in sorted({*self._handlers, *self._group_handlers, PRODUCE, FETCH})
        }

    def serves(self, api_key: int) -> bool:
        return api_key in self.versions

    # Topic ids (KIP-516): kio carries them as UUIDs, the metadata cache as Kafka's text.

    def _topic_uuid(self, topic: str) -> uuid.UUID:
        topic_id = self.apis.cache.topic_id(topic)
        return ZERO_UUID if topic_id is None else _uuid_of(topic_id)

    def _topic_named(self, topic_id: uuid.UUID | None) -> str | None:
        """The topic with this id; None for the zero id or one no topic here has."""
        if topic_id is None or topic_id == ZERO_UUID:
            return None
        return self.apis.cache.topic_name(kafka_uuid_text(topic_id))

    async def handle(self, request: KafkaRequest, client_host: str = "") -> list[Chunk] | None:
        """The response frame as chunks, or None when Kafka sends none (produce with
        acks=0). Produce and Fetch responses are written by hand, a Fetch's record batches
        as the log handed them over (file regions, sent with sendfile: zero-copy, as
        Kafka's)."""
        if self._ready is not None and not self._ready.is_set():
            await self._ready.wait()
        if request.api_key == PRODUCE:
            produced = await self.produce(request.api_version, request.body)
            if produced is None:
                return None
            return [encode_produce_response(request.api_version, request.correlation_id, produced)]
        if request.api_key == FETCH:
            error_code, session_id, topics = await self.fetch(request.api_version, request.body)
            return encode_fetch_response(
                request.api_version, request.correlation_id, error_code, session_id, topics
            )
        group_handler = self._group_handlers.get(request.api_key)
        if group_handler is not None:
            client = ClientInfo(request.client_id or "", client_host)
            values = await group_handler(request.api_version, request.body, client)
        else:
            values = await self._handlers[request.api_key](request.api_version, request.body)
        if values is None:
            return None
        body = build(response_type(request.api_key, request.api_version), values)
        return [encode_response(request, body)]

    # --- ApiVersions, Metadata -----------------------------------------------------------

    async def api_versions(self, version: int, req: Any) -> dict[str, Any]:
        return {
            "error_code": 0,
            "api_keys": [
                {"api_key": key, "min_version": low, "max_version": high}
                for key, (low, high) in self.versions.items()
            ],
            "throttle_time": 0,
        }

    async def metadata(self, version: int, req: Any) -> dict[str, Any]:
        requested = req.topics
        unknown_ids: list[uuid.UUID] = []
        # v0: an empty list means every topic; v1+: null does, and an empty list means none.
        if requested is None or (version == 0 and not requested):
            names: list[str] | None = None
        else:
            names = []
            for t in requested:
                if t.name is not None:
                    names.append(t.name)
                    continue
                # v10+: a topic may be named by its id instead (never auto-created).
                topic_id = field_or(t, "topic_id", None)
                name = self._topic_named(topic_id)
                if name is not None:
                    names.append(name)
                elif topic_id is not None:
                    unknown_ids.append(topic_id)
        # Before v4 a Metadata request always allowed auto-creation (Kafka's rule).
        allow_auto_create = bool(field_or(req, "allow_auto_topic_creation", True))
        resp = await self.apis.handle_metadata(
            m.MetadataRequest(names, allow_auto_create), self.listener
        )
        # KIP-430 (v8+): what the client may do, when it asks.
        topic_operations = authorized_operations(
            ResourceType.TOPIC, bool(field_or(req, "include_topic_authorized_operations", False))
        )
        return {
            "throttle_time": 0,
            "cluster_authorized_operations": authorized_operations(
                ResourceType.CLUSTER,
                bool(field_or(req, "include_cluster_authorized_operations", False)),
            ),
            "brokers": [
                {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                for b in resp.brokers
            ],
            "cluster_id": self.apis.cluster_id,
            "controller_id": resp.controller_id,
            "error_code": 0,
            "topics": [
                {
                    "error_code": t.error_code,
                    "name": t.name,
                    "topic_id": ZERO_UUID if t.topic_id is None else _uuid_of(t.topic_id),
                    "is_internal": t.name == OFFSETS_TOPIC,
                    "topic_authorized_operations": topic_operations,
                    "partitions": [
                        {
                            "error_code": p.error_code,
                            "partition_index": p.partition,
                            "leader_id": p.leader,
                            "leader_epoch": p.leader_epoch,
                            "replica_nodes": p.replicas,
                            "isr_nodes": p.isr,
                            "offline_replicas": p.offline_replicas,
                        }
                        for p in t.partitions
                    ],
                }
                for t in resp.topics
            ]
            + [
                {
                    "error_code": ErrorCode.UNKNOWN_TOPIC_ID,
                    # The name is nullable from v12 (the first version clients name topics
                    # by id with).
                    "name": None if version >= 12 else "",
                    "topic_id": topic_id,
                    "partitions": [],
                }
                for topic_id in unknown_ids
            ],
        }

    async def init_producer_id(self, version: int, req: Any) -> dict[str, Any]:
        """Idempotent producers get a new producer id, epoch 0 (a given producer id and
        epoch, v3+, are not bumped: Kafka hands a producer without a transactional id a new
        id the same way). Transactions are not served."""
        values: dict[str, Any] = {"throttle_time": 0, "producer_id": -1, "producer_epoch": -1}
        if req.transactional_id is not None:
            return {**values, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
        try:
            producer_id = await self.apis.handle_init_producer_id()
        except KafkaError as e:
            return {**values, "error_code": e.code}
        return {**values, "error_code": 0, "producer_id": producer_id, "producer_epoch": 0}

    # --- Produce -------------------------------------------------------------------------

    async def produce(self, version: int, req: Any) -> list[ProduceTopicData] | None:
        """The response's topics, or None when none is sent (acks=0)."""
        if req.transactional_id is not None:
            # No transactions here: Kafka answers a broker without them the same way.
            return self._produce_error(req, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        # v13 names topics by id (KIP-516); an id no topic has is UNKNOWN_TOPIC_ID.
        topics: list[m.ProduceTopic] = []
        unknown: list[Any] = []
        for t in req.topic_data:
            name = t.name if version < 13 else self._topic_named(t.topic_id)
            if name is None:
                unknown.append(t)
                continue
            topics.append(
                m.ProduceTopic(
                    name, [m.ProducePartition(p.index, p.records) for p in t.partition_data]
                )
            )
        try:
            resp = await self.apis.handle_produce(
                m.ProduceRequest(req.acks, millis(req.timeout), topics)
            )
        except KafkaError as e:
            if req.acks == 0:
                return None
            return self._produce_error(req, e.code)
        if resp is NO_RESPONSE or req.acks == 0:
            return None
        return [
            ProduceTopicData(
                t.name,
                self._topic_uuid(t.name),
                [
                    ProducePartitionData(
                        p.partition,
                        p.error_code,
                        p.base_offset,
                        p.log_start_offset,
                        p.error_message,
                        [(e.batch_index, e.message) for e in p.record_errors],
                        p.log_append_time,
                    )
                    for p in t.partitions
                ],
            )
            for t in resp.topics
        ] + [_produce_topic_error(t, ErrorCode.UNKNOWN_TOPIC_ID) for t in unknown]

    @staticmethod
    def _produce_error(req: Any, code: int) -> list[ProduceTopicData] | None:
        if req.acks == 0:
            return None
        return [_produce_topic_error(t, code) for t in req.topic_data]

    # --- Fetch ---------------------------------------------------------------------------

    async def fetch(self, version: int, req: Any) -> tuple[int, int, list[FetchTopicData]]:
        """(error code, session id, topics) of the response (see `handle`)."""
        replica_id = field_or(req, "replica_id", None)
        if replica_id is None:  # v15+ (KIP-903): in replica_state
            replica_id = req.replica_state.replica_id
        if replica_id not in (CONSUMER_REPLICA_ID, DEBUG_REPLICA_ID):
            return 0, 0, [_fetch_topic_error(t, ErrorCode.INVALID_REQUEST) for t in req.topics]
        # v13+ name topics by id (KIP-516): each id is resolved to its topic here, and an id
        # no topic has is answered UNKNOWN_TOPIC_ID (the fetch session never sees it).
        known: list[tuple[str, Any]] = []
        unknown: list[Any] = []
        ids: dict[str, uuid.UUID] = {}
        for t in req.topics:
            name = t.topic if version < 13 else self._topic_named(t.topic_id)
            if name is None:
                unknown.append(t)
                continue
            known.append((name, t))
            if version >= 13:
                ids[name] = t.topic_id
        forgotten: list[m.ForgottenTopic] = []
        for f in as_list(field_or(req, "forgotten_topics_data", None)):
            name = f.topic if version < 13 else self._topic_named(f.topic_id)
            if name is not None:
                forgotten.append(m.ForgottenTopic(name, list(f.partitions)))
        internal = m.FetchRequest(
            replica_id=replica_id,
            max_wait_ms=millis(req.max_wait),
            min_bytes=req.min_bytes,
            max_bytes=req.max_bytes,
            topics=[
                m.FetchTopic(
                    name,
                    [
                        m.FetchPartition(
                            p.partition,
                            p.fetch_offset,
                            p.partition_max_bytes,
                            field_or(p, "current_leader_epoch", m.NO_LEADER_EPOCH),
                            field_or(p, "log_start_offset", -1),
                        )
                        for p in t.partitions
                    ],
                )
                for name, t in known
            ],
            session_id=field_or(req, "session_id", m.INVALID_SESSION_ID),
            session_epoch=field_or(req, "session_epoch", m.FINAL_EPOCH),
            forgotten_topics=forgotten,
        )
        resp = await self.apis.handle_fetch(internal)
        topics = [
            FetchTopicData(
                t.name,
                ids.get(t.name) or self._topic_uuid(t.name),
                [
                    FetchPartitionData(
                        p.partition,
                        p.error_code,
                        p.high_watermark,
                        p.log_start_offset,
                        # Empty, never null, records on an error, as Kafka's MemoryRecords.EMPTY:
                        # librdkafka fails to parse a null record set.
                        b"" if p.records is None else p.records,
                    )
                    for p in t.partitions
                ],
            )
            for t in resp.topics
        ]
        topics += [_fetch_topic_error(t, ErrorCode.UNKNOWN_TOPIC_ID) for t in unknown]
        return resp.error_code, resp.session_id, topics

    # --- ListOffsets ---------------------------------------------------------------------

    async def list_offsets(self, version: int, req: Any) -> dict[str, Any]:
        internal = m.ListOffsetsRequest(
            req.replica_id,
            [
                m.ListOffsetsTopic(
                    t.name,
                    [
                        m.ListOffsetsPartition(
                            p.partition_index,
                            millis(p.timestamp),
                            field_or(p, "current_leader_epoch", m.NO_LEADER_EPOCH),
                        )
                        for p in t.partitions
                    ],
                )
                for t in req.topics
            ],
        )
        resp = await self.apis.handle_list_offsets(internal)
        # The answer lists the request's topics and partitions in the request's order.
        return {
            "throttle_time": 0,
            "topics": [
                {
                    "name": t.name,
                    "partitions": [_list_offsets_partition(p) for p in t.partitions],
                }
                for t in resp.topics
            ],
        }

    # --- CreateTopics --------------------------------------------------------------------

    async def create_topics(self, version: int, req: Any) -> dict[str, Any]:
        internal = m.CreateTopicsRequest(
            [
                m.CreatableTopic(
                    t.name,
                    t.num_partitions,
                    t.replication_factor,
                    {a.partition_index: list(a.broker_ids) for a in t.assignments} or None,
                    {c.name: c.value for c in t.configs if c.value is not None},
                )
                for t in req.topics
            ],
            millis(req.timeout),
            field_or(req, "validate_only", False),
        )
        resp = await self.apis.handle_create_topics(internal)
        asked = {t.name: t for t in req.topics}
        config = self.apis.config
        results: list[dict[str, Any]] = []
        for r in resp.topics:
            t = asked[r.name]
            ok = r.error_code == ErrorCode.NONE
            partitions = t.num_partitions if t.num_partitions > 0 else config.num_partitions
            rf = (
                t.replication_factor
                if t.replication_factor > 0
                else config.default_replication_factor
            )
            if t.assignments:
                partitions = len(t.assignments)
                rf = len(t.assignments[0].broker_ids)
            results.append(
                {
                    "name": r.name,
                    "topic_id": self._topic_uuid(r.name) if ok else ZERO_UUID,
                    "error_code": r.error_code,
                    "error_message": r.error_message,
                    "num_partitions": partitions if ok else -1,
                    "replication_factor": rf if ok else -1,
                    "configs": [] if ok else None,
                }
            )
        return {"throttle_time": 0, "topics": results}

    # --- DeleteTopics, CreatePartitions ----------------------------------------------------

    async def delete_topics(self, version: int, req: Any) -> dict[str, Any]:
        # v6 may name topics by id; an id no topic has is UNKNOWN_TOPIC_ID.
        unknown_ids: list[uuid.UUID] = []
        if version >= 6:
            names = []
            for t in req.topics:
                name = t.name if t.name is not None else self._topic_named(t.topic_id)
                if name is None:
                    unknown_ids.append(t.topic_id)
                else:
                    names.append(name)
        else:
            names = list(req.topic_names)
        # The ids before the topics are gone from the metadata cache.
        ids = {name: self._topic_uuid(name) for name in names}
        resp = await self.apis.handle_delete_topics(
            m.DeleteTopicsRequest(names, millis(req.timeout))
        )
        results = [
            {
                "name": r.name,
                "topic_id": ids.get(r.name, ZERO_UUID),
                "error_code": r.error_code,
                "error_message": r.error_message,
            }
            for r in resp.topics
        ]
        results += [
            {
                "name": None,
                "topic_id": topic_id,
                "error_code": ErrorCode.UNKNOWN_TOPIC_ID,
                "error_message": "This server does not host this topic ID.",
            }
            for topic_id in unknown_ids
        ]
        return {"throttle_time": 0, "responses": results}

    async def create_partitions(self, version: int, req: Any) -> dict[str, Any]:
        resp = await self.apis.handle_create_partitions(
            m.CreatePartitionsRequest(
                [
                    m.CreatePartitionsTopic(
                        t.name,
                        t.count,
                        None
                        if t.assignments is None
                        else [list(a.broker_ids) for a in t.assignments],
                    )
                    for t in req.topics
                ],
                millis(req.timeout),
                req.validate_only,
            )
        )
        return {
            "throttle_time": 0,
            "results": [
                {"name": r.name, "error_code": r.error_code, "error_message": r.error_message}
                for r in resp.results
            ],
        }

    # --- OffsetForLeaderEpoch ---------------------------------------------------------------

    async def offset_for_leader_epoch(self, version: int, req: Any) -> dict[str, Any]:
        # Clients (KIP-320) send replica id -1 (v3+: field present; before, consumers).
        replica_id = field_or(req, "replica_id", CONSUMER_REPLICA_ID)
        internal = m.OffsetForLeaderEpochRequest(
            replica_id,
            [
                m.OffsetForLeaderTopic(
                    t.topic,
                    [
                        m.OffsetForLeaderPartition(
                            p.partition,
                            field_or(p, "current_leader_epoch", m.NO_LEADER_EPOCH),
                            p.leader_epoch,
                        )
                        for p in t.partitions
                    ],
                )
                for t in req.topics
            ],
        )
        resp = await self.apis.handle_offsets_for_leader_epoch(internal)
        return {
            "throttle_time": 0,
            "topics": [
                {
                    "topic": t.name,
                    "partitions": [
                        {
                            "error_code": p.error_code,
                            "partition": p.partition,
                            "leader_epoch": p.leader_epoch,
                            "end_offset": p.end_offset,
                        }
                        for p in t.partitions
                    ],
                }
                for t in resp.topics
            ],
        }

    # --- DescribeConfigs, IncrementalAlterConfigs ------------------------------------------

    async def describe_configs(self, version: int, req: Any) -> dict[str, Any]:
        results = []
        for r in req.resources:
            # Null or empty: every config (Kafka answers an empty list with all of them too).
            keys = list(r.configuration_keys) if r.configuration_keys else None
            result: dict[str, Any] = {
                "resource_type": r.resource_type,
                "resource_name": r.resource_name,
                "error_code": 0,
                "error_message": None,
                "configs": [],
            }
            try:
                described = await self.apis.describe_configs(
                    r.resource_type, r.resource_name, keys, req.include_synonyms
                )
            except KafkaError as e:
                result.update(error_code=e.code, error_message=e.message)
                results.append(result)
                continue
            result["configs"] = [
                {
                    "name": c.name,
                    "value": c.value,
                    "read_only": c.read_only,
                    "config_source": int(c.source),
                    "is_sensitive": False,
                    "synonyms": [
                        {"name": y.name, "value": y.value, "source": int(y.source)}
                        for y in c.synonyms
                    ],
                    "config_type": int(c.type),
                    "documentation": c.doc
                    if field_or(req, "include_documentation", False)
                    else None,
                }
                for c in described
            ]
            results.append(result)
        return {"throttle_time": 0, "results": results}

    async def incremental_alter_configs(self, version: int, req: Any) -> dict[str, Any]:
        return await self._alter_each(
            req,
            lambda r: self.apis.incremental_alter_configs(
                r.resource_type,
                r.resource_name,
                [AlterableConfig(c.name, c.config_operation, c.value) for c in r.configs],
                req.validate_only,
            ),
        )

    async def alter_configs(self, version: int, req: Any) -> dict[str, Any]:
        """AlterConfigs, which older tools and clients still send: each resource's configs
        replace all of its overrides."""
        return await self._alter_each(
            req,
            lambda r: self.apis.alter_configs(
                r.resource_type,
                r.resource_name,
                [(c.name, c.value) for c in r.configs],
                req.validate_only,
            ),
        )

    @staticmethod
    async def _alter_each(req: Any, alter: Callable[[Any], Awaitable[None]]) -> dict[str, Any]:
        """Both alter APIs' answer: each resource's error, or none."""
        responses = []
        for r in req.resources:
            code, message = 0, None
            try:
                await alter(r)
            except KafkaError as e:
                code, message = int(e.code), e.message
            responses.append(
                {
                    "error_code": code,
                    "error_message": message,
                    "resource_type": r.resource_type,
                    "resource_name": r.resource_name,
                }
            )
        return {"throttle_time": 0, "responses": responses}

    # --- DescribeCluster ----------------------------------------------------------------------

    async def describe_cluster(self, version: int, req: Any) -> dict[str, Any]:
        meta = await self.apis.handle_metadata(m.MetadataRequest([], False), self.listener)
        # v1 may ask for the controllers (KIP-919): a ZooKeeper-era cluster has no quorum
        # controllers to list, and Kafka's ZooKeeper brokers refuse it the same way.
        if field_or(req, "endpoint_type", 1) != 1:
            return {
                "throttle_time": 0,
                "error_code": ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
                "error_message": "only brokers (endpoint type 1) can be described",
                "endpoint_type": req.endpoint_type,
                "cluster_id": self.apis.cluster_id or "",
                "brokers": [],
            }
        return {
            "throttle_time": 0,
            "error_code": 0,
            "endpoint_type": 1,
            "cluster_id": self.apis.cluster_id or "",
            "controller_id": meta.controller_id,
            "cluster_authorized_operations": authorized_operations(
                ResourceType.CLUSTER, req.include_cluster_authorized_operations
            ),
            "brokers": [
                {"broker_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                for b in meta.brokers
            ],
        }


@functools.lru_cache(maxsize=4096)
def _uuid_of(topic_id: str) -> uuid.UUID:
    return parse_kafka_uuid(topic_id)


def _fetch_topic_error(t: Any, code: int) -> FetchTopicData:
    """Every partition of a request's fetch topic (any version) answered `code`."""
    return FetchTopicData(
        field_or(t, "topic", ""),
        field_or(t, "topic_id", ZERO_UUID),
        [FetchPartitionData(p.partition, int(code), -1, -1, b"") for p in t.partitions],
    )


def _produce_topic_error(t: Any, code: int) -> ProduceTopicData:
    """Every partition of a request's produce topic (any version) answered `code`."""
    return ProduceTopicData(
        field_or(t, "name", ""),
        field_or(t, "topic_id", ZERO_UUID),
        [ProducePartitionData(p.index, int(code)) for p in t.partition_data],
    )


def _list_offsets_partition(p: m.ListOffsetsPartitionResponse) -> dict[str, Any]:
    return {
        "partition_index": p.partition,
        "error_code": p.error_code,
        "timestamp": p.timestamp,
        "offset": p.offset,
        "leader_epoch": p.leader_epoch,
    }
