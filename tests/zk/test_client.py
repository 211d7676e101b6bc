"""ZkClient against a real ZooKeeper server (one per session, one chroot per test)."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
from dataclasses import replace

import pytest

from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.protocol.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError
from minikafka.zk import codecs, paths
from minikafka.zk.bridge import LoopBridge
from minikafka.zk.client import (
    BrokerInfo,
    ControllerMovedError,
    ZkBadVersionError,
    ZkClient,
    ZkConnectionError,
    ZkNodeExistsError,
    ZkNoNodeError,
    ZkState,
    expire_session,
    parse_connect_string,
)
from minikafka.zk.multi_read import MULTI_READ_PATHS
from minikafka.zk.server import LocalZooKeeper, pick_free_port

from .conftest import ZkClientFactory, wait_event, wait_until

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def elect(client: ZkClient, broker_id: int) -> int:
    """Elect `client` controller; returns the /controller_epoch zk version that fences."""
    won = client.try_elect_controller(broker_id)
    assert won is not None
    return won[1]


def setup_topic(client: ZkClient) -> int:
    """A controller (broker 1) and topic `t` with two partitions in state; returns the fence."""
    fence = elect(client, 1)
    client.create_topic("t", {0: [1, 2], 1: [2, 1]}, {})
    client.create_partition_states(
        {TP0: LeaderAndIsr(1, 0, (1, 2), 1), TP1: LeaderAndIsr(2, 0, (2, 1), 1)}, fence
    )
    return fence


# --- connection, chroot -----------------------------------------------------------------


def test_parse_connect_string() -> None:
    assert parse_connect_string("127.0.0.1:2181") == ("127.0.0.1:2181", "")
    assert parse_connect_string("a:1,b:2/minikafka") == ("a:1,b:2", "/minikafka")
    assert parse_connect_string("a:1/x/y/") == ("a:1", "/x/y")
    assert parse_connect_string("a:1/") == ("a:1", "")
    with pytest.raises(ValueError):
        parse_connect_string("/chroot")


def test_chroot_is_created_and_used(
    zk_server: LocalZooKeeper, make_zk_client: ZkClientFactory, zk_connect: str
) -> None:
    inner = make_zk_client(zk_connect + "/inner/deeper")
    inner.register_broker(BrokerInfo(1, "h", 1))
    outer = make_zk_client(zk_connect)
    assert outer.get_children("/inner") == ["deeper"]
    assert outer.get_children("/inner/deeper/brokers/ids") == ["1"]
    # The chroot is invisible from inside: paths are Kafka's.
    assert inner.get_broker_ids() == [1]
    assert outer.get_broker_ids() == []


def test_ensure_persistent_paths(zk_client: ZkClient) -> None:
    for path in paths.persistent_paths():
        assert zk_client.exists(path)
    zk_client.ensure_persistent_paths()  # idempotent


def test_unreachable_server_fails_fast() -> None:
    client = ZkClient(
        f"127.0.0.1:{pick_free_port()}", session_timeout_ms=6000, connection_timeout_ms=500
    )
    with pytest.raises(ZkConnectionError, match="cannot connect"):
        client.start()
    with pytest.raises(ZkConnectionError, match="not started"):
        client.get_broker_ids()


# --- brokers ------------------------------------------------------------------------------


def test_broker_registration_is_ephemeral_and_epoch_is_czxid(
    make_zk_client: ZkClientFactory,
) -> None:
    first, observer = make_zk_client(), make_zk_client()
    epoch = first.register_broker(BrokerInfo(1, "localhost", 9092, rack="r1"))
    assert epoch > 0
    assert observer.get_all_brokers() == {1: BrokerInfo(1, "localhost", 9092, "r1", epoch)}
    stored = json.loads(observer.get_data(paths.broker(1)) or b"")
    assert stored["endpoints"] == ["PLAINTEXT://localhost:9092"]
    # Our own session re-registering (a retry after a lost reply) is a success.
    assert first.register_broker(BrokerInfo(1, "localhost", 9092, rack="r1")) == epoch

    first.close()
    assert observer.get_all_brokers() == {}

    second = make_zk_client()
    new_epoch = second.register_broker(BrokerInfo(1, "localhost", 9092))
    assert new_epoch > epoch  # a bounce is visible as a larger broker epoch
    assert observer.get_broker(1) == BrokerInfo(1, "localhost", 9092, None, new_epoch)


def test_registration_owned_by_another_session(make_zk_client: ZkClientFactory) -> None:
    old, new = make_zk_client(), make_zk_client()
    old_epoch = old.register_broker(BrokerInfo(1, "h", 1))
    with pytest.raises(ZkNodeExistsError, match="another ZooKeeper session"):
        new.register_broker(BrokerInfo(1, "h", 1))

    # Waiting for the previous session: succeeds as soon as its znode goes.
    result: list[int] = []
    waiter = threading.Thread(
        target=lambda: result.append(
            new.register_broker(BrokerInfo(1, "h", 1), wait_for_previous_session_ms=20_000)
        )
    )
    waiter.start()
    old.close()
    waiter.join(timeout=20)
    assert result and result[0] > old_epoch


def test_session_expiry_deletes_registration_and_reconnects(
    make_zk_client: ZkClientFactory, zk_connect: str
) -> None:
    broker, observer = make_zk_client(), make_zk_client()
    states: list[ZkState] = []
    reconnected = threading.Event()

    def on_state(state: ZkState) -> None:
        states.append(state)
        if ZkState.LOST in states and state is ZkState.CONNECTED:
            reconnected.set()

    broker.add_connection_listener(on_state)
    old_session = broker.session_id
    epoch = broker.register_broker(BrokerInfo(1, "h", 1))
    credentials = broker.session_credentials
    assert credentials is not None
    expire_session(zk_connect, credentials)

    wait_until(lambda: observer.get_broker_ids() == [], what="registration to vanish")
    wait_event(reconnected, what="LOST then CONNECTED")
    assert broker.session_id not in (None, old_session)
    assert broker.register_broker(BrokerInfo(1, "h", 1)) > epoch


# --- topics ---------------------------------------------------------------------------------


def test_create_topic(zk_client: ZkClient) -> None:
    topic_id = zk_client.create_topic(
        "orders", {0: [1, 2, 3], 1: [2, 3, 1]}, {"min.insync.replicas": "2"}
    )
    assert zk_client.topic_exists("orders")
    assert not zk_client.topic_exists("nope")
    assert zk_client.get_all_topics() == ["orders"]
    assert zk_client.get_assignment("orders") == {0: (1, 2, 3), 1: (2, 3, 1)}
    assert zk_client.get_assignment("nope") is None
    assert zk_client.get_assignments(["orders", "nope"]) == {"orders": {0: (1, 2, 3), 1: (2, 3, 1)}}
    assert zk_client.get_topic_config("orders") == {"min.insync.replicas": "2"}
    assert zk_client.get_topic_config("nope") == {}
    assert json.loads(zk_client.get_data(paths.topic("orders")) or b"") == {
        "version": 3,
        "topic_id": topic_id,
        "partitions": {"0": [1, 2, 3], "1": [2, 3, 1]},
        "adding_replicas": {},
        "removing_replicas": {},
    }
    assert json.loads(zk_client.get_data(paths.topic_config("orders")) or b"") == {
        "version": 1,
        "config": {"min.insync.replicas": "2"},
    }


def test_create_existing_topic_fails(zk_client: ZkClient) -> None:
    zk_client.create_topic("t", {0: [1]}, {})
    with pytest.raises(TopicAlreadyExistsError, match="already exists"):
        zk_client.create_topic("t", {0: [2]}, {"retention.ms": "1"})
    assert zk_client.get_assignment("t") == {0: (1,)}
    assert zk_client.get_topic_config("t") == {}


def test_topic_deletion(zk_client: ZkClient) -> None:
    fence = setup_topic(zk_client)
    zk_client.create_topic("keep", {0: [1]}, {"retention.ms": "5"})
    with pytest.raises(UnknownTopicOrPartitionError):
        zk_client.request_topic_deletion("nope")
    assert zk_client.request_topic_deletion("t") is True
    assert zk_client.request_topic_deletion("t") is False
    assert zk_client.get_topic_deletions() == ["t"]
    with pytest.raises(TopicAlreadyExistsError):
        zk_client.create_topic("t", {0: [1]}, {})

    with pytest.raises(ControllerMovedError):
        zk_client.delete_topic_znodes("t", fence + 1)
    assert zk_client.topic_exists("t") and zk_client.get_partition_state(TP0) is not None

    zk_client.delete_topic_znodes("t", fence)
    assert zk_client.get_all_topics() == ["keep"]
    assert zk_client.get_topic_deletions() == []
    assert not zk_client.exists(paths.topic_config("t"))
    assert zk_client.get_topic_config("keep") == {"retention.ms": "5"}
    zk_client.delete_topic_znodes("t", fence)  # nothing left: a no-op


# --- controller election --------------------------------------------------------------------


def test_controller_election_race_and_reelection(make_zk_client: ZkClientFactory) -> None:
    clients = {1: make_zk_client(), 2: make_zk_client()}
    assert clients[1].get_controller_id() is None
    assert clients[1].get_controller_epoch() is None

    barrier = threading.Barrier(2)
    results: dict[int, tuple[int, int] | None] = {}

    def run(broker_id: int) -> None:
        barrier.wait()
        results[broker_id] = clients[broker_id].try_elect_controller(broker_id)

    threads = [threading.Thread(target=run, args=(b,)) for b in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)

    winners = [b for b, r in results.items() if r is not None]
    assert len(results) == 2 and len(winners) == 1
    winner = winners[0]
    loser = 3 - winner
    assert results[winner] == clients[loser].get_controller_epoch()
    assert results[winner] is not None and results[winner][0] == 1  # epoch "0" + 1
    assert clients[loser].get_controller_id() == winner
    assert json.loads(clients[loser].get_data(paths.controller()) or b"")["brokerid"] == winner
    # Asking again changes nothing: the loser still loses, the winner keeps its epoch.
    assert clients[loser].try_elect_controller(loser) is None
    assert clients[winner].try_elect_controller(winner) == results[winner]

    clients[winner].close()
    won = clients[loser].try_elect_controller(loser)
    assert won is not None and won[0] == 2
    assert clients[loser].get_controller_id() == loser


def test_deposed_controller_writes_are_fenced(make_zk_client: ZkClientFactory) -> None:
    zombie, successor = make_zk_client(), make_zk_client()
    stale = setup_topic(zombie)
    zombie.create_topic("later", {0: [1]}, {})
    notification = zombie.create_isr_change_notification([TP0])

    # The zombie steps down (as if its session had expired) and another broker takes over.
    zombie.delete_controller(stale)
    fresh = elect(successor, 2)
    assert fresh != stale

    before = successor.get_partition_states([TP0, TP1])
    with pytest.raises(ControllerMovedError):
        zombie.update_partition_state_as_controller(TP0, LeaderAndIsr(2, 1, (2,), 1), 0, stale)
    with pytest.raises(ControllerMovedError):
        zombie.update_partition_states_as_controller({TP1: (LeaderAndIsr(1, 1, (1,), 1), 0)}, stale)
    with pytest.raises(ControllerMovedError):
        zombie.create_partition_states(
            {TopicPartition("later", 0): LeaderAndIsr(1, 0, (1,), 1)}, stale
        )
    with pytest.raises(ControllerMovedError):
        zombie.delete_isr_change_notifications([notification], stale)
    with pytest.raises(ControllerMovedError):
        zombie.delete_controller(stale)

    assert successor.get_partition_states([TP0, TP1]) == before
    assert not successor.exists(paths.partitions("later"))  # not even the parent
    assert successor.get_isr_change_notifications() == [notification]
    assert successor.get_controller_id() == 2

    # The new controller's writes go through.
    moved = successor.update_partition_state_as_controller(
        TP0, LeaderAndIsr(2, 1, (2,), 2), 0, fresh
    )
    assert moved == LeaderAndIsr(2, 1, (2,), 2, zk_version=1)


# --- partition state ------------------------------------------------------------------------


def test_partition_states_created_and_read(zk_client: ZkClient) -> None:
    setup_topic(zk_client)
    assert zk_client.get_partition_ids("t") == [0, 1]
    assert zk_client.get_partition_state(TP0) == LeaderAndIsr(1, 0, (1, 2), 1, zk_version=0)
    assert zk_client.get_partition_state(TopicPartition("t", 9)) is None
    assert zk_client.get_partition_states([TP0, TP1, TopicPartition("x", 0)]) == {
        TP0: LeaderAndIsr(1, 0, (1, 2), 1, 0),
        TP1: LeaderAndIsr(2, 0, (2, 1), 1, 0),
    }
    assert json.loads(zk_client.get_data(paths.partition_state("t", 0)) or b"") == {
        "version": 1,
        "leader": 1,
        "leader_epoch": 0,
        "controller_epoch": 1,
        "isr": [1, 2],
    }


def test_many_partition_states_are_read_in_multireads_as_one_by_one(
    zk_client: ZkClient,
) -> None:
    """More states than one multiRead holds, some missing: the same answer as reads of one
    znode each (the path every ZooKeeper before 3.6 takes)."""
    fence = elect(zk_client, 1)
    n = MULTI_READ_PATHS * 2 + 7
    zk_client.create_topic("big", {p: [1, 2] for p in range(n)}, {})
    states = {TopicPartition("big", p): LeaderAndIsr(p % 2 + 1, p, (1, 2), 1) for p in range(n)}
    items = list(states.items())
    for i in range(0, n, 1000):  # a multi of creates stays below jute.maxbuffer
        zk_client.create_partition_states(dict(items[i : i + 1000]), fence)
    asked = [TopicPartition("big", p) for p in range(n + 3)] + [TopicPartition("none", 0)]
    got = zk_client.get_partition_states(asked)
    assert zk_client._multi_read is True  # this server (3.8) answers multiRead
    assert got == {tp: replace(st, zk_version=0) for tp, st in states.items()}
    zk_client._multi_read = False
    assert zk_client.get_partition_states(asked) == got


def test_create_existing_partition_state_fails_atomically(zk_client: ZkClient) -> None:
    fence = setup_topic(zk_client)
    zk_client.create_topic("u", {0: [1]}, {})
    new = {TopicPartition("u", 0): LeaderAndIsr(1, 0, (1,), 1), TP0: LeaderAndIsr(2, 0, (2,), 1)}
    with pytest.raises(ZkNodeExistsError, match="/brokers/topics/t/partitions/0/state"):
        zk_client.create_partition_states(new, fence)
    assert zk_client.get_partition_state(TopicPartition("u", 0)) is None


def test_controller_update_is_conditional(zk_client: ZkClient) -> None:
    fence = setup_topic(zk_client)
    new = LeaderAndIsr(2, 1, (2,), 1)
    assert zk_client.update_partition_state_as_controller(TP0, new, 0, fence).zk_version == 1
    with pytest.raises(ZkBadVersionError, match="t-0"):
        zk_client.update_partition_state_as_controller(TP0, LeaderAndIsr(1, 2, (1,), 1), 0, fence)
    assert zk_client.get_partition_state(TP0) == LeaderAndIsr(2, 1, (2,), 1, 1)

    done, conflicts = zk_client.update_partition_states_as_controller(
        {TP0: (LeaderAndIsr(1, 2, (1,), 1), 1), TP1: (LeaderAndIsr(1, 1, (1,), 1), 5)}, fence
    )
    assert done == {TP0: LeaderAndIsr(1, 2, (1,), 1, 2)}
    assert conflicts == [TP1]


def test_leader_isr_update(zk_client: ZkClient) -> None:
    fence = setup_topic(zk_client)
    shrunk = LeaderAndIsr(1, 0, (1,), 1)
    assert zk_client.update_partition_state_as_leader(TP0, shrunk, 0) == 1
    assert zk_client.get_partition_state(TP0) == LeaderAndIsr(1, 0, (1,), 1, 1)

    # Our reply got lost and we retry with the old version: the znode already holds exactly
    # what we wrote, so it counts as success.
    assert zk_client.update_partition_state_as_leader(TP0, shrunk, 0) == 1

    # The controller writes behind our back (a new leader epoch): our write is refused.
    zk_client.update_partition_state_as_controller(TP0, LeaderAndIsr(2, 1, (2, 1), 1), 1, fence)
    assert zk_client.update_partition_state_as_leader(TP0, LeaderAndIsr(1, 0, (1, 2), 1), 1) is None
    assert zk_client.get_partition_state(TP0) == LeaderAndIsr(2, 1, (2, 1), 1, 2)

    # Same ISR but a different leader epoch is not "the same content".
    assert zk_client.update_partition_state_as_leader(TP0, LeaderAndIsr(2, 0, (2, 1), 1), 0) is None
    assert zk_client.update_partition_state_as_leader(TopicPartition("t", 7), shrunk, 0) is None


# --- ISR change notifications, preferred replica election -------------------------------------


def test_isr_change_notifications(zk_client: ZkClient) -> None:
    fence = elect(zk_client, 1)
    names = [
        zk_client.create_isr_change_notification([TP0]),
        zk_client.create_isr_change_notification([TP1, TP0]),
        zk_client.create_isr_change_notification([TopicPartition("u", 3)]),
    ]
    assert all(n.startswith("isr_change_") and n[-10:].isdigit() for n in names)
    assert names == sorted(names) and len(set(names)) == 3
    assert zk_client.get_isr_change_notifications() == names
    assert zk_client.read_isr_change_notification(names[1]) == [TP1, TP0]
    assert json.loads(zk_client.get_data(paths.isr_change_notification(names[0])) or b"") == {
        "version": 1,
        "partitions": [{"topic": "t", "partition": 0}],
    }

    zk_client.delete_isr_change_notifications(names[:2], fence)
    assert zk_client.get_isr_change_notifications() == names[2:]
    assert zk_client.read_isr_change_notification(names[0]) == []
    # Deleting some that are already gone is fine.
    zk_client.delete_isr_change_notifications(names, fence)
    assert zk_client.get_isr_change_notifications() == []


def test_preferred_replica_election(zk_client: ZkClient) -> None:
    fence = elect(zk_client, 1)
    assert zk_client.get_preferred_replica_election() is None
    zk_client.create_preferred_replica_election([TP0, TP1])
    assert zk_client.get_preferred_replica_election() == [TP0, TP1]
    with pytest.raises(ZkNodeExistsError):
        zk_client.create_preferred_replica_election([TP0])
    with pytest.raises(ControllerMovedError):
        zk_client.delete_preferred_replica_election(fence + 1)
    zk_client.delete_preferred_replica_election(fence)
    assert zk_client.get_preferred_replica_election() is None
    zk_client.delete_preferred_replica_election(fence)


# --- watches -----------------------------------------------------------------------------------


def test_children_watch_fires_and_rearms(make_zk_client: ZkClientFactory) -> None:
    watcher, broker = make_zk_client(), make_zk_client()
    seen: list[list[str]] = []
    changed = threading.Condition()

    def on_children(children: list[str]) -> None:
        with changed:
            seen.append(children)
            changed.notify_all()

    def await_children(expected: list[str]) -> None:
        with changed:
            assert changed.wait_for(lambda: seen and seen[-1] == expected, timeout=10), seen

    handle = watcher.watch_children(paths.broker_ids(), on_children)
    assert seen == [[]]  # called at once with the current children
    broker.register_broker(BrokerInfo(2, "h", 1))
    await_children(["2"])
    broker.register_broker(BrokerInfo(1, "h", 1))
    await_children(["1", "2"])  # re-armed after the first event

    # A second watch is the control: kazoo runs watch callbacks in order on one thread, so
    # once the control has seen two more changes, the cancelled one had its chances.
    control: list[list[str]] = []
    watcher.watch_children(paths.broker_ids(), control.append)
    handle.cancel()
    count = len(seen)
    broker.register_broker(BrokerInfo(3, "h", 1))
    broker.register_broker(BrokerInfo(4, "h", 1))
    wait_until(lambda: bool(control) and control[-1] == ["1", "2", "3", "4"])
    assert len(seen) == count


def test_children_watch_needs_the_znode(zk_client: ZkClient) -> None:
    with pytest.raises(ZkNoNodeError):
        zk_client.watch_children("/no/such/path", lambda _: None)


def test_data_watch_on_controller(make_zk_client: ZkClientFactory) -> None:
    watcher, controller = make_zk_client(), make_zk_client()
    seen: list[bytes | None] = []
    exists: list[bool] = []
    elected, resigned = threading.Event(), threading.Event()

    def on_data(data: bytes | None) -> None:
        seen.append(data)
        if data is not None:
            elected.set()
        elif elected.is_set():
            resigned.set()

    watcher.watch_data(paths.controller(), on_data)
    watcher.watch_exists(paths.controller(), exists.append)
    assert seen == [None] and exists == [False]
    fence = elect(controller, 7)
    wait_event(elected, what="controller creation")
    assert json.loads(seen[-1] or b"")["brokerid"] == 7
    # Watches are one-shot and re-armed: a deletion right after the creation could be seen
    # by the exists-watch's re-read before it reported the creation.
    wait_until(lambda: True in exists, what="the exists watch to see the controller")
    controller.delete_controller(fence)
    wait_event(resigned, what="controller deletion")
    wait_until(lambda: exists[-1] is False)


async def test_watch_through_loop_bridge(make_zk_client: ZkClientFactory) -> None:
    """Watch callbacks arrive on kazoo's thread; the bridge hands them to the event loop."""
    watcher, broker = make_zk_client(), make_zk_client()
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[list[str], bool]] = asyncio.Queue()

    def on_loop(children: list[str]) -> None:
        # Runs on the loop's thread, so asyncio objects are safe to touch.
        queue.put_nowait((children, threading.current_thread() is threading.main_thread()))

    await asyncio.to_thread(
        watcher.watch_children, paths.broker_ids(), LoopBridge(loop).wrap(on_loop)
    )
    assert await asyncio.wait_for(queue.get(), 10) == ([], True)
    await asyncio.to_thread(broker.register_broker, BrokerInfo(5, "h", 1))
    assert await asyncio.wait_for(queue.get(), 10) == (["5"], True)


