from hypothesis import given
from hypothesis import strategies as st

from minikafka.rules.election import (
    ElectionResult,
    ElectionType,
    controlled_shutdown_election,
    election_needed,
    new_partition_election,
    offline_partition_election,
    preferred_replica_election,
)

# --- offline ---------------------------------------------------------------------------------


def test_offline_picks_first_live_isr_member_in_assignment_order() -> None:
    # 1 is dead; 3 comes before 2 in the assignment, so 3 leads even though 2 is first in the ISR.
    result = offline_partition_election([1, 3, 2], [2, 3, 1], {2, 3}, False)
    assert result == ElectionResult(3, (2, 3))


def test_offline_skips_live_replicas_outside_the_isr() -> None:
    result = offline_partition_election([1, 2, 3], [3, 1], {2, 3}, False)
    assert result == ElectionResult(3, (3,))


def test_offline_new_isr_keeps_isr_order_and_drops_dead_members() -> None:
    result = offline_partition_election([1, 2, 3, 4], [4, 1, 3, 2], {2, 3, 4}, False)
    assert result == ElectionResult(2, (4, 3, 2))


def test_offline_isr_not_live_and_unclean_disabled_is_none() -> None:
    assert offline_partition_election([1, 2, 3], [1], {2, 3}, False) is None


def test_offline_unclean_picks_first_live_replica_alone_in_isr() -> None:
    result = offline_partition_election([1, 3, 2], [1], {2, 3}, True)
    assert result == ElectionResult(3, (3,), unclean=True)


def test_offline_clean_candidate_wins_even_when_unclean_enabled() -> None:
    result = offline_partition_election([1, 2, 3], [3, 1], {2, 3}, True)
    assert result == ElectionResult(3, (3,), unclean=False)


def test_offline_empty_isr() -> None:
    assert offline_partition_election([1, 2], [], {1, 2}, False) is None
    assert offline_partition_election([1, 2], [], {1, 2}, True) == ElectionResult(1, (1,), True)


def test_offline_no_live_replicas_is_none_even_unclean() -> None:
    assert offline_partition_election([1, 2], [1, 2], {5}, False) is None
    assert offline_partition_election([1, 2], [1, 2], {5}, True) is None
    assert offline_partition_election([1, 2], [1, 2], set(), True) is None


def test_offline_ignores_live_isr_members_that_are_not_assigned() -> None:
    assert offline_partition_election([1, 2], [9], {2, 9}, False) is None


# --- preferred -------------------------------------------------------------------------------


def test_preferred_elects_first_replica_with_isr_unchanged() -> None:
    result = preferred_replica_election([2, 1, 3], [1, 3, 2], {1, 2, 3})
    assert result == ElectionResult(2, (1, 3, 2))


def test_preferred_isr_unchanged_even_with_dead_members() -> None:
    assert preferred_replica_election([2, 1], [1, 2], {2}) == ElectionResult(2, (1, 2))


def test_preferred_not_live_is_none() -> None:
    assert preferred_replica_election([2, 1, 3], [1, 2, 3], {1, 3}) is None


def test_preferred_not_in_isr_is_none_even_if_others_qualify() -> None:
    assert preferred_replica_election([2, 1, 3], [1, 3], {1, 2, 3}) is None


def test_preferred_empty_isr_or_assignment_is_none() -> None:
    assert preferred_replica_election([1, 2], [], {1, 2}) is None
    assert preferred_replica_election([], [1], {1}) is None


# --- controlled shutdown ---------------------------------------------------------------------


def test_controlled_shutdown_moves_leadership_off_shutting_down_leader() -> None:
    result = controlled_shutdown_election([1, 2, 3], [1, 2, 3], {1, 2, 3}, {1})
    assert result == ElectionResult(2, (2, 3))


def test_controlled_shutdown_skips_live_non_isr_and_keeps_isr_order() -> None:
    result = controlled_shutdown_election([1, 2, 3, 4], [4, 1, 3], {1, 2, 3, 4}, {1})
    assert result == ElectionResult(3, (4, 3))


