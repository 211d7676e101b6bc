"""The chaos checker on small hand-made histories: each test pins one counting rule of
`minikafka.chaos.checker` (lost vs unseen vs in doubt vs duplicate vs moved, divergence,
epochs, ISR changes, unavailability), and two hypothesis properties tie the counts to a
model log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.chaos import (
    ConsumerRead,
    ControllerObservation,
    DrainedPartition,
    FaultWindow,
    History,
    IsrObservation,
    LeaderObservation,
    Outcome,
    ProduceAttempt,
    ReplicaLog,
    check,
)
from minikafka.chaos.history import RecordValue, from_json, to_json

# --- builders -----------------------------------------------------------------------------


def ack(value: int, partition: int, offset: int, t: float = 1.0) -> ProduceAttempt:
    return ProduceAttempt(value, t - 0.01, Outcome.OK, t, partition, offset)


def fail(value: int, t: float = 1.0) -> ProduceAttempt:
    return ProduceAttempt(value, t - 0.01, Outcome.FAIL, t, error="NOT_ENOUGH_REPLICAS")


def info(value: int, t: float = 1.0) -> ProduceAttempt:
    return ProduceAttempt(value, t - 0.01, Outcome.INFO, t, error="REQUEST_TIMED_OUT")


def read(partition: int, offset: int, value: RecordValue, consumer: int = 0) -> ConsumerRead:
    return ConsumerRead(10.0 + offset / 100, partition, offset, value, consumer)


def log_of(
    values: list[int], partition: int = 0
) -> tuple[list[ProduceAttempt], list[ConsumerRead]]:
    """Every value acked at its index in one partition and read back there."""
    return (
        [ack(v, partition, o) for o, v in enumerate(values)],
        [read(partition, o, v) for o, v in enumerate(values)],
    )


# --- lost, unseen, in doubt, failed -------------------------------------------------------


def test_acked_and_read_at_its_offset_is_ok() -> None:
    attempts, reads = log_of([10, 11, 12])
    r = check(History("t", attempts, reads))
    assert r.valid
    assert (r.attempted, r.acknowledged, r.ok) == (3, 3, 3)
    assert r.lost == r.unseen == [] and r.moved == []


def test_acked_never_read_below_an_offset_that_was_read_is_lost() -> None:
    attempts, reads = log_of([10, 11, 12])
    reads = [r for r in reads if r.value != 11]  # offset 1 never comes back, offset 2 does
    r = check(History("t", attempts, reads))
    assert r.lost == [11]
    assert r.unseen == []
    assert not r.valid
    assert any("lost" in p for p in r.problems)


def test_acked_offset_read_with_another_value_is_lost() -> None:
    # Offset 1 is covered by a read at offset 1 itself (not below it): the log holds 99
    # there, written by an in-doubt attempt, so the acked 11 is gone.
    r = check(
        History("t", [ack(10, 0, 0), ack(11, 0, 1), info(99)], [read(0, 0, 10), read(0, 1, 99)])
    )
    assert r.lost == [11]
    assert r.recovered == [99]
    assert r.read_divergence == []  # one value per offset as read
    assert not r.valid


def test_acked_beyond_the_last_offset_read_is_unseen_not_lost() -> None:
    attempts, reads = log_of([10, 11, 12])
    r = check(History("t", attempts, reads[:1]))  # reads stopped after offset 0
    assert r.unseen == [11, 12]
    assert r.lost == []
    assert r.valid  # not provably lost


def test_final_drain_past_the_offset_makes_it_lost() -> None:
    # No read beyond offset 1, but the drain says it consumed [0, 3) of partition 0.
    attempts = [ack(10, 0, 0), ack(11, 0, 1), ack(12, 0, 2)]
    reads = [read(0, 0, 10), read(0, 1, 11)]
    without_drain = check(History("t", attempts, reads))
    assert without_drain.unseen == [12] and without_drain.lost == []
    with_drain = check(History("t", attempts, reads, drained=[DrainedPartition(0, 0, 3, 20.0)]))
    assert with_drain.lost == [12] and with_drain.unseen == []
    assert not with_drain.valid


def test_acked_value_read_live_but_missing_from_the_final_drain_is_lost() -> None:
    """A zombie leader served value 11 at offset 1, then the log it was in was truncated:
    the live consumer saw it, the final drain (its own consumer) finds 99 there."""
    attempts = [ack(10, 0, 0), ack(11, 0, 1), ack(99, 0, 1, t=2.0)]
    live = [read(0, 0, 10), read(0, 1, 11)]
    drain = [read(0, 0, 10, consumer=7), read(0, 1, 99, consumer=7)]
    final = [DrainedPartition(0, 0, 2, 20.0, consumer=7)]
    r = check(History("t", attempts, live + drain, drained=final))
    assert r.lost == [11]
    assert r.ok == 2  # 10, and 99 which the final log holds where it was acked
    assert not r.valid
    # Without knowing which reads were the drain's, the live read counts: not lost.
    anonymous = [DrainedPartition(0, 0, 2, 20.0)]
    assert check(History("t", attempts, live + drain, drained=anonymous)).lost == []


def test_drain_of_another_partition_or_range_does_not_cover() -> None:
    attempts = [ack(10, 0, 0), ack(11, 1, 5)]
    reads = [read(0, 0, 10)]
    drained = [DrainedPartition(0, 0, 10, 20.0), DrainedPartition(1, 6, 9, 20.0)]
    r = check(History("t", attempts, reads, drained=drained))
    assert r.unseen == [11] and r.lost == []


def test_coverage_is_per_partition() -> None:
    # A read far ahead in partition 1 says nothing about partition 0.
    r = check(History("t", [ack(10, 0, 3), ack(11, 1, 7)], [read(1, 7, 11)]))
    assert r.unseen == [10] and r.lost == []


def test_in_doubt_is_never_lost_and_counted_recovered_when_read() -> None:
    attempts = [ack(10, 0, 0), info(11), info(12), ack(13, 0, 2)]
    reads = [read(0, 0, 10), read(0, 1, 12), read(0, 2, 13)]
    r = check(History("t", attempts, reads))
    assert r.valid
    assert r.in_doubt == 2
    assert r.recovered == [12]
    assert r.lost == [] and r.unseen == []


def test_failed_and_not_read_is_fine_failed_but_read_is_invalid() -> None:
    attempts = [ack(10, 0, 0), fail(11), ack(12, 0, 1)]
    fine = check(History("t", attempts, [read(0, 0, 10), read(0, 1, 12)]))
    assert fine.valid and fine.failed == 1 and fine.failed_but_read == []
    bad = check(
        History(
            "t",
            [*attempts, ack(13, 0, 3)],
            [read(0, 0, 10), read(0, 1, 12), read(0, 2, 11), read(0, 3, 13)],
        )
    )
    assert bad.failed_but_read == [11]
    assert not bad.valid


def test_value_no_attempt_wrote_is_unexpected() -> None:
    attempts, reads = log_of([10, 11])
    reads.append(read(0, 2, 777))
    reads.append(read(0, 3, "ff00"))  # undecodable bytes
    r = check(History("t", attempts, reads))
    assert [(u.offset, u.value) for u in r.unexpected] == [(2, 777), (3, "ff00")]
    assert not r.valid


# --- duplicates and moved -----------------------------------------------------------------


def test_value_read_at_two_offsets_is_a_duplicate_but_valid() -> None:
    # The retry case: an in-doubt first try landed at 0, the acked retry at 1.
    r = check(History("t", [ack(10, 0, 1)], [read(0, 0, 10), read(0, 1, 10)]))
    assert [(d.value, d.positions) for d in r.duplicates] == [(10, ((0, 0), (0, 1)))]
    assert r.moved == []  # it was read where it was acked
    assert r.ok == 1
    assert r.valid


def test_rereading_one_offset_is_not_a_duplicate() -> None:
    reads = [read(0, 0, 10, consumer=1), read(0, 0, 10, consumer=2)]
    r = check(History("t", [ack(10, 0, 0)], reads))
    assert r.duplicates == []
    assert r.valid


def test_acked_value_read_only_at_another_offset_is_moved_and_invalid() -> None:
    attempts = [ack(10, 0, 0), ack(11, 0, 1)]
    reads = [read(0, 0, 11), read(0, 1, 99)]  # 11 sits at 0 instead of 1; 10 is gone
    r = check(History("t", [*attempts, info(99)], reads))
    assert [(m.value, m.acked, m.read_at) for m in r.moved] == [(11, (0, 1), ((0, 0),))]
    assert r.lost == [10]  # reported separately from moved
    assert not r.valid
    assert any("another offset" in p for p in r.problems)


def test_moved_needs_the_acked_position_covered() -> None:
    # Read elsewhere, but the reads never reached the acked offset: unseen, not moved.
    r = check(History("t", [ack(10, 0, 5)], [read(0, 2, 10)]))
    assert r.moved == []
    assert r.unseen == [10]
    assert r.valid


def test_moved_across_partitions() -> None:
    r = check(History("t", [ack(10, 0, 0), info(11)], [read(1, 0, 10), read(0, 0, 11)]))
    assert [(m.acked, m.read_at) for m in r.moved] == [((0, 0), ((1, 0),))]
    assert not r.valid


# --- divergence ---------------------------------------------------------------------------


def test_two_values_acked_at_one_offset_conflict() -> None:
    # A zombie leader and the new leader both acknowledged offset 4.
    r = check(History("t", [ack(10, 0, 4), ack(11, 0, 4)], []))
    assert [(c.partition, c.offset, c.values) for c in r.conflicting_acks] == [(0, 4, (10, 11))]
    assert r.unseen == [10, 11]
    assert not r.valid


def test_one_offset_read_with_two_values_is_read_divergence() -> None:
    reads = [read(0, 0, 10, consumer=1), read(0, 0, 11, consumer=2)]
    r = check(History("t", [ack(10, 0, 0), info(11)], reads))
    assert [(c.offset, c.values) for c in r.read_divergence] == [(0, (10, 11))]
    assert not r.valid


def test_replica_divergence_below_both_high_watermarks() -> None:
    logs = [
        ReplicaLog(1, 0, 3, {0: 10, 1: 11, 2: 12}),
        ReplicaLog(2, 0, 3, {0: 10, 1: 99, 2: 12}),
        ReplicaLog(3, 0, 2, {0: 10, 1: 11}),
    ]
    r = check(History("t", replica_logs=logs))
    assert [(d.partition, d.offset, d.values) for d in r.replica_divergence] == [
        (0, 1, {1: 11, 2: 99, 3: 11})
    ]
    assert not r.valid


def test_replicas_not_read_back_make_the_run_invalid() -> None:
    """A partition whose replicas could not be described was never compared: not a pass."""
    history = History("t", replica_logs=[ReplicaLog(1, 0, 1, {0: 10})])
    assert check(history).valid
    history.meta["replicas_unread"] = ["partition 1: CLUSTER_AUTHORIZATION_FAILED"]
    r = check(history)
    assert not r.valid and r.replicas_unread == ["partition 1: CLUSTER_AUTHORIZATION_FAILED"]
    assert "the replicas of 1 partitions were not read back" in r.problems[0]


def test_replica_divergence_ignores_offsets_at_or_above_a_replicas_hw() -> None:
    logs = [
        # Broker 2's offset 2 is above its HW (an uncommitted tail it will truncate).
        ReplicaLog(1, 0, 3, {0: 10, 1: 11, 2: 12}),
        ReplicaLog(2, 0, 2, {0: 10, 1: 11, 2: 77}),
        # Another partition with the same offsets is not compared with partition 0.
        ReplicaLog(1, 1, 1, {0: 50}),
        ReplicaLog(2, 1, 1, {0: 50}),
    ]
    r = check(History("t", replica_logs=logs))
    assert r.replica_divergence == []
    assert r.valid
    # The same tail below both HWs is divergence: the rule is the HW, not the position.
    logs[1] = ReplicaLog(2, 0, 3, {0: 10, 1: 11, 2: 77})
    assert [d.offset for d in check(History("t", replica_logs=logs)).replica_divergence] == [2]


# --- read order ---------------------------------------------------------------------------


def test_nonmonotonic_reads_per_consumer_and_partition() -> None:
    attempts, _ = log_of([10, 11, 12])
    reads = [read(0, 0, 10), read(0, 1, 11), read(0, 1, 11), read(0, 2, 12), read(0, 0, 10)]
    r = check(History("t", attempts, reads))
    assert [(n.previous_offset, n.offset) for n in r.nonmonotonic_reads] == [(1, 1), (2, 0)]
    assert not r.valid


def test_separate_consumers_and_partitions_are_separate_sequences() -> None:
    attempts = [ack(10, 0, 0), ack(11, 0, 1), ack(20, 1, 0)]
    reads = [
        read(0, 0, 10, consumer=1),
        read(0, 1, 11, consumer=1),
        read(1, 0, 20, consumer=1),  # another partition starts at its own offset 0
        read(0, 0, 10, consumer=2),  # the drain, a new consumer, starts over
        read(0, 1, 11, consumer=2),
    ]
    r = check(History("t", attempts, reads))
    assert r.nonmonotonic_reads == []
    assert r.valid


def test_skipped_offsets_are_reported_but_valid() -> None:
    r = check(History("t", [ack(10, 0, 0), ack(11, 0, 3)], [read(0, 0, 10), read(0, 3, 11)]))
    assert [(s.previous_offset, s.offset) for s in r.skipped_reads] == [(0, 3)]
    assert r.valid


# --- epochs and ISR -----------------------------------------------------------------------


def test_leader_epochs_increasing_is_valid_and_changes_counted() -> None:
    leaders = [
        LeaderObservation(1.0, 0, 1, 0),
        LeaderObservation(2.0, 0, 1, 0),  # the same observation again
        LeaderObservation(3.0, 0, -1, 1),  # offline
        LeaderObservation(4.0, 0, 2, 2),
        LeaderObservation(5.0, 0, 2, 3),  # epoch bump, same leader (controller ISR shrink)
        LeaderObservation(1.5, 1, 3, 7),
    ]
    r = check(History("t", leaders=leaders))
    assert r.leader_epoch_violations == []
    assert r.leader_changes == 1  # -1 -> 2; going offline is not a new leader
    assert r.valid


def test_leader_epoch_regression_is_invalid() -> None:
    leaders = [
        LeaderObservation(1.0, 0, 1, 5),
        LeaderObservation(3.0, 0, 1, 4),  # recorded last but earlier: order is by time
        LeaderObservation(2.0, 0, 2, 6),
        LeaderObservation(4.0, 1, 1, 4),  # partition 1 has its own epochs
    ]
    r = check(History("t", leaders=leaders))
    assert [
        (v.kind, v.partition, v.previous_epoch, v.epoch) for v in r.leader_epoch_violations
    ] == [("regression", 0, 6, 4)]
    assert not r.valid


def test_two_leaders_in_one_epoch_conflict() -> None:
    leaders = [
        LeaderObservation(1.0, 0, 1, 5),
        LeaderObservation(2.0, 0, -1, 5),  # no leader is not a second leader
        LeaderObservation(3.0, 0, 2, 5),
    ]
    r = check(History("t", leaders=leaders))
    assert [(v.kind, v.previous_holder, v.holder, v.epoch) for v in r.leader_epoch_violations] == [
        ("conflict", 1, 2, 5)
    ]
    assert not r.valid


def test_controller_epoch_must_only_increase() -> None:
    good = [
        ControllerObservation(1.0, 1, 1),
        ControllerObservation(2.0, -1, 1),  # /controller gone between elections
        ControllerObservation(3.0, 2, 2),
        ControllerObservation(4.0, 2, 2),
        ControllerObservation(5.0, 3, 3),
    ]
    r = check(History("t", controllers=good))
    assert r.controller_epoch_violations == []
    assert r.controller_changes == 2
    bad = [*good, ControllerObservation(6.0, 2, 2), ControllerObservation(7.0, 1, 3)]
    r = check(History("t", controllers=bad))
    assert [(v.kind, v.partition, v.epoch) for v in r.controller_epoch_violations] == [
        ("regression", None, 2),
        ("conflict", None, 3),
    ]
    assert not r.valid


def test_isr_shrinks_and_expands_counted_per_partition() -> None:
    isr = [
        IsrObservation(1.0, 0, (1, 2, 3)),
        IsrObservation(1.0, 1, (1, 2, 3)),
        IsrObservation(2.0, 0, (1,)),  # one shrink, though two members left
        IsrObservation(3.0, 0, (1,)),  # unchanged
        IsrObservation(4.0, 0, (2, 1, 3)),  # one expand (order does not matter)
        IsrObservation(5.0, 1, (1, 2, 4)),  # both in one step
    ]
    r = check(History("t", isr=isr))
    assert (r.isr_shrinks, r.isr_expands) == (2, 2)
    assert r.valid


# --- unavailability -----------------------------------------------------------------------


def acks_at(*times: float) -> list[ProduceAttempt]:
    return [ack(i, 0, i, t) for i, t in enumerate(times)]


def test_unavailability_is_the_longest_ack_gap_overlapping_the_window() -> None:
    # Acks at 1, 2, 3 then nothing until 11, then 12. A kill from 4 to 6: the gap 3 -> 11
    # (8 s) overlaps it and outlasts it; the 1 s gaps before it overlap nothing.
    attempts = acks_at(1, 2, 3, 11, 12)
    h = History(
        "t", attempts, start=0.0, end=13.0, faults=[FaultWindow("kill", "broker-1", 4.0, 6.0)]
    )
    (u,) = check(h).unavailability
    assert u.unavailable_s == pytest.approx(8.0)
    assert (u.gap_start, u.gap_end) == (3.0, 11.0)


def test_gap_that_starts_after_the_window_is_not_counted() -> None:
    attempts = acks_at(1, 2, 3, 4, 10)
    faults = [FaultWindow("pause", "broker-2", 1.5, 2.5)]
    (u,) = check(History("t", attempts, start=0.0, end=11.0, faults=faults)).unavailability
    assert u.unavailable_s == pytest.approx(1.0)  # not the 4 -> 10 gap


def test_instantaneous_fault_and_open_window_and_leading_trailing_gaps() -> None:
    attempts = acks_at(5, 6)
    faults = [
        FaultWindow("restart", "broker-1", 2.0, 2.0),  # inside the leading gap 0 -> 5
        FaultWindow("kill", "broker-3", 6.5),  # never healed: open until the end, 6 -> 20
        FaultWindow("zk-expire", "broker-2", 25.0, 26.0),  # after the produce phase
    ]
    us = check(History("t", attempts, start=0.0, end=20.0, faults=faults)).unavailability
    assert [u.unavailable_s for u in us] == [pytest.approx(5.0), pytest.approx(14.0), None]
    assert us[1].end == 20.0


def test_no_acks_at_all_is_unavailable_for_the_whole_phase() -> None:
    h = History(
        "t",
        [info(1, t=3.0)],
        start=0.0,
        end=30.0,
        faults=[FaultWindow("partition", "broker-1", 10.0, 20.0)],
    )
    (u,) = check(h).unavailability
    assert u.unavailable_s == pytest.approx(30.0)


def test_unavailability_aggregated_per_fault_type_and_never_invalid() -> None:
    # Gaps: 0-1, 1-4 (3 s), 4-5, 5-15 (10 s), 15-16, 16-22 (6 s), 22-23.
    attempts = acks_at(1, 4, 5, 15, 16, 22)
    faults = [
        FaultWindow("kill", "broker-1", 2.0, 3.0),
        FaultWindow("kill", "broker-2", 6.0, 7.0),
        FaultWindow("kill", "broker-3", 17.0, 18.0),
        FaultWindow("pause", "broker-1", 20.0, 21.0),
    ]
    r = check(History("t", attempts, start=0.0, end=23.0, faults=faults))
    kill, pause = r.unavailability_by_fault["kill"], r.unavailability_by_fault["pause"]
    # Whole seconds apart, so the differences are exact.
    assert (kill.windows, kill.max_s, kill.median_s) == (3, 10.0, 6.0)  # median, not mean 6.33
    assert (pause.windows, pause.max_s, pause.median_s) == (1, 6.0, 6.0)
    assert r.valid  # 10 s without an ack is an availability figure, not a safety failure


def test_unavailability_is_per_partition_the_worst_one_counts() -> None:
    # Partition 0 acks every second throughout; partition 1 stops from 3 to 11 (its leader
    # was killed). The topic as a whole never stopped, but partition 1 was out for 8 s.
    attempts = [ack(i, 0, i, float(i)) for i in range(1, 13)]
    attempts += [ack(100 + i, 1, i, t) for i, t in enumerate((1.0, 2.0, 3.0, 11.0, 12.0))]
    h = History(
        "t", attempts, start=0.0, end=13.0, faults=[FaultWindow("kill", "broker-2", 4.0, 6.0)]
    )
    (u,) = check(h).unavailability
    assert (u.unavailable_s, u.partition) == (pytest.approx(8.0), 1)
    assert (u.gap_start, u.gap_end) == (3.0, 11.0)


def test_a_partition_led_but_never_acked_is_unavailable_throughout() -> None:
    attempts = [ack(i, 0, i, float(i)) for i in range(1, 10)]
    h = History(
        "t",
        attempts,
        start=0.0,
        end=10.0,
        faults=[FaultWindow("kill", "broker-1", 4.0, 5.0)],
        leaders=[LeaderObservation(0.0, 0, 1, 0), LeaderObservation(0.0, 1, 2, 0)],
    )
    (u,) = check(h).unavailability
    assert (u.unavailable_s, u.partition) == (pytest.approx(10.0), 1)


def test_bounds_default_to_the_attempts() -> None:
    attempts = [
        ProduceAttempt(1, 2.0, Outcome.OK, 3.0, 0, 0),
        ProduceAttempt(2, 4.0, Outcome.INFO, 9.0),
    ]
    h = History("t", attempts, faults=[FaultWindow("kill", "broker-1", 5.0, 6.0)])
    assert h.bounds() == (2.0, 9.0)
    (u,) = check(h).unavailability
    assert u.unavailable_s == pytest.approx(6.0)  # last ack 3 -> end of phase 9


# --- the model, JSON and the report -------------------------------------------------------


def test_attempts_must_be_well_formed() -> None:
    with pytest.raises(ValueError, match="partition and offset"):
        ProduceAttempt(1, 0.0, Outcome.OK, 1.0)
    with pytest.raises(ValueError, match="no partition and offset"):
        ProduceAttempt(1, 0.0, Outcome.INFO, 1.0, 0, 3)
    with pytest.raises(ValueError, match="acks=all"):
        ProduceAttempt(1, 0.0, Outcome.OK, 1.0, 0, -1)
    with pytest.raises(ValueError, match="unique"):
        check(History("t", [ack(1, 0, 0), info(1)]))


def full_history() -> History:
    return History(
        "orders",
        attempts=[
            ack(10, 0, 0),
            ack(11, 1, 0, t=2.0),
            fail(12),
            info(13),
            ProduceAttempt(14, 3.0, Outcome.INFO),
        ],
        reads=[read(0, 0, 10), read(1, 0, 11), read(1, 1, None), read(1, 2, "zz")],
        drained=[DrainedPartition(0, 0, 1, 20.0)],
        faults=[FaultWindow("kill", "broker-1", 1.2, 1.5), FaultWindow("pause", "broker-2", 1.6)],
        leaders=[LeaderObservation(0.5, 0, 1, 0), LeaderObservation(1.5, 0, 2, 1)],
        controllers=[ControllerObservation(0.1, 1, 1)],
        isr=[IsrObservation(0.5, 0, (1, 2, 3)), IsrObservation(1.4, 0, (2, 3))],
        replica_logs=[ReplicaLog(1, 0, 1, {0: 10}), ReplicaLog(2, 1, 3, {0: 11, 1: None, 2: "zz"})],
        start=0.0,
        end=5.0,
        meta={"seed": 7, "nemesis": ["kill", "pause"]},
    )


def test_history_json_round_trip(tmp_path: Path) -> None:
    h = full_history()
    assert from_json(History, json.loads(json.dumps(to_json(h)))) == h
    h.dump(tmp_path / "history.json")
    assert History.load(tmp_path / "history.json") == h


def test_result_json_and_summary_rows_name_every_count() -> None:
    r = check(full_history())
    d = json.loads(json.dumps(to_json(r)))
    assert d["valid"] is False  # None and "zz" were read but never written
    assert d["acknowledged"] == 2 and d["failed"] == 1 and d["in_doubt"] == 2
    assert d["unavailability_by_fault"]["kill"]["windows"] == 1
    rows = dict(r.summary_rows())
    assert rows["valid"] == "NO"
    assert rows["acknowledged"] == "2"
    assert rows["unexpected values read"] == "2"
    assert rows["ISR shrinks"] == "1" and rows["leader changes"] == "1"
    assert rows["unavailable after kill: max / median s"].endswith("(1 faults)")
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in r.summary_rows())


# --- properties ---------------------------------------------------------------------------


@st.composite
def model_runs(draw: st.DrawFn) -> tuple[History, dict[int, list[int]]]:
    """A model log per partition and the history of writing and fully reading it: each
    value in the log is acked at its offset or in doubt, failed values are not in the log,
    in-doubt values may be missing; one consumer reads every partition in order."""
    partitions = draw(st.integers(1, 3))
    logs: dict[int, list[int]] = {p: [] for p in range(partitions)}
    attempts: list[ProduceAttempt] = []
    t = 0.0
    for value in range(draw(st.integers(1, 40))):
        t += draw(st.floats(0.001, 2.0))
        kind = draw(st.sampled_from(["ok", "ok", "ok", "fail", "info-written", "info-lost"]))
        p = draw(st.integers(0, partitions - 1))
        if kind == "ok":
            attempts.append(ProduceAttempt(value, t - 0.001, Outcome.OK, t, p, len(logs[p])))
            logs[p].append(value)
        elif kind == "fail":
            attempts.append(ProduceAttempt(value, t - 0.001, Outcome.FAIL, t))
        else:
            if kind == "info-written":
                logs[p].append(value)
            attempts.append(ProduceAttempt(value, t - 0.001, Outcome.INFO, t))
    reads = [ConsumerRead(t + 1 + o, p, o, v) for p, log in logs.items() for o, v in enumerate(log)]
    drained = [DrainedPartition(p, 0, len(log), t + 100) for p, log in logs.items()]
    replicas = [
        ReplicaLog(b, p, len(log), dict(enumerate(log)))
        for b in (1, 2, 3)
        for p, log in logs.items()
    ]
    return History("t", attempts, reads, drained, replica_logs=replicas, start=0.0, end=t), logs


@settings(max_examples=200, deadline=None)
@given(model_runs())
def test_everything_acked_and_read_is_valid(run: tuple[History, dict[int, list[int]]]) -> None:
    history, _ = run
    r = check(history)
    assert r.valid, r.problems
    assert r.ok == r.acknowledged == sum(a.outcome is Outcome.OK for a in history.attempts)
    assert r.lost == r.unseen == [] and r.moved == [] and r.duplicates == []


@settings(max_examples=200, deadline=None)
@given(model_runs(), st.data(), st.booleans())
def test_dropping_an_acked_read_makes_it_lost_iff_the_reads_go_past_it(
    run: tuple[History, dict[int, list[int]]], data: st.DataObject, keep_drain: bool
) -> None:
    history, logs = run
    acked = [a for a in history.attempts if a.outcome is Outcome.OK]
    if not acked:
        return
    victim = data.draw(st.sampled_from(acked))
    assert victim.partition is not None and victim.offset is not None
    history.reads = [r for r in history.reads if r.value != victim.value]
    if not keep_drain:
        history.drained = []
    r = check(history)
    read_past = victim.offset < len(logs[victim.partition]) - 1
    if keep_drain or read_past:
        assert r.lost == [victim.value] and r.unseen == []
        assert not r.valid
    else:  # it was the partition's last record and nothing says the reads reached it
        assert r.unseen == [victim.value] and r.lost == []
        assert r.valid
