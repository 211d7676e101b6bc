"""Partition reassignment (KIP-455) on a real cluster, driven by an unmodified Kafka client
(kafka-python's KafkaAdminClient: AlterPartitionReassignments, ListPartitionReassignments)
and by the older `/admin/reassign_partitions` znode.

The cluster grows from three brokers to four in the first test and stays at four for the
others. A move in the middle is made to stay in the middle by pausing (SIGSTOP) the broker
that must catch up, so that a controller or leader can be killed while it runs.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import TopicPartition as KTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import (
    InvalidReplicationAssignmentError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)

from minikafka.client.controller_calls import ControllerClient
from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition
from tests.cluster.conftest import started_cluster, wait_until
from tests.cluster.helpers import (
    admin_client,
    bootstrap,
    create_topic,
    producing,
    read_records,
    run_cli,
    send_values,
)

pytestmark = pytest.mark.timeout(300)

MIN_INSYNC = 2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with started_cluster(
        tmp_path_factory.mktemp("reassign"),
        # Leadership stays where the tests put it.
        {"auto.leader.rebalance.enable": "false", "min.insync.replicas": str(MIN_INSYNC)},
    ) as c:
        yield c


@pytest.fixture
def admin(cluster: LocalCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=30000)
    try:
        yield client
    finally:
        client.close()


def four_brokers(cluster: LocalCluster) -> None:
    if 4 not in cluster.broker_ids or not cluster.is_alive(4):
        cluster.start_broker(4)
    for b in cluster.broker_ids:
        if not cluster.is_alive(b):
            cluster.start_broker(b)
    cluster.wait_for_metadata(cluster.broker_ids, 60)


def create(cluster: LocalCluster, topic: str, assignment: dict[int, list[int]]) -> None:
    asyncio.run(create_topic(cluster, topic, -1, -1, assignment=assignment))


def tps(topic: str, n: int) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in range(n)]


def ktp(tp: TopicPartition) -> KTopicPartition:
    return KTopicPartition(tp.topic, tp.partition)


def assignment(cluster: LocalCluster, topic: str) -> dict[int, tuple[int, ...]]:
    got = cluster.zk_client().get_assignment(topic)
    assert got is not None
    return got


def moving(admin: KafkaAdminClient) -> dict[KTopicPartition, dict[str, list[int]]]:
    result: dict[KTopicPartition, dict[str, list[int]]] = admin.list_partition_reassignments()
    return result


def wait_until_moved(cluster: LocalCluster, targets: dict[TopicPartition, list[int]]) -> None:
    def done() -> bool:
        zk = cluster.zk_client()
        states = zk.get_partition_states(list(targets))
        for tp, target in targets.items():
            got = zk.get_assignment(tp.topic)
            if got is None or got[tp.partition] != tuple(target):
                return False
            if set(states[tp].isr) != set(target) or states[tp].leader not in target:
                return False
        return True

    wait_until(done, 90, f"reassignments {targets}")
    assert not any(tp in moving_at_controller(cluster) for tp in targets)


def at_controller(cluster: LocalCluster) -> ControllerClient:
    """minikafka's controller client bootstrapped from the controller alone: a client that
    looks for the controller may ask a paused broker first and wait out its timeout."""
    controller = cluster.zk_client().get_controller_id()
    assert controller is not None
    return ControllerClient(
        "{}:{}".format(*cluster.broker_address(controller)), client_id="test", timeout_s=30
    )


def alter_at_controller(
    cluster: LocalCluster, targets: dict[TopicPartition, list[int] | None]
) -> dict[TopicPartition, int]:
    """AlterPartitionReassignments straight to the controller: each partition's error code."""

    async def call() -> dict[TopicPartition, int]:
        client = at_controller(cluster)
        try:
            errors = await client.alter_partition_reassignments(targets)
        finally:
            await client.close()
        return {tp: 0 if e is None else int(e.code) for tp, e in errors.items()}

    return asyncio.run(call())


