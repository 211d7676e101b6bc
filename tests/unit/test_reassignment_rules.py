"""KIP-455's replica sets (rules/reassignment.py) and their ZooKeeper form (zk/codecs.py)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from minikafka.common import TopicPartition
from minikafka.rules.reassignment import (
    ReplicaAssignment,
    drain_plan,
    is_reassignment_complete,
    reassign_partition_leader_election,
    validate_target_replicas,
)
from minikafka.zk import codecs

replica_lists = st.lists(st.integers(0, 9), min_size=1, max_size=5, unique=True)


def test_kafkas_example() -> None:
    moving = ReplicaAssignment.of((1, 2, 3)).reassign_to((2, 3, 4))
    assert moving == ReplicaAssignment((2, 3, 4, 1), adding=(4,), removing=(1,))
    assert moving.target_replicas == (2, 3, 4) and moving.origin_replicas == (2, 3, 1)
    assert not is_reassignment_complete(moving, (1, 2, 3))
    assert is_reassignment_complete(moving, (2, 3, 1, 4))


@given(replica_lists, replica_lists, replica_lists)
def test_reassign_to_keeps_the_origin_and_reaches_the_target(
    origin: list[int], first: list[int], second: list[int]
) -> None:
    moving = ReplicaAssignment.of(origin).reassign_to(first)
    assert moving.target_replicas == tuple(first)
    assert set(moving.origin_replicas) == set(origin)
    assert set(moving.adding).isdisjoint(origin) and set(moving.removing).isdisjoint(first)
    assert set(moving.replicas) == set(origin) | set(first)
    # A new target starts over from the origin; the origin as target cancels the move.
    again = moving.reassign_to(second)
    assert again.target_replicas == tuple(second)
    assert set(again.origin_replicas) == set(origin)
    assert not moving.reassign_to(moving.origin_replicas).is_being_reassigned


def test_validation_messages_are_kafkas() -> None:
    current = ReplicaAssignment.of((1, 2))
    assert validate_target_replicas(current, (1, 3), {1, 2, 3}) is None
    refusals = {
        (): "Empty replica list specified in partition reassignment.",
        (1, 1): "Duplicate replica ids in partition reassignment replica list: List(1, 1)",
        (1, -2): "Invalid broker id in replica list: List(1, -2)",
        (1, 4): "Replica assignment has brokers that are not alive. Replica list: List(4), "
        "live broker list: Set(1, 2, 3)",
    }
    for target, message in refusals.items():
        invalid = validate_target_replicas(current, target, {1, 2, 3})
        assert invalid is not None and invalid.message == message


def test_leader_of_a_completed_move_is_a_live_target_in_the_isr() -> None:
    assert reassign_partition_leader_election((4, 2, 3), (1, 2, 3, 4), {1, 2, 3}) is not None
    result = reassign_partition_leader_election((4, 2, 3), (1, 2, 3, 4), {1, 2, 3})
    assert result is not None and result.leader == 2 and result.isr == (1, 2, 3, 4)
    assert reassign_partition_leader_election((4,), (1, 4), {1}) is None


@given(st.dictionaries(st.integers(0, 20), st.tuples(replica_lists, replica_lists), max_size=6))
def test_topic_znode_round_trip(moves: dict[int, tuple[list[int], list[int]]]) -> None:
    assignment = {p: ReplicaAssignment.of(a).reassign_to(b) for p, (a, b) in moves.items()}
    data = codecs.encode_topic_assignment(assignment, None)
    assert codecs.decode_topic_full_assignment("t", data) == dict(sorted(assignment.items()))
    obj = json.loads(data)
    # Kafka's fields: only moving partitions appear under adding/removing_replicas.
    assert obj["adding_replicas"] == {
        str(p): list(a.adding) for p, a in assignment.items() if a.adding
    }


def test_reassign_partitions_znode_is_kafkas_json() -> None:
    data = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3]}]}'
    assert codecs.decode_partition_reassignment(data) == {TopicPartition("t", 0): (2, 3)}
    assert json.loads(codecs.encode_partition_reassignment({TopicPartition("t", 0): (2, 3)})) == (
        json.loads(data)
    )


@given(
    st.integers(1, 6).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(
                st.lists(st.integers(1, n + 2), min_size=1, max_size=n, unique=True),
                max_size=12,
            ),
        )
    ),
    st.integers(1, 8),
)
def test_a_drain_moves_every_replica_off_the_broker(
    case: tuple[int, list[list[int]]], broker: int
) -> None:
    n, lists = case
    brokers = set(range(1, n + 3))
    assignments = {TopicPartition("t", p): r for p, r in enumerate(lists)}
    others = brokers - {broker}
    try:
        plan = drain_plan(assignments, broker, brokers)
    except ValueError:
        assert any(broker in r and len(r) > len(others) for r in lists)
        return
    for tp, replicas in assignments.items():
        if broker not in replicas:
            assert tp not in plan
            continue
        new = plan[tp]
        # Same size, distinct, off the broker, the others kept in their places.
        assert len(new) == len(replicas) == len(set(new)) and broker not in new
        assert set(new) <= others
        assert all(a == b for a, b in zip(new, replicas, strict=True) if b != broker)


def test_a_drain_spreads_the_replicas_it_moves() -> None:
    assignments = {TopicPartition("t", p): (1, 2) for p in range(4)}
    plan = drain_plan(assignments, 1, {1, 2, 3, 4})
    assert sorted(r[0] for r in plan.values()) == [3, 3, 4, 4]
