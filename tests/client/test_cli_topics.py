"""`minikafka topics` (librdkafka's AdminClient over Kafka's protocol) against a real 3-broker
cluster shared by the module (every test makes its own topics), and a cluster of its own
for the test that stops a broker."""

from __future__ import annotations

import asyncio
import re
import socket
import sys
import time
import uuid
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result

from minikafka.cli.main import cli
from minikafka.cli.topics import API_TIMEOUT_S
from minikafka.client.kafka_wire import NetworkError
from minikafka.cluster import LocalCluster
from tests.cluster.conftest import (  # noqa: F401
    ClusterFactory,
    cluster,
    make_cluster,
    started_cluster,
    wait_until,
)
from tests.cluster.helpers import metadata_at, partition_states

pytestmark = pytest.mark.timeout(180)

# Not Kafka's defaults (1 and 1): a topic created without --partitions and
# --replication-factor shows that the brokers chose them.
NUM_PARTITIONS = 2
DEFAULT_REPLICATION_FACTOR = 2


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    overrides = {
        "num.partitions": str(NUM_PARTITIONS),
        "default.replication.factor": str(DEFAULT_REPLICATION_FACTOR),
    }
    with started_cluster(tmp_path_factory.mktemp("topics"), overrides) as lc:
        yield lc


def new_name() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


def topics(bootstrap: str, *args: str) -> Result:
    """The command's result. After a successful --create or --alter, once every broker of
    `bootstrap` lists the topic (with its new partition count) and its leaders: the creation is acknowledged when the controller's
    broker knows them (as Kafka's), and the others learn of them from its UpdateMetadata a
    moment later, so a listing or an --alter right away may not find it yet, with Kafka
    too (a broker that does not answer is passed over). The tests here are about the command's output, not that propagation."""
    result = CliRunner().invoke(cli, ["topics", "--bootstrap-server", bootstrap, *args])
    changed = "--create" in args or ("--alter" in args and "--if-exists" not in args)
    if result.exit_code == 0 and changed:
        topic = args[args.index("--topic") + 1]
        count = int(args[args.index("--partitions") + 1]) if "--alter" in args else None
        brokers = [host_port.rsplit(":", 1) for host_port in bootstrap.split(",")]

        def known_everywhere() -> bool:
            for host, port in brokers:
                try:
                    md = asyncio.run(metadata_at(host, int(port)))
                except NetworkError:
                    continue  # a stopped broker lists nothing
                t = next((t for t in md.topics if t.name == topic), None)
                if t is None or t.error_code or any(p.leader < 0 for p in t.partitions):
                    return False
                if count is not None and len(t.partitions) != count:
                    return False
            return True

        wait_until(known_everywhere, 30, f"every broker to list {topic}")
    return result