def moving_at_controller(cluster: LocalCluster) -> dict[TopicPartition, list[list[int]]]:
    """ListPartitionReassignments straight to the controller: [replicas, adding, removing]
    of each partition being moved."""

    async def call() -> dict[TopicPartition, list[list[int]]]:
        client = at_controller(cluster)
        try:
            ongoing = await client.list_partition_reassignments()
        finally:
            await client.close()
        return {
            tp: [list(r.replicas), list(r.adding), list(r.removing)] for tp, r in ongoing.items()
        }

    return asyncio.run(call())


def under_replicated(cluster: LocalCluster, broker_id: int) -> float:
    """The broker's UnderReplicatedPartitions, from its /metrics."""
    with urllib.request.urlopen(cluster.admin_url(broker_id) + "/metrics", timeout=10) as r:
        text = r.read().decode()
    (line,) = [
        x
        for x in text.splitlines()
        if x.startswith("kafka_server_replicamanager_underreplicatedpartitions ")
    ]
    return float(line.split()[1])


def replica_dir(cluster: LocalCluster, broker_id: int, tp: TopicPartition) -> Path:
    return cluster.log_dir(broker_id) / f"{tp.topic}-{tp.partition}"


class AcksAllProducer:
    """Writes numbered records with acks=all until stopped; keeps what was acknowledged."""

    def __init__(self, servers: str, topic: str) -> None:
        self.topic = topic
        self.acknowledged: set[bytes] = set()
        self.failed = 0
        self._servers = servers
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> AcksAllProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)

    def wait_for(self, count: int) -> None:
        wait_until(lambda: len(self.acknowledged) >= count, 60, f"{count} acknowledged")

    def _run(self) -> None:
        with producing(self._servers, {"linger.ms": 2, "message.timeout.ms": 60000}) as p:
            n = 0
            while not self._stop.is_set():
                value = f"record-{n}".encode()
                n += 1

                def report(err: object, msg: object, value: bytes = value) -> None:
                    if err is None:
                        self.acknowledged.add(value)
                    else:
                        self.failed += 1

                p.produce(self.topic, value, on_delivery=report)
                p.poll(0.002)
            p.flush(60)


class IsrWatcher:
    """Samples the ISR of some partitions in ZooKeeper every few milliseconds."""

    def __init__(self, cluster: LocalCluster, partitions: list[TopicPartition]) -> None:
        self.smallest = 99
        self._zk = cluster.zk_client()
        self._partitions = partitions
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> IsrWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            for state in self._zk.get_partition_states(self._partitions).values():
                self.smallest = min(self.smallest, len(state.isr))
            time.sleep(0.01)


def test_grow_to_four_brokers_and_move_half_the_partitions_while_writing(
    cluster: LocalCluster, admin: KafkaAdminClient
) -> None:
    topic = "grow"
    original = {p: [1 + (p + i) % 3 for i in range(3)] for p in range(6)}
    create(cluster, topic, original)
    # Half the partitions get broker 4 in place of their preferred leader.
    targets = {TopicPartition(topic, p): [4, *original[p][1:]] for p in range(3)}
    with AcksAllProducer(cluster.bootstrap_servers, topic) as producer:
        producer.wait_for(500)
        cluster.start_broker(4)
        cluster.wait_for_metadata(cluster.broker_ids, 60)
        with IsrWatcher(cluster, tps(topic, 6)) as isr:
            results = admin.alter_partition_reassignments(
                {ktp(tp): target for tp, target in targets.items()}
            )
            assert results == dict.fromkeys((ktp(tp) for tp in targets), None)
            # What is still moving when asked (a move may be done already) is listed as
            # Kafka lists it.
            listed = moving(admin)
            assert set(listed) <= {ktp(tp) for tp in targets}
            for tp, target in targets.items():
                removed = original[tp.partition][0]
                assert listed.get(ktp(tp), {}) in (
                    {},
                    {
                        "replicas": [*target, removed],
                        "adding_replicas": [4],
                        "removing_replicas": [removed],
                    },
                )
            wait_until_moved(cluster, targets)
        acknowledged_during = len(producer.acknowledged)
        producer.wait_for(acknowledged_during + 500)
    assert isr.smallest >= MIN_INSYNC
    assert assignment(cluster, topic) == {
        p: tuple(targets[TopicPartition(topic, p)]) if p < 3 else tuple(original[p])
        for p in range(6)
    }
    # Nothing acknowledged is lost, and nothing is read twice.
    records = read_records(cluster.bootstrap_servers, topic, timeout=60)
    values = [r.value for r in records]
    assert len(values) == len(set(values))
    assert producer.acknowledged <= set(values)
    # The new replicas hold the data; the replaced ones deleted theirs.
    for tp in targets:
        assert replica_dir(cluster, 4, tp).is_dir()
    gone = [replica_dir(cluster, original[tp.partition][0], tp) for tp in targets]
    wait_until(lambda: not any(d.exists() for d in gone), 30, "the replaced replicas deleted")
    # Every broker's metadata has the new replicas.
    md = admin_client(cluster.bootstrap_servers).list_topics(topic, timeout=30)
    for tp, target in targets.items():
        assert sorted(md.topics[topic].partitions[tp.partition].replicas) == sorted(target)


