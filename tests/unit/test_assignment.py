import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.controller.assignment import (
    assign_replicas,
    new_partitions_assignment,
    random_start_index,
    validate_manual_assignment,
)
from minikafka.protocol.errors import (
    ErrorCode,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    KafkaError,
    UnknownTopicOrPartitionError,
)

# --- assign_replicas -------------------------------------------------------------------------


def test_seeds_rule_on_sorted_brokers() -> None:
    assert assign_replicas([3, 1, 2], 4, 2) == {
        0: (1, 2),
        1: (2, 3),
        2: (3, 1),
        3: (1, 2),
    }


def test_non_contiguous_broker_ids_are_sorted_and_indexed() -> None:
    assert assign_replicas({30, 10, 20}, 3, 3) == {
        0: (10, 20, 30),
        1: (20, 30, 10),
        2: (30, 10, 20),
    }


def test_start_index_rotates_the_first_broker() -> None:
    assert assign_replicas([1, 2, 3], 2, 2, start_index=2) == {0: (3, 1), 1: (1, 2)}
    assert assign_replicas([1, 2, 3], 2, 2, start_index=5) == assign_replicas(
        [1, 2, 3], 2, 2, start_index=2
    )


def test_start_partition_continues_an_existing_topic() -> None:
    existing = assign_replicas([1, 2, 3], 2, 2)
    added = assign_replicas([1, 2, 3], 3, 2, start_partition=2)
    assert list(added) == [2, 3, 4]
    assert existing | added == assign_replicas([1, 2, 3], 5, 2)


def test_single_broker_rf_one() -> None:
    assert assign_replicas([7], 3, 1) == {0: (7,), 1: (7,), 2: (7,)}


def test_duplicate_broker_ids_count_once() -> None:
    assert assign_replicas([1, 1, 2], 2, 2) == {0: (1, 2), 1: (2, 1)}
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas([1, 1], 1, 2)


@pytest.mark.parametrize("num_partitions", [0, -1])
def test_invalid_partition_count(num_partitions: int) -> None:
    with pytest.raises(InvalidPartitionsError) as err:
        assign_replicas([1, 2], num_partitions, 1)
    assert err.value.code == ErrorCode.INVALID_PARTITIONS


def test_negative_start_partition() -> None:
    with pytest.raises(InvalidPartitionsError):
        assign_replicas([1, 2], 1, 1, start_partition=-1)


@pytest.mark.parametrize("rf", [0, -2])
def test_replication_factor_below_one(rf: int) -> None:
    with pytest.raises(InvalidReplicationFactorError) as err:
        assign_replicas([1, 2], 1, rf)
    assert err.value.code == ErrorCode.INVALID_REPLICATION_FACTOR


def test_replication_factor_larger_than_brokers_has_kafkas_message() -> None:
    with pytest.raises(InvalidReplicationFactorError) as err:
        assign_replicas([1, 2], 1, 3)
    assert err.value.message == "Replication factor: 3 larger than available brokers: 2."


def test_no_brokers() -> None:
    with pytest.raises(InvalidReplicationFactorError) as err:
        assign_replicas([], 1, 1)
    assert err.value.message == "Replication factor: 1 larger than available brokers: 0."


# --- random_start_index ----------------------------------------------------------------------


def test_random_start_index_is_reproducible_with_a_seed() -> None:
    assert random_start_index(5, 42) == random_start_index(5, 42)
    assert {random_start_index(5, seed) for seed in range(100)} == set(range(5))


def test_random_start_index_without_seed_is_in_range() -> None:
    assert all(0 <= random_start_index(3, None) < 3 for _ in range(50))


def test_random_start_index_without_brokers_defers_to_assign_replicas() -> None:
    assert random_start_index(0, 1) == 0
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas([], 1, 1, start_index=random_start_index(0, 1))


# --- validate_manual_assignment --------------------------------------------------------------


def test_valid_manual_assignment() -> None:
    validate_manual_assignment({0: [1, 2], 1: (2, 3), 2: [3, 1]}, {1, 2, 3})
    validate_manual_assignment({0: [5]}, [5, 6])


