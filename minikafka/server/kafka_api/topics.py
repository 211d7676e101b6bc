"""CreateTopics, DeleteTopics and CreatePartitions."""

from __future__ import annotations

import uuid

from minikafka.protocol.errors import ErrorCode
from minikafka.server.admin_manager import NewPartitions, NewTopic
from minikafka.server.broker_services import BrokerServices
from minikafka.server.kafka_api.models.topics import (
    CreatableTopicResult,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from minikafka.server.kafka_api.registry import ApiFamily, RequestContext, api
from minikafka.server.kafka_api.topic_ids import ZERO_UUID, topic_named, topic_uuid

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37


class TopicApis(ApiFamily):
    def __init__(self, apis: BrokerServices) -> None:
        self.apis = apis

    @api(CREATE_TOPICS, "CreateTopics", versions=(2, 7))
    async def create_topics(
        self, req: CreateTopicsRequest, ctx: RequestContext
    ) -> CreateTopicsResponse:
        created = await self.apis.admin.create_topics(
            [
                NewTopic(
                    t.name,
                    t.num_partitions,
                    t.replication_factor,
                    {a.partition_index: list(a.broker_ids) for a in t.assignments} or None,
                    {c.name: c.value for c in t.configs if c.value is not None},
                )
                for t in req.topics
            ],
            req.timeout,
            req.validate_only,
        )
        asked = {t.name: t for t in req.topics}
        config = self.apis.config
        results: list[CreatableTopicResult] = []
        for r in created:
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
                CreatableTopicResult(
                    name=r.name,
                    topic_id=topic_uuid(self.apis.cache, r.name) if ok else ZERO_UUID,
                    error_code=r.error_code,
                    error_message=r.error_message,
                    num_partitions=partitions if ok else -1,
                    replication_factor=rf if ok else -1,
                    configs=() if ok else None,
                )
            )
        return CreateTopicsResponse(topics=tuple(results))

    @api(DELETE_TOPICS, "DeleteTopics", versions=(1, 6))
    async def delete_topics(
        self, req: DeleteTopicsRequest, ctx: RequestContext
    ) -> DeleteTopicsResponse:
        cache = self.apis.cache
        # v6 may name topics by id; an id no topic has is UNKNOWN_TOPIC_ID.
        unknown_ids: list[uuid.UUID | None] = []
        names: list[str]
        if ctx.api_version >= 6:
            names = []
            for t in req.topics:
                name = t.name if t.name is not None else topic_named(cache, t.topic_id)
                if name is None:
                    unknown_ids.append(t.topic_id)
                else:
                    names.append(name)
        else:
            names = list(req.topic_names)
        # The ids before the topics are gone from the metadata cache.
        ids = {name: topic_uuid(cache, name) for name in names}
        deleted = await self.apis.admin.delete_topics(names, req.timeout)
        results = [
            DeletableTopicResult(
                name=r.name,
                topic_id=ids.get(r.name, ZERO_UUID),
                error_code=r.error_code,
                error_message=r.error_message,
            )
            for r in deleted
        ]
        results += [
            DeletableTopicResult(
                name=None,
                topic_id=topic_id,
                error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                error_message="This server does not host this topic ID.",
            )
            for topic_id in unknown_ids
        ]
        return DeleteTopicsResponse(responses=tuple(results))

    @api(CREATE_PARTITIONS, "CreatePartitions", versions=(0, 3))
    async def create_partitions(
        self, req: CreatePartitionsRequest, ctx: RequestContext
    ) -> CreatePartitionsResponse:
        added = await self.apis.admin.create_partitions(
            [
                NewPartitions(
                    t.name,
                    t.count,
                    None if t.assignments is None else [list(a.broker_ids) for a in t.assignments],
                )
                for t in req.topics
            ],
            req.timeout,
            req.validate_only,
        )
        return CreatePartitionsResponse(
            results=tuple(
                CreatePartitionsTopicResult(
                    name=r.name, error_code=r.error_code, error_message=r.error_message
                )
                for r in added
            )
        )
