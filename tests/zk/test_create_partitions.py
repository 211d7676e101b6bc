"""CreatePartitions against a real ZooKeeper: the broker's admin manager (Kafka's
ZkAdminManager.createPartitions path: validation, a conditional write of the whole
assignment, DelayedCreatePartitions) over its kazoo store, the znode writes, and the controller's per-topic
watch on `/brokers/topics/<t>` (Kafka's PartitionModificationsHandler)."""

from __future__ import annotations

import asyncio

import pytest

from minikafka.common import TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.config.dynamic import BrokerConfigLayers
from minikafka.controller.zk_store import KazooControllerZkStore
from minikafka.protocol.errors import ErrorCode
from minikafka.rpc.messages import (
    BrokerNode,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
from minikafka.server.admin_manager import AdminManager, NewPartitions
from minikafka.server.admin_zk_store import KazooAdminZkStore
from minikafka.server.metadata_cache import MetadataCache
from minikafka.zk.client import (
    BrokerInfo,
    ControllerMovedError,
    TopicZNode,
    ZkBadVersionError,
    ZkClient,
    ZkNoNodeError,
)
from tests.cluster.conftest import wait_until_async

from .conftest import ZkClientFactory


class FakeController:
    """The part of the controller the admin manager asks (`ControllerView`)."""

    def __init__(self) -> None:
        self.is_active = True
        self.queued_for_deletion: set[str] = set()

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[TopicPartition]:
        raise AssertionError("not used here")

    def is_topic_queued_for_deletion(self, topic: str) -> bool:
        return topic in self.queued_for_deletion


def register_brokers(client: ZkClient, *ids: int) -> None:
    for b in ids:
        client.register_broker(BrokerInfo(b, "127.0.0.1", 9090 + b))


class Admin(AdminManager):
    """The broker's admin manager, with the metadata cache it waits on at hand."""

    def __init__(self, client: ZkClient, controller: FakeController | None) -> None:
        config = BrokerConfig(broker_id=1)
        self.cache = MetadataCache(1)
        super().__init__(
            KazooAdminZkStore(client),
            self.cache,
            controller,
            lambda: config,
            lambda: BrokerConfigLayers(config),
        )


def apis(client: ZkClient, controller: FakeController | None) -> Admin:
    return Admin(client, controller)


async def create_partitions(
    api: AdminManager, *topics: NewPartitions, timeout_ms: int = 0, validate_only: bool = False
) -> dict[str, tuple[int, str | None]]:
    results = await api.create_partitions(list(topics), timeout_ms, validate_only)
    return {r.name: (r.error_code, r.error_message) for r in results}


def metadata_with(topic: str, partitions: int) -> UpdateMetadataRequest:
    """What the controller sends once the partitions have leaders."""
    return UpdateMetadataRequest(
        1,
        1,
        0,
        [
            UpdateMetadataPartitionState(topic, p, 1, 1, 0, [1, 2], 0, [1, 2], [])
            for p in range(partitions)
        ],
        [BrokerNode(b, "127.0.0.1", 9090 + b) for b in (1, 2, 3)],
    )


# --- ZkClient ----------------------------------------------------------------------------


def test_conditional_assignment_write(zk_client: ZkClient) -> None:
    topic_id = zk_client.create_topic("t", {0: [1, 2]})
    assert zk_client.get_assignment_and_version("t") == ({0: (1, 2)}, 0, topic_id, ())
    assert zk_client.set_topic_assignment("t", {0: [1, 2], 1: [2, 1]}, 0, topic_id) == 1
    # Adding partitions keeps the topic's id.
    assert zk_client.get_assignment_and_version("t") == ({0: (1, 2), 1: (2, 1)}, 1, topic_id, ())
    assert zk_client.get_assignment("t") == {0: (1, 2), 1: (2, 1)}
    with pytest.raises(ZkBadVersionError):
        zk_client.set_topic_assignment("t", {0: [1, 2], 1: [2, 3]}, 0)  # stale
    with pytest.raises(ZkNoNodeError):
        zk_client.set_topic_assignment("gone", {0: [1]}, 0)
    assert zk_client.get_assignment_and_version("gone") is None


async def test_controller_assignment_write_is_fenced(make_zk_client: ZkClientFactory) -> None:
    client = make_zk_client()
    store = KazooControllerZkStore(client, asyncio.get_running_loop())
    _, fence = await store.try_elect_controller(1) or (0, 0)
    topic_id = await asyncio.to_thread(client.create_topic, "t", {0: [1, 2], 1: [2, 1]})
    await store.set_topic_assignment("t", {0: (1, 2)}, fence, topic_id)
    assert await store.get_assignments(["t"]) == {"t": {0: (1, 2)}}
    assert await store.get_topic_ids(["t", "gone"]) == {"t": topic_id}
    with pytest.raises(ControllerMovedError):
        await store.set_topic_assignment("t", {0: (2, 1)}, fence + 1, topic_id)
    with pytest.raises(ZkNoNodeError):
        await store.set_topic_assignment("gone", {0: (1,)}, fence, None)


# --- the controller's watch ------------------------------------------------------------------


async def test_partition_modification_watches(make_zk_client: ZkClientFactory) -> None:
    watcher, admin = make_zk_client(), make_zk_client()
    store = KazooControllerZkStore(watcher, asyncio.get_running_loop())
    _, fence = await store.try_elect_controller(9) or (0, 0)
    for t in ("t", "u", "v"):
        await asyncio.to_thread(admin.create_topic, t, {0: [1]})
    events: asyncio.Queue[str] = asyncio.Queue()
    handles = await store.watch_partition_modifications(
        ["t", "u", "v", "absent"], events.put_nowait
    )
    assert sorted(handles) == ["absent", "t", "u", "v"]
    assert events.empty()  # registration reports nothing

    await asyncio.to_thread(admin.set_topic_assignment, "t", {0: [1], 1: [1]}, 0)
    assert await asyncio.wait_for(events.get(), 10) == "t"
    await asyncio.to_thread(admin.set_topic_assignment, "t", {0: [1], 1: [1], 2: [1]}, 1)
    assert await asyncio.wait_for(events.get(), 10) == "t"  # re-armed

    # Deletion is not a modification, and ends the watch: a re-created topic is the
    # controller's to watch anew (from its topic change handling).
    await store.delete_topic_znodes("u", fence)
    await asyncio.to_thread(admin.create_topic, "u", {0: [1]})
    await asyncio.to_thread(admin.set_topic_assignment, "u", {0: [1], 1: [1]}, 0)
    # A cancelled watch reports nothing either; nor does one set on a missing znode.
    handles["v"].cancel()
    await asyncio.to_thread(admin.set_topic_assignment, "v", {0: [1], 1: [1]}, 0)
    await asyncio.to_thread(admin.create_topic, "absent", {0: [1]})
    await asyncio.to_thread(admin.set_topic_assignment, "absent", {0: [1], 1: [1]}, 0)
    # A control event after all of them: the first thing reported.
    await asyncio.to_thread(admin.set_topic_assignment, "t", {0: [1]}, 2)
    assert await asyncio.wait_for(events.get(), 10) == "t"
    assert events.empty()


# --- the broker's CreatePartitions handler ----------------------------------------------------


async def test_partitions_are_added_to_the_assignment_znode(zk_client: ZkClient) -> None:
    register_brokers(zk_client, 1, 2, 3)
    zk_client.create_topic("t", {0: [2, 3], 1: [3, 1], 2: [1, 2]})
    api = apis(zk_client, FakeController())
    assert await create_partitions(api, NewPartitions("t", 5)) == {"t": (0, None)}
    # The rotation goes on from partition 0's first replica (broker 2).
    assert zk_client.get_assignment("t") == {
        0: (2, 3),
        1: (3, 1),
        2: (1, 2),
        3: (2, 3),
        4: (3, 1),
    }
    manual = NewPartitions("t", 7, [[1, 3], [3, 2]])
    assert await create_partitions(api, manual) == {"t": (0, None)}
    assert zk_client.get_assignment("t") == {
        0: (2, 3),
        1: (3, 1),
        2: (1, 2),
        3: (2, 3),
        4: (3, 1),
        5: (1, 3),
        6: (3, 2),
    }


async def test_validate_only_writes_nothing(zk_client: ZkClient) -> None:
    register_brokers(zk_client, 1, 2)
    topic_id = zk_client.create_topic("t", {0: [1, 2]})
    api = apis(zk_client, FakeController())
    ok = await create_partitions(api, NewPartitions("t", 3), validate_only=True)
    assert ok == {"t": (0, None)}
    bad = await create_partitions(api, NewPartitions("t", 1), validate_only=True)
    assert bad["t"][0] == ErrorCode.INVALID_PARTITIONS
    assert zk_client.get_assignment_and_version("t") == ({0: (1, 2)}, 0, topic_id, ())


async def test_errors_per_topic_with_kafkas_codes_and_messages(zk_client: ZkClient) -> None:
    register_brokers(zk_client, 1, 2, 3)
    for t in ("t", "deleting", "dup"):
        zk_client.create_topic(t, {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    controller = FakeController()
    controller.queued_for_deletion.add("deleting")
    api = apis(zk_client, controller)
    results = await create_partitions(
        api,
        NewPartitions("nope", 4),
        NewPartitions("t", 2),
        NewPartitions("deleting", 4),
        NewPartitions("dup", 4),
        NewPartitions("dup", 5),
        NewPartitions("bad/name", 4),
    )
    assert results == {
        "nope": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist."),
        "t": (
            ErrorCode.INVALID_PARTITIONS,
            "Topic currently has 3 partitions, which is higher than the requested 2.",
        ),
        "deleting": (ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion."),
        "dup": (ErrorCode.INVALID_REQUEST, "Duplicate topic in request."),
        "bad/name": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'bad/name' does not exist."),
    }
    cases = {
        3: (ErrorCode.INVALID_PARTITIONS, "Topic already has 3 partitions."),
        4: (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Unknown broker(s) in replica assignment: 7."),
    }
    assert (await create_partitions(api, NewPartitions("t", 3)))["t"] == cases[3]
    wrong_broker = NewPartitions("t", 4, [[1, 7]])
    assert (await create_partitions(api, wrong_broker))["t"] == cases[4]
    too_few = NewPartitions("t", 5, [[1, 2]])
    assert (await create_partitions(api, too_few))["t"] == (
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "Increasing the number of partitions by 2 but 1 assignments provided.",
    )
    wrong_rf = NewPartitions("t", 4, [[1, 2, 3]])
    code, message = (await create_partitions(api, wrong_rf))["t"]
    assert code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert message is not None and "Inconsistent replication factor" in message
    for t in ("t", "deleting", "dup"):
        assert len(zk_client.get_assignment(t) or {}) == 3  # nothing was written


async def test_too_few_live_brokers_for_the_replication_factor(zk_client: ZkClient) -> None:
    register_brokers(zk_client, 1, 2)
    zk_client.create_topic("t", {0: [1, 2, 3]})  # broker 3 is gone
    results = await create_partitions(apis(zk_client, FakeController()), NewPartitions("t", 2))
    assert results == {
        "t": (
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor: 3 larger than available brokers: 2.",
        )
    }


async def test_only_the_controller_answers(zk_client: ZkClient) -> None:
    register_brokers(zk_client, 1, 2)
    zk_client.create_topic("t", {0: [1, 2]})
    inactive = FakeController()
    inactive.is_active = False
    for controller in (None, inactive):
        api = apis(zk_client, controller)
        results = await create_partitions(api, NewPartitions("t", 2), NewPartitions("t", 3))
        assert results == {"t": (ErrorCode.NOT_CONTROLLER, None)}
    assert zk_client.get_assignment("t") == {0: (1, 2)}


async def test_a_concurrent_change_is_read_again_before_writing(
    zk_client: ZkClient, make_zk_client: ZkClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another admin adds partitions between our read and our write: the conditional write
    fails, and the request is judged again on what the topic has now (Kafka writes
    unconditionally, and the last writer wins)."""
    register_brokers(zk_client, 1, 2)
    zk_client.create_topic("t", {0: [1, 2]})
    other = make_zk_client()
    read = zk_client.get_assignment_and_version
    reads = []

    def read_then_race(topic: str) -> TopicZNode | None:
        got = read(topic)
        reads.append(got)
        if len(reads) == 1:
            other.set_topic_assignment("t", {0: [1, 2], 1: [2, 1], 2: [1, 2]}, 0)
        return got

    monkeypatch.setattr(zk_client, "get_assignment_and_version", read_then_race)
    api = apis(zk_client, FakeController())
    assert await create_partitions(api, NewPartitions("t", 3)) == {
        "t": (ErrorCode.INVALID_PARTITIONS, "Topic already has 3 partitions.")
    }
    assert len(reads) == 2
    assert await create_partitions(api, NewPartitions("t", 4)) == {"t": (0, None)}
    assert zk_client.get_assignment("t") == {0: (1, 2), 1: (2, 1), 2: (1, 2), 3: (2, 1)}


async def test_the_answer_waits_for_leaders_in_this_brokers_metadata(zk_client: ZkClient) -> None:
    """Kafka's DelayedCreatePartitions: done once every partition has a leader in the
    metadata cache, else REQUEST_TIMED_OUT (the partitions are added all the same)."""
    register_brokers(zk_client, 1, 2, 3)
    zk_client.create_topic("t", {0: [1, 2]})
    zk_client.create_topic("u", {0: [1, 2]})
    api = apis(zk_client, FakeController())
    api.cache.update(metadata_with("t", 1))
    api.cache.update(metadata_with("u", 1))

    answer = asyncio.create_task(create_partitions(api, NewPartitions("t", 3), timeout_ms=30_000))
    await wait_until_async(
        lambda: len(zk_client.get_assignment("t") or {}) == 3, what="the assignment write"
    )
    assert not answer.done()
    api.cache.update(metadata_with("t", 3))
    assert await asyncio.wait_for(answer, 10) == {"t": (0, None)}

    timed_out = await create_partitions(api, NewPartitions("u", 2), timeout_ms=200)
    code, message = timed_out["u"]
    assert code == ErrorCode.REQUEST_TIMED_OUT
    assert message is not None and "not all 2 partitions have leaders" in message
    assert len(zk_client.get_assignment("u") or {}) == 2
