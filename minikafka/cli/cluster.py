"""`minikafka cluster`: a local dev cluster (ZooKeeper + N brokers) and faults to inject.

`up` runs in the foreground (Ctrl-C or SIGTERM stops everything) or, with `--detach`, leaves
the processes running; every other subcommand finds them through `<data-dir>/cluster.json`.

Growing and shrinking: `add-broker` (the next id, registered, empty), `remove-broker`
(refused while the broker holds replicas; `--drain` first moves them to the other brokers
with partition reassignment, then stops and forgets it).

Faults: `kill`, `stop-broker`, `pause`/`resume`, `restart` (processes), `expire-session`
(ZooKeeper session), `zookeeper stop|start|restart|kill`, and with `up --network netns`
(root) `partition`, `isolate`, `degrade`, `heal` (network).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource
from rich.console import Console
from rich.table import Table

from minikafka.cli.signals import sigterm_as_interrupt
from minikafka.client.controller_calls import ControllerClient
from minikafka.cluster.broker_config import parse_overrides
from minikafka.cluster.data_dir import (
    DEFAULT_DATA_DIR_TEXT,
    OLD_DEFAULT_DATA_DIR,
    STATE_FILE,
    default_data_dir,
)
from minikafka.cluster.errors import ClusterError
from minikafka.cluster.local import NETWORK_MODES, LocalCluster
from minikafka.cluster.security import SECURITY_MODES
from minikafka.common import TopicPartition
from minikafka.protocol.errors import KafkaError
from minikafka.rules.reassignment import drain_plan
from minikafka.zk import install as zookeeper_install
from minikafka.zk.server import ZooKeeperNotInstalledError, ZooKeeperStartError

_FAILURES = (ClusterError, ZooKeeperNotInstalledError, ZooKeeperStartError)


def data_dir_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--data-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=default_data_dir,
        show_default=DEFAULT_DATA_DIR_TEXT,
        help="The cluster's directory (ZooKeeper, brokers' logs, cluster.json); one per "
        "user by default, so any directory finds it.",
    )(f)


def broker_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--broker", "broker_id", type=int, required=True, help="Broker id.")(f)


def _data_dir_flag(data_dir: Path) -> str:
    """` --data-dir DIR` for a command line that must find `data_dir`; empty when it is
    the default."""
    return "" if data_dir == default_data_dir() else f" --data-dir {data_dir}"


def _open(data_dir: Path) -> LocalCluster:
    """The cluster saved in `data_dir`, or a clear error if there is none."""
    if not (data_dir / STATE_FILE).is_file():
        # Say where we looked, so a cluster started with another --data-dir is found
        # rather than started twice.
        old = OLD_DEFAULT_DATA_DIR / STATE_FILE
        hint = (
            f"; there is one in ./{OLD_DEFAULT_DATA_DIR} (an earlier version's default): "
            f"`--data-dir {OLD_DEFAULT_DATA_DIR}` finds it"
            if old.is_file() and data_dir.resolve() != OLD_DEFAULT_DATA_DIR.resolve()
            else ""
        )
        raise click.ClickException(
            f"no cluster in {data_dir.resolve()} (no {STATE_FILE} there){hint}; a cluster "
            "started with another data dir is found with `--data-dir DIR`; start one with "
            f"`minikafka cluster up{_data_dir_flag(data_dir)}`"
        )
    try:
        return LocalCluster(data_dir)
    except (ClusterError, ValueError) as e:
        raise click.ClickException(str(e)) from e


@contextlib.contextmanager
def _failures_as_click_errors() -> Iterator[None]:
    try:
        yield
    except _FAILURES as e:
        raise click.ClickException(str(e)) from e


def describe_faults(faults: dict[str, Any]) -> str:
    """`{"cut": "brokers", "degrade": {...}}` -> "partitioned from brokers, delay 50ms"."""
    parts = []
    cut = faults.get("cut")
    if cut == "brokers":
        parts.append("[yellow]partitioned from the other brokers[/]")
    elif cut == "all":
        parts.append("[red]isolated[/]")
    degrade = faults.get("degrade")
    if degrade:
        if degrade.get("delay_ms") or degrade.get("jitter_ms"):
            jitter = f"±{degrade['jitter_ms']:g}" if degrade.get("jitter_ms") else ""
            parts.append(f"delay {degrade.get('delay_ms', 0):g}{jitter}ms")
        if degrade.get("loss_pct"):
            parts.append(f"loss {degrade['loss_pct']:g}%")
    return ", ".join(parts)


def print_status(console: Console, status: dict[str, Any]) -> None:
    """ZooKeeper's line, the network's, the brokers' table, the bootstrap servers."""
    zk = status["zookeeper"]
    zk_state = f"pid {zk['pid']}" if zk["alive"] else "[red]not running[/]"
    line = f"[bold]ZooKeeper[/] {zk['connect']} ({zk_state})"
    ctrl = status["controller"]
    if ctrl is not None:
        line += f"; controller: broker {ctrl['id']}, controller epoch {ctrl['epoch']}"
    console.print(line)
    net = status.get("network", {"mode": "loopback"})
    if net["mode"] == "netns":
        console.print(
            f"[bold]network[/] netns: subnet {net['subnet']}, bridge {net['bridge']} "
            f"(gateway {net['gateway']}), namespaces mk-{net['id']}-b<broker>"
        )
    table = Table(title=f"minikafka cluster in {status['data_dir']}")
    # Addresses, pids and epochs are never cut; headers may wrap in a narrow terminal.
    for column in ("broker", "address", "pid", "process", "registered", "epoch", "role"):
        table.add_column(column, no_wrap=column in ("address", "pid", "epoch"))
    for b in status["brokers"]:
        if b["paused"]:
            process = "[yellow]paused[/]"
        elif b["alive"]:
            process = "[green]running[/]"
        else:
            process = "[red]stopped[/]"
        table.add_row(
            str(b["id"]),
            f"{b['host']}:{b['port']}",
            "" if b["pid"] is None else str(b["pid"]),
            process,
            "[green]yes[/]" if b["registered"] else "[red]no[/]",
            "" if b["epoch"] is None else str(b["epoch"]),
            "[bold]controller[/]" if b["controller"] else "",
        )
    console.print(table)
    # Below the table, which is as wide as a terminal already.
    for b in status["brokers"]:
        if b.get("faults"):
            console.print(
                f"[bold]network fault[/] broker {b['id']}: {describe_faults(b['faults'])}"
            )
    console.print(f"[bold]bootstrap servers:[/] {status['bootstrap_servers']}")
    if status.get("security"):
        # A client properties file in librdkafka's names (what `--command-config` takes,
        # and what kcat -F and confluent-kafka read).
        console.print(f"[bold]security:[/] {status['security']}; client settings:")
        for key, value in status["client_config"].items():
            console.print(f"  {key}={value}", markup=False, highlight=False)
    # Below the table too: a column of URLs would squeeze an 80-column table.
    admin = ", ".join(b["admin_url"] for b in status["brokers"])
    console.print(f"[bold]admin endpoints (/metrics, /health, /v1/...):[/] {admin}")
    if status["brokers"]:
        console.print(f"[bold]dashboard:[/] {status['brokers'][0]['admin_url']}/")
    if status.get("admin_token_file"):
        # The path, not the token: the user name is any, the token is the password.
        console.print(
            f"[bold]admin token:[/] in {status['admin_token_file']} (every route but /health "
            "asks for it: Authorization: Bearer <token>, or any user name with it as the "
            "password)",
            soft_wrap=True,
        )


