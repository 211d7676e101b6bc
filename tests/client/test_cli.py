"""The client-side commands (topics, produce, consume) against a fake cluster that runs on
its own event loop thread, as the commands run their own loops."""

from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from minikafka.cli.main import cli
from minikafka.protocol import messages as m
from minikafka.protocol.errors import ErrorCode
from tests.client.fake_broker import ThreadedCluster, produce_error


@pytest.fixture
def threaded() -> Iterator[ThreadedCluster]:
    t = ThreadedCluster(3)
    yield t
    t.close()


def run(threaded, *args, input=None):
    bootstrap = ["--bootstrap-server", threaded.cluster.bootstrap]
    return CliRunner().invoke(cli, [args[0], *bootstrap, *args[1:]], input=input)


def test_create_then_describe_in_kafkas_format(threaded):
    result = run(
        threaded,
        "topics",
        "--create",
        "--topic",
        "t",
        "--partitions",
        "2",
        "--replication-factor",
        "3",
        "--config",
        "min.insync.replicas=2",
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "Created topic t.\n"
    threaded.call(lambda: threaded.cluster.move_leader("t", 1, 3))
    described = run(threaded, "topics", "--describe", "--topic", "t")
    assert described.exit_code == 0
    assert described.stdout.splitlines() == [
        "Topic: t\tPartitionCount: 2\tReplicationFactor: 3\tConfigs: ",
        "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3",
        "\tTopic: t\tPartition: 1\tLeader: 3\tReplicas: 2,3,1\tIsr: 2,3,1",
    ]


def test_describe_shows_leader_none_and_filters_unavailable_partitions(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=2, replication_factor=1))
    threaded.run(threaded.cluster.stop_broker(2))  # sole replica of partition 1
    described = run(threaded, "topics", "--describe", "--topic", "t")
    assert "\tPartition: 1\tLeader: none\tReplicas: 2\tIsr: \n" in described.stdout
    unavailable = run(threaded, "topics", "--describe", "--unavailable-partitions")
    assert unavailable.stdout == "\tTopic: t\tPartition: 1\tLeader: none\tReplicas: 2\tIsr: \n"


def test_creating_an_existing_topic_fails_clearly_unless_if_not_exists(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t"))
    result = run(threaded, "topics", "--create", "--topic", "t", "--partitions", "1")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error while executing topic command : ")
    assert "Topic 't' already exists." in result.stderr
    quiet = run(threaded, "topics", "--create", "--topic", "t", "--if-not-exists")
    assert quiet.exit_code == 0 and quiet.stdout == ""


def test_an_invalid_replication_factor_fails_with_the_brokers_message(threaded):
    result = run(threaded, "topics", "--create", "--topic", "t", "--replication-factor", "5")
    assert result.exit_code == 1
    assert "larger than available brokers" in result.stderr


def test_alter_adds_partitions_silently_like_kafka(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=2, replication_factor=3))
    result = run(threaded, "topics", "--alter", "--topic", "t", "--partitions", "4")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    described = run(threaded, "topics", "--describe", "--topic", "t")
    assert "PartitionCount: 4\t" in described.stdout
    (_, request), *_ = threaded.cluster.requests_of(m.CreatePartitionsRequest)
    assert request.topics == [m.CreatePartitionsTopic("t", 4, None)]


def test_alter_with_a_replica_assignment_sends_only_the_new_partitions(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=2, replication_factor=2))
    result = run(
        threaded,
        "topics",
        "--alter",
        "--topic",
        "t",
        "--partitions",
        "4",
        "--replica-assignment",
        "1:2,2:3,3:1,2:1",
    )
    assert result.exit_code == 0, result.output
    (_, request), *_ = threaded.cluster.requests_of(m.CreatePartitionsRequest)
    assert request.topics == [m.CreatePartitionsTopic("t", 4, [[3, 1], [2, 1]])]
    assert threaded.cluster.partition("t", 3).replicas == [2, 1]


