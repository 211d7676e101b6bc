from collections.abc import Mapping, Sequence

from hypothesis import given
from hypothesis import strategies as st

from minikafka.common import NO_LEADER, LeaderAndIsr, TopicPartition
from minikafka.controller.assignment import assign_replicas
from minikafka.rules.rebalance import partitions_to_rebalance


def state(leader: int, *isr: int) -> LeaderAndIsr:
    return LeaderAndIsr(leader, leader_epoch=1, isr=tuple(isr), controller_epoch=1)


def topic(
    name: str, num_partitions: int, rf: int, brokers: Sequence[int] = (1, 2, 3)
) -> dict[TopicPartition, tuple[int, ...]]:
    return {
        TopicPartition(name, p): replicas
        for p, replicas in assign_replicas(brokers, num_partitions, rf).items()
    }


def balanced(
    assignments: Mapping[TopicPartition, Sequence[int]],
) -> dict[TopicPartition, LeaderAndIsr]:
    return {tp: state(replicas[0], *replicas) for tp, replicas in assignments.items()}


def bounced(
    assignments: Mapping[TopicPartition, Sequence[int]], broker: int
) -> dict[TopicPartition, LeaderAndIsr]:
    """`broker` died (leadership moved to the next replica) and came back, caught up."""
    leadership = balanced(assignments)
    for tp, replicas in assignments.items():
        if replicas[0] == broker:
            leadership[tp] = state(replicas[1], *replicas)
    return leadership


def test_balanced_cluster_yields_nothing() -> None:
    assignments = topic("t", 6, 3) | topic("u", 4, 2)
    assert partitions_to_rebalance(assignments, balanced(assignments), {1, 2, 3}, 10) == []
    assert partitions_to_rebalance(assignments, balanced(assignments), {1, 2, 3}, 0) == []


def test_bounced_broker_gets_its_partitions_back_sorted() -> None:
    assignments = topic("b", 3, 2) | topic("a", 6, 3)
    result = partitions_to_rebalance(assignments, bounced(assignments, 2), {1, 2, 3}, 10)
    assert result == [
        TopicPartition("a", 1),
        TopicPartition("a", 4),
        TopicPartition("b", 1),
    ]


def test_only_the_imbalanced_broker_is_considered() -> None:
    assignments = topic("t", 20, 2)
    leadership = bounced(assignments, 3)
    # Broker 1 lost a single partition of its 7: 14% > 10%, so it is included too.
    leadership[TopicPartition("t", 0)] = state(2, 1, 2)
    # Broker 2 lost one of its 7 too, but its preferred replica is not in the ISR.
    leadership[TopicPartition("t", 1)] = state(3, 3)
    result = partitions_to_rebalance(assignments, leadership, {1, 2, 3}, 15)
    assert result == [TopicPartition("t", p) for p in (2, 5, 8, 11, 14, 17)]
    result = partitions_to_rebalance(assignments, leadership, {1, 2, 3}, 10)
    assert result == [TopicPartition("t", p) for p in (0, 2, 5, 8, 11, 14, 17)]


def test_exactly_at_threshold_does_not_trigger() -> None:
    assignments = topic("t", 30, 2)  # each broker prefers 10 partitions
    leadership = balanced(assignments)
    leadership[TopicPartition("t", 0)] = state(2, 1, 2)  # broker 1: 1 of 10 not led = 10%
    assert partitions_to_rebalance(assignments, leadership, {1, 2, 3}, 10) == []
    assert partitions_to_rebalance(assignments, leadership, {1, 2, 3}, 9) == [
        TopicPartition("t", 0)
    ]
    leadership[TopicPartition("t", 3)] = state(2, 1, 2)  # 2 of 10 = 20% > 10%
    assert partitions_to_rebalance(assignments, leadership, {1, 2, 3}, 10) == [
        TopicPartition("t", 0),
        TopicPartition("t", 3),
    ]


def test_not_live_preferred_replica_is_never_chosen() -> None:
    assignments = topic("t", 6, 3)
    leadership = bounced(assignments, 2)
    assert partitions_to_rebalance(assignments, leadership, {1, 3}, 10) == []


def test_preferred_replica_out_of_isr_is_never_chosen() -> None:
    assignments = topic("t", 6, 3)
    leadership = bounced(assignments, 2)
    lagging = TopicPartition("t", 1)
    leadership[lagging] = state(3, 3, 1)  # broker 2 has not caught up on this one yet
    result = partitions_to_rebalance(assignments, leadership, {1, 2, 3}, 10)
    assert result == [TopicPartition("t", 4)]