@click.group()
def cluster() -> None:
    """A local dev cluster: a real ZooKeeper and broker processes, and faults to inject."""


@cluster.command("up")
@click.option("--brokers", type=click.IntRange(min=1), default=3, show_default=True)
@data_dir_option
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=9092,
    show_default=True,
    help="Port of broker 1; broker N listens on port+N-1 (0: free ports). A data dir that "
    "has run before keeps its ports.",
)
@click.option("--zookeeper-port", type=click.IntRange(0, 65535), default=2181, show_default=True)
@click.option(
    "--admin-port",
    type=click.IntRange(0, 65535),
    default=9644,
    show_default=True,
    help="Port of broker 1's HTTP admin endpoint (the dashboard at /, /metrics, /health, "
    "/v1/...); broker N's is admin-port+N-1 (0: free ports).",
)
@click.option(
    "--broker-config",
    multiple=True,
    metavar="[ID:]KEY=VALUE",
    help="Broker property for every broker, or for broker ID only (repeatable); kept in "
    "cluster.json for later runs, e.g. zookeeper.session.timeout.ms=6000.",
)
@click.option(
    "--network",
    type=click.Choice(NETWORK_MODES),
    default=None,
    help="loopback: everything on 127.0.0.1 (default). netns (root): each broker in its own "
    "network namespace and address, so that partition/isolate/degrade work. A data dir that "
    "has run before keeps its mode.",
)
@click.option(
    "--subnet",
    metavar="CIDR",
    default=None,
    help="With --network netns: the brokers' subnet (default: a free /24 of 198.18.0.0/15).",
)
@click.option(
    "--security",
    type=click.Choice(SECURITY_MODES),
    default=None,
    help="Secure the brokers' listener: sasl_ssl (SCRAM over TLS), ssl (mutual TLS) or "
    "sasl_plaintext. Makes a CA, certificates and an admin user in the data dir, and prints "
    "the client settings (`cluster status --json` has them as client_config). A data dir "
    "that has run before keeps its mode.",
)
@click.option(
    "--racks",
    metavar="RACK,...",
    default=None,
    help="Each broker's broker.rack, in broker id order, one a broker (e.g. a,b,c for 3 "
    "brokers): topics then get Kafka's rack-aware replica placement. Kept for later runs.",
)
@click.option("--detach", is_flag=True, help="Return once the cluster is up; it keeps running.")
@click.option("--timeout", type=float, default=120.0, show_default=True, help="Seconds to start.")
@click.pass_context
def up(
    ctx: click.Context,
    brokers: int,
    data_dir: Path,
    port: int,
    zookeeper_port: int,
    admin_port: int,
    broker_config: tuple[str, ...],
    network: Any,
    subnet: str | None,
    security: Any,
    racks: str | None,
    detach: bool,
    timeout: float,
) -> None:
    """Start ZooKeeper and the brokers; wait for every registration and a controller."""
    console = Console()
    try:
        common, per_broker = parse_overrides(broker_config)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--broker-config") from e
    # Without an explicit --brokers, a data dir that has run before keeps its broker count.
    explicit = ctx.get_parameter_source("brokers") != ParameterSource.DEFAULT
    try:
        lc = LocalCluster(
            data_dir,
            brokers if explicit else None,
            base_port=port,
            zookeeper_port=zookeeper_port,
            admin_base_port=admin_port,
            overrides=common,
            broker_overrides=per_broker,
            network=network,
            subnet=subnet,
            security=security,
            racks=None if racks is None else racks.split(","),
        )
    except (ClusterError, ValueError) as e:
        raise click.ClickException(str(e)) from e
    with sigterm_as_interrupt():
        try:
            # A fresh Debian machine: install the zookeeper package first (as root), or
            # say what to run.
            with console.status("checking for ZooKeeper…") as status, _failures_as_click_errors():
                if zookeeper_install.ensure_installed(
                    lc.zookeeper.install_dir, progress=status.update
                ):
                    console.print("installed Debian's zookeeper package")
            with (
                console.status(f"starting ZooKeeper and {len(lc.broker_ids)} brokers…"),
                _failures_as_click_errors(),
            ):
                lc.start(timeout=timeout)
        except KeyboardInterrupt:
            # start() has already stopped whatever it had started.
            console.print("[yellow]interrupted; the cluster is stopped[/]")
            ctx.exit(130)
        print_status(console, lc.status())
        if detach:
            lc.close_zk_client()
            console.print(
                f"running in the background; stop it with "
                f"`minikafka cluster down{_data_dir_flag(data_dir)}`"
            )
            return
        console.print("Press Ctrl-C to stop the cluster.")
        with contextlib.suppress(KeyboardInterrupt):
            _watch(lc, console)
        _stop(lc, console)


