"""`minikafka reassign-partitions`: kafka-reassign-partitions.sh (Kafka 2.8's
ReassignPartitionsCommand with --bootstrap-server) on KIP-455's AlterPartitionReassignments
and ListPartitionReassignments, sent to the controller over Kafka's protocol
(client/controller_calls.py), with the tool's JSON formats and output:

- `--generate --topics-to-move-json-file F --broker-list 1,2,3 [--disable-rack-aware]`
  prints the current assignment of the topics and a proposal spreading them over the
  brokers (Kafka's `assignReplicasToBrokers`, rack-aware when the brokers have racks);
- `--execute --reassignment-json-file F [--additional]` prints the current assignment (to
  save for a rollback) and starts the moves; refused while others run, unless
  `--additional`;
- `--verify --reassignment-json-file F` says, per partition, whether its move is complete;
- `--cancel --reassignment-json-file F` cancels the moves still running (each partition
  goes back to its original replicas);
- `--list` shows the moves running.

Where it differs from Kafka's tool: `--zookeeper` is not taken (Kafka 2.8 deprecated it;
the brokers watch `/admin/reassign_partitions` all the same); `--throttle` is refused
until minikafka has replication throttles, and so are `--replica-alter-log-dirs-throttle`
and `log_dirs` other than "any", since a minikafka broker has one log directory (no JBOD
to move replicas between); a failure is one line, without Kafka's stack trace.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from minikafka.cli.client_options import bootstrap_server_option
from minikafka.client.controller_calls import ClusterMetadata, ControllerClient
from minikafka.common import TopicPartition
from minikafka.controller.assignment import (
    assign_replicas,
    assign_replicas_rack_aware,
    random_start_index,
)
from minikafka.protocol.errors import KafkaError

T = TypeVar("T")

CLIENT_ID = "reassign-partitions-tool"  # Kafka's tool's client.id
ANY_LOG_DIR = "any"
CANNOT_EXECUTE_BECAUSE_OF_EXISTING = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to "
    "override this and create a new partition assignment in addition to the existing one. The "
    "--additional flag can also be used to change the throttle by resubmitting the current "
    "reassignment."
)
ACTIONS = ("generate", "execute", "verify", "cancel", "list")
REQUIRED = {
    "verify": ("reassignment_json_file",),
    "generate": ("topics_to_move_json_file", "broker_list"),
    "execute": ("reassignment_json_file",),
    "cancel": ("reassignment_json_file",),
    "list": (),
}
PERMITTED = {
    "verify": ("preserve_throttles",),
    "generate": ("broker_list", "disable_rack_aware"),
    "execute": ("additional", "throttle", "replica_alter_log_dirs_throttle", "timeout"),
    "cancel": ("preserve_throttles", "timeout"),
    "list": (),
}


class ReassignmentFailure(Exception):
    """Kafka's TerseReassignmentFailureException / AdminCommandFailedException: a message,
    printed alone, and status 1."""


def tp_name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def sorted_tps(tps: Sequence[TopicPartition] | set[TopicPartition]) -> list[TopicPartition]:
    return sorted(tps, key=lambda tp: (tp.topic, tp.partition))


# --- Kafka's JSON formats ------------------------------------------------------------------


def _load_json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ReassignmentFailure(f"The input string is not a valid JSON: {e}") from None


def _version(obj: Any) -> int:
    version = obj.get("version", 1) if isinstance(obj, dict) else 1
    if version != 1:
        raise ReassignmentFailure(f"Not supported version field value {version}")
    return 1


def parse_topics_to_move(text: str) -> list[str]:
    """`{"topics":[{"topic":"foo"}],"version":1}` -> topic names (Kafka's parseTopicsData)."""
    obj = _load_json(text)
    _version(obj)
    topics = obj.get("topics", []) if isinstance(obj, dict) else []
    try:
        return [str(t["topic"]) for t in topics]
    except (TypeError, KeyError):
        raise ReassignmentFailure('Each entry of "topics" needs a "topic" field') from None


def parse_reassignment(text: str) -> list[tuple[TopicPartition, list[int]]]:
    """Kafka's parsePartitionReassignmentData, version 1; `log_dirs` may only say "any"."""
    obj = _load_json(text)
    _version(obj)
    out: list[tuple[TopicPartition, list[int]]] = []
    for entry in obj.get("partitions", []) if isinstance(obj, dict) else []:
        try:
            tp = TopicPartition(str(entry["topic"]), int(entry["partition"]))
            replicas = [int(r) for r in entry["replicas"]]
        except (TypeError, KeyError, ValueError):
            raise ReassignmentFailure(
                f'Each partition needs "topic", "partition" and "replicas": {entry}'
            ) from None
        log_dirs = entry.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
        if len(log_dirs) != len(replicas):
            raise ReassignmentFailure(
                f"Size of replicas list {_scala_list(replicas)} is different from size of log "
                f"dirs list {_scala_list(log_dirs)} for partition {tp_name(tp)}"
            )
        if any(d != ANY_LOG_DIR for d in log_dirs):
            raise ReassignmentFailure(
                f'{tp_name(tp)}: log_dirs other than "any" move replicas between a broker\'s '
                "log directories, and a minikafka broker has one (log.dirs)"
            )
        out.append((tp, replicas))
    return out


def _scala_list(items: Sequence[object]) -> str:
    return f"List({', '.join(str(i) for i in items)})"


def reassignment_json(assignment: dict[TopicPartition, Sequence[int]]) -> str:
    """Kafka's formatAsReassignmentJson: partitions in (topic, partition) order, every
    replica's log dir "any", compact."""
    return json.dumps(
        {
            "version": 1,
            "partitions": [
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "replicas": list(assignment[tp]),
                    "log_dirs": [ANY_LOG_DIR] * len(assignment[tp]),
                }
                for tp in sorted_tps(set(assignment))
            ],
        },
        separators=(",", ":"),
    )


