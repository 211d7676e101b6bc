"""The group membership APIs: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
ListGroups, DescribeGroups and DeleteGroups.

The decisions are the group coordinator's (coordinator/group); this module checks what
only the broker knows (where the coordinator of a group is) and creates
`__consumer_offsets` on first use, as Kafka does.
"""

from __future__ import annotations

import asyncio
import logging

from minikafka.common import TopicPartition
from minikafka.coordinator.group.group_coordinator import JoinRequest
from minikafka.coordinator.group.group_metadata import JoinResult, SyncResult
from minikafka.protocol.errors import ErrorCode, KafkaError, TopicAlreadyExistsError
from minikafka.rules.consumer_offsets import OFFSETS_TOPIC
from minikafka.security.operations import NOT_REQUESTED, AclOperation, ResourceType
from minikafka.server.admin_manager import NewTopic
from minikafka.server.broker_services import BrokerServices
from minikafka.server.group_coordinator_adapter import GroupCoordinatorAdapter
from minikafka.server.kafka_api.models.groups import (
    Coordinator,
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    MemberResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from minikafka.server.kafka_api.registry import ApiFamily, RequestContext, api
from minikafka.zk.client import ZkError

log = logging.getLogger(__name__)

E = ErrorCode
FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 10, 11, 12, 13, 14
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 15, 16, 42
GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE = 0, 1


def group_coordinator(apis: BrokerServices) -> GroupCoordinatorAdapter:
    groups = apis.group_coordinator
    assert groups is not None, "the broker sets its group coordinator before serving clients"
    return groups


class GroupApis(ApiFamily):
    def __init__(self, apis: BrokerServices) -> None:
        self.apis = apis
        self._creating_offsets_topic: asyncio.Task[None] | None = None

    @property
    def groups(self) -> GroupCoordinatorAdapter:
        return group_coordinator(self.apis)

    # --- FindCoordinator -----------------------------------------------------------------

    @api(FIND_COORDINATOR, "FindCoordinator", versions=(0, 4))
    async def find_coordinator(
        self, req: FindCoordinatorRequest, ctx: RequestContext
    ) -> FindCoordinatorResponse:
        if ctx.api_version >= 4:
            coordinators = [
                await self._coordinator(key, req.key_type, ctx) for key in req.coordinator_keys
            ]
            return FindCoordinatorResponse(coordinators=tuple(coordinators))
        one = await self._coordinator(req.key, req.key_type, ctx)
        return FindCoordinatorResponse(
            error_code=one.error_code,
            error_message=one.error_message,
            node_id=one.node_id,
            host=one.host,
            port=one.port,
        )

    async def _coordinator(self, key: str, key_type: int, ctx: RequestContext) -> Coordinator:
        listener = ctx.listener

        def error(code: ErrorCode, message: str | None = None) -> Coordinator:
            return Coordinator(
                key=key,
                node_id=-1,
                host="",
                port=-1,
                error_code=code,
                error_message=message or code.name,
            )

        # Kafka authorizes before anything else: DESCRIBE on the group, or on the
        # transactional id (whose coordinator this broker does not have).
        authorizer = self.apis.authorizer
        if key_type == GROUP_KEY_TYPE and not authorizer.authorize(
            ctx.session, AclOperation.DESCRIBE, ResourceType.GROUP, key, request="FindCoordinator"
        ):
            return error(E.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
        if key_type == TRANSACTION_KEY_TYPE and not authorizer.authorize(
            ctx.session,
            AclOperation.DESCRIBE,
            ResourceType.TRANSACTIONAL_ID,
            key,
            request="FindCoordinator",
        ):
            return error(
                E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "Transactional Id authorization failed."
            )
        if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
            # Kafka's CoordinatorType.forId throws: INVALID_REQUEST.
            return error(E.INVALID_REQUEST, f"Unknown coordinator type received: {key_type}")
        if key_type != GROUP_KEY_TYPE:
            return error(E.COORDINATOR_NOT_AVAILABLE, "this broker has no transaction coordinator")
        if not key:
            return error(E.INVALID_REQUEST, "a group id must not be empty")
        cache = self.apis.cache
        if not cache.contains_topic(OFFSETS_TOPIC):
            # Kafka creates the offsets topic on the first FindCoordinator and answers
            # COORDINATOR_NOT_AVAILABLE until its leaders are elected (the client retries).
            await self._ensure_offsets_topic()
            return error(E.COORDINATOR_NOT_AVAILABLE)
        partition = self.groups.core.partition_for(key)
        state = cache.partition_state(TopicPartition(OFFSETS_TOPIC, partition))
        if state is None:
            return error(E.COORDINATOR_NOT_AVAILABLE)
        node = next(
            (b for b in cache.alive_brokers_on(listener) if b.node_id == state.leader), None
        )
        if node is None:
            return error(E.COORDINATOR_NOT_AVAILABLE)
        return Coordinator(
            key=key,
            node_id=node.node_id,
            host=node.host,
            port=node.port,
            error_code=E.NONE,
            error_message=None,
        )

    async def _ensure_offsets_topic(self) -> None:
        """Create __consumer_offsets (offsets.topic.num.partitions, .replication.factor,
        compacted), once per broker at a time; concurrent askers share the attempt."""
        if self._creating_offsets_topic is None or self._creating_offsets_topic.done():
            self._creating_offsets_topic = asyncio.ensure_future(self._create_offsets_topic())
        try:
            await asyncio.shield(self._creating_offsets_topic)
        except (KafkaError, ZkError) as e:
            # Not enough live brokers, ZooKeeper away...: the client asks again.
            log.info("creating %s failed: %s", OFFSETS_TOPIC, e)

    async def _create_offsets_topic(self) -> None:
        config = self.apis.config
        rf = config.offsets_topic_replication_factor
        topic_config = {
            "cleanup.policy": "compact",
            "segment.bytes": str(config.offsets_topic_segment_bytes),
            # An acknowledged commit is on two replicas at least (with RF 3), so it survives
            # the loss of any one broker.
            "min.insync.replicas": str(min(2, rf)),
        }
        try:
            await self.apis.admin.create_topic(
                NewTopic(OFFSETS_TOPIC, config.offsets_topic_num_partitions, rf, None, topic_config)
            )
            log.info(
                "created %s (%d partitions, RF %d)",
                OFFSETS_TOPIC,
                config.offsets_topic_num_partitions,
                rf,
            )
        except TopicAlreadyExistsError:
            pass

    # --- JoinGroup, SyncGroup, Heartbeat, LeaveGroup ---------------------------------------

    @api(JOIN_GROUP, "JoinGroup", versions=(0, 9))
    async def join_group(self, req: JoinGroupRequest, ctx: RequestContext) -> JoinGroupResponse:
        version = ctx.api_version
        # v0 has no rebalance timeout: Kafka uses the session timeout for it.
        rebalance_timeout = req.rebalance_timeout if version >= 1 else req.session_timeout
        r = JoinResult(E.GROUP_AUTHORIZATION_FAILED, member_id="")
        if self._may_read_group(ctx, req.group_id, "JoinGroup"):
            r = await self.groups.join_group(
                JoinRequest(
                    group_id=req.group_id,
                    member_id=req.member_id,
                    group_instance_id=req.group_instance_id,
                    require_known_member_id=version >= 4,
                    client_id=ctx.client_id,
                    client_host=ctx.client_host,
                    rebalance_timeout_ms=rebalance_timeout,
                    session_timeout_ms=req.session_timeout,
                    protocol_type=req.protocol_type,
                    protocols=[(p.name, bytes(p.metadata)) for p in req.protocols],
                )
            )
        nullable = version >= 7
        return JoinGroupResponse(
            error_code=r.error,
            generation_id=r.generation,
            protocol_type=r.protocol_type,
            protocol_name=r.protocol_name if r.protocol_name is not None or nullable else "",
            leader=r.leader,
            skip_assignment=r.skip_assignment,
            member_id=r.member_id,
            members=tuple(
                JoinGroupResponseMember(
                    member_id=jm.member_id,
                    group_instance_id=jm.group_instance_id,
                    metadata=jm.metadata,
                )
                for jm in r.members
            ),
        )

    @api(SYNC_GROUP, "SyncGroup", versions=(0, 5))
    async def sync_group(self, req: SyncGroupRequest, ctx: RequestContext) -> SyncGroupResponse:
        r = SyncResult(E.GROUP_AUTHORIZATION_FAILED)
        if self._may_read_group(ctx, req.group_id, "SyncGroup"):
            r = await self.groups.sync_group(
                req.group_id,
                req.generation_id,
                req.member_id,
                req.group_instance_id,
                req.protocol_type,
                req.protocol_name,
                {a.member_id: bytes(a.assignment) for a in req.assignments},
            )
        return SyncGroupResponse(
            error_code=r.error,
            protocol_type=r.protocol_type,
            protocol_name=r.protocol_name,
            assignment=r.assignment,
        )

    @api(HEARTBEAT, "Heartbeat", versions=(0, 4))
    async def heartbeat(self, req: HeartbeatRequest, ctx: RequestContext) -> HeartbeatResponse:
        if not self._may_read_group(ctx, req.group_id, "Heartbeat"):
            return HeartbeatResponse(error_code=E.GROUP_AUTHORIZATION_FAILED)
        code = self.groups.heartbeat(
            req.group_id, req.member_id, req.group_instance_id, req.generation_id
        )
        return HeartbeatResponse(error_code=code)

    @api(LEAVE_GROUP, "LeaveGroup", versions=(0, 5))
    async def leave_group(self, req: LeaveGroupRequest, ctx: RequestContext) -> LeaveGroupResponse:
        if not self._may_read_group(ctx, req.group_id, "LeaveGroup"):
            # The whole request, no member answered (Kafka's).
            return LeaveGroupResponse(error_code=E.GROUP_AUTHORIZATION_FAILED)
        leaving: list[tuple[str, str | None]]
        if ctx.api_version >= 3:
            leaving = [(mi.member_id, mi.group_instance_id) for mi in req.members]
        else:
            leaving = [(req.member_id, None)]
        top, per_member = self.groups.leave_group(req.group_id, leaving)
        if ctx.api_version < 3:
            return LeaveGroupResponse(error_code=top if top != E.NONE else per_member[0])
        return LeaveGroupResponse(
            error_code=top,
            members=tuple(
                MemberResponse(member_id=mid, group_instance_id=iid, error_code=code)
                for (mid, iid), code in zip(leaving, per_member, strict=True)
            ),
        )

    def _may_read_group(self, ctx: RequestContext, group_id: str, request: str) -> bool:
        """JoinGroup, SyncGroup, Heartbeat and LeaveGroup need READ on the group (else
        GROUP_AUTHORIZATION_FAILED), as in Kafka."""
        return self.apis.authorizer.authorize(
            ctx.session, AclOperation.READ, ResourceType.GROUP, group_id, request=request
        )

    # --- ListGroups, DescribeGroups, DeleteGroups ------------------------------------------

    @api(LIST_GROUPS, "ListGroups", versions=(0, 5))
    async def list_groups(self, req: ListGroupsRequest, ctx: RequestContext) -> ListGroupsResponse:
        states = set(req.states_filter) or None
        types = set(req.types_filter) or None
        error, groups = self.groups.core.list_groups(states, types)
        # DESCRIBE on the cluster lists every group (Kafka keeps it for compatibility);
        # else only the groups the principal may DESCRIBE.
        authorizer = self.apis.authorizer
        session = ctx.session
        if not authorizer.authorize_cluster(session, AclOperation.DESCRIBE, request="ListGroups"):
            groups = [
                g
                for g in groups
                if authorizer.authorize(
                    session,
                    AclOperation.DESCRIBE,
                    ResourceType.GROUP,
                    g.group_id,
                    request="ListGroups",
                )
            ]
        return ListGroupsResponse(
            error_code=error,
            groups=tuple(
                ListedGroup(
                    group_id=g.group_id,
                    protocol_type=g.protocol_type,
                    group_state=g.state.value,
                    group_type="classic",
                )
                for g in groups
            ),
        )

    @api(DESCRIBE_GROUPS, "DescribeGroups", versions=(0, 5))
    async def describe_groups(
        self, req: DescribeGroupsRequest, ctx: RequestContext
    ) -> DescribeGroupsResponse:
        authorizer = self.apis.authorizer
        described = []
        for group_id in req.groups:
            if not authorizer.authorize(
                ctx.session,
                AclOperation.DESCRIBE,
                ResourceType.GROUP,
                group_id,
                request="DescribeGroups",
            ):
                described.append(
                    DescribedGroup(
                        error_code=E.GROUP_AUTHORIZATION_FAILED,
                        group_id=group_id,
                        group_state="",
                        protocol_type="",
                        protocol_data="",
                        members=(),
                    )
                )
                continue
            d = self.groups.core.describe_group(group_id)
            described.append(
                DescribedGroup(
                    error_code=d.error,
                    group_id=d.group_id,
                    group_state=d.state,
                    protocol_type=d.protocol_type,
                    protocol_data=d.protocol,
                    members=tuple(
                        DescribedGroupMember(
                            member_id=md.member_id,
                            group_instance_id=md.group_instance_id,
                            client_id=md.client_id,
                            client_host=md.client_host,
                            member_metadata=md.metadata,
                            member_assignment=md.assignment,
                        )
                        for md in d.members
                    ),
                    # KIP-430 (v3+), for a group described without error.
                    authorized_operations=(
                        authorizer.authorized_operations(ctx.session, ResourceType.GROUP, group_id)
                        if req.include_authorized_operations and d.error == E.NONE
                        else NOT_REQUESTED
                    ),
                )
            )
        return DescribeGroupsResponse(groups=tuple(described))

    @api(DELETE_GROUPS, "DeleteGroups", versions=(0, 2))
    async def delete_groups(
        self, req: DeleteGroupsRequest, ctx: RequestContext
    ) -> DeleteGroupsResponse:
        names = list(req.groups_names)
        # DELETE on each group; the others are answered GROUP_AUTHORIZATION_FAILED.
        deletable = self.apis.authorizer.filter_authorized(
            ctx.session, AclOperation.DELETE, ResourceType.GROUP, names, request="DeleteGroups"
        )
        results = dict.fromkeys(names, E.GROUP_AUTHORIZATION_FAILED)
        results.update(await self.groups.delete_groups([g for g in names if g in deletable]))
        return DeleteGroupsResponse(
            results=tuple(DeletableGroupResult(group_id=g, error_code=results[g]) for g in names)
        )
