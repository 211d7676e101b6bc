"""Rack-aware replica placement, Kafka's `AdminUtils.assignReplicasToBrokersRackAware`
(controller/assignment.py): Kafka's own example, and the properties Kafka's AdminRackAwareTest
checks, for any start index and shift: no broker twice in a partition, no rack twice while
the replication factor allows it, and with racks of equal size, leaders and replicas spread
evenly over the brokers."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.controller.assignment import (
    AdminOperationError,
    assign_replicas,
    assign_replicas_rack_aware,
    assign_replicas_to_brokers,
    new_partitions_assignment,
    rack_alternated_brokers,
)
from minikafka.protocol.errors import ErrorCode, InvalidReplicationFactorError

# Kafka's AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers.
KAFKA_RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}


def test_kafkas_example() -> None:
    assert rack_alternated_brokers(KAFKA_RACKS) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated_brokers({b: r for b, r in KAFKA_RACKS.items() if b != 5}) == [
        0,
        3,
        1,
        4,
        2,
    ]
    assert assign_replicas_rack_aware(KAFKA_RACKS, 7, 3) == {
        0: (0, 3, 1),
        1: (3, 1, 5),
        2: (1, 5, 4),
        3: (5, 4, 2),
        4: (4, 2, 0),
        5: (2, 0, 3),
        6: (0, 4, 2),
    }


def test_added_partitions_continue_the_rotation() -> None:
    whole = assign_replicas_rack_aware(KAFKA_RACKS, 7, 3)
    assert assign_replicas_rack_aware(KAFKA_RACKS, 3, 3, start_partition=4) == {
        p: whole[p] for p in (4, 5, 6)
    }


def test_more_replicas_than_brokers_is_refused() -> None:
    with pytest.raises(InvalidReplicationFactorError, match="larger than available brokers: 2"):
        assign_replicas_rack_aware({1: "a", 2: "b"}, 1, 3)


@st.composite
def layouts(draw: st.DrawFn) -> tuple[dict[int, str], int, int, int, int]:
    """Racks of equal size, a partition count that is a multiple of the brokers, a
    replication factor up to the number of racks, any start index and shift."""
    racks = draw(st.integers(1, 4))
    per_rack = draw(st.integers(1, 4))
    ids = draw(st.permutations(range(1, racks * per_rack + 1)))
    broker_racks = {b: f"rack-{i % racks}" for i, b in enumerate(ids)}
    n = len(broker_racks)
    partitions = n * draw(st.integers(1, 3))
    rf = draw(st.integers(1, racks))
    return broker_racks, partitions, rf, draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))


@settings(deadline=None, max_examples=300)
@given(layouts())
def test_replicas_on_distinct_racks_leaders_and_replicas_even(
    layout: tuple[dict[int, str], int, int, int, int],
) -> None:
    broker_racks, partitions, rf, start, shift = layout
    assignment = assign_replicas_rack_aware(
        broker_racks, partitions, rf, start_index=start, replica_shift=shift
    )
    assert sorted(assignment) == list(range(partitions))
    for replicas in assignment.values():
        assert len(replicas) == rf
        assert len({broker_racks[b] for b in replicas}) == rf  # so distinct brokers too
    n = len(broker_racks)
    assert Counter(r[0] for r in assignment.values()) == dict.fromkeys(
        broker_racks, partitions // n
    )
    replica_counts = Counter(b for r in assignment.values() for b in r)
    assert replica_counts == dict.fromkeys(broker_racks, partitions * rf // n)


@settings(deadline=None, max_examples=300)
@given(
    st.dictionaries(st.integers(0, 20), st.sampled_from("abcd"), min_size=1, max_size=9),
    st.integers(1, 30),
    st.data(),
)
def test_any_racks_give_distinct_brokers_and_as_many_racks_as_can_be(
    broker_racks: dict[int, str], partitions: int, data: st.DataObject
) -> None:
    n, racks = len(broker_racks), len(set(broker_racks.values()))
    rf = data.draw(st.integers(1, n))
    assignment = assign_replicas_rack_aware(
        broker_racks,
        partitions,
        rf,
        start_index=data.draw(st.integers(0, n - 1)),
        replica_shift=data.draw(st.integers(0, n - 1)),
    )
    for replicas in assignment.values():
        assert len(set(replicas)) == rf
        assert len({broker_racks[b] for b in replicas}) == min(rf, racks)


# --- AdminUtils.assignReplicasToBrokers: which placement, or Kafka's refusal ---------------


@given(seed=st.integers(0, 2**32), partitions=st.integers(1, 20), rf=st.integers(1, 3))
def test_racked_brokers_get_the_rack_aware_placement(seed: int, partitions: int, rf: int) -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    got = assign_replicas_to_brokers(racks, partitions, rf, seed=seed)
    assert sorted(got) == list(range(partitions))
    for replicas in got.values():
        assert len({racks[b] for b in replicas}) == rf


def test_brokers_without_racks_get_the_rack_unaware_placement() -> None:
    got = assign_replicas_to_brokers({1: None, 2: None, 3: None}, 3, 2, fixed_start_index=0)
    assert got == assign_replicas([1, 2, 3], 3, 2)


def test_some_brokers_with_a_rack_and_some_without_is_kafkas_admin_operation_error() -> None:
    with pytest.raises(AdminOperationError) as err:
        assign_replicas_to_brokers({1: "a", 2: None, 3: "b"}, 3, 2)
    assert err.value.code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert err.value.message == (
        "Not all brokers have rack information for replica rack aware assignment."
    )


def test_new_partitions_on_racked_brokers_are_placed_by_rack() -> None:
    racks: dict[int, str | None] = {1: "a", 2: "a", 3: "b"}
    existing = {0: (1, 3), 1: (3, 2)}
    added = new_partitions_assignment("t", existing, list(racks), 8, racks=racks)
    assert sorted(added) == [2, 3, 4, 5, 6, 7]
    # Two racks, replication factor 2: one replica on each.
    assert all({racks[b] for b in replicas} == {"a", "b"} for replicas in added.values())