def check_no_duplicates(parts: list[tuple[TopicPartition, list[int]]]) -> None:
    """Kafka's parseExecuteAssignmentArgs checks."""
    seen: set[TopicPartition] = set()
    duplicates = []
    for tp, _ in parts:
        if tp in seen:
            duplicates.append(tp_name(tp))
        seen.add(tp)
    if duplicates:
        raise ReassignmentFailure(
            f"Partition reassignment contains duplicate topic partitions: {','.join(duplicates)}"
        )
    multiple = [
        f"{tp_name(tp)} contains multiple entries for "
        f"{','.join(str(r) for r in sorted({r for r in rs if rs.count(r) > 1}))}"
        for tp, rs in parts
        if len(set(rs)) != len(rs)
    ]
    if multiple:
        raise ReassignmentFailure(
            "Partition replica lists may not contain duplicate entries: " + ". ".join(multiple)
        )


# --- the actions ---------------------------------------------------------------------------


def propose(
    current: dict[TopicPartition, tuple[int, ...]],
    brokers: Sequence[int],
    racks: dict[int, str | None],
    rack_aware: bool,
) -> dict[TopicPartition, tuple[int, ...]]:
    """Kafka's calculateAssignment: each topic's partitions spread anew over `brokers` with
    the topic's replication factor, from a random first broker."""
    with_racks = {b: racks.get(b) for b in brokers} if rack_aware else {}
    rackless = [b for b, r in with_racks.items() if r is None]
    if rack_aware and rackless and len(rackless) != len(brokers):
        raise ReassignmentFailure(
            "Not all brokers have rack information. Add --disable-rack-aware in command line "
            "to make replica assignment without rack information."
        )
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in current:
        by_topic.setdefault(tp.topic, []).append(tp)
    proposed: dict[TopicPartition, tuple[int, ...]] = {}
    for topic, tps in by_topic.items():
        rf = len(current[tps[0]])
        start = random_start_index(len(brokers), None)
        try:
            if rack_aware and not rackless:
                placed = assign_replicas_rack_aware(
                    {b: str(with_racks[b]) for b in brokers},
                    len(tps),
                    rf,
                    start_partition=0,
                    start_index=start,
                    replica_shift=random_start_index(len(brokers), None),
                )
            else:
                placed = assign_replicas(brokers, len(tps), rf, start_index=start)
        except KafkaError as e:
            raise ReassignmentFailure(e.message) from None
        for p, replicas in placed.items():
            proposed[TopicPartition(topic, p)] = tuple(replicas)
    return proposed


