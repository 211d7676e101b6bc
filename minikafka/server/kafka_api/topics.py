"""CreateTopics, DeleteTopics and CreatePartitions."""

from __future__ import annotations

import uuid
from collections import Counter

from minikafka.protocol.errors import ErrorCode
from minikafka.security.operations import AclOperation, ResourceType
from minikafka.server.admin_manager import NewPartitions, NewTopic
from minikafka.server.authorization import CLUSTER_NAME
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
        creatable, configs_visible = self._create_topics_allowed(ctx, req)
        to_create = [t for t in req.topics if t.name in creatable]
        created = (
            await self.apis.admin.create_topics(
                [
                    NewTopic(
                        t.name,
                        t.num_partitions,
                        t.replication_factor,
                        {a.partition_index: list(a.broker_ids) for a in t.assignments} or None,
                        {c.name: c.value for c in t.configs if c.value is not None},
                    )
                    for t in to_create
                ],
                req.timeout,
                req.validate_only,
            )
            if to_create
            else []
        )
        asked = {t.name: t for t in req.topics}
        config = self.apis.config
        results: dict[str, CreatableTopicResult] = {}
        counts = Counter(t.name for t in req.topics)
        for name in asked:
            if name in creatable:
                continue
            duplicated = counts[name] > 1
            results[name] = CreatableTopicResult(
                name=name,
                topic_id=ZERO_UUID,
                # Named twice: Kafka's INVALID_REQUEST comes before authorization.
                error_code=(
                    ErrorCode.INVALID_REQUEST
                    if duplicated
                    else ErrorCode.TOPIC_AUTHORIZATION_FAILED
                ),
                error_message=(
                    "Found multiple entries for this topic."
                    if duplicated
                    else "Authorization failed."
                ),
                topic_config_error_code=(
                    ErrorCode.NONE
                    if name in configs_visible
                    else ErrorCode.TOPIC_AUTHORIZATION_FAILED
                ),
                configs=None,
            )
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
            results[r.name] = CreatableTopicResult(
                name=r.name,
                topic_id=topic_uuid(self.apis.cache, r.name) if ok else ZERO_UUID,
                error_code=r.error_code,
                error_message=r.error_message,
                # v5+: the new topic's configs are only for a principal that may
                # DESCRIBE_CONFIGS it (a failed creation answers none, and no such error).
                topic_config_error_code=(
                    ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    if ok and r.name not in configs_visible
                    else ErrorCode.NONE
                ),
                num_partitions=partitions if ok else -1,
                replication_factor=rf if ok else -1,
                configs=() if ok else None,
            )
        # One answer per topic asked (a topic named twice: twice, as Kafka).
        return CreateTopicsResponse(
            topics=tuple(results[t.name] for t in req.topics if t.name in results)
        )

    def _create_topics_allowed(
        self, ctx: RequestContext, req: CreateTopicsRequest
    ) -> tuple[set[str], set[str]]:
        """Kafka's handleCreateTopicsRequest: the topics the principal may create (CREATE on
        the cluster, checked quietly, allows all; else CREATE on each), and those whose
        configs it may see in the answer (DESCRIBE_CONFIGS, quietly). A topic named twice is
        not creatable: Kafka refuses it as such (INVALID_REQUEST) before authorizing it."""
        names = [t.name for t in req.topics]
        authorizer = self.apis.authorizer
        if not authorizer.enabled:
            return set(names), set(names)
        session = ctx.session
        request = "CreateTopics"
        if authorizer.authorize(
            session,
            AclOperation.CREATE,
            ResourceType.CLUSTER,
            CLUSTER_NAME,
            request=request,
            log_if_denied=False,
        ):
            creatable = set(names)
        else:
            creatable = authorizer.filter_authorized(
                session, AclOperation.CREATE, ResourceType.TOPIC, names, request=request
            )
        configs_visible = authorizer.filter_authorized(
            session,
            AclOperation.DESCRIBE_CONFIGS,
            ResourceType.TOPIC,
            names,
            request=request,
            log_if_denied=False,
        )
        counts = Counter(names)
        return {n for n in creatable if counts[n] == 1}, configs_visible

    @api(DELETE_TOPICS, "DeleteTopics", versions=(1, 6))
    async def delete_topics(
        self, req: DeleteTopicsRequest, ctx: RequestContext
    ) -> DeleteTopicsResponse:
        cache = self.apis.cache
        # v6 may name topics by id; an id no topic has is UNKNOWN_TOPIC_ID.
        unknown_ids: list[uuid.UUID | None] = []
        by_id: dict[str, uuid.UUID] = {}
        names: list[str]
        if ctx.api_version >= 6:
            names = []
            for t in req.topics:
                name = t.name if t.name is not None else topic_named(cache, t.topic_id)
                if name is None:
                    unknown_ids.append(t.topic_id)
                else:
                    names.append(name)
                    if t.name is None and t.topic_id is not None:
                        by_id[name] = t.topic_id
        else:
            names = list(req.topic_names)
        names, refused = self._deletable(ctx, names, by_id)
        # The ids before the topics are gone from the metadata cache.
        ids = {name: topic_uuid(cache, name) for name in names}
        deleted = await self.apis.admin.delete_topics(names, req.timeout) if names else []
        results = [
            DeletableTopicResult(
                name=r.name,
                topic_id=ids.get(r.name, ZERO_UUID),
                error_code=r.error_code,
                error_message=r.error_message,
            )
            for r in deleted
        ]
        results += refused
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

    def _deletable(
        self, ctx: RequestContext, names: list[str], by_id: dict[str, uuid.UUID]
    ) -> tuple[list[str], list[DeletableTopicResult]]:
        """Kafka's handleDeleteTopicsRequest: DELETE on each topic, else
        TOPIC_AUTHORIZATION_FAILED (unknown or not); a topic named by id the principal may
        not even DESCRIBE is answered without its name (the id is no secret). With
        delete.topic.enable=false nothing is authorized: every topic is refused as such."""
        authorizer = self.apis.authorizer
        if not authorizer.enabled or not self.apis.config.delete_topic_enable:
            return names, []
        session, request = ctx.session, "DeleteTopics"
        describable = authorizer.filter_authorized(
            session, AclOperation.DESCRIBE, ResourceType.TOPIC, by_id, request=request
        )
        deletable = authorizer.filter_authorized(
            session, AclOperation.DELETE, ResourceType.TOPIC, names, request=request
        )
        # Named by id, not describable: not even the name is told.
        hidden = {n for n in by_id if n not in describable}
        refused = [
            DeletableTopicResult(
                name=None if n in hidden else n,
                topic_id=by_id.get(n, ZERO_UUID),
                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                error_message=None,
            )
            for n in names
            if n in hidden or n not in deletable
        ]
        return [n for n in names if n not in hidden and n in deletable], refused

    @api(CREATE_PARTITIONS, "CreatePartitions", versions=(0, 3))
    async def create_partitions(
        self, req: CreatePartitionsRequest, ctx: RequestContext
    ) -> CreatePartitionsResponse:
        alterable = self._alterable(ctx, req)
        to_add = [t for t in req.topics if t.name in alterable]
        added = (
            await self.apis.admin.create_partitions(
                [
                    NewPartitions(
                        t.name,
                        t.count,
                        None
                        if t.assignments is None
                        else [list(a.broker_ids) for a in t.assignments],
                    )
                    for t in to_add
                ],
                req.timeout,
                req.validate_only,
            )
            if to_add
            else []
        )
        results = {
            r.name: CreatePartitionsTopicResult(
                name=r.name, error_code=r.error_code, error_message=r.error_message
            )
            for r in added
        }
        return CreatePartitionsResponse(
            results=tuple(
                results.get(name)
                or CreatePartitionsTopicResult(
                    name=name,
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    error_message="The topic authorization is failed.",
                )
                for name in dict.fromkeys(t.name for t in req.topics)
            )
        )

    def _alterable(self, ctx: RequestContext, req: CreatePartitionsRequest) -> set[str]:
        """Kafka's handleCreatePartitionsRequest: ALTER on each topic. A non-controller
        answers NOT_CONTROLLER and a topic named twice INVALID_REQUEST before that, so
        those are passed on unauthorized."""
        names = [t.name for t in req.topics]
        authorizer = self.apis.authorizer
        controller = self.apis.controller
        if not authorizer.enabled or controller is None or not controller.is_active:
            return set(names)
        counts = Counter(names)
        alterable = authorizer.filter_authorized(
            ctx.session,
            AclOperation.ALTER,
            ResourceType.TOPIC,
            (n for n in names if counts[n] == 1),
            request="CreatePartitions",
        )
        return alterable | {n for n in names if counts[n] > 1}
