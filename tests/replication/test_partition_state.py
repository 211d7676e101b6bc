"""The leader-side replication rules of design §7, driven step by step with explicit times."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from minikafka.common import TopicPartition
from minikafka.replication.partition_state import (
    UNKNOWN_OFFSET,
    IsrChangePropagation,
    LeaderReplicaState,
)

LAG_MS = 10_000


def leader(
    replicas: tuple[int, ...] = (1, 2, 3),
    isr: tuple[int, ...] = (1, 2, 3),
    leo: int = 0,
    now: int = 1_000,
) -> LeaderReplicaState:
    s = LeaderReplicaState(local_broker_id=1, replica_lag_time_max_ms=LAG_MS)
    s.become_leader(replicas, isr, leo, now)
    return s


def test_becoming_leader_resets_followers_and_holds_the_hw_back() -> None:
    s = leader(leo=10, isr=(1, 2), now=5_000)
    f2, f3 = s.followers[2], s.followers[3]
    assert (f2.log_end_offset, f3.log_end_offset) == (UNKNOWN_OFFSET, UNKNOWN_OFFSET)
    assert f2.last_caught_up_time_ms == 5_000  # ISR member: counts as caught up now
    assert f3.last_caught_up_time_ms == 0  # outside the ISR
    assert f2.last_fetch_leader_log_end_offset == 10
    assert s.leader_epoch_start_offset == 10
    # §7.5: nothing is known about the ISR follower yet, so the HW cannot advance.
    assert s.high_watermark_candidate(10, {1, 2}, 5_000) == UNKNOWN_OFFSET
    assert 1 not in s.followers


def test_a_new_epoch_on_the_same_leader_keeps_when_a_follower_was_last_caught_up() -> None:
    """The controller removes a dead follower from the ISR with a new leader epoch: the rule
    starts over (out of the ISR: not recently caught up), but the leader still knows when
    the follower last was, and reports it."""
    s = leader(leo=10, now=1_000)
    s.followers[2].update_fetch_state(10, 0, leader_end_offset=10, now_ms=4_000)
    s.become_leader((1, 2, 3), (1, 3), 10, 9_000)
    f2 = s.followers[2]
    assert f2.last_caught_up_time_ms == 0  # the rule's clock, as Kafka resets it
    assert f2.last_known_caught_up_ms == 4_000
    assert s.followers[3].last_known_caught_up_ms == 9_000
    # Another epoch later it is still the time it was last seen caught up.
    s.become_leader((1, 2, 3), (1, 3), 10, 12_000)
    assert s.followers[2].last_known_caught_up_ms == 4_000
    # A broker that only now becomes leader never saw it.
    assert leader(isr=(1, 3), now=9_000).followers[2].last_known_caught_up_ms == 0


def test_fetch_at_leader_end_marks_caught_up_now() -> None:
    s = leader(leo=10)
    s.followers[2].update_fetch_state(10, 0, leader_end_offset=10, now_ms=7_000)
    assert s.followers[2].last_caught_up_time_ms == 7_000
    assert s.followers[2].log_end_offset == 10


def test_fetch_reaching_previous_leader_end_marks_caught_up_at_previous_fetch() -> None:
    s = leader(leo=10, now=1_000)
    f = s.followers[2]
    f.update_fetch_state(4, 0, leader_end_offset=10, now_ms=2_000)  # behind
    f.update_fetch_state(10, 0, leader_end_offset=15, now_ms=3_000)  # reached what was the end
    assert f.last_caught_up_time_ms == 2_000
    assert f.last_fetch_leader_log_end_offset == 15 and f.last_fetch_time_ms == 3_000


def test_fetch_still_behind_does_not_move_caught_up_time() -> None:
    s = leader(leo=10, isr=(1,), now=1_000)
    f = s.followers[3]
    f.update_fetch_state(2, 0, leader_end_offset=10, now_ms=2_000)
    f.update_fetch_state(5, 0, leader_end_offset=20, now_ms=3_000)
    assert f.last_caught_up_time_ms == 0


def test_hw_is_min_leo_of_isr_and_recently_caught_up_followers() -> None:
    t = 100_000
    s = leader(leo=10, isr=(1, 2), now=t)
    s.followers[2].update_fetch_state(8, 0, leader_end_offset=10, now_ms=t + 100)
    s.followers[3].update_fetch_state(3, 0, leader_end_offset=10, now_ms=t + 100)
    # Follower 3 is outside the ISR and has never caught up: it does not hold the HW.
    assert s.high_watermark_candidate(10, {1, 2}, t + 200) == 8
    # Once it has caught up recently, it counts even outside the ISR.
    s.followers[3].update_fetch_state(10, 0, leader_end_offset=10, now_ms=t + 300)
    s.followers[3].update_fetch_state(5, 0, leader_end_offset=12, now_ms=t + 400)
    assert s.high_watermark_candidate(12, {1, 2}, t + 500) == 5
    # ... until replica.lag.time.max.ms has passed since it was last caught up.
    assert s.high_watermark_candidate(12, {1, 2}, t + 300 + LAG_MS + 1) == 8


def test_single_replica_hw_is_leo() -> None:
    s = leader(replicas=(1,), isr=(1,))
    assert s.high_watermark_candidate(42, {1}, 0) == 42


def test_shrink_selects_lagging_isr_followers_only() -> None:
    s = leader(leo=0, now=0)
    s.followers[2].update_fetch_state(10, 0, leader_end_offset=10, now_ms=100)
    # 3 never fetched: its caught-up time is the become-leader time (0).
    assert s.out_of_sync_replicas(10, {1, 2, 3}, LAG_MS) == set()
    assert s.out_of_sync_replicas(10, {1, 2, 3}, LAG_MS + 1) == {3}
    # A follower at the leader's LEO is never out of sync, however long ago it caught up.
    assert s.out_of_sync_replicas(10, {1, 2}, 10 * LAG_MS) == set()
    # A follower outside the ISR cannot be removed from it.
    assert s.out_of_sync_replicas(10, {1, 2}, LAG_MS + 1) == set()


def test_a_follower_whose_fetch_connection_closed_leaves_after_the_bound_unless_it_fetched() -> (
    None
):
    t = 1_000_000  # a monotonic clock far from 0
    s = leader(leo=10, now=t)
    for b in (2, 3):
        s.followers[b].update_fetch_state(10, 0, leader_end_offset=10, now_ms=t + 100)
    lost = {2: t + 200, 3: t + 200}
    # Not yet: the bound has not passed since the connections closed.
    assert s.disconnected_replicas({1, 2, 3}, lost, t + 200 + 1_999, 2_000) == set()
    # 3 fetched again (a new connection) after its old one closed: it stays.
    s.followers[3].update_fetch_state(10, 0, leader_end_offset=10, now_ms=t + 300)
    # Caught up or not, 2 is presumed gone: no fetch since its connection closed.
    assert s.disconnected_replicas({1, 2, 3}, lost, t + 2_200, 2_000) == {2}
    # Only ISR members, only followers of this partition, and never when turned off (-1).
    assert s.disconnected_replicas({1, 3}, lost, t + 2_200, 2_000) == set()
    assert s.disconnected_replicas({1, 2, 3}, {4: 0}, t + 10_000, 2_000) == set()
    assert s.disconnected_replicas({1, 2, 3}, lost, 10**9, -1) == set()
    # 0: at once.
    assert s.disconnected_replicas({1, 2, 3}, lost, t + 200, 0) == {2}
    # Out of the ISR, it holds the HW back no longer, though it was caught up 2 s ago
    # (well within replica.lag.time.max.ms).
    assert s.high_watermark_candidate(20, {1, 3}, t + 2_300) == 10  # 3 and 2 are at 10
    s.followers[3].update_fetch_state(20, 0, leader_end_offset=20, now_ms=t + 2_300)
    assert s.high_watermark_candidate(20, {1, 3}, t + 2_300) == 10  # 2 still counts
    s.presume_gone({2})
    assert s.high_watermark_candidate(20, {1, 3}, t + 2_300) == 20
    assert s.followers[2].last_known_caught_up_ms == t + 100  # for reports, still known
    # A fetch brings it back into the count.
    s.followers[2].update_fetch_state(15, 0, leader_end_offset=20, now_ms=t + 2_400)
    assert s.high_watermark_candidate(25, {1, 3}, t + 2_400) == 15


def test_a_connection_lost_before_this_broker_became_leader_does_not_count() -> None:
    s = leader(leo=10, now=1_000)
    # Its connection to this broker closed before the LeaderAndIsr that made it leader:
    # becoming leader counts as a fetch by every follower (its clock starts over, §7.5).
    assert s.disconnected_replicas({1, 2, 3}, {2: 500}, 100_000, 2_000) == set()


def test_expand_needs_hw_and_epoch_start() -> None:
    s = leader(leo=20, isr=(1, 2), now=0)
    s.followers[3].update_fetch_state(15, 0, leader_end_offset=20, now_ms=10)
    assert not s.can_join_isr(3, high_watermark=18, isr={1, 2})  # below HW
    assert not s.can_join_isr(3, high_watermark=12, isr={1, 2})  # below the epoch start (20)
    s.followers[3].update_fetch_state(20, 0, leader_end_offset=25, now_ms=20)
    assert s.can_join_isr(3, high_watermark=18, isr={1, 2})
    assert not s.can_join_isr(3, high_watermark=18, isr={1, 2, 3})  # already in


@given(
    st.lists(
        st.tuples(st.sampled_from([2, 3]), st.integers(0, 5), st.integers(0, 3_000)),
        max_size=40,
    )
)
def test_hw_candidate_never_exceeds_an_isr_member_leo(steps: list[tuple[int, int, int]]) -> None:
    """Whatever the fetch history, the HW candidate is at most every known ISR LEO and at most
    the leader's LEO."""
    s = leader(leo=0, now=0)
    leo, now = 0, 0
    isr = {1, 2, 3}
    for follower, appended, dt in steps:
        leo += appended
        now += dt
        f = s.followers[follower]
        fetch = min(leo, max(f.log_end_offset, 0) + appended)
        f.update_fetch_state(fetch, 0, leader_end_offset=leo, now_ms=now)
        cand = s.high_watermark_candidate(leo, isr, now)
        assert cand <= leo
        assert all(cand <= s.followers[r].log_end_offset for r in (2, 3) if r in isr) or cand == -1