def _watch(lc: LocalCluster, console: Console) -> None:
    """Report broker exits and restarts (faults injected from another terminal) until
    interrupted, or until `cluster down` from elsewhere has stopped everything."""
    pids = {bid: lc.pid(bid) for bid in lc.broker_ids}
    while True:
        time.sleep(0.5)  # a monitor, not a wait for a condition: it runs until Ctrl-C
        for bid in lc.broker_ids:
            pid = lc.pid(bid)
            if pid == pids[bid]:
                continue
            if pid is None:
                code = lc.returncode(bid, pids[bid])
                how = "" if code is None else f" with code {code}"
                console.print(f"[red]broker {bid} (pid {pids[bid]}) exited{how}[/]")
            else:
                console.print(f"[green]broker {bid} is running (pid {pid})[/]")
            pids[bid] = pid
        if not lc.zookeeper.is_running() and not any(pids.values()):
            console.print("the cluster was stopped by another command")
            return


def _stop(lc: LocalCluster, console: Console) -> None:
    try:
        with console.status("stopping the cluster…") as status:
            lc.stop(progress=status.update)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted again: killing every process[/]")
        lc.kill_all()
    console.print("cluster stopped")


@cluster.command("logs")
@data_dir_option
@click.option("--broker", "broker_id", type=int, default=None, help="Broker id.")
@click.option("--zookeeper", "zookeeper", is_flag=True, help="ZooKeeper's log instead.")
@click.option("-n", "--lines", type=click.IntRange(min=0), default=40, show_default=True)
@click.option("-f", "--follow", is_flag=True, help="Keep printing what is appended (Ctrl-C ends).")
def logs(data_dir: Path, broker_id: int | None, zookeeper: bool, lines: int, follow: bool) -> None:
    """Print the end of a broker's (or ZooKeeper's) log file, and where it is."""
    if (broker_id is None) == (not zookeeper):
        raise click.UsageError("give exactly one of --broker N and --zookeeper")
    lc = _open(data_dir)
    if zookeeper:
        path = lc.zookeeper.log_path
    else:
        assert broker_id is not None
        if broker_id not in lc.broker_ids:
            raise click.BadParameter(
                f"no broker {broker_id} (brokers: {', '.join(map(str, lc.broker_ids))})",
                param_hint="--broker",
            )
        path = lc.broker_log_path(broker_id)
    click.echo(f"==> {path} <==", err=True)
    if not path.is_file():
        return
    with open(path, "rb") as f:
        for line in collections.deque(f, maxlen=lines):
            click.echo(line.decode(errors="replace"), nl=False)
        if not follow:
            return
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                chunk = f.readline()
                if chunk:
                    click.echo(chunk.decode(errors="replace"), nl=False)
                else:
                    time.sleep(0.2)  # tail -f's poll: new lines are printed as they come


