"""The chaos checker: judge a `History` as Jepsen's Kafka analysis and Kafka's system tests
count (design §12.5). Pure logic over recorded events; nothing here does I/O.

Counting, for the topic of the history. A position is (partition, offset). A position is
*covered* when some read returned a record of that partition at that offset or a later one,
or a `DrainedPartition` range contains it: the reads provably went past it, so whatever the
log holds there was seen.

Produce attempts (every attempt is exactly one of):
- acknowledged: outcome OK, with the (partition, offset) the broker acknowledged;
- failed: outcome FAIL, definitely not written;
- in doubt: outcome INFO, may or may not have been written. Never counted lost; one that is
  read anyway is counted as *recovered*.

Acknowledged values (every one is exactly one of):
- lost: never read anywhere, and its acknowledged position is covered; or gone from the
  final log: its position lies in a drained range whose reads (`DrainedPartition.consumer`)
  found something else there, or nothing (a leader served it, then lost it);
- ok: read at its acknowledged position (and not lost from the final log);
- moved: read, but never at its acknowledged position, and that position is covered (the
  log provably holds something else there);
- unseen: its acknowledged position is not covered and it was not read there: not provably
  lost (it lies beyond the last offset read, e.g. a drain that did not finish).

Reads:
- duplicate: a value read at two or more different positions (a producer retry after an
  in-doubt attempt writes the value twice; reading one position twice is not a duplicate);
  with the idempotent producer (`History.producer`), a failure: the broker must append a
  record once however often the producer sends it;
- unexpected: a value read that no attempt produced (garbage, a null, an unknown integer);
- failed but read: a value whose attempt definitely FAILED, read anyway;
- read divergence: one position read with two different values;
- non-monotonic: within one consumer's read sequence (history order), an offset of a
  partition at or below the previous one read from that partition;
- skipped: within one sequence, an offset more than one past the previous one
  (informational: offsets are contiguous in a log without compaction, so a gap means the
  consumer jumped, e.g. an offset reset).

Replicas and cluster state:
- conflicting acks: one position acknowledged for two different values;
- replica divergence: one position below the high watermark of two replicas (offset <
  min(HW_a, HW_b), compared pairwise) holding different values on them;
- leader epoch violations, per partition, over observation time: a *regression* is an
  epoch below the largest one observed before; a *conflict* is an epoch observed with two
  different leaders (-1, no leader, conflicts with nothing);
- controller epoch violations: the same over (controller epoch, controller id);
- leader changes: consecutive observations of a partition where the leader differs and
  the new one is a broker (not -1); controller changes: observations where the controller
  epoch went up;
- ISR shrinks / expands: consecutive ISR observations of a partition where a member
  disappeared / appeared (one step can be both).

Unavailability of a fault window [start, end] (end None: the produce phase's end), per
partition: take the produce phase [S, E] (`History.bounds()`) and the completion times of
the partition's acknowledged attempts inside it, sorted, t1 <= ... <= tn; its gaps are the
intervals between consecutive points of S, t1, ..., tn, E. The window's unavailability is
the length in seconds of the longest gap, in any partition, that overlaps it (gap (a, b)
with a <= end and b >= start): the longest time, around the fault, that some partition went
without a single acknowledged produce (a fault usually stops the partitions its target led,
not the others, as in Kafka). The partitions are those with an acknowledged write or a
leader observation; with none, the whole topic is one series. It includes the fault's
after-effects (a gap that starts during the window and ends after it) but not a gap that
starts after the window ended. A window entirely outside [S, E] has no value (None). Per
fault type (op): the number of windows, and the max and median of the values.

The consumer group (the group workload; `CheckResult.group` is None without one). The
final log is what the final drain read (`DrainedPartition` ranges with a `consumer`, and
that consumer's reads in them): a record is (partition, offset, value) of it. A record is
*delivered* when some member was given its value (an integer value anywhere, any other
value at that position). Per partition, the *commit point* C_p is the highest offset of
any acknowledged commit (outcome OK) for it; a failed or in-doubt commit never moves it:
- group loss: a record of the final log at an offset below C_p never delivered to any
  member. Members commit only the offsets after records they were given, so the group
  committed past a record nobody processed: the at-least-once contract of a consumer group
  is broken (a committed offset served wrong, records skipped by a fetch, or the log
  rewritten below what the group read);
- not yet consumed: a record of the final log at or above C_p never delivered (the group
  had not got there; never a loss);
- only the final log is judged: offsets the drain did not reach, and values that are not
  in it (an in-doubt write truncated away), are neither lost nor consumed;
- redelivered: a record given more than once, to one member or several (rebalances, a
  member resuming from an older commit: expected with at-least-once delivery);
- commit regression: an acknowledged commit of a partition lower than one acknowledged
  before it was invoked (real-time order). The committed offset went back, so records are
  given again; nothing is lost by it, so it is reported, not a problem;
- commit applied out of order: a read of the group's committed offsets (an OffsetFetch)
  returned offset v for a partition, the only commit to v was member M's acknowledged
  commit a, and M's later commit b of the partition (invoked after a, to a higher offset)
  had been acknowledged before the read began. Only a's write can have put v there, after
  b's: the coordinator applied one member's commits out of the order it sent them (Kafka
  processes one connection's requests in order), and an acknowledged commit was undone.
  Reads that a coordinator which had lost the group may have answered from its old state
  are not judged: those begun from a change of coordinator (the group's offsets partition's
  leader or leader epoch, `meta["group"]["coordinators"]`) until STALE_COORDINATOR_S after
  the end of the fault windows around it (until then the old one may not know);
- group read divergence: a position given to members with two values, or with a value
  other than the final log's (the read rule above, for the members' reads);
- commits acknowledged / failed / in doubt, and assignments received (one per member per
  rebalance) and lost.

Producer modes (`History.producer`, the report's `producer`):
- plain: one try per record, without idempotence: duplicates are counted, not judged
  (without idempotence Kafka promises no more than at-least-once);
- idempotent: librdkafka's idempotent producer, retrying until its delivery timeout. Every
  produced value must be in the log at most once, whatever its outcome: an acknowledged
  value exactly once (once at its acknowledged position: lost and moved as above, plus no
  second position), a value in doubt (failed after the delivery timeout, or still pending at
  the end) at most once. A duplicate is a failure. No error is a definite failure once a
  retry may follow a try that was written (the workload records every error in doubt).

`CheckResult.valid` is False iff a safety invariant is broken: anything lost, moved,
unexpected or failed-but-read, any conflicting ack, read or replica divergence,
non-monotonic read, epoch violation, group loss, commit applied out of order or group
read divergence, a producer stopped by a fatal error (`meta["producer_fatal_errors"]`),
and with the idempotent producer any duplicate. Unseen, duplicates of
the plain producer, in-doubt, skipped reads, commit regressions, redeliveries, records not
yet consumed by the group and every availability figure are reported but never make a run
invalid.
"""

