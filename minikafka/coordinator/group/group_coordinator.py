"""Kafka's group coordinator (the classic protocol), sans-IO.

The coordinator of group G is the broker leading partition `partition_for(G)` of
`__consumer_offsets`; it owns the groups of the partitions it leads (`load_partition`,
`unload_partition`). Everything here runs on one thread and takes time from an injected
clock; the adapter feeds it requests, runs `expire()` at `next_deadline()`, and performs the
one kind of I/O it asks for: appending records to an offsets partition (`GroupStore`),
whose outcome comes back through a callback. Join and sync answers that must wait for the
rest of the group are callbacks too, called when the group gets there.

The rules are Kafka's GroupCoordinator (2.4+): MEMBER_ID_REQUIRED for new dynamic members
(KIP-394), static members (KIP-345), the initial rebalance delay, heartbeat, join, pending
member and pending sync timeouts; offsets committed with acks=all and expired after
`offsets.retention.minutes` (KIP-211).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from minikafka.clock import Clock
from minikafka.common import TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.coordinator.group.group_metadata import (
    NO_GENERATION,
    GroupMetadata,
    GroupState,
    JoinCallback,
    JoinMember,
    JoinResult,
    MemberMetadata,
    SyncCallback,
    SyncResult,
)
from minikafka.coordinator.group.offsets_topic import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    OffsetsRecordError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from minikafka.coordinator.group.timers import Timers
from minikafka.protocol.errors import ErrorCode
from minikafka.rules.consumer_offsets import partition_for

log = logging.getLogger(__name__)

E = ErrorCode
# A member that joined but never completes the join is dropped after this (Kafka's
# GroupCoordinator.NewMemberJoinTimeoutMs).
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000

Record = tuple[bytes, bytes | None]  # key, value (None: a tombstone)


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """The broker's group.* and offsets.* settings the coordinator obeys."""

    offsets_topic_num_partitions: int = 50
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 7 * 24 * 60 * 60 * 1000
    new_member_join_timeout_ms: int = NEW_MEMBER_JOIN_TIMEOUT_MS

    @classmethod
    def from_broker_config(cls, config: BrokerConfig) -> GroupConfig:
        """The settings out of the broker's configuration (as Kafka's GroupCoordinator.apply
        reads them from KafkaConfig): built here, not in config/, which sits below the
        coordinator."""
        return cls(
            offsets_topic_num_partitions=config.offsets_topic_num_partitions,
            min_session_timeout_ms=config.group_min_session_timeout_ms,
            max_session_timeout_ms=config.group_max_session_timeout_ms,
            initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
            max_size=config.group_max_size,
            offset_metadata_max_bytes=config.offset_metadata_max_bytes,
            offsets_retention_ms=config.offsets_retention_minutes * 60_000,
        )


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """A JoinGroup, any version (fields older versions lack take Kafka's defaults)."""

    group_id: str
    member_id: str  # "" for a member joining the first time
    group_instance_id: str | None  # static membership (KIP-345)
    require_known_member_id: bool  # v4+: MEMBER_ID_REQUIRED first (KIP-394)
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    # (name, metadata) in the member's order of preference
    protocols: list[tuple[str, bytes]]


class GroupStore(Protocol):
    """Appends records to a partition of __consumer_offsets with acks=all; `done` gets
    the append's error code (NONE once every in-sync replica has the records)."""

    def append(
        self, partition: int, records: list[Record], done: Callable[[ErrorCode], None]
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class GroupOverview:
    group_id: str
    protocol_type: str
    state: GroupState


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    error: ErrorCode
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]


def store_error(code: ErrorCode) -> ErrorCode:
    """What a member is told when storing the group's metadata failed (Kafka's mapping)."""
    if code in (
        E.UNKNOWN_TOPIC_OR_PARTITION,
        E.NOT_ENOUGH_REPLICAS,
        E.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        E.REQUEST_TIMED_OUT,
    ):
        return E.COORDINATOR_NOT_AVAILABLE
    if code in (E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR):
        return E.NOT_COORDINATOR
    if code in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_FETCH_SIZE):
        return E.UNKNOWN_SERVER_ERROR
    return code


def commit_error(code: ErrorCode) -> ErrorCode:
    """What a committer is told when appending its offsets failed (Kafka's mapping)."""
    if code in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_FETCH_SIZE):
        return E.INVALID_COMMIT_OFFSET_SIZE
    return store_error(code)