def closed_port() -> int:
    """A loopback port nothing listens on (connections to it are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def ids(values: tuple[int, ...] | list[int]) -> str:
    return ",".join(map(str, values))


# --- create and describe -------------------------------------------------------------------


def test_create_then_describe_in_kafkas_format(shared: LocalCluster) -> None:
    b, t = shared.bootstrap_servers, new_name()
    created = topics(b, "--create", "--topic", t, "--partitions", "2", "--replication-factor", "3")
    assert created.exit_code == 0, created.output
    assert created.stdout == f"Created topic {t}.\n"

    described = topics(b, "--describe", "--topic", t)
    assert described.exit_code == 0, described.output
    assignment = shared.zk_client().get_assignment(t)
    assert assignment is not None
    states = partition_states(shared, t, 2)
    assert described.stdout.splitlines() == [
        f"Topic: {t}\tPartitionCount: 2\tReplicationFactor: 3\tConfigs: ",
        *(
            f"\tTopic: {t}\tPartition: {p}\tLeader: {states[p].leader}"
            f"\tReplicas: {ids(assignment[p])}\tIsr: {ids(states[p].isr)}"
            for p in range(2)
        ),
    ]


def test_describe_shows_the_topics_non_default_configs_only(shared: LocalCluster) -> None:
    b, plain, tuned = shared.bootstrap_servers, new_name(), new_name()
    assert topics(b, "--create", "--topic", plain).exit_code == 0
    created = topics(
        b,
        *("--create", "--topic", tuned, "--config", "retention.ms=3600000"),
        *("--config", "min.insync.replicas=2"),
    )
    assert created.exit_code == 0, created.output
    headers = [
        line
        for line in topics(b, "--describe").stdout.splitlines()
        if line.startswith(("Topic: " + plain + "\t", "Topic: " + tuned + "\t"))
    ]
    assert [h.split("\tConfigs: ")[1] for h in headers] == (
        ["", "min.insync.replicas=2,retention.ms=3600000"]
        if plain < tuned
        else ["min.insync.replicas=2,retention.ms=3600000", ""]
    )


def test_create_without_counts_takes_the_brokers_defaults(shared: LocalCluster) -> None:
    b, t = shared.bootstrap_servers, new_name()
    assert topics(b, "--create", "--topic", t).exit_code == 0
    header = topics(b, "--describe", "--topic", t).stdout.splitlines()[0]
    assert (
        f"\tPartitionCount: {NUM_PARTITIONS}\tReplicationFactor: {DEFAULT_REPLICATION_FACTOR}\t"
        in header
    )


def test_create_with_a_replica_assignment_places_each_partition(shared: LocalCluster) -> None:
    b, t = shared.bootstrap_servers, new_name()
    created = topics(b, "--create", "--topic", t, "--replica-assignment", "1:2,2:3,3:1")
    assert created.exit_code == 0, created.output
    assert shared.zk_client().get_assignment(t) == {0: (1, 2), 1: (2, 3), 2: (3, 1)}
    rows = topics(b, "--describe", "--topic", t).stdout.splitlines()
    assert rows[0].startswith(f"Topic: {t}\tPartitionCount: 3\tReplicationFactor: 2\t")
    assert [r.split("\t")[4] for r in rows[1:]] == [
        "Replicas: 1,2",
        "Replicas: 2,3",
        "Replicas: 3,1",
    ]

    both = topics(
        b, "--create", "--topic", new_name(), "--replica-assignment", "1", "--partitions", "1"
    )
    assert both.exit_code == 1
    assert both.stderr == (
        "Error while executing topic command : --replica-assignment cannot be combined with "
        "--partitions or --replication-factor\n"
    )


def test_creating_an_existing_topic_fails_clearly_unless_if_not_exists(
    shared: LocalCluster,
) -> None:
    b, t = shared.bootstrap_servers, new_name()
    assert topics(b, "--create", "--topic", t, "--partitions", "1").exit_code == 0
    again = topics(b, "--create", "--topic", t, "--partitions", "1")
    assert again.exit_code == 1
    assert again.stderr == f"Error while executing topic command : Topic '{t}' already exists.\n"
    quiet = topics(b, "--create", "--topic", t, "--if-not-exists")
    assert quiet.exit_code == 0 and quiet.stdout == "" and quiet.stderr == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--replication-factor", "5"], "Replication factor: 5 larger than available brokers: 3."),
        (["--config", "no.such.config=1"], "unknown topic config 'no.such.config'"),
        (["--replica-assignment", "1:9"], "Unknown broker(s) in replica assignment"),
    ],
)
def test_a_refused_creation_fails_with_the_brokers_message(
    shared: LocalCluster, args: list[str], message: str
) -> None:
    t = new_name()
    result = topics(shared.bootstrap_servers, "--create", "--topic", t, *args)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error while executing topic command : {message}")
    assert not shared.zk_client().topic_exists(t)


# --- alter ---------------------------------------------------------------------------------


def test_alter_adds_partitions_silently_like_kafka(shared: LocalCluster) -> None:
    b, t = shared.bootstrap_servers, new_name()
    assert topics(b, "--create", "--topic", t, "--partitions", "2").exit_code == 0
    altered = topics(b, "--alter", "--topic", t, "--partitions", "4")
    assert altered.exit_code == 0, altered.output
    assert altered.stdout == "" and altered.stderr == ""
    assert len(shared.zk_client().get_assignment(t) or {}) == 4

    def four_with_leaders() -> bool:
        lines = topics(b, "--describe", "--topic", t).stdout.splitlines()
        return (
            len(lines) == 5
            and "\tPartitionCount: 4\t" in lines[0]
            and all("Leader: none" not in line for line in lines[1:])
        )

    wait_until(four_with_leaders, 30, "describe to show 4 partitions with leaders")


def test_alter_with_a_replica_assignment_sends_only_the_new_partitions(
    shared: LocalCluster,
) -> None:
    b, t = shared.bootstrap_servers, new_name()
    assert topics(b, "--create", "--topic", t, "--replica-assignment", "1:2,2:3").exit_code == 0
    altered = topics(
        b, "--alter", "--topic", t, "--partitions", "4", "--replica-assignment", "1:2,2:3,3:1,2:1"
    )
    assert altered.exit_code == 0, altered.output
    assert shared.zk_client().get_assignment(t) == {0: (1, 2), 1: (2, 3), 2: (3, 1), 3: (2, 1)}

    # One that names no new partition cannot add any (Kafka's broker says so).
    none_new = topics(
        b, "--alter", "--topic", t, "--partitions", "6", "--replica-assignment", "1:2,2:3,3:1,2:1"
    )
    assert none_new.exit_code == 1
    assert none_new.stderr == (
        "Error while executing topic command : Increasing the number of partitions by 2 but "
        "0 assignments provided.\n"
    )


def test_alter_errors_are_kafkas_messages(shared: LocalCluster) -> None:
    b, t = shared.bootstrap_servers, new_name()
    assert topics(b, "--create", "--topic", t, "--partitions", "3").exit_code == 0
    fewer = topics(b, "--alter", "--topic", t, "--partitions", "2")
    assert fewer.exit_code == 1
    assert fewer.stderr == (
        "Error while executing topic command : Topic currently has 3 partitions, which is "
        "higher than the requested 2.\n"
    )
    missing = topics(b, "--alter", "--topic", new_name(), "--partitions", "2")
    assert missing.exit_code == 1
    assert missing.stderr.endswith(" does not exist as expected\n")
    quiet = topics(b, "--alter", "--topic", new_name(), "--partitions", "2", "--if-exists")
    assert quiet.exit_code == 0 and quiet.stdout == "" and quiet.stderr == ""


# --- list and delete -----------------------------------------------------------------------


def test_list_and_delete(shared: LocalCluster) -> None:
    b, prefix = shared.bootstrap_servers, new_name()
    first, second = f"{prefix}-a", f"{prefix}-b"
    for name in (second, first):
        assert topics(b, "--create", "--topic", name, "--partitions", "1").exit_code == 0
    listed = topics(b, "--list").stdout.splitlines()
    assert listed == sorted(listed)
    assert [n for n in listed if n.startswith(prefix)] == [first, second]

    deleted = topics(b, "--delete", "--topic", first)
    assert deleted.exit_code == 0 and deleted.stdout == "", deleted.output
    wait_until(lambda: first not in topics(b, "--list").stdout.splitlines(), 30, f"{first} to go")
    assert second in topics(b, "--list").stdout.splitlines()
    missing = topics(b, "--delete", "--topic", first)
    assert missing.exit_code == 1
    assert missing.stderr == (
        f"Error while executing topic command : Topic '{first}' does not exist as expected\n"
    )
    assert topics(b, "--delete", "--topic", first, "--if-exists").exit_code == 0
    quiet = topics(b, "--describe", "--topic", first, "--if-exists")
    assert quiet.exit_code == 0 and quiet.stdout == ""
    loud = topics(b, "--describe", "--topic", first)
    assert loud.exit_code == 1 and "does not exist as expected" in loud.stderr


# --- a stopped broker ----------------------------------------------------------------------


def test_describe_shows_leader_none_and_filters_partitions(
    cluster: LocalCluster,  # noqa: F811 (the fixture imported above)
) -> None:
    b = cluster.bootstrap_servers
    # Partition 1 of `alone` has broker 2 as its only replica; `spread` has all three.
    assert topics(b, "--create", "--topic", "alone", "--replica-assignment", "1,2").exit_code == 0
    assert (
        topics(b, "--create", "--topic", "spread", "--replica-assignment", "1:2:3").exit_code == 0
    )
    cluster.terminate(2)  # controlled shutdown: the controller takes it out of every ISR

    def described() -> list[str]:
        return topics(b, "--describe").stdout.splitlines()

    offline = "\tTopic: alone\tPartition: 1\tLeader: none\tReplicas: 2\tIsr: 2"
    shrunk = "\tTopic: spread\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,3"
    wait_until(lambda: offline in described() and shrunk in described(), 30, "broker 2 to be gone")
    # As Kafka: without a leader the ISR keeps its last member.
    assert topics(b, "--describe", "--unavailable-partitions").stdout == offline + "\n"
    assert topics(b, "--describe", "--under-replicated-partitions").stdout == shrunk + "\n"
    both = topics(b, "--describe", "--under-replicated-partitions", "--unavailable-partitions")
    assert both.stdout == f"{offline}\n{shrunk}\n"


def test_describe_marks_a_leader_or_isr_member_that_does_not_answer(
    cluster: LocalCluster,  # noqa: F811 (the fixture imported above)
) -> None:
    """A paused broker stays registered, in the metadata and in every ISR, and accepts
    connections: kafka-topics.sh shows nothing wrong, yet acks=all writes wait on it.
    describe marks it Unreachable on each partition it leads or is in the ISR of."""
    b = cluster.bootstrap_servers
    assert (
        topics(b, "--create", "--topic", "stall", "--replica-assignment", "1:2,3:1").exit_code == 0
    )
    wait_until(
        lambda: "\tIsr: 1,2\n" in topics(b, "--describe", "--topic", "stall").stdout,
        30,
        "in sync",
    )
    cluster.pause(2)
    try:
        described = topics(b, "--describe", "--topic", "stall")
        assert described.exit_code == 0, described.output
        partitions = described.stdout.splitlines()[1:]
        assert partitions[0].endswith("\tIsr: 1,2\tUnreachable: 2"), partitions
        assert partitions[1].endswith("\tIsr: 3,1"), partitions  # broker 2 holds no replica
        assert "acks=all" in described.stderr
    finally:
        cluster.resume(2)
    described = topics(b, "--describe", "--topic", "stall")
    assert "Unreachable" not in described.output


def test_create_reaches_the_new_controller_after_the_old_one_died(
    make_cluster: ClusterFactory,  # noqa: F811 (the fixture imported above)
) -> None:
    lc = make_cluster()
    old = lc.controller()
    assert old is not None
    lc.kill(old[0])  # still registered, and named controller, until its session expires
    created = topics(lc.bootstrap_servers, "--create", "--topic", "t", "--partitions", "1")
    assert created.exit_code == 0, created.output
    assert created.stdout == "Created topic t.\n"
    assert lc.zk_client().get_assignment("t") is not None
    new = lc.controller()
    assert new is not None and new[0] != old[0]


# --- what fails before any request --------------------------------------------------------


def test_unreachable_brokers_fail_at_once_with_librdkafkas_reason(
    capfd: pytest.CaptureFixture[str],
) -> None:
    port = closed_port()
    started = time.monotonic()
    result = topics(f"127.0.0.1:{port}", "--list")
    assert result.exit_code == 1
    # librdkafka's count: of the bootstrap broker, and at times of its own logical one too.
    assert re.match(
        r"Error while executing topic command : \d+/\d+ brokers are down", result.stderr
    )
    assert f"127.0.0.1:{port}" in result.stderr and "Connection refused" in result.stderr
    assert time.monotonic() - started < API_TIMEOUT_S / 2  # not the call's whole timeout
    # librdkafka's own log of each refused connection stays off the terminal (without -v).
    assert "Connection refused" not in capfd.readouterr().err


def test_without_confluent_kafka_topics_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)  # makes the import fail
    result = topics(f"127.0.0.1:{closed_port()}", "--list")
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        "Error: minikafka topics runs its admin client on librdkafka, the confluent-kafka "
        "package: pip install confluent-kafka\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--topic", "t"], "exactly one action"),
        (["--alter", "--partitions", "3"], "--alter needs --topic"),
        (["--alter", "--topic", "t"], "--alter needs --partitions"),
        (
            ["--alter", "--topic", "t", "--partitions", "3", "--replication-factor", "2"],
            "--alter only adds partitions",
        ),
        (["--create"], "--create needs --topic"),
        (["--delete"], "--delete needs --topic"),
    ],
)
def test_usage_errors(args: list[str], message: str) -> None:
    result = topics(f"127.0.0.1:{closed_port()}", *args)
    assert result.exit_code == 2 and message in result.stderr


def test_exclude_internal_leaves_out_the_offsets_topic(shared: LocalCluster) -> None:
    """Once a group has committed, __consumer_offsets is listed (as kafka-topics.sh lists
    it); --exclude-internal leaves it out of --list and --describe."""
    from confluent_kafka import Consumer, TopicPartition

    b, name = shared.bootstrap_servers, new_name()
    assert topics(b, "--create", "--topic", name, "--partitions", "1").exit_code == 0
    c = Consumer({"bootstrap.servers": b, "group.id": f"{name}-group"})
    try:
        c.commit(offsets=[TopicPartition(name, 0, 1)], asynchronous=False)
    finally:
        c.close()
    assert "__consumer_offsets" in topics(b, "--list").stdout.splitlines()
    listed = topics(b, "--list", "--exclude-internal").stdout.splitlines()
    assert name in listed and "__consumer_offsets" not in listed
    described = topics(b, "--describe", "--exclude-internal").stdout
    assert f"Topic: {name}" in described and "__consumer_offsets" not in described
