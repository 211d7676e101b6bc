"""`minikafka reassign-partitions`: kafka-reassign-partitions.sh (Kafka 2.8's
ReassignPartitionsCommand with --bootstrap-server) on KIP-455's AlterPartitionReassignments
and ListPartitionReassignments, sent to the controller over Kafka's protocol
(client/controller_calls.py), with the tool's JSON formats and output:

- `--generate --topics-to-move-json-file F --broker-list 1,2,3 [--disable-rack-aware]`
  prints the current assignment of the topics and a proposal spreading them over the
  brokers (Kafka's `assignReplicasToBrokers`, rack-aware when the brokers have racks);
- `--execute --reassignment-json-file F [--additional] [--throttle BYTES/S]` prints the
  current assignment (to save for a rollback) and starts the moves; refused while others
  run, unless `--additional`. With `--throttle`, the moving replicas are throttled first
  (KIP-73): each topic's leader.replication.throttled.replicas lists the replicas the moves
  copy from, follower.replication.throttled.replicas the new ones, and every broker
  involved gets the rate as its leader and follower throttled rates; `--additional` with
  the running moves changes the rate;
- `--verify --reassignment-json-file F [--preserve-throttles]` says, per partition,
  whether its move is complete; once no move runs, it clears the throttles (the rates of
  every broker, the replica lists of the file's topics), unless `--preserve-throttles`;
- `--cancel --reassignment-json-file F [--preserve-throttles]` cancels the moves still
  running (each partition goes back to its original replicas) and clears the throttles
  as `--verify` does;
- `--list` shows the moves running.

Where it differs from Kafka's tool: `--zookeeper` is not taken (Kafka 2.8 deprecated it;
the brokers watch `/admin/reassign_partitions` all the same); `--replica-alter-log-dirs-throttle`
and `log_dirs` other than "any" are refused, since a minikafka broker has one log directory (no JBOD
to move replicas between); a failure is one line, without Kafka's stack trace.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from minikafka.cli.client_options import bootstrap_server_option
from minikafka.client.controller_calls import (
    ClusterMetadata,
    ControllerClient,
    OngoingReassignment,
)
from minikafka.client.resource_configs import BROKER, TOPIC, ResourceConfigs
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


YOU_MUST_RUN_VERIFY_PERIODICALLY = (
    "Warning: You must run --verify periodically, until the reassignment completes, to ensure "
    "the throttle is removed."
)
# Kafka's throttle configs: the brokers' rates and the topics' replica lists.
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"


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


@dataclass(frozen=True)
class PartitionMove:
    """Kafka's PartitionMove: the replicas a partition's data is copied from and to."""

    sources: frozenset[int]
    destinations: frozenset[int]


MoveMap = dict[str, dict[int, PartitionMove]]


def proposed_move_map(
    ongoing: Mapping[TopicPartition, OngoingReassignment],
    proposed: Mapping[TopicPartition, Sequence[int]],
    current: Mapping[TopicPartition, Sequence[int]],
) -> MoveMap:
    """Kafka's calculateProposedMoveMap: the moves running (sources: their replicas but
    the ones being added) and the proposed ones (sources: the running move's, else the
    current replicas; destinations: the target's others)."""
    moves: MoveMap = {}
    for tp, r in ongoing.items():
        moves.setdefault(tp.topic, {})[tp.partition] = PartitionMove(
            frozenset(r.replicas) - frozenset(r.adding), frozenset(r.adding)
        )
    for tp, replicas in proposed.items():
        part_moves = moves.setdefault(tp.topic, {})
        running = part_moves.get(tp.partition)
        if running is not None:
            sources = running.sources
        elif tp in current:
            sources = frozenset(current[tp])
        else:
            raise ReassignmentFailure(
                f"Trying to reassign a topic partition {tp_name(tp)} with 0 replicas"
            )
        part_moves[tp.partition] = PartitionMove(sources, frozenset(replicas) - sources)
    return moves


def leader_throttles(moves: MoveMap) -> dict[str, str]:
    """Kafka's calculateLeaderThrottles: per topic, partition:source for every source (in
    Kafka's order: the strings sorted)."""
    return {
        topic: ",".join(sorted({f"{p}:{b}" for p, m in parts.items() for b in m.sources}))
        for topic, parts in moves.items()
    }


def follower_throttles(moves: MoveMap) -> dict[str, str]:
    """Kafka's calculateFollowerThrottles: per topic, partition:destination."""
    return {
        topic: ",".join(
            sorted({f"{p}:{b}" for p, m in parts.items() for b in m.destinations - m.sources})
        )
        for topic, parts in moves.items()
    }


def reassigning_brokers(moves: MoveMap) -> list[int]:
    """Kafka's calculateReassigningBrokers: every source and destination."""
    return sorted(
        {b for parts in moves.values() for m in parts.values() for b in m.sources | m.destinations}
    )


def _plural(n: int) -> str:
    return "" if n == 1 else "s"


async def modify_reassignment_throttle(
    configs: ResourceConfigs, moves: MoveMap, throttle: int
) -> None:
    """Kafka's modifyReassignmentThrottle: the topics' replica lists (IncrementalAlterConfigs
    SET), then the rates of every broker involved."""
    leaders, followers = leader_throttles(moves), follower_throttles(moves)
    for topic in sorted(leaders.keys() | followers.keys()):
        changes = {
            name: value[topic]
            for name, value in ((LEADER_REPLICAS, leaders), (FOLLOWER_REPLICAS, followers))
            if topic in value
        }
        await configs.incremental_alter(TOPIC, topic, changes, [])
    for broker in reassigning_brokers(moves):
        rate = str(throttle)
        await configs.incremental_alter(
            BROKER, str(broker), {LEADER_RATE: rate, FOLLOWER_RATE: rate}, []
        )
    click.echo(f"The inter-broker throttle limit was set to {throttle} B/s")


async def clear_all_throttles(
    client: ControllerClient, targets: Sequence[tuple[TopicPartition, Sequence[int]]]
) -> None:
    """Kafka's clearAllThrottles: the rates of every live broker and of every target
    replica's broker, and the replica lists of the targets' topics (IncrementalAlterConfigs
    DELETE)."""
    md = await client.metadata()
    configs = ResourceConfigs(md.brokers, client_id=CLIENT_ID)
    brokers = sorted(set(md.brokers) | {b for _, rs in targets for b in rs})
    click.echo(
        f"Clearing broker-level throttles on broker{_plural(len(brokers))} "
        + ",".join(map(str, brokers))
    )
    for broker in brokers:
        await configs.incremental_alter(BROKER, str(broker), {}, [LEADER_RATE, FOLLOWER_RATE])
    topics = sorted({tp.topic for tp, _ in targets})
    click.echo(f"Clearing topic-level throttles on topic{_plural(len(topics))} {','.join(topics)}")
    for topic in topics:
        await configs.incremental_alter(TOPIC, topic, {}, [LEADER_REPLICAS, FOLLOWER_REPLICAS])


async def execute(
    client: ControllerClient, text: str, additional: bool, throttle: int | None = None
) -> None:
    parts = parse_reassignment(text)
    check_no_duplicates(parts)
    proposed = dict(parts)
    ongoing = await client.list_partition_reassignments()
    if not additional and ongoing:
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
    if throttle is not None:
        click.echo(YOU_MUST_RUN_VERIFY_PERIODICALLY)
        moves = proposed_move_map(ongoing, proposed, current)
        await modify_reassignment_throttle(
            ResourceConfigs(md.brokers, client_id=CLIENT_ID), moves, throttle
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


async def verify(client: ControllerClient, text: str, preserve_throttles: bool = False) -> None:
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
    # Kafka clears every throttle once no move runs at all (the file's or any other): it
    # cannot tell which brokers earlier moves throttled.
    if not ongoing and not preserve_throttles:
        await clear_all_throttles(client, targets)


async def cancel(client: ControllerClient, text: str, preserve_throttles: bool = False) -> None:
    parsed = parse_reassignment(text)
    targets = [tp for tp, _ in parsed]
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
    if not preserve_throttles:
        await clear_all_throttles(client, parsed)


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
              help="The movement of partitions between brokers will be throttled to this value "
              "(bytes/sec). This option can be included with --execute when a reassignment is "
              "started, and it can be altered by resubmitting the current reassignment along "
              "with the --additional flag. The throttle rate should be at least 1 KB/s.")  # fmt: skip
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
    if opts["throttle"] is not None and opts["throttle"] < 0:
        # Kafka's -1 is "no throttle"; a rate cannot be negative.
        _usage(ctx, f"--throttle must be at least 0 bytes/s, not {opts['throttle']}")
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
            run(lambda: execute(client, text, opts["additional"], opts["throttle"]))
        elif action == "verify":
            text = _read(opts["reassignment_json_file"])
            run(lambda: verify(client, text, opts["preserve_throttles"]))
        elif action == "cancel":
            text = _read(opts["reassignment_json_file"])
            run(lambda: cancel(client, text, opts["preserve_throttles"]))
        else:
            run(lambda: list_reassignments(client))
    except ReassignmentFailure as e:
        click.echo(str(e))
        sys.exit(1)
    except KafkaError as e:
        click.echo(f"Error: {e}")
        sys.exit(1)
