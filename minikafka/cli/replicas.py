"""`minikafka replicas --describe`: each partition's replicas as its leader sees them.

For every partition the leader (found through metadata) is asked at its HTTP admin
endpoint (`GET /v1/partitions`, found through the broker's `admin.listeners`); one row per
replica shows its role, ISR membership, LEO, the partition's HW, its lag behind the leader
in messages, and how long ago it last caught up with the leader (design §7:
`lastCaughtUpTimeMs`, the clock that drives ISR shrinking). Endpoints that ask for a token
(`admin.listeners.token`) get the running local cluster's, or $MINIKAFKA_ADMIN_TOKEN.
"""

from __future__ import annotations

import asyncio
import sys
from itertools import groupby
from typing import NoReturn

import click
from rich.console import Console
from rich.table import Table

from minikafka.cli.client_options import admin_token, bootstrap_server_option
from minikafka.client.replica_states import PartitionReplicas, ReplicaDescription
from minikafka.client.replicas import ReplicaClient
from minikafka.protocol.errors import KafkaError, UnknownTopicOrPartitionError

COLUMNS = ("Partition", "Replica", "Role", "InIsr", "LEO", "HW", "Lag", "LastCaughtUpAgeMs")
# Wide enough that a table written to a pipe or file never wraps (rich assumes 80 there).
_PIPE_WIDTH = 200


def replica_row(p: PartitionReplicas, r: ReplicaDescription) -> list[str]:
    """The cells of one replica's row (plain text, as a script would read them)."""
    return [
        str(p.partition),
        str(r.broker_id),
        "leader" if r.is_leader else "follower",
        "yes" if r.in_isr else "no",
        "?" if r.log_end_offset < 0 else str(r.log_end_offset),
        str(p.high_watermark),
        "?" if r.lag is None else str(r.lag),
        "never" if r.last_caught_up_ms_ago < 0 else str(r.last_caught_up_ms_ago),
    ]


def partition_rows(p: PartitionReplicas) -> list[list[str]]:
    """One row per replica; a partition whose leader did not answer gets one row with the
    error in the Role column."""
    if p.error is not None:
        leader = "" if p.leader < 0 else str(p.leader)
        return [[str(p.partition), leader, f"error: {p.error}", "", "", "", "", ""]]
    return [replica_row(p, r) for r in p.replicas]


def topic_table(topic: str, partitions: list[PartitionReplicas]) -> Table:
    table = Table(title=f"Topic: {topic}", title_justify="left")
    for name in COLUMNS:
        right = name not in ("Role", "InIsr")
        table.add_column(name, justify="right" if right else "left", no_wrap=True)
    for p in partitions:
        rows = partition_rows(p)
        for j, row in enumerate(rows):
            style = "red" if p.error is not None else ("bold" if row[2] == "leader" else None)
            # A rule under each partition's last replica.
            table.add_row(*row, style=style, end_section=j == len(rows) - 1)
    return table


def print_tables(console: Console, described: list[PartitionReplicas]) -> None:
    for topic, parts in groupby(described, key=lambda p: p.topic):
        console.print(topic_table(topic, list(parts)))


async def _describe(
    bootstrap_server: str, topic: str | None, timeout_ms: int, token: str | None
) -> int:
    async with ReplicaClient(
        bootstrap_server, default_api_timeout_ms=timeout_ms, admin_token=token
    ) as views:
        try:
            described = await views.describe_replicas(None if topic is None else [topic])
        except UnknownTopicOrPartitionError:
            raise click.ClickException(f"Topic '{topic}' does not exist as expected") from None
    console = Console()
    if not console.is_terminal:
        console.width = _PIPE_WIDTH
    print_tables(console, described)
    return sum(p.error is not None for p in described)


@click.command("replicas")
@bootstrap_server_option
@click.option(
    "--describe",
    "describe",
    is_flag=True,
    help="Show every replica's LEO, lag, ISR membership and last caught-up age.",
)
@click.option("--topic", help="Only this topic (default: all topics).")
@click.option(
    "--timeout-ms",
    type=click.IntRange(min=1),
    default=30000,
    show_default=True,
    help="How long to keep asking leaders that do not answer (moved, unreachable).",
)
def replicas(bootstrap_server: str, describe: bool, topic: str | None, timeout_ms: int) -> None:
    """Each partition's replicas as its leader sees them (LEO, HW, lag, ISR).

    The leaders' admin endpoints are asked; when the brokers set admin.listeners.token,
    their token is sent: the running local cluster's own when bootstrapping from it by
    default, else $MINIKAFKA_ADMIN_TOKEN's (export MINIKAFKA_ADMIN_TOKEN=<token>)."""
    if not describe:
        raise click.UsageError("Command must include an action: --describe")
    try:
        failed = asyncio.run(_describe(bootstrap_server, topic, timeout_ms, admin_token()))
    except click.ClickException as e:
        _fail(e.message)
    except KafkaError as e:
        _fail(str(e))
    except ExceptionGroup as group:
        _fail("; ".join(str(e) for e in group.exceptions))
    if failed:
        _fail(f"{failed} partition(s) could not be described (see the error rows)")


def _fail(message: str) -> NoReturn:
    click.echo(f"Error while executing replicas command : {message}", err=True)
    sys.exit(1)
