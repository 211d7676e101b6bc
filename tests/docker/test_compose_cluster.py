"""docker-compose.yml for real: a Docker engine builds the images and runs ZooKeeper and three
brokers; clients on the host use the published ports, and faults are done to containers
with scripts/docker-fault.sh (docker kill, pause, compose stop, network cuts in the
container's namespace).

Each module-scoped project has its own compose project name and free host ports
(tests/docker/compose.py), and ZooKeeper's session timeout set to 6 s through the compose
file's MINIKAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS, so failover takes seconds.

"Acknowledged" and "lost" are the chaos checker's: a record is acknowledged when its
producer got an offset back with acks=all, and lost when it is not at that offset in the
final log.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError as ClientError
from confluent_kafka import Message
from confluent_kafka.admin import NewTopic

from minikafka.client.kafka_wire import KafkaConnection, metadata_request
from minikafka.client.librdkafka import client_config, new_admin, new_producer, read_to_end
from minikafka.client.replicas import ReplicaClient
from minikafka.cluster.compose import REPOSITORY
from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.storage.record_batch import build_batch
from tests.cluster.helpers import produce_at
from tests.docker.compose import (
    BROKERS,
    CHAOS_SCRIPT,
    GROW_BROKERS,
    GROW_PROFILE,
    SPARK_PROFILE,
    SPARK_SERVICES,
    SPARK_VOLUME,
    ComposeCluster,
    require_engine,
    wait_for,
)
from tests.readme import block, commands

pytestmark = pytest.mark.timeout(900)

SESSION_TIMEOUT_MS = 6000
SESSION_TIMEOUT_S = SESSION_TIMEOUT_MS / 1000
# Failover: the session timeout, then the controller's election (measured: 5.5-6.0 s in all;
# scripts/bench_docker.py); the rest is room for a loaded machine.
FAILOVER_BUDGET_S = SESSION_TIMEOUT_S + 4


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeCluster]:
    require_engine()
    p = ComposeCluster(session_timeout_ms=SESSION_TIMEOUT_MS)
    logs = tmp_path_factory.mktemp("compose") / "logs.txt"
    try:
        p.up("--build")
        yield p
    finally:
        logs.write_text(p.logs(tail=2000))
        print(f"compose logs of {p.name}: {logs}")
        p.down("--volumes", "--remove-orphans")


def new_topic(p: ComposeCluster, partitions: int = 3) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    admin = new_admin(client_config(p.bootstrap_servers, p.client_security()))
    topic = NewTopic(name, partitions, 3, config={"min.insync.replicas": "2"})
    admin.create_topics([topic], operation_timeout=60)[name].result(timeout=90)
    wait_for(
        f"{name}'s partitions with three in-sync replicas",
        lambda: all(
            (s := p.partition_state(name, i)) is not None and len(s.isr) == 3
            for i in range(partitions)
        ),
        60,
    )
    return name


def leader(p: ComposeCluster, topic: str, partition: int = 0) -> int:
    state = p.partition_state(topic, partition)
    assert state is not None
    return state.leader


def isr(p: ComposeCluster, topic: str, partition: int) -> tuple[int, ...]:
    state = p.partition_state(topic, partition)
    assert state is not None
    return state.isr


def read_all(p: ComposeCluster, topic: str, partition: int) -> dict[int, bytes | None]:
    """offset -> value of the partition up to its end offset (the HW), via the leader."""
    return {
        m.offset(): m.value()
        for m in read_to_end(p.bootstrap_servers, topic, 60, p.client_security())
        if m.partition() == partition
    }


def produce_acked(
    bootstrap: str, topic: str, values: list[bytes], partition: int = -1
) -> list[int]:
    """Each value produced with acks=all once the previous one is acknowledged (30 s at
    most each), to `partition` (-1: the partitioner's); their offsets."""
    producer = new_producer(client_config(bootstrap, {"acks": "all"}))
    outcomes: list[tuple[ClientError | None, Message]] = []
    for n, value in enumerate(values, 1):
        producer.produce(
            topic, value, partition=partition, on_delivery=lambda e, m: outcomes.append((e, m))
        )
        assert producer.flush(30) == 0, f"{value!r} not acknowledged in 30 s"
        assert len(outcomes) == n
    assert [e for e, _ in outcomes if e is not None] == []
    return [m.offset() for _, m in outcomes]


@dataclass
class Stream:
    """Sequential values to one partition with acks=all, from a thread, until stopped (as
    the admin user on the secured variant)."""

    p: ComposeCluster
    topic: str
    partition: int = 0
    acked: dict[bytes, tuple[int, float]] = field(default_factory=dict)  # value -> offset, when
    failed: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Stream:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(120)

    def _run(self) -> None:
        lock = threading.Lock()
        producer = new_producer(
            client_config(
                self.p.bootstrap_servers,
                {
                    **self.p.client_security(),
                    "acks": "all",
                    "linger.ms": 0,
                    "retries": 2**31 - 1,
                    "delivery.timeout.ms": 60_000,
                    "request.timeout.ms": 10_000,
                    # How long librdkafka itself waits for a request's answer (what Kafka's
                    # request.timeout.ms is to Java's client; default 60 s): a request to a
                    # frozen leader then fails, and the producer asks for new metadata.
                    "socket.timeout.ms": 10_000,
                },
            )
        )

        def done(error: ClientError | None, msg: Message) -> None:
            with lock:
                if error is None:
                    self.acked[msg.value()] = (msg.offset(), time.time())
                else:
                    self.failed += 1

        i = 0
        while not self._stop.is_set():
            producer.produce(
                self.topic, f"v{i}".encode(), partition=self.partition, on_delivery=done
            )
            producer.poll(0)  # delivery reports of the records acknowledged meanwhile
            i += 1
            time.sleep(0.02)  # pacing: ~50 records/s
        producer.flush()  # every outcome: each record is acked or failed by delivery.timeout.ms

    def acked_count(self) -> int:
        return len(self.acked)


def lost(stream: Stream, log: dict[int, bytes | None]) -> list[bytes]:
    """Acknowledged values that are not at their acknowledged offset in `log`."""
    return sorted(v for v, (offset, _) in stream.acked.items() if log.get(offset) != v)


def replica_equals_leader_up_to_hw(p: ComposeCluster, topic: str, broker: int) -> bool:
    """Broker `broker`'s replica of each partition holds exactly the leader's records up to
    the HW (read from each broker with Fetch as the debug replica, as chaos does)."""

    async def compare() -> bool:
        async with ReplicaClient(p.bootstrap_servers) as client:
            for part in await client.describe_replicas([topic], timeout_ms=10_000):
                if part.error is not None or part.leader == broker:
                    return False
                if broker not in [r.broker_id for r in part.replicas if r.in_isr]:
                    return False
                hw = part.high_watermark
                mine = await client.fetch_replica_records(broker, part.tp, hw, timeout_ms=10_000)
                theirs = await client.fetch_replica_records(
                    part.leader, part.tp, hw, timeout_ms=10_000
                )
                if mine != theirs or sorted(mine) != list(range(hw)):
                    return False
        return True

    return asyncio.run(compare())


# --- the used-by story ---------------------------------------------------------------------


def test_topics_produce_and_consume_through_the_published_ports(project: ComposeCluster) -> None:
    p = project
    # Every container is healthy (compose up --wait), data lives on named volumes.
    for service in ("zookeeper", *(f"broker{b}" for b in BROKERS)):
        health = p.state(service).get("Health")
        assert isinstance(health, dict) and health["Status"] == "healthy", service
    assert len(p.volumes()) == 4

    topic = f"orders-{uuid.uuid4().hex[:6]}"
    cli = [".venv/bin/minikafka"] if Path(".venv/bin/minikafka").exists() else ["minikafka"]

    def run(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            [*cli, *args], input=stdin, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    # One published port is all a client on the host needs: Metadata sends it the
    # brokers' EXTERNAL (localhost) addresses.
    first = f"localhost:{p.broker_ports[1]}"
    run("topics", "--bootstrap-server", first, "--create", "--topic", topic)
    described = run("topics", "--bootstrap-server", first, "--describe", "--topic", topic)
    assert "ReplicationFactor: 3" in described  # MINIKAFKA_DEFAULT_REPLICATION_FACTOR
    lines = [f"line-{i}" for i in range(500)]
    run(
        *("produce", "--bootstrap-server", first, "--topic", topic, "--acks", "all"),
        stdin="\n".join(lines) + "\n",
    )
    third = f"localhost:{p.broker_ports[3]}"
    out = run(
        *("consume", "--bootstrap-server", third, "--topic", topic),
        *("--from-beginning", "--max-messages", "500"),
    )
    assert sorted(out.split()) == sorted(lines)


def test_the_dashboard_on_a_published_admin_port_sees_every_broker(
    project: ComposeCluster,
) -> None:
    """The page and its JSON from the host; the serving broker reaches the others' admin
    endpoints at their INTERNAL host (brokerN on the compose network), on the port each is
    published on (the same inside its container)."""
    p = project
    base = f"http://localhost:{p.admin_ports[2]}"
    with urllib.request.urlopen(base + "/", timeout=10) as resp:
        assert resp.status == 200 and b"/static/dashboard.js" in resp.read()

    def cluster_view() -> dict[str, Any]:
        with urllib.request.urlopen(base + "/v1/cluster", timeout=10) as resp:
            return dict(json.loads(resp.read()))

    def every_broker_answers() -> bool:
        ok = [b["status"] == "alive" and b["reachable"] for b in cluster_view()["brokers"]]
        return len(ok) == len(BROKERS) and all(ok)

    wait_for("every broker alive on the dashboard", every_broker_answers, 60)
    view = cluster_view()
    assert view["served_by"] == 2
    by_id = {b["id"]: b for b in view["brokers"]}
    for b in BROKERS:
        assert by_id[b]["admin_url"] == f"http://broker{b}:{p.admin_ports[b]}"
        assert f"INTERNAL://broker{b}:19092" in by_id[b]["endpoints"]


def live_brokers_of(p: ComposeCluster, broker: int) -> set[int]:
    """The live brokers in `broker`'s own metadata (a Metadata request to it alone); empty
    while it does not answer."""

    async def ask() -> set[int]:
        conn = KafkaConnection(
            "localhost", p.broker_ports[broker], client_id="compose-tests", connect_timeout_s=2
        )
        try:
            resp = await conn.call(metadata_request([]), timeout_s=5)
            return {b.node_id for b in resp.brokers}
        except KafkaError:  # the connection failed or the answer did not come in time
            return set()
        finally:
            await conn.close()

    return asyncio.run(ask())


def test_the_dashboard_shows_a_down_broker_at_its_last_known_address(
    project: ComposeCluster,
) -> None:
    """A page opened after a broker went down (on a broker whose dashboard never read that
    one's registration) shows it down at the addresses the controller last sent for it."""
    p = project
    new_topic(p)  # a replica on every broker: a down broker stays in the table
    controller = p.controller()
    serving = 3
    victim = next(b for b in BROKERS if b not in (serving, controller))
    # A new process: a dashboard that has seen no registration yet, only UpdateMetadata.
    p.fault("restart", serving)
    wait_for(
        f"broker {serving} back with broker {victim} live in its metadata",
        lambda: {serving, victim} <= live_brokers_of(p, serving),
        60,
    )
    p.fault("kill", victim)
    try:
        # Not asked before the registration is gone: it must not be what the page shows.
        wait_for(
            f"broker {victim}'s registration to expire",
            lambda: victim not in p.zk().get_all_brokers(),
            FAILOVER_BUDGET_S + 10,
        )
        base = f"http://localhost:{p.admin_ports[serving]}"

        def victim_row() -> dict[str, Any]:
            with urllib.request.urlopen(base + "/v1/cluster", timeout=10) as resp:
                view = json.loads(resp.read())
            return next(b for b in view["brokers"] if b["id"] == victim)

        wait_for(f"broker {victim} down on the page", lambda: victim_row()["status"] == "down", 30)
        row = victim_row()
        assert sorted(row["endpoints"]) == [
            f"EXTERNAL://localhost:{p.broker_ports[victim]}",
            f"INTERNAL://broker{victim}:19092",
        ], row
        assert row["registered"] is False and row["live"] is False
    finally:
        p.compose("start", f"broker{victim}")
    wait_for(
        f"broker {victim} live again",
        lambda: victim in live_brokers_of(p, serving),
        90,
    )


def test_a_kafka_client_on_the_host_needs_only_one_published_port(
    project: ComposeCluster,
) -> None:
    """confluent-kafka (librdkafka), unmodified, bootstraps from localhost:<broker 1's
    port> and is sent the other brokers' EXTERNAL addresses: a topic created with its
    AdminClient, 300 records with acks=all and zstd, all read back with assign."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import TopicPartition as KafkaTopicPartition
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.admin import NewTopic as KafkaNewTopic

    p = project
    bootstrap = f"localhost:{p.broker_ports[1]}"
    topic = f"kafka-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([KafkaNewTopic(topic, 3, 3)])[topic].result(timeout=60)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "compression.type": "zstd"})
    failed: list[object] = []
    values = [f"value-{i}".encode() for i in range(300)]
    for v in values:
        producer.produce(topic, v, on_delivery=lambda err, _m: failed.append(err) if err else None)
    assert producer.flush(60) == 0 and failed == []
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "compose", "enable.auto.commit": False}
    )
    consumer.assign([KafkaTopicPartition(topic, i, 0) for i in range(3)])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < len(values) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None:
            assert msg.error() is None, msg.error()
            got.append(msg.value())
    consumer.close()
    assert sorted(got) == sorted(values)


def kill_the_leader_while_writing(p: ComposeCluster, topic: str, budget_s: float) -> int:
    """docker kill (SIGKILL) of partition 0's leader while acks=all writes flow: a new
    leader within `budget_s`, writes acknowledged again, every acknowledged record at its
    offset; then `docker compose start` brings the victim back into the ISR. Its id."""
    victim = leader(p, topic)
    with Stream(p, topic) as stream:
        wait_for("records acknowledged before the kill", lambda: stream.acked_count() > 100, 60)
        p.fault("kill", victim)
        assert p.state(f"broker{victim}")["Status"] == "exited"
        failover_s = wait_for(
            "a new leader",
            lambda: leader(p, topic) not in (victim, -1),
            budget_s + 10,
        )
        assert failover_s <= budget_s, f"failover took {failover_s:.1f}s"
        before = stream.acked_count()
        wait_for("acks from the new leader", lambda: stream.acked_count() > before + 100, 60)
    print(f"failover after docker kill of broker {victim} ({p.name}): {failover_s:.1f}s")

    log = read_all(p, topic, 0)
    assert stream.acked_count() > 200
    assert lost(stream, log) == []

    p.compose("start", f"broker{victim}")
    wait_for(f"broker {victim} back in the ISR", lambda: victim in isr(p, topic, 0), 90)
    return victim


def test_kill_of_the_leader_loses_nothing_acknowledged_and_it_rejoins(
    project: ComposeCluster,
) -> None:
    p = project
    topic = new_topic(p, partitions=1)
    victim = kill_the_leader_while_writing(p, topic, FAILOVER_BUDGET_S)
    # Back in the ISR, its log is the leader's up to the HW.
    wait_for(
        f"broker {victim}'s replica equal to the leader's up to the HW",
        lambda: replica_equals_leader_up_to_hw(p, topic, victim),
        60,
        interval=1,
    )


def test_a_paused_leader_is_fenced_after_the_session_timeout(project: ComposeCluster) -> None:
    p = project
    topic = new_topic(p, partitions=1)
    zombie = leader(p, topic)
    before = p.partition_state(topic, 0)
    assert before is not None
    with Stream(p, topic) as stream:
        wait_for("records acknowledged before the pause", lambda: stream.acked_count() > 100, 60)
        p.fault("pause", zombie)
        try:
            wait_for(
                "a new leader while the old one is frozen",
                lambda: leader(p, topic) not in (zombie, -1),
                FAILOVER_BUDGET_S + 10,
            )
            elected_at = time.time()
            after = p.partition_state(topic, 0)
            assert after is not None and after.leader_epoch > before.leader_epoch
            acked_before_thaw = stream.acked_count()
            wait_for(
                "acks from the new leader",
                lambda: stream.acked_count() > acked_before_thaw + 50,
                60,
            )
        finally:
            p.fault("unpause", zombie)
        # Straight after the thaw the zombie may still believe it leads: a write sent to it
        # now must not be acknowledged (its followers fetch from the new leader, and its
        # ISR change would need a znode version it no longer has).
        error = produce_directly(p, zombie, topic, b"from-the-zombie")
        assert error != ErrorCode.NONE, "the zombie acknowledged a write"
        wait_for(
            "more acks after the thaw", lambda: stream.acked_count() > acked_before_thaw + 150, 60
        )

    log = read_all(p, topic, 0)
    assert b"from-the-zombie" not in log.values()
    assert lost(stream, log) == []
    # Nothing acknowledged after the election sits at an offset the new leader does not
    # have: every such ack was the new leader's.
    late = [v for v, (_, at) in stream.acked.items() if at > elected_at]
    assert late and all(log.get(stream.acked[v][0]) == v for v in late)
    wait_for(
        f"broker {zombie} back in the ISR",
        lambda: zombie in isr(p, topic, 0),
        90,
    )


def docker_time_ms(rfc3339: str) -> float:
    """Docker's RFC 3339 time with nanoseconds (trailing zeros trimmed), as epoch ms."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z", rfc3339)
    assert m is not None, rfc3339
    seconds = datetime.fromisoformat(m[1] + "+00:00").timestamp()
    return (seconds + float("0." + (m[2] or "0"))) * 1000


def produce_directly(p: ComposeCluster, broker: int, topic: str, value: bytes) -> int:
    """One acks=all Produce to partition 0 sent to `broker` itself; its error code
    (NETWORK_EXCEPTION if no answer comes within 15 s)."""

    async def send() -> int:
        try:
            code, _ = await produce_at(
                "localhost",
                p.broker_ports[broker],
                TopicPartition(topic, 0),
                build_batch([value]),
                acks=-1,
                timeout_ms=10_000,
                timeout_s=15,
            )
        except KafkaError as e:
            return int(e.code)
        return code

    return asyncio.run(send())


def test_a_broker_cut_off_the_network_leaves_the_isrs_and_rejoins(
    project: ComposeCluster,
) -> None:
    p = project
    topic = new_topic(p, partitions=3)
    # A broker that is not the controller, so the cut does not move the controller too.
    controller = p.controller()
    target = next(b for b in BROKERS if b != controller)
    p.fault("isolate", target)
    try:
        wait_for(
            f"broker {target} out of every ISR",
            lambda: all(target not in isr(p, topic, i) for i in range(3)),
            FAILOVER_BUDGET_S + 20,
        )
        # Nor does it lead anything, and the cluster still takes acks=all writes.
        assert all(leader(p, topic, i) != target for i in range(3))
        for i in range(3):
            produce_acked(p.bootstrap_without(target), topic, [b"during-the-cut"], partition=i)
    finally:
        p.fault("heal", target)
    wait_for(
        f"broker {target} back in every ISR",
        lambda: all(target in isr(p, topic, i) for i in range(3)),
        120,
    )


def test_compose_stop_runs_a_controlled_shutdown(project: ComposeCluster) -> None:
    p = project
    topic = new_topic(p, partitions=6)
    target = next(b for b in BROKERS if b != p.controller())
    led = [i for i in range(6) if leader(p, topic, i) == target]
    assert led, "the broker leads nothing; the test would prove nothing"
    p.compose("stop", f"broker{target}", timeout=120)
    state = p.state(f"broker{target}")
    assert state["Status"] == "exited" and state["ExitCode"] == 0
    finished_ms = docker_time_ms(str(state["FinishedAt"]))
    # Leadership moved before the container exited: each partition it led has another
    # leader, written to ZooKeeper before the exit.
    for i in led:
        assert leader(p, topic, i) != target
        assert p.partition_state_mtime_ms(topic, i) < finished_ms
    assert "controlled shutdown succeeded" in p.logs(f"broker{target}")
    p.compose("start", f"broker{target}")
    wait_for(
        f"broker {target} back in every ISR",
        lambda: all(target in isr(p, topic, i) for i in range(6)),
        120,
    )


# --- scaling out: the grow profile's fourth broker --------------------------------------------


def replicas_by_partition(p: ComposeCluster) -> dict[TopicPartition, tuple[int, ...]]:
    """Every partition's replicas in ZooKeeper (the full set of a moving one)."""
    zk = p.zk()
    return {
        TopicPartition(topic, partition): a.replicas
        for topic, by_partition in zk.get_full_assignments(zk.get_all_topics()).items()
        for partition, a in by_partition.items()
    }


def test_the_readme_scale_out_onto_broker4_and_drain_it(
    project: ComposeCluster, tmp_path: Path
) -> None:
    """The README's "Scaling out" block as written and in order, on this module's compose
    project (its ports in place of the defaults, the JSON files in a directory of its own).
    The plain `up` leaves broker4 out; broker4 starts from the grow profile, registers on
    its rack and published port, and holds nothing; the move puts partition 0 on it, in the ISR,
    and the preferred election makes it the leader; the rollback drains it (no replica of
    any partition on it, partition 0 back on its old replicas); every record is read back;
    `stop` is a controlled shutdown, and broker 4 leaves /brokers/ids. Its container and
    volume are removed afterwards: the other tests find the project's three brokers.

    Before the tests that build the images in projects of their own: the plain `up` would
    recreate every container of this one once its image is no longer the tag's."""
    p = project
    (grow,) = GROW_BROKERS
    service = f"broker{grow}"
    defaults = ["zookeeper", *(f"broker{b}" for b in BROKERS)]
    env = {**p.env, "PATH": f"{Path(sys.executable).parent}:{p.env['PATH']}"}
    tp = TopicPartition("clicks", 0)

    def run(command: str) -> str:
        command = command.replace("localhost:9092", f"localhost:{p.broker_ports[1]}")
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        output = f"{command}\n{done.stdout}\n{done.stderr[-5000:]}"
        assert done.returncode == 0, output
        return done.stdout

    block_commands = commands(block("Break it#3").text)
    assert block_commands[-1] == f"docker compose --profile {GROW_PROFILE} stop {service}"
    before: tuple[int, ...] = ()
    checked: list[str] = []  # the steps whose outcome was checked, in order
    try:
        for command in block_commands:
            output = run(command)
            if command == "docker compose up -d --wait":
                checked.append("up")
                assert p.compose("ps", "--all", "--quiet", service).strip() == ""
                assert all(p.state(s)["Status"] == "running" for s in defaults)
            elif command.startswith(f"docker compose --profile {GROW_PROFILE} up -d --wait"):
                checked.append("grow")
                health = p.state(service).get("Health")
                assert isinstance(health, dict) and health["Status"] == "healthy"
                registered = p.zk().get_all_brokers()
                assert sorted(registered) == [*BROKERS, grow]
                assert registered[grow].rack == f"rack{grow}"
                assert f"EXTERNAL://localhost:{p.broker_ports[grow]}" in [
                    str(e) for e in registered[grow].endpoints
                ]
                # Its published port answers: Metadata from broker 4 itself lists all four.
                assert live_brokers_of(p, grow) == {*BROKERS, grow}
                replicas = replicas_by_partition(p)
                assert not [r for r in replicas.values() if grow in r], "not empty"
                before = replicas[tp]
            elif "--verify --reassignment-json-file onto4.json" in command:
                checked.append("moved")
                assert replicas_by_partition(p)[tp] == (grow, 2, 3)
                assert grow in isr(p, tp.topic, tp.partition)
            elif command.startswith("minikafka leader-election"):
                checked.append("leads")
                assert leader(p, tp.topic, tp.partition) == grow
            elif "--verify --reassignment-json-file rollback.json" in command:
                checked.append("drained")
                replicas = replicas_by_partition(p)
                assert replicas[tp] == before
                assert not [r for r in replicas.values() if grow in r], "drained"
                assert leader(p, tp.topic, tp.partition) != grow
            elif "| wc -l" in command:
                checked.append("read")
                assert output.split()[-1:] == ["1000"], output
        assert checked == ["up", "grow", "moved", "leads", "drained", "read"]
        state = p.state(service)
        assert state["Status"] == "exited" and state["ExitCode"] == 0
        assert "controlled shutdown succeeded" in p.logs(service)
        wait_for(
            f"broker {grow} out of /brokers/ids", lambda: grow not in p.zk().get_all_brokers(), 30
        )
        # docker-fault.sh finds the grow profile's broker by its id.
        assert p.fault("status", grow) == "exited"
    finally:
        p.remove(service, f"{service}-data")
    assert p.compose("ps", "--all", "--quiet", service).strip() == ""
    assert len(p.volumes()) == 4
    assert sorted(p.zk().get_all_brokers()) == list(BROKERS)


def spark_master_state(p: ComposeCluster) -> dict[str, Any]:
    """The Spark master's /json/ through its published web UI port."""
    url = f"http://127.0.0.1:{p.spark_ui_port}/json/"
    with urllib.request.urlopen(url, timeout=5) as r:
        state: dict[str, Any] = json.load(r)
    return state


def demo_window_counts(output: str, events: int = 300) -> dict[tuple[int, str], int]:
    """The window counts `minikafka pipeline demo` printed, by window start relative to the
    first window's; checked against what the demo's clicks give (its default 300 clicks, 0.3
    s apart from 1 ms past a window start: the watermark closes the windows up to +60 s)."""
    from minikafka.spark import pipeline

    printed = [line.split() for line in output.splitlines() if line[:2] == "20"]
    got = {
        (round(datetime.fromisoformat(start.replace("Z", "+00:00")).timestamp() * 1000), page): int(
            n
        )
        for start, page, n in printed
    }
    assert got and len(got) == len(printed), output
    first = min(start for start, _ in got)
    clicks = pipeline.make_clicks(events, 1, 300)
    expected = pipeline.expected_counts(clicks, clicks[-1].ts_ms - 10_000)
    assert {(start - first, page): n for (start, page), n in got.items()} == expected, output
    return got


def test_the_readme_spark_cluster_runs_the_pipeline_demo_and_spark_submit(
    project: ComposeCluster, tmp_path: Path
) -> None:
    """The README's Spark cluster block as written and in order, on this module's compose
    project (its published ports in place of the defaults): the spark profile's `up` starts
    the master and two workers, both registered; the demo runs on them (an application the
    master saw finish) and prints the window counts its clicks give; spark-submit runs it
    again with spark-submit's master, its application UI answering on the published port
    while it runs; both runs left Parquet and checkpoints on the shared volume. The Spark
    containers and their volume are removed afterwards: the other tests find the project as
    it was.

    The image is built from this checkout first (the block's `up` builds it only when it is
    missing). Before the tests that build the images in projects of their own, as the
    scale-out test is."""
    p = project
    env = {**p.env, "PATH": f"{Path(sys.executable).parent}:{p.env['PATH']}"}
    started = time.monotonic()
    p.build(SPARK_SERVICES[0], profile=SPARK_PROFILE)
    built_s = time.monotonic() - started

    def start(command: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def finish(command: str, process: subprocess.Popen[str]) -> str:
        stdout, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, f"{command}\n{stdout}\n{stderr[-5000:]}"
        return stdout

    def ui_or_ended(job: subprocess.Popen[str]) -> bool:
        return app_ui_answers() or job.poll() is not None

    def app_ui_answers() -> bool:
        url = f"http://127.0.0.1:{p.spark_app_ui_port}/api/v1/applications"
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return bool(json.load(r))
        except (OSError, ValueError):
            return False

    block_commands = commands(block("Pipelines with Spark#3").text)
    assert block_commands[-1].startswith(f"docker compose --profile {SPARK_PROFILE} stop ")
    checked: list[str] = []
    runs: list[float] = []
    try:
        for command in block_commands:
            t0 = time.monotonic()
            process = start(command)
            if " spark-submit " in command:
                # The application UI, published, while the job runs.
                wait_for("the application UI", functools.partial(ui_or_ended, process), 300)
                assert app_ui_answers(), "the job ended before its application UI answered"
                checked.append("app UI")
            output = finish(command, process)
            runs.append(time.monotonic() - t0)
            if command.startswith(f"docker compose --profile {SPARK_PROFILE} up"):
                checked.append("up")
                for service in SPARK_SERVICES:
                    health = p.state(service).get("Health")
                    assert isinstance(health, dict) and health["Status"] == "healthy", service
                workers = spark_master_state(p)["workers"]
                assert sorted(w["host"] for w in workers if w["state"] == "ALIVE") == [
                    "spark-worker1",
                    "spark-worker2",
                ]
            elif "pipeline demo" in command:
                checked.append("spark-submit" if " spark-submit " in command else "demo")
                assert "Spark master spark://spark-master:7077" in output, output
                demo_window_counts(output)
                apps = spark_master_state(p)["completedapps"]
                assert len(apps) == checked.count("demo") + checked.count("spark-submit")
                assert all(a["state"] == "FINISHED" for a in apps), apps
            elif " ls " in command:
                checked.append("ls")
                runs_dirs = output.split()
                assert len(runs_dirs) == 2, output
                for run in runs_dirs:
                    listed = p.compose(
                        "exec", "-T", "spark-worker2", "ls", f"/spark-data/demo/{run}"
                    ).split()
                    assert listed == ["checkpoints", "page-counts.parquet"], listed
        assert checked == ["up", "demo", "app UI", "spark-submit", "ls"]
        for service in SPARK_SERVICES:
            assert p.state(service)["Status"] == "exited", service
    finally:
        print(
            f"spark image build {built_s:.0f}s; the block's commands: {[round(r) for r in runs]}s"
        )
        for service in SPARK_SERVICES[:-1]:
            p.remove(service)
        p.remove(SPARK_SERVICES[-1], SPARK_VOLUME)  # once no container mounts it
    assert len(p.volumes()) == 4
    assert all(p.state(f"broker{b}")["Status"] == "running" for b in BROKERS)


def test_one_build_makes_one_broker_image_and_a_second_up_changes_nothing() -> None:
    """The three brokers run one image, built once: after `up --build` this project made
    one broker image (and ZooKeeper's) and left none dangling; `up` again, with or without
    --build, recreates no container and makes no image."""
    require_engine()
    p = ComposeCluster()
    services = ["zookeeper", *(f"broker{b}" for b in BROKERS)]
    try:
        p.up("--build")
        images = p.images()
        assert set(images) == {"minikafka-broker:dev", "minikafka-zookeeper:dev"}
        assert p.built_images() == set(images.values())
        assert p.built_images(dangling=True) == set()
        for b in BROKERS:
            assert p.container_image(f"broker{b}") == images["minikafka-broker:dev"]
        containers = {s: p.container(s) for s in services}

        for again in ((), ("--build",)):
            p.up(*again)
            assert {s: p.container(s) for s in services} == containers, f"up {again}"
            assert p.images() == images, f"up {again}"
            assert p.built_images() == set(images.values()), f"up {again}"
    finally:
        p.down("--volumes", "--remove-orphans")


def test_down_keeps_the_data_up_serves_it_down_volumes_removes_it() -> None:
    require_engine()
    p = ComposeCluster()
    try:
        p.up("--build")
        topic = new_topic(p, partitions=1)
        values = [f"kept-{i}".encode() for i in range(50)]
        assert produce_acked(p.bootstrap_servers, topic, values) == list(range(50))
        volumes = p.volumes()
        assert len(volumes) == 4

        p.down()
        assert p.volumes() == volumes
        p.up()
        log = read_all(p, topic, 0)
        assert [log[o] for o in range(50)] == [f"kept-{i}".encode() for i in range(50)]
    finally:
        p.down("--volumes", "--remove-orphans")
    assert p.volumes() == []


# --- chaos against the containers ---------------------------------------------------------------


# Two minutes of every container fault: a long chaos schedule, run with `-m slow` as the
# local ones are (tests/chaos/test_chaos_long.py). CI runs docker-chaos.sh in the README's
# Docker block (bounded) and each container fault in a test of its own above.
@pytest.mark.slow
def test_docker_chaos_two_minutes_with_every_container_fault(
    project: ComposeCluster, tmp_path: Path
) -> None:
    p = project
    out = tmp_path / "chaos"
    done = subprocess.run(
        [str(CHAOS_SCRIPT), "--seed", "6", "--interval", "9", "--out", str(out)],
        env={
            **p.env,
            "NO_UP": "1",
            "TIME_LIMIT": "126",  # seven faults, each 9 s after 9 s of quiet
            "NEMESIS": "kill,pause,restart,controller,partition,partition-from-brokers",
        },
        capture_output=True,
        text=True,
        timeout=900,
    )
    print(done.stdout[-5000:])
    report = json.loads((out / "report.json").read_text())
    result = report["result"]
    assert done.returncode == 0, done.stderr[-3000:] + "\n" + "\n".join(result["problems"])
    assert result["lost"] == []
    assert result["replica_divergence"] == []
    assert result["acknowledged"] > 1000
    # Seed 6 draws every kind of fault in its first seven (one may be skipped when it finds
    # no target, e.g. no leader at that moment).
    ops = {f["op"] for f in report["history"]["faults"]}
    assert len(ops) >= 5 and {"partition", "partition-from-brokers"} <= ops, ops


# --- the README's Docker commands ----------------------------------------------------------------

# The README's chaos runs (docker-chaos.sh's default 60 s, chaos's 60 s) are run this long.
README_CHAOS_BOUND_S = 20


def test_the_readme_docker_commands_in_order(project: ComposeCluster, tmp_path: Path) -> None:
    """The README's Docker block as written and in order, under this module's compose
    project (COMPOSE_PROJECT_NAME and the ports in the environment, as the README says a
    second cluster runs; `up` then changes nothing), then its command-mode chaos run before
    the block's `docker compose down`. The host ports are this project's; the chaos runs
    are bounded (TIME_LIMIT for docker-chaos.sh, a --time-limit appended for chaos). Last
    in the module: its `down` stops the module's project."""
    p = project
    ports = [p.broker_ports[b] for b in BROKERS]
    env = {
        **p.env,
        "TIME_LIMIT": str(README_CHAOS_BOUND_S),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),  # the reports, not under $HOME
        "PATH": f"{Path(sys.executable).parent}:{p.env['PATH']}",
    }

    def run(command: str) -> str:
        command = command.replace(
            "localhost:9092,localhost:9093,localhost:9094",
            ",".join(f"localhost:{port}" for port in ports),
        )
        command = command.replace("localhost:9092", f"localhost:{ports[0]}")
        command = command.replace("localhost:2181", f"localhost:{p.zookeeper_port}")
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=REPOSITORY,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        output = f"{command}\n{done.stdout}\n{done.stderr[-5000:]}"
        assert done.returncode == 0, output
        return output

    def chaos_report(output: str) -> dict[str, Any]:
        (out,) = re.findall(r"the report goes to (\S+),", output)
        report: dict[str, Any] = json.loads((Path(out) / "report.json").read_text())
        assert report["result"]["lost"] == [] and report["result"]["acknowledged"] > 0, output
        return report

    block_commands = commands(block("Break it#2").text)
    assert block_commands[-1] == "docker compose down"
    for command in block_commands[:-1]:
        output = run(command)
        op = command.split()[1:2]
        if op == ["kill"]:
            assert p.state("broker2")["Status"] == "exited", output
        if op == ["start"]:
            assert p.state("broker2")["Status"] == "running", output
        if command.startswith("scripts/docker-chaos.sh"):
            chaos_report(output)
    (command_mode,) = commands(block("Break it#4").text)
    chaos_report(run(f"{command_mode} --time-limit {README_CHAOS_BOUND_S}"))
    run(block_commands[-1])
    assert p.compose("ps", "--all", "--quiet").strip() == ""
    assert len(p.volumes()) == 4  # `down` keeps the data
