"""The classic group coordinator (sans-IO): JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
offsets, loading from `__consumer_offsets`, and a stateful model of a group's life.

The reference is Apache Kafka's classic GroupCoordinator (kafka.coordinator.group in
2.8-3.x, `ClassicGroup` in the group-coordinator module); many scenarios are ported from
Kafka's GroupCoordinatorTest. Everything runs on a ManualClock: timers fire only when a
test advances the clock and calls `expire()`. The store is a fake whose appends a test
completes when (and how) it wants.

Tests marked "KAFKA DEVIATION" pin down Kafka's behaviour where this coordinator differs.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from minikafka.clock import ManualClock
from minikafka.common import TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.coordinator.group.group_coordinator import (
    GroupConfig,
    GroupCoordinator,
    GroupDescription,
    JoinRequest,
    Record,
)
from minikafka.coordinator.group.group_metadata import (
    GroupMetadata,
    GroupState,
    JoinMember,
    JoinResult,
    SyncResult,
)
from minikafka.coordinator.group.offsets_topic import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from minikafka.protocol.errors import ErrorCode

E = ErrorCode
S = GroupState
T = TypeVar("T")

NUM_PARTITIONS = 4
GROUP = "group"
SESSION = 10_000
REBALANCE = 30_000
INSTANCE = "instance-1"


def subscription(*topics: str, version: int = 0) -> bytes:
    """A ConsumerProtocolSubscription as a Kafka consumer writes it: int16 version, array of
    topic strings, nullable bytes user data (-1: null)."""
    out = struct.pack(">hi", version, len(topics))
    for topic in topics:
        data = topic.encode()
        out += struct.pack(">h", len(data)) + data
    return out + struct.pack(">i", -1)


SUB_T1 = subscription("t1")
SUB_T2 = subscription("t2")
PROTOCOLS = [("range", SUB_T1)]
TP0 = TopicPartition("t1", 0)
TP1 = TopicPartition("t1", 1)
TP_OTHER = TopicPartition("t2", 0)


# --- test doubles ------------------------------------------------------------------------


class Capture(Generic[T]):
    """A callback that records what it is called with."""

    def __init__(self) -> None:
        self.results: list[T] = []

    def __call__(self, result: T) -> None:
        self.results.append(result)

    @property
    def called(self) -> bool:
        return bool(self.results)

    @property
    def result(self) -> T:
        assert len(self.results) == 1, f"called {len(self.results)} times: {self.results}"
        return self.results[0]


@dataclass
class Append:
    partition: int
    records: list[Record]
    done: Callable[[ErrorCode], None]
    outcome: ErrorCode | None = None  # None: not completed yet


@dataclass
class FakeStore:
    """The coordinator's GroupStore: appends are recorded, and complete when a test says
    (or at once, with `auto`)."""

    auto: ErrorCode | None = None
    appends: list[Append] = field(default_factory=list)

    def append(
        self, partition: int, records: list[Record], done: Callable[[ErrorCode], None]
    ) -> None:
        entry = Append(partition, list(records), done)
        self.appends.append(entry)
        if self.auto is not None:
            self.complete(entry, self.auto)

    def pending(self) -> list[Append]:
        return [a for a in self.appends if a.outcome is None]

    def complete(self, entry: Append, code: ErrorCode = E.NONE) -> None:
        assert entry.outcome is None, "an append completes once"
        entry.outcome = code
        entry.done(code)

    def complete_all(self, code: ErrorCode = E.NONE) -> None:
        """Complete every pending append, including those the completions cause."""
        while pending := self.pending():
            self.complete(pending[0], code)

    def records(self, partition: int | None = None) -> list[Record]:
        """The records of the successful appends, in append order (the log)."""
        return [
            r
            for a in self.appends
            if a.outcome == E.NONE and (partition is None or a.partition == partition)
            for r in a.records
        ]


class Env:
    """A coordinator owning every offsets partition, on a manual clock, with a fake store,
    and the requests of a client as short calls."""

    def __init__(self, *, delay: int = 0, auto: ErrorCode | None = None, **config: Any) -> None:
        self.config = GroupConfig(
            offsets_topic_num_partitions=NUM_PARTITIONS, initial_rebalance_delay_ms=delay, **config
        )
        self.clock = ManualClock()
        self.store = FakeStore(auto)
        self.core = GroupCoordinator(self.config, self.clock, self.store)
        self.core.owned = dict.fromkeys(range(NUM_PARTITIONS), 0)

    # requests

    def join(
        self,
        member_id: str = "",
        *,
        group: str = GROUP,
        instance: str | None = None,
        require_known: bool = True,
        protocols: list[tuple[str, bytes]] | None = None,
        protocol_type: str = "consumer",
        session: int = SESSION,
        rebalance: int = REBALANCE,
        client_id: str = "client",
    ) -> Capture[JoinResult]:
        cap: Capture[JoinResult] = Capture()
        self.core.join_group(
            JoinRequest(
                group,
                member_id,
                instance,
                require_known,
                client_id,
                "/10.0.0.1",
                rebalance,
                session,
                protocol_type,
                list(PROTOCOLS if protocols is None else protocols),
            ),
            cap,
        )
        return cap

    def new_member_id(self, *, group: str = GROUP, client_id: str = "client") -> str:
        """A dynamic member's first JoinGroup (v4+): answered MEMBER_ID_REQUIRED."""
        r = self.join(group=group, client_id=client_id).result
        assert r.error == E.MEMBER_ID_REQUIRED
        return r.member_id

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: Mapping[str, bytes] | None = None,
        *,
        group: str = GROUP,
        instance: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> Capture[SyncResult]:
        cap: Capture[SyncResult] = Capture()
        self.core.sync_group(
            group,
            generation,
            member_id,
            instance,
            protocol_type,
            protocol_name,
            dict(assignments or {}),
            cap,
        )
        return cap

    def heartbeat(
        self, member_id: str, generation: int, *, group: str = GROUP, instance: str | None = None
    ) -> ErrorCode:
        return self.core.heartbeat(group, member_id, instance, generation)

    def leave(
        self, *leaving: tuple[str, str | None], group: str = GROUP
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        return self.core.leave_group(group, list(leaving))

    def offset(
        self, offset: int, metadata: str = "", *, epoch: int = -1, expire: int = -1
    ) -> OffsetCommitValue:
        return OffsetCommitValue(offset, epoch, metadata, self.clock.now_ms(), expire)

    def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetCommitValue],
        member_id: str = "",
        generation: int = -1,
        *,
        group: str = GROUP,
        instance: str | None = None,
    ) -> Capture[dict[TopicPartition, ErrorCode]]:
        cap: Capture[dict[TopicPartition, ErrorCode]] = Capture()
        self.core.commit_offsets(group, member_id, instance, generation, offsets, cap)
        return cap

    def fetch(
        self, partitions: list[TopicPartition] | None = None, *, group: str = GROUP
    ) -> dict[TopicPartition, OffsetCommitValue | None]:
        error, offsets = self.core.fetch_offsets(group, partitions)
        assert error == E.NONE
        return offsets

    def delete_offsets(
        self, *partitions: TopicPartition, group: str = GROUP
    ) -> Capture[tuple[ErrorCode, dict[TopicPartition, ErrorCode]]]:
        cap: Capture[tuple[ErrorCode, dict[TopicPartition, ErrorCode]]] = Capture()
        self.core.delete_offsets(group, list(partitions), lambda e, r: cap((e, dict(r))))
        return cap

    def delete_groups(self, *groups: str) -> Capture[dict[str, ErrorCode]]:
        cap: Capture[dict[str, ErrorCode]] = Capture()
        self.core.delete_groups(list(groups), cap)
        return cap

    # time and state

    def advance(self, ms: int) -> None:
        """Time passes; the timers due run (as the adapter does at `next_deadline`)."""
        self.clock.advance(ms)
        self.core.expire()

    def group(self, group: str = GROUP) -> GroupMetadata:
        return self.core.groups[group]

    def state(self, group: str = GROUP) -> GroupState:
        return self.core.groups[group].state

    def stable_group(
        self,
        specs: Iterable[str | None] = (None, None),
        *,
        group: str = GROUP,
        session: int = SESSION,
        rebalance: int = REBALANCE,
        protocols: list[tuple[str, bytes]] | None = None,
        protocol_type: str = "consumer",
    ) -> list[str]:
        """A Stable group of generation 1 (the clock does not move): one member per spec, a
        group instance id (static) or None (dynamic). Returns the member ids in spec order.

        Dynamic members get their ids first (MEMBER_ID_REQUIRED): the join waits for these
        pending members, so all complete in one generation; static members join before the
        dynamic ones (a lone static member would complete the join alone). The leader (the
        first to join) assigns each member `b"assignment-" + member id`."""
        specs = list(specs)
        assert any(s is None for s in specs) or len(specs) == 1
        ids: list[str | None] = [
            None if s is not None else self.new_member_id(group=group) for s in specs
        ]
        caps: dict[int, Capture[JoinResult]] = {}
        order = [i for i, s in enumerate(specs) if s is not None] + [
            i for i, s in enumerate(specs) if s is None
        ]
        for i in order:
            caps[i] = self.join(
                ids[i] or "",
                group=group,
                instance=specs[i],
                session=session,
                rebalance=rebalance,
                protocols=protocols,
                protocol_type=protocol_type,
            )
        results = [caps[i].result for i in range(len(specs))]
        assert all(r.error == E.NONE and r.generation == 1 for r in results), results
        member_ids = [r.member_id for r in results]
        leader = results[0].leader
        leader_instance = specs[member_ids.index(leader)]
        sync = self.sync(
            leader,
            1,
            {m: b"assignment-" + m.encode() for m in member_ids},
            group=group,
            instance=leader_instance,
        )
        self.store.complete_all()
        assert sync.result.error == E.NONE
        for member_id, instance in zip(member_ids, specs, strict=True):
            if member_id != leader:
                assert self.sync(member_id, 1, group=group, instance=instance).result.error == (
                    E.NONE
                )
        assert self.state(group) is S.STABLE
        return member_ids


def assignment_of(member_id: str) -> bytes:
    return b"assignment-" + member_id.encode()


def group_records(appends: Iterable[Append]) -> list[tuple[str, GroupMetadataValue | None]]:
    """The group metadata records among appends: (group id, value or None for a tombstone)."""
    out: list[tuple[str, GroupMetadataValue | None]] = []
    for a in appends:
        for key, value in a.records:
            k = decode_key(key)
            if isinstance(k, GroupMetadataKey):
                out.append((k.group, None if value is None else decode_group_metadata_value(value)))
    return out


def offset_records(
    appends: Iterable[Append],
) -> list[tuple[OffsetCommitKey, OffsetCommitValue | None]]:
    out: list[tuple[OffsetCommitKey, OffsetCommitValue | None]] = []
    for a in appends:
        for key, value in a.records:
            k = decode_key(key)
            if isinstance(k, OffsetCommitKey):
                out.append((k, None if value is None else decode_offset_commit_value(value)))
    return out


# --- 1. JoinGroup and SyncGroup: the v4+ flow -------------------------------------------


