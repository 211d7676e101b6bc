"""`minikafka produce` and `minikafka consume` (librdkafka over Kafka's protocol) against a
real 3-broker cluster, shared by the module: every test uses its own topics."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner, Result
from confluent_kafka import Producer

from minikafka.cli.main import cli
from minikafka.cluster import LocalCluster
from tests.cluster.conftest import started_cluster, wait_until
from tests.kafka_protocol.test_confluent_kafka import consume_from_beginning, create_topic


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with started_cluster(tmp_path_factory.mktemp("cli")) as cluster:
        yield cluster


def new_topic(cluster: LocalCluster, partitions: int = 1, **configs: str) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    create_topic(cluster.bootstrap_servers, name, partitions, 3, **configs)
    return name


def run(cluster: LocalCluster, *args: str, input: bytes | str | None = None) -> Result:
    bootstrap = ["--bootstrap-server", cluster.bootstrap_servers]
    return CliRunner().invoke(cli, [args[0], *bootstrap, *args[1:]], input=input)


def append(cluster: LocalCluster, topic: str, records: list[dict[str, Any]]) -> None:
    """Records written with acks=all by librdkafka, in order (keys, headers, timestamps as
    given)."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    failures: list[object] = []
    for r in records:
        producer.produce(topic, on_delivery=lambda e, m: e and failures.append(e), **r)
        producer.flush(30)
    assert not failures and len(producer) == 0


# --- produce -------------------------------------------------------------------------------


def test_produce_sends_one_record_per_line_with_keys(shared: LocalCluster) -> None:
    topic = new_topic(shared)
    result = run(
        shared,
        *("produce", "--topic", topic, "--acks", "all"),
        *("--property", "parse.key=true", "--property", "key.separator=:"),
        input=b"k1:v1\nk2:v:2\r\nk3:v3",
    )
    assert result.exit_code == 0, result.output
    got = consume_from_beginning(shared.bootstrap_servers, topic, 1)
    assert [(m.key(), m.value()) for m in got] == [(b"k1", b"v1"), (b"k2", b"v:2"), (b"k3", b"v3")]


def test_acks_all_waits_for_min_insync_replicas_and_each_failed_record_is_reported(
    shared: LocalCluster,
) -> None:
    # Three replicas in sync but four required: acks=all is refused with
    # NOT_ENOUGH_REPLICAS, which acks=1 does not wait for.
    topic = new_topic(shared, **{"min.insync.replicas": "4"})
    failed = run(
        shared,
        *("produce", "--topic", topic, "--acks", "all", "--message-send-max-retries", "0"),
        input=b"a\nbb\n",
    )
    assert failed.exit_code == 1
    errors = [line for line in failed.stderr.splitlines() if line.startswith("Error when")]
    assert [e.split(" with key")[0] for e in errors] == [
        f"Error when sending message (line {n}) to topic {topic}" for n in (1, 2)
    ]
    assert all("NOT_ENOUGH_REPLICAS" in e for e in errors), errors
    assert "2 of 2 records were not sent" in failed.stderr
    ok = run(shared, "produce", "--topic", topic, "--acks", "1", input=b"c\n")
    assert ok.exit_code == 0, ok.output

    def read() -> list[bytes | None]:
        return [m.value() for m in consume_from_beginning(shared.bootstrap_servers, topic, 1)]

    # acks=1 answers before the followers have it: the HW (what consumers see) follows.
    wait_until(lambda: read() == [b"c"], 30, "the acks=1 record below the HW")


def test_producing_to_a_topic_that_does_not_exist_creates_it(shared: LocalCluster) -> None:
    # The brokers auto-create it (auto.create.topics.enable): while its leader is being
    # elected, Metadata answers LEADER_NOT_AVAILABLE, which the command waits out.
    topic = f"new-{uuid.uuid4().hex[:8]}"
    result = run(shared, "produce", "--topic", topic, "--acks", "all", input=b"a\nb\n")
    assert result.exit_code == 0, result.output
    assert shared.zk_client().topic_exists(topic)
    got = consume_from_beginning(shared.bootstrap_servers, topic, 1)
    assert [m.value() for m in got] == [b"a", b"b"]