def _current_assignment(
    md: ClusterMetadata, topics: Sequence[str]
) -> dict[TopicPartition, tuple[int, ...]]:
    missing = [t for t in topics if t not in md.topics]
    if missing:
        raise ReassignmentFailure(
            f"org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
            f"Topic '{missing[0]}' does not exist."
        )
    return {
        TopicPartition(t, p): replicas
        for t in topics
        for p, replicas in sorted(md.topics[t].items())
    }


async def generate(
    client: ControllerClient, topics_json: str, broker_list: str, rack_aware: bool
) -> None:
    try:
        brokers = [int(b) for b in broker_list.split(",")]
    except ValueError:
        raise ReassignmentFailure(
            f"--broker-list must be broker ids, not {broker_list!r}"
        ) from None
    dup_brokers = sorted({b for b in brokers if brokers.count(b) > 1})
    if dup_brokers:
        raise ReassignmentFailure(
            f"Broker list contains duplicate entries: {','.join(map(str, dup_brokers))}"
        )
    topics = parse_topics_to_move(topics_json)
    dup_topics = sorted({t for t in topics if topics.count(t) > 1})
    if dup_topics:
        raise ReassignmentFailure(
            f"List of topics to reassign contains duplicate entries: {','.join(dup_topics)}"
        )
    md = await client.metadata(topics)
    current = _current_assignment(md, topics)
    known = [b for b in brokers if b in md.brokers]
    proposed = propose(current, known, md.racks, rack_aware)
    click.echo(f"Current partition replica assignment\n{reassignment_json(dict(current))}\n")
    click.echo(
        f"Proposed partition reassignment configuration\n{reassignment_json(dict(proposed))}"
    )


async def execute(client: ControllerClient, text: str, additional: bool) -> None:
    parts = parse_reassignment(text)
    check_no_duplicates(parts)
    proposed = dict(parts)
    if not additional and await client.list_partition_reassignments():
        raise ReassignmentFailure(CANNOT_EXECUTE_BECAUSE_OF_EXISTING)
    md = await client.metadata(sorted({tp.topic for tp in proposed}))
    for b in sorted({b for rs in proposed.values() for b in rs}):
        if b not in md.brokers:
            raise ReassignmentFailure(f"Unknown broker id {b}")
    current = {
        tp: md.topics[tp.topic][tp.partition]
        for tp in proposed
        if tp.partition in md.topics.get(tp.topic, {})
    }
    click.echo(
        "Current partition replica assignment\n\n"
        f"{reassignment_json(dict(current))}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback"
    )
    errors = {
        tp: e
        for tp, e in (await client.alter_partition_reassignments(proposed)).items()
        if e is not None
    }
    if errors:
        raise ReassignmentFailure(
            "Error reassigning partition(s):\n"
            + "\n".join(f"{tp_name(tp)}: {errors[tp].message}" for tp in sorted_tps(set(errors)))
        )
    names = ",".join(tp_name(tp) for tp in sorted_tps(set(proposed)))
    plural = "" if len(proposed) == 1 else "s"
    click.echo(f"Successfully started partition reassignment{plural} for {names}")