@cluster.command("down")
@data_dir_option
@click.option("--timeout", type=float, default=60.0, show_default=True, help="Seconds per phase.")
def down(data_dir: Path, timeout: float) -> None:
    """Stop a detached cluster: brokers (SIGTERM, then SIGKILL after the timeout), ZooKeeper."""
    lc = _open(data_dir)
    console = Console()
    with _failures_as_click_errors(), console.status("stopping the cluster…") as status:
        lc.stop(timeout=timeout, progress=status.update)
    console.print(f"cluster in {lc.data_dir} stopped")


@cluster.command("status")
@data_dir_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status(data_dir: Path, as_json: bool) -> None:
    """ZooKeeper and each broker: port, pid, process state, registration, controller."""
    lc = _open(data_dir)
    try:
        st = lc.status()
    finally:
        lc.close_zk_client()
    if as_json:
        click.echo(json.dumps(st, indent=2))
    else:
        print_status(Console(), st)


@cluster.command("kill")
@broker_option
@data_dir_option
def kill(broker_id: int, data_dir: Path) -> None:
    """SIGKILL a broker, as a crash would."""
    lc = _open(data_dir)
    with _failures_as_click_errors():
        pid = lc.pid(broker_id)
        lc.kill(broker_id)
    click.echo(f"killed broker {broker_id} (pid {pid})")