def test_bad_reassignments_are_refused_and_change_nothing(
    cluster: LocalCluster, admin: KafkaAdminClient
) -> None:
    four_brokers(cluster)
    topic = "refused"
    create(cluster, topic, {0: [1, 2]})
    tp = KTopicPartition(topic, 0)
    results = admin.alter_partition_reassignments(
        {tp: [1, 9], KTopicPartition(topic, 5): [1, 2], KTopicPartition("nope", 0): [1, 2]}
    )
    assert results[tp] is InvalidReplicationAssignmentError
    assert results[KTopicPartition(topic, 5)] is UnknownTopicOrPartitionError
    assert results[KTopicPartition("nope", 0)] is UnknownTopicOrPartitionError
    assert admin.alter_partition_reassignments({tp: [2, 2]}) == {
        tp: InvalidReplicationAssignmentError
    }
    # Cancelling what is not moving.
    assert admin.alter_partition_reassignments({tp: None}) == {tp: NoReassignmentInProgressError}
    assert assignment(cluster, topic) == {0: (1, 2)} and moving(admin) == {}


def test_the_controller_killed_in_the_middle_of_a_reassignment(
    cluster: LocalCluster, admin: KafkaAdminClient
) -> None:
    four_brokers(cluster)
    controller = cluster.zk_client().get_controller_id()
    assert controller is not None
    others = [b for b in cluster.broker_ids if b != controller]
    # The partition moves from (controller, a) to (a, b); b must catch up.
    a, b = others[0], others[1]
    topic = "mid-controller"
    create(cluster, topic, {0: [controller, a]})
    send_values(cluster.bootstrap_servers, topic, [b"%d" % i for i in range(2000)])
    tp = TopicPartition(topic, 0)
    cluster.pause(b)  # b cannot catch up: the move stays in the middle
    try:
        assert alter_at_controller(cluster, {tp: [a, b]}) == {tp: 0}
        moving_znode = cluster.zk_client().get_full_assignments([topic])[topic][0]
        assert (moving_znode.replicas, moving_znode.adding, moving_znode.removing) == (
            (a, b, controller),
            (b,),
            (controller,),
        )
        cluster.kill(controller)
    finally:
        # b catches up while there is no controller to finish the move (the dead one's
        # session has not expired yet): the next controller finds it in ZooKeeper.
        cluster.resume(b)
    wait_until(
        lambda: cluster.zk_client().get_controller_id() not in (None, controller),
        60,
        "a new controller",
    )
    wait_until_moved(cluster, {tp: [a, b]})
    values = [r.value for r in read_records(cluster.bootstrap_servers, topic, timeout=60)]
    assert values == [b"%d" % i for i in range(2000)]
    four_brokers(cluster)