async def verify(client: ControllerClient, text: str) -> None:
    targets = parse_reassignment(text)
    ongoing = await client.list_partition_reassignments()
    md = await client.metadata(sorted({tp.topic for tp, _ in targets if tp not in ongoing}))
    lines = ["Status of partition reassignment:"]
    for tp, target in sorted(targets, key=lambda x: (x[0].topic, x[0].partition)):
        if tp in ongoing:
            lines.append(f"Reassignment of partition {tp_name(tp)} is still in progress.")
            continue
        current = list(md.topics.get(tp.topic, {}).get(tp.partition, ()))
        if current == target:
            lines.append(f"Reassignment of partition {tp_name(tp)} is complete.")
        else:
            lines.append(
                f"There is no active reassignment of partition {tp_name(tp)}, but replica set "
                f"is {','.join(map(str, current))} rather than {','.join(map(str, target))}."
            )
    click.echo("\n".join(lines))


async def cancel(client: ControllerClient, text: str) -> None:
    targets = [tp for tp, _ in parse_reassignment(text)]
    ongoing = await client.list_partition_reassignments(targets)
    moving = [tp for tp, r in ongoing.items() if r.adding or r.removing]
    if moving:
        errors = {
            tp: e
            for tp, e in (
                await client.alter_partition_reassignments(dict.fromkeys(moving, None))
            ).items()
            if e is not None
        }
        if errors:
            plural = "" if len(errors) == 1 else "s"
            raise ReassignmentFailure(
                f"Error cancelling partition reassignment{plural} for:\n"
                + "\n".join(
                    f"{tp_name(tp)}: {errors[tp].message}" for tp in sorted_tps(set(errors))
                )
            )
        plural = "" if len(moving) == 1 else "s"
        names = ",".join(tp_name(tp) for tp in sorted_tps(set(moving)))
        click.echo(f"Successfully cancelled partition reassignment{plural} for: {names}")
    else:
        click.echo("None of the specified partition reassignments are active.")
    # Kafka's line for replica moves between log directories, of which there are none.
    click.echo("None of the specified partition moves are active.")


async def list_reassignments(client: ControllerClient) -> None:
    ongoing = await client.list_partition_reassignments()
    if not ongoing:
        click.echo("No partition reassignments found.")
        return
    lines = []
    for tp in sorted_tps(set(ongoing)):
        r = ongoing[tp]
        line = f"{tp_name(tp)}: replicas: {','.join(map(str, r.replicas))}."
        if r.adding:
            line += f" adding: {','.join(map(str, r.adding))}."
        if r.removing:
            line += f" removing: {','.join(map(str, r.removing))}."
        lines.append(line)
    click.echo("Current partition reassignments:\n" + "\n".join(lines))


# --- the command ---------------------------------------------------------------------------


def _usage(ctx: click.Context, message: str) -> NoReturn:
    raise click.UsageError(message, ctx)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as e:
        raise ReassignmentFailure(f"cannot read {path}: {e.strerror}") from None


@click.command("reassign-partitions")
@bootstrap_server_option
@click.option("--generate", is_flag=True, help="Generate a candidate partition reassignment "
              "configuration. Note that this only generates a candidate assignment, it does "
              "not execute it.")  # fmt: skip
@click.option("--execute", is_flag=True,
              help="Kick off the reassignment as specified by the --reassignment-json-file option.")  # fmt: skip
@click.option("--verify", is_flag=True, help="Verify if the reassignment completed as specified "
              "by the --reassignment-json-file option.")  # fmt: skip
@click.option("--cancel", is_flag=True, help="Cancel an active reassignment.")
@click.option("--list", "list_", is_flag=True,
              help="List all active partition reassignments.")  # fmt: skip
@click.option("--topics-to-move-json-file", type=click.Path(path_type=Path), metavar="FILE",
              help='Topics whose partitions to move: {"topics": [{"topic": "foo"}], "version": 1}')  # fmt: skip
