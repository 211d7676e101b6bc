"""DeleteRecords: move partitions' log start offsets up (kafka-delete-records.sh)."""

from __future__ import annotations

from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode
from minikafka.security.operations import AclOperation, ResourceType
from minikafka.server.broker_services import BrokerServices
from minikafka.server.kafka_api.models.delete_records import (
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from minikafka.server.kafka_api.registry import ApiFamily, RequestContext, api

DELETE_RECORDS = 21

# DeleteRecordsResponse.INVALID_LOW_WATERMARK
INVALID_LOW_WATERMARK = -1


class DeleteRecordsApis(ApiFamily):
    def __init__(self, apis: BrokerServices) -> None:
        self.apis = apis

    @api(DELETE_RECORDS, "DeleteRecords", versions=(0, 2))
    async def delete_records(
        self, req: DeleteRecordsRequest, ctx: RequestContext
    ) -> DeleteRecordsResponse:
        """Kafka's handleDeleteRecordsRequest: DELETE on each topic (the others answered
        TOPIC_AUTHORIZATION_FAILED, known or not); the leader moves the log start and
        answers once every live replica's log start reached it, or at the timeout."""
        deletable = self.apis.authorizer.filter_authorized(
            ctx.session,
            AclOperation.DELETE,
            ResourceType.TOPIC,
            (t.name for t in req.topics),
            request="DeleteRecords",
        )
        offsets = {
            TopicPartition(t.name, p.partition_index): p.offset
            for t in req.topics
            if t.name in deletable
            for p in t.partitions
        }
        results = await self.apis.delete_records(req.timeout, offsets) if offsets else {}

        def answer(topic: str, partition: int) -> DeleteRecordsPartitionResult:
            if topic not in deletable:
                code, low = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), INVALID_LOW_WATERMARK
            else:
                code, low = results[TopicPartition(topic, partition)]
            return DeleteRecordsPartitionResult(
                partition_index=partition, low_watermark=low, error_code=code
            )

        # One entry per topic and partition, as Kafka's maps merge a topic named twice.
        asked: dict[str, dict[int, None]] = {}
        for t in req.topics:
            parts = asked.setdefault(t.name, {})
            for p in t.partitions:
                parts[p.partition_index] = None
        return DeleteRecordsResponse(
            topics=tuple(
                DeleteRecordsTopicResult(
                    name=name, partitions=tuple(answer(name, p) for p in parts)
                )
                for name, parts in asked.items()
            )
        )