@cluster.command("pause")
@broker_option
@data_dir_option
def pause(broker_id: int, data_dir: Path) -> None:
    """SIGSTOP a broker (past zookeeper.session.timeout.ms its session expires)."""
    lc = _open(data_dir)
    with _failures_as_click_errors():
        lc.pause(broker_id)
    click.echo(f"paused broker {broker_id} (pid {lc.pid(broker_id)})")


@cluster.command("resume")
@broker_option
@data_dir_option
def resume(broker_id: int, data_dir: Path) -> None:
    """SIGCONT a paused broker."""
    lc = _open(data_dir)
    with _failures_as_click_errors():
        lc.resume(broker_id)
    click.echo(f"resumed broker {broker_id} (pid {lc.pid(broker_id)})")


@cluster.command("restart")
@broker_option
@data_dir_option
@click.option("--timeout", type=float, default=60.0, show_default=True)
def restart(broker_id: int, data_dir: Path, timeout: float) -> None:
    """Stop a broker if it runs (SIGTERM), start it again, wait until it is registered."""
    lc = _open(data_dir)
    try:
        with _failures_as_click_errors():
            info = lc.restart(broker_id, timeout=timeout)
    finally:
        lc.close_zk_client()
    click.echo(
        f"broker {broker_id} is running (pid {lc.pid(broker_id)}), registered with broker "
        f"epoch {info.epoch}"
    )


@cluster.command("stop-broker")
@broker_option
@data_dir_option
@click.option("--timeout", type=float, default=60.0, show_default=True)
def stop_broker(broker_id: int, data_dir: Path, timeout: float) -> None:
    """SIGTERM a broker (controlled shutdown) and wait until it has exited."""
    lc = _open(data_dir)
    with _failures_as_click_errors():
        pid = lc.pid(broker_id)
        lc.terminate(broker_id, timeout=timeout)
    click.echo(f"broker {broker_id} (pid {pid}) stopped")


# --- growing and shrinking ------------------------------------------------------------------


@cluster.command("add-broker")
@data_dir_option
@click.option(
    "--rack", default=None, help="Its broker.rack (required when the other brokers have one)."
)
@click.option("--timeout", type=float, default=60.0, show_default=True)
def add_broker(data_dir: Path, rack: str | None, timeout: float) -> None:
    """Start one more broker (the next id), with the cluster's config. It holds nothing
    until partitions are moved onto it (`minikafka reassign-partitions`) or created."""
    lc = _open(data_dir)
    try:
        with _failures_as_click_errors():
            broker_id = lc.add_broker(timeout=timeout, rack=rack)
    finally:
        lc.close_zk_client()
    host, port = lc.broker_address(broker_id)
    click.echo(
        f"broker {broker_id} is running at {host}:{port} (pid {lc.pid(broker_id)}); it holds "
        "no replicas yet: move some onto it with `minikafka reassign-partitions`"
    )


def _replicas_on(lc: LocalCluster, broker_id: int) -> dict[TopicPartition, tuple[int, ...]]:
    """Every partition's replicas (the full set of a moving one), from ZooKeeper."""
    zk = lc.zk_client()
    full = zk.get_full_assignments(zk.get_all_topics())
    return {
        TopicPartition(topic, p): a.replicas
        for topic, by_partition in full.items()
        for p, a in by_partition.items()
    }


def _drain(lc: LocalCluster, broker_id: int, timeout: float) -> int:
    """Move every replica off the broker (AlterPartitionReassignments) and wait until no
    partition has it; the number of replicas moved."""
    assignments = _replicas_on(lc, broker_id)
    live = set(lc.zk_client().get_all_brokers())
    try:
        plan = drain_plan(assignments, broker_id, live)
    except ValueError as e:
        raise click.ClickException(f"cannot drain broker {broker_id}: {e}") from None
    if not plan:
        return 0
    others = [b for b in lc.broker_ids if b != broker_id and lc.is_alive(b)]
    servers = ",".join("{}:{}".format(*lc.broker_address(b)) for b in others)

    async def move() -> dict[TopicPartition, KafkaError | None]:
        client = ControllerClient(servers, client_id="minikafka-cluster", timeout_s=timeout)
        try:
            return await client.alter_partition_reassignments(plan)
        finally:
            await client.close()

    errors = {tp: e for tp, e in asyncio.run(move()).items() if e is not None}
    if errors:
        raise click.ClickException(
            f"cannot drain broker {broker_id}: "
            + "; ".join(f"{tp}: {e}" for tp, e in sorted(errors.items()))
        )
    deadline = time.monotonic() + timeout
    while any(broker_id in r for r in _replicas_on(lc, broker_id).values()):
        if time.monotonic() > deadline:
            left = sorted(
                str(tp) for tp, r in _replicas_on(lc, broker_id).items() if broker_id in r
            )
            raise click.ClickException(
                f"broker {broker_id} still holds replicas of {', '.join(left)} after "
                f"{timeout:.0f} s; `minikafka reassign-partitions --list` shows the moves"
            )
        time.sleep(0.2)
    return len(plan)