from __future__ import annotations

import bisect
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from minikafka.chaos.history import (
    AssignmentChange,
    GroupCommit,
    GroupOffsetRead,
    History,
    Outcome,
    Position,
    ProduceAttempt,
    ProducerMode,
    RecordValue,
)


def _value_key(v: RecordValue) -> tuple[int, str]:
    # Mixed int / str / None values need a total order for stable reports.
    if v is None:
        return (0, "")
    if isinstance(v, int):
        return (1, f"{v:+021d}")  # zero-padded so that numeric order is string order
    return (2, v)


def _sorted_values(values: Iterable[RecordValue]) -> tuple[RecordValue, ...]:
    return tuple(sorted(set(values), key=_value_key))


@dataclass(frozen=True, slots=True)
class MovedValue:
    """An acknowledged value read only at positions other than the acknowledged one."""

    value: int
    acked: Position
    read_at: tuple[Position, ...]


@dataclass(frozen=True, slots=True)
class DuplicateValue:
    """A value read at more than one position."""

    value: int
    positions: tuple[Position, ...]


@dataclass(frozen=True, slots=True)
class OffsetConflict:
    """One position with several values: acknowledged for several (conflicting acks) or
    read with several (read divergence)."""

    partition: int
    offset: int
    values: tuple[RecordValue, ...]


@dataclass(frozen=True, slots=True)
class ReplicaDivergence:
    """One position below the HW of several replicas whose values differ: broker -> value
    for every replica that has the offset below its own HW."""

    partition: int
    offset: int
    values: Mapping[int, RecordValue]  # by broker id


@dataclass(frozen=True, slots=True)
class ReadOrderViolation:
    """Two consecutive reads of a partition by one consumer, out of order (non-monotonic)
    or with offsets missing between them (skipped)."""

    consumer: int
    partition: int
    previous_offset: int
    offset: int
    time: float


@dataclass(frozen=True, slots=True)
class UnexpectedRead:
    """A record read whose value no produce attempt wrote."""

    partition: int
    offset: int
    value: RecordValue
    time: float


@dataclass(frozen=True, slots=True)
class EpochViolation:
    """An epoch observation that breaks monotonicity: `kind` "regression" (epoch below the
    largest one seen before, `previous_epoch`) or "conflict" (an epoch seen before with
    another holder, `previous_holder`). `partition` is None for the controller epoch;
    holders are leaders (broker ids) or controller ids."""

    kind: str
    time: float
    partition: int | None
    previous_epoch: int
    previous_holder: int
    epoch: int
    holder: int


@dataclass(frozen=True, slots=True)
class FaultUnavailability:
    """One fault window and its unavailability: the longest gap without an acknowledged
    produce, in `partition` (None: the topic as a whole), that overlaps it, [gap_start,
    gap_end]; all None when the window lies outside the produce phase."""

    op: str
    target: str
    start: float
    end: float
    unavailable_s: float | None
    gap_start: float | None
    gap_end: float | None
    partition: int | None = None


@dataclass(frozen=True, slots=True)
class FaultTypeAvailability:
    """Unavailability aggregated over every window of one fault type (op) that has a
    value: how many windows, and the max and median seconds."""

    op: str
    windows: int
    max_s: float
    median_s: float