def test_loop_bridge_on_closed_loop_is_a_noop() -> None:
    loop = asyncio.new_event_loop()
    loop.close()
    called: list[int] = []
    LoopBridge(loop).wrap(called.append)(1)  # must not raise
    assert called == []


async def test_loop_bridge_passes_keyword_arguments() -> None:
    loop = asyncio.get_running_loop()
    done: asyncio.Future[tuple[int, int]] = loop.create_future()

    def target(a: int, *, b: int) -> None:
        done.set_result((a, b))

    threading.Thread(target=LoopBridge(loop).wrap(target), args=(1,), kwargs={"b": 2}).start()
    assert await asyncio.wait_for(done, 5) == (1, 2)


def test_the_first_broker_creates_the_cluster_id_and_every_later_one_reads_it(
    make_zk_client: ZkClientFactory,
) -> None:
    first, second = make_zk_client(), make_zk_client()
    created = first.get_or_create_cluster_id(codecs.new_cluster_id())
    assert len(created) == 22 and created == first.get_or_create_cluster_id("ignored-proposal")
    assert second.get_or_create_cluster_id(codecs.new_cluster_id()) == created
    # Kafka's znode JSON (the version as a string).
    data = first.get_data(paths.CLUSTER_ID)
    assert data is not None and json.loads(data) == {"version": "1", "id": created}