def test_alter_errors_are_kafkas_messages(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=3))
    fewer = run(threaded, "topics", "--alter", "--topic", "t", "--partitions", "2")
    assert fewer.exit_code == 1
    assert fewer.stderr == (
        "Error while executing topic command : INVALID_PARTITIONS: Topic currently has 3 "
        "partitions, which is higher than the requested 2.\n"
    )
    missing = run(threaded, "topics", "--alter", "--topic", "nope", "--partitions", "2")
    assert missing.exit_code == 1
    assert "Topic 'nope' does not exist as expected" in missing.stderr
    quiet = run(
        threaded, "topics", "--alter", "--topic", "nope", "--partitions", "2", "--if-exists"
    )
    assert quiet.exit_code == 0 and quiet.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--alter", "--partitions", "3"], "--alter needs --topic"),
        (["--alter", "--topic", "t"], "--alter needs --partitions"),
        (
            ["--alter", "--topic", "t", "--partitions", "3", "--replication-factor", "2"],
            "--alter only adds partitions",
        ),
    ],
)
def test_alter_usage_errors(threaded, args, message):
    result = run(threaded, "topics", *args)
    assert result.exit_code == 2 and message in result.stderr


def test_list_and_delete(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("b"))
    threaded.call(lambda: threaded.cluster.create_topic("a"))
    assert run(threaded, "topics", "--list").stdout == "a\nb\n"
    assert run(threaded, "topics", "--delete", "--topic", "a").exit_code == 0
    assert run(threaded, "topics", "--list").stdout == "b\n"
    missing = run(threaded, "topics", "--delete", "--topic", "a")
    assert missing.exit_code == 1 and "does not exist" in missing.stderr
    assert run(threaded, "topics", "--describe", "--topic", "a", "--if-exists").exit_code == 0


def test_topics_needs_exactly_an_action(threaded):
    result = run(threaded, "topics", "--topic", "t")
    assert result.exit_code == 2 and "exactly one action" in result.output


def test_produce_sends_one_record_per_line_with_keys(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=1))
    result = run(
        threaded,
        "produce",
        "--topic",
        "t",
        "--acks",
        "all",
        "--property",
        "parse.key=true",
        "--property",
        "key.separator=:",
        input=b"k1:v1\nk2:v:2\r\nk3:v3",
    )
    assert result.exit_code == 0, result.output
    assert threaded.call(lambda: threaded.cluster.values("t", 0)) == [b"v1", b"v:2", b"v3"]
    produce = threaded.cluster.requests_of(m.ProduceRequest)[0][1]
    assert produce.acks == -1


def test_produce_reports_each_failed_record_and_exits_non_zero(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=1))
    threaded.call(
        lambda: threaded.cluster.inject(
            m.ProduceRequest, produce_error(ErrorCode.INVALID_REQUIRED_ACKS), times=10
        )
    )
    result = run(threaded, "produce", "--topic", "t", "--linger-ms", "0", input=b"a\nbb\n")
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error when")]
    assert len(errors) >= 1
    assert all("INVALID_REQUIRED_ACKS" in e and "to topic t" in e for e in errors)
    assert "2 of 2 records were not sent" in result.stderr


def test_produce_rejects_lines_without_a_key_separator(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=1))
    result = run(
        threaded, "produce", "--topic", "t", "--property", "parse.key=true", input=b"novalue\n"
    )
    assert result.exit_code == 1
    assert "No key separator found on line 1" in result.stderr


def test_produce_accepts_producer_properties_by_kafka_name(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=1))
    ok = run(
        threaded,
        "produce",
        "--topic",
        "t",
        "--producer-property",
        "delivery.timeout.ms=40000",
        input=b"x\n",
    )
    assert ok.exit_code == 0, ok.output
    bad = run(threaded, "produce", "--topic", "t", "--producer-property", "nope=1", input=b"")
    assert bad.exit_code == 2 and "unknown producer property 'nope'" in bad.output


