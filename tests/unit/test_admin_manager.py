"""The admin manager (server/admin_manager.py) against an in-memory ZooKeeper store: topic
creation, deletion, partition additions and config changes, each checked and written as
Kafka's ZkAdminManager does, the answer waiting for this broker's metadata.
tests/zk/test_create_partitions.py runs the same path on a real ZooKeeper."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping

import pytest

from minikafka.config.broker import BrokerConfig
from minikafka.config.dynamic import AlterableConfig, BrokerConfigLayers, ResourceType
from minikafka.protocol.errors import ErrorCode, TopicAlreadyExistsError
from minikafka.server.admin_manager import AdminManager, NewPartitions, NewTopic
from minikafka.zk.client import TopicZNode, ZkBadVersionError

SET, DELETE = 0, 1  # IncrementalAlterConfigs operations


class FakeStore:
    """AdminZkStore in memory: topics' assignments with znode versions, configs, the
    deletion markers, and the config change notifications written."""

    def __init__(
        self, brokers: Iterable[int] = (1, 2, 3), racks: Mapping[int, str] | None = None
    ) -> None:
        self.brokers = sorted(brokers)
        self.racks = dict(racks or {})  # broker.rack of the brokers that have one
        self.topics: dict[str, TopicZNode] = {}
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.broker_configs: dict[str, dict[str, str]] = {}
        self.deletions: list[str] = []
        self.notifications: list[str] = []
        self.races = 0  # set_topic_assignment calls to fail as if another admin wrote first

    async def get_broker_racks(self) -> dict[int, str | None]:
        return {b: self.racks.get(b) for b in self.brokers}

    async def topic_exists(self, topic: str) -> bool:
        return topic in self.topics

    async def create_topic(
        self, topic: str, assignment: Mapping[int, Iterable[int]], config: Mapping[str, str]
    ) -> str:
        if topic in self.topics:
            raise TopicAlreadyExistsError(f"Topic '{topic}' already exists.")
        self.topic_configs[topic] = dict(config)
        self.topics[topic] = TopicZNode({p: tuple(r) for p, r in assignment.items()}, 0, "id")
        return "id"

    async def request_topic_deletion(self, topic: str) -> bool:
        self.deletions.append(topic)
        return True

    async def get_assignment_and_version(self, topic: str) -> TopicZNode | None:
        return self.topics.get(topic)

    async def set_topic_assignment(
        self,
        topic: str,
        assignment: Mapping[int, Iterable[int]],
        expected_version: int,
        topic_id: str | None,
    ) -> int:
        current = self.topics[topic]
        if self.races:
            self.races -= 1
            self.topics[topic] = current._replace(version=current.version + 1)
            raise ZkBadVersionError("someone else wrote first")
        assert expected_version == current.version
        new = TopicZNode(
            {p: tuple(r) for p, r in assignment.items()}, expected_version + 1, topic_id
        )
        self.topics[topic] = new
        return new.version

    async def get_topic_config(self, topic: str) -> dict[str, str]:
        return dict(self.topic_configs.get(topic, {}))

    async def change_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        self.topic_configs[topic] = dict(config)
        self.notifications.append(f"topics/{topic}")

    async def get_broker_config(self, entity: str) -> dict[str, str]:
        return dict(self.broker_configs.get(entity, {}))

    async def change_broker_config(self, entity: str, config: Mapping[str, str]) -> None:
        self.broker_configs[entity] = dict(config)
        self.notifications.append(f"brokers/{entity}")


class FakeMetadata:
    """This broker's metadata cache: which topics it knows, with leaders, and a change
    event the admin manager waits on."""

    def __init__(self) -> None:
        self.led: dict[str, int] = {}
        self._changed = asyncio.Event()

    def show(self, topic: str, partitions: int) -> None:
        self.led[topic] = partitions
        self._changed.set()

    def forget(self, topic: str) -> None:
        self.led.pop(topic, None)
        self._changed.set()

    def all_partitions_have_leaders(self, topic: str, partitions: int) -> bool:
        return self.led.get(topic, 0) >= partitions

    def contains_topic(self, topic: str) -> bool:
        return topic in self.led

    async def wait_for_change(self, timeout_s: float) -> bool:
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout_s)
        return self._changed.is_set()


class FakeController:
    def __init__(self, active: bool = True) -> None:
        self.is_active = active
        self.queued_for_deletion: set[str] = set()

    def is_topic_queued_for_deletion(self, topic: str) -> bool:
        return topic in self.queued_for_deletion


def manager(
    store: FakeStore | None = None,
    metadata: FakeMetadata | None = None,
    controller: FakeController | None = None,
    **config: object,
) -> AdminManager:
    broker_config = BrokerConfig(broker_id=1, **config)  # type: ignore[arg-type]
    layers = BrokerConfigLayers(broker_config)
    return AdminManager(
        store or FakeStore(),
        metadata or FakeMetadata(),
        controller,
        lambda: broker_config,
        lambda: layers,
    )


def codes(results: Iterable[object]) -> dict[str, int]:
    return {r.name: r.error_code for r in results}  # type: ignore[attr-defined]


async def test_a_topic_is_created_with_the_brokers_defaults_and_spread_over_the_brokers() -> None:
    store = FakeStore()
    admin = manager(store, num_partitions=4, default_replication_factor=3)
    results = await admin.create_topics([NewTopic("orders")], timeout_ms=0, validate_only=False)
    assert codes(results) == {"orders": ErrorCode.NONE}
    assignment = store.topics["orders"].assignment
    assert sorted(assignment) == [0, 1, 2, 3]
    assert all(sorted(r) == [1, 2, 3] for r in assignment.values())
    # Leaders differ between partitions (Kafka's round-robin start).
    assert len({r[0] for r in assignment.values()}) == 3


async def test_create_topics_refuses_each_bad_topic_with_kafkas_code() -> None:
    store = FakeStore(brokers=[1, 2])
    admin = manager(store)
    results = await admin.create_topics(
        [
            NewTopic("ok", 1, 2),
            NewTopic("bad name!", 1, 1),
            NewTopic("too-many-replicas", 1, 3),
            NewTopic("no-partitions", 0, 1),
            NewTopic("both", 1, 1, {0: [1]}),
            NewTopic("bad-config", 1, 1, configs={"cleanup.policy": "sideways"}),
        ],
        timeout_ms=0,
        validate_only=False,
    )
    assert codes(results) == {
        "ok": ErrorCode.NONE,
        "bad name!": ErrorCode.INVALID_TOPIC_EXCEPTION,
        "too-many-replicas": ErrorCode.INVALID_REPLICATION_FACTOR,
        "no-partitions": ErrorCode.INVALID_PARTITIONS,
        "both": ErrorCode.INVALID_REQUEST,
        "bad-config": ErrorCode.INVALID_CONFIG,
    }
    assert list(store.topics) == ["ok"]


async def test_a_duplicate_topic_in_one_request_is_an_invalid_request() -> None:
    admin = manager()
    results = await admin.create_topics(
        [NewTopic("t", 1, 1), NewTopic("t", 1, 1)], timeout_ms=0, validate_only=False
    )
    assert [r.error_code for r in results] == [ErrorCode.INVALID_REQUEST] * 2


async def test_validate_only_writes_nothing() -> None:
    store = FakeStore()
    admin = manager(store)
    results = await admin.create_topics([NewTopic("t", 3, 3)], timeout_ms=0, validate_only=True)
    assert codes(results) == {"t": ErrorCode.NONE}
    assert store.topics == {}


async def test_the_answer_waits_for_leaders_then_times_out_with_the_topic_still_created() -> None:
    store, metadata = FakeStore(), FakeMetadata()
    admin = manager(store, metadata)

    async def leaders_elected() -> None:
        while "fast" not in store.topics:
            await asyncio.sleep(0)
        metadata.show("fast", 2)

    elect = asyncio.ensure_future(leaders_elected())
    fast = await admin.create_topics(
        [NewTopic("fast", 2, 1)], timeout_ms=5_000, validate_only=False
    )
    await elect
    assert codes(fast) == {"fast": ErrorCode.NONE}

    slow = await admin.create_topics([NewTopic("slow", 2, 1)], timeout_ms=50, validate_only=False)
    assert codes(slow) == {"slow": ErrorCode.REQUEST_TIMED_OUT}
    assert "slow" in store.topics


async def test_deletion_is_requested_for_existing_topics_only() -> None:
    store, metadata = FakeStore(), FakeMetadata()
    admin = manager(store, metadata)
    await admin.create_topic(NewTopic("t", 1, 1))
    results = await admin.delete_topics(["t", "missing", "../x"], timeout_ms=0)
    assert codes(results) == {
        "t": ErrorCode.NONE,
        "missing": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        "../x": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert store.deletions == ["t"]


async def test_deletion_waits_until_the_topic_leaves_this_brokers_metadata() -> None:
    store, metadata = FakeStore(), FakeMetadata()
    admin = manager(store, metadata)
    await admin.create_topic(NewTopic("t", 1, 1))
    metadata.show("t", 1)
    timed_out = await admin.delete_topics(["t"], timeout_ms=50)
    assert codes(timed_out) == {"t": ErrorCode.REQUEST_TIMED_OUT}

    async def deleted() -> None:
        await asyncio.sleep(0)
        metadata.forget("t")

    forget = asyncio.ensure_future(deleted())
    done = await admin.delete_topics(["t"], timeout_ms=5_000)
    await forget
    assert codes(done) == {"t": ErrorCode.NONE}


async def test_deletion_disabled_is_refused() -> None:
    store = FakeStore()
    admin = manager(store, delete_topic_enable=False)
    await admin.create_topic(NewTopic("t", 1, 1))
    results = await admin.delete_topics(["t"], timeout_ms=0)
    assert codes(results) == {"t": ErrorCode.TOPIC_DELETION_DISABLED}
    assert store.deletions == []


async def test_partitions_are_added_to_the_whole_assignment_by_a_conditional_write() -> None:
    store = FakeStore()
    admin = manager(store, controller=FakeController())
    await admin.create_topic(NewTopic("t", 2, 2))
    before = store.topics["t"].assignment
    store.races = 2  # two other admins write first: read again, twice
    results = await admin.create_partitions([NewPartitions("t", 5)], 0, validate_only=False)
    assert codes(results) == {"t": ErrorCode.NONE}
    after = store.topics["t"].assignment
    assert sorted(after) == [0, 1, 2, 3, 4]
    assert {p: after[p] for p in before} == before


async def test_no_partitions_are_added_while_a_partition_of_the_topic_moves() -> None:
    store = FakeStore()
    admin = manager(store, controller=FakeController())
    await admin.create_topic(NewTopic("t", 2, 2))
    store.topics["t"] = store.topics["t"]._replace(reassigning=(1,))
    before = store.topics["t"]
    results = await admin.create_partitions([NewPartitions("t", 4)], 0, validate_only=False)
    assert codes(results) == {"t": ErrorCode.REASSIGNMENT_IN_PROGRESS}
    assert store.topics["t"] == before


async def test_create_partitions_errors_per_topic() -> None:
    store = FakeStore()
    controller = FakeController()
    admin = manager(store, controller=controller)
    await admin.create_topic(NewTopic("t", 2, 1))
    await admin.create_topic(NewTopic("going", 1, 1))
    controller.queued_for_deletion.add("going")
    results = await admin.create_partitions(
        [
            NewPartitions("t", 1),
            NewPartitions("missing", 3),
            NewPartitions("going", 3),
            NewPartitions("dup", 2),
            NewPartitions("dup", 3),
        ],
        0,
        validate_only=False,
    )
    assert codes(results) == {
        "t": ErrorCode.INVALID_PARTITIONS,
        "missing": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        "going": ErrorCode.INVALID_TOPIC_EXCEPTION,
        "dup": ErrorCode.INVALID_REQUEST,
    }


@pytest.mark.parametrize("controller", [None, FakeController(active=False)])
async def test_only_the_controller_adds_partitions(controller: FakeController | None) -> None:
    admin = manager(controller=controller)
    results = await admin.create_partitions([NewPartitions("t", 3)], 0, validate_only=False)
    assert codes(results) == {"t": ErrorCode.NOT_CONTROLLER}


async def test_a_topics_config_change_is_written_with_a_notification() -> None:
    store = FakeStore()
    admin = manager(store)
    await admin.create_topic(NewTopic("t", 1, 1, configs={"retention.ms": "1000"}))
    await admin.incremental_alter_configs(
        ResourceType.TOPIC,
        "t",
        [
            AlterableConfig("cleanup.policy", SET, "compact"),
            AlterableConfig("retention.ms", DELETE, None),
        ],
        validate_only=False,
    )
    assert store.topic_configs["t"] == {"cleanup.policy": "compact"}
    assert store.notifications == ["topics/t"]
    await admin.alter_configs(ResourceType.TOPIC, "t", [("segment.ms", "60000")], False)
    assert store.topic_configs["t"] == {"segment.ms": "60000"}


async def test_a_broker_changes_only_its_own_and_the_default_dynamic_configs() -> None:
    store = FakeStore()
    admin = manager(store)
    change = [AlterableConfig("log.cleaner.backoff.ms", SET, "500")]
    await admin.incremental_alter_configs(ResourceType.BROKER, "1", change, False)
    await admin.incremental_alter_configs(ResourceType.BROKER, "", change, False)
    assert store.broker_configs == {
        "1": {"log.cleaner.backoff.ms": "500"},
        "<default>": {"log.cleaner.backoff.ms": "500"},
    }
    with pytest.raises(Exception, match="Unexpected broker id, expected 1"):
        await admin.incremental_alter_configs(ResourceType.BROKER, "2", change, False)


async def test_describing_an_unknown_topic_is_unknown_topic_or_partition() -> None:
    admin = manager()
    with pytest.raises(Exception, match="does not exist") as raised:
        await admin.describe_configs(ResourceType.TOPIC, "missing", None, False)
    assert raised.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # type: ignore[attr-defined]


async def test_topics_on_racked_brokers_have_their_replicas_on_different_racks() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b"}
    store = FakeStore(brokers=racks, racks=racks)
    admin = manager(store, controller=FakeController())
    results = await admin.create_topics([NewTopic("t", 8, 2)], timeout_ms=0, validate_only=False)
    assert codes(results) == {"t": ErrorCode.NONE}
    results = await admin.create_partitions([NewPartitions("t", 16)], 0, validate_only=False)
    assert codes(results) == {"t": ErrorCode.NONE}
    assignment = store.topics["t"].assignment
    assert sorted(assignment) == list(range(16))
    assert all({racks[b] for b in r} == {"a", "b"} for r in assignment.values())


async def test_some_brokers_without_a_rack_fail_creation_as_kafkas_admin_operation() -> None:
    store = FakeStore(racks={1: "a", 2: "b"})  # broker 3 has none
    admin = manager(store, controller=FakeController())
    results = await admin.create_topics([NewTopic("t", 3, 2)], timeout_ms=0, validate_only=False)
    # AdminOperationException: UNKNOWN_SERVER_ERROR, no message (ApiError.fromThrowable).
    assert [(r.error_code, r.error_message) for r in results] == [
        (ErrorCode.UNKNOWN_SERVER_ERROR, None)
    ]
    assert "t" not in store.topics
    # A topic with its own assignment needs no placement; adding partitions checks every
    # broker's rack first, whatever the request (AdminZkClient.getBrokerMetadatas).
    results = await admin.create_topics(
        [NewTopic("own", assignments={0: [1, 3]})], timeout_ms=0, validate_only=False
    )
    assert codes(results) == {"own": ErrorCode.NONE}
    results = await admin.create_partitions(
        [NewPartitions("own", 2, [[2, 3]]), NewPartitions("missing", 2)], 0, validate_only=False
    )
    assert codes(results) == {
        "own": ErrorCode.UNKNOWN_SERVER_ERROR,
        "missing": ErrorCode.UNKNOWN_SERVER_ERROR,
    }
    assert sorted(store.topics["own"].assignment) == [0]