@cluster.command("remove-broker")
@click.option("--broker", "--id", "broker_id", type=int, required=True, help="Broker id.")
@data_dir_option
@click.option(
    "--drain",
    is_flag=True,
    help="First move every replica the broker holds to the other brokers (partition "
    "reassignment), and wait until that is done.",
)
@click.option("--timeout", type=float, default=300.0, show_default=True)
def remove_broker(broker_id: int, data_dir: Path, drain: bool, timeout: float) -> None:
    """Retire a broker: refused while it holds replicas (their data would have one copy
    fewer), unless --drain moves them away first; then a controlled shutdown, and the
    broker leaves the cluster (its directory is deleted)."""
    lc = _open(data_dir)
    try:
        with _failures_as_click_errors():
            if broker_id not in lc.broker_ids:
                raise ClusterError(
                    f"no broker {broker_id} in this cluster (brokers: {lc.broker_ids})"
                )
            if drain:
                moved = _drain(lc, broker_id, timeout)
                click.echo(f"moved {moved} replicas off broker {broker_id}")
            held = sorted(
                str(tp) for tp, r in _replicas_on(lc, broker_id).items() if broker_id in r
            )
            if held:
                shown = ", ".join(held[:10]) + (
                    f" and {len(held) - 10} more" if len(held) > 10 else ""
                )
                raise ClusterError(
                    f"broker {broker_id} still holds {len(held)} replicas ({shown}); move them "
                    "with `minikafka reassign-partitions`, or run this with --drain, which does"
                )
            lc.remove_broker(broker_id, timeout=timeout)
    finally:
        lc.close_zk_client()
    click.echo(f"broker {broker_id} stopped and removed; brokers now: {lc.broker_ids}")


# --- network faults (netns mode) ---------------------------------------------------------


@cluster.command("partition")
@broker_option
@data_dir_option
def partition(broker_id: int, data_dir: Path) -> None:
    """Cut a broker off from the other brokers only (it keeps ZooKeeper and clients)."""
    lc = _open(data_dir)
    with _failures_as_click_errors():
        lc.partition_from_brokers(broker_id)
    click.echo(f"broker {broker_id} is cut off from the other brokers (heal: `cluster heal`)")


@cluster.command("isolate")
@broker_option
@data_dir_option
def isolate(broker_id: int, data_dir: Path) -> None:
    """Cut a broker off from everything: brokers, ZooKeeper and clients."""
    lc = _open(data_dir)
    with _failures_as_click_errors():
        lc.isolate(broker_id)
    click.echo(f"broker {broker_id} is isolated (heal: `cluster heal`)")


@cluster.command("degrade")
@broker_option
@data_dir_option
@click.option("--delay-ms", type=click.FloatRange(min=0), default=0.0, show_default=True)
@click.option("--jitter-ms", type=click.FloatRange(min=0), default=0.0, show_default=True)
@click.option("--loss-pct", type=click.FloatRange(0, 100), default=0.0, show_default=True)
def degrade(
    broker_id: int, data_dir: Path, delay_ms: float, jitter_ms: float, loss_pct: float
) -> None:
    """Delay and drop packets to and from a broker (tc netem, each way)."""
    lc = _open(data_dir)
    try:
        with _failures_as_click_errors():
            lc.degrade(broker_id, delay_ms=delay_ms, jitter_ms=jitter_ms, loss_pct=loss_pct)
    except ValueError as e:
        raise click.UsageError(str(e)) from e
    click.echo(f"broker {broker_id}'s link is degraded (heal: `cluster heal`)")