@pytest.mark.parametrize(
    ("assignment", "match"),
    [
        ({}, "at least one partition"),
        ({1: [1], 2: [2]}, "consecutive 0-based"),
        ({0: [1], 2: [2]}, "consecutive 0-based"),
        ({0: [1], -1: [2]}, "consecutive 0-based"),
        ({0: [1, 2], 1: []}, "partition 1 is empty"),
        ({0: []}, "partition 0 is empty"),
        ({0: [1, 2], 1: [3, 3]}, "Duplicate"),
        ({0: [1, 2], 1: [3]}, "Inconsistent replication factor"),
        ({0: [1], 1: [2, 3]}, "Inconsistent replication factor"),
        ({0: [1, 2], 1: [2, 9]}, r"Unknown broker\(s\).*partition 1: \[9\]"),
    ],
)
def test_invalid_manual_assignment(assignment: dict[int, list[int]], match: str) -> None:
    with pytest.raises(InvalidReplicaAssignmentError, match=match) as err:
        validate_manual_assignment(assignment, {1, 2, 3})
    assert err.value.code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


def test_generated_assignment_passes_validation() -> None:
    validate_manual_assignment(assign_replicas([1, 2, 3, 4], 6, 3), [1, 2, 3, 4])


# --- properties ------------------------------------------------------------------------------


@st.composite
def cluster_requests(draw: st.DrawFn) -> tuple[list[int], int, int, int]:
    brokers = draw(st.lists(st.integers(0, 1000), min_size=1, max_size=12, unique=True))
    num_partitions = draw(st.integers(1, 60))
    rf = draw(st.integers(1, len(brokers)))
    start_index = draw(st.integers(0, 50))
    return brokers, num_partitions, rf, start_index


@given(cluster_requests())
def test_every_partition_has_rf_distinct_known_brokers(
    request: tuple[list[int], int, int, int],
) -> None:
    brokers, num_partitions, rf, start_index = request
    result = assign_replicas(brokers, num_partitions, rf, start_index=start_index)
    assert list(result) == list(range(num_partitions))
    for replicas in result.values():
        assert len(replicas) == rf
        assert len(set(replicas)) == rf
        assert set(replicas) <= set(brokers)
    validate_manual_assignment(result, brokers)