def test_produce_rejects_lines_without_a_key_separator(shared: LocalCluster) -> None:
    topic = new_topic(shared)
    result = run(
        shared,
        *("produce", "--topic", topic, "--acks", "all", "--property", "parse.key=true"),
        input=b"novalue\nk\tv\n",
    )
    assert result.exit_code == 1
    assert "No key separator found on line 1" in result.stderr
    assert "1 of 2 records were not sent" in result.stderr
    got = consume_from_beginning(shared.bootstrap_servers, topic, 1)
    assert [(m.key(), m.value()) for m in got] == [(b"k", b"v")]


def test_produce_takes_producer_properties_by_kafka_name_and_refuses_unknown_ones(
    shared: LocalCluster,
) -> None:
    topic = new_topic(shared)
    ok = run(
        shared,
        *("produce", "--topic", topic, "--acks", "all"),
        *("--producer-property", "delivery.timeout.ms=40000"),
        *("--producer-property", "enable.idempotence=true"),
        input=b"x\n",
    )
    assert ok.exit_code == 0, ok.output
    bad = run(shared, "produce", "--topic", topic, "--producer-property", "nope=1", input=b"")
    assert bad.exit_code == 2
    assert 'No such configuration property: "nope"' in bad.output
    assert "--producer-property" in bad.output
    block = run(
        shared, "produce", "--topic", topic, "--producer-property", "max.block.ms=-5", input=b""
    )
    assert block.exit_code == 2
    assert "max.block.ms must be a non-negative integer, not '-5'" in block.output


def free_port() -> int:
    with socket.socket() as s:  # a port with nothing listening on it
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def minikafka(*args: str) -> list[str]:
    return [sys.executable, "-m", "minikafka", *args]


def test_produce_without_a_reachable_broker_fails_once_naming_the_address() -> None:
    """No broker answers: the first record waits max.block.ms for metadata and fails, with
    one line naming the address and why; the rest of stdin is not read (a terminal would
    keep the command waiting), and the status is non-zero."""
    address = f"127.0.0.1:{free_port()}"
    result = subprocess.run(
        [
            *minikafka("produce", "--bootstrap-server", address, "--topic", "ghost"),
            *("--producer-property", "max.block.ms=500"),
        ],
        input="".join(f"line-{i}\n" for i in range(100)).encode(),
        capture_output=True,
        timeout=120,
    )
    assert result.returncode == 1
    stderr = result.stderr.decode()
    assert stderr.splitlines() == [
        f"Error: no broker at {address} answered within 500 ms: Connect to "
        f"ipv4#{address} failed: Connection refused; stopped at line 1: nothing sent"
    ], stderr


@pytest.mark.parametrize("address", ["nosuchhost.invalid:9092", "closed port"])
def test_consume_from_an_unreachable_address_honours_timeout_ms_and_says_why_once(
    address: str,
) -> None:
    """The consumer gives up after --timeout-ms even with no connection, with one line
    naming the address, and a non-zero status; librdkafka's reconnect lines (several a
    second) go through logging, at INFO for a failing connection, each line at most once
    per 30 s (-v shows them)."""
    if address == "closed port":
        address = f"127.0.0.1:{free_port()}"
    for verbose in ([], ["-v"]):
        result = subprocess.run(
            minikafka(
                *verbose,
                *("consume", "--bootstrap-server", address, "--topic", "orders"),
                *("--timeout-ms", "3000"),
            ),
            capture_output=True,
            timeout=120,
        )
        assert result.returncode == 1
        lines = result.stderr.decode().splitlines()
        errors = [line for line in lines if "terminating consumer process" in line]
        assert len(errors) == 1 and errors[0].startswith(
            "Error processing message, terminating consumer process: "
            f"no broker at {address} answered within 3000 ms: "
        ), lines
        assert lines[-1] == "Processed a total of 0 messages"
        librdkafka = [line for line in lines if "minikafka.librdkafka" in line]
        if not verbose:
            assert len(lines) == 2, lines
        else:
            # Reconnecting every 100 ms or so for 3 s: one line, not thirty.
            assert 1 <= len(librdkafka) <= 2, lines


