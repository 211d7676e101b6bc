"""What a chaos run records: the history the checker judges (design §12.4–§12.5).

A history is plain data. The workload appends events while it runs and the checker reads
them afterwards; nothing here talks to a broker. Every event is a frozen dataclass, and
`to_json` / `from_json` turn any of them, a whole `History` or the checker's results into
JSON and back from their fields and type hints, so that a history can be written next to
the report and checked again later (`History.dump` / `History.load`).

Times are float seconds on one monotonic clock shared by every recorder in the run
(`time.monotonic() - t0` is the natural choice): the checker compares times across
producers, consumers, the nemesis and the observers, so they must come from the same clock.

Values are unique integers, one per produce attempt (Jepsen's rule: a value is written at
most once by the workload, so every read can be traced back to exactly one attempt). Records
read back or found in a replica's log are `RecordValue`s: the workload's integer, `None` for
a null value, or a string (say the hex of the bytes) for anything that does not decode as
one of the workload's integers, so that garbage still compares unequal to other garbage.

The group workload adds what the members of one consumer group were given (GroupRead), the
offsets they committed and how each commit ended (GroupCommit), their assignments
(GroupAssignment), and the group's committed offsets read back while they ran
(GroupOffsetRead). Histories without them load as runs without a group.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

RecordValue = int | str | None
"""A record's value as read: the workload's integer, None (null value) or an undecodable
value as a string."""

Position = tuple[int, int]
"""(partition, offset): where a record is, or where an acknowledgement said it is."""

JsonDict = dict[str, Any]

T = TypeVar("T")


def to_json(obj: object) -> Any:
    """`obj` as the JSON data written for it: a dataclass is an object of its fields in
    field order, an enum its value, a tuple a list, an integer key a string."""
    # msgspec is imported where used: the broker image, which runs no chaos, leaves it out.
    import msgspec

    return msgspec.json.decode(msgspec.json.encode(obj))


def from_json(cls: type[T], data: object) -> T:
    """A `cls` from `to_json`'s data, by its type hints: floats from integers, enums from
    their values, tuples from lists, integer keys from strings; a missing field takes its
    default (older files lack the newer fields) and `__post_init__` checks still run."""
    import msgspec

    # Lax: JSON object keys are strings, and the dict[int, ...] fields need them as ints.
    return msgspec.convert(data, cls, strict=False)


class ProducerMode(StrEnum):
    """How the workload's producers write (`minikafka chaos --producer`)."""

    PLAIN = "plain"
    """One try per record (retries=0, no idempotence): duplicates are counted, never a
    failure (without idempotence Kafka promises no more than at-least-once)."""
    IDEMPOTENT = "idempotent"
    """Kafka's idempotent producer (enable.idempotence=true, acks=all, retries until the
    delivery timeout): the broker must append each record once however often it is sent,
    so a value at two positions fails the run."""


class Outcome(StrEnum):
    """How a produce attempt ended, in Jepsen's three-valued terms."""

    OK = "ok"
    """Acknowledged: the broker answered with no error and gave the record's offset."""
    FAIL = "fail"
    """Definitely not written, by any attempt of the send (for example NOT_ENOUGH_REPLICAS,
    which the leader checks before it appends, with producer retries off; with retries an
    earlier try may have been written, so no error is definite)."""
    INFO = "info"
    """In doubt: the write may or may not have happened (timeouts, network errors,
    NOT_ENOUGH_REPLICAS_AFTER_APPEND, a send still pending when the run stopped, and any
    failure after which a retry may have landed)."""


