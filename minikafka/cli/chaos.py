"""`minikafka chaos`: a Jepsen-style run against a running cluster: the local one
of `minikafka cluster up` (`--data-dir`), or any other, e.g. docker-compose's, reached with
`--bootstrap-server` and `--zookeeper` and faulted by a `--nemesis-command`."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import sys
from pathlib import Path

import click
from click.core import ParameterSource
from rich.console import Console
from rich.table import Table

from minikafka.chaos.command_cluster import (
    COMMAND_NEMESIS_OPS,
    COMMAND_OPS,
    CommandCluster,
    parse_nemesis_command,
)
from minikafka.chaos.history import ProducerMode
from minikafka.chaos.nemesis import NEMESIS_OPS
from minikafka.chaos.runner import ChaosCluster, ChaosOptions, run_chaos, write_report
from minikafka.chaos.workload import IDEMPOTENT_DELIVERY_TIMEOUT_MS
from minikafka.cli.client_options import (
    command_config_option,
    require_client,
    take_local_cluster_settings,
)
from minikafka.cli.cluster import _open, data_dir_option
from minikafka.cli.output_dirs import OTHER_CLUSTERS_DIR, other_clusters_dir
from minikafka.cli.signals import interrupt_status, sigterm_as_interrupt
from minikafka.client.bootstrap import parse_bootstrap_servers
from minikafka.client.replica_states import ADMIN_TOKEN_ENV
from minikafka.cluster.errors import ClusterError
from minikafka.zk.client import ZkError, parse_connect_string


def _check_bootstrap(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        try:
            parse_bootstrap_servers(value)
        except ValueError as e:
            raise click.BadParameter(str(e)) from None
    return value


def _check_zookeeper(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        try:
            parse_connect_string(value)
        except ValueError as e:
            raise click.BadParameter(str(e)) from None
    return value


def _check_nemesis_command(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> str | None:
    if value is not None:
        try:
            parse_nemesis_command(value)
        except ValueError as e:
            raise click.BadParameter(str(e)) from None
    return value


def command_cluster(
    ctx: click.Context,
    bootstrap_server: str | None,
    zookeeper: str | None,
    nemesis_command: str | None,
) -> CommandCluster | None:
    """The cluster of --bootstrap-server (None: --data-dir's local cluster), or a usage
    error for options that do not go together."""
    if bootstrap_server is None:
        alone = [
            name
            for name, value in (("--zookeeper", zookeeper), ("--nemesis-command", nemesis_command))
            if value is not None
        ]
        if alone:
            raise click.UsageError(
                f"{' and '.join(alone)} {'go' if len(alone) > 1 else 'goes'} only with "
                "--bootstrap-server (a cluster chaos does not manage); --data-dir's local "
                "cluster is faulted directly"
            )
        return None
    if ctx.get_parameter_source("data_dir") not in (None, ParameterSource.DEFAULT):
        raise click.UsageError(
            "--data-dir and --bootstrap-server are mutually exclusive: --data-dir runs against "
            "the local cluster of `minikafka cluster up`, --bootstrap-server against any other"
        )
    missing = [
        name
        for name, value in (("--zookeeper", zookeeper), ("--nemesis-command", nemesis_command))
        if value is None
    ]
    if missing:
        raise click.UsageError(
            f"--bootstrap-server needs {' and '.join(missing)}: leaders, ISRs and the "
            "controller are read from ZooKeeper, and faults are injected by running "
            "--nemesis-command 'CMD {op} {broker}'"
        )
    assert zookeeper is not None and nemesis_command is not None
    return CommandCluster(
        bootstrap_server,
        zookeeper,
        nemesis_command,
        admin_token=os.environ.get(ADMIN_TOKEN_ENV) or None,
    )


@click.command()
@data_dir_option
@click.option(
    "--bootstrap-server",
    default=None,
    callback=_check_bootstrap,
    metavar="HOST:PORT[,HOST:PORT]",
    help="Instead of --data-dir: a running cluster chaos does not manage (e.g. "
    "docker-compose's); needs --zookeeper and --nemesis-command. Brokers whose admin "
    f"endpoints ask for a token (admin.listeners.token) get ${ADMIN_TOKEN_ENV}'s.",
)
@command_config_option
@click.option(
    "--zookeeper",
    default=None,
    callback=_check_zookeeper,
    metavar="HOST:PORT[,HOST:PORT][/CHROOT]",
    help="With --bootstrap-server: that cluster's ZooKeeper (leaders, ISRs, controller).",
)
@click.option(
    "--nemesis-command",
    default=None,
    callback=_check_nemesis_command,
    metavar="'CMD {op} {broker}'",
    help="With --bootstrap-server: the fault injector, run without a shell, {op} being one of "
    f"{','.join(COMMAND_OPS)} and {{broker}} a broker id (status prints the state last: "
    "running, paused, exited...), e.g. scripts/docker-fault.sh. It can do the nemeses "
    f"{','.join(COMMAND_NEMESIS_OPS)}; reassign needs no command.",
)
@click.option(
    "--topic",
    default=None,
    help="A new topic for the run (default: chaos-<UTC time>, so runs one after another "
    "each get theirs).",
)
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
    "--producer",
    "producer_mode",
    type=click.Choice([m.value for m in ProducerMode]),
    default=ProducerMode.PLAIN.value,
    show_default=True,
    help="How the producers write: plain sends each record once (retries=0, no "
    "idempotence), so duplicates are only counted; idempotent is Kafka's idempotent "
    "producer (enable.idempotence=true, acks=all, retries until a "
    f"{IDEMPOTENT_DELIVERY_TIMEOUT_MS // 1000} s delivery timeout), "
    "and any value written at two offsets fails the run.",
)
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
@click.option(
    "--faults",
    default=None,
    type=click.IntRange(min=1),
    help="Instead of --time-limit: this many faults (each after a quiet --interval), "
    "however long they take.",
)
@click.option(
    "--group-members",
    default=2,
    show_default=True,
    type=click.IntRange(min=0),
    help="Members of a consumer group (chaos-<topic>) reading the topic and committing by "
    "hand; the report counts records the group committed past without delivering them "
    "(0: no group).",
)
@click.option(
    "--group-commits",
    type=click.Choice(["sync", "async"]),
    default="sync",
    show_default=True,
    help="How the group's members commit: sync waits for each commit; async sends one "
    "every few records without waiting (several in flight at once), while the group's "
    "committed offsets are read back to catch a commit applied after a later one.",
)
@click.option("--seed", default=0, show_default=True, help="Same seed, same fault schedule.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where report.json and timeline.png go (default: <data-dir>/chaos/<topic>; with "
    f"--bootstrap-server, $XDG_DATA_HOME/minikafka/{OTHER_CLUSTERS_DIR}/chaos/<topic>).",
)
@click.pass_context
def chaos(
    ctx: click.Context,
    data_dir: Path,
    bootstrap_server: str | None,
    zookeeper: str | None,
    nemesis_command: str | None,
    topic: str | None,
    partitions: int,
    replication_factor: int,
    min_insync_replicas: int,
    unclean_leader_election: bool,
    producers: int,
    rate: float,
    producer_mode: str,
    nemesis: str,
    interval: float,
    time_limit: float,
    faults: int | None,
    group_members: int,
    group_commits: str,
    seed: int,
    out: Path | None,
) -> None:
    """Write unique integers with acks=all while a nemesis injects faults; then heal, read
    everything back, compare replicas, and report. Exits 1 if a safety invariant broke.
    Meanwhile a consumer group reads the topic, committing by hand: a record of the final
    log it committed past without any member being given it breaks at-least-once delivery.

    Runs against the local cluster in --data-dir, or with --bootstrap-server, --zookeeper
    and --nemesis-command against any running cluster (replicas are then read back with
    fetches instead of from their files); scripts/docker-chaos.sh does it for
    docker-compose.yml."""
    if faults is not None and ctx.get_parameter_source("time_limit") not in (
        None,
        ParameterSource.DEFAULT,
    ):
        raise click.UsageError(
            "--faults and --time-limit are mutually exclusive: one bounds the run"
        )
    require_client("minikafka chaos runs its producers and consumers")
    remote = command_cluster(ctx, bootstrap_server, zookeeper, nemesis_command)
    if topic is None:
        topic = "chaos-" + dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    cluster: ChaosCluster
    if remote is None:
        local = _open(data_dir)
        take_local_cluster_settings(ctx, local)
        cluster = local
        where = "in the cluster's data dir"
        default_out = cluster.data_dir / "chaos" / topic
    else:
        # Not the current directory: reports would litter whatever it is.
        cluster, default_out = remote, other_clusters_dir("chaos") / topic
        where = "as --bootstrap-server's cluster has no data dir here"
    if out is None:
        out, note = default_out, f"the report goes to {default_out}, {where} (--out DIR: elsewhere)"
    else:
        note = f"the report goes to {out}"
    console = Console()
    console.print(note, markup=False, highlight=False, soft_wrap=True)
    ops = tuple(op.strip() for op in nemesis.split(",") if op.strip())
    opts = ChaosOptions(
        topic=topic,
        partitions=partitions,
        replication_factor=replication_factor,
        min_insync_replicas=min_insync_replicas,
        unclean_leader_election=unclean_leader_election,
        producers=producers,
        rate=rate,
        producer=ProducerMode(producer_mode),
        nemesis=ops,
        interval_s=interval,
        time_limit_s=time_limit,
        faults=faults,
        seed=seed,
        group_members=group_members,
        group_async_commits=group_commits == "async",
    )
    try:
        with sigterm_as_interrupt():
            report = asyncio.run(run_chaos(cluster, opts, log=console.print))
    except (ValueError, ClusterError, ZkError) as e:
        raise click.ClickException(str(e)) from e
    except KeyboardInterrupt as e:
        # run_chaos healed every fault on its way out (nothing stays paused or cut off).
        console.print("stopped: every fault healed; an interrupted run is not checked")
        sys.exit(interrupt_status(e, on_ctrl_c=130))
    finally:
        if remote is not None:
            remote.close()
    paths = write_report(report, out)
    table = Table(
        title=f"minikafka chaos: {topic}, {producer_mode} producer, nemesis {','.join(ops)}, "
        f"seed {seed}"
    )
    table.add_column("measure")
    table.add_column("value", justify="right")
    for name, value in report.result.summary_rows():
        table.add_row(name, value)
    console.print(table)
    for problem in report.result.problems:
        console.print(f"[red]{problem}[/red]")
    # Whole paths, never folded at the terminal's width: they get copied.
    console.print(
        f"report: {paths['json']}\nplot: {paths['plot']}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    if not report.result.valid:
        raise SystemExit(1)