def append(threaded, partition, values, keys=None):
    threaded.run(threaded.cluster.append("t", partition, values, keys))


def test_consume_from_beginning_prints_values_and_the_total(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=1))
    append(threaded, 0, [b"a", b"b", b"c"])
    result = run(threaded, "consume", "--topic", "t", "--from-beginning", "--timeout-ms", "300")
    assert result.exit_code == 0, result.output
    assert result.stdout == "a\nb\nc\n"
    assert "Processed a total of 3 messages" in result.stderr


def test_consume_stops_after_max_messages(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=1))
    append(threaded, 0, [b"a", b"b", b"c"])
    result = run(threaded, "consume", "--topic", "t", "--from-beginning", "--max-messages", "2")
    assert result.stdout == "a\nb\n"
    assert "Processed a total of 2 messages" in result.stderr


def test_consume_prints_what_the_print_properties_ask_for(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=1))
    append(threaded, 0, [b"v0", b"v1"], keys=[b"k0", None])
    result = run(
        threaded,
        "consume",
        "--topic",
        "t",
        "--from-beginning",
        "--max-messages",
        "2",
        "--property",
        "print.key=true",
        "--property",
        "print.offset=true",
        "--property",
        "print.partition=true",
        "--property",
        "print.timestamp=true",
        "--property",
        "key.separator=|",
    )
    assert result.stdout.splitlines() == [
        "CreateTime:5|Partition:0|Offset:0|k0|v0",
        "CreateTime:5|Partition:0|Offset:1|null|v1",
    ]


def test_consume_one_partition_from_an_offset(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=2))
    append(threaded, 0, [b"p0"])
    append(threaded, 1, [b"a", b"b", b"c"])
    result = run(
        threaded,
        "consume",
        "--topic",
        "t",
        "--partition",
        "1",
        "--offset",
        "1",
        "--timeout-ms",
        "300",
    )
    assert result.stdout == "b\nc\n"


def test_consume_latest_by_default_prints_nothing_old(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=1))
    append(threaded, 0, [b"old"])
    result = run(threaded, "consume", "--topic", "t", "--timeout-ms", "200")
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
def test_consume_rejects_inconsistent_options(threaded, args, message):
    result = run(threaded, "consume", "--topic", "t", *args)
    assert result.exit_code == 2 and message in result.output


def test_consume_of_a_missing_topic_fails_naming_it(threaded):
    result = run(threaded, "consume", "--topic", "missing", "--timeout-ms", "200")
    assert result.exit_code == 1
    assert "Topic missing does not exist" in result.stderr
    assert "Processed a total of 0 messages" in result.stderr


def test_produce_without_a_reachable_broker_fails_once_and_counts_every_line() -> None:
    """No broker answers: the first record waits max.block.ms for metadata and fails; the
    other lines are not each given the same wait, and all of them are reported unsent."""
    import socket

    with socket.socket() as s:  # a port with nothing listening on it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = CliRunner().invoke(
        cli,
        [
            *("produce", "--bootstrap-server", f"127.0.0.1:{port}", "--topic", "ghost"),
            *("--producer-property", "max.block.ms=500"),
        ],
        input="".join(f"line-{i}\n" for i in range(100)),
    )
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert len(errors) == 1, result.output
    assert "Topic ghost not present in metadata after 500 ms" in errors[0]
    assert "stopped at line 1: 100 records from there on not sent" in errors[0]
    assert "100 of 100 records were not sent" in result.output


@pytest.mark.parametrize(
    ("command", "prop", "message"),
    [
        ("consume", "print.keys=true", "unknown property print.keys (known: "),
        ("produce", "parse.keys=true", "unknown property parse.keys (known: "),
        ("consume", "print.key=yes", "print.key must be true or false, not 'yes'"),
    ],
)
def test_an_unknown_or_malformed_property_is_refused_not_ignored(threaded, command, prop, message):
    result = run(threaded, command, "--topic", "t", "--property", prop, input="a\n")
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "--property" in result.output
