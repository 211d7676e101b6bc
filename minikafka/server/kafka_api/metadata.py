"""Metadata: brokers, controller and topics, with the addresses of the listener asked."""

from __future__ import annotations

import uuid

from minikafka.protocol.errors import ErrorCode
from minikafka.rules.consumer_offsets import OFFSETS_TOPIC
from minikafka.security.operations import ResourceType, authorized_operations
from minikafka.server.broker_services import BrokerServices
from minikafka.server.kafka_api.models.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from minikafka.server.kafka_api.registry import ApiFamily, RequestContext, api
from minikafka.server.kafka_api.topic_ids import topic_named, uuid_of

METADATA = 3


class MetadataApis(ApiFamily):
    def __init__(self, apis: BrokerServices) -> None:
        self.apis = apis

    @api(METADATA, "Metadata", versions=(0, 13))
    async def metadata(self, req: MetadataRequest, ctx: RequestContext) -> MetadataResponse:
        version = ctx.api_version
        unknown_ids: list[uuid.UUID] = []
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
                if name is not None:
                    names.append(name)
                elif t.topic_id is not None:
                    unknown_ids.append(t.topic_id)
        # Before v4 a Metadata request always allowed auto-creation (Kafka's rule; the
        # model's default for those versions).
        resp = await self.apis.metadata(names, req.allow_auto_topic_creation, ctx.listener)
        # KIP-430 (v8+): what the client may do, when it asks.
        topic_operations = authorized_operations(
            ResourceType.TOPIC, req.include_topic_authorized_operations
        )
        topics = [
            MetadataResponseTopic(
                error_code=t.error_code,
                name=t.name,
                topic_id=uuid_of(t.topic_id),
                is_internal=t.name == OFFSETS_TOPIC,
                topic_authorized_operations=topic_operations,
                partitions=tuple(
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
                ),
            )
            for t in resp.topics
        ]
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
            cluster_authorized_operations=authorized_operations(
                ResourceType.CLUSTER, req.include_cluster_authorized_operations
            ),
            brokers=tuple(
                MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                for b in resp.brokers
            ),
            cluster_id=self.apis.cluster_id,
            controller_id=resp.controller_id,
            error_code=ErrorCode.NONE,
            topics=tuple(topics),
        )