# --- consume -------------------------------------------------------------------------------


def test_consume_from_beginning_prints_values_and_the_total(shared: LocalCluster) -> None:
    topic = new_topic(shared)
    append(shared, topic, [{"value": v} for v in (b"a", b"b", b"c")])
    result = run(shared, "consume", "--topic", topic, "--from-beginning", "--timeout-ms", "5000")
    assert result.exit_code == 0, result.output
    assert result.stdout == "a\nb\nc\n"
    assert "Processed a total of 3 messages" in result.stderr


def test_consume_stops_after_max_messages(shared: LocalCluster) -> None:
    topic = new_topic(shared)
    append(shared, topic, [{"value": v} for v in (b"a", b"b", b"c")])
    result = run(shared, "consume", "--topic", topic, "--from-beginning", "--max-messages", "2")
    assert result.exit_code == 0, result.output
    assert result.stdout == "a\nb\n"
    assert "Processed a total of 2 messages" in result.stderr


def test_consume_prints_what_the_print_properties_ask_for(shared: LocalCluster) -> None:
    topic = new_topic(shared)
    append(
        shared,
        topic,
        [
            {"key": b"k0", "value": b"v0", "timestamp": 5, "headers": [("h", b"1")]},
            {"value": b"v1", "timestamp": 6},
        ],
    )
    result = run(
        shared,
        *("consume", "--topic", topic, "--from-beginning", "--max-messages", "2"),
        *("--property", "print.key=true", "--property", "print.offset=true"),
        *("--property", "print.partition=true", "--property", "print.timestamp=true"),
        *("--property", "print.headers=true", "--property", "key.separator=|"),
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "CreateTime:5|Partition:0|Offset:0|h:1|k0|v0",
        "CreateTime:6|Partition:0|Offset:1|NO_HEADERS|null|v1",
    ]


def test_consume_one_partition_from_an_offset(shared: LocalCluster) -> None:
    topic = new_topic(shared, partitions=2)
    append(shared, topic, [{"value": b"p0", "partition": 0}])
    append(shared, topic, [{"value": v, "partition": 1} for v in (b"a", b"b", b"c")])
    result = run(
        shared,
        *("consume", "--topic", topic, "--partition", "1", "--offset", "1"),
        *("--max-messages", "2"),
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "b\nc\n"
    missing = run(shared, "consume", "--topic", topic, "--partition", "7", "--timeout-ms", "100")
    assert missing.exit_code == 2
    assert f"topic {topic} has no partition 7 (it has 2)" in missing.output


def test_consume_latest_by_default_prints_only_what_comes_after(shared: LocalCluster) -> None:
    topic = new_topic(shared)
    append(shared, topic, [{"value": b"old"}])
    result = run(shared, "consume", "--topic", topic, "--timeout-ms", "2000")
    assert result.exit_code == 0 and result.stdout == ""
    assert "Processed a total of 0 messages" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--offset", "3"], "The partition is required when offset is specified."),
        (["--partition", "0", "--offset", "x"], "non-negative long"),
        (
            ["--partition", "0", "--offset", "1", "--from-beginning"],
            "cannot be specified together",
        ),
    ],
)
def test_consume_rejects_inconsistent_options(args: list[str], message: str) -> None:
    result = CliRunner().invoke(
        cli, ["consume", "--bootstrap-server", "127.0.0.1:1", "--topic", "t", *args]
    )
    assert result.exit_code == 2 and message in result.output


