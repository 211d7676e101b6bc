"""The reassign nemesis' pure choice of where partitions move (nemesis.choose_replicas,
choose_moves): a new replica list of the same size, distinct brokers, all live, never the
current list, and reproducible from the pick; None only when no such list exists."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from minikafka.chaos.nemesis import choose_moves, choose_replicas

brokers = st.lists(st.integers(0, 9), min_size=1, max_size=8, unique=True)
picks = st.integers(0, (1 << 30) - 1)


@st.composite
def replicas_and_live(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    current = draw(st.lists(st.integers(0, 9), min_size=1, max_size=5, unique=True))
    live = draw(brokers)
    return current, live


def possible(current: list[int], live: list[int]) -> bool:
    """Whether any ordered list of len(current) distinct live brokers differs from current."""
    if len(set(live)) < len(current):
        return False
    return not (len(current) == 1 and set(live) == set(current))


@given(replicas_and_live(), picks)
def test_a_new_replica_list_has_the_same_size_distinct_live_brokers_and_differs(
    case: tuple[list[int], list[int]], pick: int
) -> None:
    current, live = case
    target = choose_replicas(current, live, pick)
    if not possible(current, live):
        assert target is None
        return
    assert target is not None
    assert len(target) == len(current)
    assert len(set(target)) == len(target)
    assert set(target) <= set(live)
    assert target != tuple(current)
    assert choose_replicas(current, live, pick) == target  # the same pick, the same move


@given(st.permutations([1, 2, 3]), picks)
def test_all_replicas_on_the_only_live_brokers_are_reordered(current: list[int], pick: int) -> None:
    """Three replicas on the only three live brokers: a reorder is the only move."""
    target = choose_replicas(current, [3, 1, 2], pick)
    assert target is not None and sorted(target) == [1, 2, 3] and target != tuple(current)


def test_each_kind_of_move_is_chosen() -> None:
    """Over picks, the choice reorders the same replicas (the preferred leader changes),
    replaces one replica with an outside broker, and draws new lists."""
    current = (1, 2, 3)
    targets = {choose_replicas(current, [1, 2, 3, 4, 5], pick) for pick in range(200)}
    assert any(t is not None and set(t) == {1, 2, 3} for t in targets)  # reorder
    assert any(t is not None and len(set(t) & {1, 2, 3}) == 2 for t in targets)  # one replaced
    assert any(t is not None and len(set(t) - {1, 2, 3}) >= 2 for t in targets)  # drawn anew


@given(
    st.dictionaries(
        st.integers(0, 7), st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True),
        min_size=1, max_size=8,
    ),
    st.lists(st.integers(0, 5), min_size=1, max_size=6, unique=True),
    picks,
)  # fmt: skip
def test_moves_are_of_partitions_of_the_topic_each_to_a_valid_new_list(
    assignment: dict[int, list[int]], live: list[int], pick: int
) -> None:
    moves = choose_moves(assignment, live, pick)
    assert set(moves) <= set(assignment)
    for p, target in moves.items():
        assert len(target) == len(assignment[p]) and len(set(target)) == len(target)
        assert set(target) <= set(live) and target != tuple(assignment[p])
    if all(possible(r, live) for r in assignment.values()):
        assert moves, "at least one partition moves when every one can"
    assert choose_moves(assignment, live, pick) == moves