@cluster.command("heal")
@click.option("--broker", "broker_id", type=int, default=None, help="Broker id (default: all).")
@data_dir_option
def heal(broker_id: int | None, data_dir: Path) -> None:
    """Undo the network faults of one broker, or of all."""
    lc = _open(data_dir)
    with _failures_as_click_errors():
        lc.heal(broker_id)
    click.echo("healed " + ("every broker" if broker_id is None else f"broker {broker_id}"))


@cluster.command("exec", context_settings={"ignore_unknown_options": True})
@broker_option
@data_dir_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def exec_(broker_id: int, data_dir: Path, command: tuple[str, ...]) -> None:
    """Run COMMAND in a broker's network namespace (a client on its side of a partition):
    `minikafka cluster exec --broker 2 -- ss -tn`."""
    lc = _open(data_dir)
    with _failures_as_click_errors():
        argv = lc.netns_command(broker_id, list(command))
    os.execvp(argv[0], argv)


# --- ZooKeeper -----------------------------------------------------------------------------


@cluster.command("expire-session")
@broker_option
@data_dir_option
@click.option(
    "--wait/--no-wait",
    default=True,
    show_default=True,
    help="Wait until the broker has registered again (with a new broker epoch).",
)
@click.option("--timeout", type=float, default=60.0, show_default=True)
def expire_session(broker_id: int, data_dir: Path, wait: bool, timeout: float) -> None:
    """Expire a broker's ZooKeeper session now (as a long pause or partition would)."""
    lc = _open(data_dir)
    try:
        with _failures_as_click_errors():
            before = lc.registrations().get(broker_id)
            session = lc.expire_session(broker_id)
            click.echo(f"expired broker {broker_id}'s ZooKeeper session 0x{session:x}")
            if wait:
                newer = {broker_id: before.epoch} if before is not None else None
                info = lc.wait_for_registered([broker_id], timeout, newer_than=newer)
                click.echo(
                    f"broker {broker_id} registered again with broker epoch {info[broker_id].epoch}"
                )
    finally:
        lc.close_zk_client()


@cluster.group("zookeeper")
def zookeeper() -> None:
    """Stop, start, restart or kill the cluster's ZooKeeper (brokers keep running)."""


@zookeeper.command("stop")
@data_dir_option
@click.option("--timeout", type=float, default=10.0, show_default=True)
def zookeeper_stop(data_dir: Path, timeout: float) -> None:
    """SIGTERM ZooKeeper (SIGKILL after the timeout)."""
    lc = _open(data_dir)
    with _failures_as_click_errors():
        lc.stop_zookeeper(timeout=timeout)
    click.echo("ZooKeeper stopped")


@zookeeper.command("kill")
@data_dir_option
def zookeeper_kill(data_dir: Path) -> None:
    """SIGKILL ZooKeeper, as a crash would."""
    lc = _open(data_dir)
    with _failures_as_click_errors():
        lc.kill_zookeeper()
    click.echo("ZooKeeper killed")


@zookeeper.command("start")
@data_dir_option
@click.option("--timeout", type=float, default=30.0, show_default=True)
def zookeeper_start(data_dir: Path, timeout: float) -> None:
    """Start a stopped ZooKeeper on its port and data."""
    lc = _open(data_dir)
    with _failures_as_click_errors():
        lc.start_zookeeper(timeout=timeout)
    click.echo(f"ZooKeeper is running on {lc.zookeeper_connect} (pid {lc.zookeeper.pid})")


@zookeeper.command("restart")
@data_dir_option
@click.option("--kill", is_flag=True, help="SIGKILL instead of SIGTERM.")
@click.option("--timeout", type=float, default=30.0, show_default=True)
def zookeeper_restart(data_dir: Path, kill: bool, timeout: float) -> None:
    """Stop and start ZooKeeper; brokers that reconnect in time keep their sessions."""
    lc = _open(data_dir)
    with _failures_as_click_errors():
        lc.restart_zookeeper(timeout=timeout, kill=kill)
    click.echo(f"ZooKeeper restarted on {lc.zookeeper_connect} (pid {lc.zookeeper.pid})")