def test_the_leader_killed_in_the_middle_of_a_reassignment(
    cluster: LocalCluster, admin: KafkaAdminClient
) -> None:
    four_brokers(cluster)
    controller = cluster.zk_client().get_controller_id()
    others = [b for b in cluster.broker_ids if b != controller]
    leader, stays, adding = others
    topic = "mid-leader"
    create(cluster, topic, {0: [leader, stays]})
    send_values(cluster.bootstrap_servers, topic, [b"%d" % i for i in range(2000)])
    tp = TopicPartition(topic, 0)
    cluster.pause(adding)
    try:
        assert alter_at_controller(cluster, {tp: [stays, adding]}) == {tp: 0}
        cluster.kill(leader)
    finally:
        cluster.resume(adding)
    # Once the dead leader's session expires, the surviving replica leads, and the new
    # replica catches up from it.
    wait_until(
        lambda: cluster.zk_client().get_partition_states([tp])[tp].leader == stays,
        60,
        "the surviving replica to lead",
    )
    wait_until_moved(cluster, {tp: [stays, adding]})
    values = [r.value for r in read_records(cluster.bootstrap_servers, topic, timeout=60)]
    assert values == [b"%d" % i for i in range(2000)]
    four_brokers(cluster)


def test_the_new_replicas_broker_restarted_in_the_middle_of_a_reassignment(
    cluster: LocalCluster,
) -> None:
    four_brokers(cluster)
    controller = cluster.zk_client().get_controller_id()
    a, b, adding = [x for x in cluster.broker_ids if x != controller]
    topic = "mid-restart"
    create(cluster, topic, {0: [a, b]})
    send_values(cluster.bootstrap_servers, topic, [b"%d" % i for i in range(2000)])
    tp = TopicPartition(topic, 0)
    cluster.pause(adding)
    try:
        assert alter_at_controller(cluster, {tp: [a, adding]}) == {tp: 0}
    finally:
        cluster.kill(adding)  # a crash before it fetched anything
    # It comes back (a new registration): the controller resumes the move for it.
    cluster.start_broker(adding)
    wait_until_moved(cluster, {tp: [a, adding]})
    values = [r.value for r in read_records(cluster.bootstrap_servers, topic, timeout=60)]
    assert values == [b"%d" % i for i in range(2000)]


def test_cancel_in_the_middle_reverts_to_the_original_replicas(
    cluster: LocalCluster, admin: KafkaAdminClient
) -> None:
    four_brokers(cluster)
    controller = cluster.zk_client().get_controller_id()
    a, b, adding = [x for x in cluster.broker_ids if x != controller]
    topic = "cancelled"
    create(cluster, topic, {0: [a, b]})
    send_values(cluster.bootstrap_servers, topic, [b"%d" % i for i in range(100)])
    tp = TopicPartition(topic, 0)
    wait_until(lambda: cluster.zk_client().get_partition_states([tp])[tp].leader == a, 30, "a")
    urp_before = under_replicated(cluster, a)
    cluster.pause(adding)
    try:
        assert alter_at_controller(cluster, {tp: [a, adding]}) == {tp: 0}
        assert assignment(cluster, topic) == {0: (a, adding, b)}
        assert moving_at_controller(cluster) == {tp: [[a, adding, b], [adding], [b]]}
        # The replica being added is not in the replication factor yet (KIP-455): the move
        # does not make the partition under-replicated on its leader.
        wait_until(lambda: adding in cluster.zk_client().get_assignment(topic)[0], 10, "the move")
        assert under_replicated(cluster, a) == urp_before
        assert alter_at_controller(cluster, {tp: None}) == {tp: 0}
        assert set(assignment(cluster, topic)[0]) == {a, b}
    finally:
        cluster.resume(adding)
    assert moving_at_controller(cluster) == {}
    # The broker that was to catch up is told to delete the replica it started.
    wait_until(lambda: not replica_dir(cluster, adding, tp).exists(), 30, "the replica deleted")
    state = cluster.zk_client().get_partition_states([tp])[tp]
    assert set(state.isr) == {a, b}
    values = [r.value for r in read_records(cluster.bootstrap_servers, topic, timeout=60)]
    assert values == [b"%d" % i for i in range(100)]