def test_controlled_shutdown_removes_every_shutting_down_broker_from_isr() -> None:
    result = controlled_shutdown_election([1, 2, 3], [1, 2, 3], {1, 2, 3}, {1, 3})
    assert result == ElectionResult(2, (2,))


def test_controlled_shutdown_prefers_a_leader_that_is_not_leaving_next() -> None:
    # 2 asked to shut down too (its request waits): 3 leads, 2 stays in the ISR until then.
    result = controlled_shutdown_election([1, 2, 3], [1, 2, 3], {1, 2, 3}, {1}, {2})
    assert result == ElectionResult(3, (2, 3))


def test_controlled_shutdown_falls_back_to_a_broker_leaving_next() -> None:
    # Everyone else is leaving too: the partition still moves, as Kafka would move it.
    result = controlled_shutdown_election([1, 2, 3], [1, 2, 3], {1, 2, 3}, {1}, {2, 3})
    assert result == ElectionResult(2, (2, 3))
    assert controlled_shutdown_election([1, 2, 3], [1, 3], {1, 2, 3}, {1}, {3}) == (
        ElectionResult(3, (3,))
    )


def test_controlled_shutdown_skips_dead_isr_members() -> None:
    # The ISR is not filtered by liveness here (Kafka: only shutting-down brokers leave it).
    result = controlled_shutdown_election([1, 2, 3], [1, 2, 3], {1, 3}, {1})
    assert result == ElectionResult(3, (2, 3))


def test_controlled_shutdown_sole_isr_member_shutting_down_is_none() -> None:
    assert controlled_shutdown_election([1, 2], [1], {1, 2}, {1}) is None


def test_controlled_shutdown_no_live_or_empty_isr_is_none() -> None:
    assert controlled_shutdown_election([1, 2], [1, 2], set(), set()) is None
    assert controlled_shutdown_election([1, 2], [], {1, 2}, set()) is None


def test_controlled_shutdown_nobody_shutting_down_keeps_current_choice() -> None:
    assert controlled_shutdown_election([1, 2], [2, 1], {1, 2}, set()) == ElectionResult(1, (2, 1))


# --- new partition ---------------------------------------------------------------------------


def test_new_partition_first_live_replica_and_all_live_replicas_in_isr() -> None:
    assert new_partition_election([3, 1, 2], {1, 2, 3}) == ElectionResult(3, (3, 1, 2))
    assert new_partition_election([3, 1, 2], {1, 2}) == ElectionResult(1, (1, 2))


def test_new_partition_ignores_live_brokers_not_assigned() -> None:
    assert new_partition_election([3, 1], {1, 7}) == ElectionResult(1, (1,))


def test_new_partition_no_live_replicas_is_none() -> None:
    assert new_partition_election([1, 2], {3}) is None
    assert new_partition_election([], {1}) is None


# --- properties ------------------------------------------------------------------------------

BROKERS = st.integers(min_value=0, max_value=7)
assignments = st.lists(BROKERS, min_size=1, max_size=5, unique=True)
broker_sets = st.sets(BROKERS, max_size=8)


@st.composite
def partition_states(draw: st.DrawFn) -> tuple[list[int], list[int], set[int]]:
    """An assignment, an ISR drawn from it (in any order), and a set of live brokers."""
    assignment = draw(assignments)
    isr = draw(st.lists(st.sampled_from(assignment), unique=True))
    return assignment, isr, draw(broker_sets)


@given(partition_states(), st.booleans())
def test_offline_properties(state: tuple[list[int], list[int], set[int]], unclean: bool) -> None:
    assignment, isr, live = state
    result = offline_partition_election(assignment, isr, live, unclean)
    clean_candidates = set(isr) & live & set(assignment)
    if result is None:
        assert not clean_candidates
        assert not unclean or not (live & set(assignment))
        return
    assert result.leader in live
    assert result.leader in assignment
    assert result.leader in result.isr
    assert set(result.isr) <= live
    assert len(set(result.isr)) == len(result.isr)
    if result.unclean:
        assert unclean
        assert not clean_candidates
        assert result.isr == (result.leader,)
    else:
        assert result.leader in isr
        assert result.isr == tuple(r for r in isr if r in live)