@dataclass(frozen=True, slots=True)
class GroupLoss:
    """A record of the final log below its partition's commit point that no group member
    was ever given."""

    partition: int
    offset: int
    value: RecordValue
    commit_point: int


@dataclass(frozen=True, slots=True)
class CommitRegression:
    """An acknowledged commit of `partition` to `offset` by `member`, invoked at `time`,
    after `previous_member`'s commit to the higher `previous_offset` had been acknowledged
    (at `previous_time`)."""

    partition: int
    previous_offset: int
    previous_member: int
    previous_time: float
    offset: int
    member: int
    time: float


@dataclass(frozen=True, slots=True)
class CommitOutOfOrder:
    """A read of the group's committed offsets, invoked at `read_time`, returned
    `offset` for `partition`, which only `member`'s commit invoked at `time` asked for,
    although the member's later commit to `later_offset` (invoked at `later_time`) had
    been acknowledged at `later_acknowledged`."""

    partition: int
    offset: int
    member: int
    time: float
    later_offset: int
    later_time: float
    later_acknowledged: float
    read_time: float


@dataclass(slots=True)
class GroupResult:
    """The consumer group's figures (module docstring); lists are sorted."""

    group: str | None
    members: int  # Consumer instances that recorded anything
    final_records: int  # records of the final log judged
    delivered: int  # of those, given to some member
    deliveries: int  # records given to members, counting every redelivery
    redelivered: int  # records given more than once
    losses: list[GroupLoss]
    not_yet_consumed: int  # final-log records at or above the commit point, never given
    # partition -> highest acknowledged committed offset, in partition order
    commit_points: dict[int, int]
    commits_acknowledged: int
    commits_failed: int
    commits_in_doubt: int
    commit_regressions: list[CommitRegression]
    read_divergence: list[OffsetConflict]
    assignments: int  # assignments received, one per member per rebalance
    lost_assignments: int  # partitions lost (a session gone) rather than revoked
    offset_reads: int = 0  # reads of the group's committed offsets
    commits_out_of_order: list[CommitOutOfOrder] = field(default_factory=list)

    def summary_rows(self) -> list[tuple[str, str]]:
        return [
            ("group: consumer group", self.group or "?"),
            (
                "group: final-log records / delivered to a member",
                f"{self.final_records} / {self.delivered}",
            ),
            ("group losses (committed past, never delivered)", str(len(self.losses))),
            ("group: not yet consumed (at or past the commit point)", str(self.not_yet_consumed)),
            ("group: records given / redelivered", f"{self.deliveries} / {self.redelivered}"),
            (
                "group commits acknowledged / failed / in doubt",
                f"{self.commits_acknowledged} / {self.commits_failed} / {self.commits_in_doubt}",
            ),
            ("group commit regressions", str(len(self.commit_regressions))),
            (
                "group commits applied out of order / committed-offset reads",
                f"{len(self.commits_out_of_order)} / {self.offset_reads}",
            ),
            ("group: divergent offsets in member reads", str(len(self.read_divergence))),
            (
                "group: assignments received (rebalances) / lost",
                f"{self.assignments} / {self.lost_assignments}",
            ),
        ]