def test_a_reassignment_written_to_zookeeper(
    cluster: LocalCluster, admin: KafkaAdminClient
) -> None:
    four_brokers(cluster)
    topic = "through-zk"
    create(cluster, topic, {0: [1, 2], 1: [2, 3]})
    send_values(cluster.bootstrap_servers, topic, [b"%d" % i for i in range(100)])
    zk = cluster.zk_client()
    targets = {TopicPartition(topic, 0): [3, 4], TopicPartition(topic, 1): [2, 3, 4]}
    zk.create_partition_reassignment(targets)
    wait_until_moved(cluster, targets)
    # Done: the controller deletes the znode.
    wait_until(lambda: zk.get_partition_reassignment() is None, 30, "the znode deleted")


# --- `minikafka reassign-partitions` (kafka-reassign-partitions.sh) ------------------------------


def tool(cluster: LocalCluster, *args: str, exclude: tuple[int, ...] = ()) -> tuple[int, str]:
    done = run_cli("reassign-partitions", "--bootstrap-server", bootstrap(cluster, exclude), *args)
    return done.returncode, done.stdout + done.stderr


def test_the_tool_generates_executes_and_verifies_a_move(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    four_brokers(cluster)
    topic = "tool"
    create(cluster, topic, {0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 2]})
    send_values(cluster.bootstrap_servers, topic, [b"%d" % i for i in range(200)])
    topics_file = tmp_path / "topics.json"
    topics_file.write_text(json.dumps({"topics": [{"topic": topic}], "version": 1}))
    code, out = tool(
        cluster, "--generate", "--topics-to-move-json-file", str(topics_file),
        "--broker-list", "2,3,4",
    )  # fmt: skip
    assert code == 0, out
    current_text, proposed_text = (
        block.split("\n", 1)[1].strip() for block in out.strip().split("\n\n")
    )
    assert out.startswith("Current partition replica assignment\n")
    assert "\n\nProposed partition reassignment configuration\n" in out
    current = json.loads(current_text)
    assert current == {
        "version": 1,
        "partitions": [
            {"topic": topic, "partition": p, "replicas": r, "log_dirs": ["any", "any"]}
            for p, r in enumerate([[1, 2], [2, 3], [3, 1], [1, 2]])
        ],
    }
    proposed = json.loads(proposed_text)
    assert [p["partition"] for p in proposed["partitions"]] == [0, 1, 2, 3]
    for p in proposed["partitions"]:
        assert len(set(p["replicas"])) == 2 and set(p["replicas"]) <= {2, 3, 4}
    plan = tmp_path / "plan.json"
    plan.write_text(proposed_text)
    code, out = tool(cluster, "--execute", "--reassignment-json-file", str(plan))
    assert code == 0, out
    assert out.splitlines() == [
        "Current partition replica assignment",
        "",
        current_text,
        "",
        "Save this to use as the --reassignment-json-file option during rollback",
        f"Successfully started partition reassignments for {topic}-0,{topic}-1,{topic}-2,{topic}-3",
    ]
    wait_until_moved(
        cluster,
        {TopicPartition(topic, p["partition"]): p["replicas"] for p in proposed["partitions"]},
    )
    code, out = tool(cluster, "--verify", "--reassignment-json-file", str(plan))
    assert code == 0, out
    assert out.splitlines() == [
        "Status of partition reassignment:",
        *(f"Reassignment of partition {topic}-{p} is complete." for p in range(4)),
        # No move runs: Kafka's tool clears every throttle (there were none here).
        "Clearing broker-level throttles on brokers 1,2,3,4",
        f"Clearing topic-level throttles on topic {topic}",
    ]
    assert tool(cluster, "--list") == (0, "No partition reassignments found.\n")
    values = [r.value for r in read_records(cluster.bootstrap_servers, topic, timeout=60)]
    assert sorted(values) == sorted(b"%d" % i for i in range(200))


