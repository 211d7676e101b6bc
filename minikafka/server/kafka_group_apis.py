"""Kafka's group APIs on the client listeners: FindCoordinator, JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups, DescribeGroups, DeleteGroups
and OffsetDelete, each read from a kio request of any version served and answered as
plain values (`entities.build` makes the version asked for).

The decisions are the group coordinator's (coordinator/group); this module translates
versions, checks what only the broker knows (which topics exist, where the coordinator of
a group is) and creates `__consumer_offsets` on first use, as Kafka does.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, NamedTuple

from minikafka.common import TopicPartition
from minikafka.coordinator.group.group_coordinator import JoinRequest
from minikafka.coordinator.group.offsets_topic import OFFSETS_TOPIC, OffsetCommitValue
from minikafka.protocol.errors import ErrorCode, KafkaError, TopicAlreadyExistsError
from minikafka.protocol.kafka.entities import as_list, field_or, millis
from minikafka.rpc import messages as m
from minikafka.security.operations import ResourceType, authorized_operations
from minikafka.zk.client import ZkError

if TYPE_CHECKING:
    from minikafka.server.group_coordinator_adapter import GroupCoordinatorAdapter
    from minikafka.server.kafka_apis import KafkaApis

log = logging.getLogger(__name__)

E = ErrorCode
OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT = 8, 9, 10, 11, 12
LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS = 13, 14, 15, 16
DELETE_GROUPS, OFFSET_DELETE = 42, 47
GROUP_API_KEYS = (
    OFFSET_COMMIT,
    OFFSET_FETCH,
    FIND_COORDINATOR,
    JOIN_GROUP,
    HEARTBEAT,
    LEAVE_GROUP,
    SYNC_GROUP,
    DESCRIBE_GROUPS,
    LIST_GROUPS,
    DELETE_GROUPS,
    OFFSET_DELETE,
)
GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE = 0, 1


class ClientInfo(NamedTuple):
    """Who sent a request: its client.id and address, as a group member's client_id and
    client_host (Kafka's "/127.0.0.1")."""

    client_id: str
    host: str


class KafkaGroupApis:
    def __init__(self, apis: KafkaApis, listener: str) -> None:
        self.apis = apis
        self.listener = listener
        self._creating_offsets_topic: asyncio.Task[None] | None = None

    @property
    def groups(self) -> GroupCoordinatorAdapter:
        groups = self.apis.group_coordinator
        assert groups is not None
        return groups

    def handlers(self) -> dict[int, Any]:
        return {
            FIND_COORDINATOR: self.find_coordinator,
            JOIN_GROUP: self.join_group,
            SYNC_GROUP: self.sync_group,
            HEARTBEAT: self.heartbeat,
            LEAVE_GROUP: self.leave_group,
            OFFSET_COMMIT: self.offset_commit,
            OFFSET_FETCH: self.offset_fetch,
            LIST_GROUPS: self.list_groups,
            DESCRIBE_GROUPS: self.describe_groups,
            DELETE_GROUPS: self.delete_groups,
            OFFSET_DELETE: self.offset_delete,
        }

    # --- FindCoordinator -----------------------------------------------------------------

    async def find_coordinator(self, version: int, req: Any, client: ClientInfo) -> dict[str, Any]:
        keys = list(req.coordinator_keys) if version >= 4 else [req.key]
        key_type = field_or(req, "key_type", GROUP_KEY_TYPE)
        coordinators = [await self._coordinator(key, key_type) for key in keys]
        if version >= 4:
            return {"throttle_time": 0, "coordinators": coordinators}
        return {"throttle_time": 0, **coordinators[0]}

    async def _coordinator(self, key: str, key_type: int) -> dict[str, Any]:
        def error(code: ErrorCode, message: str | None = None) -> dict[str, Any]:
            return {
                "key": key,
                "node_id": -1,
                "host": "",
                "port": -1,
                "error_code": code,
                "error_message": message or code.name,
            }

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
            (b for b in cache.alive_brokers_on(self.listener) if b.node_id == state.leader), None
        )
        if node is None:
            return error(E.COORDINATOR_NOT_AVAILABLE)
        return {
            "key": key,
            "node_id": node.node_id,
            "host": node.host,
            "port": node.port,
            "error_code": E.NONE,
            "error_message": None,
        }

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
            await self.apis.create_topic(
                m.CreatableTopic(
                    OFFSETS_TOPIC, config.offsets_topic_num_partitions, rf, None, topic_config
                )
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

    async def join_group(self, version: int, req: Any, client: ClientInfo) -> dict[str, Any]:
        session_timeout = millis(req.session_timeout)
        rebalance_timeout = millis(field_or(req, "rebalance_timeout", None), session_timeout)
        r = await self.groups.join_group(
            JoinRequest(
                group_id=req.group_id,
                member_id=req.member_id,
                group_instance_id=field_or(req, "group_instance_id", None),
                require_known_member_id=version >= 4,
                client_id=client.client_id,
                client_host=client.host,
                rebalance_timeout_ms=rebalance_timeout,
                session_timeout_ms=session_timeout,
                protocol_type=req.protocol_type,
                protocols=[(p.name, bytes(p.metadata)) for p in req.protocols],
            )
        )
        nullable = version >= 7
        return {
            "throttle_time": 0,
            "error_code": r.error,
            "generation_id": r.generation,
            "protocol_type": r.protocol_type,
            "protocol_name": r.protocol_name if r.protocol_name is not None or nullable else "",
            "leader": r.leader,
            "skip_assignment": r.skip_assignment,
            "member_id": r.member_id,
            "members": [
                {
                    "member_id": jm.member_id,
                    "group_instance_id": jm.group_instance_id,
                    "metadata": jm.metadata,
                }
                for jm in r.members
            ],
        }

    async def sync_group(self, version: int, req: Any, client: ClientInfo) -> dict[str, Any]:
        r = await self.groups.sync_group(
            req.group_id,
            req.generation_id,
            req.member_id,
            field_or(req, "group_instance_id", None),
            field_or(req, "protocol_type", None),
            field_or(req, "protocol_name", None),
            {a.member_id: bytes(a.assignment) for a in req.assignments},
        )
        return {
            "throttle_time": 0,
            "error_code": r.error,
            "protocol_type": r.protocol_type,
            "protocol_name": r.protocol_name,
            "assignment": r.assignment,
        }

    async def heartbeat(self, version: int, req: Any, client: ClientInfo) -> dict[str, Any]:
        code = self.groups.heartbeat(
            req.group_id,
            req.member_id,
            field_or(req, "group_instance_id", None),
            req.generation_id,
        )
        return {"throttle_time": 0, "error_code": code}

    async def leave_group(self, version: int, req: Any, client: ClientInfo) -> dict[str, Any]:
        if version >= 3:
            leaving = [(mi.member_id, mi.group_instance_id) for mi in req.members]
        else:
            leaving = [(req.member_id, None)]
        top, per_member = self.groups.leave_group(req.group_id, leaving)
        if version < 3:
            return {"throttle_time": 0, "error_code": top if top != E.NONE else per_member[0]}
        return {
            "throttle_time": 0,
            "error_code": top,
            "members": [
                {"member_id": mid, "group_instance_id": iid, "error_code": code}
                for (mid, iid), code in zip(leaving, per_member, strict=True)
            ],
        }

    # --- OffsetCommit, OffsetFetch, OffsetDelete -------------------------------------------

    async def offset_commit(self, version: int, req: Any, client: ClientInfo) -> dict[str, Any]:
        now = self.apis.now_ms()
        retention = millis(field_or(req, "retention_time", None), -1)
        errors: dict[TopicPartition, ErrorCode] = {}
        offsets: dict[TopicPartition, OffsetCommitValue] = {}
        cache = self.apis.cache
        for t in req.topics:
            count = cache.partition_count(t.name)
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if p.partition_index < 0 or p.partition_index >= count:
                    errors[tp] = E.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                offsets[tp] = OffsetCommitValue(
                    offset=p.committed_offset,
                    leader_epoch=field_or(p, "committed_leader_epoch", -1),
                    metadata=p.committed_metadata or "",
                    commit_timestamp=now,
                    expire_timestamp=now + retention if retention >= 0 else -1,
                )
        if offsets:
            errors.update(
                await self.groups.commit_offsets(
                    req.group_id,
                    req.member_id,
                    field_or(req, "group_instance_id", None),
                    req.generation_id_or_member_epoch,
                    offsets,
                )
            )
        return {
            "throttle_time": 0,
            "topics": [
                {
                    "name": t.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "error_code": errors[TopicPartition(t.name, p.partition_index)],
                        }
                        for p in t.partitions
                    ],
                }
                for t in req.topics
            ],
        }

    async def offset_fetch(self, version: int, req: Any, client: ClientInfo) -> dict[str, Any]:
        if version >= 8:
            groups = [self._fetch_group(g.group_id, g.topics, version) for g in req.groups]
            return {"throttle_time": 0, "groups": groups}
        one = self._fetch_group(req.group_id, req.topics, version)
        return {"throttle_time": 0, "topics": one["topics"], "error_code": one["error_code"]}

    def _fetch_group(self, group_id: str, topics: Any, version: int) -> dict[str, Any]:
        asked = (
            None
            if topics is None
            else [
                TopicPartition(t.name, p)
                for t in topics
                for p in (t.partition_indexes if hasattr(t, "partition_indexes") else t.partitions)
            ]
        )
        error, offsets = self.groups.core.fetch_offsets(group_id, asked)
        by_topic: dict[str, list[dict[str, Any]]] = {}
        if error != E.NONE and asked is not None and version < 2:
            # v0-1 have no group-level error: every partition carries it.
            for tp in asked:
                by_topic.setdefault(tp.topic, []).append(_fetched(tp.partition, None, error))
        else:
            for tp, value in offsets.items():
                by_topic.setdefault(tp.topic, []).append(_fetched(tp.partition, value, E.NONE))
        return {
            "group_id": group_id,
            "error_code": error,
            "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()],
        }

    async def offset_delete(self, version: int, req: Any, client: ClientInfo) -> dict[str, Any]:
        asked = [
            TopicPartition(t.name, p.partition_index) for t in req.topics for p in t.partitions
        ]
        top, per_partition = await self.groups.delete_offsets(req.group_id, asked)
        cache = self.apis.cache
        for tp in asked:
            if tp.partition >= cache.partition_count(tp.topic) and top == E.NONE:
                per_partition[tp] = E.UNKNOWN_TOPIC_OR_PARTITION
        by_topic: dict[str, list[dict[str, Any]]] = {}
        if top == E.NONE:
            for tp in asked:
                by_topic.setdefault(tp.topic, []).append(
                    {"partition_index": tp.partition, "error_code": per_partition.get(tp, E.NONE)}
                )
        return {
            "throttle_time": 0,
            "error_code": top,
            "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()],
        }

    # --- ListGroups, DescribeGroups, DeleteGroups ------------------------------------------

    async def list_groups(self, version: int, req: Any, client: ClientInfo) -> dict[str, Any]:
        states = set(as_list(field_or(req, "states_filter", None))) or None
        types = set(as_list(field_or(req, "types_filter", None))) or None
        error, groups = self.groups.core.list_groups(states, types)
        return {
            "throttle_time": 0,
            "error_code": error,
            "groups": [
                {
                    "group_id": g.group_id,
                    "protocol_type": g.protocol_type,
                    "group_state": g.state.value,
                    "group_type": "classic",
                }
                for g in groups
            ],
        }

    async def describe_groups(self, version: int, req: Any, client: ClientInfo) -> dict[str, Any]:
        described = []
        for group_id in req.groups:
            d = self.groups.core.describe_group(group_id)
            described.append(
                {
                    "error_code": d.error,
                    "group_id": d.group_id,
                    "group_state": d.state,
                    "protocol_type": d.protocol_type,
                    "protocol_data": d.protocol,
                    "members": [
                        {
                            "member_id": md.member_id,
                            "group_instance_id": md.group_instance_id,
                            "client_id": md.client_id,
                            "client_host": md.client_host,
                            "member_metadata": md.metadata,
                            "member_assignment": md.assignment,
                        }
                        for md in d.members
                    ],
                    "authorized_operations": authorized_operations(
                        ResourceType.GROUP,
                        bool(field_or(req, "include_authorized_operations", False)),
                    ),
                }
            )
        return {"throttle_time": 0, "groups": described}

    async def delete_groups(self, version: int, req: Any, client: ClientInfo) -> dict[str, Any]:
        names = list(req.groups_names)
        results = await self.groups.delete_groups(names)
        return {
            "throttle_time": 0,
            "results": [{"group_id": g, "error_code": results[g]} for g in names],
        }


def _fetched(partition: int, value: OffsetCommitValue | None, error: ErrorCode) -> dict[str, Any]:
    return {
        "partition_index": partition,
        "committed_offset": -1 if value is None else value.offset,
        "committed_leader_epoch": -1 if value is None else value.leader_epoch,
        "metadata": "" if value is None else value.metadata,
        "error_code": error,
    }