@dataclass(frozen=True, slots=True)
class ProduceAttempt:
    """One `send` of one unique value, from invocation to its outcome.

    `complete_time` is when the outcome became known (the future resolved); None when the
    run ended with the send still pending, which is in doubt. `partition` and `offset` are
    the acknowledgement's RecordMetadata and are set exactly when the outcome is OK.
    `error` names what failed (an error code name or the exception's text), for the report.
    """

    value: int
    invoke_time: float
    outcome: Outcome
    complete_time: float | None = None
    partition: int | None = None
    offset: int | None = None
    producer: int = 0
    error: str | None = None

    def __post_init__(self) -> None:
        # Accept "ok"/"fail"/"info" from callers and JSON alike; the checks below use `is`.
        object.__setattr__(self, "outcome", Outcome(self.outcome))
        if self.outcome is Outcome.OK:
            if self.partition is None or self.offset is None:
                raise ValueError(f"acknowledged value {self.value} needs its partition and offset")
            if self.partition < 0 or self.offset < 0:
                # acks=0 answers offset -1: nothing a checker could hold the cluster to.
                raise ValueError(
                    f"acknowledged value {self.value} has no real position "
                    f"({self.partition}, {self.offset}); chaos runs produce with acks=all"
                )
            if self.complete_time is None:
                raise ValueError(f"acknowledged value {self.value} needs its completion time")
        elif self.partition is not None or self.offset is not None:
            raise ValueError(
                f"value {self.value} was not acknowledged ({self.outcome}), "
                "so it has no partition and offset"
            )

    @property
    def position(self) -> Position | None:
        if self.partition is None or self.offset is None:
            return None
        return (self.partition, self.offset)


@dataclass(frozen=True, slots=True)
class ConsumerRead:
    """One record a consumer returned from poll, in the order poll returned it.

    `consumer` identifies one read sequence: a consumer that only ever polls forward. The
    recorder must start a new id whenever it seeks (the final drain from the beginning,
    an offset reset), or the seek back shows up as a non-monotonic read.
    """

    time: float
    partition: int
    offset: int
    value: RecordValue
    consumer: int = 0

    @property
    def position(self) -> Position:
        return (self.partition, self.offset)


@dataclass(frozen=True, slots=True)
class DrainedPartition:
    """The final drain consumed `partition` contiguously from `start_offset` up to its
    position `end_offset` (the high watermark it was asked to reach): every offset in
    [start_offset, end_offset) that exists was returned to it, and is in the reads.

    Record it only when the consumer really got there by polling, never from a seek, since
    the checker counts an acknowledged value in that range that no read returned as lost.
    `consumer` is the id of the drain's reads, when they have one of their own: then what
    that consumer read in the range is the final log, and an acknowledged value missing
    from it is lost even if another consumer saw it earlier (from a leader that lost it).
    """

    partition: int
    start_offset: int
    end_offset: int
    time: float
    consumer: int | None = None

    def covers(self, offset: int) -> bool:
        return self.start_offset <= offset < self.end_offset


@dataclass(frozen=True, slots=True)
class FaultWindow:
    """One nemesis operation: `op` (kill, pause, partition, partition-from-brokers,
    zk-expire, restart, controller, ...) against `target` (e.g. "broker-2", "zookeeper"),
    from `start` (fault injected) to `end` (healed). An instantaneous fault (a restart, a
    session expiry) has end == start; end None means it was never healed before the history
    ended, and the checker takes the history's end instead."""

    op: str
    target: str
    start: float
    end: float | None = None


class MoveOutcome(StrEnum):
    """How a partition move of the reassign nemesis ended."""

    COMPLETED = "completed"  # /brokers/topics/<t> holds the target, nothing adding or removing
    CANCELLED = "cancelled"  # it could not finish in time and the cancel was accepted
    REFUSED = "refused"  # the controller answered the request with this partition's error
    # No answer: maybe never sent, or a controller still to act on it (a paused one reads
    # the request when it resumes), so in doubt, as a produce without an answer is.
    UNANSWERED = "unanswered"
    UNRESOLVED = "unresolved"  # neither finished nor cancelled by the heal (cancel failed)


@dataclass(frozen=True, slots=True)
class PartitionMove:
    """One partition reassignment by the reassign nemesis: asked at `start` to go from
    `replicas` to `target` (AlterPartitionReassignments), resolved at `end` with `outcome`;
    `assignment` is the partition's replicas in ZooKeeper (/brokers/topics/<t>) read when
    the heal was done (None: unread), and `error` what the controller answered or why no
    answer came. A move that only reorders the replicas leaves the leader where it was, so
    a completed move is followed by a preferred leader election (`election`)."""

    partition: int
    start: float
    replicas: tuple[int, ...]
    target: tuple[int, ...]
    outcome: MoveOutcome
    end: float | None = None
    assignment: tuple[int, ...] | None = None
    error: str | None = None
    # After a completed move, the preferred leader election (ElectLeaders PREFERRED) asked
    # for the partition: "elected", "not needed" (the first replica already led) or the
    # error; None when none was asked.
    election: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "outcome", MoveOutcome(self.outcome))
        object.__setattr__(self, "replicas", tuple(self.replicas))
        object.__setattr__(self, "target", tuple(self.target))
        if self.assignment is not None:
            object.__setattr__(self, "assignment", tuple(self.assignment))