def test_the_tool_lists_refuses_a_second_move_and_cancels(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    four_brokers(cluster)
    controller = cluster.zk_client().get_controller_id()
    a, b, adding = [x for x in cluster.broker_ids if x != controller]
    topic = "tool-cancel"
    create(cluster, topic, {0: [a, b]})
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [{"topic": topic, "partition": 0, "replicas": [a, adding]}],
            }
        )
    )
    cluster.pause(adding)
    try:
        code, out = tool(
            cluster, "--execute", "--reassignment-json-file", str(plan), exclude=(adding,)
        )
        assert code == 0 and out.endswith(f"reassignment for {topic}-0\n"), out
        code, out = tool(cluster, "--list", exclude=(adding,))
        assert (code, out) == (
            0,
            "Current partition reassignments:\n"
            f"{topic}-0: replicas: {a},{adding},{b}. adding: {adding}. removing: {b}.\n",
        )
        code, out = tool(
            cluster, "--verify", "--reassignment-json-file", str(plan), exclude=(adding,)
        )
        assert out.splitlines()[1] == f"Reassignment of partition {topic}-0 is still in progress."
        # Another move while one runs needs --additional, as with Kafka's tool.
        code, out = tool(
            cluster, "--execute", "--reassignment-json-file", str(plan), exclude=(adding,)
        )
        assert code == 1 and out.startswith("Cannot execute because there is an existing"), out
        # --preserve-throttles: clearing them would ask the paused broker too.
        code, out = tool(
            cluster,
            "--cancel",
            "--reassignment-json-file",
            str(plan),
            "--preserve-throttles",
            exclude=(adding,),
        )
        assert (code, out.splitlines()) == (
            0,
            [
                f"Successfully cancelled partition reassignment for: {topic}-0",
                "None of the specified partition moves are active.",
            ],
        )
        code, out = tool(
            cluster,
            "--cancel",
            "--reassignment-json-file",
            str(plan),
            "--preserve-throttles",
            exclude=(adding,),
        )
        assert out.splitlines()[0] == "None of the specified partition reassignments are active."
    finally:
        cluster.resume(adding)
    code, out = tool(cluster, "--verify", "--reassignment-json-file", str(plan))
    assert out.splitlines()[1] == (
        f"There is no active reassignment of partition {topic}-0, but replica set is "
        f"{a},{b} rather than {a},{adding}."
    )


def test_the_tool_refuses_what_it_cannot_do(cluster: LocalCluster, tmp_path: Path) -> None:
    four_brokers(cluster)
    plan = tmp_path / "plan.json"
    plan.write_text('{"version":1,"partitions":[{"topic":"tool","partition":0,"replicas":[1,9]}]}')
    code, out = tool(cluster, "--execute", "--reassignment-json-file", str(plan))
    assert (code, out.splitlines()[-1]) == (1, "Unknown broker id 9")
    plan.write_text('{"version":1,"partitions":[{"topic":"tool","partition":0,"replicas":[1,1]}]}')
    code, out = tool(cluster, "--execute", "--reassignment-json-file", str(plan))
    assert code == 1 and "tool-0 contains multiple entries for 1" in out
    code, out = tool(
        cluster, "--execute", "--reassignment-json-file", str(plan), "--throttle", "-5"
    )
    assert code == 2 and "--throttle must be at least 0" in out
    code, out = tool(cluster, "--list", "--verify")
    assert code == 2 and "exactly one action" in out
    code, out = tool(cluster, "--list", "--additional")
    assert code == 2 and "can't be used with action" in out


def test_removing_a_broker_that_holds_replicas_is_refused(cluster: LocalCluster) -> None:
    four_brokers(cluster)
    create(cluster, "kept", {0: [1, 2]})
    done = run_cli("cluster", "remove-broker", "--id", "1", "--data-dir", str(cluster.data_dir))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "broker 1 still holds" in done.stderr and "--drain" in done.stderr
    assert cluster.is_alive(1) and 1 in cluster.zk_client().get_all_brokers()