def test_consume_of_a_missing_topic_fails_naming_it(shared: LocalCluster) -> None:
    result = run(
        shared,
        *("consume", "--topic", "missing", "--timeout-ms", "200"),
        *("--consumer-property", "allow.auto.create.topics=false"),
    )
    assert result.exit_code == 1
    assert "Topic missing does not exist (this client does not auto-create topics)" in result.stderr
    assert "Processed a total of 0 messages" in result.stderr
    assert not shared.zk_client().topic_exists("missing")


def test_consume_refuses_an_unknown_consumer_property(shared: LocalCluster) -> None:
    result = run(shared, "consume", "--topic", "t", "--consumer-property", "max.poll.recs=1")
    assert result.exit_code == 2
    assert 'No such configuration property: "max.poll.recs"' in result.output


# --- both ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "prop", "message"),
    [
        ("consume", "print.keys=true", "unknown property print.keys (known: "),
        ("produce", "parse.keys=true", "unknown property parse.keys (known: "),
        ("consume", "print.key=yes", "print.key must be true or false, not 'yes'"),
    ],
)
def test_an_unknown_or_malformed_property_is_refused_not_ignored(
    command: str, prop: str, message: str
) -> None:
    result = CliRunner().invoke(
        cli,
        [command, "--bootstrap-server", "127.0.0.1:1", "--topic", "t", "--property", prop],
        input="a\n",
    )
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "--property" in result.output


@pytest.mark.parametrize("command", ["produce", "consume"])
def test_without_confluent_kafka_the_command_says_what_to_install(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)  # makes the import fail
    result = CliRunner().invoke(
        cli, [command, "--bootstrap-server", "127.0.0.1:1", "--topic", "t"], input=""
    )
    assert result.exit_code == 1, result.output
    assert (
        f"minikafka {command} runs on librdkafka, the confluent-kafka package: "
        "pip install confluent-kafka" in result.output
    )


def test_sigterm_ends_consume_in_a_group_as_ctrl_c_does(shared: LocalCluster) -> None:
    """SIGTERM: the consumer commits what it printed and leaves its group at once (no wait
    for the session timeout), prints the total, and exits with 143."""
    from confluent_kafka.admin import AdminClient

    topic, group = new_topic(shared), f"g-{uuid.uuid4().hex[:8]}"
    append(shared, topic, [{"value": b"v%d" % i} for i in range(5)])
    proc = subprocess.Popen(
        minikafka(
            *("consume", "--bootstrap-server", shared.bootstrap_servers, "--topic", topic),
            *("--group", group, "--from-beginning"),
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        printed = [proc.stdout.readline() for _ in range(5)]
        assert printed == [b"v%d\n" % i for i in range(5)]
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, stderr
    assert b"Processed a total of 5 messages" in stderr
    admin = AdminClient({"bootstrap.servers": shared.bootstrap_servers})
    described = admin.describe_consumer_groups([group])[group].result(timeout=30)
    assert described.members == [] and described.state.name == "EMPTY"
    result = run(shared, "consumer-groups", "--group", group, "--describe", "--offsets")
    assert result.exit_code == 0, result.output
    assert f"{topic}" in result.stdout and " 5 " in result.stdout


def test_sigterm_ends_produce_with_143(shared: LocalCluster) -> None:
    topic = new_topic(shared)
    proc = subprocess.Popen(
        minikafka("produce", "--bootstrap-server", shared.bootstrap_servers, "--topic", topic),
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"".join(b"r%d\n" % i for i in range(10)))
        proc.stdin.flush()  # stdin stays open: the command is still reading when stopped
        wait_until(
            lambda: len(consume_from_beginning(shared.bootstrap_servers, topic, 1)) == 10,
            60,
            "the ten records",
        )
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, stderr