@dataclass(frozen=True, slots=True)
class LeaderObservation:
    """A partition's leader and leader epoch as seen at `time` (-1: no leader).

    Observe from one linearizable source (the partition state znode, read through one
    ZooKeeper session), not from brokers' metadata caches: a cache that has not yet had its
    UpdateMetadata legitimately shows an older epoch, which would read as a regression."""

    time: float
    partition: int
    leader: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class ControllerObservation:
    """The active controller (/controller, -1 when the znode is absent) and the controller
    epoch (/controller_epoch) as seen at `time`, through one ZooKeeper session."""

    time: float
    controller_id: int
    controller_epoch: int


@dataclass(frozen=True, slots=True)
class IsrObservation:
    """A partition's ISR as seen at `time`. The checker counts a shrink when a member
    disappears between two consecutive observations of the partition and an expand when
    one appears, so observe every change (a znode watch) or the counts are lower bounds."""

    time: float
    partition: int
    isr: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "isr", tuple(self.isr))  # a list from a caller compares too


@dataclass(frozen=True, slots=True)
class ReplicaLog:
    """One replica's records at the end of the run: broker `broker_id`'s copy of
    `partition`, offset -> value, with its high watermark. Give the HW the broker itself
    would use (the checkpoint clamped to the log end offset), so that offsets below it are
    really present; records at or above it are ignored."""

    broker_id: int
    partition: int
    high_watermark: int
    records: Mapping[int, RecordValue]

    def __post_init__(self) -> None:
        # In offset order, as the JSON lists them.
        object.__setattr__(self, "records", dict(sorted(self.records.items())))


@dataclass(frozen=True, slots=True)
class GroupRead:
    """One record a member of the chaos consumer group was given by poll: the group
    workload's counterpart of a ConsumerRead. `member` names one Consumer instance of the
    group (a member that is replaced gets a new id). Reads of all members are in the order
    each member was given them; the checker only asks whether a record was ever given to
    some member, so the interleaving across members does not matter."""

    time: float
    member: int
    partition: int
    offset: int
    value: RecordValue

    @property
    def position(self) -> Position:
        return (self.partition, self.offset)


@dataclass(frozen=True, slots=True)
class GroupCommit:
    """One OffsetCommit by a group member: `offsets` is partition -> the offset committed
    (the next one to consume, Kafka's convention), from `invoke_time` to `complete_time`
    (a synchronous commit's return, or an asynchronous one's callback). One member's
    commits are sent in the order of their `invoke_time`.

    OK means acknowledged: the commit returned and every partition asked came back with no
    error (`errors` empty). FAIL is a refusal the coordinator answers before it writes
    anything (an old generation, an unknown member, a rebalance in progress); INFO is in
    doubt (a timeout, a coordinator moving, a partition's error after the append): the
    offsets may have been stored. Only OK commits move the checker's commit point, so a
    commit recorded as OK must really have been acknowledged, never the reverse.
    `errors` names each partition's error; `error` the commit's own (an exception)."""

    member: int
    invoke_time: float
    outcome: Outcome
    complete_time: float | None
    offsets: Mapping[int, int]
    errors: Mapping[int, str] = field(default_factory=dict)
    error: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "outcome", Outcome(self.outcome))
        # In partition order, as the JSON lists them.
        object.__setattr__(self, "offsets", dict(sorted(self.offsets.items())))
        object.__setattr__(self, "errors", dict(sorted(self.errors.items())))
        if self.outcome is Outcome.OK:
            if self.complete_time is None:
                raise ValueError("an acknowledged commit needs its completion time")
            if self.errors or self.error is not None:
                raise ValueError(
                    f"a commit with errors ({self.error or dict(self.errors)}) was not acknowledged"
                )


