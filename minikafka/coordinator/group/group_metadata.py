"""A consumer group's state, as Kafka's GroupMetadata and MemberMetadata (classic protocol).

    Empty ──join──▶ PreparingRebalance ──all joined / timeout──▶ CompletingRebalance
      ▲                   ▲        │ (no members left)                 │ leader's SyncGroup
      └───────────────────┼────────┘                                   ▼ stored
                          └──── member joins, leaves or expires ──── Stable

Dead: the group was deleted, expired or unloaded; a request that still holds it is told to
find the coordinator again. Plain data and the transitions' bookkeeping; the rules of
when to move live in `group_coordinator.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from minikafka.common import TopicPartition
from minikafka.coordinator.group.offsets_topic import (
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitValue,
    subscribed_topics,
)
from minikafka.protocol.errors import ErrorCode

CONSUMER_PROTOCOL_TYPE = "consumer"
NO_GENERATION = -1


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class JoinMember:
    """A member as the leader sees it in its JoinGroup response."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    error: ErrorCode
    member_id: str
    generation: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[JoinMember, ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]


@dataclass(slots=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    # (name, metadata) in the member's order of preference
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: JoinCallback | None = None
    awaiting_sync: SyncCallback | None = None
    # Joined in the current rebalance: it has had no generation yet, so it may be timed out
    # while it waits for the join to complete (Kafka's isNew / new member join timeout).
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def to_value(self, protocol: str | None) -> MemberMetadataValue:
        return MemberMetadataValue(
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            client_id=self.client_id,
            client_host=self.client_host,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            session_timeout_ms=self.session_timeout_ms,
            subscription=self.metadata(protocol) if protocol is not None else b"",
            assignment=self.assignment,
        )


@dataclass(slots=True)
class GroupMetadata:
    group_id: str
    partition: int  # of __consumer_offsets
    state: GroupState = GroupState.EMPTY
    state_timestamp_ms: int = -1
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, MemberMetadata] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    # Member ids handed out with MEMBER_ID_REQUIRED whose owners have not joined yet.
    pending_members: set[str] = field(default_factory=set)
    # Members of a new generation that have not sent SyncGroup yet.
    pending_sync: set[str] = field(default_factory=set)
    # A member joined while the initial rebalance delay ran (it is extended once more).
    new_member_added: bool = False
    # During the first delay of a rebalance of an empty group (InitialDelayedJoin): the join
    # completes only when the delay ends, not when every member has joined.
    initial_delay_running: bool = False
    offsets: dict[TopicPartition, OffsetCommitValue] = field(default_factory=dict)
    # Offset commits in flight, so that a commit and a deletion in flight are not crossed.
    pending_commits: dict[TopicPartition, int] = field(default_factory=dict)
    # OffsetDeletes per partition: a commit in flight across one must not bring it back.
    offset_deletions: dict[TopicPartition, int] = field(default_factory=dict)

    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def transition(self, state: GroupState, now_ms: int) -> None:
        self.state = state
        self.state_timestamp_ms = now_ms

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: MemberMetadata) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        instance_id = member.group_instance_id
        if instance_id is not None and self.static_members.get(instance_id) == member_id:
            del self.static_members[instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            # Kafka prefers a member that has rejoined, so the new leader has a response.
            joined = [m for m in self.members.values() if m.awaiting_join is not None]
            rest = joined or list(self.members.values())
            self.leader_id = rest[0].member_id if rest else None
        return member

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> MemberMetadata:
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        return member

    def current_static_member(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def awaiting_join_count(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join is not None)

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.awaiting_join_count() and not self.pending_members

    def not_yet_rejoined(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def candidate_protocols(self) -> list[str]:
        """Protocols every member supports, in the first member's order."""
        members = list(self.members.values())
        if not members:
            return []
        common = set(members[0].protocol_names())
        for m in members[1:]:
            common &= set(m.protocol_names())
        return [p for p in members[0].protocol_names() if p in common]

    def supports_protocols(self, protocol_type: str, protocols: list[str]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        return protocol_type == self.protocol_type and bool(
            set(protocols) & set(self.candidate_protocols())
        )

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol that all support; the most
        votes win (ties: the first member's preference), as Kafka's selectProtocol."""
        candidates = self.candidate_protocols()
        votes = dict.fromkeys(candidates, 0)
        for m in self.members.values():
            vote = next(p for p in m.protocol_names() if p in votes)
            votes[vote] += 1
        return max(candidates, key=lambda p: votes[p])

    def subscribed_topics(self) -> set[str] | None:
        """The topics the members subscribe to, when the group is a consumer group whose
        subscriptions can be read; None when they cannot be known."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics |= subscribed_topics(m.metadata(self.protocol_name))
        except (KeyError, ValueError):
            return None
        return topics

    def to_value(self) -> GroupMetadataValue:
        return GroupMetadataValue(
            protocol_type=self.protocol_type or "",
            generation=self.generation,
            protocol=self.protocol_name,
            leader=self.leader_id,
            current_state_timestamp=self.state_timestamp_ms,
            members=tuple(m.to_value(self.protocol_name) for m in self.members.values()),
        )