def test_unknown_member_requiring_known_member_id_gets_member_id_required() -> None:
    """KIP-394: a new dynamic member's first JoinGroup is answered at once with
    MEMBER_ID_REQUIRED and an id; the id is pending, the group is not rebalancing."""
    env = Env()
    r = env.join(client_id="consumer-1").result
    assert r.error == E.MEMBER_ID_REQUIRED
    assert r.member_id.startswith("consumer-1-")
    group = env.group()
    assert group.is_(S.EMPTY)
    assert group.members == {}
    assert group.pending_members == {r.member_id}
    assert env.store.appends == []


def test_member_ids_handed_out_are_unique() -> None:
    """Every MEMBER_ID_REQUIRED answer carries a fresh id."""
    env = Env()
    ids = {env.new_member_id() for _ in range(20)}
    assert len(ids) == 20


def test_join_completes_generation_one_when_pending_members_rejoin() -> None:
    """With no initial delay, the join completes once every member (and every pending id)
    has joined: generation 1; the leader's answer lists every member with its metadata for
    the chosen protocol, a follower's lists none."""
    env = Env()
    a = env.new_member_id()
    b = env.new_member_id()
    ja = env.join(a, protocols=[("range", SUB_T1), ("roundrobin", b"rr-a")])
    assert not ja.called, "waits for the pending member"
    assert env.state() is S.PREPARING_REBALANCE
    jb = env.join(b, protocols=[("range", SUB_T2), ("roundrobin", b"rr-b")])
    ra, rb = ja.result, jb.result
    assert ra.error == rb.error == E.NONE
    assert (ra.member_id, rb.member_id) == (a, b)
    assert ra.generation == rb.generation == 1
    assert ra.leader == rb.leader == a
    assert ra.protocol_type == rb.protocol_type == "consumer"
    assert ra.protocol_name == rb.protocol_name == "range"
    assert set(ra.members) == {JoinMember(a, None, SUB_T1), JoinMember(b, None, SUB_T2)}
    assert rb.members == ()
    assert env.state() is S.COMPLETING_REBALANCE
    assert env.group().leader_id == a


def test_single_member_join_completes_at_once_without_initial_delay() -> None:
    """initial_rebalance_delay_ms=0: a lone member's join completes in the same call."""
    env = Env()
    a = env.new_member_id()
    r = env.join(a).result
    assert (r.error, r.generation, r.leader) == (E.NONE, 1, a)
    assert r.members == (JoinMember(a, None, SUB_T1),)


def test_leader_sync_stores_group_metadata_then_members_get_their_assignments() -> None:
    """The leader's SyncGroup appends the group's metadata (generation, protocol, leader,
    members with subscriptions and assignments) under the group metadata key; nobody is
    answered until the append completes, then each member gets its own assignment and the
    group is Stable."""
    env = Env()
    a = env.new_member_id()
    b = env.new_member_id()
    env.join(a)
    env.join(b, protocols=[("range", SUB_T2)])
    sb = env.sync(b, 1)
    assert not sb.called, "a follower waits for the leader's assignment"
    sa = env.sync(a, 1, {a: b"A", b: b"B"})
    assert not sa.called and not sb.called
    assert env.state() is S.COMPLETING_REBALANCE
    [append] = env.store.pending()
    assert append.partition == env.core.partition_for(GROUP)
    [(key, value)] = append.records
    assert decode_key(key) == GroupMetadataKey(GROUP)
    assert value is not None
    meta = decode_group_metadata_value(value)
    assert (meta.protocol_type, meta.generation, meta.protocol, meta.leader) == (
        "consumer",
        1,
        "range",
        a,
    )
    assert {m.member_id: (m.subscription, m.assignment) for m in meta.members} == {
        a: (SUB_T1, b"A"),
        b: (SUB_T2, b"B"),
    }
    assert all(m.session_timeout_ms == SESSION for m in meta.members)
    assert all(m.rebalance_timeout_ms == REBALANCE for m in meta.members)
    env.store.complete(append)
    assert sa.result == SyncResult(E.NONE, "consumer", "range", b"A")
    assert sb.result == SyncResult(E.NONE, "consumer", "range", b"B")
    assert env.state() is S.STABLE


def test_follower_syncing_after_the_group_is_stable_gets_its_assignment_at_once() -> None:
    """SyncGroup in Stable answers with the member's assignment, without a store."""
    env = Env()
    a = env.new_member_id()
    b = env.new_member_id()
    env.join(a)
    env.join(b)
    env.sync(a, 1, {a: b"A", b: b"B"})
    env.store.complete_all()
    appends = len(env.store.appends)
    assert env.sync(b, 1).result == SyncResult(E.NONE, "consumer", "range", b"B")
    assert len(env.store.appends) == appends


def test_leader_assignment_missing_a_member_gives_it_an_empty_assignment() -> None:
    """Members the leader leaves out get an empty assignment (Kafka fills them in)."""
    env = Env(auto=E.NONE)
    a = env.new_member_id()
    b = env.new_member_id()
    env.join(a)
    env.join(b)
    sb = env.sync(b, 1)
    env.sync(a, 1, {a: b"A"})
    assert sb.result.error == E.NONE
    assert sb.result.assignment == b""


def test_join_errors() -> None:
    """Kafka's JoinGroup validation: empty group id, session timeout out of the broker's
    bounds, a member id for a group that does not exist, an empty protocol list or type,
    a protocol type or protocols the group cannot take."""
    env = Env(auto=E.NONE)
    assert env.join(group="").result.error == E.INVALID_GROUP_ID
    assert env.join(session=5999).result.error == E.INVALID_SESSION_TIMEOUT
    assert env.join(session=1_800_001).result.error == E.INVALID_SESSION_TIMEOUT
    assert env.join("someone", group="unknown").result.error == E.UNKNOWN_MEMBER_ID
    assert "unknown" not in env.core.groups
    assert env.join(protocols=[]).result.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert env.join(protocol_type="").result.error == E.INCONSISTENT_GROUP_PROTOCOL
    env.stable_group()
    assert env.join(protocol_type="connect").result.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert env.join(protocols=[("sticky", SUB_T1)]).result.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert env.join("not-a-member").result.error == E.UNKNOWN_MEMBER_ID
    assert env.state() is S.STABLE


def test_unchanged_follower_rejoining_stable_group_does_not_rebalance() -> None:
    """A follower rejoining with the same metadata gets the current generation back;
    the leader rejoining forces a rebalance (Kafka: it may have seen a metadata change)."""
    env = Env(auto=E.NONE)
    a, b = env.stable_group()
    r = env.join(b).result
    assert (r.error, r.generation, r.leader, r.members) == (E.NONE, 1, a, ())
    assert env.state() is S.STABLE
    ja = env.join(a)
    assert not ja.called
    assert env.state() is S.PREPARING_REBALANCE


def test_follower_rejoining_with_changed_metadata_triggers_rebalance() -> None:
    """A changed subscription means a new assignment: PreparingRebalance."""
    env = Env(auto=E.NONE)
    _, b = env.stable_group()
    jb = env.join(b, protocols=[("range", SUB_T2)])
    assert not jb.called
    assert env.state() is S.PREPARING_REBALANCE


def test_rejoin_during_completing_rebalance_with_same_metadata_gets_same_answer() -> None:
    """A member that lost its JoinGroup answer gets the same one again."""
    env = Env()
    a = env.new_member_id()
    b = env.new_member_id()
    ja = env.join(a)
    env.join(b)
    again = env.join(a).result
    assert again == ja.result
    assert env.state() is S.COMPLETING_REBALANCE


def test_second_join_from_same_member_answers_the_first() -> None:
    """A member's second JoinGroup while the first waits replaces it; the first is answered
    (UNKNOWN_MEMBER_ID) so no request is left hanging, and neither is answered twice."""
    env = Env(auto=E.NONE)
    a, b = env.stable_group()
    first = env.join(a)
    second = env.join(a)
    assert first.result.error == E.UNKNOWN_MEMBER_ID
    assert not second.called
    env.join(b)
    assert second.result.error == E.NONE
    assert second.result.generation == 2
    assert len(first.results) == 1


def test_max_group_size() -> None:
    """Past group.max.size new members are refused with GROUP_MAX_SIZE_REACHED."""
    env = Env(auto=E.NONE, max_size=1)
    env.stable_group([None])
    r = env.join().result
    assert r.error == E.GROUP_MAX_SIZE_REACHED
    assert env.state() is S.STABLE


# --- 2. Rebalances -----------------------------------------------------------------------


def test_new_member_joining_stable_group_triggers_rebalance_to_generation_two() -> None:
    """A pending id alone does not disturb a Stable group; the new member's JoinGroup does:
    PreparingRebalance, the old member's heartbeat says REBALANCE_IN_PROGRESS, and when it
    rejoins generation 2 completes with both."""
    env = Env(auto=E.NONE)
    [a] = env.stable_group([None])
    b = env.new_member_id()
    assert env.state() is S.STABLE
    jb = env.join(b)
    assert env.state() is S.PREPARING_REBALANCE
    assert not jb.called
    assert env.heartbeat(a, 1) == E.REBALANCE_IN_PROGRESS
    ja = env.join(a)
    assert ja.result.error == jb.result.error == E.NONE
    assert ja.result.generation == jb.result.generation == 2
    assert ja.result.leader == a
    assert {m.member_id for m in ja.result.members} == {a, b}
    assert env.state() is S.COMPLETING_REBALANCE
    assert env.heartbeat(a, 1) == E.ILLEGAL_GENERATION
    assert env.heartbeat(a, 2) == E.NONE


def test_member_not_rejoining_is_removed_at_the_rebalance_timeout() -> None:
    """A member that keeps heartbeating but does not rejoin holds the rebalance until the
    rebalance timeout (not longer); then it is dropped and the generation completes without
    it."""
    env = Env(auto=E.NONE)
    a, b = env.stable_group(rebalance=5000)
    c = env.new_member_id()
    jc = env.join(c, rebalance=5000)
    ja = env.join(a, rebalance=5000)
    env.advance(4000)
    assert env.heartbeat(b, 1) == E.REBALANCE_IN_PROGRESS
    env.advance(999)
    assert not ja.called and not jc.called
    env.advance(1)
    assert ja.result.generation == jc.result.generation == 2
    assert {m.member_id for m in ja.result.members} == {a, c}
    assert set(env.group().members) == {a, c}
    assert env.heartbeat(b, 1) == E.UNKNOWN_MEMBER_ID


def test_leader_not_rejoining_is_replaced_by_a_member_that_did() -> None:
    """If the leader is dropped for not rejoining, a member that rejoined leads."""
    env = Env(auto=E.NONE)
    a, b = env.stable_group(rebalance=5000)
    jb = env.join(b, protocols=[("range", SUB_T2)], rebalance=5000)
    env.advance(5000)
    r = jb.result
    assert (r.error, r.generation, r.leader) == (E.NONE, 2, b)
    assert a not in env.group().members


def test_pending_member_that_never_rejoins_delays_the_join_until_its_session_expires() -> None:
    """Kafka's testJoinGroupCompletionWhenPendingMemberTimesOut: the join waits for a
    pending id, which expires after the session timeout it asked with."""
    env = Env(auto=E.NONE)
    [a] = env.stable_group([None])
    env.new_member_id()
    ja = env.join(a)  # the leader rejoining: PreparingRebalance
    assert not ja.called
    env.advance(SESSION - 1)
    assert not ja.called
    env.advance(1)
    assert ja.result.error == E.NONE
    assert ja.result.generation == 2
    assert env.group().pending_members == set()


