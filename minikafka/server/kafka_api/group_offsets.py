"""A group's committed offsets: OffsetCommit, OffsetFetch and OffsetDelete (kept by the
group coordinator in `__consumer_offsets`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from minikafka.common import TopicPartition
from minikafka.coordinator.group.offsets_topic import OffsetCommitValue
from minikafka.protocol.errors import ErrorCode
from minikafka.security.operations import AclOperation, ResourceType
from minikafka.server.broker_services import BrokerServices
from minikafka.server.group_coordinator_adapter import GroupCoordinatorAdapter
from minikafka.server.kafka_api.groups import group_coordinator
from minikafka.server.kafka_api.models.group_offsets import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from minikafka.server.kafka_api.registry import ApiFamily, RequestContext, api

E = ErrorCode
OFFSET_COMMIT, OFFSET_FETCH, OFFSET_DELETE = 8, 9, 47

# One group's fetched offsets: its error and each topic's (partition, offset or None, error).
_Fetched = tuple[ErrorCode, dict[str, list[tuple[int, OffsetCommitValue | None, ErrorCode]]]]


class GroupOffsetApis(ApiFamily):
    def __init__(self, apis: BrokerServices) -> None:
        self.apis = apis

    @property
    def groups(self) -> GroupCoordinatorAdapter:
        return group_coordinator(self.apis)

    @api(OFFSET_COMMIT, "OffsetCommit", versions=(2, 9))
    async def offset_commit(
        self, req: OffsetCommitRequest, ctx: RequestContext
    ) -> OffsetCommitResponse:
        now = self.apis.now_ms()
        retention = req.retention_time  # -1 (the broker's offsets.retention) from v5 on
        errors: dict[TopicPartition, ErrorCode] = {}
        offsets: dict[TopicPartition, OffsetCommitValue] = {}
        cache = self.apis.cache
        # Kafka's rule: READ on the group (else every partition GROUP_AUTHORIZATION_FAILED),
        # then READ on each topic (else its partitions TOPIC_AUTHORIZATION_FAILED, whether
        # they exist or not).
        authorizer = self.apis.authorizer
        group_readable = authorizer.authorize(
            ctx.session, AclOperation.READ, ResourceType.GROUP, req.group_id, request="OffsetCommit"
        )
        readable = (
            authorizer.filter_authorized(
                ctx.session,
                AclOperation.READ,
                ResourceType.TOPIC,
                (t.name for t in req.topics),
                request="OffsetCommit",
            )
            if group_readable
            else set()
        )
        for t in req.topics:
            count = cache.partition_count(t.name)
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if not group_readable:
                    errors[tp] = E.GROUP_AUTHORIZATION_FAILED
                    continue
                if t.name not in readable:
                    errors[tp] = E.TOPIC_AUTHORIZATION_FAILED
                    continue
                if p.partition_index < 0 or p.partition_index >= count:
                    errors[tp] = E.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                offsets[tp] = OffsetCommitValue(
                    offset=p.committed_offset,
                    leader_epoch=p.committed_leader_epoch,
                    metadata=p.committed_metadata or "",
                    commit_timestamp=now,
                    expire_timestamp=now + retention if retention >= 0 else -1,
                )
        if offsets:
            errors.update(
                await self.groups.commit_offsets(
                    req.group_id,
                    req.member_id,
                    req.group_instance_id,
                    req.generation_id_or_member_epoch,
                    offsets,
                )
            )
        return OffsetCommitResponse(
            topics=tuple(
                OffsetCommitResponseTopic(
                    name=t.name,
                    partitions=tuple(
                        OffsetCommitResponsePartition(
                            partition_index=p.partition_index,
                            error_code=errors[TopicPartition(t.name, p.partition_index)],
                        )
                        for p in t.partitions
                    ),
                )
                for t in req.topics
            )
        )

    @api(OFFSET_FETCH, "OffsetFetch", versions=(1, 9))
    async def offset_fetch(
        self, req: OffsetFetchRequest, ctx: RequestContext
    ) -> OffsetFetchResponse:
        version = ctx.api_version
        if version >= 8:
            return OffsetFetchResponse(
                groups=tuple(
                    _group_v8(g.group_id, self._fetch_group(ctx, g.group_id, g.topics))
                    for g in req.groups
                )
            )
        error, by_topic = self._fetch_group(ctx, req.group_id, req.topics)
        return OffsetFetchResponse(
            error_code=error,
            topics=tuple(
                OffsetFetchResponseTopic(
                    name=name, partitions=_partitions(OffsetFetchResponsePartition, parts)
                )
                for name, parts in by_topic.items()
            ),
        )

    def _fetch_group(
        self,
        ctx: RequestContext,
        group_id: str,
        topics: Sequence[OffsetFetchRequestTopic] | Sequence[OffsetFetchRequestTopics] | None,
    ) -> _Fetched:
        requested = (
            None
            if topics is None
            else [TopicPartition(t.name, p) for t in topics for p in t.partition_indexes]
        )
        by_topic: dict[str, list[tuple[int, OffsetCommitValue | None, ErrorCode]]] = {}

        def answer(
            tps: Iterable[TopicPartition], value: OffsetCommitValue | None, error: ErrorCode
        ) -> None:
            for tp in tps:
                by_topic.setdefault(tp.topic, []).append((tp.partition, value, error))

        def failed(error: ErrorCode) -> _Fetched:
            if requested is not None and ctx.api_version < 2:
                # v0-1 have no group-level error: every partition asked carries it.
                answer(requested, None, error)
            return error, by_topic

        # Kafka's rule: DESCRIBE on the group, then the offsets of the topics the principal
        # may DESCRIBE only: one asked for is answered TOPIC_AUTHORIZATION_FAILED, and
        # "every partition" leaves the others out.
        authorizer = self.apis.authorizer
        session, request = ctx.session, "OffsetFetch"
        if not authorizer.authorize(
            session, AclOperation.DESCRIBE, ResourceType.GROUP, group_id, request=request
        ):
            return failed(E.GROUP_AUTHORIZATION_FAILED)
        asked = requested
        denied: list[TopicPartition] = []
        if requested is not None and authorizer.enabled:
            describable = authorizer.filter_authorized(
                session,
                AclOperation.DESCRIBE,
                ResourceType.TOPIC,
                (tp.topic for tp in requested),
                request=request,
            )
            asked = [tp for tp in requested if tp.topic in describable]
            denied = [tp for tp in requested if tp.topic not in describable]
        error, offsets = self.groups.core.fetch_offsets(group_id, asked)
        if error != E.NONE:
            return failed(error)
        if requested is None and authorizer.enabled:
            describable = authorizer.filter_authorized(
                session,
                AclOperation.DESCRIBE,
                ResourceType.TOPIC,
                (tp.topic for tp in offsets),
                request=request,
            )
            offsets = {tp: v for tp, v in offsets.items() if tp.topic in describable}
        for tp, value in offsets.items():
            answer((tp,), value, E.NONE)
        answer(denied, None, E.TOPIC_AUTHORIZATION_FAILED)
        return error, by_topic

    @api(OFFSET_DELETE, "OffsetDelete", versions=(0, 0))
    async def offset_delete(
        self, req: OffsetDeleteRequest, ctx: RequestContext
    ) -> OffsetDeleteResponse:
        asked = [
            TopicPartition(t.name, p.partition_index) for t in req.topics for p in t.partitions
        ]
        # Kafka's rule: DELETE on the group (else only that error), READ on each topic (else
        # its partitions TOPIC_AUTHORIZATION_FAILED, whether they exist or not).
        authorizer = self.apis.authorizer
        if not authorizer.authorize(
            ctx.session,
            AclOperation.DELETE,
            ResourceType.GROUP,
            req.group_id,
            request="OffsetDelete",
        ):
            return OffsetDeleteResponse(error_code=E.GROUP_AUTHORIZATION_FAILED, topics=())
        readable = authorizer.filter_authorized(
            ctx.session,
            AclOperation.READ,
            ResourceType.TOPIC,
            (t.name for t in req.topics),
            request="OffsetDelete",
        )
        top, per_partition = await self.groups.delete_offsets(
            req.group_id, [tp for tp in asked if tp.topic in readable]
        )
        cache = self.apis.cache
        by_topic: dict[str, list[OffsetDeleteResponsePartition]] = {}
        if top == E.NONE:
            for tp in asked:
                if tp.topic not in readable:
                    per_partition[tp] = E.TOPIC_AUTHORIZATION_FAILED
                elif tp.partition >= cache.partition_count(tp.topic):
                    per_partition[tp] = E.UNKNOWN_TOPIC_OR_PARTITION
            for tp in asked:
                by_topic.setdefault(tp.topic, []).append(
                    OffsetDeleteResponsePartition(
                        partition_index=tp.partition, error_code=per_partition.get(tp, E.NONE)
                    )
                )
        return OffsetDeleteResponse(
            error_code=top,
            topics=tuple(
                OffsetDeleteResponseTopic(name=name, partitions=tuple(parts))
                for name, parts in by_topic.items()
            ),
        )


def _group_v8(group_id: str, fetched: _Fetched) -> OffsetFetchResponseGroup:
    error, by_topic = fetched
    return OffsetFetchResponseGroup(
        group_id=group_id,
        error_code=error,
        topics=tuple(
            OffsetFetchResponseTopics(
                name=name, partitions=_partitions(OffsetFetchResponsePartitions, parts)
            )
            for name, parts in by_topic.items()
        ),
    )


P = TypeVar("P", OffsetFetchResponsePartition, OffsetFetchResponsePartitions)


def _partitions(
    model: type[P], parts: Iterable[tuple[int, OffsetCommitValue | None, ErrorCode]]
) -> tuple[P, ...]:
    """A topic's fetched offsets as `model` (v8+ nests them in a struct of its own)."""
    return tuple(
        model(
            partition_index=partition,
            committed_offset=-1 if value is None else value.offset,
            committed_leader_epoch=-1 if value is None else value.leader_epoch,
            metadata="" if value is None else value.metadata,
            error_code=code,
        )
        for partition, value, code in parts
    )