def test_isr_change_propagation_waits_for_quiet_or_max_delay() -> None:
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    prop = IsrChangePropagation(blackout_ms=5000, max_delay_ms=60000, now_ms=0)
    assert prop.take_if_due(100_000) == []  # nothing changed
    prop.record_change(a, 1_000)
    assert prop.take_if_due(6_000) == []  # exactly 5 s of quiet is not yet "more than"
    assert prop.take_if_due(6_001) == [a]
    assert prop.take_if_due(20_000) == []  # forgotten once announced
    # A change every 4 s never leaves 5 s of quiet; the 60 s cap forces propagation.
    t = 6_001
    announced: list[int] = []
    while t < 6_001 + 70_000:
        t += 4_000
        prop.record_change(b, t)
        if prop.take_if_due(t):
            announced.append(t)
    assert announced and announced[0] - 6_001 > 60_000 and announced[0] - 6_001 <= 64_000


def test_failed_propagation_is_retried_with_the_next_batch() -> None:
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    prop = IsrChangePropagation(blackout_ms=10, max_delay_ms=100, now_ms=0)
    prop.record_change(a, 0)
    taken = prop.take_if_due(11)
    prop.put_back(taken)
    prop.record_change(b, 20)
    assert prop.take_if_due(31) == [a, b]