@click.option("--broker-list", metavar="1,2,3",
              help="The brokers to which the partitions need to be reassigned (--generate).")  # fmt: skip
@click.option("--reassignment-json-file", type=click.Path(path_type=Path), metavar="FILE",
              help='The reassignment: {"partitions": [{"topic": "foo", "partition": 1, '
              '"replicas": [1, 2, 3], "log_dirs": ["any", "any", "any"]}], "version": 1}')  # fmt: skip
@click.option("--disable-rack-aware", is_flag=True,
              help="Disable rack aware replica assignment (--generate).")  # fmt: skip
@click.option("--additional", is_flag=True, help="Execute this reassignment in addition to "
              "any other ongoing ones.")  # fmt: skip
@click.option("--throttle", type=int, default=None, metavar="BYTES/S",
              help="Refused: minikafka has no replication throttles yet.")  # fmt: skip
@click.option("--replica-alter-log-dirs-throttle", type=int, default=None, metavar="BYTES/S",
              help="Refused: a minikafka broker has one log directory.")  # fmt: skip
@click.option("--preserve-throttles", is_flag=True, help="Do not modify broker or topic "
              "throttles (--verify, --cancel).")  # fmt: skip
@click.option("--timeout", type=int, default=None, metavar="MS",
              help="Refused: a minikafka broker has one log directory.")  # fmt: skip
@click.pass_context
def reassign_partitions(ctx: click.Context, /, bootstrap_server: str, **opts: Any) -> None:
    """Move partitions' replicas between brokers, as kafka-reassign-partitions.sh does."""
    chosen = [a for a in ACTIONS if opts["list_" if a == "list" else a]]
    if len(chosen) != 1:
        _usage(
            ctx,
            "Command must include exactly one action: " + ", ".join(f"--{a}" for a in ACTIONS),
        )
    (action,) = chosen
    given = {k for k, v in opts.items() if k not in ("list_", *ACTIONS) and v not in (None, False)}
    for name in REQUIRED[action]:
        if name not in given:
            _usage(ctx, f'Missing required argument "[{name.replace("_", "-")}]"')
    for name in sorted(given - set(REQUIRED[action]) - set(PERMITTED[action])):
        _usage(ctx, f'Option "[{name.replace("_", "-")}]" can\'t be used with action "[{action}]"')
    if opts["throttle"] is not None:
        _usage(ctx, "--throttle: minikafka has no replication throttles yet; run without it")
    if opts["timeout"] is not None:
        _usage(
            ctx,
            "--timeout: it waits for replica moves between a broker's log directories, and a "
            "minikafka broker has one (log.dirs)",
        )
    if opts["replica_alter_log_dirs_throttle"] is not None:
        _usage(
            ctx,
            "--replica-alter-log-dirs-throttle: a minikafka broker has one log directory "
            "(log.dirs), so no replica moves between directories to throttle",
        )

    client = ControllerClient(bootstrap_server, client_id=CLIENT_ID)

    def run(make: Callable[[], Coroutine[Any, Any, None]]) -> None:
        async def go() -> None:
            try:
                await make()
            finally:
                await client.close()

        asyncio.run(go())

    try:
        if action == "generate":
            text = _read(opts["topics_to_move_json_file"])
            run(lambda: generate(client, text, opts["broker_list"], not opts["disable_rack_aware"]))
        elif action == "execute":
            text = _read(opts["reassignment_json_file"])
            run(lambda: execute(client, text, opts["additional"]))
        elif action == "verify":
            text = _read(opts["reassignment_json_file"])
            run(lambda: verify(client, text))
        elif action == "cancel":
            text = _read(opts["reassignment_json_file"])
            run(lambda: cancel(client, text))
        else:
            run(lambda: list_reassignments(client))
    except ReassignmentFailure as e:
        click.echo(str(e))
        sys.exit(1)
    except KafkaError as e:
        click.echo(f"Error: {e}")
        sys.exit(1)
