"""Metadata: brokers, controller and topics, with the addresses of the listener asked."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.kafka.metadata_response import (
    TopicLike,
    encode_metadata_response,
    encode_partitions,
    partitions_format,
)
from minikafka.rpc.messages import MetadataPartition, MetadataTopic
from minikafka.rules.consumer_offsets import OFFSETS_TOPIC
from minikafka.security.operations import NOT_REQUESTED, AclOperation, ResourceType
from minikafka.server.authorization import CLUSTER_NAME
from minikafka.server.broker_services import BrokerServices
from minikafka.server.kafka_api.models.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from minikafka.server.kafka_api.registry import (
    ApiFamily,
    EncodedResponse,
    RequestContext,
    api,
)
from minikafka.server.kafka_api.topic_ids import ZERO_UUID, topic_named, uuid_of

METADATA = 3


class MetadataApis(ApiFamily):
    def __init__(self, apis: BrokerServices) -> None:
        self.apis = apis
        # Each topic's answered partitions, and their encodings (by partitions_format), kept
        # while the metadata cache hands out the same list for the topic (it builds a new
        # one when the topic or the live brokers change).
        self._answered: dict[
            str,
            tuple[list[MetadataPartition], tuple[MetadataResponsePartition, ...], dict[int, bytes]],
        ] = {}

    @api(METADATA, "Metadata", versions=(0, 13))
    async def metadata(self, req: MetadataRequest, ctx: RequestContext) -> EncodedResponse:
        # Encoded here, not by kio: a topic's kept partition bytes make most of an answer.
        response = await self.answer(req, ctx)
        version = ctx.api_version
        return EncodedResponse(
            [
                encode_metadata_response(
                    version, ctx.correlation_id, response, self._partitions_bytes(version)
                )
            ]
        )

    def _partitions_bytes(self, version: int) -> Callable[[TopicLike], bytes]:
        fmt = partitions_format(version)

        def partitions_bytes(t: TopicLike) -> bytes:
            kept = None if t.name is None else self._answered.get(t.name)
            if kept is None or kept[1] is not t.partitions:
                return encode_partitions(version, t.partitions)
            encoded = kept[2].get(fmt)
            if encoded is None:
                encoded = kept[2][fmt] = encode_partitions(version, t.partitions)
            return encoded

        return partitions_bytes

    async def answer(self, req: MetadataRequest, ctx: RequestContext) -> MetadataResponse:
        """The response, as the model of every version."""
        version = ctx.api_version
        authorizer = self.apis.authorizer
        unknown_ids: list[uuid.UUID] = []
        by_id: dict[str, uuid.UUID] = {}  # the topics the request names by id
        # v0: an empty list means every topic; v1+: null does, and an empty list means none.
        names: list[str] | None
        if req.topics is None or (version == 0 and not req.topics):
            names = None
        else:
            names = []
            for t in req.topics:
                if t.name is not None:
                    names.append(t.name)
                    continue
                # v10+: a topic may be named by its id instead (never auto-created).
                name = topic_named(self.apis.cache, t.topic_id)
                if name is not None and t.topic_id is not None:
                    names.append(name)
                    by_id[name] = t.topic_id
                elif t.topic_id is not None:
                    unknown_ids.append(t.topic_id)
        # Named topics the principal may not DESCRIBE, or may not CREATE when they would be
        # auto-created: asked for nothing, answered TOPIC_AUTHORIZATION_FAILED.
        refused: list[MetadataResponseTopic] = []
        if names is not None and authorizer.enabled:
            names, refused = self._authorized_names(ctx, req, names, by_id)
        # Before v4 a Metadata request always allowed auto-creation (Kafka's rule; the
        # model's default for those versions).
        resp = await self.apis.metadata(names, req.allow_auto_topic_creation, ctx.listener)
        found = resp.topics
        if names is None and authorizer.enabled:
            # Every topic: those the principal may not DESCRIBE are left out, quietly (Kafka
            # logs such a filter's denials at TRACE only).
            describable = authorizer.filter_authorized(
                ctx.session,
                AclOperation.DESCRIBE,
                ResourceType.TOPIC,
                (t.name for t in found),
                request="Metadata",
                log_if_denied=False,
            )
            found = [t for t in found if t.name in describable]

        # KIP-430 (v8+): what the client may do, when it asks.
        def topic_operations(name: str) -> int:
            if not req.include_topic_authorized_operations:
                return NOT_REQUESTED
            return authorizer.authorized_operations(ctx.session, ResourceType.TOPIC, name)

        topics = [
            MetadataResponseTopic(
                error_code=t.error_code,
                name=t.name,
                topic_id=uuid_of(t.topic_id),
                is_internal=t.name == OFFSETS_TOPIC,
                topic_authorized_operations=topic_operations(t.name),
                partitions=self._partitions(t),
            )
            for t in found
        ]
        cache = self.apis.cache
        if len(self._answered) > 2 * cache.topic_count() + 1000:
            # Many topics deleted since: keep those still in the metadata cache. Compared
            # with the cache's count, not this request's, so that a request for a few
            # topics does not scan every cached answer.
            self._answered = {n: a for n, a in self._answered.items() if cache.contains_topic(n)}
        topics += refused
        topics += [
            MetadataResponseTopic(
                error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                # The name is nullable from v12 (the first version clients name topics by
                # id with).
                name=None if version >= 12 else "",
                topic_id=topic_id,
                partitions=(),
            )
            for topic_id in unknown_ids
        ]
        return MetadataResponse(
            cluster_authorized_operations=self._cluster_operations(ctx, req),
            brokers=tuple(
                MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                for b in resp.brokers
            ),
            cluster_id=self.apis.cluster_id,
            controller_id=resp.controller_id,
            error_code=ErrorCode.NONE,
            topics=tuple(topics),
        )

    def _partitions(self, t: MetadataTopic) -> tuple[MetadataResponsePartition, ...]:
        cached = self._answered.get(t.name)
        if cached is not None and cached[0] is t.partitions:
            return cached[1]
        answer = tuple(
            MetadataResponsePartition(
                error_code=p.error_code,
                partition_index=p.partition,
                leader_id=p.leader,
                leader_epoch=p.leader_epoch,
                replica_nodes=tuple(p.replicas),
                isr_nodes=tuple(p.isr),
                offline_replicas=tuple(p.offline_replicas),
            )
            for p in t.partitions
        )
        if t.partitions:
            self._answered[t.name] = (t.partitions, answer, {})
        return answer

    def _authorized_names(
        self,
        ctx: RequestContext,
        req: MetadataRequest,
        names: list[str],
        by_id: dict[str, uuid.UUID],
    ) -> tuple[list[str], list[MetadataResponseTopic]]:
        """Kafka's handleTopicMetadataRequest for named topics: those the principal may
        DESCRIBE; and, when the request would auto-create the ones this broker does not know
        (auto.create.topics.enable and the client's allowAutoTopicCreation), those it may
        CREATE (on the cluster, or else on each topic, decided before anything is looked up
        or created). The rest are answered TOPIC_AUTHORIZATION_FAILED, whether they exist
        or not; one named by id without its name (the id is no secret, as in Kafka 3)."""
        authorizer = self.apis.authorizer
        session = ctx.session
        describable = authorizer.filter_authorized(
            session, AclOperation.DESCRIBE, ResourceType.TOPIC, names, request="Metadata"
        )
        allowed = [n for n in dict.fromkeys(names) if n in describable]
        refused = [
            MetadataResponseTopic(
                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                name=None if n in by_id and ctx.api_version >= 12 else ("" if n in by_id else n),
                topic_id=by_id.get(n, ZERO_UUID),
                partitions=(),
            )
            for n in dict.fromkeys(names)
            if n not in describable
        ]
        missing = [n for n in allowed if not self.apis.cache.contains_topic(n)]
        if (
            missing
            and req.allow_auto_topic_creation
            and self.apis.config.auto_create_topics_enable
            and not authorizer.authorize(
                session,
                AclOperation.CREATE,
                ResourceType.CLUSTER,
                CLUSTER_NAME,
                request="Metadata",
                log_if_denied=False,
            )
        ):
            creatable = authorizer.filter_authorized(
                session, AclOperation.CREATE, ResourceType.TOPIC, missing, request="Metadata"
            )
            refused += [
                MetadataResponseTopic(
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    name=n,
                    topic_id=ZERO_UUID,
                    is_internal=n == OFFSETS_TOPIC,
                    partitions=(),
                )
                for n in missing
                if n not in creatable
            ]
            allowed = [n for n in allowed if n in creatable or n not in missing]
        return allowed, refused

    def _cluster_operations(self, ctx: RequestContext, req: MetadataRequest) -> int:
        """KIP-430 (v8-10): the cluster's authorized operations when asked, and only to a
        principal that may DESCRIBE the cluster (0 otherwise), as Kafka answers."""
        if not req.include_cluster_authorized_operations:
            return NOT_REQUESTED
        authorizer = self.apis.authorizer
        if not authorizer.authorize_cluster(ctx.session, AclOperation.DESCRIBE, request="Metadata"):
            return 0
        return authorizer.authorized_operations(ctx.session, ResourceType.CLUSTER, CLUSTER_NAME)