@given(partition_states())
def test_offline_clean_result_exists_iff_live_isr_replica_exists(
    state: tuple[list[int], list[int], set[int]],
) -> None:
    assignment, isr, live = state
    result = offline_partition_election(assignment, isr, live, False)
    assert (result is not None) == bool(set(isr) & live & set(assignment))
    assert result is None or not result.unclean


@given(partition_states())
def test_offline_unclean_never_none_when_a_replica_is_live(
    state: tuple[list[int], list[int], set[int]],
) -> None:
    assignment, isr, live = state
    result = offline_partition_election(assignment, isr, live, True)
    assert (result is not None) == bool(live & set(assignment))


@given(partition_states())
def test_preferred_properties(state: tuple[list[int], list[int], set[int]]) -> None:
    assignment, isr, live = state
    result = preferred_replica_election(assignment, isr, live)
    ok = assignment[0] in live and assignment[0] in isr
    assert (result is not None) == ok
    if result is not None:
        assert result == ElectionResult(assignment[0], tuple(isr))


@given(partition_states(), broker_sets)
def test_controlled_shutdown_properties(
    state: tuple[list[int], list[int], set[int]], shutting_down: set[int]
) -> None:
    assignment, isr, live = state
    result = controlled_shutdown_election(assignment, isr, live, shutting_down)
    candidates = (set(isr) & live & set(assignment)) - shutting_down
    assert (result is not None) == bool(candidates)
    if result is not None:
        assert result.leader in candidates
        assert result.leader in result.isr
        assert not set(result.isr) & shutting_down
        assert not result.unclean


@given(assignments, broker_sets)
def test_new_partition_properties(assignment: list[int], live: set[int]) -> None:
    result = new_partition_election(assignment, live)
    assert (result is not None) == bool(live & set(assignment))
    if result is not None:
        assert result.leader == result.isr[0]
        assert set(result.isr) == live & set(assignment)
        assert list(result.isr) == [r for r in assignment if r in live]


# --- an admin's ElectLeaders: whether an election is needed -------------------------------------


def test_preferred_election_needed_while_another_replica_leads() -> None:
    assert election_needed(ElectionType.PREFERRED, [1, 2, 3], 2, {1, 2, 3})
    assert election_needed(ElectionType.PREFERRED, [1, 2, 3], -1, {2, 3})
    assert not election_needed(ElectionType.PREFERRED, [1, 2, 3], 1, {1, 2, 3})


def test_unclean_election_needed_only_without_a_live_leader() -> None:
    assert not election_needed(ElectionType.UNCLEAN, [1, 2], 2, {1, 2})
    # Not the preferred replica, but alive: left alone.
    assert not election_needed(ElectionType.UNCLEAN, [1, 2], 2, {2})
    assert election_needed(ElectionType.UNCLEAN, [1, 2], -1, {2})
    # A leader on a broker the controller knows dead (its state znode not yet rewritten).
    assert election_needed(ElectionType.UNCLEAN, [1, 2], 1, {2})


@given(
    st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True),
    st.integers(-1, 5),
    st.sets(st.integers(0, 5)),
)
def test_an_election_needed_is_one_that_could_change_the_leader(
    assignment: list[int], leader: int, live: set[int]
) -> None:
    # Preferred: needed exactly when the preferred replica does not lead; unclean: exactly
    # when the leader is missing or dead.
    assert election_needed(ElectionType.PREFERRED, assignment, leader, live) == (
        leader != assignment[0]
    )
    assert election_needed(ElectionType.UNCLEAN, assignment, leader, live) == (leader not in live)