@dataclass(slots=True)
class CheckResult:
    """Every count of the module docstring; value lists are sorted."""

    valid: bool
    # Right after `valid` in the report (to_json keeps field order); keyword-only since it
    # has a default.
    problems: list[str] = field(default_factory=list, kw_only=True)
    # How the values were written: with the idempotent producer a duplicate is a problem.
    producer: ProducerMode = field(default=ProducerMode.PLAIN, kw_only=True)
    attempted: int
    acknowledged: int
    failed: int
    in_doubt: int
    recovered: list[int]  # in doubt, but read
    ok: int  # acknowledged and read at the acknowledged position
    lost: list[int]
    unseen: list[int]
    moved: list[MovedValue]
    duplicates: list[DuplicateValue]
    unexpected: list[UnexpectedRead]
    failed_but_read: list[int]
    conflicting_acks: list[OffsetConflict]
    read_divergence: list[OffsetConflict]
    replica_divergence: list[ReplicaDivergence]
    nonmonotonic_reads: list[ReadOrderViolation]
    skipped_reads: list[ReadOrderViolation]
    leader_epoch_violations: list[EpochViolation]
    controller_epoch_violations: list[EpochViolation]
    leader_changes: int
    controller_changes: int
    isr_shrinks: int
    isr_expands: int
    unavailability: list[FaultUnavailability]
    unavailability_by_fault: dict[str, FaultTypeAvailability]  # in op order
    group: GroupResult | None = None  # None: the history has no group workload
    # Partitions whose replicas could not be described at the end, so were not compared:
    # a check not made is a problem, never a pass.
    replicas_unread: list[str] = field(default_factory=list)
    # Producers stopped by a fatal error (`meta["producer_fatal_errors"]`): an idempotent
    # producer whose sequence state the broker broke beyond an epoch bump.
    producer_fatal_errors: list[str] = field(default_factory=list)

    def summary_rows(self) -> list[tuple[str, str]]:
        """(metric, value) rows for the summary table, safety first, then availability."""
        rows: list[tuple[str, str]] = [
            ("valid", "yes" if self.valid else "NO"),
            ("producer", _PRODUCER_ROWS[self.producer]),
            ("produce attempts", str(self.attempted)),
            ("producers stopped by a fatal error", str(len(self.producer_fatal_errors))),
            ("acknowledged", str(self.acknowledged)),
            ("acknowledged and read at their offset", str(self.ok)),
            ("failed (definitely not written)", str(self.failed)),
            ("in doubt (never counted lost)", str(self.in_doubt)),
            ("in doubt but read (recovered)", str(len(self.recovered))),
            ("lost", str(len(self.lost))),
            ("unseen at end", str(len(self.unseen))),
            ("moved (read at another offset than acked)", str(len(self.moved))),
            (
                "duplicates (values read at two offsets)"
                + (": any fails the run" if self.producer is ProducerMode.IDEMPOTENT else ""),
                str(len(self.duplicates)),
            ),
            ("unexpected values read", str(len(self.unexpected))),
            ("failed but read", str(len(self.failed_but_read))),
            ("conflicting acks (one offset, two values)", str(len(self.conflicting_acks))),
            ("divergent offsets in reads", str(len(self.read_divergence))),
            ("divergent offsets across replicas", str(len(self.replica_divergence))),
            ("non-monotonic reads", str(len(self.nonmonotonic_reads))),
            ("skipped offsets in reads", str(len(self.skipped_reads))),
            ("leader epoch violations", str(len(self.leader_epoch_violations))),
            ("controller epoch violations", str(len(self.controller_epoch_violations))),
            ("leader changes", str(self.leader_changes)),
            ("controller changes", str(self.controller_changes)),
            ("ISR shrinks", str(self.isr_shrinks)),
            ("ISR expands", str(self.isr_expands)),
        ]
        if self.group is not None:
            rows += self.group.summary_rows()
        for op, a in sorted(self.unavailability_by_fault.items()):
            rows.append(
                (
                    f"unavailable after {op}: max / median s",
                    f"{a.max_s:.2f} / {a.median_s:.2f} ({a.windows} faults)",
                )
            )
        return rows


_PRODUCER_ROWS = {
    ProducerMode.PLAIN: "plain (one try per record)",
    ProducerMode.IDEMPOTENT: "idempotent (retries; each value at most once)",
}

_MISSING = object()


def check(history: History) -> CheckResult:
    """Judge `history` (see the module docstring for every definition)."""
    history.validate()
    attempts = {a.value: a for a in history.attempts}
    acked = {v: a for v, a in attempts.items() if a.outcome is Outcome.OK}
    failed = {v for v, a in attempts.items() if a.outcome is Outcome.FAIL}
    in_doubt = {v for v, a in attempts.items() if a.outcome is Outcome.INFO}

    read_at: dict[int, set[Position]] = defaultdict(set)  # attempted value -> positions
    values_at: dict[Position, set[RecordValue]] = defaultdict(set)
    max_read: dict[int, int] = {}  # partition -> highest offset any read returned
    unexpected: dict[tuple[Position, RecordValue], UnexpectedRead] = {}
    for r in history.reads:
        values_at[r.position].add(r.value)
        max_read[r.partition] = max(max_read.get(r.partition, -1), r.offset)
        if isinstance(r.value, int) and r.value in attempts:
            read_at[r.value].add(r.position)
        else:
            # Reported once per (position, value): consumers re-read the same garbage.
            unexpected.setdefault(
                (r.position, r.value), UnexpectedRead(r.partition, r.offset, r.value, r.time)
            )

    drained: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for d in history.drained:
        drained[d.partition].append((d.start_offset, d.end_offset))

    # The final log, as the drain consumers read it: position -> value.
    drain_consumers = {d.consumer for d in history.drained if d.consumer is not None}
    final_at: dict[Position, RecordValue] = {
        r.position: r.value for r in history.reads if r.consumer in drain_consumers
    }
    final_ranges: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for d in history.drained:
        if d.consumer is not None:
            final_ranges[d.partition].append((d.start_offset, d.end_offset))

    def gone_from_final_log(value: int, pos: Position) -> bool:
        partition, offset = pos
        in_final = any(lo <= offset < hi for lo, hi in final_ranges.get(partition, ()))
        return in_final and final_at.get(pos, _MISSING) != value

    def covered(pos: Position) -> bool:
        partition, offset = pos
        if offset <= max_read.get(partition, -1):
            return True
        return any(lo <= offset < hi for lo, hi in drained.get(partition, ()))

    ok = 0
    lost: list[int] = []
    unseen: list[int] = []
    moved: list[MovedValue] = []
    for value, attempt in acked.items():
        pos = attempt.position
        assert pos is not None  # ProduceAttempt guarantees it for OK
        reads = read_at.get(value, set())
        if gone_from_final_log(value, pos):
            lost.append(value)
        elif pos in reads:
            ok += 1
        elif not covered(pos):
            unseen.append(value)
        elif reads:
            moved.append(MovedValue(value, pos, tuple(sorted(reads))))
        else:
            lost.append(value)

    duplicates = [
        DuplicateValue(v, tuple(sorted(ps))) for v, ps in sorted(read_at.items()) if len(ps) > 1
    ]
    read_divergence = [
        OffsetConflict(p, o, _sorted_values(vs))
        for (p, o), vs in sorted(values_at.items())
        if len(vs) > 1
    ]
    acked_at: dict[Position, set[RecordValue]] = defaultdict(set)
    for value, attempt in acked.items():
        assert attempt.position is not None
        acked_at[attempt.position].add(value)
    conflicting_acks = [
        OffsetConflict(p, o, _sorted_values(vs))
        for (p, o), vs in sorted(acked_at.items())
        if len(vs) > 1
    ]

    nonmonotonic, skipped = _read_order(history)
    leader_violations, leader_changes = _leader_epochs(history)
    controller_violations, controller_changes = _controller_epochs(history)
    isr_shrinks, isr_expands = _isr_changes(history)
    unavailability = _unavailability(history, acked.values())
    final_log = {
        pos: v
        for pos, v in final_at.items()
        if any(lo <= pos[1] < hi for lo, hi in final_ranges.get(pos[0], ()))
    }

    result = CheckResult(
        valid=True,
        producer=ProducerMode(history.producer),
        attempted=len(attempts),
        acknowledged=len(acked),
        failed=len(failed),
        in_doubt=len(in_doubt),
        recovered=sorted(v for v in in_doubt if v in read_at),
        ok=ok,
        lost=sorted(lost),
        unseen=sorted(unseen),
        moved=sorted(moved, key=lambda m: m.value),
        duplicates=duplicates,
        unexpected=sorted(
            unexpected.values(), key=lambda u: (u.partition, u.offset, _value_key(u.value))
        ),
        failed_but_read=sorted(v for v in failed if v in read_at),
        conflicting_acks=conflicting_acks,
        read_divergence=read_divergence,
        replica_divergence=_replica_divergence(history),
        nonmonotonic_reads=nonmonotonic,
        skipped_reads=skipped,
        leader_epoch_violations=leader_violations,
        controller_epoch_violations=controller_violations,
        leader_changes=leader_changes,
        controller_changes=controller_changes,
        isr_shrinks=isr_shrinks,
        isr_expands=isr_expands,
        unavailability=unavailability,
        unavailability_by_fault=_by_fault_type(unavailability),
        group=_group_check(history, final_log),
        replicas_unread=list(history.meta.get("replicas_unread", [])),
        producer_fatal_errors=list(history.meta.get("producer_fatal_errors", [])),
    )
    result.problems = _problems(result)
    result.valid = not result.problems
    return result


