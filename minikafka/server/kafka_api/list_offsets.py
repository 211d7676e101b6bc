"""ListOffsets and OffsetForLeaderEpoch: where a partition's log starts and ends, the offset
of a time, and the end of a leader epoch (KIP-320's truncation check)."""

from __future__ import annotations

from minikafka.protocol.errors import ErrorCode
from minikafka.rpc import messages as m
from minikafka.security.operations import AclOperation, ResourceType
from minikafka.server.authorization import CLUSTER_NAME
from minikafka.server.broker_services import BrokerServices
from minikafka.server.kafka_api.models.list_offsets import (
    EpochEndOffset,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
)
from minikafka.server.kafka_api.registry import ApiFamily, RequestContext, api

LIST_OFFSETS, OFFSET_FOR_LEADER_EPOCH = 2, 23


class ListOffsetsApis(ApiFamily):
    def __init__(self, apis: BrokerServices) -> None:
        self.apis = apis

    @api(LIST_OFFSETS, "ListOffsets", versions=(1, 7))
    async def list_offsets(
        self, req: ListOffsetsRequest, ctx: RequestContext
    ) -> ListOffsetsResponse:
        # DESCRIBE on each topic (Kafka's handleListOffsetRequest); the others are answered
        # TOPIC_AUTHORIZATION_FAILED, unknown or not.
        describable = self.apis.authorizer.filter_authorized(
            ctx.session,
            AclOperation.DESCRIBE,
            ResourceType.TOPIC,
            (t.name for t in req.topics),
            request="ListOffsets",
        )
        internal = m.ListOffsetsRequest(
            req.replica_id,
            [
                m.ListOffsetsTopic(
                    t.name,
                    [
                        m.ListOffsetsPartition(
                            p.partition_index, p.timestamp, p.current_leader_epoch
                        )
                        for p in t.partitions
                    ],
                )
                for t in req.topics
                if t.name in describable
            ],
        )
        resp = await self.apis.list_offsets(internal) if internal.topics else None
        # One answered topic for each topic asked, in order.
        answered = iter(resp.topics if resp is not None else ())
        # The answer lists the request's topics and partitions in the request's order.
        return ListOffsetsResponse(
            topics=tuple(
                _list_offsets_topic(next(answered))
                if t.name in describable
                else ListOffsetsTopicResponse(
                    name=t.name,
                    partitions=tuple(
                        ListOffsetsPartitionResponse(
                            partition_index=p.partition_index,
                            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        )
                        for p in t.partitions
                    ),
                )
                for t in req.topics
            )
        )

    @api(OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderEpoch", versions=(2, 4))
    async def offset_for_leader_epoch(
        self, req: OffsetForLeaderEpochRequest, ctx: RequestContext
    ) -> OffsetForLeaderEpochResponse:
        # Clients (KIP-320) send replica id -1 (v3+: the field; before, only consumers ask).
        replica_id = req.replica_id if ctx.api_version >= 3 else m.CONSUMER_REPLICA_ID
        # Kafka's rule: CLUSTER_ACTION on the cluster (a broker's request, checked quietly)
        # allows every topic; else DESCRIBE on each (KIP-320's consumers), the others
        # answered TOPIC_AUTHORIZATION_FAILED.
        authorizer = self.apis.authorizer
        names = [t.topic for t in req.topics]
        describable = (
            set(names)
            if authorizer.authorize(
                ctx.session,
                AclOperation.CLUSTER_ACTION,
                ResourceType.CLUSTER,
                CLUSTER_NAME,
                request="OffsetForLeaderEpoch",
                log_if_denied=False,
            )
            else authorizer.filter_authorized(
                ctx.session,
                AclOperation.DESCRIBE,
                ResourceType.TOPIC,
                names,
                request="OffsetForLeaderEpoch",
            )
        )
        internal = m.OffsetForLeaderEpochRequest(
            replica_id,
            [
                m.OffsetForLeaderTopic(
                    t.topic,
                    [
                        m.OffsetForLeaderPartition(
                            p.partition, p.current_leader_epoch, p.leader_epoch
                        )
                        for p in t.partitions
                    ],
                )
                for t in req.topics
                if t.topic in describable
            ],
        )
        resp = await self.apis.offsets_for_leader_epoch(internal) if internal.topics else None
        answered = iter(resp.topics if resp is not None else ())
        return OffsetForLeaderEpochResponse(
            topics=tuple(
                _epoch_topic(next(answered))
                if t.topic in describable
                else OffsetForLeaderTopicResult(
                    topic=t.topic,
                    partitions=tuple(
                        EpochEndOffset(
                            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, partition=p.partition
                        )
                        for p in t.partitions
                    ),
                )
                for t in req.topics
            )
        )


def _list_offsets_topic(t: m.ListOffsetsTopicResponse) -> ListOffsetsTopicResponse:
    return ListOffsetsTopicResponse(
        name=t.name,
        partitions=tuple(
            ListOffsetsPartitionResponse(
                partition_index=p.partition,
                error_code=p.error_code,
                timestamp=p.timestamp,
                offset=p.offset,
                leader_epoch=p.leader_epoch,
            )
            for p in t.partitions
        ),
    )


def _epoch_topic(t: m.OffsetForLeaderTopicResult) -> OffsetForLeaderTopicResult:
    return OffsetForLeaderTopicResult(
        topic=t.name,
        partitions=tuple(
            EpochEndOffset(
                error_code=p.error_code,
                partition=p.partition,
                leader_epoch=p.leader_epoch,
                end_offset=p.end_offset,
            )
            for p in t.partitions
        ),
    )
