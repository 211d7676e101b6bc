"""`minikafka topics`: create, list, describe, alter (add partitions to) and delete topics,
like kafka-topics.sh."""

from __future__ import annotations

import asyncio
import sys

import click

from minikafka.cli.client_options import bootstrap_server_option, parse_key_values
from minikafka.client.admin import Admin, NewPartitions, NewTopic, TopicDescription
from minikafka.client.metadata import PartitionMetadata
from minikafka.common import NO_LEADER
from minikafka.protocol.errors import (
    KafkaError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)


class TopicCommandError(Exception):
    """A user error worth one line on stderr, not a traceback."""


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """Kafka's `--replica-assignment 1:2,2:3`: partitions separated by commas, each a
    colon-separated broker list, partition ids counting from 0."""
    out: dict[int, list[int]] = {}
    for p, part in enumerate(text.split(",")):
        try:
            brokers = [int(b) for b in part.split(":")]
        except ValueError:
            raise TopicCommandError(f"invalid replica assignment {text!r}") from None
        if len(set(brokers)) != len(brokers):
            raise TopicCommandError(f"partition {p} has duplicate replicas: {part}")
        out[p] = brokers
    if len({len(r) for r in out.values()}) > 1:
        raise TopicCommandError("all partitions need the same number of replicas")
    return out


def _ids(ids: tuple[int, ...]) -> str:
    return ",".join(str(i) for i in ids)


def format_partition(p: PartitionMetadata) -> str:
    leader = "none" if p.leader == NO_LEADER else str(p.leader)
    return (
        f"\tTopic: {p.topic}\tPartition: {p.partition}\tLeader: {leader}"
        f"\tReplicas: {_ids(p.replicas)}\tIsr: {_ids(p.isr)}"
    )


def format_description(d: TopicDescription, configs: dict[str, str] | None = None) -> list[str]:
    config_text = ",".join(f"{k}={v}" for k, v in sorted((configs or {}).items()))
    header = (
        f"Topic: {d.name}\tPartitionCount: {len(d.partitions)}"
        f"\tReplicationFactor: {d.replication_factor}\tConfigs: {config_text}"
    )
    return [header, *(format_partition(p) for p in d.partitions)]


def _under_replicated(p: PartitionMetadata) -> bool:
    return len(p.isr) < len(p.replicas)


def _unavailable(p: PartitionMetadata, live: set[int]) -> bool:
    return p.leader == NO_LEADER or p.leader not in live


async def _run(
    action: str,
    bootstrap_server: str,
    topic: str | None,
    partitions: int | None,
    replication_factor: int | None,
    configs: dict[str, str],
    replica_assignment: str | None,
    if_not_exists: bool,
    if_exists: bool,
    under_replicated: bool,
    unavailable: bool,
) -> None:
    async with Admin(bootstrap_server) as admin:
        if action == "create":
            assert topic is not None
            if replica_assignment is not None:
                if partitions is not None or replication_factor is not None:
                    raise TopicCommandError(
                        "--replica-assignment cannot be combined with --partitions or "
                        "--replication-factor"
                    )
                new = NewTopic(
                    topic,
                    configs=configs,
                    replica_assignment=parse_replica_assignment(replica_assignment),
                )
            else:
                new = NewTopic(
                    topic,
                    -1 if partitions is None else partitions,
                    -1 if replication_factor is None else replication_factor,
                    configs,
                )
            try:
                await admin.create_topics([new])
            except TopicAlreadyExistsError:
                if not if_not_exists:
                    raise
                return
            click.echo(f"Created topic {topic}.")
        elif action == "alter":
            assert topic is not None and partitions is not None
            await _alter(admin, topic, partitions, replica_assignment, if_exists)
        elif action == "list":
            for name in await admin.list_topics():
                click.echo(name)
        elif action == "describe":
            try:
                descriptions = await admin.describe_topics(None if topic is None else [topic])
            except UnknownTopicOrPartitionError:
                if if_exists:
                    return
                raise TopicCommandError(f"Topic '{topic}' does not exist as expected") from None
            live: set[int] = set()
            if unavailable:
                live = {b.node_id for b in (await admin.describe_cluster()).brokers}
            for d in descriptions:
                if under_replicated or unavailable:
                    # Kafka prints only the matching partitions, without the topic line.
                    for p in d.partitions:
                        if (under_replicated and _under_replicated(p)) or (
                            unavailable and _unavailable(p, live)
                        ):
                            click.echo(format_partition(p))
                    continue
                for line in format_description(d):
                    click.echo(line)
        elif action == "delete":
            assert topic is not None
            try:
                await admin.delete_topics([topic])
            except UnknownTopicOrPartitionError:
                if if_exists:
                    return
                raise TopicCommandError(f"Topic '{topic}' does not exist as expected") from None