def _problems(r: CheckResult) -> list[str]:
    """One line per broken safety invariant; empty iff the history is valid."""

    def some(xs: Sequence[object], limit: int = 10) -> str:
        shown = ", ".join(str(x) for x in xs[:limit])
        return shown + (f", ... ({len(xs) - limit} more)" if len(xs) > limit else "")

    out: list[str] = []
    if r.lost:
        out.append(f"{len(r.lost)} acknowledged values lost: {some(r.lost)}")
    if r.moved:
        out.append(
            f"{len(r.moved)} acknowledged values read only at another offset than acked: "
            + some([f"{m.value}@{m.acked}->{list(m.read_at)}" for m in r.moved])
        )
    if r.duplicates and r.producer is ProducerMode.IDEMPOTENT:
        out.append(
            f"{len(r.duplicates)} values written at more than one offset by the idempotent "
            "producer: " + some([f"{d.value}@{list(d.positions)}" for d in r.duplicates])
        )
    if r.producer_fatal_errors:
        out.append(
            f"{len(r.producer_fatal_errors)} producers stopped by a fatal error: "
            + some(r.producer_fatal_errors)
        )
    if r.unexpected:
        out.append(
            f"{len(r.unexpected)} values read that no producer wrote: "
            + some([f"{u.value!r}@{(u.partition, u.offset)}" for u in r.unexpected])
        )
    if r.failed_but_read:
        out.append(
            f"{len(r.failed_but_read)} definitely failed values read: {some(r.failed_but_read)}"
        )
    if r.conflicting_acks:
        out.append(
            f"{len(r.conflicting_acks)} offsets acknowledged for two values: "
            + some([f"{(c.partition, c.offset)}={list(c.values)}" for c in r.conflicting_acks])
        )
    if r.read_divergence:
        out.append(
            f"{len(r.read_divergence)} offsets read with two values: "
            + some([f"{(c.partition, c.offset)}={list(c.values)}" for c in r.read_divergence])
        )
    if r.replica_divergence:
        out.append(
            f"{len(r.replica_divergence)} offsets differ across replicas below the HW: "
            + some([f"{(d.partition, d.offset)}={dict(d.values)}" for d in r.replica_divergence])
        )
    if r.replicas_unread:
        out.append(
            f"the replicas of {len(r.replicas_unread)} partitions were not read back, so not "
            f"compared: {some(r.replicas_unread)}"
        )
    if r.nonmonotonic_reads:
        out.append(
            f"{len(r.nonmonotonic_reads)} non-monotonic reads: "
            + some(
                [
                    f"consumer {n.consumer} partition {n.partition}: "
                    f"{n.previous_offset} then {n.offset}"
                    for n in r.nonmonotonic_reads
                ]
            )
        )
    for name, violations in (
        ("leader", r.leader_epoch_violations),
        ("controller", r.controller_epoch_violations),
    ):
        if violations:
            out.append(
                f"{len(violations)} {name} epoch violations: "
                + some(
                    [
                        f"{v.kind} at {v.time:.3f}s"
                        + (f" partition {v.partition}" if v.partition is not None else "")
                        + f": epoch {v.previous_epoch} ({v.previous_holder}) then "
                        f"{v.epoch} ({v.holder})"
                        for v in violations
                    ]
                )
            )
    if r.group is not None and r.group.losses:
        g = r.group
        out.append(
            f"{len(g.losses)} records of the final log below the group's commit point never "
            "delivered to any member: "
            + some([f"{x.value!r}@{(x.partition, x.offset)}<{x.commit_point}" for x in g.losses])
        )
    if r.group is not None and r.group.commits_out_of_order:
        out.append(
            f"{len(r.group.commits_out_of_order)} committed offsets read back that only a "
            "commit sent before a later acknowledged one can have written: "
            + some(
                [
                    f"partition {x.partition}: {x.offset} after {x.later_offset} "
                    f"(member {x.member}, read at {x.read_time:.3f}s)"
                    for x in r.group.commits_out_of_order
                ]
            )
        )
    if r.group is not None and r.group.read_divergence:
        out.append(
            f"{len(r.group.read_divergence)} offsets given to group members with two values: "
            + some([f"{(c.partition, c.offset)}={list(c.values)}" for c in r.group.read_divergence])
        )
    return out


