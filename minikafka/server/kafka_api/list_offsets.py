"""ListOffsets and OffsetForLeaderEpoch: where a partition's log starts and ends, the offset
of a time, and the end of a leader epoch (KIP-320's truncation check)."""

from __future__ import annotations

from minikafka.rpc import messages as m
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
            ],
        )
        resp = await self.apis.list_offsets(internal)
        # The answer lists the request's topics and partitions in the request's order.
        return ListOffsetsResponse(
            topics=tuple(
                ListOffsetsTopicResponse(
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
                for t in resp.topics
            )
        )

    @api(OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderEpoch", versions=(2, 4))
    async def offset_for_leader_epoch(
        self, req: OffsetForLeaderEpochRequest, ctx: RequestContext
    ) -> OffsetForLeaderEpochResponse:
        # Clients (KIP-320) send replica id -1 (v3+: the field; before, only consumers ask).
        replica_id = req.replica_id if ctx.api_version >= 3 else m.CONSUMER_REPLICA_ID
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
            ],
        )
        resp = await self.apis.offsets_for_leader_epoch(internal)
        return OffsetForLeaderEpochResponse(
            topics=tuple(
                OffsetForLeaderTopicResult(
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
                for t in resp.topics
            )
        )
