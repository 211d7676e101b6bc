"""`minikafka consume --group` and `minikafka consumer-groups` (librdkafka over Kafka's
protocol) against a real 3-broker cluster shared by the module: every test uses its own
topic and groups."""

from __future__ import annotations

import datetime as dt
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from minikafka.cli.consumer_groups import (
    export_csv,
    parse_datetime,
    parse_duration,
    read_reset_plan,
)
from minikafka.cli.main import cli
from minikafka.cluster import LocalCluster
from tests.cluster.conftest import (  # noqa: F401
    ClusterFactory,
    make_cluster,
    started_cluster,
    wait_until,
)
from tests.kafka_protocol.test_confluent_kafka import create_topic

PARTITIONS = 3
OFFSETS_HEADER = (
    "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             "
    "CONSUMER-ID     HOST            CLIENT-ID"
)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # No initial rebalance delay (Kafka's 3 s): a group's first member gets its partitions
    # at once, as in Kafka's own tests.
    overrides = {"group.initial.rebalance.delay.ms": "0"}
    with started_cluster(tmp_path_factory.mktemp("groups"), overrides) as cluster:
        yield cluster


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def run(cluster: LocalCluster, *args: str) -> Result:
    bootstrap = ["--bootstrap-server", cluster.bootstrap_servers]
    return CliRunner().invoke(cli, [args[0], *bootstrap, *args[1:]])


def groups(cluster: LocalCluster, *args: str) -> Result:
    return run(cluster, "consumer-groups", *args)