def test_a_new_epoch_on_the_same_leader_keeps_each_followers_log_end() -> None:
    """Kafka's makeLeader resets the remote replicas' offsets only for a new leader: a
    follower's fetch answered from an idle session (not re-read) must not leave its LEO
    unknown, which would hold the HW back until its next listed fetch."""
    s = leader(leo=10, now=100_000)
    s.followers[2].update_fetch_state(10, 3, leader_end_offset=10, now_ms=101_000)
    s.followers[3].update_fetch_state(7, 0, leader_end_offset=10, now_ms=101_000)
    s.become_leader((1, 2, 3, 4), (1, 2, 3), 10, 103_000, new_leader=False)
    assert (s.followers[2].log_end_offset, s.followers[2].log_start_offset) == (10, 3)
    assert s.followers[3].log_end_offset == 7
    assert s.followers[4].log_end_offset == UNKNOWN_OFFSET  # a replica being added
    assert s.followers[2].last_caught_up_time_ms == 103_000  # the clock still starts over
    assert s.high_watermark_candidate(10, {1, 2, 3}, 103_000) == 7
    # A broker that leads again after leading someone else's epoch knows nothing.
    s.become_leader((1, 2, 3), (1, 2, 3), 10, 104_000)
    assert s.followers[2].log_end_offset == UNKNOWN_OFFSET