@given(cluster_requests())
def test_leaders_spread_evenly(request: tuple[list[int], int, int, int]) -> None:
    brokers, num_partitions, rf, start_index = request
    result = assign_replicas(brokers, num_partitions, rf, start_index=start_index)
    leaders = Counter(replicas[0] for replicas in result.values())
    counts = [leaders[b] for b in brokers]
    assert max(counts) - min(counts) <= 1
    if num_partitions % len(brokers) == 0:
        assert set(counts) == {num_partitions // len(brokers)}


@given(cluster_requests())
def test_replicas_per_broker_balanced(request: tuple[list[int], int, int, int]) -> None:
    brokers, num_partitions, rf, start_index = request
    result = assign_replicas(brokers, num_partitions, rf, start_index=start_index)
    load = Counter(b for replicas in result.values() for b in replicas)
    full_rounds, rest = divmod(num_partitions, len(brokers))
    for b in brokers:
        # Each full round of n partitions puts rf replicas on every broker; the rest
        # (fewer than n consecutive partitions) add at most min(rest, rf) more.
        assert full_rounds * rf <= load[b] <= full_rounds * rf + min(rest, rf)
    if rest == 0:
        assert {load[b] for b in brokers} == {num_partitions * rf // len(brokers)}


@given(cluster_requests(), st.randoms())
def test_same_input_same_output_regardless_of_broker_order(
    request: tuple[list[int], int, int, int], rnd: random.Random
) -> None:
    brokers, num_partitions, rf, start_index = request
    shuffled = list(brokers)
    rnd.shuffle(shuffled)
    first = assign_replicas(brokers, num_partitions, rf, start_index=start_index)
    assert first == assign_replicas(brokers, num_partitions, rf, start_index=start_index)
    assert first == assign_replicas(shuffled, num_partitions, rf, start_index=start_index)


@given(cluster_requests(), st.integers(1, 30))
def test_adding_partitions_extends_the_same_rotation(
    request: tuple[list[int], int, int, int], added: int
) -> None:
    brokers, num_partitions, rf, start_index = request
    before = assign_replicas(brokers, num_partitions, rf, start_index=start_index)
    extra = assign_replicas(
        brokers, added, rf, start_partition=num_partitions, start_index=start_index
    )
    assert before | extra == assign_replicas(
        brokers, num_partitions + added, rf, start_index=start_index
    )


# --- new_partitions_assignment (CreatePartitions) ---------------------------------------------

# A 3-partition RF=2 topic created with start index 1 on brokers 1, 2, 3.
EXISTING = assign_replicas([1, 2, 3], 3, 2, start_index=1)


def test_existing_fixture_starts_at_broker_2() -> None:
    assert EXISTING == {0: (2, 3), 1: (3, 1), 2: (1, 2)}


def test_added_partitions_continue_the_rotation_from_partition_0s_first_replica() -> None:
    """Kafka's addPartitions: start index = the first broker whose id is at least partition
    0's first replica, partition ids counted from the current count."""
    added = new_partitions_assignment("t", EXISTING, [3, 1, 2], 5)
    assert added == {3: (2, 3), 4: (3, 1)}
    assert EXISTING | added == assign_replicas([1, 2, 3], 5, 2, start_index=1)


def test_start_index_when_partition_0s_first_broker_is_gone() -> None:
    # Broker 2 (partition 0's first replica) is not registered: the next id up (3, index 1)
    # is the start index, so partition 3 starts at index (3 + 1) % 3.
    assert new_partitions_assignment("t", EXISTING, [1, 3, 4], 4) == {3: (3, 4)}
    # No id at least as large: Kafka's max(0, indexWhere(...)) = the first broker.
    existing = {0: (9, 1)}
    assert new_partitions_assignment("t", existing, [1, 2, 3], 2) == {1: (2, 3)}


@given(cluster_requests(), st.integers(1, 30))
def test_added_partitions_extend_any_topic_created_with_the_same_brokers(
    request: tuple[list[int], int, int, int], added: int
) -> None:
    brokers, num_partitions, rf, start_index = request
    existing = assign_replicas(brokers, num_partitions, rf, start_index=start_index)
    new = new_partitions_assignment("t", existing, brokers, num_partitions + added)
    assert list(new) == list(range(num_partitions, num_partitions + added))
    assert existing | new == assign_replicas(
        brokers, num_partitions + added, rf, start_index=start_index % len(brokers)
    )


def test_manual_assignment_names_the_new_partitions_in_order() -> None:
    assert new_partitions_assignment("t", EXISTING, [1, 2, 3], 5, [[1, 3], [3, 2]]) == {
        3: (1, 3),
        4: (3, 2),
    }


def test_unknown_topic() -> None:
    with pytest.raises(UnknownTopicOrPartitionError, match=r"The topic .nope. does not exist\."):
        new_partitions_assignment("nope", {}, [1, 2, 3], 5)


@pytest.mark.parametrize(
    ("count", "message"),
    [
        (2, "Topic currently has 3 partitions, which is higher than the requested 2."),
        (0, "Topic currently has 3 partitions, which is higher than the requested 0."),
        (3, "Topic already has 3 partitions."),
    ],
)
def test_the_count_must_grow(count: int, message: str) -> None:
    with pytest.raises(InvalidPartitionsError) as err:
        new_partitions_assignment("t", EXISTING, [1, 2, 3], count)
    assert err.value.code == ErrorCode.INVALID_PARTITIONS == 37
    assert err.value.message == message


@pytest.mark.parametrize(
    ("assignments", "message"),
    [
        ([[1, 4], [5, 2]], "Unknown broker(s) in replica assignment: 4, 5."),
        ([[1, 2]], "Increasing the number of partitions by 2 but 1 assignments provided."),
        (
            [[1, 2], [2, 3], [3, 1]],
            "Increasing the number of partitions by 2 but 3 assignments provided.",
        ),
        ([[1, 2], []], "Cannot have replication factor of 0 for partition id 4."),
        (
            [[1, 1], [2, 3]],
            "Duplicate brokers not allowed in replica assignment: 1, 1 for partition id 3.",
        ),
        (
            [[1, 2, 3], [1]],
            "Inconsistent replication factor between partitions, partition 0 has 2 while "
            "partitions [3, 4] have replication factors [3, 1], respectively.",
        ),
    ],
)
def test_invalid_manual_assignments(assignments: list[list[int]], message: str) -> None:
    with pytest.raises(InvalidReplicaAssignmentError) as err:
        new_partitions_assignment("t", EXISTING, [1, 2, 3], 5, assignments)
    assert err.value.code == ErrorCode.INVALID_REPLICA_ASSIGNMENT == 39
    assert err.value.message == message


def test_count_is_checked_before_the_assignment() -> None:
    with pytest.raises(InvalidPartitionsError):
        new_partitions_assignment("t", EXISTING, [1, 2, 3], 3, [[9, 9]])


def test_too_few_brokers_for_the_topics_replication_factor() -> None:
    with pytest.raises(InvalidReplicationFactorError) as err:
        new_partitions_assignment("t", {0: (1, 2, 3)}, [1, 2], 2)
    assert err.value.message == "Replication factor: 3 larger than available brokers: 2."


def test_an_assignment_without_partition_0_is_an_unknown_server_error() -> None:
    with pytest.raises(KafkaError) as err:
        new_partitions_assignment("t", {1: (1, 2)}, [1, 2], 3)
    assert err.value.code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert "partition id 0 is missing" in err.value.message