def test_pending_member_that_leaves_lets_the_join_complete() -> None:
    """Kafka's testPendingMembersLeavesGroup."""
    env = Env(auto=E.NONE)
    [a] = env.stable_group([None])
    pending = env.new_member_id()
    ja = env.join(a)
    assert env.leave((pending, None)) == (E.NONE, [E.NONE])
    assert ja.result.generation == 2
    assert env.group().pending_members == set()


def test_member_that_never_syncs_is_removed_after_the_rebalance_timeout() -> None:
    """Kafka 3.0+ (pending sync): members that do not send SyncGroup within the rebalance
    timeout of the join's completion are dropped, and the group rebalances."""
    env = Env(auto=E.NONE)
    a = env.new_member_id()
    b = env.new_member_id()
    env.join(a, rebalance=5000)
    env.join(b, rebalance=5000)
    env.sync(a, 1, {a: b"A", b: b"B"})
    assert env.state() is S.STABLE
    env.advance(4999)
    assert env.heartbeat(a, 1) == E.NONE
    assert env.heartbeat(b, 1) == E.NONE
    env.advance(1)
    assert set(env.group().members) == {a}
    assert env.state() is S.PREPARING_REBALANCE
    assert env.heartbeat(a, 1) == E.REBALANCE_IN_PROGRESS


def test_rebalance_does_not_time_out_when_every_member_synced() -> None:
    """Kafka's testRebalanceDoesNotTimeOutWhenAllSyncAreReceived."""
    env = Env(auto=E.NONE)
    a, b = env.stable_group(rebalance=5000)
    env.advance(5000)
    assert env.heartbeat(a, 1) == E.NONE
    assert env.heartbeat(b, 1) == E.NONE
    assert env.state() is S.STABLE


def test_new_member_join_times_out_after_new_member_join_timeout() -> None:
    """Kafka's testNewMemberJoinExpiration: a new member waiting in a rebalance that never
    completes (the old members hold it) is dropped after the new member join timeout,
    its JoinGroup answered UNKNOWN_MEMBER_ID."""
    env = Env(auto=E.NONE, new_member_join_timeout_ms=20_000)
    [a] = env.stable_group([None], rebalance=60_000, session=30_000)
    b = env.new_member_id()
    jb = env.join(b, rebalance=60_000, session=30_000)
    for _ in range(3):
        env.advance(6_000)
        assert env.heartbeat(a, 1) == E.REBALANCE_IN_PROGRESS
    assert not jb.called
    env.advance(2_000)  # 20 s after b joined
    assert jb.result.error == E.UNKNOWN_MEMBER_ID
    assert b not in env.group().members


# --- 3. Session timeout --------------------------------------------------------------------


def test_member_without_heartbeats_expires_after_session_timeout_not_before() -> None:
    """A member that stops heartbeating is removed exactly session_timeout_ms after its last
    heartbeat; heartbeats keep the other alive; the group rebalances, the survivor's
    heartbeat says REBALANCE_IN_PROGRESS and its rejoin completes generation 2 alone."""
    env = Env(auto=E.NONE)
    a, b = env.stable_group()
    for _ in range(3):
        env.advance(3000)
        assert env.heartbeat(a, 1) == E.NONE
    env.advance(999)  # 9999 ms after b's last SyncGroup
    assert b in env.group().members
    assert env.state() is S.STABLE
    env.advance(1)
    assert b not in env.group().members
    assert env.state() is S.PREPARING_REBALANCE
    assert env.heartbeat(a, 1) == E.REBALANCE_IN_PROGRESS
    assert env.heartbeat(b, 1) == E.UNKNOWN_MEMBER_ID
    r = env.join(a).result
    assert (r.generation, r.leader) == (2, a)
    assert r.members == (JoinMember(a, None, SUB_T1),)


def test_last_member_expiring_empties_the_group() -> None:
    """The last member's session expiring leaves an Empty group (next generation, stored)."""
    env = Env(auto=E.NONE)
    env.stable_group([None])
    env.advance(SESSION)
    group = env.group()
    assert group.is_(S.EMPTY)
    assert group.members == {}
    assert group.generation == 2
    assert group.leader_id is None
    assert group_records(env.store.appends)[-1][1] == GroupMetadataValue(
        "consumer", 2, None, None, env.clock.now_ms(), ()
    )