def _group_check(history: History, final_log: dict[Position, RecordValue]) -> GroupResult | None:
    """The consumer group's figures over the final log (module docstring), or None when
    the history has no group workload."""
    if history.group is None and not (
        history.group_reads or history.group_commits or history.group_assignments
    ):
        return None
    given: dict[tuple[int, int, RecordValue], int] = defaultdict(int)
    given_values: set[int] = set()
    values_at: dict[Position, set[RecordValue]] = defaultdict(set)
    for r in history.group_reads:
        given[(r.partition, r.offset, r.value)] += 1
        values_at[r.position].add(r.value)
        if isinstance(r.value, int):
            given_values.add(r.value)

    def delivered(pos: Position, value: RecordValue) -> bool:
        # Values are unique: an integer given anywhere is this record, processed.
        if isinstance(value, int):
            return value in given_values
        return (pos[0], pos[1], value) in given

    acked = [c for c in history.group_commits if c.outcome is Outcome.OK]
    commit_points: dict[int, int] = {}
    for c in acked:
        for p, offset in c.offsets.items():
            commit_points[p] = max(commit_points.get(p, offset), offset)

    losses: list[GroupLoss] = []
    not_yet = delivered_count = 0
    for pos, value in sorted(final_log.items()):
        if delivered(pos, value):
            delivered_count += 1
        elif pos[1] < commit_points.get(pos[0], -1):
            losses.append(GroupLoss(pos[0], pos[1], value, commit_points[pos[0]]))
        else:
            not_yet += 1

    for pos in values_at:
        if pos in final_log:
            values_at[pos].add(final_log[pos])
    divergence = [
        OffsetConflict(p, o, _sorted_values(vs))
        for (p, o), vs in sorted(values_at.items())
        if len(vs) > 1
    ]
    members = (
        {r.member for r in history.group_reads}
        | {c.member for c in history.group_commits}
        | {a.member for a in history.group_assignments}
    )
    outcomes = [c.outcome for c in history.group_commits]
    changes = [a.change for a in history.group_assignments]
    return GroupResult(
        group=history.group,
        members=len(members),
        final_records=len(final_log),
        delivered=delivered_count,
        deliveries=len(history.group_reads),
        redelivered=sum(1 for n in given.values() if n > 1),
        losses=losses,
        not_yet_consumed=not_yet,
        commit_points=dict(sorted(commit_points.items())),
        commits_acknowledged=outcomes.count(Outcome.OK),
        commits_failed=outcomes.count(Outcome.FAIL),
        commits_in_doubt=outcomes.count(Outcome.INFO),
        commit_regressions=_commit_regressions(acked),
        read_divergence=divergence,
        assignments=changes.count(AssignmentChange.ASSIGN),
        lost_assignments=changes.count(AssignmentChange.LOST),
        offset_reads=len(history.group_offset_reads),
        commits_out_of_order=_commits_out_of_order(
            history.group_commits, history.group_offset_reads, _stale_coordinator_windows(history)
        ),
    )


# How long after a change of coordinator (or after the fault around it ends) the old
# coordinator may still answer from the group's old state: it learns of the change by the
# controller's LeaderAndIsr, which reaches it as soon as it is reachable again.
STALE_COORDINATOR_S = 5.0