def produce(cluster: LocalCluster, topic: str, counts: dict[int, int]) -> None:
    """counts[p] records to partition p, valued "p-i", with acks=all."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for p, n in counts.items():
        for i in range(n):
            producer.produce(topic, f"{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0


def table(result: Result) -> dict[int, list[str]]:
    """An offsets table's rows (columns split on blanks) by partition; the header checked
    (exactly while the consumer ids are 15 characters at most)."""
    lines = result.stdout.splitlines()
    assert lines[0] == "" and lines[1].split() == OFFSETS_HEADER.split(), result.stdout
    if all(len(line.split()[6]) <= 15 for line in lines[2:]):
        assert lines[1] == OFFSETS_HEADER
    return {int(cols[2]): cols for cols in (line.split() for line in lines[2:])}


def consumed(result: Result) -> list[tuple[int, int]]:
    """(partition, offset) of each record `consume` printed with print.partition/offset."""
    assert result.exit_code == 0, result.output
    out = []
    for line in result.stdout.splitlines():
        partition, offset, _ = line.split("\t")
        out.append((int(partition.removeprefix("Partition:")), int(offset.removeprefix("Offset:"))))
    return out


def commit(cluster: LocalCluster, group: str, topic: str, offsets: dict[int, int]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    request = ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, p, o) for p, o in offsets.items()]
    )
    (future,) = admin.alter_consumer_group_offsets([request], request_timeout=30).values()
    future.result(60)


class Member:
    """A confluent-kafka group member polling in a thread of its own (no commits)."""

    def __init__(self, cluster: LocalCluster, group: str, topic: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": group,
                "client.id": "live-member",
                "enable.auto.commit": False,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
            }
        )
        self.topic = topic
        self.assigned = 0
        self.member_id = ""
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.consumer.subscribe([self.topic])
        try:
            while not self._stop.is_set():
                self.consumer.poll(0.1)
                self.assigned = len(self.consumer.assignment())
                self.member_id = self.consumer.memberid() or ""
        finally:
            self.consumer.close()  # LeaveGroup

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(30)


@pytest.fixture
def member_of() -> Iterator[Any]:
    started: list[Member] = []

    def start(cluster: LocalCluster, group: str, topic: str) -> Member:
        m = Member(cluster, group, topic)
        started.append(m)
        wait_until(lambda: m.assigned == PARTITIONS, 60, "the member to own every partition")
        return m

    yield start
    for m in started:
        m.stop()


def test_consume_with_a_group_goes_on_where_the_last_run_stopped(shared: LocalCluster) -> None:
    topic, group = name("t"), name("g")
    create_topic(shared.bootstrap_servers, topic, PARTITIONS, 3)
    counts = {0: 6, 1: 7, 2: 8}  # 21 records
    produce(shared, topic, counts)
    read = (
        *("consume", "--topic", topic, "--group", group, "--from-beginning"),
        *("--property", "print.partition=true", "--property", "print.offset=true"),
    )

    first = consumed(run(shared, *read, "--max-messages", "9"))
    assert len(first) == 9
    # Committed: exactly what was printed, partition by partition (nothing for a partition
    # none of whose records was printed).
    printed_to = {p: max(o for q, o in first if q == p) + 1 for p, _ in first}
    described = groups(shared, "--describe", "--group", group)
    assert described.exit_code == 0, described.output
    assert f"Consumer group '{group}' has no active members." in described.stderr
    rows = table(described)
    assert {p: int(cols[3]) for p, cols in rows.items()} == printed_to
    for p, cols in rows.items():
        # LOG-END-OFFSET and LAG, and no owner (the consumer has left).
        assert cols[4:] == [str(counts[p]), str(counts[p] - printed_to[p]), "-", "-", "-"]

    second = consumed(run(shared, *read, "--max-messages", "12"))
    everything = sorted((p, o) for p, n in counts.items() for o in range(n))
    assert sorted(first + second) == everything  # no gap, no repeat

    listed = groups(shared, "--list")
    assert listed.exit_code == 0 and group in listed.stdout.splitlines()
    with_state = groups(shared, "--list", "--state")
    assert with_state.stdout.splitlines()[0].split() == ["GROUP", "STATE"]
    assert f"{group:<25} {'Empty':<20}" in with_state.stdout.splitlines()
    rows = table(groups(shared, "--describe", "--group", group, "--offsets"))
    assert {p: cols[3:6] for p, cols in rows.items()} == {
        p: [str(n), str(n), "0"] for p, n in counts.items()
    }


def test_a_live_member_is_described_and_its_group_is_not_reset_nor_deleted(
    shared: LocalCluster, member_of: Any
) -> None:
    topic, group = name("t"), name("g")
    create_topic(shared.bootstrap_servers, topic, PARTITIONS, 3)
    produce(shared, topic, {0: 2, 1: 3, 2: 4})
    commit(shared, group, topic, {1: 1})
    member = member_of(shared, group, topic)

    members = groups(shared, "--describe", "--group", group, "--members")
    assert members.exit_code == 0, members.output
    id_width = max(15, len(member.member_id))
    assert members.stdout.splitlines() == [
        "",
        f"GROUP           {'CONSUMER-ID':<{id_width}} HOST            CLIENT-ID       #PARTITIONS     ",
        f"{group:<15} {member.member_id:<{id_width}} /127.0.0.1      live-member     3               ",
    ]
    assert members.stderr == ""

    state = groups(shared, "--describe", "--group", group, "--state")
    assert state.exit_code == 0, state.output
    header, values = state.stdout.splitlines()[1:]
    assert header.split() == [
        "GROUP",
        "COORDINATOR",
        "(ID)",
        "ASSIGNMENT-STRATEGY",
        "STATE",
        "#MEMBERS",
    ]
    address, node, strategy, state_name, count = values.split()[1:]
    assert (strategy, state_name, count) == ("range", "Stable", "1")
    assert address in shared.bootstrap_servers.split(",") and node.strip("()").isdigit()
    assert f"{address}  {node}" in values  # Kafka's two spaces

    # The owner in each row; the offset (and lag) only where one was committed.
    rows = table(groups(shared, "--describe", "--group", group))
    assert {p: cols[3:] for p, cols in rows.items()} == {
        0: ["-", "2", "-", member.member_id, "/127.0.0.1", "live-member"],
        1: ["1", "3", "2", member.member_id, "/127.0.0.1", "live-member"],
        2: ["-", "4", "-", member.member_id, "/127.0.0.1", "live-member"],
    }

    reset = groups(
        shared, "--reset-offsets", "--group", group, "--all-topics", "--to-earliest", "--execute"
    )
    assert reset.exit_code == 1
    assert (
        f"Error: Assignments can only be reset if the group '{group}' is inactive, but the "
        "current state is Stable." in reset.stderr
    )
    deleted = groups(shared, "--delete", "--group", group)
    assert deleted.exit_code == 1
    assert "Error: Deletion of some consumer groups failed:" in deleted.stderr
    assert f"* Group '{group}' could not be deleted due to: NON_EMPTY_GROUP" in deleted.stderr

    member.stop()  # leaves the group: Empty, and deletable
    deleted = groups(shared, "--delete", "--group", group)
    assert deleted.exit_code == 0, deleted.output
    assert deleted.stdout == f"Deletion of requested consumer groups ('{group}') was successful.\n"
    assert group not in groups(shared, "--list").stdout.splitlines()
    gone = groups(shared, "--describe", "--group", group)
    assert gone.exit_code == 1
    assert f"Error: Consumer group '{group}' does not exist." in gone.stderr


def test_reset_offsets_plans_executes_and_keeps_offsets_within_the_log(
    shared: LocalCluster,
) -> None:
    topic, group = name("t"), name("g")
    create_topic(shared.bootstrap_servers, topic, PARTITIONS, 3)
    counts = {0: 5, 1: 6, 2: 7}
    produce(shared, topic, counts)
    commit(shared, group, topic, {0: 3, 1: 4, 2: 5})

    def offsets() -> dict[int, tuple[int, int]]:
        rows = table(groups(shared, "--describe", "--group", group))
        return {p: (int(cols[3]), int(cols[5])) for p, cols in rows.items()}  # offset, lag

    def reset(*args: str) -> Result:
        result = groups(shared, "--reset-offsets", "--group", group, *args)
        assert result.exit_code == 0, result.output
        return result

    planned = reset("--all-topics", "--to-earliest")  # no --execute: a dry run
    assert "WARN: No action will be performed as the --execute option is missing." in (
        planned.stderr
    )
    assert planned.stdout.splitlines() == [
        "",
        "GROUP           TOPIC           PARTITION  NEW-OFFSET",
        *(f"{group:<15} {topic:<15} {p:<10} 0" for p in range(PARTITIONS)),
    ]
    assert offsets() == {0: (3, 2), 1: (4, 2), 2: (5, 2)}  # unchanged

    executed = reset("--topic", topic, "--to-earliest", "--execute")
    assert executed.stderr == ""
    assert offsets() == {p: (0, n) for p, n in counts.items()}  # full lag

    # Shifting below the log start stops there, with Kafka's warning.
    shifted = reset("--topic", f"{topic}:0,2", "--shift-by", "-2", "--execute")
    assert f"New offset (-2) is lower than earliest offset for topic partition {topic}-0. " in (
        shifted.stderr
    )
    reset("--topic", topic, "--shift-by", "3", "--execute")
    reset("--topic", f"{topic}:1", "--shift-by", "-2", "--execute")
    assert offsets() == {0: (3, 2), 1: (1, 5), 2: (3, 4)}

    # And past the high watermark stops there.
    high = reset("--topic", f"{topic}:2", "--to-offset", "100", "--execute")
    assert (
        f"WARN: New offset (100) is higher than latest offset for topic partition {topic}-2. "
        "Value will be set to 7." in high.stderr
    )
    assert high.stdout.splitlines()[-1].split() == [group, topic, "2", "7"]
    reset("--topic", f"{topic}:0", "--to-offset", "4", "--execute")
    assert offsets() == {0: (4, 1), 1: (1, 5), 2: (7, 0)}
    reset("--all-topics", "--to-latest", "--execute")
    assert offsets() == {p: (n, 0) for p, n in counts.items()}

    unknown = groups(
        shared, "--reset-offsets", "--group", name("g"), "--all-topics", "--to-latest", "--dry-run"
    )
    assert unknown.exit_code == 1 and "does not exist." in unknown.stderr
    missing = groups(
        shared, "--reset-offsets", "--group", group, "--topic", f"{topic}:7", "--to-latest"
    )
    assert missing.exit_code == 1
    assert f'The partitions "{topic}-7" do not exist' in missing.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "Command must include exactly one action: --list, --describe, --delete"),
        (["--list", "--describe"], "Command must include exactly one action"),
        (["--describe"], "Option [describe] takes one of these options: [group], [all-groups]"),
        (["--delete"], "Option [delete] takes one of these options: [group], [all-groups]"),
        (
            ["--describe", "--group", "g", "--all-groups"],
            'Option "[group]" can\'t be used with option "[all-groups]"',
        ),
        (["--list", "--all-groups"], 'Option "[all-groups]" can\'t be used with option "[list]"'),
        (["--describe", "--all-groups", "--export"], "Option(s) [export] are unavailable"),
        (
            ["--describe", "--group", "g", "--members", "--state"],
            "Option [describe] takes at most one of these options",
        ),
        (["--list", "--group", "g"], 'Option "[group]" can\'t be used with option "[list]"'),
        (["--list", "--members"], "Option(s) [members] are unavailable"),
        (
            ["--reset-offsets", "--group", "g", "--to-earliest"],
            "One of the reset scopes should be defined: --all-topics, --topic.",
        ),
        (
            ["--reset-offsets", "--group", "g", "--all-topics"],
            "Option [reset-offsets] requires one of the following scenarios: [to-earliest], "
            "[to-latest], [to-offset], [shift-by], [to-datetime], [by-duration], [from-file]",
        ),
        (
            [
                *("--reset-offsets", "--all-groups", "--all-topics", "--by-duration", "PT1H"),
                *("--to-datetime", "2024-01-01T00:00:00.000"),
            ],
            'Option "[to-datetime]" can\'t be used with option "[by-duration]"',
        ),
        (
            ["--reset-offsets", "--group", "g", "--all-topics", "--to-datetime", "2024-01-01"],
            "Invalid value for '--to-datetime': Error parsing timestamp. It does not contain a "
            "'T' according to ISO8601 format",
        ),
        (
            [
                *("--reset-offsets", "--group", "g", "--all-topics"),
                *("--to-datetime", "2024-02-30T00:00:00.000"),
            ],
            "Invalid value for '--to-datetime': Unparseable date: \"2024-02-30T00:00:00.000Z\"",
        ),
        (
            ["--reset-offsets", "--group", "g", "--all-topics", "--by-duration", "1h"],
            "Invalid value for '--by-duration': Text cannot be parsed to a Duration",
        ),
        (
            ["--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--to-latest"],
            'Option "[to-earliest]" can\'t be used with option "[to-latest]"',
        ),
        (
            [
                "--reset-offsets",
                "--group",
                "g",
                "--all-topics",
                "--to-latest",
                "--dry-run",
                "--execute",
            ],
            "Option [reset-offsets] only accepts one of [execute] and [dry-run]",
        ),
        (
            ["--reset-offsets", "--group", "g", "--topic", "t:x", "--to-latest"],
            "Invalid partition 'x' specified in topic arg 't:x'",
        ),
        (
            ["--delete", "--group", "g", "--topic", "t"],
            "The consumer does not support topic-specific offset deletion",
        ),
        (["--list", "--state", "bogus"], "Invalid state list 'bogus'."),
    ],
)
def test_consumer_groups_refuses_inconsistent_options(args: list[str], message: str) -> None:
    result = CliRunner().invoke(
        cli, ["consumer-groups", "--bootstrap-server", "127.0.0.1:1", *args]
    )
    assert result.exit_code == 2, result.output
    assert message in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--group", "g", "--partition", "0"], "Options group and partition cannot be specified"),
        (
            ["--group", "g", "--consumer-property", "group.id=h"],
            "do not match. Detected group ids: 'g', 'h'",
        ),
    ],
)
def test_consume_refuses_a_group_with_a_partition_or_another_group_id(
    args: list[str], message: str
) -> None:
    result = CliRunner().invoke(
        cli, ["consume", "--bootstrap-server", "127.0.0.1:1", "--topic", "t", *args]
    )
    assert result.exit_code == 2, result.output
    assert message in result.output


# --- --all-groups, --to-datetime, --by-duration, --from-file and --export -------------------

HOUR_MS = 3_600_000


def produce_at(cluster: LocalCluster, topic: str, stamps: dict[int, list[int]]) -> None:
    """To partition p, one record per timestamp (ms) of stamps[p], in that order."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for p, times in stamps.items():
        for i, ts in enumerate(times):
            producer.produce(topic, f"{p}-{i}".encode(), partition=p, timestamp=ts)
    assert producer.flush(30) == 0