async def _alter(
    admin: Admin, topic: str, partitions: int, replica_assignment: str | None, if_exists: bool
) -> None:
    """Kafka's `--alter --partitions N`: add partitions (silent on success, as Kafka). A
    `--replica-assignment` lists every partition's replicas, as for --create; those of the
    partitions the topic already has are left out of the request, as Kafka does."""
    try:
        (current,) = await admin.describe_topics([topic])
    except UnknownTopicOrPartitionError:
        if if_exists:
            return
        raise TopicCommandError(f"Topic '{topic}' does not exist as expected") from None
    new_assignments = None
    if replica_assignment is not None:
        full = parse_replica_assignment(replica_assignment)
        new_assignments = [full[p] for p in sorted(full) if p >= len(current.partitions)]
    try:
        await admin.create_partitions({topic: NewPartitions(partitions, new_assignments)})
    except UnknownTopicOrPartitionError:
        if if_exists:
            return
        raise


@click.command("topics")
@bootstrap_server_option
@click.option("--create", "action", flag_value="create", help="Create a topic.")
@click.option("--list", "action", flag_value="list", help="List all topics.")
@click.option("--describe", "action", flag_value="describe", help="Describe topics.")
@click.option("--delete", "action", flag_value="delete", help="Delete a topic.")
@click.option(
    "--alter", "action", flag_value="alter", help="Add partitions to a topic (with --partitions)."
)
@click.option("--topic", help="The topic to create, describe, alter or delete.")
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    help="Partitions of a new topic; with --alter, the topic's new (larger) partition count.",
)
@click.option(
    "--replication-factor", type=click.IntRange(min=1), help="Replication factor of a new topic."
)
@click.option(
    "--config",
    "config",
    multiple=True,
    metavar="KEY=VALUE",
    help="Topic config override for --create (repeatable), e.g. min.insync.replicas=2.",
)
@click.option(
    "--replica-assignment",
    metavar="B:B,B:B",
    help="Manual assignment for --create (or, with --alter, of every partition, the new ones "
    "taken): partitions separated by ',', replicas by ':'.",
)
@click.option("--if-not-exists", is_flag=True, help="With --create: no error if it exists.")
@click.option(
    "--if-exists", is_flag=True, help="With --describe/--alter/--delete: no error if absent."
)
@click.option(
    "--under-replicated-partitions",
    "under_replicated",
    is_flag=True,
    help="With --describe: only partitions whose ISR is smaller than their replicas.",
)
@click.option(
    "--unavailable-partitions",
    "unavailable",
    is_flag=True,
    help="With --describe: only partitions without a live leader.",
)
def topics(
    bootstrap_server: str,
    action: str | None,
    topic: str | None,
    partitions: int | None,
    replication_factor: int | None,
    config: tuple[str, ...],
    replica_assignment: str | None,
    if_not_exists: bool,
    if_exists: bool,
    under_replicated: bool,
    unavailable: bool,
) -> None:
    """Create, list, describe, alter or delete topics (like kafka-topics.sh)."""
    if action is None:
        raise click.UsageError(
            "Command must include exactly one action: --list, --describe, --create, --alter "
            "or --delete"
        )
    if action in ("create", "alter", "delete") and not topic:
        raise click.UsageError(f"--{action} needs --topic")
    if action == "alter":
        if partitions is None:
            raise click.UsageError("--alter needs --partitions (the new partition count)")
        if replication_factor is not None or config:
            raise click.UsageError(
                "--alter only adds partitions: --replication-factor and --config are not "
                "supported with it"
            )
    configs = parse_key_values(config, "--config")
    try:
        asyncio.run(
            _run(
                action,
                bootstrap_server,
                topic,
                partitions,
                replication_factor,
                configs,
                replica_assignment,
                if_not_exists,
                if_exists,
                under_replicated,
                unavailable,
            )
        )
    except (KafkaError, TopicCommandError) as e:
        _fail(str(e))
    except ExceptionGroup as group:
        _fail("; ".join(str(e) for e in group.exceptions))


def _fail(message: str) -> None:
    click.echo(f"Error while executing topic command : {message}", err=True)
    sys.exit(1)