def _stale_coordinator_windows(history: History) -> list[tuple[float, float]]:
    """(from, to) spans in which a coordinator that had lost the group may have answered
    reads of its offsets (module docstring)."""
    group_meta = history.meta.get("group") or {}
    changes = [float(c[0]) for c in group_meta.get("coordinators", ())[1:]]
    _, end = history.bounds()
    out = []
    for t in changes:
        until = t
        for f in history.faults:
            f_end = f.end if f.end is not None else max(end, f.start)
            if f.start <= t <= f_end:
                until = max(until, f_end)
        out.append((t, until + STALE_COORDINATOR_S))
    return out


def _commits_out_of_order(
    commits: Sequence[GroupCommit],
    reads: Sequence[GroupOffsetRead],
    stale: Sequence[tuple[float, float]] = (),
) -> list[CommitOutOfOrder]:
    """Committed offsets read back that only a commit sent before an acknowledged later
    one of the same member can have written (module docstring)."""
    writers: dict[tuple[int, int], list[GroupCommit]] = defaultdict(list)
    for c in commits:
        if c.outcome is not Outcome.FAIL:  # a refused commit wrote nothing
            for p, offset in c.offsets.items():
                writers[(p, offset)].append(c)
    by_member: dict[int, list[GroupCommit]] = defaultdict(list)
    for c in sorted(commits, key=lambda c: c.invoke_time):
        if c.outcome is Outcome.OK:
            by_member[c.member].append(c)
    out: list[CommitOutOfOrder] = []
    for r in sorted(reads, key=lambda r: r.invoke_time):
        if any(start <= r.complete_time and r.invoke_time <= end for start, end in stale):
            continue
        for p, offset in sorted(r.offsets.items()):
            only = writers.get((p, offset), [])
            if len(only) != 1 or only[0].outcome is not Outcome.OK:
                continue  # no commit of the run, several, or one in doubt (a late write)
            a = only[0]
            later = next(
                (
                    b
                    for b in by_member[a.member]
                    if b.invoke_time > a.invoke_time
                    and b.offsets.get(p, -1) > offset
                    and (b.complete_time or 0.0) < r.invoke_time
                ),
                None,
            )
            if later is not None:
                out.append(
                    CommitOutOfOrder(
                        p,
                        offset,
                        a.member,
                        a.invoke_time,
                        later.offsets[p],
                        later.invoke_time,
                        later.complete_time or 0.0,
                        r.invoke_time,
                    )
                )
    return out


def _commit_regressions(acked: Sequence[GroupCommit]) -> list[CommitRegression]:
    """Per partition, each acknowledged commit below the highest one acknowledged before it
    was invoked. Commits that overlap in time are not ordered, so never compared."""
    out: list[CommitRegression] = []
    partitions = sorted({p for c in acked for p in c.offsets})
    for p in partitions:
        of_p = [c for c in acked if p in c.offsets]
        done = sorted(of_p, key=lambda c: c.complete_time or 0.0)
        best: GroupCommit | None = None  # the highest acknowledged so far
        i = 0
        for c in sorted(of_p, key=lambda c: c.invoke_time):
            while i < len(done) and (done[i].complete_time or 0.0) < c.invoke_time:
                if best is None or done[i].offsets[p] > best.offsets[p]:
                    best = done[i]
                i += 1
            if best is not None and c.offsets[p] < best.offsets[p]:
                out.append(
                    CommitRegression(
                        p,
                        best.offsets[p],
                        best.member,
                        best.complete_time or 0.0,
                        c.offsets[p],
                        c.member,
                        c.invoke_time,
                    )
                )
    return out


def _read_order(history: History) -> tuple[list[ReadOrderViolation], list[ReadOrderViolation]]:
    """Non-monotonic and skipped reads per (consumer, partition), in history order (the
    order poll returned records; times can tie)."""
    last: dict[tuple[int, int], int] = {}
    nonmonotonic: list[ReadOrderViolation] = []
    skipped: list[ReadOrderViolation] = []
    for r in history.reads:
        key = (r.consumer, r.partition)
        prev = last.get(key)
        if prev is not None:
            if r.offset <= prev:
                nonmonotonic.append(
                    ReadOrderViolation(r.consumer, r.partition, prev, r.offset, r.time)
                )
            elif r.offset > prev + 1:
                skipped.append(ReadOrderViolation(r.consumer, r.partition, prev, r.offset, r.time))
        # Follow the sequence from where it is now, so one jump back is reported once.
        last[key] = r.offset
    return nonmonotonic, skipped