def test_offset_commit_keeps_the_session_alive() -> None:
    """Kafka's testCommitMaintainsSession."""
    env = Env(auto=E.NONE)
    [a] = env.stable_group([None])
    env.advance(SESSION // 2)
    assert env.commit({TP0: env.offset(1)}, a, 1).result == {TP0: E.NONE}
    env.advance(SESSION // 2 + 1)
    assert env.heartbeat(a, 1) == E.NONE


def test_heartbeat_errors() -> None:
    """Heartbeat: unknown group or member → UNKNOWN_MEMBER_ID; wrong generation →
    ILLEGAL_GENERATION; Empty group → UNKNOWN_MEMBER_ID; CompletingRebalance → NONE."""
    env = Env(auto=E.NONE)
    assert env.heartbeat("m", 1, group="unknown") == E.UNKNOWN_MEMBER_ID
    a = env.new_member_id()
    assert env.heartbeat(a, 0) == E.UNKNOWN_MEMBER_ID  # pending, and the group is Empty
    b = env.new_member_id()
    env.join(a)
    env.join(b)
    assert env.state() is S.COMPLETING_REBALANCE
    assert env.heartbeat(a, 1) == E.NONE
    assert env.heartbeat(a, 2) == E.ILLEGAL_GENERATION
    assert env.heartbeat("nobody", 1) == E.UNKNOWN_MEMBER_ID


# --- 4. The initial rebalance delay --------------------------------------------------------


def test_first_join_is_answered_only_after_the_initial_rebalance_delay() -> None:
    """group.initial.rebalance.delay.ms: the first generation of an Empty group waits the
    delay even though every member has joined."""
    env = Env(delay=3000)
    a = env.new_member_id()
    ja = env.join(a)
    assert env.state() is S.PREPARING_REBALANCE
    env.advance(2999)
    assert not ja.called
    env.advance(1)
    assert (ja.result.error, ja.result.generation) == (E.NONE, 1)


def test_member_arriving_during_the_initial_delay_extends_it() -> None:
    """Kafka's InitialDelayedJoin: a member that joined during the delay extends it by
    another delay."""
    env = Env(delay=3000)
    a = env.new_member_id()
    ja = env.join(a)
    env.advance(2000)
    b = env.new_member_id()
    jb = env.join(b)
    env.advance(1000)  # the first delay ends: extended to 6000
    assert not ja.called and not jb.called
    env.advance(2999)
    assert not ja.called and not jb.called
    env.advance(1)
    assert ja.result.generation == jb.result.generation == 1
    assert {m.member_id for m in ja.result.members} == {a, b}


def test_initial_delay_extensions_are_bounded_by_the_rebalance_timeout() -> None:
    """However many members keep arriving, the first generation completes by the rebalance
    timeout (5000 here: a 3000 delay, then an extension cut to the 2000 left)."""
    env = Env(delay=3000)
    a = env.new_member_id()
    ja = env.join(a, rebalance=5000)
    env.advance(1000)
    jb = env.join(env.new_member_id(), rebalance=5000)
    env.advance(2000)  # t=3000: the first delay ends, extended by the 2000 left
    env.advance(1000)
    jc = env.join(env.new_member_id(), rebalance=5000)
    env.advance(999)
    assert not ja.called and not jb.called and not jc.called
    env.advance(1)  # t=5000: no time left for another extension
    assert ja.result.generation == jb.result.generation == jc.result.generation == 1
    assert len(ja.result.members) == 3


def test_no_extension_without_a_new_member() -> None:
    """A member rejoining (not new) during the delay does not extend it."""
    env = Env(delay=3000)
    a = env.new_member_id()
    env.join(a)
    env.advance(1000)
    again = env.join(a)
    env.advance(2000)
    assert again.result.generation == 1


# --- 5. LeaveGroup -----------------------------------------------------------------------


def test_member_leaving_a_stable_group_of_two_triggers_a_rebalance() -> None:
    """LeaveGroup removes the member at once; the other's heartbeat says
    REBALANCE_IN_PROGRESS, and its rejoin completes generation 2 alone (it leads)."""
    env = Env(auto=E.NONE)
    a, b = env.stable_group()
    assert env.leave((a, None)) == (E.NONE, [E.NONE])
    assert a not in env.group().members
    assert env.state() is S.PREPARING_REBALANCE
    assert env.heartbeat(b, 1) == E.REBALANCE_IN_PROGRESS
    r = env.join(b).result
    assert (r.generation, r.leader, r.members) == (2, b, (JoinMember(b, None, SUB_T1),))


def test_leaving_member_waiting_for_a_join_answer_gets_unknown_member_id() -> None:
    """Its pending JoinGroup is answered (UNKNOWN_MEMBER_ID), so none is left hanging."""
    env = Env(auto=E.NONE)
    a, b = env.stable_group()
    ja = env.join(a)
    assert env.leave((a, None)) == (E.NONE, [E.NONE])
    assert ja.result.error == E.UNKNOWN_MEMBER_ID
    jb = env.join(b)
    assert jb.result.generation == 2


def test_leave_of_unknown_member_is_unknown_member_id() -> None:
    """Unknown member id (of a known or unknown group) → UNKNOWN_MEMBER_ID per member."""
    env = Env(auto=E.NONE)
    env.stable_group()
    assert env.leave(("nobody", None)) == (E.NONE, [E.UNKNOWN_MEMBER_ID])
    assert env.leave(("nobody", None), group="unknown") == (E.NONE, [E.UNKNOWN_MEMBER_ID])


def test_leave_of_unknown_member_does_not_rebalance_a_stable_group() -> None:
    """BUG (KAFKA DEVIATION): a LeaveGroup that removes nobody must leave a Stable group
    alone (Kafka rebalances only from removeMemberAndUpdateGroup)."""
    env = Env(auto=E.NONE)
    a, _ = env.stable_group()
    env.leave(("nobody", None))
    assert env.state() is S.STABLE
    assert env.heartbeat(a, 1) == E.NONE


def test_leave_of_pending_member_does_not_rebalance_a_stable_group() -> None:
    """BUG (KAFKA DEVIATION): a pending member (MEMBER_ID_REQUIRED, never joined) leaving is
    no membership change: Kafka's removePendingMemberAndUpdateGroup only re-checks a
    join in progress."""
    env = Env(auto=E.NONE)
    a, _ = env.stable_group()
    pending = env.new_member_id()
    assert env.leave((pending, None)) == (E.NONE, [E.NONE])
    assert env.state() is S.STABLE
    assert env.heartbeat(a, 1) == E.NONE


def test_static_member_leaves_by_group_instance_id_alone() -> None:
    """LeaveGroup v3+: a static member is removed by its group instance id with no member
    id; an unknown instance id is UNKNOWN_MEMBER_ID, a wrong member id for a known instance
    FENCED_INSTANCE_ID."""
    env = Env(auto=E.NONE)
    s, d = env.stable_group([INSTANCE, None])
    assert env.leave(("", "no-such-instance")) == (E.NONE, [E.UNKNOWN_MEMBER_ID])
    assert env.leave(("bad-id", INSTANCE)) == (E.NONE, [E.FENCED_INSTANCE_ID])
    assert s in env.group().members
    assert env.leave(("", INSTANCE)) == (E.NONE, [E.NONE])
    assert s not in env.group().members
    assert INSTANCE not in env.group().static_members
    assert env.state() is S.PREPARING_REBALANCE
    assert env.join(d).result.generation == 2


def test_last_member_leaving_makes_the_group_empty_at_once() -> None:
    """KAFKA DEVIATION: in Kafka the last member's LeaveGroup completes the (empty) join
    at once (prepareRebalance's tryCompleteElseWatch), so the group is Empty when the
    response is sent; here it stays PreparingRebalance until the next `expire()`."""
    env = Env(auto=E.NONE)
    [a] = env.stable_group([None])
    assert env.leave((a, None)) == (E.NONE, [E.NONE])
    assert env.state() is S.EMPTY
    assert env.group().generation == 2


def test_last_member_leaving_empties_the_group_once_timers_run() -> None:
    """After the last member leaves (and the timers due have run) the group is Empty, its
    empty generation stored; DeleteGroups then succeeds."""
    env = Env(auto=E.NONE)
    [a] = env.stable_group([None])
    env.leave((a, None))
    env.advance(0)
    assert env.state() is S.EMPTY
    assert env.group().generation == 2
    assert group_records(env.store.appends)[-1][1] is not None
    assert env.delete_groups(GROUP).result == {GROUP: E.NONE}


# --- 6. Static membership (KIP-345) ------------------------------------------------------


def test_new_static_member_joins_without_member_id_required() -> None:
    """A static member is never asked for MEMBER_ID_REQUIRED: its id is made at once."""
    env = Env()
    r = env.join(instance=INSTANCE).result
    assert r.error == E.NONE
    assert r.member_id.startswith(INSTANCE + "-")
    assert env.group().static_members == {INSTANCE: r.member_id}


def test_static_member_restart_gets_new_member_id_without_rebalance() -> None:
    """A static member rejoining with no member id and its group instance id while Stable
    (same protocols) replaces its old id: the group's metadata is stored, then it gets a new
    id in the same generation (the leader is told to skip the assignment, KIP-814); the old
    id is fenced; the group stays Stable; its assignment carries over."""
    env = Env()
    s, d = env.stable_group([INSTANCE, None])
    assert env.group().leader_id == s
    js = env.join(instance=INSTANCE)
    assert not js.called, "answered once the new member id is stored"
    [append] = env.store.pending()
    [(_, meta)] = group_records([append])
    assert meta is not None
    [static] = [m for m in meta.members if m.group_instance_id == INSTANCE]
    assert static.member_id != s
    env.store.complete(append)
    r = js.result
    new = r.member_id
    assert r.error == E.NONE
    assert new == static.member_id
    assert (r.generation, r.leader, r.skip_assignment) == (1, new, True)
    assert {m.member_id for m in r.members} == {new, d}
    assert env.state() is S.STABLE
    assert env.group().generation == 1
    assert env.heartbeat(s, 1, instance=INSTANCE) == E.FENCED_INSTANCE_ID
    assert env.heartbeat(new, 1, instance=INSTANCE) == E.NONE
    assert env.heartbeat(d, 1) == E.NONE
    assert env.sync(new, 1, instance=INSTANCE).result.assignment == assignment_of(s)
    assert env.sync(s, 1, instance=INSTANCE).result.error == E.FENCED_INSTANCE_ID
    assert env.join(s, instance=INSTANCE).result.error == E.FENCED_INSTANCE_ID
    assert env.commit({TP0: env.offset(1)}, s, 1, instance=INSTANCE).result == {
        TP0: E.FENCED_INSTANCE_ID
    }


def test_static_follower_restart_is_not_told_to_lead() -> None:
    """A static follower's replacement answer names the real leader, lists no members and
    does not skip an assignment it never had to make."""
    env = Env(auto=E.NONE)
    [d] = env.stable_group([None])
    js = env.join(instance=INSTANCE)  # a static member joins: generation 2
    jd = env.join(d)
    s = js.result.member_id
    assert (jd.result.generation, jd.result.leader) == (2, d)
    env.sync(d, 2, {d: b"D", s: b"S"})
    assert env.sync(s, 2, instance=INSTANCE).result.assignment == b"S"
    r = env.join(instance=INSTANCE).result
    assert (r.error, r.generation, r.leader, r.members, r.skip_assignment) == (
        E.NONE,
        2,
        d,
        (),
        False,
    )
    assert env.sync(r.member_id, 2, instance=INSTANCE).result.assignment == b"S"


def test_static_member_restart_with_changed_protocols_triggers_rebalance() -> None:
    """A restarted static member with different metadata replaces the old id and the group
    rebalances (its JoinGroup waits for the new generation)."""
    env = Env(auto=E.NONE)
    s, d = env.stable_group([INSTANCE, None])
    js = env.join(instance=INSTANCE, protocols=[("range", SUB_T2)])
    assert not js.called
    assert env.state() is S.PREPARING_REBALANCE
    assert s not in env.group().members
    jd = env.join(d)
    assert js.result.generation == jd.result.generation == 2
    assert js.result.member_id != s


def test_static_member_restart_while_rebalancing_fences_the_old_join() -> None:
    """The old incarnation's waiting JoinGroup is answered FENCED_INSTANCE_ID; the new one
    takes its place in the rebalance."""
    env = Env(auto=E.NONE)
    s, d = env.stable_group([INSTANCE, None])
    old = env.join(s, instance=INSTANCE)  # the leader rejoins: PreparingRebalance
    new = env.join(instance=INSTANCE)
    assert old.result.error == E.FENCED_INSTANCE_ID
    jd = env.join(d)
    assert new.result.error == jd.result.error == E.NONE
    assert new.result.generation == 2
    assert {m.member_id for m in env.group().members.values()} == {new.result.member_id, d}


def test_static_member_restart_with_failed_store_keeps_the_old_member_id() -> None:
    """BUG (KAFKA DEVIATION): when storing a static member's new id fails, Kafka reverts the
    replacement (the old id stays current) and answers the JoinGroup with the store error
    (NOT_ENOUGH_REPLICAS → COORDINATOR_NOT_AVAILABLE). Here the join is answered NONE with
    a new id that was never stored, and the old id, the one a failed-over coordinator would
    load, is fenced."""
    env = Env()
    s, _ = env.stable_group([INSTANCE, None])
    js = env.join(instance=INSTANCE)
    env.store.complete(env.store.pending()[0], E.NOT_ENOUGH_REPLICAS)
    assert js.result.error == E.COORDINATOR_NOT_AVAILABLE
    assert env.group().static_members[INSTANCE] == s
    assert env.heartbeat(s, 1, instance=INSTANCE) == E.NONE


def test_static_member_not_rejoining_holds_the_group_in_preparing_rebalance() -> None:
    """KAFKA DEVIATION (Kafka's groupStuckInRebalanceTimeoutDueToNonjoinedStaticMember):
    when the rebalance times out with only static members that did not rejoin, Kafka keeps
    them and waits another rebalance timeout (PreparingRebalance) rather than completing an
    empty generation; here the group becomes Empty with a member still in it."""
    env = Env(auto=E.NONE)
    [s] = env.stable_group([INSTANCE], rebalance=5000)
    d = env.new_member_id()
    env.join(d, rebalance=5000)
    assert env.state() is S.PREPARING_REBALANCE
    env.leave((d, None))
    env.advance(4000)
    assert env.heartbeat(s, 1, instance=INSTANCE) == E.REBALANCE_IN_PROGRESS
    env.advance(1000)  # the rebalance timeout: s never rejoined
    group = env.group()
    assert not (group.is_(S.EMPTY) and group.members), "an Empty group with members"
    assert group.is_(S.PREPARING_REBALANCE)
    assert set(group.members) == {s}
    r = env.join(s, instance=INSTANCE).result
    assert (r.error, r.generation) == (E.NONE, 2)


def test_heartbeat_with_unregistered_group_instance_id_is_unknown_member() -> None:
    """KAFKA DEVIATION (validateCurrentMember): a group instance id the group does not know
    is UNKNOWN_MEMBER_ID, even with a valid (dynamic) member id."""
    env = Env(auto=E.NONE)
    _, d = env.stable_group([INSTANCE, None])
    assert env.heartbeat(d, 1, instance="ghost") == E.UNKNOWN_MEMBER_ID


# --- 7. SyncGroup errors -------------------------------------------------------------------


def test_sync_with_wrong_generation_is_illegal_generation() -> None:
    env = Env(auto=E.NONE)
    a, _ = env.stable_group()
    assert env.sync(a, 2).result.error == E.ILLEGAL_GENERATION
    assert env.sync(a, 0).result.error == E.ILLEGAL_GENERATION


def test_sync_from_unknown_member_or_group_is_unknown_member_id() -> None:
    env = Env(auto=E.NONE)
    env.stable_group()
    assert env.sync("nobody", 1).result.error == E.UNKNOWN_MEMBER_ID
    assert env.sync("nobody", 1, group="unknown").result.error == E.UNKNOWN_MEMBER_ID


def test_sync_during_preparing_rebalance_is_rebalance_in_progress() -> None:
    env = Env(auto=E.NONE)
    a, b = env.stable_group()
    env.join(a)
    assert env.state() is S.PREPARING_REBALANCE
    assert env.sync(b, 1).result.error == E.REBALANCE_IN_PROGRESS


def test_sync_with_inconsistent_protocol_type_or_name() -> None:
    """Kafka's testSyncGroupReturnsAnErrorWhenProtocol{Type,Name}IsInconsistent."""
    env = Env(auto=E.NONE)
    a, _ = env.stable_group()
    assert env.sync(a, 1, protocol_type="connect").result.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert env.sync(a, 1, protocol_name="sticky").result.error == E.INCONSISTENT_GROUP_PROTOCOL
    r = env.sync(a, 1, protocol_type="consumer", protocol_name="range").result
    assert r.error == E.NONE


def test_failed_group_store_fails_the_sync_and_rebalances_again() -> None:
    """The leader's group metadata append fails (NOT_LEADER_OR_FOLLOWER): every waiting
    member gets NOT_COORDINATOR, assignments are dropped, and the group goes back to
    PreparingRebalance."""
    env = Env()
    a = env.new_member_id()
    b = env.new_member_id()
    env.join(a)
    env.join(b)
    sb = env.sync(b, 1)
    sa = env.sync(a, 1, {a: b"A", b: b"B"})
    env.store.complete(env.store.pending()[0], E.NOT_LEADER_OR_FOLLOWER)
    assert sa.result == SyncResult(E.NOT_COORDINATOR)
    assert sb.result == SyncResult(E.NOT_COORDINATOR)
    assert env.state() is S.PREPARING_REBALANCE
    assert all(m.assignment == b"" for m in env.group().members.values())
    assert env.core.describe_group(GROUP).members[0].assignment == b""
    ja, jb = env.join(a), env.join(b)
    assert ja.result.generation == jb.result.generation == 2


@pytest.mark.parametrize(
    ("append_error", "member_error"),
    [
        (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE),
        (E.UNKNOWN_TOPIC_OR_PARTITION, E.COORDINATOR_NOT_AVAILABLE),
        (E.KAFKA_STORAGE_ERROR, E.NOT_COORDINATOR),
        (E.MESSAGE_TOO_LARGE, E.UNKNOWN_SERVER_ERROR),
        (E.RECORD_LIST_TOO_LARGE, E.UNKNOWN_SERVER_ERROR),
    ],
)
def test_group_store_errors_map_as_kafka_maps_them(
    append_error: ErrorCode, member_error: ErrorCode
) -> None:
    """GroupMetadataManager.storeGroup's mapping of append errors to SyncGroup errors."""
    env = Env()
    a = env.new_member_id()
    env.join(a)
    sa = env.sync(a, 1, {a: b"A"})
    env.store.complete(env.store.pending()[0], append_error)
    assert sa.result.error == member_error


def test_waiting_sync_is_told_rebalance_in_progress_when_a_member_joins() -> None:
    """A new member joining during CompletingRebalance voids the assignment being made:
    the follower waiting in SyncGroup is answered REBALANCE_IN_PROGRESS."""
    env = Env()
    a = env.new_member_id()
    b = env.new_member_id()
    env.join(a)
    env.join(b)
    sb = env.sync(b, 1)
    env.join(env.new_member_id())
    assert sb.result.error == E.REBALANCE_IN_PROGRESS
    assert env.state() is S.PREPARING_REBALANCE


def test_store_completing_after_a_new_rebalance_began_is_ignored() -> None:
    """The leader's append completing once the group moved on does not make it Stable."""
    env = Env()
    a = env.new_member_id()
    b = env.new_member_id()
    env.join(a)
    env.join(b)
    sa = env.sync(a, 1, {a: b"A", b: b"B"})
    env.leave((b, None))
    assert sa.result.error == E.REBALANCE_IN_PROGRESS
    env.store.complete_all()
    assert env.state() is S.PREPARING_REBALANCE
    assert len(sa.results) == 1


# --- 8. OffsetCommit and OffsetFetch -------------------------------------------------------


def test_simple_commit_creates_empty_group_and_is_visible_once_stored() -> None:
    """A commit with generation -1 and no member id on an unknown group creates an Empty
    group; the offset is fetched (offset, metadata, leader epoch) only once the append
    completes, and the append is an offset commit record."""
    env = Env()
    value = env.offset(42, "meta", epoch=7)
    cap = env.commit({TP0: value})
    assert env.state() is S.EMPTY
    assert env.group().protocol_type is None
    assert not cap.called
    assert env.fetch([TP0]) == {TP0: None}
    [append] = env.store.pending()
    assert append.partition == env.core.partition_for(GROUP)
    assert offset_records([append]) == [(OffsetCommitKey(GROUP, "t1", 0), value)]
    env.store.complete(append)
    assert cap.result == {TP0: E.NONE}
    fetched = env.fetch([TP0, TP1])
    assert fetched[TP1] is None
    got = fetched[TP0]
    assert got is not None
    assert (got.offset, got.metadata, got.leader_epoch) == (42, "meta", 7)
    assert env.fetch() == {TP0: value}


def test_commit_with_generation_on_unknown_group_is_illegal_generation() -> None:
    env = Env()
    assert env.commit({TP0: env.offset(1)}, "m", 1).result == {TP0: E.ILLEGAL_GENERATION}
    assert env.commit({TP0: env.offset(1)}, "", 0).result == {TP0: E.ILLEGAL_GENERATION}
    assert GROUP not in env.core.groups
    assert env.store.appends == []


def test_member_of_stable_group_commits_with_its_generation() -> None:
    env = Env(auto=E.NONE)
    a, _ = env.stable_group()
    assert env.commit({TP0: env.offset(5)}, a, 1).result == {TP0: E.NONE}
    assert env.fetch([TP0])[TP0] == env.offset(5)


def test_member_commit_errors() -> None:
    """Wrong generation → ILLEGAL_GENERATION; not a member → UNKNOWN_MEMBER_ID; a simple
    commit (no member, -1) on a group with members → UNKNOWN_MEMBER_ID."""
    env = Env(auto=E.NONE)
    a, _ = env.stable_group()
    assert env.commit({TP0: env.offset(5)}, a, 2).result == {TP0: E.ILLEGAL_GENERATION}
    assert env.commit({TP0: env.offset(5)}, "x", 1).result == {TP0: E.UNKNOWN_MEMBER_ID}
    assert env.commit({TP0: env.offset(5)}).result == {TP0: E.UNKNOWN_MEMBER_ID}
    assert env.fetch([TP0]) == {TP0: None}


def test_commit_during_completing_rebalance_is_rebalance_in_progress() -> None:
    """Kafka's testCommitOffsetInCompletingRebalance."""
    env = Env(auto=E.NONE)
    a = env.new_member_id()
    r = env.join(a).result
    assert env.state() is S.COMPLETING_REBALANCE
    assert env.commit({TP0: env.offset(5)}, a, r.generation).result == {
        TP0: E.REBALANCE_IN_PROGRESS
    }


def test_commit_during_completing_rebalance_from_unknown_member_is_unknown_member_id() -> None:
    """KAFKA DEVIATION (testCommitOffsetInCompletingRebalanceFromUnknownMemberId): Kafka
    validates the member before the state; here REBALANCE_IN_PROGRESS comes first."""
    env = Env(auto=E.NONE)
    r = env.join(env.new_member_id()).result
    assert env.commit({TP0: env.offset(5)}, "", r.generation).result == {TP0: E.UNKNOWN_MEMBER_ID}


def test_commit_during_completing_rebalance_with_wrong_generation_is_illegal() -> None:
    """KAFKA DEVIATION (testCommitOffsetInCompletingRebalanceFromIllegalGeneration)."""
    env = Env(auto=E.NONE)
    a = env.new_member_id()
    r = env.join(a).result
    assert env.commit({TP0: env.offset(5)}, a, r.generation + 1).result == {
        TP0: E.ILLEGAL_GENERATION
    }


def test_commit_during_preparing_rebalance_is_accepted() -> None:
    """Kafka accepts a member's commit while PreparingRebalance (the heartbeat tells it)."""
    env = Env(auto=E.NONE)
    a, b = env.stable_group()
    env.join(a)
    assert env.commit({TP0: env.offset(9)}, b, 1).result == {TP0: E.NONE}


def test_metadata_larger_than_the_limit_is_refused_and_not_stored() -> None:
    """offset.metadata.max.bytes: that partition gets OFFSET_METADATA_TOO_LARGE and is not
    appended; the others in the request are committed."""
    env = Env(offset_metadata_max_bytes=10)
    cap = env.commit({TP0: env.offset(1, "x" * 11), TP1: env.offset(2, "x" * 10)})
    [append] = env.store.pending()
    assert [k for k, _ in offset_records([append])] == [OffsetCommitKey(GROUP, "t1", 1)]
    env.store.complete(append)
    assert cap.result == {TP0: E.OFFSET_METADATA_TOO_LARGE, TP1: E.NONE}
    assert env.fetch([TP0])[TP0] is None
    only_big = env.commit({TP0: env.offset(1, "y" * 11)})
    assert only_big.result == {TP0: E.OFFSET_METADATA_TOO_LARGE}
    assert len(env.store.appends) == 1


def test_failed_commit_append_is_not_fetched() -> None:
    """NOT_ENOUGH_REPLICAS → COORDINATOR_NOT_AVAILABLE, and the offset is not there."""
    env = Env()
    env.commit({TP0: env.offset(1)})
    env.store.complete_all()
    cap = env.commit({TP0: env.offset(2)})
    env.store.complete(env.store.pending()[0], E.NOT_ENOUGH_REPLICAS)
    assert cap.result == {TP0: E.COORDINATOR_NOT_AVAILABLE}
    got = env.fetch([TP0])[TP0]
    assert got is not None and got.offset == 1


@pytest.mark.parametrize(
    ("append_error", "commit_error"),
    [
        (E.MESSAGE_TOO_LARGE, E.INVALID_COMMIT_OFFSET_SIZE),
        (E.RECORD_LIST_TOO_LARGE, E.INVALID_COMMIT_OFFSET_SIZE),
        (E.INVALID_FETCH_SIZE, E.INVALID_COMMIT_OFFSET_SIZE),
        (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
        (E.UNKNOWN_TOPIC_OR_PARTITION, E.COORDINATOR_NOT_AVAILABLE),
    ],
)
def test_commit_append_errors_map_as_kafka_maps_them(
    append_error: ErrorCode, commit_error: ErrorCode
) -> None:
    env = Env()
    cap = env.commit({TP0: env.offset(1)})
    env.store.complete(env.store.pending()[0], append_error)
    assert cap.result == {TP0: commit_error}
    assert env.fetch([TP0])[TP0] is None


def test_commit_after_the_group_became_empty_is_a_simple_commit() -> None:
    """Kafka's testCommitOffsetsAfterGroupIsEmpty (the reset-offsets tool)."""
    env = Env(auto=E.NONE)
    [a] = env.stable_group([None])
    env.leave((a, None))
    env.advance(0)
    assert env.commit({TP0: env.offset(0)}).result == {TP0: E.NONE}
    got = env.fetch([TP0])[TP0]
    assert got is not None and got.offset == 0


# --- 9. Coordinator ownership ------------------------------------------------------------


def test_requests_while_loading_get_coordinator_load_in_progress() -> None:
    env = Env()
    p = env.core.partition_for(GROUP)
    env.core.begin_loading(p, 3)
    err = E.COORDINATOR_LOAD_IN_PROGRESS
    assert env.join().result.error == err
    assert env.sync("m", 1).result.error == err
    assert env.heartbeat("m", 1) == err
    assert env.leave(("m", None)) == (err, [err])
    assert env.commit({TP0: env.offset(1)}).result == {TP0: err}
    assert env.core.fetch_offsets(GROUP, None) == (err, {})
    assert env.core.describe_group(GROUP).error == err
    assert env.delete_groups(GROUP).result == {GROUP: err}
    assert env.delete_offsets(TP0).result == (err, {})
    assert env.core.list_groups()[0] == err


def test_requests_for_a_partition_not_owned_get_not_coordinator() -> None:
    env = Env()
    env.core.owned = {}
    assert env.join().result.error == E.NOT_COORDINATOR
    assert env.heartbeat("m", 1) == E.NOT_COORDINATOR
    assert env.commit({TP0: env.offset(1)}).result == {TP0: E.NOT_COORDINATOR}
    assert env.core.describe_group(GROUP).error == E.NOT_COORDINATOR
    assert GROUP not in env.core.groups


def test_unload_answers_waiting_joins_and_syncs_and_forgets_the_groups() -> None:
    """Losing leadership of the offsets partition: members waiting in JoinGroup or SyncGroup
    are answered NOT_COORDINATOR, the partition's groups and their timers are gone, other
    partitions' groups stay."""
    env = Env()
    p = env.core.partition_for(GROUP)
    other = next(f"g{i}" for i in range(100) if env.core.partition_for(f"g{i}") != p)
    env.commit({TP0: env.offset(1)}, group=other)
    env.store.complete_all()
    a = env.new_member_id()
    b = env.new_member_id()
    ja = env.join(a)
    env.new_member_id()  # keeps the join waiting
    jb = env.join(b)
    assert not ja.called and not jb.called
    env.core.unload_partition(p)
    assert ja.result.error == jb.result.error == E.NOT_COORDINATOR
    assert GROUP not in env.core.groups
    assert other in env.core.groups
    assert len(env.core.timers) == 0
    assert env.heartbeat(a, 0) == E.NOT_COORDINATOR
    env.advance(10 * REBALANCE)
    assert len(ja.results) == len(jb.results) == 1


def test_unload_answers_a_waiting_sync() -> None:
    env = Env()
    a = env.new_member_id()
    b = env.new_member_id()
    env.join(a)
    env.join(b)
    sb = env.sync(b, 1)
    env.core.unload_partition(env.core.partition_for(GROUP))
    assert sb.result.error == E.NOT_COORDINATOR


def test_finish_loading_with_a_stale_epoch_is_refused() -> None:
    """A load overtaken by a newer leadership (or an unload) is stale: False, and the
    partition stays loading (or not owned)."""
    env = Env()
    env.core.owned = {}
    assert env.core.finish_loading(0, 1, []) is False
    env.core.begin_loading(0, 1)
    env.core.begin_loading(0, 2)
    assert env.core.finish_loading(0, 1, []) is False
    assert env.core.loading == {0: 2}
    assert env.core.finish_loading(0, 2, []) is True
    assert env.core.owned == {0: 2}
    assert env.core.loading == {}
    env.core.begin_loading(1, 5)
    env.core.unload_partition(1)
    assert env.core.finish_loading(1, 5, []) is False
    assert 1 not in env.core.owned


def test_begin_loading_an_owned_partition_drops_its_groups() -> None:
    env = Env(auto=E.NONE)
    env.stable_group()
    p = env.core.partition_for(GROUP)
    env.core.begin_loading(p, 1)
    assert GROUP not in env.core.groups
    assert env.core.coordinator_error(GROUP) == E.COORDINATOR_LOAD_IN_PROGRESS


def test_shutdown_makes_the_coordinator_unavailable() -> None:
    env = Env()
    a = env.new_member_id()
    env.new_member_id()
    ja = env.join(a)
    env.core.shutdown()
    assert ja.result.error == E.NOT_COORDINATOR
    assert env.join().result.error == E.COORDINATOR_NOT_AVAILABLE
    assert env.core.list_groups() == (E.COORDINATOR_NOT_AVAILABLE, [])


# --- 10. Loading from records --------------------------------------------------------------


def offset_record(group: str, tp: TopicPartition, value: OffsetCommitValue | None) -> Record:
    key = encode_offset_commit_key(OffsetCommitKey(group, tp.topic, tp.partition))
    return key, None if value is None else encode_offset_commit_value(value)


def group_record(group: str, value: GroupMetadataValue | None) -> Record:
    key = encode_group_metadata_key(GroupMetadataKey(group))
    return key, None if value is None else encode_group_metadata_value(value)


def member_value(
    member_id: str,
    assignment: bytes,
    *,
    instance: str | None = None,
    session: int = SESSION,
    rebalance: int = REBALANCE,
    sub: bytes = SUB_T1,
) -> MemberMetadataValue:
    return MemberMetadataValue(
        member_id, instance, "client", "/10.0.0.1", rebalance, session, sub, assignment
    )


def load(env: Env, records: list[Record], group: str = GROUP) -> None:
    p = env.core.partition_for(group)
    env.core.begin_loading(p, 7)
    assert env.core.finish_loading(p, 7, records) is True


def test_load_rebuilds_groups_offsets_and_state() -> None:
    """Records in offset order: the latest per key wins, tombstones remove (an offset; a
    whole group: its metadata and offsets); a group with members loads Stable with its
    generation, protocol, leader, members (static ones mapped) and assignments; one with
    only offsets loads Empty; a group stored empty loads Empty; a corrupt record is
    skipped."""
    env = Env()
    env.core.owned = {}
    now = env.clock.now_ms()
    v1 = OffsetCommitValue(1, -1, "a", now - 10)
    v2 = OffsetCommitValue(2, 4, "b", now - 5)
    meta_old = GroupMetadataValue("consumer", 4, "range", "m1", now - 100, ())
    meta = GroupMetadataValue(
        "consumer",
        5,
        "range",
        "m1",
        now - 50,
        (member_value("m1", b"A1"), member_value("m2", b"A2", instance="i2", sub=SUB_T2)),
    )
    records = [
        offset_record(GROUP, TP0, v1),
        group_record(GROUP, meta_old),
        offset_record(GROUP, TP1, v1),
        offset_record(GROUP, TP0, v2),  # the latest for TP0
        offset_record(GROUP, TP1, None),  # TP1 deleted
        group_record(GROUP, meta),
        (b"\x00\x01garbage", b"\x00\x03"),  # skipped
        offset_record("gone", TP0, v1),
        group_record("gone", GroupMetadataValue("consumer", 1, None, None, now, ())),
        offset_record("gone", TP0, None),
        group_record("gone", None),
        offset_record("offsets-only", TP0, v1),
        group_record("emptied", GroupMetadataValue("consumer", 3, None, None, now - 20, ())),
    ]
    p = env.core.partition_for(GROUP)
    env.core.begin_loading(p, 7)
    assert env.core.finish_loading(p, 7, records) is True
    assert "gone" not in env.core.groups
    group = env.core.groups[GROUP]
    assert group.is_(S.STABLE)
    assert (group.generation, group.protocol_type, group.protocol_name, group.leader_id) == (
        5,
        "consumer",
        "range",
        "m1",
    )
    assert {m.member_id: m.assignment for m in group.members.values()} == {
        "m1": b"A1",
        "m2": b"A2",
    }
    assert group.static_members == {"i2": "m2"}
    assert group.offsets == {TP0: v2}
    assert group.partition == p
    only = env.core.groups["offsets-only"]
    assert only.is_(S.EMPTY) and only.protocol_type is None and only.offsets == {TP0: v1}
    emptied = env.core.groups["emptied"]
    assert emptied.is_(S.EMPTY) and emptied.generation == 3 and emptied.offsets == {}
    assert emptied.state_timestamp_ms == now - 20
    # the loaded group serves its members
    assert env.heartbeat("m1", 5) == E.NONE
    assert env.sync("m2", 5, instance="i2").result.assignment == b"A2"
    assert env.heartbeat("m2", 5, instance="i2") == E.NONE
    d = env.core.describe_group(GROUP)
    assert (d.state, d.protocol) == ("Stable", "range")


def test_loaded_members_expire_after_their_session_timeout() -> None:
    """Loaded members have a session from the load: those that do not heartbeat expire
    after their session timeout and the group rebalances; if none remain it is Empty."""
    env = Env(auto=E.NONE)
    env.core.owned = {}
    meta = GroupMetadataValue(
        "consumer",
        5,
        "range",
        "m1",
        env.clock.now_ms(),
        (member_value("m1", b"A1"), member_value("m2", b"A2", session=20_000)),
    )
    load(env, [group_record(GROUP, meta)])
    env.advance(SESSION - 1)
    assert set(env.group().members) == {"m1", "m2"}
    assert env.heartbeat("m2", 5) == E.NONE
    env.advance(1)
    assert set(env.group().members) == {"m2"}
    assert env.state() is S.PREPARING_REBALANCE
    env.advance(20_000)
    assert env.group().members == {}
    assert env.state() is S.EMPTY
    assert env.group().generation == 6


def test_round_trip_through_the_log() -> None:
    """A real join/sync/commit (and a static member's restart) recorded by the store,
    loaded into a fresh coordinator: same generation, protocol, leader, members with their
    assignments and instance ids, and offsets."""
    env = Env(auto=E.NONE)
    s, d = env.stable_group([INSTANCE, None])
    assert env.commit({TP0: env.offset(10, "m0", epoch=3)}, d, 1).result == {TP0: E.NONE}
    assert env.commit({TP1: env.offset(11)}, s, 1, instance=INSTANCE).result == {TP1: E.NONE}
    s2 = env.join(instance=INSTANCE).result.member_id
    assert env.commit({TP1: env.offset(12)}, s2, 1, instance=INSTANCE).result == {TP1: E.NONE}
    original = env.group()

    fresh = Env()
    fresh.core.owned = {}
    p = env.core.partition_for(GROUP)
    fresh.core.begin_loading(p, 1)
    assert fresh.core.finish_loading(p, 1, env.store.records(p)) is True
    loaded = fresh.group()
    assert loaded.is_(S.STABLE)
    assert loaded.generation == original.generation == 1
    assert loaded.leader_id == original.leader_id == s2
    assert (loaded.protocol_type, loaded.protocol_name) == ("consumer", "range")
    assert {m.member_id: (m.assignment, m.group_instance_id) for m in loaded.members.values()} == {
        s2: (assignment_of(s), INSTANCE),
        d: (assignment_of(d), None),
    }
    assert loaded.offsets == original.offsets
    assert fresh.fetch() == env.fetch()
    assert fresh.heartbeat(d, 1) == E.NONE
    assert fresh.heartbeat(s, 1, instance=INSTANCE) == E.FENCED_INSTANCE_ID


# --- 11. DeleteGroups, OffsetDelete, ListGroups, DescribeGroups -------------------------


def test_delete_empty_group_writes_tombstones_for_offsets_and_group() -> None:
    """DeleteGroups of an Empty group: tombstones for each offset and the group key (one
    append on its partition), answered once appended; the group and its offsets are gone."""
    env = Env()
    env.commit({TP0: env.offset(1), TP1: env.offset(2)})
    env.store.complete_all()
    cap = env.delete_groups(GROUP)
    assert GROUP not in env.core.groups
    [append] = env.store.pending()
    assert append.partition == env.core.partition_for(GROUP)
    assert sorted(append.records) == sorted(
        [
            offset_record(GROUP, TP0, None),
            offset_record(GROUP, TP1, None),
            group_record(GROUP, None),
        ]
    )
    assert not cap.called
    env.store.complete(append)
    assert cap.result == {GROUP: E.NONE}
    assert env.fetch() == {}
    assert env.core.describe_group(GROUP).state == "Dead"


def test_delete_groups_errors() -> None:
    """Not Empty → NON_EMPTY_GROUP; unknown → GROUP_ID_NOT_FOUND; per group."""
    env = Env(auto=E.NONE)
    env.stable_group()
    env.commit({TP0: env.offset(1)}, group="empty")
    assert env.delete_groups(GROUP, "unknown", "empty").result == {
        GROUP: E.NON_EMPTY_GROUP,
        "unknown": E.GROUP_ID_NOT_FOUND,
        "empty": E.NONE,
    }
    assert env.state() is S.STABLE


def test_delete_group_with_failed_append_reports_the_error() -> None:
    env = Env()
    env.commit({TP0: env.offset(1)})
    env.store.complete_all()
    cap = env.delete_groups(GROUP)
    env.store.complete(env.store.pending()[0], E.NOT_LEADER_OR_FOLLOWER)
    assert cap.result == {GROUP: E.NOT_COORDINATOR}


def test_offset_delete_refuses_subscribed_topics_of_a_stable_consumer_group() -> None:
    """Kafka's testDeleteOffsetOfStableConsumerGroup: a partition of a topic a member
    subscribes to (read from the consumer-protocol subscription) → GROUP_SUBSCRIBED_TO_TOPIC
    and kept; another → NONE, tombstoned and gone."""
    env = Env(auto=E.NONE)
    a, _ = env.stable_group(protocols=[("range", subscription("t1", "t3"))])
    env.commit({TP0: env.offset(1), TP_OTHER: env.offset(2)}, a, 1)
    before = len(env.store.appends)
    cap = env.delete_offsets(TP0, TP_OTHER)
    assert cap.result == (E.NONE, {TP0: E.GROUP_SUBSCRIBED_TO_TOPIC, TP_OTHER: E.NONE})
    assert offset_records(env.store.appends[before:]) == [(OffsetCommitKey(GROUP, "t2", 0), None)]
    assert env.fetch([TP0, TP_OTHER]) == {TP0: env.offset(1), TP_OTHER: None}


def test_offset_delete_other_cases() -> None:
    """Unknown group → GROUP_ID_NOT_FOUND; Empty group → any partition; a non-consumer
    group with members → NON_EMPTY_GROUP."""
    env = Env(auto=E.NONE)
    assert env.delete_offsets(TP0, group="unknown").result == (E.GROUP_ID_NOT_FOUND, {})
    env.commit({TP0: env.offset(1)}, group="simple")
    assert env.delete_offsets(TP0, TP1, group="simple").result == (
        E.NONE,
        {TP0: E.NONE, TP1: E.NONE},
    )
    assert env.fetch(group="simple") == {}
    env.stable_group(group="connect", protocols=[("default", b"\x01")], protocol_type="connect")
    assert env.delete_offsets(TP0, group="connect").result == (E.NON_EMPTY_GROUP, {})


def test_offset_delete_while_a_commit_is_in_flight_agrees_with_the_log() -> None:
    """BUG (KAFKA DEVIATION: GroupMetadata.removeOffsets drops the pending commit): an
    OffsetDelete of a partition whose commit is still being appended writes a tombstone
    after that commit; when the commit then completes it must not bring the offset back in
    memory, or OffsetFetch shows an offset the log (and any coordinator loading it) does
    not have."""
    env = Env()
    env.commit({TP0: env.offset(1)})
    env.store.complete_all()
    commit = env.commit({TP0: env.offset(2)})
    delete = env.delete_offsets(TP0)
    env.store.complete_all()  # the commit, then the tombstone, in log order
    assert commit.result == {TP0: E.NONE}
    assert delete.result == (E.NONE, {TP0: E.NONE})
    reloaded = Env()
    load(reloaded, env.store.records(env.core.partition_for(GROUP)))
    assert reloaded.fetch([TP0]) == {TP0: None}
    assert env.fetch([TP0]) == {TP0: None}


def test_offset_delete_with_unparsable_subscription() -> None:
    """Kafka's testDeleteOffsetOfConsumerGroupWithUnparsableProtocol: subscriptions that
    cannot be read count as subscribed to every topic (GROUP_SUBSCRIBED_TO_TOPIC)."""
    env = Env(auto=E.NONE)
    a, _ = env.stable_group(protocols=[("range", b"\x00")])
    env.commit({TP0: env.offset(1)}, a, 1)
    assert env.delete_offsets(TP0).result == (E.NONE, {TP0: E.GROUP_SUBSCRIBED_TO_TOPIC})


def test_list_groups_with_state_filter() -> None:
    env = Env(auto=E.NONE)
    env.stable_group()
    env.commit({TP0: env.offset(1)}, group="simple")
    err, groups = env.core.list_groups()
    assert err == E.NONE
    assert [(g.group_id, g.protocol_type, g.state) for g in groups] == [
        (GROUP, "consumer", S.STABLE),
        ("simple", "", S.EMPTY),
    ]
    assert [g.group_id for g in env.core.list_groups({"Empty"})[1]] == ["simple"]
    assert [g.group_id for g in env.core.list_groups({"Stable"})[1]] == [GROUP]
    assert [g.group_id for g in env.core.list_groups(types={"classic"})[1]] == [GROUP, "simple"]
    assert env.core.list_groups(types={"consumer"})[1] == []


def test_describe_stable_and_rebalancing_groups() -> None:
    """A Stable group shows its protocol and each member's metadata and assignment; a
    rebalancing one neither (Kafka's summaryNoMetadata); an unknown one is Dead."""
    env = Env(auto=E.NONE)
    s, d = env.stable_group([INSTANCE, None])
    desc = env.core.describe_group(GROUP)
    assert (desc.error, desc.state, desc.protocol_type, desc.protocol) == (
        E.NONE,
        "Stable",
        "consumer",
        "range",
    )
    members = {m.member_id: m for m in desc.members}
    assert set(members) == {s, d}
    assert members[s].group_instance_id == INSTANCE
    assert (members[d].metadata, members[d].assignment) == (SUB_T1, assignment_of(d))
    assert members[d].client_id == "client" and members[d].client_host == "/10.0.0.1"
    env.join(s, instance=INSTANCE)
    desc = env.core.describe_group(GROUP)
    assert (desc.state, desc.protocol) == ("PreparingRebalance", "")
    assert all(m.metadata == b"" and m.assignment == b"" for m in desc.members)
    assert env.core.describe_group("unknown") == GroupDescription(
        E.NONE, "unknown", "Dead", "", "", ()
    )


# --- 12. Offset expiration ------------------------------------------------------------------


def test_empty_group_offsets_expire_retention_after_it_became_empty() -> None:
    """KIP-211: a consumer group's offsets expire offsets.retention after the group became
    Empty (not after their commit, not a millisecond before); then the group is removed,
    its offsets and metadata tombstoned."""
    env = Env(auto=E.NONE, offsets_retention_ms=100_000)
    [a] = env.stable_group([None])
    committed_at = env.clock.now_ms()
    env.commit({TP0: env.offset(1), TP1: env.offset(2)}, a, 1)
    env.advance(SESSION)  # a's session expires: the group is Empty from now
    assert env.state() is S.EMPTY
    became_empty = env.clock.now_ms()
    assert env.group().state_timestamp_ms == became_empty
    env.clock.advance(committed_at + 100_000 - env.clock.now_ms())
    assert env.core.expire_offsets() == 0, "retention counts from the group's emptying"
    env.clock.advance(became_empty + 100_000 - env.clock.now_ms() - 1)
    assert env.core.expire_offsets() == 0
    assert GROUP in env.core.groups
    before = len(env.store.appends)
    env.clock.advance(1)
    assert env.core.expire_offsets() == 2
    assert GROUP not in env.core.groups
    records = sorted(r for a_ in env.store.appends[before:] for r in a_.records)
    assert records == sorted(
        [
            offset_record(GROUP, TP0, None),
            offset_record(GROUP, TP1, None),
            group_record(GROUP, None),
        ]
    )
    assert env.fetch() == {}


def test_simple_group_offsets_expire_retention_after_their_commit() -> None:
    """A group without group management: each offset retention after its own commit."""
    env = Env(auto=E.NONE, offsets_retention_ms=100_000)
    env.commit({TP0: env.offset(1)})
    env.clock.advance(50_000)
    env.commit({TP1: env.offset(2)})
    env.clock.advance(49_999)
    assert env.core.expire_offsets() == 0
    env.clock.advance(1)
    assert env.core.expire_offsets() == 1
    assert set(env.group().offsets) == {TP1}
    env.clock.advance(50_000)
    assert env.core.expire_offsets() == 1
    assert GROUP not in env.core.groups


def test_commit_with_explicit_expire_timestamp_expires_at_it() -> None:
    """An offset committed with an expire timestamp (OffsetCommit v1-v4 retention) expires
    at that timestamp, before the retention, and not a millisecond earlier."""
    env = Env(auto=E.NONE, offsets_retention_ms=1_000_000)
    expire_at = env.clock.now_ms() + 5_000
    env.commit({TP0: env.offset(1, expire=expire_at), TP1: env.offset(2)})
    [(_, stored_value), _] = sorted(
        offset_records(env.store.appends), key=lambda kv: kv[0].partition
    )
    assert stored_value is not None and stored_value.expire_timestamp == expire_at
    env.clock.advance(4_999)
    assert env.core.expire_offsets() == 0
    env.clock.advance(1)
    assert env.core.expire_offsets() == 1
    assert set(env.group().offsets) == {TP1}


def test_stable_consumer_group_keeps_offsets_of_subscribed_topics() -> None:
    """A Stable consumer group's offsets expire only for topics no member subscribes to,
    retention after their commit."""
    env = Env(auto=E.NONE, offsets_retention_ms=100_000)
    [a] = env.stable_group([None], session=300_000)
    env.commit({TP0: env.offset(1), TP_OTHER: env.offset(2)}, a, 1)
    env.clock.advance(100_000)
    assert env.heartbeat(a, 1) == E.NONE
    assert env.core.expire_offsets() == 1
    assert set(env.group().offsets) == {TP0}
    assert env.state() is S.STABLE


def test_pending_commit_keeps_group_from_expiring() -> None:
    """An offset whose commit is in flight is not expired, nor its group removed."""
    env = Env(offsets_retention_ms=100_000)
    env.commit({TP0: env.offset(1)})
    env.store.complete_all()
    env.clock.advance(100_000)
    cap = env.commit({TP0: env.offset(2)})
    assert env.core.expire_offsets() == 0
    assert GROUP in env.core.groups
    env.store.complete_all()
    assert cap.result == {TP0: E.NONE}
    assert env.fetch([TP0])[TP0] == env.offset(2)


# --- 13. A stateful model ----------------------------------------------------------------

MACHINE_SESSION = 10_000
MACHINE_REBALANCE = 15_000
INSTANCES = ("static-0", "static-1")
METADATA = (SUB_T1, SUB_T2)


@dataclass(eq=False)
class Client:
    """A consumer's view of its membership, as a real client would keep it."""

    instance: str | None
    member_id: str = ""
    generation: int = -1
    is_leader: bool = False
    skip_assignment: bool = False
    members: tuple[JoinMember, ...] = ()
    metadata: bytes = SUB_T1
    synced: int = -1  # the generation it last got an assignment for
    join: Capture[JoinResult] | None = None
    sync: Capture[SyncResult] | None = None
    alive: bool = True

    @property
    def busy(self) -> bool:
        return self.join is not None or self.sync is not None


class GroupMachine(RuleBasedStateMachine):
    """Random members joining, rejoining, syncing, heartbeating, leaving, static members
    restarting, time passing and appends completing (or failing) in any order, with the
    group's invariants checked after every step."""

    def __init__(self) -> None:
        super().__init__()
        self.env = Env()
        self.clients: list[Client] = []
        self.joins: list[Capture[JoinResult]] = []
        self.syncs: list[Capture[SyncResult]] = []
        # generation -> member id -> what the leader assigned (and by instance id, since a
        # static member's id changes when it restarts without a rebalance)
        self.assigned: dict[int, dict[str, bytes]] = {}
        self.assigned_static: dict[int, dict[str, bytes]] = {}
        self.generation = 0

    @initialize(delay=st.sampled_from([0, 3000]))
    def configure(self, delay: int) -> None:
        self.env = Env(delay=delay, new_member_join_timeout_ms=60_000)

    # helpers

    def live(self) -> list[Client]:
        return [c for c in self.clients if c.alive]

    def pick(self, i: int) -> Client:
        live = self.live()
        return live[i % len(live)]

    def send_join(self, client: Client) -> None:
        cap: Capture[JoinResult] = Capture()
        client.join = cap
        self.joins.append(cap)
        self.env.core.join_group(
            JoinRequest(
                GROUP,
                client.member_id,
                client.instance,
                True,
                "client",
                "/10.0.0.1",
                MACHINE_REBALANCE,
                MACHINE_SESSION,
                "consumer",
                [("range", client.metadata)],
            ),
            cap,
        )

    def expected_assignment(self, generation: int, member_id: str, instance: str | None) -> bytes:
        if instance is not None and instance in self.assigned_static.get(generation, {}):
            return self.assigned_static[generation][instance]
        return self.assigned.get(generation, {}).get(member_id, b"")

    def absorb(self) -> None:
        """Clients read the answers that arrived."""
        for c in self.clients:
            if c.join is not None and c.join.called:
                r = c.join.results[0]
                c.join = None
                if r.error == E.NONE:
                    c.member_id, c.generation = r.member_id, r.generation
                    c.is_leader = r.leader == r.member_id
                    c.members, c.skip_assignment = r.members, r.skip_assignment
                elif r.error == E.MEMBER_ID_REQUIRED:
                    c.member_id = r.member_id
                elif r.error == E.UNKNOWN_MEMBER_ID:
                    c.member_id, c.generation = "", -1
                elif r.error == E.FENCED_INSTANCE_ID:
                    c.alive = False
                elif r.error == E.REBALANCE_IN_PROGRESS and r.member_id:
                    c.member_id = r.member_id
            if c.sync is not None and c.sync.called:
                r2 = c.sync.results[0]
                c.sync = None
                if r2.error == E.NONE:
                    c.synced = c.generation
                    assert r2.assignment == self.expected_assignment(
                        c.generation, c.member_id, c.instance
                    ), "a member got another assignment than its leader's"
                elif r2.error == E.UNKNOWN_MEMBER_ID:
                    c.member_id, c.generation = "", -1
                elif r2.error == E.FENCED_INSTANCE_ID:
                    c.alive = False

    # rules

    @rule(static=st.booleans(), which=st.integers(0, len(INSTANCES) - 1))
    def new_client(self, static: bool, which: int) -> None:
        """A new consumer process (a static one takes over its instance id)."""
        instance = INSTANCES[which] if static else None
        if instance is not None:
            for c in self.clients:
                if c.instance == instance:
                    c.alive = False
        client = Client(instance)
        self.clients.append(client)
        self.send_join(client)
        if instance is None:
            assert client.join is not None
            assert client.join.result.error == E.MEMBER_ID_REQUIRED
        self.absorb()

    @precondition(lambda self: any(not c.busy for c in self.live()))
    @rule(i=st.integers(0, 50), metadata=st.sampled_from(METADATA))
    def join(self, i: int, metadata: bytes) -> None:
        """A member (re)joins, maybe with changed metadata."""
        idle = [c for c in self.live() if not c.busy]
        client = idle[i % len(idle)]
        client.metadata = metadata
        self.send_join(client)
        self.absorb()

    @precondition(lambda self: any(not c.busy and c.generation >= 0 for c in self.live()))
    @rule(i=st.integers(0, 50))
    def sync(self, i: int) -> None:
        """A member that got a generation syncs; the leader assigns each member a distinct
        byte string."""
        ready = [c for c in self.live() if not c.busy and c.generation >= 0]
        self.send_sync(ready[i % len(ready)])
        self.absorb()

    def send_sync(self, client: Client) -> None:
        assignments: dict[str, bytes] = {}
        if client.is_leader and not client.skip_assignment:
            gen = client.generation
            assignments = {m.member_id: f"{gen}/{m.member_id}".encode() for m in client.members}
            if gen not in self.assigned:
                self.assigned[gen] = dict(assignments)
                self.assigned_static[gen] = {
                    m.group_instance_id: assignments[m.member_id]
                    for m in client.members
                    if m.group_instance_id is not None
                }
        cap: Capture[SyncResult] = Capture()
        client.sync = cap
        self.syncs.append(cap)
        self.env.core.sync_group(
            GROUP,
            client.generation,
            client.member_id,
            client.instance,
            "consumer",
            None,
            assignments,
            cap,
        )

    @precondition(lambda self: bool(self.live()))
    @rule(i=st.integers(0, 50))
    def heartbeat(self, i: int) -> None:
        client = self.pick(i)
        error = self.env.heartbeat(client.member_id, client.generation, instance=client.instance)
        if error == E.FENCED_INSTANCE_ID:
            client.alive = False
        elif error == E.UNKNOWN_MEMBER_ID and not client.busy:
            client.member_id, client.generation = "", -1

    @rule()
    def everyone_heartbeats(self) -> None:
        """Every live member heartbeats (they do, from a background thread)."""
        for i in range(len(self.live())):
            self.heartbeat(i)

    @rule()
    def everyone_cooperates(self) -> None:
        """Each idle member does what a consumer would do next: (re)join without a
        generation or when told to rebalance, sync once it has one; appends succeed."""
        for _ in range(3):
            for c in self.live():
                if c.busy:
                    continue
                group = self.env.core.groups.get(GROUP)
                rebalancing = group is not None and group.is_(S.PREPARING_REBALANCE)
                if c.generation < 0 or rebalancing:
                    self.send_join(c)
                elif c.synced != c.generation:
                    self.send_sync(c)
            self.env.store.complete_all()
            self.absorb()

    @precondition(lambda self: bool(self.live()))
    @rule(i=st.integers(0, 50), by_instance=st.booleans())
    def leave(self, i: int, by_instance: bool) -> None:
        """A consumer closes (a static one may be removed by its instance id alone)."""
        client = self.pick(i)
        member_id = "" if by_instance and client.instance else client.member_id
        self.env.leave((member_id, client.instance))
        client.alive = False
        self.absorb()

    @rule(ms=st.sampled_from([1, 500, 3000, 6000, 10_000, 20_000]))
    def advance(self, ms: int) -> None:
        self.env.advance(ms)
        self.absorb()

    @precondition(lambda self: bool(self.env.store.pending()))
    @rule(
        i=st.integers(0, 50),
        code=st.sampled_from(
            [E.NONE, E.NONE, E.NONE, E.NOT_ENOUGH_REPLICAS, E.NOT_LEADER_OR_FOLLOWER]
        ),
    )
    def complete_append(self, i: int, code: ErrorCode) -> None:
        pending = self.env.store.pending()
        self.env.store.complete(pending[i % len(pending)], code)
        self.absorb()

    @rule()
    def everyone_goes_quiet(self) -> None:
        """Appends complete and time passes with no heartbeat: every member expires, every
        waiting request is answered, no timer is left, the group is Empty."""
        for _ in range(10):
            self.env.store.complete_all()
            self.env.advance(10 * 60_000)
        self.env.store.complete_all()
        self.absorb()
        for group in self.env.core.groups.values():
            assert group.is_(S.EMPTY), group.state
            assert group.members == {}
            assert group.pending_members == set()
        assert all(cap.called for cap in self.joins), "a JoinGroup was never answered"
        assert all(cap.called for cap in self.syncs), "a SyncGroup was never answered"
        assert self.env.core.next_deadline() is None
        for c in self.clients:
            assert not c.busy

    # invariants

    @invariant()
    def callbacks_called_at_most_once(self) -> None:
        assert all(len(cap.results) <= 1 for cap in self.joins)
        assert all(len(cap.results) <= 1 for cap in self.syncs)

    @invariant()
    def group_is_consistent(self) -> None:
        group = self.env.core.groups.get(GROUP)
        if group is None:
            return
        assert not group.is_(S.DEAD)
        members = group.members
        assert group.leader_id is None or group.leader_id in members
        if members and group.state in (S.COMPLETING_REBALANCE, S.STABLE):
            assert group.leader_id is not None
        assert not (group.is_(S.EMPTY) and members), "an Empty group with members"
        assert group.pending_sync <= set(members)
        assert not (group.pending_members & set(members))
        for instance, member_id in group.static_members.items():
            assert members[member_id].group_instance_id == instance
        for m in members.values():
            if m.group_instance_id is not None:
                assert group.static_members[m.group_instance_id] == m.member_id
        if group.state is not S.PREPARING_REBALANCE:
            assert all(m.awaiting_join is None for m in members.values())
        if group.state is not S.COMPLETING_REBALANCE:
            assert all(m.awaiting_sync is None for m in members.values())
        if group.is_(S.STABLE):
            for m in members.values():
                assert m.assignment == self.expected_assignment(
                    group.generation, m.member_id, m.group_instance_id
                ), "a Stable member's assignment is not its leader's"
        assert group.generation >= self.generation, "the generation went back"
        self.generation = group.generation

    @invariant()
    def waiting_requests_belong_to_members(self) -> None:
        """A JoinGroup not answered yet waits as a member's awaiting join (or for an append:
        a static member's restart); a SyncGroup as a member's awaiting sync."""
        group = self.env.core.groups.get(GROUP)
        members = [] if group is None else list(group.members.values())
        for sync in self.syncs:
            if not sync.called:
                assert any(m.awaiting_sync is sync for m in members)
        if self.env.store.pending():
            return
        for join in self.joins:
            if not join.called:
                assert any(m.awaiting_join is join for m in members)


GroupMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestGroupMachine = GroupMachine.TestCase


def test_group_config_reads_the_brokers_group_and_offsets_settings() -> None:
    """Each group.* and offsets.* property reaches the coordinator, retention in ms."""
    config = BrokerConfig.from_properties(
        {
            "broker.id": "1",
            "offsets.topic.num.partitions": "7",
            "group.min.session.timeout.ms": "1000",
            "group.max.session.timeout.ms": "90000",
            "group.initial.rebalance.delay.ms": "0",
            "group.max.size": "5",
            "offset.metadata.max.bytes": "64",
            "offsets.retention.minutes": "3",
        }
    )
    assert GroupConfig.from_broker_config(config) == GroupConfig(
        offsets_topic_num_partitions=7,
        min_session_timeout_ms=1000,
        max_session_timeout_ms=90000,
        initial_rebalance_delay_ms=0,
        max_size=5,
        offset_metadata_max_bytes=64,
        offsets_retention_ms=3 * 60_000,
    )
    # Kafka's defaults on both sides agree.
    assert GroupConfig.from_broker_config(BrokerConfig(broker_id=1)) == GroupConfig()