def read_with_group(cluster: LocalCluster, topic: str, group: str, count: int) -> list[Any]:
    """(partition, offset) of the next `count` records the group's consumer is given; it
    commits them."""
    return consumed(
        run(
            cluster,
            *("consume", "--topic", topic, "--group", group, "--from-beginning"),
            *("--max-messages", str(count)),
            *("--property", "print.partition=true", "--property", "print.offset=true"),
        )
    )


def committed_offsets(cluster: LocalCluster, group: str) -> dict[int, int | None]:
    rows = table(groups(cluster, "--describe", "--group", group))
    return {p: None if cols[3] == "-" else int(cols[3]) for p, cols in rows.items()}


def new_offsets(result: Result) -> list[list[str]]:
    """The rows of a NEW-OFFSET table: group, topic, partition, offset."""
    lines = result.stdout.splitlines()
    assert lines[0] == "" and lines[1].split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    return [line.split() for line in lines[2:]]


def as_text(ms: int, zone_hours: int = 0) -> str:
    """Kafka's YYYY-MM-DDTHH:mm:SS.sss of an instant, in UTC or, with its offset written
    after it, in a zone `zone_hours` east of UTC."""
    zone = dt.timezone(dt.timedelta(hours=zone_hours))
    at = dt.datetime.fromtimestamp(ms / 1000, zone)
    text = at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}"
    return text if zone_hours == 0 else f"{text}{at.strftime('%z')[:3]}:{at.strftime('%z')[3:]}"