@dataclass(frozen=True, slots=True)
class GroupOffsetRead:
    """The group's committed offsets as its coordinator answered an OffsetFetch invoked
    at `invoke_time` and answered at `complete_time`: partition -> offset, for the
    partitions that had one."""

    invoke_time: float
    complete_time: float
    offsets: Mapping[int, int]

    def __post_init__(self) -> None:
        object.__setattr__(self, "offsets", dict(sorted(self.offsets.items())))


class AssignmentChange(StrEnum):
    """What a group member's rebalance callback was told."""

    ASSIGN = "assign"  # partitions given to it (a new generation's assignment)
    REVOKE = "revoke"  # partitions taken back in an orderly rebalance (it may commit first)
    LOST = "lost"  # partitions lost (session gone): others may own them already


@dataclass(frozen=True, slots=True)
class GroupAssignment:
    """A change of one member's assignment at `time`: what changed (`change`, the
    partitions `changed`) and the member's whole assignment after it (`partitions`)."""

    time: float
    member: int
    change: AssignmentChange
    changed: tuple[int, ...]
    partitions: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "change", AssignmentChange(self.change))
        object.__setattr__(self, "changed", tuple(sorted(self.changed)))
        object.__setattr__(self, "partitions", tuple(sorted(self.partitions)))


GroupEvent = GroupRead | GroupCommit | GroupAssignment


@dataclass(slots=True)
class History:
    """Everything one chaos run observed, for one topic.

    `start` and `end` bound the produce phase (first invocation possible, last invocation
    done); unavailability is measured inside them. When left None they are taken from the
    attempts' earliest invocation and latest invocation or completion. `meta` is free-form
    JSON for the report (seed, nemesis, cluster shape, settings). `producer` is how the
    values were written, which decides whether a duplicate is a failure (older histories:
    plain).

    `group` is the consumer group of the group workload, with what its members were given,
    their commits, their assignments and the committed offsets read back while they ran;
    None (and no group events) when the run had no
    group workload, as in histories written before it existed."""

    topic: str
    # Declared here to be written right after the topic (to_json keeps field order);
    # keyword-only so that History(topic, attempts, reads, ...) keeps its positions.
    start: float | None = field(default=None, kw_only=True)
    end: float | None = field(default=None, kw_only=True)
    meta: JsonDict = field(default_factory=dict, kw_only=True)
    producer: ProducerMode = field(default=ProducerMode.PLAIN, kw_only=True)
    attempts: list[ProduceAttempt] = field(default_factory=list)
    reads: list[ConsumerRead] = field(default_factory=list)
    drained: list[DrainedPartition] = field(default_factory=list)
    faults: list[FaultWindow] = field(default_factory=list)
    leaders: list[LeaderObservation] = field(default_factory=list)
    controllers: list[ControllerObservation] = field(default_factory=list)
    isr: list[IsrObservation] = field(default_factory=list)
    replica_logs: list[ReplicaLog] = field(default_factory=list)
    group: str | None = None
    group_reads: list[GroupRead] = field(default_factory=list)
    group_commits: list[GroupCommit] = field(default_factory=list)
    group_assignments: list[GroupAssignment] = field(default_factory=list)
    group_offset_reads: list[GroupOffsetRead] = field(default_factory=list)
    # The reassign nemesis' partition moves (none in runs without it, or older histories).
    moves: list[PartitionMove] = field(default_factory=list)

    def validate(self) -> None:
        """Raise ValueError if the history breaks the recording contract (a value attempted
        twice), which would make every count built on it meaningless."""
        seen: set[int] = set()
        for a in self.attempts:
            if a.value in seen:
                raise ValueError(f"value {a.value} was attempted twice; values must be unique")
            seen.add(a.value)

    def bounds(self) -> tuple[float, float]:
        """(start, end) of the produce phase, from the fields or else from the attempts."""
        times = [a.invoke_time for a in self.attempts]
        times += [a.complete_time for a in self.attempts if a.complete_time is not None]
        start = self.start if self.start is not None else min(times, default=0.0)
        end = self.end if self.end is not None else max(times, default=start)
        return start, max(start, end)

    def dump(self, path: Path) -> None:
        path.write_text(json.dumps(to_json(self), indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> History:
        return from_json(cls, json.loads(path.read_text()))