def test_cluster_ids_are_kafkas_shape() -> None:
    ids = {codecs.new_cluster_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{22}", i) for i in ids)
    with pytest.raises(ValueError, match="field 'id'"):
        codecs.decode_cluster_id(b'{"version":"1"}')


def test_producer_id_blocks_are_disjoint_and_follow_each_other(
    make_zk_client: ZkClientFactory,
) -> None:
    a, b = make_zk_client(), make_zk_client()
    first = a.allocate_producer_id_block(1, 1000)
    second = b.allocate_producer_id_block(2, 1000)
    third = a.allocate_producer_id_block(1, 1000)
    assert second == (first[1] + 1, first[1] + 1000)
    assert third == (second[1] + 1, second[1] + 1000)
    data = a.get_data(paths.LATEST_PRODUCER_ID_BLOCK)
    assert data is not None
    assert json.loads(data) == {
        "version": 1,
        "broker": 1,
        "block_start": str(third[0]),
        "block_end": str(third[1]),
    }


def test_producer_id_blocks_taken_at_once_never_overlap(make_zk_client: ZkClientFactory) -> None:
    clients = [make_zk_client() for _ in range(4)]
    blocks: list[tuple[int, int]] = []
    lock = threading.Lock()

    def take(c: ZkClient, broker: int) -> None:
        for _ in range(5):
            got = c.allocate_producer_id_block(broker, 10)
            with lock:
                blocks.append(got)

    threads = [threading.Thread(target=take, args=(c, i)) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    starts = sorted(s for s, _ in blocks)
    assert len(blocks) == 20 and len(set(starts)) == 20
    assert all(b - a == 10 for a, b in itertools.pairwise(starts))