def test_reset_to_a_datetime_or_by_a_duration_takes_the_offsets_of_those_times(
    shared: LocalCluster,
) -> None:
    topic, group = name("t"), name("g")
    create_topic(shared.bootstrap_servers, topic, PARTITIONS, 3)
    now = int(time.time() * 1000)
    # Partition 0 spans the last three hours, 1 the last half hour; 2 is older than both.
    produce_at(
        shared,
        topic,
        {
            0: [now - 3 * HOUR_MS, now - 2 * HOUR_MS, now - HOUR_MS // 2, now - HOUR_MS // 4],
            1: [now - HOUR_MS // 2, now - HOUR_MS // 3],
            2: [now - 5 * HOUR_MS, now - 4 * HOUR_MS],
        },
    )
    assert len(read_with_group(shared, topic, group, 8)) == 8
    assert committed_offsets(shared, group) == {0: 4, 1: 2, 2: 2}

    # The last hour: each partition's first record of that hour, and where none is that
    # recent, Kafka's fallback to the high watermark.
    reset = groups(
        shared, "--reset-offsets", "--group", group, "--topic", topic, "--by-duration", "PT1H"
    )
    assert reset.exit_code == 0, reset.output
    assert new_offsets(reset) == [
        [group, topic, "0", "2"],
        [group, topic, "1", "0"],
        [group, topic, "2", "2"],
    ]
    assert (
        f"Warn: Partition 2 from topic {topic} is empty. Falling back to latest known offset."
        in reset.stderr
    )
    assert committed_offsets(shared, group) == {0: 4, 1: 2, 2: 2}  # a dry run
    executed = groups(
        shared,
        *("--reset-offsets", "--group", group, "--all-topics", "--by-duration", "PT1H"),
        "--execute",
    )
    assert executed.exit_code == 0, executed.output
    assert committed_offsets(shared, group) == {0: 2, 1: 0, 2: 2}
    # The group's consumer goes on from there: the records of the last hour.
    assert sorted(read_with_group(shared, topic, group, 4)) == [(0, 2), (0, 3), (1, 0), (1, 1)]

    # 2.5 hours ago, written in UTC, in UTC with Z, and two hours east of it.
    at = now - 150 * 60_000
    for text in (as_text(at), as_text(at) + "Z", as_text(at, 2)):
        planned = groups(
            shared,
            *("--reset-offsets", "--group", group, "--topic", f"{topic}:0,1"),
            *("--to-datetime", text, "--execute"),
        )
        assert planned.exit_code == 0, planned.output
        assert new_offsets(planned) == [[group, topic, "0", "1"], [group, topic, "1", "0"]]
    assert committed_offsets(shared, group) == {0: 1, 1: 0, 2: 2}
    # Later than every record: the high watermarks.
    future = groups(
        shared,
        *("--reset-offsets", "--group", group, "--all-topics", "--dry-run"),
        *("--to-datetime", as_text(now + HOUR_MS)),
    )
    assert [cols[3] for cols in new_offsets(future)] == ["4", "2", "2"]


def test_export_writes_the_plan_from_file_reads_back(shared: LocalCluster, tmp_path: Path) -> None:
    topic, group = name("t"), name("g")
    create_topic(shared.bootstrap_servers, topic, PARTITIONS, 3)
    produce(shared, topic, {0: 5, 1: 6, 2: 7})
    assert len(read_with_group(shared, topic, group, 18)) == 18

    def reset(*args: str) -> Result:
        return groups(shared, "--reset-offsets", "--group", group, *args)

    exported = reset("--topic", f"{topic}:0,1", "--shift-by", "-2", "--dry-run", "--export")
    assert exported.exit_code == 0, exported.output
    assert exported.stdout == f"{topic},0,3\n{topic},1,4\n\n"  # Kafka's CSV and blank line
    plan = tmp_path / "plan.csv"
    plan.write_text(exported.stdout)
    assert committed_offsets(shared, group) == {0: 5, 1: 6, 2: 7}

    assert reset("--all-topics", "--to-earliest", "--execute").exit_code == 0
    restored = reset("--from-file", str(plan), "--execute")
    assert restored.exit_code == 0, restored.output
    assert new_offsets(restored) == [[group, topic, "0", "3"], [group, topic, "1", "4"]]
    assert committed_offsets(shared, group) == {0: 3, 1: 4, 2: 0}
    # The group's consumer goes on from the plan's offsets.
    expected = [(0, o) for o in (3, 4)] + [(1, o) for o in (4, 5)] + [(2, o) for o in range(7)]
    assert sorted(read_with_group(shared, topic, group, 11)) == expected

    # A file with a group column (--all-groups' export): this group's lines, each new
    # offset kept within the log as Kafka's checkOffsetsRange does.
    plan.write_text(f"{name('other')},{topic},0,1\n{group},{topic},2,100\n")
    clamped = reset("--from-file", str(plan), "--execute")
    assert clamped.exit_code == 0, clamped.output
    assert new_offsets(clamped) == [[group, topic, "2", "7"]]
    assert (
        f"WARN: New offset (100) is higher than latest offset for topic partition {topic}-2. "
        "Value will be set to 7." in clamped.stderr
    )
    plan.write_text(f"{name('other')},{topic},0,1\n")
    nothing = reset("--from-file", str(plan), "--execute")
    assert nothing.exit_code == 1
    assert f"Error: No reset plan for group {group} found." in nothing.stderr
    plan.write_text(f"{topic},9,1\n")
    missing = reset("--from-file", str(plan), "--dry-run")
    assert missing.exit_code == 1
    assert f'The partitions "{topic}-9" do not exist' in missing.stderr
    plan.write_text(f"{topic},0,1\n{topic},x,1\n")
    malformed = reset("--from-file", str(plan), "--dry-run")
    assert malformed.exit_code == 2
    assert f"line 2 is not topic,partition,offset: {topic},x,1" in malformed.output
    assert committed_offsets(shared, group) == {0: 5, 1: 6, 2: 7}


def test_all_groups_describes_resets_exports_and_deletes_every_group(
    make_cluster: ClusterFactory,  # noqa: F811 (the fixture imported above)
    member_of: Any,
    tmp_path: Path,
) -> None:
    cluster = make_cluster(overrides={"group.initial.rebalance.delay.ms": "0"})
    topic = name("t")
    create_topic(cluster.bootstrap_servers, topic, PARTITIONS, 3)
    counts = {0: 2, 1: 3, 2: 4}
    produce(cluster, topic, counts)
    a, b, c = name("a"), name("b"), name("c")  # Kafka acts on them by id: in this order
    for g in (a, b):
        assert len(read_with_group(cluster, topic, g, 9)) == 9
    member = member_of(cluster, c, topic)  # Stable: owns every partition, commits nothing

    described = groups(cluster, "--describe", "--all-groups")
    assert described.exit_code == 0, described.output
    for g in (a, b):
        assert f"Consumer group '{g}' has no active members." in described.stderr
    assert f"'{c}'" not in described.stderr
    tables = [line.split() for line in described.stdout.splitlines() if line]
    assert [cols[0] for cols in tables if cols[0] != "GROUP"] == [a] * 3 + [b] * 3 + [c] * 3
    assert [cols[3] for cols in tables if cols[0] == c] == ["-"] * 3
    assert {cols[6] for cols in tables if cols[0] == c} == {member.member_id}

    def reset_all(*args: str) -> Result:
        return groups(cluster, "--reset-offsets", "--all-groups", *args)

    active = (
        f"Error: Assignments can only be reset if the group '{c}' is inactive, but the current "
        "state is Stable."
    )
    earliest = reset_all("--all-topics", "--to-earliest", "--execute")
    assert earliest.exit_code == 1  # the active group was not reset; the others were
    assert active in earliest.stderr
    assert new_offsets(earliest) == [[g, topic, str(p), "0"] for g in (a, b) for p in counts]
    for g in (a, b):
        assert committed_offsets(cluster, g) == {p: 0 for p in counts}

    exported = reset_all("--all-topics", "--to-latest", "--export")
    assert exported.exit_code == 1 and active in exported.stderr
    assert (
        exported.stdout
        == "".join(f"{g},{topic},{p},{n}\n" for g in (a, b) for p, n in counts.items()) + "\n"
    )
    plan = tmp_path / "plan.csv"
    plan.write_text(exported.stdout)
    restored = reset_all("--from-file", str(plan), "--execute")
    assert restored.exit_code == 1 and active in restored.stderr
    for g in (a, b):
        assert committed_offsets(cluster, g) == counts

    deleted = groups(cluster, "--delete", "--all-groups")
    assert deleted.exit_code == 1
    assert "Error: Deletion of some consumer groups failed:" in deleted.stderr
    assert f"* Group '{c}' could not be deleted due to: NON_EMPTY_GROUP" in deleted.stderr
    assert deleted.stdout == f"\nThese consumer groups were deleted successfully: '{a}', '{b}'\n"
    member.stop()
    deleted = groups(cluster, "--delete", "--all-groups")
    assert deleted.exit_code == 0, deleted.output
    assert deleted.stdout == f"Deletion of requested consumer groups ('{c}') was successful.\n"
    assert groups(cluster, "--list").stdout == ""


def test_datetimes_durations_and_reset_plans_are_read_as_kafka_reads_them() -> None:
    utc = dt.datetime(2024, 3, 1, 12, 30, 15, 250_000, tzinfo=dt.UTC).timestamp() * 1000
    for text in (
        "2024-03-01T12:30:15.250",
        "2024-03-01T12:30:15.250Z",
        "2024-03-01T14:30:15.250+02",
        "2024-03-01T14:30:15.250+0200",
        "2024-03-01T10:00:15.250-02:30",
    ):
        assert parse_datetime(text) == utc, text
    for bad in ("2024-03-01T12:30:15", "2024-03-01T12:30:15.25", "2024-03-01T24:00:00.000"):
        with pytest.raises(ValueError, match="Unparseable date"):
            parse_datetime(bad)
    second = 1_000_000_000
    assert parse_duration("P1DT2H3M4.5S") == (((24 + 2) * 60 + 3) * 60 + 4) * second + second // 2
    assert parse_duration("pt30m") == 30 * 60 * second
    assert parse_duration("-PT1H") == parse_duration("PT-1H") == -3600 * second
    for bad in ("P", "PT", "P1H", "PT1D", "1H", "P1Y"):
        with pytest.raises(ValueError, match="Text cannot be parsed to a Duration"):
            parse_duration(bad)
    # One --group: three columns are that group's lines; four name their group.
    assert read_reset_plan("t,0,5\n\nt,1,6\n", "g") == {"g": {("t", 0): 5, ("t", 1): 6}}
    assert read_reset_plan("g,t,0,5\nh,t,0,6\n", "g") == {"g": {("t", 0): 5}, "h": {("t", 0): 6}}
    assert read_reset_plan('"a,b",t,0,5\n', None) == {"a,b": {("t", 0): 5}}
    with pytest.raises(ValueError, match="line 1 is not group,topic,partition,offset: t,0,5"):
        read_reset_plan("t,0,5\n", None)  # --all-groups needs the group column
    assert export_csv({"a,b": {("t", 0): 5}}, with_group=True) == '"a,b",t,0,5\n'
