"""Replication throttles' rules (KIP-73): the throttled replica lists and the quota's rate."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.clock import ManualClock
from minikafka.common import TopicPartition
from minikafka.rules.replication_quota import (
    UNLIMITED_RATE,
    ReplicationQuotaManager,
    SampledRate,
    ThrottledReplicas,
    should_throttle,
    throttled_replica_list_error,
)

NAME = "leader.replication.throttled.replicas"


@pytest.mark.parametrize("value", ["", "*", " * ", "0:1", "0:1,1:2", "0:1, 1:2", "0:1,,2:3"])
def test_kafkas_throttled_replica_lists_are_accepted(value: str) -> None:
    assert throttled_replica_list_error(NAME, value) is None


@pytest.mark.parametrize("value", ["0", "a:1", "0:1,*", "0:-1", "0-1", "1:2:3", "**"])
def test_malformed_replica_lists_are_refused_with_kafkas_message(value: str) -> None:
    error = throttled_replica_list_error(NAME, value)
    assert error is not None
    assert error.startswith(f"Invalid value {value} for configuration {NAME}: {NAME} must be")


def test_a_broker_throttles_the_partitions_listed_with_its_own_id() -> None:
    parsed = ThrottledReplicas.parse("0:1, 1:2,2:1")
    assert [p for p in range(3) if parsed.throttles(p, 1)] == [0, 2]
    assert [p for p in range(3) if parsed.throttles(p, 2)] == [1]
    star = ThrottledReplicas.parse("*")
    assert star.throttles(7, 9) and star
    assert not ThrottledReplicas.parse("")


@given(st.lists(st.tuples(st.integers(0, 999), st.integers(0, 99)), max_size=20))
def test_every_listed_replica_is_throttled_and_no_other(pairs: list[tuple[int, int]]) -> None:
    value = ",".join(f"{p}:{b}" for p, b in pairs)
    assert throttled_replica_list_error(NAME, value) is None
    parsed = ThrottledReplicas.parse(value)
    for p, b in pairs:
        assert parsed.throttles(p, b)
    assert not parsed.throttles(1000, 0)


def test_the_rate_is_the_windows_bytes_over_at_least_one_window() -> None:
    rate = SampledRate(samples=11, window_ms=1000)
    assert rate.measure(0) == 0
    rate.record(500, 0)
    assert rate.measure(0) == 500  # over one whole window, not over 0 ms
    assert rate.measure(500) == 500
    rate.record(1500, 1000)
    assert rate.measure(2000) == pytest.approx(2000 / 2)


def test_old_windows_stop_counting() -> None:
    rate = SampledRate(samples=3, window_ms=1000)
    rate.record(3000, 0)
    assert rate.measure(2999) == pytest.approx(3000 / 2.999)
    assert rate.measure(3000) == 0  # 3 windows on: the first window's bytes are gone


@given(
    st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 10**6)), min_size=1, max_size=60),
    st.integers(1, 11),
)
def test_the_rate_never_exceeds_what_was_recorded_in_the_retained_span(
    steps: list[tuple[int, int]], samples: int
) -> None:
    rate = SampledRate(samples=samples, window_ms=1000)
    now = 0
    total = 0
    for gap, size in steps:
        now += gap
        rate.record(size, now)
        total += size
        # Never more than everything over one window, never negative.
        assert 0 <= rate.measure(now) <= total


def test_the_quota_is_exceeded_above_its_bound_and_recovers_as_time_passes() -> None:
    clock = ManualClock(0)
    quota = ReplicationQuotaManager(clock, bound=1000)
    quota.record(1000)
    assert not quota.is_quota_exceeded()  # 1000 B over 1 s: at the bound, acceptable
    quota.record(1)
    assert quota.is_quota_exceeded()
    clock.advance(1100)
    assert not quota.is_quota_exceeded()  # 1001 B over 1.1 s


def test_held_to_its_bound_a_steady_sender_averages_the_bound() -> None:
    """A sender that sends a chunk whenever the quota allows it (as a leader answering a
    follower's fetches) averages about the bound over a long run."""
    clock = ManualClock(0)
    quota = ReplicationQuotaManager(clock, bound=1_000_000)
    sent = 0
    for _ in range(30_000):  # 30 s in 1 ms steps
        if not quota.is_quota_exceeded():
            quota.record(100_000)
            sent += 100_000
        clock.advance(1)
    assert sent / 30 == pytest.approx(1_000_000, rel=0.05)


def test_no_bound_is_never_exceeded() -> None:
    quota = ReplicationQuotaManager(ManualClock(0), bound=UNLIMITED_RATE)
    quota.record(10**15)
    assert not quota.is_quota_exceeded()


def test_only_throttled_replicas_out_of_sync_are_held_back_and_only_over_the_quota() -> None:
    clock = ManualClock(0)
    quota = ReplicationQuotaManager(clock, bound=10)
    tp = TopicPartition("t", 0)
    listed = ThrottledReplicas.parse("0:1")
    assert not should_throttle(quota, listed, tp, 1, in_sync=False)  # quota not exceeded
    quota.record(100)
    assert should_throttle(quota, listed, tp, 1, in_sync=False)
    assert not should_throttle(quota, listed, tp, 1, in_sync=True)
    assert not should_throttle(quota, listed, tp, 2, in_sync=False)  # another broker's
    assert not should_throttle(quota, ThrottledReplicas(), tp, 1, in_sync=False)


def test_the_tools_throttles_follow_kafkas_move_map() -> None:
    from minikafka.cli.reassign_partitions import (
        follower_throttles,
        leader_throttles,
        proposed_move_map,
        reassigning_brokers,
    )
    from minikafka.client.controller_calls import OngoingReassignment

    a0, a1, b0 = TopicPartition("a", 0), TopicPartition("a", 10), TopicPartition("b", 0)
    moves = proposed_move_map(
        # a-10 is moving 1,2 -> 2,4 (4 being added): resubmitted, its sources stay 1,2.
        {a1: OngoingReassignment((2, 4, 1), (4,), (1,))},
        {a0: [2, 3], a1: [2, 4], b0: [5]},
        {a0: [1, 2], a1: [2, 4, 1], b0: [5]},
    )
    # Kafka's TreeSet of the "partition:broker" strings: sorted as text.
    assert leader_throttles(moves) == {"a": "0:1,0:2,10:1,10:2", "b": "0:5"}
    assert follower_throttles(moves) == {"a": "0:3,10:4", "b": ""}
    assert reassigning_brokers(moves) == [1, 2, 3, 4, 5]