def _epoch_violations(
    observations: Iterable[tuple[float, int | None, int, int]],
) -> tuple[list[EpochViolation], int]:
    """(violations, increases) over (time, partition or None, holder, epoch) observations,
    taken in time order (ties in recorded order). Increases counts observations whose
    epoch is above every earlier one of the same key (the first is not an increase)."""
    max_epoch: dict[int | None, tuple[int, int]] = {}  # key -> (epoch, its holder)
    holder_at: dict[tuple[int | None, int], int] = {}  # (key, epoch) -> first live holder
    violations: list[EpochViolation] = []
    reported: set[tuple[str, int | None, int, int, int]] = set()
    increases = 0
    for time, key, holder, epoch in sorted(observations, key=lambda o: o[0]):
        top = max_epoch.get(key)
        if top is not None and epoch < top[0]:
            # A stale observation: the epoch went back. Report each distinct one once.
            sig = ("regression", key, top[0], epoch, holder)
            if sig not in reported:
                reported.add(sig)
                violations.append(
                    EpochViolation("regression", time, key, top[0], top[1], epoch, holder)
                )
            continue
        if top is not None and epoch > top[0]:
            increases += 1
        if top is None or epoch > top[0]:
            max_epoch[key] = (epoch, holder)
        if holder < 0:
            continue  # "nobody" is compatible with any holder of the epoch
        first = holder_at.setdefault((key, epoch), holder)
        if first != holder:
            # Two holders in one epoch: the epoch no longer fences one from the other.
            sig = ("conflict", key, epoch, first, holder)
            if sig not in reported:
                reported.add(sig)
                violations.append(
                    EpochViolation("conflict", time, key, epoch, first, epoch, holder)
                )
    return violations, increases


def _leader_epochs(history: History) -> tuple[list[EpochViolation], int]:
    violations, _ = _epoch_violations(
        (o.time, o.partition, o.leader, o.leader_epoch) for o in history.leaders
    )
    changes = 0
    previous: dict[int, int] = {}
    for o in sorted(history.leaders, key=lambda o: o.time):
        prev = previous.get(o.partition)
        if prev is not None and o.leader != prev and o.leader >= 0:
            changes += 1
        previous[o.partition] = o.leader
    return violations, changes


def _controller_epochs(history: History) -> tuple[list[EpochViolation], int]:
    return _epoch_violations(
        (o.time, None, o.controller_id, o.controller_epoch) for o in history.controllers
    )


def _isr_changes(history: History) -> tuple[int, int]:
    shrinks = expands = 0
    previous: dict[int, frozenset[int]] = {}
    for o in sorted(history.isr, key=lambda o: o.time):
        isr = frozenset(o.isr)
        prev = previous.get(o.partition)
        if prev is not None:
            shrinks += bool(prev - isr)
            expands += bool(isr - prev)
        previous[o.partition] = isr
    return shrinks, expands


def _replica_divergence(history: History) -> list[ReplicaDivergence]:
    """Offsets where replicas that both hold them below their own HW disagree. Comparing
    each pair below min(HW_a, HW_b) is the same as, per offset, comparing every replica
    whose HW is above it: committed data must be identical wherever it is committed."""
    by_partition: dict[int, list[tuple[int, int, dict[int, RecordValue]]]] = defaultdict(list)
    for log in history.replica_logs:
        by_partition[log.partition].append((log.broker_id, log.high_watermark, dict(log.records)))
    out: list[ReplicaDivergence] = []
    for partition, replicas in sorted(by_partition.items()):
        offsets = sorted({o for _, hw, recs in replicas for o in recs if o < hw})
        for offset in offsets:
            values = dict(
                sorted(
                    (broker, recs[offset])
                    for broker, hw, recs in replicas
                    if offset < hw and offset in recs
                )
            )
            if len(set(values.values())) > 1:
                out.append(ReplicaDivergence(partition, offset, values))
    return out


def _unavailability(history: History, acked: Iterable[ProduceAttempt]) -> list[FaultUnavailability]:
    """Per fault window, the longest per-partition ack gap overlapping it (module docstring)."""
    start, end = history.bounds()
    # A partition observed but never acked is one long gap.
    times: dict[int | None, list[float]] = {o.partition: [] for o in history.leaders}
    for attempt in acked:
        t = attempt.complete_time
        if t is not None and start <= t <= end:
            times.setdefault(attempt.partition, []).append(t)
    if not times:
        times[None] = []
    # gap i of a partition is (points[i], points[i + 1])
    series = {p: [start, *sorted(ts), end] for p, ts in times.items()}
    out: list[FaultUnavailability] = []
    for f in history.faults:
        f_end = f.end if f.end is not None else end
        best: tuple[float, float, int | None] | None = None
        for partition, points in series.items():
            # Gaps overlapping [f.start, f_end] are a contiguous run: from the first whose
            # end is >= f.start to the last whose start is <= f_end.
            first = max(bisect.bisect_left(points, f.start) - 1, 0)
            last = min(bisect.bisect_right(points, f_end) - 1, len(points) - 2)
            for i in range(first, last + 1):
                a, b = points[i], points[i + 1]
                if a <= f_end and b >= f.start and (best is None or b - a > best[1] - best[0]):
                    best = (a, b, partition)
        out.append(
            FaultUnavailability(
                f.op,
                f.target,
                f.start,
                f_end,
                None if best is None else best[1] - best[0],
                None if best is None else best[0],
                None if best is None else best[1],
                None if best is None else best[2],
            )
        )
    return out


def _by_fault_type(windows: Iterable[FaultUnavailability]) -> dict[str, FaultTypeAvailability]:
    seconds: dict[str, list[float]] = defaultdict(list)
    for w in windows:
        if w.unavailable_s is not None:
            seconds[w.op].append(w.unavailable_s)
    return {
        op: FaultTypeAvailability(op, len(xs), max(xs), statistics.median(xs))
        for op, xs in sorted(seconds.items())
    }