def test_offline_partition_counts_as_not_led() -> None:
    assignments = topic("t", 3, 2)
    leadership = balanced(assignments)
    leadership[TopicPartition("t", 0)] = state(NO_LEADER, 1)
    assert partitions_to_rebalance(assignments, leadership, {1, 2, 3}, 10) == [
        TopicPartition("t", 0)
    ]


def test_partition_without_leadership_counts_only_in_the_total() -> None:
    assignments = topic("t", 6, 2)  # broker 1 prefers partitions 0 and 3
    leadership = balanced(assignments)
    del leadership[TopicPartition("t", 0)]
    leadership[TopicPartition("t", 3)] = state(2, 1, 2)
    # 1 not led of 2 = 50%: triggers at 49, not at 50, and never picks the unknown one.
    assert partitions_to_rebalance(assignments, leadership, {1, 2, 3}, 50) == []
    assert partitions_to_rebalance(assignments, leadership, {1, 2, 3}, 49) == [
        TopicPartition("t", 3)
    ]


def test_excluded_topics_are_ignored_in_counts_and_results() -> None:
    doomed = topic("doomed", 9, 2)
    kept = topic("kept", 3, 2)
    assignments = doomed | kept
    leadership = bounced(doomed, 1) | balanced(kept)
    leadership[TopicPartition("kept", 0)] = state(2, 1, 2)
    # With "doomed" counted broker 1 leads 0 of 4; without it 0 of 1 — either way 100%.
    assert partitions_to_rebalance(assignments, leadership, {1, 2, 3}, 10) == [
        TopicPartition("doomed", 0),
        TopicPartition("doomed", 3),
        TopicPartition("doomed", 6),
        TopicPartition("kept", 0),
    ]
    assert partitions_to_rebalance(assignments, leadership, {1, 2, 3}, 10, excluded={"doomed"}) == [
        TopicPartition("kept", 0)
    ]
    # Excluded partitions do not dilute the ratio either: 1 not led of 1 (not of 4).
    leadership = balanced(doomed) | balanced(kept)
    leadership[TopicPartition("kept", 0)] = state(2, 1, 2)
    assert partitions_to_rebalance(assignments, leadership, {1, 2, 3}, 30) == []
    assert partitions_to_rebalance(assignments, leadership, {1, 2, 3}, 30, excluded={"doomed"}) == [
        TopicPartition("kept", 0)
    ]


def test_empty_inputs() -> None:
    assert partitions_to_rebalance({}, {}, {1}, 10) == []
    tp = TopicPartition("t", 0)
    assert partitions_to_rebalance({tp: ()}, {tp: state(1, 1)}, {1}, 10) == []


# --- properties ------------------------------------------------------------------------------


@st.composite
def clusters(
    draw: st.DrawFn,
) -> tuple[dict[TopicPartition, tuple[int, ...]], dict[TopicPartition, LeaderAndIsr], set[int]]:
    brokers = list(range(draw(st.integers(1, 5))))
    assignments = topic("t", draw(st.integers(1, 20)), draw(st.integers(1, len(brokers))), brokers)
    leadership = {}
    for tp, replicas in assignments.items():
        isr = draw(st.lists(st.sampled_from(replicas), unique=True))
        leader = draw(st.sampled_from([NO_LEADER, *replicas]))
        leadership[tp] = state(leader, *isr)
    live = draw(st.sets(st.sampled_from(brokers)))
    return assignments, leadership, live


@given(clusters(), st.integers(0, 100))
def test_chosen_partitions_can_take_a_preferred_election(
    cluster: tuple[
        dict[TopicPartition, tuple[int, ...]], dict[TopicPartition, LeaderAndIsr], set[int]
    ],
    percentage: int,
) -> None:
    assignments, leadership, live = cluster
    result = partitions_to_rebalance(assignments, leadership, live, percentage)
    assert result == sorted(set(result), key=lambda tp: (tp.topic, tp.partition))
    for tp in result:
        preferred = assignments[tp][0]
        assert leadership[tp].leader != preferred
        assert preferred in live
        assert preferred in leadership[tp].isr


@given(clusters())
def test_nothing_at_one_hundred_percent(
    cluster: tuple[
        dict[TopicPartition, tuple[int, ...]], dict[TopicPartition, LeaderAndIsr], set[int]
    ],
) -> None:
    assignments, leadership, live = cluster
    assert partitions_to_rebalance(assignments, leadership, live, 100) == []
