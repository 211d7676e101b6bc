"""The replica fetcher's edges (issue 4, build item 2): out-of-range answers in both
directions, following the leader's log start offset, backing off on errors, and stopping
cleanly on StopReplica or a leadership change.

Real replica managers over loopback TCP (see conftest); the test plays the controller.
"""

from __future__ import annotations

import socket

from minikafka.rpc.messages import BrokerNode, StopReplicaPartition, StopReplicaRequest
from minikafka.server.network import SocketServer
from tests.replication.conftest import (
    TP,
    Broker,
    BrokerFactory,
    leader_and_isr,
    produce,
    state,
    wait_for,
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def leader_node(broker_id: int, port: int) -> BrokerNode:
    return BrokerNode(broker_id, "127.0.0.1", port)


async def produce_one_by_one(leader: Broker, n: int, acks: int) -> None:
    """m0 .. m<n-1>, a batch each: offsets a log can be cut at (logs keep whole batches)."""
    for i in range(n):
        await produce(leader, [f"m{i}".encode()], acks=acks)


async def test_a_follower_below_the_leaders_log_start_restarts_there(
    brokers: BrokerFactory,
) -> None:
    leader, follower = brokers(1), brokers(2)
    await leader.start()
    await follower.start()
    await leader_and_isr(leader, state(1, 0, [1], [1, 2]), [leader.node])
    await produce_one_by_one(leader, 10, acks=1)
    assert leader.log.maybe_increment_log_start_offset(6)  # e.g. retention on the leader
    # The new follower asks for offset 0: OFFSET_OUT_OF_RANGE, below the leader's log start.
    await leader_and_isr(follower, state(1, 0, [1], [1, 2]), [leader.node])
    await wait_for(lambda: follower.log.log_end_offset == 10)
    assert follower.log.log_start_offset == 6
    assert follower.log_values() == [b"m6", b"m7", b"m8", b"m9"]


async def test_a_follower_moves_its_log_start_with_the_leaders(brokers: BrokerFactory) -> None:
    leader, follower = brokers(1), brokers(2)
    await leader.start()
    await follower.start()
    st = state(1, 0, [1, 2], [1, 2])
    await leader_and_isr(leader, st, [leader.node])
    await leader_and_isr(follower, st, [leader.node])
    await produce_one_by_one(leader, 10, acks=-1)
    assert leader.log.maybe_increment_log_start_offset(4)
    # The next fetch response carries the leader's log start; the follower follows (capped
    # by its own HW).
    await produce(leader, [b"m10"])
    await wait_for(lambda: follower.log.log_start_offset == 4)
    assert follower.log_values() == [f"m{i}".encode() for i in range(4, 11)]


async def test_a_follower_ahead_of_its_leader_truncates_to_the_leaders_leo(
    brokers: BrokerFactory,
) -> None:
    leader, follower = brokers(1), brokers(2)
    await leader.start()
    await follower.start()
    st = state(1, 0, [1, 2], [1, 2])
    await leader_and_isr(leader, st, [leader.node])
    await leader_and_isr(follower, st, [leader.node])
    await produce_one_by_one(leader, 10, acks=-1)
    await wait_for(lambda: follower.log.log_end_offset == 10)
    # The leader's log loses its tail without an epoch change (a leader never does this
    # itself; it stands for any leader with less than its follower): the follower's next
    # fetch, at 10, is out of range, and the follower cuts back to the leader's LEO.
    leader.log.truncate_to(7)
    await wait_for(lambda: follower.log.log_end_offset == 7)
    await produce(leader, [b"x7", b"x8"], acks=1)
    await wait_for(lambda: follower.log_values() == leader.log_values())
    assert follower.log_values() == [*(f"m{i}".encode() for i in range(7)), b"x7", b"x8"]


async def test_stop_replica_stops_the_fetcher_and_keeps_the_replica(
    brokers: BrokerFactory,
) -> None:
    leader, follower = brokers(1), brokers(2)
    await leader.start()
    await follower.start()
    st = state(1, 0, [1, 2], [1, 2])
    await leader_and_isr(leader, st, [leader.node])
    await leader_and_isr(follower, st, [leader.node])
    await produce(leader, [b"a"])
    fetcher = follower.fetchers.fetchers[1]
    await follower.rm.stop_replicas(
        StopReplicaRequest(0, 1, -1, [StopReplicaPartition("t", 0, delete_partition=False)])
    )
    assert follower.fetchers.partition_count() == 0 and not follower.fetchers.fetchers
    await wait_for(lambda: fetcher.stopped)
    await produce(leader, [b"b"], acks=1)
    assert follower.log_values() == [b"a"]  # on disk still, and no longer fetching
    assert TP in follower.rm.partitions and not follower.rm.partitions[TP].is_leader


async def test_becoming_leader_stops_fetching_from_the_old_leader(brokers: BrokerFactory) -> None:
    old, new = brokers(1), brokers(2)
    await old.start()
    await new.start()
    st = state(1, 0, [1, 2], [1, 2])
    await leader_and_isr(old, st, [old.node])
    await leader_and_isr(new, st, [old.node])
    await produce(old, [b"a"])
    await leader_and_isr(new, state(2, 1, [2], [1, 2]), [new.node])
    assert new.fetchers.partition_count() == 0
    assert new.rm.partitions[TP].is_leader
    await produce(old, [b"stale"], acks=1)  # the old leader does not know yet
    await produce(new, [b"b"], acks=1)
    assert new.log_values() == [b"a", b"b"]


async def test_an_unreachable_leader_is_retried_with_backoff_until_it_answers(
    brokers: BrokerFactory,
) -> None:
    leader, follower = brokers(1), brokers(2)
    await follower.start()
    # The follower is pointed at a leader's address where nothing listens yet.
    port = free_port()
    await leader_and_isr(follower, state(1, 0, [1, 2], [1, 2]), [leader_node(1, port)])
    fetcher = follower.fetchers.fetchers[1]
    await wait_for(lambda: fetcher.failed_requests >= 2)
    assert follower.fetchers.fetchers[1] is fetcher  # retrying, not given up
    # The leader comes up there: the fetcher's next attempt succeeds.
    leader.server = SocketServer(leader.apis.handle, "127.0.0.1", port)
    await leader.start()
    await leader_and_isr(leader, state(1, 0, [1, 2], [1, 2]), [leader.node])
    await produce(leader, [b"a"], acks=1)
    await wait_for(lambda: follower.log_values() == [b"a"])
