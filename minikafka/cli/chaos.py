"""`minikafka chaos`: a Jepsen-style run against a running local cluster (issue 5)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from minikafka.chaos.nemesis import NEMESIS_OPS
from minikafka.chaos.runner import ChaosOptions, run_chaos, write_report
from minikafka.cli.cluster import _open, data_dir_option


@click.command()
@data_dir_option
@click.option("--topic", default="chaos", show_default=True, help="A new topic for the run.")
@click.option("--partitions", default=3, show_default=True)
@click.option("--replication-factor", default=3, show_default=True)
@click.option("--min-insync-replicas", default=2, show_default=True)
@click.option(
    "--unclean-leader-election/--no-unclean-leader-election",
    default=False,
    show_default=True,
    help="The topic's unclean.leader.election.enable (the negative control turns it on).",
)
@click.option("--producers", default=3, show_default=True, help="Concurrent producers.")
@click.option("--rate", default=100.0, show_default=True, help="Sends per second per producer.")
@click.option(
    "--nemesis",
    default="kill,pause",
    show_default=True,
    help=f"Comma-separated faults to draw from: {','.join(NEMESIS_OPS)}.",
)
@click.option(
    "--interval", default=10.0, show_default=True, help="Seconds per fault and per quiet."
)
@click.option("--time-limit", default=60.0, show_default=True, help="Seconds of faults.")
@click.option("--seed", default=0, show_default=True, help="Same seed, same fault schedule.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where report.json and timeline.png go (default: <data-dir>/chaos/<topic>).",
)
def chaos(
    data_dir: Path,
    topic: str,
    partitions: int,
    replication_factor: int,
    min_insync_replicas: int,
    unclean_leader_election: bool,
    producers: int,
    rate: float,
    nemesis: str,
    interval: float,
    time_limit: float,
    seed: int,
    out: Path | None,
) -> None:
    """Write unique integers with acks=all while a nemesis injects faults; then heal, read
    everything back, compare replicas, and report. Exits 1 if a safety invariant broke."""
    lc = _open(data_dir)
    ops = tuple(op.strip() for op in nemesis.split(",") if op.strip())
    opts = ChaosOptions(
        topic=topic,
        partitions=partitions,
        replication_factor=replication_factor,
        min_insync_replicas=min_insync_replicas,
        unclean_leader_election=unclean_leader_election,
        producers=producers,
        rate=rate,
        nemesis=ops,
        interval_s=interval,
        time_limit_s=time_limit,
        seed=seed,
    )
    console = Console()
    try:
        report = asyncio.run(run_chaos(lc, opts, log=console.print))
    except ValueError as e:
        raise click.ClickException(str(e)) from e
    paths = write_report(report, out or lc.data_dir / "chaos" / topic)
    table = Table(title=f"minikafka chaos: {topic}, nemesis {','.join(ops)}, seed {seed}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for name, value in report.result.summary_rows():
        table.add_row(name, value)
    console.print(table)
    for problem in report.result.problems:
        console.print(f"[red]{problem}[/red]")
    console.print(f"report: {paths['json']}\nplot: {paths['plot']}")
    if not report.result.valid:
        raise SystemExit(1)
