"""The models of FindCoordinator (10), JoinGroup (11), Heartbeat (12), LeaveGroup (13), SyncGroup (14),
DescribeGroups (15), ListGroups (16) and DeleteGroups (42).

The union of the fields of every version served (model.py), generated once from kio's
schemas and kept by hand since; a comment gives the versions of a field some versions lack.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class FindCoordinatorRequest:
    key: str = ""  # v0-3
    key_type: int = 0  # v1+
    coordinator_keys: tuple[str, ...] = ()  # v4+


@dataclass(frozen=True, slots=True, kw_only=True)
class Coordinator:
    key: str
    node_id: int
    host: str
    port: int
    error_code: int
    error_message: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class FindCoordinatorResponse:
    error_code: int = 0  # v0-3
    node_id: int = 0  # v0-3
    host: str = ""  # v0-3
    port: int = 0  # v0-3
    throttle_time: int = 0  # v1+
    error_message: str | None = None  # v1-3
    coordinators: tuple[Coordinator, ...] = ()  # v4+


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinGroupRequestProtocol:
    name: str
    metadata: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinGroupRequest:
    group_id: str
    session_timeout: int
    member_id: str
    protocol_type: str
    protocols: tuple[JoinGroupRequestProtocol, ...]
    rebalance_timeout: int = -1  # v1+
    group_instance_id: str | None = None  # v5+
    reason: str | None = None  # v8+


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinGroupResponseMember:
    member_id: str
    metadata: bytes
    group_instance_id: str | None = None  # v5+


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinGroupResponse:
    error_code: int
    generation_id: int = -1
    protocol_name: str | None
    leader: str
    member_id: str
    members: tuple[JoinGroupResponseMember, ...]
    throttle_time: int = 0  # v2+
    protocol_type: str | None = None  # v7+
    skip_assignment: bool = False  # v9+


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None  # v3+


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatResponse:
    error_code: int
    throttle_time: int = 0  # v1+


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberIdentity:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None  # v5+


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaveGroupRequest:
    group_id: str
    member_id: str = ""  # v0-2
    members: tuple[MemberIdentity, ...] = ()  # v3+


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberResponse:
    member_id: str
    group_instance_id: str | None
    error_code: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaveGroupResponse:
    error_code: int
    throttle_time: int = 0  # v1+
    members: tuple[MemberResponse, ...] = ()  # v3+


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncGroupRequestAssignment:
    member_id: str
    assignment: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    assignments: tuple[SyncGroupRequestAssignment, ...]
    group_instance_id: str | None = None  # v3+
    protocol_type: str | None = None  # v5+
    protocol_name: str | None = None  # v5+


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncGroupResponse:
    error_code: int
    assignment: bytes
    throttle_time: int = 0  # v1+
    protocol_type: str | None = None  # v5+
    protocol_name: str | None = None  # v5+


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeGroupsRequest:
    groups: tuple[str, ...] = ()
    include_authorized_operations: bool = False  # v3+


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedGroupMember:
    member_id: str
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes
    group_instance_id: str | None = None  # v4+


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedGroup:
    error_code: int
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedGroupMember, ...]
    authorized_operations: int = -2147483648  # v3+


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeGroupsResponse:
    groups: tuple[DescribedGroup, ...]
    throttle_time: int = 0  # v1+


@dataclass(frozen=True, slots=True, kw_only=True)
class ListGroupsRequest:
    states_filter: tuple[str, ...] = ()  # v4+
    types_filter: tuple[str, ...] = ()  # v5+


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str = ""  # v4+
    group_type: str = ""  # v5+


@dataclass(frozen=True, slots=True, kw_only=True)
class ListGroupsResponse:
    error_code: int
    groups: tuple[ListedGroup, ...]
    throttle_time: int = 0  # v1+


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteGroupsRequest:
    groups_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletableGroupResult:
    group_id: str
    error_code: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteGroupsResponse:
    throttle_time: int = 0
    results: tuple[DeletableGroupResult, ...]