class GroupCoordinator:
    def __init__(self, config: GroupConfig, clock: Clock, store: GroupStore) -> None:
        self.config = config
        self.clock = clock
        self.store = store
        self.timers = Timers()
        self.groups: dict[str, GroupMetadata] = {}
        # Offsets partitions this broker leads: coordinator epoch (the partition's leader
        # epoch) by partition, for those loaded and for those still loading.
        self.owned: dict[int, int] = {}
        self.loading: dict[int, int] = {}
        self.active = True

    # --- partition ownership -----------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.offsets_topic_num_partitions)

    def coordinator_error(self, group_id: str) -> ErrorCode:
        """NONE when this broker serves `group_id` now."""
        if not self.active:
            return E.COORDINATOR_NOT_AVAILABLE
        partition = self.partition_for(group_id)
        if partition in self.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self.owned:
            return E.NOT_COORDINATOR
        return E.NONE

    def begin_loading(self, partition: int, epoch: int) -> None:
        """This broker became leader of `partition` at leader epoch `epoch`: its groups are
        unavailable (COORDINATOR_LOAD_IN_PROGRESS) until `finish_loading`."""
        self.unload_partition(partition)
        self.loading[partition] = epoch

    def finish_loading(self, partition: int, epoch: int, records: Iterable[Record]) -> bool:
        """Rebuild the partition's groups from its records, in offset order (the latest
        record per key wins; a tombstone removes). False if the load is stale (the
        partition was unloaded or loaded again meanwhile)."""
        if self.loading.get(partition) != epoch:
            return False
        offsets: dict[str, dict[TopicPartition, OffsetCommitValue]] = {}
        groups: dict[str, GroupMetadataValue | None] = {}
        for key_bytes, value in records:
            try:
                key = decode_key(key_bytes)
                if isinstance(key, OffsetCommitKey):
                    tp = TopicPartition(key.topic, key.partition)
                    group_offsets = offsets.setdefault(key.group, {})
                    if value is None:
                        group_offsets.pop(tp, None)
                    else:
                        group_offsets[tp] = decode_offset_commit_value(value)
                elif isinstance(key, GroupMetadataKey):
                    groups[key.group] = (
                        None if value is None else decode_group_metadata_value(value)
                    )
            except OffsetsRecordError as e:
                log.error("__consumer_offsets-%d: skipping a record: %s", partition, e)
        now = self.clock.now_ms()
        for group_id in {*offsets, *groups}:
            meta = groups.get(group_id)
            group_offsets = offsets.get(group_id, {})
            if meta is None and not group_offsets:
                continue
            group = self._new_group(group_id, partition)
            if meta is not None:
                self._restore(group, meta, now)
            group.offsets = group_offsets
            self.groups[group_id] = group
        del self.loading[partition]
        self.owned[partition] = epoch
        return True

    def _restore(self, group: GroupMetadata, meta: GroupMetadataValue, now: int) -> None:
        group.generation = meta.generation
        group.protocol_type = meta.protocol_type or None
        group.protocol_name = meta.protocol
        group.leader_id = meta.leader
        for mv in meta.members:
            protocols = [(meta.protocol, mv.subscription)] if meta.protocol is not None else []
            member = MemberMetadata(
                member_id=mv.member_id,
                group_instance_id=mv.group_instance_id,
                client_id=mv.client_id,
                client_host=mv.client_host,
                # -1 (not stored): the session timeout, as Kafka's loader takes it.
                rebalance_timeout_ms=mv.rebalance_timeout_ms
                if mv.rebalance_timeout_ms >= 0
                else mv.session_timeout_ms,
                session_timeout_ms=mv.session_timeout_ms,
                protocol_type=meta.protocol_type,
                protocols=protocols,
                assignment=mv.assignment,
            )
            group.members[member.member_id] = member
            if member.group_instance_id is not None:
                group.static_members[member.group_instance_id] = member.member_id
        # A loaded group with members is Stable: its members heartbeat to the new
        # coordinator, or expire and cause a rebalance.
        state = GroupState.STABLE if group.members else GroupState.EMPTY
        group.transition(state, now)
        if meta.current_state_timestamp >= 0:
            group.state_timestamp_ms = meta.current_state_timestamp
        for member in group.members.values():
            self._schedule_heartbeat(group, member)

    def unload_partition(self, partition: int) -> None:
        """Leadership of `partition` moved away: its groups go, and members waiting for a
        join or sync answer are told NOT_COORDINATOR (they find the new coordinator)."""
        self.loading.pop(partition, None)
        self.owned.pop(partition, None)
        for group_id in [g for g, grp in self.groups.items() if grp.partition == partition]:
            group = self.groups.pop(group_id)
            self._dispose(group, E.NOT_COORDINATOR)

    def _dispose(self, group: GroupMetadata, error: ErrorCode) -> None:
        group.transition(GroupState.DEAD, self.clock.now_ms())
        self.timers.cancel(("join", group.group_id))
        self.timers.cancel(("sync", group.group_id))
        for member in group.members.values():
            self.timers.cancel(("heartbeat", group.group_id, member.member_id))
            self._answer_join(member, JoinResult(error, member.member_id))
            self._answer_sync(member, SyncResult(error))
        for member_id in group.pending_members:
            self.timers.cancel(("pending", group.group_id, member_id))

    def shutdown(self) -> None:
        self.active = False
        for partition in [*self.owned, *self.loading]:
            self.unload_partition(partition)

    # --- timers ------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def expire(self) -> int:
        return self.timers.expire(self.clock.now_ms())

    # --- JoinGroup ---------------------------------------------------------------------

    def join_group(self, req: JoinRequest, callback: JoinCallback) -> None:
        def fail(error: ErrorCode) -> None:
            callback(JoinResult(error, req.member_id))

        if not req.group_id:
            return fail(E.INVALID_GROUP_ID)
        if (error := self.coordinator_error(req.group_id)) != E.NONE:
            return fail(error)
        if not (
            self.config.min_session_timeout_ms
            <= req.session_timeout_ms
            <= self.config.max_session_timeout_ms
        ):
            return fail(E.INVALID_SESSION_TIMEOUT)
        is_unknown = req.member_id == ""
        group = self.groups.get(req.group_id)
        if group is None:
            if not is_unknown:
                return fail(E.UNKNOWN_MEMBER_ID)
            group = self._new_group(req.group_id, self.partition_for(req.group_id))
            self.groups[req.group_id] = group
        if group.is_(GroupState.DEAD):
            # Removed meanwhile (deleted, or moved to another coordinator): find it again.
            return fail(E.COORDINATOR_NOT_AVAILABLE)
        names = [name for name, _ in req.protocols]
        if not group.supports_protocols(req.protocol_type, names):
            return fail(E.INCONSISTENT_GROUP_PROTOCOL)
        if is_unknown:
            self._join_unknown_member(group, req, callback)
        else:
            self._join_known_member(group, req, callback)
        self._try_complete_join(group)
        return None

    def _join_unknown_member(
        self, group: GroupMetadata, req: JoinRequest, callback: JoinCallback
    ) -> None:
        instance_id = req.group_instance_id
        new_id = f"{instance_id or req.client_id}-{uuid.uuid4()}"
        old_id = group.current_static_member(instance_id)
        if old_id is not None and instance_id is not None:
            self._replace_static_member(group, instance_id, old_id, new_id, req, callback)
            return
        if len(group.members) + len(group.pending_members) >= self.config.max_size:
            callback(JoinResult(E.GROUP_MAX_SIZE_REACHED, ""))
            return
        if instance_id is None and req.require_known_member_id:
            # KIP-394: the member must come back with this id; until then it is pending,
            # and the rebalance waits for it (or for its session timeout).
            group.pending_members.add(new_id)
            self.timers.schedule(
                ("pending", group.group_id, new_id),
                self.clock.now_ms() + req.session_timeout_ms,
                lambda: self._expire_pending_member(group, new_id),
            )
            callback(JoinResult(E.MEMBER_ID_REQUIRED, new_id))
            return
        self._add_member_and_rebalance(group, new_id, req, callback)

    def _join_known_member(
        self, group: GroupMetadata, req: JoinRequest, callback: JoinCallback
    ) -> None:
        member_id = req.member_id
        if member_id in group.pending_members:
            self._add_member_and_rebalance(group, member_id, req, callback)
            return
        if (error := self._member_error(group, member_id, req.group_instance_id)) != E.NONE:
            callback(JoinResult(error, member_id))
            return
        member = group.members[member_id]
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._update_member_and_rebalance(group, member, req, callback)
        elif group.is_(GroupState.COMPLETING_REBALANCE):
            if member.matches(req.protocols):
                # The member lost the join answer: it gets the same one again.
                callback(self._join_result(group, member))
            else:
                self._update_member_and_rebalance(group, member, req, callback)
        elif group.is_(GroupState.STABLE):
            if group.is_leader(member_id) or not member.matches(req.protocols):
                # The leader rejoining, or a changed subscription, means a new assignment.
                self._update_member_and_rebalance(group, member, req, callback)
            else:
                callback(self._join_result(group, member, with_members=False))
        else:
            callback(JoinResult(E.UNKNOWN_MEMBER_ID, member_id))

    def _member_error(
        self, group: GroupMetadata, member_id: str, group_instance_id: str | None
    ) -> ErrorCode:
        """Kafka's validateCurrentMember: a static member's id must be the current one for
        its instance id (else it is fenced: another process took the instance id)."""
        if group_instance_id is not None:
            current = group.current_static_member(group_instance_id)
            if current is None:
                return E.UNKNOWN_MEMBER_ID
            if current != member_id:
                return E.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return E.UNKNOWN_MEMBER_ID
        member = group.members[member_id]
        if member.group_instance_id is not None and group_instance_id is None:
            return E.FENCED_INSTANCE_ID
        return E.NONE

    def _add_member_and_rebalance(
        self, group: GroupMetadata, member_id: str, req: JoinRequest, callback: JoinCallback
    ) -> None:
        member = MemberMetadata(
            member_id=member_id,
            group_instance_id=req.group_instance_id,
            client_id=req.client_id,
            client_host=req.client_host,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            session_timeout_ms=req.session_timeout_ms,
            protocol_type=req.protocol_type,
            protocols=req.protocols,
            awaiting_join=callback,
            is_new=True,
        )
        if (
            group.is_(GroupState.PREPARING_REBALANCE)
            and group.initial_delay_running
            and group.generation == 0
        ):
            group.new_member_added = True
        self.timers.cancel(("pending", group.group_id, member_id))
        group.add(member)
        self._schedule_heartbeat(group, member, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance(group)

    def _update_member_and_rebalance(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        req: JoinRequest,
        callback: JoinCallback,
    ) -> None:
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        member.protocols = req.protocols
        if member.awaiting_join is not None and member.awaiting_join is not callback:
            # A second JoinGroup from the same member replaces the first (its connection
            # was probably lost); the first is answered so no request is left hanging.
            self._answer_join(member, JoinResult(E.UNKNOWN_MEMBER_ID, member.member_id))
        member.awaiting_join = callback
        self._maybe_prepare_rebalance(group)

    def _replace_static_member(
        self,
        group: GroupMetadata,
        instance_id: str,
        old_id: str,
        new_id: str,
        req: JoinRequest,
        callback: JoinCallback,
    ) -> None:
        """A static member restarted (KIP-345): its new member id replaces the old one,
        without a rebalance while the group is Stable and its protocols are unchanged."""
        old = group.members[old_id]
        # The old incarnation's waiting requests are fenced.
        self._answer_join(old, JoinResult(E.FENCED_INSTANCE_ID, old_id))
        self._answer_sync(old, SyncResult(E.FENCED_INSTANCE_ID))
        self.timers.cancel(("heartbeat", group.group_id, old_id))
        unchanged = old.matches(req.protocols)
        old_timeouts = (old.rebalance_timeout_ms, old.session_timeout_ms)
        member = group.replace_static_member(instance_id, old_id, new_id)
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        self._schedule_heartbeat(group, member)
        if group.is_(GroupState.STABLE) and unchanged:
            generation = group.generation

            def stored(code: ErrorCode) -> None:
                if code != E.NONE:
                    log.warning(
                        "group %s: storing replaced static member %s failed: %s",
                        group.group_id,
                        instance_id,
                        code.name,
                    )
                    if group.current_static_member(instance_id) == new_id:
                        group.replace_static_member(instance_id, new_id, old_id)
                        member.rebalance_timeout_ms, member.session_timeout_ms = old_timeouts
                        self.timers.cancel(("heartbeat", group.group_id, new_id))
                        self._schedule_heartbeat(group, member)
                    callback(JoinResult(store_error(code), ""))
                    return
                if group.generation != generation or member.member_id != new_id:
                    callback(JoinResult(E.REBALANCE_IN_PROGRESS, new_id))
                    return
                # The leader learns the members again but keeps its assignment
                # (KIP-814: skip_assignment).
                is_leader = group.is_leader(new_id)
                callback(self._join_result(group, member, with_members=is_leader, skip=is_leader))

            self._store_group(group, stored)
            return
        member.protocols = req.protocols
        member.awaiting_join = callback
        self._maybe_prepare_rebalance(group)

    def _join_result(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        *,
        with_members: bool | None = None,
        skip: bool = False,
    ) -> JoinResult:
        if with_members is None:
            with_members = group.is_leader(member.member_id)
        protocol = group.protocol_name
        members = (
            tuple(
                JoinMember(m.member_id, m.group_instance_id, m.metadata(protocol))
                for m in group.members.values()
            )
            if with_members and protocol is not None
            else ()
        )
        return JoinResult(
            E.NONE,
            member.member_id,
            group.generation,
            group.protocol_type,
            protocol,
            group.leader_id or "",
            members,
            skip,
        )

    def _maybe_prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.state in (
            GroupState.STABLE,
            GroupState.COMPLETING_REBALANCE,
            GroupState.EMPTY,
        ):
            self._prepare_rebalance(group)

    def _prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.is_(GroupState.COMPLETING_REBALANCE):
            # The assignment being made is void: members waiting for it rejoin.
            for member in group.members.values():
                self._answer_sync(member, SyncResult(E.REBALANCE_IN_PROGRESS))
        self.timers.cancel(("sync", group.group_id))
        group.pending_sync.clear()
        was_empty = group.is_(GroupState.EMPTY)
        group.transition(GroupState.PREPARING_REBALANCE, self.clock.now_ms())
        now = self.clock.now_ms()
        rebalance_timeout = group.max_rebalance_timeout_ms()
        if was_empty and self.config.initial_rebalance_delay_ms > 0:
            # InitialDelayedJoin: wait for more members before the first generation,
            # extended by one delay each time a member arrived, up to the rebalance timeout.
            delay = self.config.initial_rebalance_delay_ms
            group.initial_delay_running = True
            group.new_member_added = False
            self._schedule_initial_delay(group, delay, max(rebalance_timeout - delay, 0))
        else:
            group.initial_delay_running = False
            self.timers.schedule(
                ("join", group.group_id),
                now + rebalance_timeout,
                lambda: self._complete_join(group),
            )
        log.info(
            "group %s: preparing to rebalance (generation %d, %d members)",
            group.group_id,
            group.generation,
            len(group.members),
        )
        self._try_complete_join(group)

    def _schedule_initial_delay(self, group: GroupMetadata, delay: int, remaining: int) -> None:
        def expired() -> None:
            if group.new_member_added and remaining > 0:
                group.new_member_added = False
                next_delay = min(self.config.initial_rebalance_delay_ms, remaining)
                self._schedule_initial_delay(group, next_delay, remaining - next_delay)
                return
            group.initial_delay_running = False
            self._complete_join(group)

        self.timers.schedule(("join", group.group_id), self.clock.now_ms() + delay, expired)

    def _try_complete_join(self, group: GroupMetadata) -> None:
        if (
            group.is_(GroupState.PREPARING_REBALANCE)
            and not group.initial_delay_running
            and group.has_all_members_joined()
        ):
            self._complete_join(group)

    def _complete_join(self, group: GroupMetadata) -> None:
        """DelayedJoin's completion: members that did not rejoin are dropped (static ones
        are kept until their session expires), then the next generation begins."""
        if not group.is_(GroupState.PREPARING_REBALANCE):
            return
        self.timers.cancel(("join", group.group_id))
        group.initial_delay_running = False
        for member in group.not_yet_rejoined():
            if not member.is_static:
                self.timers.cancel(("heartbeat", group.group_id, member.member_id))
                group.remove(member.member_id)
        now = self.clock.now_ms()
        joined = [m for m in group.members.values() if m.awaiting_join is not None]
        if not joined and group.members:
            # Kafka: only static members that did not rejoin are left; wait for them (or
            # for their sessions to expire) another rebalance timeout.
            self.timers.schedule(
                ("join", group.group_id),
                now + group.max_rebalance_timeout_ms(),
                lambda: self._complete_join(group),
            )
            return
        group.generation += 1
        if not joined:
            # Nobody came back: an empty generation, stored so a reload sees it Empty.
            group.protocol_name = None
            group.leader_id = None
            group.transition(GroupState.EMPTY, now)
            log.info("group %s: generation %d is empty", group.group_id, group.generation)
            self._store_group(group, lambda code: None)
            return
        if group.leader_id is None or group.members[group.leader_id].awaiting_join is None:
            group.leader_id = joined[0].member_id
        group.protocol_name = group.select_protocol()
        group.transition(GroupState.COMPLETING_REBALANCE, now)
        log.info(
            "group %s: generation %d with %d members, protocol %s, leader %s",
            group.group_id,
            group.generation,
            len(group.members),
            group.protocol_name,
            group.leader_id,
        )
        group.pending_sync = set(group.members)
        for member in list(group.members.values()):
            member.is_new = False
            self._answer_join(member, self._join_result(group, member))
            self._schedule_heartbeat(group, member)
        generation = group.generation
        self.timers.schedule(
            ("sync", group.group_id),
            now + group.max_rebalance_timeout_ms(),
            lambda: self._expire_pending_sync(group, generation),
        )

    def _expire_pending_sync(self, group: GroupMetadata, generation: int) -> None:
        """Members that never sent SyncGroup for a generation are dropped (Kafka 2.8+), so a
        stuck member cannot hold the group in CompletingRebalance forever."""
        if group.generation != generation or not group.pending_sync:
            return
        if group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        for member_id in list(group.pending_sync):
            log.info("group %s: member %s did not sync in time", group.group_id, member_id)
            self.timers.cancel(("heartbeat", group.group_id, member_id))
            group.remove(member_id)
        self._after_member_removed(group)

    # --- SyncGroup ---------------------------------------------------------------------

    def sync_group(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Mapping[str, bytes],
        callback: SyncCallback,
    ) -> None:
        if (error := self.coordinator_error(group_id)) != E.NONE:
            return callback(SyncResult(error))
        group = self.groups.get(group_id)
        if group is None:
            return callback(SyncResult(E.UNKNOWN_MEMBER_ID))
        if group.is_(GroupState.DEAD):
            return callback(SyncResult(E.COORDINATOR_NOT_AVAILABLE))
        if (error := self._member_error(group, member_id, group_instance_id)) != E.NONE:
            return callback(SyncResult(error))
        if generation != group.generation:
            return callback(SyncResult(E.ILLEGAL_GENERATION))
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            return callback(SyncResult(E.INCONSISTENT_GROUP_PROTOCOL))
        member = group.members[member_id]
        if group.is_(GroupState.EMPTY):
            return callback(SyncResult(E.UNKNOWN_MEMBER_ID))
        if group.is_(GroupState.PREPARING_REBALANCE):
            return callback(SyncResult(E.REBALANCE_IN_PROGRESS))
        group.pending_sync.discard(member_id)
        self._schedule_heartbeat(group, member)
        if group.is_(GroupState.STABLE):
            return callback(self._sync_result(group, member))
        # CompletingRebalance: wait for the leader's assignment to be stored.
        member.awaiting_sync = callback
        if group.is_leader(member_id):
            chosen = {m: assignments.get(m, b"") for m in group.members}
            for m in group.members.values():
                m.assignment = chosen[m.member_id]
            expected_generation = group.generation

            def stored(code: ErrorCode) -> None:
                if (
                    not group.is_(GroupState.COMPLETING_REBALANCE)
                    or group.generation != expected_generation
                ):
                    return
                if code != E.NONE:
                    error = store_error(code)
                    for m in group.members.values():
                        m.assignment = b""
                        self._answer_sync(m, SyncResult(error))
                    self._prepare_rebalance(group)
                    return
                group.transition(GroupState.STABLE, self.clock.now_ms())
                for m in group.members.values():
                    self._answer_sync(m, self._sync_result(group, m))

            self._store_group(group, stored)
        return None

    @staticmethod
    def _sync_result(group: GroupMetadata, member: MemberMetadata) -> SyncResult:
        return SyncResult(E.NONE, group.protocol_type, group.protocol_name, member.assignment)

    # --- Heartbeat, LeaveGroup ---------------------------------------------------------

    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation: int
    ) -> ErrorCode:
        if (error := self.coordinator_error(group_id)) != E.NONE:
            return error
        group = self.groups.get(group_id)
        if group is None:
            return E.UNKNOWN_MEMBER_ID
        if group.is_(GroupState.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if (error := self._member_error(group, member_id, group_instance_id)) != E.NONE:
            return error
        if group.is_(GroupState.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return E.ILLEGAL_GENERATION
        self._schedule_heartbeat(group, group.members[member_id])
        if group.is_(GroupState.PREPARING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    def leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        """(top-level error, error per leaving (member id, group instance id))."""
        if (error := self.coordinator_error(group_id)) != E.NONE:
            return error, [error] * len(leaving)
        group = self.groups.get(group_id)
        if group is None:
            return E.NONE, [E.UNKNOWN_MEMBER_ID] * len(leaving)
        if group.is_(GroupState.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE, [E.COORDINATOR_NOT_AVAILABLE] * len(leaving)
        results: list[ErrorCode] = []
        removed = False
        for member_id, instance_id in leaving:
            if not member_id and instance_id is not None:
                # v3+: a static member may leave by instance id alone.
                member_id = group.current_static_member(instance_id) or ""
                if not member_id:
                    results.append(E.UNKNOWN_MEMBER_ID)
                    continue
            if member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self.timers.cancel(("pending", group.group_id, member_id))
                results.append(E.NONE)
                self._try_complete_join(group)
                continue
            error = self._member_error(group, member_id, instance_id)
            if error != E.NONE:
                results.append(error)
                continue
            log.info("group %s: member %s leaves", group_id, member_id)
            self._remove_member(group, group.members[member_id])
            removed = True
            results.append(E.NONE)
        if removed:
            self._after_member_removed(group)
        return E.NONE, results

    def _remove_member(self, group: GroupMetadata, member: MemberMetadata) -> None:
        self.timers.cancel(("heartbeat", group.group_id, member.member_id))
        self._answer_join(member, JoinResult(E.UNKNOWN_MEMBER_ID, member.member_id))
        self._answer_sync(member, SyncResult(E.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)

    def _after_member_removed(self, group: GroupMetadata) -> None:
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group)
        elif group.is_(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _schedule_heartbeat(
        self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int | None = None
    ) -> None:
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        member_id = member.member_id
        self.timers.schedule(
            ("heartbeat", group.group_id, member_id),
            self.clock.now_ms() + timeout,
            lambda: self._expire_heartbeat(group, member_id),
        )

    def _expire_heartbeat(self, group: GroupMetadata, member_id: str) -> None:
        member = group.members.get(member_id)
        if member is None or group.is_(GroupState.DEAD):
            return
        # Kafka's shouldKeepAlive: a member waiting in a rebalance is bounded by the
        # rebalance, not its session; a new one only by the new member join timeout.
        if (member.awaiting_join is not None and not member.is_new) or (
            member.awaiting_sync is not None
        ):
            self._schedule_heartbeat(group, member)
            return
        log.info("group %s: member %s's session expired", group.group_id, member_id)
        self._remove_member(group, member)
        self._after_member_removed(group)

    def _expire_pending_member(self, group: GroupMetadata, member_id: str) -> None:
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self._try_complete_join(group)

    # --- offsets -----------------------------------------------------------------------

    def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation: int,
        offsets: Mapping[TopicPartition, OffsetCommitValue],
        callback: Callable[[dict[TopicPartition, ErrorCode]], None],
    ) -> None:
        """OffsetCommit. A generation of -1 with no member id is a "simple" commit (a
        consumer that assigns its partitions itself): allowed while the group has no
        members. The answer comes once the records are on every in-sync replica."""

        def fail(error: ErrorCode) -> None:
            callback(dict.fromkeys(offsets, error))

        if (error := self.coordinator_error(group_id)) != E.NONE:
            return fail(error)
        group = self.groups.get(group_id)
        if group is None:
            if generation >= 0:
                # Not a simple commit, and no such group: the member's generation is gone.
                return fail(E.ILLEGAL_GENERATION)
            group = self._new_group(group_id, self.partition_for(group_id))
            self.groups[group_id] = group
        if group.is_(GroupState.DEAD):
            return fail(E.COORDINATOR_NOT_AVAILABLE)
        if not (generation < 0 and group.is_(GroupState.EMPTY)):
            if (error := self._member_error(group, member_id, group_instance_id)) != E.NONE:
                return fail(error)
            if generation != group.generation:
                return fail(E.ILLEGAL_GENERATION)
            if group.is_(GroupState.COMPLETING_REBALANCE):
                return fail(E.REBALANCE_IN_PROGRESS)
            self._schedule_heartbeat(group, group.members[member_id])
        results: dict[TopicPartition, ErrorCode] = {}
        valid: dict[TopicPartition, OffsetCommitValue] = {}
        for tp, value in offsets.items():
            if len(value.metadata.encode()) > self.config.offset_metadata_max_bytes:
                results[tp] = E.OFFSET_METADATA_TOO_LARGE
            else:
                valid[tp] = value
        if not valid:
            return callback(results)
        records: list[Record] = [
            (
                encode_offset_commit_key(OffsetCommitKey(group_id, tp.topic, tp.partition)),
                encode_offset_commit_value(v),
            )
            for tp, v in valid.items()
        ]
        for tp in valid:
            group.pending_commits[tp] = group.pending_commits.get(tp, 0) + 1
        deletions = {tp: group.offset_deletions.get(tp, 0) for tp in valid}

        def stored(code: ErrorCode) -> None:
            for tp in valid:
                left = group.pending_commits.get(tp, 0) - 1
                if left > 0:
                    group.pending_commits[tp] = left
                else:
                    group.pending_commits.pop(tp, None)
            error = commit_error(code) if code != E.NONE else E.NONE
            if error == E.NONE and not group.is_(GroupState.DEAD):
                group.offsets.update(
                    (tp, v)
                    for tp, v in valid.items()
                    if group.offset_deletions.get(tp, 0) == deletions[tp]
                )
            for tp in valid:
                results[tp] = error
            callback(results)

        self.store.append(group.partition, records, stored)
        return None

    def fetch_offsets(
        self, group_id: str, partitions: list[TopicPartition] | None
    ) -> tuple[ErrorCode, dict[TopicPartition, OffsetCommitValue | None]]:
        """OffsetFetch: the committed offset of each partition asked (None: none), or of
        every partition with one when `partitions` is None."""
        if (error := self.coordinator_error(group_id)) != E.NONE:
            return error, {}
        group = self.groups.get(group_id)
        offsets = {} if group is None or group.is_(GroupState.DEAD) else group.offsets
        if partitions is None:
            return E.NONE, dict(sorted(offsets.items()))
        return E.NONE, {tp: offsets.get(tp) for tp in partitions}

    def delete_offsets(
        self,
        group_id: str,
        partitions: list[TopicPartition],
        callback: Callable[[ErrorCode, dict[TopicPartition, ErrorCode]], None],
    ) -> None:
        """OffsetDelete (KIP-496): only for partitions of topics no member subscribes to."""
        if (error := self.coordinator_error(group_id)) != E.NONE:
            return callback(error, {})
        group = self.groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return callback(E.GROUP_ID_NOT_FOUND, {})
        subscribed: set[str] | None = set()
        if not group.is_(GroupState.EMPTY):
            if group.protocol_type != "consumer":
                return callback(E.NON_EMPTY_GROUP, {})
            # Unknown subscriptions (unreadable): every topic counts as subscribed (Kafka's
            # isSubscribedToTopic).
            subscribed = group.subscribed_topics()
        results: dict[TopicPartition, ErrorCode] = {}
        deletable: list[TopicPartition] = []
        for tp in partitions:
            if subscribed is None or tp.topic in subscribed:
                results[tp] = E.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                results[tp] = E.NONE
                if tp in group.offsets:
                    deletable.append(tp)
        if not deletable:
            return callback(E.NONE, results)
        for tp in deletable:
            group.offsets.pop(tp, None)
            group.offset_deletions[tp] = group.offset_deletions.get(tp, 0) + 1

        def stored(code: ErrorCode) -> None:
            error = store_error(code) if code != E.NONE else E.NONE
            for tp in deletable:
                results[tp] = error
            callback(E.NONE, results)

        self.store.append(group.partition, self._offset_tombstones(group_id, deletable), stored)
        return None

    @staticmethod
    def _offset_tombstones(group_id: str, tps: Iterable[TopicPartition]) -> list[Record]:
        return [
            (encode_offset_commit_key(OffsetCommitKey(group_id, tp.topic, tp.partition)), None)
            for tp in tps
        ]

    def expire_offsets(self) -> int:
        """Kafka's offset expiration (KIP-211), run every offsets.retention.check.interval.ms:
        an Empty group's offsets expire `offsets.retention.minutes` after it became empty;
        a group without group management's after their commit; a Stable consumer group's
        only for topics it no longer subscribes to. An Empty group left without offsets is
        removed. Returns how many offsets expired."""
        now = self.clock.now_ms()
        retention = self.config.offsets_retention_ms
        expired_total = 0
        for group in [g for g in self.groups.values() if self._serves(g)]:
            if group.is_(GroupState.EMPTY):
                simple = group.protocol_type is None
                became_empty = group.state_timestamp_ms
                base: Callable[[OffsetCommitValue], int] = (
                    (lambda v: v.commit_timestamp)
                    if simple or became_empty < 0
                    else (lambda v, t=became_empty: t)  # type: ignore[misc]
                )
                candidates = set(group.offsets)
            elif group.is_(GroupState.STABLE) and (topics := group.subscribed_topics()) is not None:
                base = lambda v: v.commit_timestamp  # noqa: E731
                candidates = {tp for tp in group.offsets if tp.topic not in topics}
            else:
                continue
            expired = [
                tp
                for tp in candidates
                if tp not in group.pending_commits
                and (
                    now >= group.offsets[tp].expire_timestamp
                    if group.offsets[tp].expire_timestamp >= 0
                    else base(group.offsets[tp]) + retention <= now
                )
            ]
            for tp in expired:
                del group.offsets[tp]
            records = self._offset_tombstones(group.group_id, expired)
            expired_total += len(expired)
            if group.is_(GroupState.EMPTY) and not group.offsets and not group.pending_commits:
                group.transition(GroupState.DEAD, now)
                del self.groups[group.group_id]
                records.append((encode_group_metadata_key(GroupMetadataKey(group.group_id)), None))
                log.info("group %s: removed (empty, no offsets left)", group.group_id)
            if records:
                self.store.append(group.partition, records, lambda code: None)
        return expired_total

    def _serves(self, group: GroupMetadata) -> bool:
        return group.partition in self.owned

    # --- ListGroups, DescribeGroups, DeleteGroups --------------------------------------

    def list_groups(
        self, states: set[str] | None = None, types: set[str] | None = None
    ) -> tuple[ErrorCode, list[GroupOverview]]:
        error = E.COORDINATOR_LOAD_IN_PROGRESS if self.loading else E.NONE
        if not self.active:
            return E.COORDINATOR_NOT_AVAILABLE, []
        out = []
        for group in self.groups.values():
            if not self._serves(group):
                continue
            if states and group.state.value.lower() not in {s.lower() for s in states}:
                continue
            protocol_type = group.protocol_type or ""
            if types and "classic" not in {t.lower() for t in types}:
                continue
            out.append(GroupOverview(group.group_id, protocol_type, group.state))
        return error, sorted(out, key=lambda g: g.group_id)

    def describe_group(self, group_id: str) -> GroupDescription:
        if (error := self.coordinator_error(group_id)) != E.NONE:
            return GroupDescription(error, group_id, "", "", "", ())
        group = self.groups.get(group_id)
        if group is None:
            return GroupDescription(E.NONE, group_id, GroupState.DEAD.value, "", "", ())
        stable = group.is_(GroupState.STABLE) and group.protocol_name is not None
        members = tuple(
            MemberDescription(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.metadata(group.protocol_name)
                if stable and group.protocol_name is not None
                else b"",
                m.assignment if stable else b"",
            )
            for m in group.members.values()
        )
        return GroupDescription(
            E.NONE,
            group_id,
            group.state.value,
            group.protocol_type or "",
            (group.protocol_name or "") if stable else "",
            members,
        )

    def delete_groups(
        self, group_ids: list[str], callback: Callable[[dict[str, ErrorCode]], None]
    ) -> None:
        """DeleteGroups: only Empty groups; their offsets and metadata get tombstones."""
        results: dict[str, ErrorCode] = {}
        pending: dict[int, list[Record]] = {}
        for group_id in group_ids:
            if (error := self.coordinator_error(group_id)) != E.NONE:
                results[group_id] = error
                continue
            group = self.groups.get(group_id)
            if group is None or group.is_(GroupState.DEAD):
                results[group_id] = E.GROUP_ID_NOT_FOUND
            elif not group.is_(GroupState.EMPTY):
                results[group_id] = E.NON_EMPTY_GROUP
            else:
                records = self._offset_tombstones(group_id, group.offsets)
                records.append((encode_group_metadata_key(GroupMetadataKey(group_id)), None))
                del self.groups[group_id]
                self._dispose(group, E.COORDINATOR_NOT_AVAILABLE)
                pending.setdefault(group.partition, []).extend(records)
                results[group_id] = E.NONE
        if not pending:
            return callback(results)
        outstanding = len(pending)
        deleted_by_partition = {
            p: [g for g in group_ids if results.get(g) == E.NONE and self.partition_for(g) == p]
            for p in pending
        }

        def stored_for(partition: int) -> Callable[[ErrorCode], None]:
            def stored(code: ErrorCode) -> None:
                nonlocal outstanding
                if code != E.NONE:
                    for g in deleted_by_partition[partition]:
                        results[g] = store_error(code)
                outstanding -= 1
                if outstanding == 0:
                    callback(results)

            return stored

        for partition, records in pending.items():
            self.store.append(partition, records, stored_for(partition))
        return None

    # --- helpers -----------------------------------------------------------------------

    def _new_group(self, group_id: str, partition: int) -> GroupMetadata:
        group = GroupMetadata(group_id, partition)
        group.state_timestamp_ms = self.clock.now_ms()
        return group

    def _store_group(self, group: GroupMetadata, done: Callable[[ErrorCode], None]) -> None:
        key = encode_group_metadata_key(GroupMetadataKey(group.group_id))
        value = encode_group_metadata_value(group.to_value())
        self.store.append(group.partition, [(key, value)], done)

    @staticmethod
    def _answer_join(member: MemberMetadata, result: JoinResult) -> None:
        callback, member.awaiting_join = member.awaiting_join, None
        if callback is not None:
            callback(result)

    @staticmethod
    def _answer_sync(member: MemberMetadata, result: SyncResult) -> None:
        callback, member.awaiting_sync = member.awaiting_sync, None
        if callback is not None:
            callback(result)


__all__ = [
    "NO_GENERATION",
    "GroupConfig",
    "GroupCoordinator",
    "GroupDescription",
    "GroupOverview",
    "GroupStore",
    "JoinRequest",
    "MemberDescription",
    "commit_error",
    "store_error",
]
