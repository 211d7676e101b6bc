"""`LocalCluster`: a real ZooKeeper and N broker processes, in one data dir.

Two network modes. `loopback` (the default, no root needed): everything on 127.0.0.1, one
port per broker. `netns` (root): each broker in its own network namespace with its own
address, linked to a bridge in the root namespace, where ZooKeeper and clients stay; that
is what network faults (`partition_from_brokers`, `isolate`, `degrade`, `heal`) act on.
See `minikafka.cluster.netns` for the topology, names and how faults are made.

Layout of the data dir:

    cluster.json                 state: ports, pids, config overrides, network (`_save_state`)
    network-faults.json          the network faults in force (netns mode), for `status`
    zookeeper/                   LocalZooKeeper's config, data and log
    broker-<id>/server.properties
    broker-<id>/logs/            the broker's log.dirs
    broker-<id>/broker.log       the broker process's stdout and stderr
    broker-<id>/zk-session.json  the broker's current ZooKeeper session id and password
                                 (mode 0600), written by the broker, for `expire_session`

Everything another process needs (`minikafka cluster status`/`down`/`kill`, a later `up`)
is in `cluster.json`, so a `LocalCluster` built on an existing data dir picks up the ports,
pids and overrides saved there. Pids read from the file are only trusted (and signalled)
when `/proc/<pid>/cmdline` still names this broker's config file, so a recycled pid is
never hit. Each broker runs in its own session: a Ctrl-C in the terminal reaches only us,
and a signal we send reaches only that broker.

All waiting polls a condition against a deadline.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import ipaddress
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from minikafka.cluster import netns
from minikafka.cluster.errors import BrokerStartError as BrokerStartError
from minikafka.cluster.errors import ClusterError as ClusterError
from minikafka.cluster.errors import PortInUseError as PortInUseError
from minikafka.common import TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.controller.rebalance import partitions_to_rebalance
from minikafka.protocol.errors import InvalidConfigError
from minikafka.zk.client import BrokerInfo, ZkClient, ZkError, ZkNodeExistsError
from minikafka.zk.client import expire_session as zk_expire_session
from minikafka.zk.cluster_view import ZkClusterView
from minikafka.zk.server import (
    DEFAULT_INSTALL_DIR,
    LocalZooKeeper,
    ZooKeeperNotInstalledError,
    pick_free_port,
)

log = logging.getLogger(__name__)

STATE_FILE = "cluster.json"
# Where `minikafka cluster ...` keeps a cluster unless --data-dir says otherwise: one place
# per user (as rpk's profile), so every command finds it from any directory.
DATA_DIR_ENV = "MINIKAFKA_DATA_DIR"
DEFAULT_DATA_DIR_TEXT = f"${DATA_DIR_ENV}, else $XDG_DATA_HOME/minikafka/cluster"
# The default of earlier versions, relative to the current directory.
OLD_DEFAULT_DATA_DIR = Path("minikafka-data")


def user_data_home() -> Path:
    """$XDG_DATA_HOME/minikafka (XDG_DATA_HOME defaults to ~/.local/share): minikafka's
    per-user directory."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "minikafka"


def default_data_dir() -> Path:
    """$MINIKAFKA_DATA_DIR, else $XDG_DATA_HOME/minikafka/cluster."""
    explicit = os.environ.get(DATA_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    return user_data_home() / "cluster"


STATE_VERSION = 1
FAULTS_FILE = "network-faults.json"
ZK_SESSION_FILE = "zk-session.json"
# The broker writes its session there when this is set (minikafka.server.broker's
# ZK_SESSION_FILE_ENV; not imported, so that `minikafka cluster` starts fast).
ZK_SESSION_FILE_ENV = "MINIKAFKA_ZK_SESSION_FILE"
NetworkMode = Literal["loopback", "netns"]
NETWORK_MODES: tuple[NetworkMode, ...] = ("loopback", "netns")
DEFAULT_BROKERS = 3
DEFAULT_HOST = "127.0.0.1"
POLL_INTERVAL_S = 0.05

# The cluster sets these per broker; an override would make cluster.json (ports, dirs) lie.
MANAGED_KEYS = frozenset(
    {"broker.id", "listeners", "admin.listeners", "log.dirs", "log.dir", "zookeeper.connect"}
)

INSTALL_HINT = "apt-get install -y zookeeper"


def default_broker_command() -> list[str]:
    """The broker's command line without `--config`: the same Python that runs us."""
    return [sys.executable, "-m", "minikafka", "broker"]


def parse_overrides(items: Iterable[str]) -> tuple[dict[str, str], dict[int, dict[str, str]]]:
    """`key=value` (every broker) and `ID:key=value` (broker ID only) -> (all, per broker).

    Raises ValueError for malformed items and for keys the cluster manages itself.
    """
    common: dict[str, str] = {}
    per_broker: dict[int, dict[str, str]] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"expected key=value or ID:key=value, got {item!r}")
        target, colon, name = key.partition(":")
        if colon:
            # Java property names never contain ':', so a prefix can only be a broker id.
            if not target.strip().isdigit():
                raise ValueError(f"expected ID:key=value with a numeric broker id, got {item!r}")
            per_broker.setdefault(int(target), {})[name.strip()] = value.strip()
        else:
            common[key.strip()] = value.strip()
    check_overrides(common)
    for overrides in per_broker.values():
        check_overrides(overrides)
    return common, per_broker


def check_overrides(overrides: Mapping[str, str]) -> None:
    """Refuse, before anything starts, a property the cluster manages or a broker would
    refuse (unknown, or a bad value)."""
    managed = sorted(MANAGED_KEYS.intersection(overrides))
    if managed:
        raise ValueError(
            f"{', '.join(managed)} cannot be overridden: the cluster sets them per broker"
        )
    try:
        BrokerConfig.from_properties({"broker.id": "1", **overrides})
    except InvalidConfigError as e:
        raise ValueError(e.message) from None  # without the wire protocol's error name


def _port_accepts(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.5).close()
        return True
    except OSError:
        return False


# Linux's IP_FREEBIND (linux/in.h; Python names it from 3.12 on).
_IP_FREEBIND = getattr(socket, "IP_FREEBIND", 15)


def _bind_error(host: str, port: int, *, address_made_later: bool = False) -> OSError | None:
    """Why a listener could not bind host:port now; None if it could.

    `address_made_later`: the address is one that `start` adds itself (netns mode's gateway,
    on a bridge that does not exist yet). IP_FREEBIND lets the bind go ahead without it, so
    only a real conflict fails: a listener on that address or on all addresses."""
    # SO_REUSEADDR as asyncio's servers set it: a TIME_WAIT left by our previous broker on
    # this port must not count as "in use", only a listener does.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if address_made_later:
            s.setsockopt(socket.IPPROTO_IP, _IP_FREEBIND, 1)
        try:
            s.bind((host, port))
            return None
        except OSError as e:
            return e


def _proc_state(pid: int) -> str | None:
    """The state letter in /proc/<pid>/stat (R, S, T, Z, ...), None if there is no such pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may itself contain spaces and parentheses.
    fields = stat.rpartition(")")[2].split()
    return fields[0] if fields else None


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()[-lines:]
    except FileNotFoundError:
        return f"(no {path})"
    return f"--- last lines of {path} ---\n" + "\n".join(text)


class _ClusterZooKeeper(LocalZooKeeper):
    """LocalZooKeeper that notices a restart by another `minikafka cluster` command (e.g.
    `zookeeper restart` while `up` runs in the foreground): once the server we started has
    exited, the pid file, written by whoever started the current one, is the truth again."""

    @property
    def pid(self) -> int | None:
        self._forget_exited_child()
        return super().pid

    def _live_pid(self) -> int | None:
        self._forget_exited_child()
        return super()._live_pid()

    def _forget_exited_child(self) -> None:
        if self._proc is not None and self._proc.poll() is not None:
            self._proc = None


@dataclass
class _Broker:
    id: int
    port: int
    pid: int | None = None  # the last pid we started or read from cluster.json
    admin_port: int = 0  # its HTTP admin endpoint (admin.listeners)
    proc: subprocess.Popen[bytes] | None = None  # set when the process is our child


class LocalCluster:
    """ZooKeeper plus `brokers` broker processes (ids 1..n) under `data_dir`.

    On a data dir that already holds a `cluster.json`, the saved ports, overrides and broker
    command are kept; `brokers=None` means the saved broker count (else 3), and `overrides`
    given here are applied over the saved ones. `base_port=0` / `zookeeper_port=0` /
    `admin_base_port=0` pick free ports on the first start; brokers otherwise listen on
    base_port, base_port+1, ... and serve their HTTP admin endpoint (metrics, health) on
    admin_base_port, admin_base_port+1, ...
    `broker_overrides` maps a broker id to properties for that broker only.

    `network="netns"` (root only) runs each broker in its own network namespace at its own
    address of `subnet` (default: a free /24 of 198.18.0.0/15), so that network faults can
    be injected; `None` means the saved mode, else "loopback". `host` is loopback's address.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        brokers: int | None = None,
        *,
        base_port: int = 0,
        zookeeper_port: int = 0,
        admin_base_port: int = 0,
        overrides: Mapping[str, str] | None = None,
        broker_overrides: Mapping[int, Mapping[str, str]] | None = None,
        host: str = DEFAULT_HOST,
        zookeeper_fsync: bool = True,
        zookeeper_install_dir: str | os.PathLike[str] = DEFAULT_INSTALL_DIR,
        broker_command: Sequence[str] | None = None,
        network: NetworkMode | None = None,
        subnet: str | None = None,
    ) -> None:
        # Resolved: the config paths we match against /proc/<pid>/cmdline must be the same
        # whichever (relative, symlinked) spelling of the data dir a later command uses.
        self.data_dir = Path(data_dir).resolve()
        saved = self._load_state()
        saved_net: dict[str, Any] = saved.get("network") or {"mode": "loopback"}
        mode = network or saved_net.get("mode", "loopback")
        if mode not in NETWORK_MODES:
            raise ValueError(f"network must be one of {', '.join(NETWORK_MODES)}, got {mode!r}")
        self.network: NetworkMode = mode
        self._layout: netns.NetnsLayout | None = None
        self._subnet_auto = False
        if mode == "netns":
            if host != DEFAULT_HOST:
                raise ValueError("host applies to network='loopback' only; netns uses subnet=")
            self._layout, self._subnet_auto = self._netns_layout(saved_net, subnet)
            self.host: str = str(self._layout.gateway)
        else:
            if subnet is not None:
                raise ValueError("subnet applies to network='netns' only")
            self.host = saved.get("host", host) if saved_net.get("mode") == "loopback" else host
        self.base_port = base_port
        self.admin_base_port = admin_base_port
        self.overrides: dict[str, str] = dict(saved.get("overrides", {}))
        self.overrides.update(overrides or {})
        self.broker_overrides: dict[int, dict[str, str]] = {
            int(k): dict(v) for k, v in saved.get("broker_overrides", {}).items()
        }
        for bid, props in (broker_overrides or {}).items():
            self.broker_overrides.setdefault(bid, {}).update(props)
        check_overrides(self.overrides)
        for props in self.broker_overrides.values():
            check_overrides(props)
        self.broker_command: list[str] = list(
            broker_command or saved.get("broker_command") or default_broker_command()
        )
        saved_brokers = {int(b["id"]): b for b in saved.get("brokers", [])}
        count = brokers if brokers is not None else (len(saved_brokers) or DEFAULT_BROKERS)
        if count < 1:
            raise ValueError("a cluster needs at least one broker")
        self._brokers: dict[int, _Broker] = {}
        for bid in range(1, count + 1):
            b = saved_brokers.get(bid, {})
            self._brokers[bid] = _Broker(
                bid, int(b.get("port", 0)), b.get("pid"), admin_port=int(b.get("admin_port", 0))
            )
        saved_zk_port = int(saved.get("zookeeper", {}).get("port", 0))
        self.zookeeper: LocalZooKeeper = _ClusterZooKeeper(
            self.data_dir / "zookeeper",
            port=saved_zk_port or zookeeper_port,
            host=self.host,
            fsync=zookeeper_fsync,
            install_dir=zookeeper_install_dir,
        )
        self._zk_view: ZkClusterView | None = None

    def _netns_layout(
        self, saved_net: Mapping[str, Any], subnet: str | None
    ) -> tuple[netns.NetnsLayout, bool]:
        """(layout, whether the subnet was picked for us): the saved cluster id (so names
        stay put if the data dir moves), the given subnet, else the saved one, else a free
        one (checked again at `start`)."""
        cid = str(saved_net.get("id") or netns.cluster_id_for(self.data_dir))
        if subnet is not None:
            return netns.NetnsLayout(cid, netns.parse_subnet(subnet)), False
        if saved_net.get("mode") == "netns" and saved_net.get("subnet"):
            net = ipaddress.IPv4Network(saved_net["subnet"])
            return netns.NetnsLayout(cid, net), bool(saved_net.get("subnet_auto"))
        try:
            net = netns.pick_subnet(cid, own_links=[netns.bridge_name(cid)])
        except (ClusterError, OSError, ValueError):
            # No `ip` to look with: the first choice; `start` will say what is missing.
            net = netns.preferred_subnet(cid)
        return netns.NetnsLayout(cid, net), True

    # --- paths and simple properties ---------------------------------------------------

    @property
    def state_path(self) -> Path:
        return self.data_dir / STATE_FILE

    def broker_dir(self, broker_id: int) -> Path:
        return self.data_dir / f"broker-{broker_id}"

    def config_path(self, broker_id: int) -> Path:
        return self.broker_dir(broker_id) / "server.properties"

    def log_dir(self, broker_id: int) -> Path:
        return self.broker_dir(broker_id) / "logs"

    def broker_log_path(self, broker_id: int) -> Path:
        return self.broker_dir(broker_id) / "broker.log"

    def zk_session_path(self, broker_id: int) -> Path:
        return self.broker_dir(broker_id) / ZK_SESSION_FILE

    @property
    def faults_path(self) -> Path:
        return self.data_dir / FAULTS_FILE

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self._brokers)

    @property
    def broker_ports(self) -> dict[int, int]:
        """Port of each broker (0 for one that has never been started with a picked port)."""
        return {bid: b.port for bid, b in sorted(self._brokers.items())}

    def admin_url(self, broker_id: int) -> str:
        """Base URL of broker N's HTTP admin endpoint (`/metrics`, `/health`, `/v1/...`)."""
        return f"http://{self.broker_host(broker_id)}:{self._broker(broker_id).admin_port}"

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{self.broker_host(bid)}:{p}" for bid, p in self.broker_ports.items())

    def broker_host(self, broker_id: int) -> str:
        """The address broker N listens on and advertises: `host` in loopback mode, its
        namespace's address in netns mode (reachable from the root namespace)."""
        if self._layout is None:
            return self.host
        self._broker(broker_id)
        return str(self._layout.address(broker_id))

    def broker_address(self, broker_id: int) -> tuple[str, int]:
        return self.broker_host(broker_id), self._broker(broker_id).port

    def broker_netns(self, broker_id: int) -> str | None:
        """Name of broker N's network namespace (`ip netns list`); None in loopback mode."""
        return None if self._layout is None else self._layout.netns(broker_id)

    def netns_command(self, broker_id: int, argv: Sequence[str]) -> list[str]:
        """`argv` run inside broker N's network namespace (root only), e.g. a client on the
        broker's side of a partition: `subprocess.run(cluster.netns_command(2, [...]))`."""
        layout = self._require_netns("running a command in a broker's namespace")
        self._broker(broker_id)
        netns.require_privileges()
        return [*netns.exec_prefix(layout, broker_id), *argv]

    @property
    def zookeeper_connect(self) -> str:
        return self.zookeeper.connect_string

    def broker_properties(self, broker_id: int) -> dict[str, str]:
        """What `server.properties` of this broker says: ours, then the overrides."""
        b = self._broker(broker_id)
        props = {
            "broker.id": str(broker_id),
            "listeners": f"PLAINTEXT://{self.broker_host(broker_id)}:{b.port}",
            "admin.listeners": f"http://{self.broker_host(broker_id)}:{b.admin_port}",
            "log.dirs": str(self.log_dir(broker_id)),
            "zookeeper.connect": self.zookeeper.connect_string,
            # As Kafka's development server.properties: groups form at once, and the offsets
            # topic fits a cluster of fewer than three brokers.
            "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.replication.factor": str(min(3, len(self._brokers))),
        }
        props.update(self.overrides)
        props.update(self.broker_overrides.get(broker_id, {}))
        return props

    # --- lifecycle ---------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> None:
        """Start ZooKeeper, then every broker; return once all are registered and a
        controller is elected. On failure everything started is stopped again."""
        deadline = time.monotonic() + timeout
        self.check_installed()
        if self._layout is not None:
            netns.require_privileges()
        running = self._saved_running()
        if running:
            raise ClusterError(
                f"the cluster in {self.data_dir} is already running ({', '.join(running)}); "
                "`minikafka cluster status` shows it, `minikafka cluster down` stops it"
            )
        # Before anything starts or is written: a taken port is named with the flag that
        # moves it, not found in a ZooKeeper or broker log after half the cluster started.
        self._check_ports_free()
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self._save_state()  # from here on, `cluster down` finds whatever we start
            self._network_up()
            self.zookeeper.start(timeout=max(1.0, deadline - time.monotonic()))
            # After ZooKeeper, so that a port it picked is not also given to a broker.
            self._assign_ports()
            self._save_state()
            zk = self.zk_client()
            zk.ensure_persistent_paths()
            # Registrations and a /controller left by a crashed run survive in ZooKeeper's
            # data until their sessions expire: only newer ones count as this start's.
            before = {bid: info.epoch for bid, info in zk.get_all_brokers().items()}
            epoch = zk.get_controller_epoch()
            for bid in self.broker_ids:
                self._spawn(self._brokers[bid])
            self._save_state()
            self.wait_for_registered(self.broker_ids, self._left(deadline), newer_than=before)
            self.wait_for_controller(self._left(deadline), min_epoch=(epoch[0] if epoch else 0) + 1)
            self.wait_for_metadata(self.broker_ids, self._left(deadline))
            self.balance_leaders(self._left(deadline))
        except BaseException:
            # Includes KeyboardInterrupt: a Ctrl-C during `cluster up` leaves nothing behind.
            with contextlib.suppress(Exception):
                self.stop(timeout=10.0)
            raise

    def stop(self, timeout: float = 30.0, progress: Callable[[str], None] | None = None) -> None:
        """SIGTERM every broker (the controller last, so the others' controlled shutdowns
        go to a live controller and no election runs), SIGKILL any still running after
        `timeout` seconds, then stop ZooKeeper. In netns mode, network faults are healed
        first (a controlled shutdown needs the controller) and the namespaces, links and
        bridge are removed last. `progress` hears what is being waited for."""
        say = progress or (lambda _: None)
        if self._layout is not None:
            netns.require_privileges()
            with contextlib.suppress(ClusterError):
                self.heal()
        alive = [b for b in self._brokers.values() if self._live_pid(b) is not None]
        controller = self._current_controller() if alive else None
        first = [b for b in alive if b.id != controller]
        last = [b for b in alive if b.id == controller]
        for group, role in ((first, ""), (last, " (the controller)")):
            if group:
                ids = ", ".join(str(b.id) for b in group)
                say(
                    f"stopping broker{'s' if len(group) > 1 else ''} {ids}{role}: controlled "
                    "shutdown, checkpoints, clean close…"
                )
            self._terminate_all(group, timeout)
        self.close_zk_client()
        say("stopping ZooKeeper…")
        self.zookeeper.stop()
        self._network_down()
        self._save_state()

    def kill_all(self) -> None:
        """SIGKILL every broker and ZooKeeper (when a clean stop is not wanted or hangs);
        in netns mode, then remove the namespaces, links and bridge."""
        if self._layout is not None:
            netns.require_privileges()
        for b in self._brokers.values():
            pid = self._live_pid(b)
            if pid is not None:
                _signal(pid, signal.SIGKILL)
                self._wait_exit(b, pid, 10.0)
        self.close_zk_client()
        self.zookeeper.kill()
        self._network_down()
        self._save_state()

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def check_installed(self) -> None:
        """Raise ZooKeeperNotInstalledError, with the install command, if Debian's
        ZooKeeper is missing."""
        script = self.zookeeper.install_dir / "bin" / "zkServer.sh"
        if not script.is_file():
            raise ZooKeeperNotInstalledError(
                f"ZooKeeper is not installed ({script} not found). minikafka runs Debian's "
                f"ZooKeeper; install it with `{INSTALL_HINT}` (as root)."
            )

    # --- single brokers ----------------------------------------------------------------

    def start_broker(
        self, broker_id: int, *, wait: bool = True, timeout: float = 60.0
    ) -> BrokerInfo | None:
        """Start a stopped broker (an id beyond the current ones adds a broker) with its
        saved port and config; with `wait`, return its registration once it is ready."""
        if broker_id not in self._brokers:
            if broker_id < 1:
                raise ValueError(f"broker ids start at 1, got {broker_id}")
            self._brokers[broker_id] = _Broker(broker_id, 0)
            self._assign_ports()
        b = self._brokers[broker_id]
        pid = self._live_pid(b)
        if pid is not None:
            raise ClusterError(f"broker {broker_id} is already running (pid {pid})")
        if not self.zookeeper.is_running():
            raise ClusterError(f"ZooKeeper of {self.data_dir} is not running")
        # A registration left by a killed process stays until its session expires; the new
        # one has a larger czxid (the broker epoch).
        old = self._registration(broker_id)
        self._spawn(b)
        self._save_state()
        if not wait:
            return None
        newer = {broker_id: old.epoch} if old is not None else None
        return self.wait_for_registered([broker_id], timeout, newer_than=newer)[broker_id]

    def restart(self, broker_id: int, timeout: float = 60.0) -> BrokerInfo:
        """Stop the broker if it runs (SIGTERM), start it again with the same config and
        port, and return its new registration (with a larger broker epoch)."""
        deadline = time.monotonic() + timeout
        if self.is_alive(broker_id):
            self.terminate(broker_id, timeout=timeout)
        info = self.start_broker(broker_id, timeout=self._left(deadline))
        assert info is not None
        return info

    def kill(self, broker_id: int) -> None:
        """SIGKILL, as a crash would; returns once the process is gone."""
        b, pid = self._running(broker_id)
        _signal(pid, signal.SIGKILL)
        if not self._wait_exit(b, pid, 10.0):
            raise ClusterError(f"broker {broker_id} (pid {pid}) survived SIGKILL for 10s")
        self._save_state()

    def terminate(self, broker_id: int, timeout: float = 30.0) -> int | None:
        """SIGTERM (controlled shutdown) and wait for the exit; returns the exit code (None
        if the process is not our child). After `timeout` it is killed and ClusterError
        raised: a broker that cannot shut down is a bug worth seeing."""
        b, pid = self._running(broker_id)
        _signal(pid, signal.SIGTERM)
        _signal(pid, signal.SIGCONT)  # a paused broker would never see the SIGTERM
        if not self._wait_exit(b, pid, timeout):
            _signal(pid, signal.SIGKILL)
            self._wait_exit(b, pid, 10.0)
            self._save_state()
            raise ClusterError(
                f"broker {broker_id} (pid {pid}) did not exit within {timeout}s of SIGTERM; "
                f"killed it.\n{self.log_tail(broker_id)}"
            )
        self._save_state()
        return self.returncode(broker_id)

    def pause(self, broker_id: int) -> None:
        """SIGSTOP: the process freezes (its ZooKeeper session expires after the timeout)."""
        _, pid = self._running(broker_id)
        _signal(pid, signal.SIGSTOP)
        self._await(lambda: self.is_paused(broker_id), 5.0, f"broker {broker_id} to stop")

    def resume(self, broker_id: int) -> None:
        """SIGCONT after `pause`."""
        _, pid = self._running(broker_id)
        _signal(pid, signal.SIGCONT)
        self._await(lambda: not self.is_paused(broker_id), 5.0, f"broker {broker_id} to resume")

    def pid(self, broker_id: int) -> int | None:
        """Pid of the running broker process, None if it is not running."""
        return self._live_pid(self._broker(broker_id))

    def is_alive(self, broker_id: int) -> bool:
        """The process exists (it may be paused)."""
        return self.pid(broker_id) is not None

    def is_paused(self, broker_id: int) -> bool:
        pid = self.pid(broker_id)
        return pid is not None and _proc_state(pid) in ("T", "t")

    def returncode(self, broker_id: int, pid: int | None = None) -> int | None:
        """Exit code of the last process we started for this broker (negative: killed by
        that signal); None while it runs or if it was started by another process. With
        `pid`: None unless that process was the one we started (another command may have
        restarted the broker since, and its exit code is not ours to know)."""
        proc = self._broker(broker_id).proc
        if proc is None or (pid is not None and proc.pid != pid):
            return None
        return proc.poll()

    def log_tail(self, broker_id: int, lines: int = 40) -> str:
        return _tail(self.broker_log_path(broker_id), lines)

    def log_tails(self, lines: int = 40) -> str:
        """Tails of every broker's log and of ZooKeeper's, for failure reports."""
        parts = [self.log_tail(bid, lines) for bid in self.broker_ids]
        parts.append(_tail(self.zookeeper.log_path, lines))
        return "\n".join(parts)

    # --- network faults (netns mode) -----------------------------------------------------
    #
    # Each broker has at most one cut and one degrade; a new one replaces the old. They act
    # on the broker's own link (see minikafka.cluster.netns), outlive its restarts, and are
    # recorded in network-faults.json for `status` and for other `minikafka cluster` commands.

    def partition_from_brokers(self, broker_id: int) -> None:
        """Cut broker N off from the other brokers only, both ways (packets are dropped, not
        refused). It keeps its ZooKeeper session, its registration and its clients, and goes
        on leading what it led: the Jepsen 2013 case. Until `heal`."""
        self._set_fault(broker_id, cut="brokers")

    def isolate(self, broker_id: int) -> None:
        """Cut broker N off from everything: the other brokers, ZooKeeper (its session
        expires after zookeeper.session.timeout.ms) and clients in the root namespace
        (`netns_command` runs a client on its side). Until `heal`."""
        self._set_fault(broker_id, cut="all")

    def degrade(
        self,
        broker_id: int,
        *,
        delay_ms: float = 0.0,
        jitter_ms: float = 0.0,
        loss_pct: float = 0.0,
    ) -> None:
        """Delay (± jitter) every packet to and from broker N, and drop `loss_pct` percent of
        them: tc netem on both ends of its link, so a round trip to it takes 2 × delay_ms
        more. Needs a kernel with sch_netem (ClusterError otherwise). Until `heal`."""
        if min(delay_ms, jitter_ms, loss_pct) < 0 or loss_pct > 100:
            raise ValueError("delay_ms and jitter_ms must be >= 0, loss_pct within 0..100")
        if not (delay_ms or jitter_ms or loss_pct):
            raise ValueError("degrade needs a delay, a jitter or a loss")
        params = {"delay_ms": delay_ms, "jitter_ms": jitter_ms, "loss_pct": loss_pct}
        self._set_fault(broker_id, degrade=params)

    def heal(self, broker_id: int | None = None) -> None:
        """Undo every network fault of broker N (cut and degrade), or of all brokers. Dropped
        connections are not reset: TCP retransmits on them, or the peers' timeouts close them."""
        layout = self._require_netns("network faults")
        netns.require_privileges()
        with self._locked():
            faults = self._load_faults()
            ids = sorted({*self.broker_ids, *faults}) if broker_id is None else [broker_id]
            if broker_id is not None:
                self._broker(broker_id)
            for bid in ids:
                netns.set_cut(layout, bid, None)
                netns.clear_degrade(layout, bid)
                faults.pop(bid, None)
            self._save_faults(faults)

    def network_faults(self) -> dict[int, dict[str, Any]]:
        """The faults in force, per broker that has one: `{"cut": "brokers" | "all",
        "degrade": {"delay_ms", "jitter_ms", "loss_pct"}}` (either key may be missing)."""
        return self._load_faults()

    def _require_netns(self, what: str) -> netns.NetnsLayout:
        if self._layout is None:
            raise ClusterError(
                f"{what} need network='netns' (`minikafka cluster up --network netns`, as "
                f"root); the cluster in {self.data_dir} runs on loopback"
            )
        return self._layout

    def _set_fault(
        self,
        broker_id: int,
        *,
        cut: netns.Cut | None = None,
        degrade: dict[str, float] | None = None,
    ) -> None:
        layout = self._require_netns("network faults")
        self._broker(broker_id)
        netns.require_privileges()
        with self._locked():
            faults = self._load_faults()
            entry = faults.setdefault(broker_id, {})
            if cut is not None:
                netns.set_cut(layout, broker_id, cut)
                entry["cut"] = cut
            if degrade is not None:
                netns.set_degrade(layout, broker_id, **degrade)
                entry["degrade"] = degrade
            self._save_faults(faults)

    def _load_faults(self) -> dict[int, dict[str, Any]]:
        try:
            data = json.loads(self.faults_path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            raise ClusterError(f"cannot read {self.faults_path}: {e}") from e
        return {int(k): dict(v) for k, v in data.get("brokers", {}).items()}

    def _save_faults(self, faults: Mapping[int, Mapping[str, Any]]) -> None:
        brokers = {str(bid): dict(f) for bid, f in sorted(faults.items()) if f}
        tmp = self.faults_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps({"version": 1, "brokers": brokers}, indent=2) + "\n")
        os.replace(tmp, self.faults_path)

    # --- ZooKeeper session and process ---------------------------------------------------

    def expire_session(self, broker_id: int, timeout: float = 10.0) -> int:
        """Expire broker N's ZooKeeper session now, as a long pause would: attach a second
        client to the session (id and password from the broker's zk-session.json) and close
        it. Its registration and any /controller of it vanish at once; the broker learns at
        its next ping, gets a new session and registers again with a new broker epoch (wait
        with `wait_for_registered(..., newer_than=...)`). Returns the expired session id."""
        _, pid = self._running(broker_id)
        path = self.zk_session_path(broker_id)
        try:
            record = json.loads(path.read_text())
            session_id, owner = int(record["session_id"]), int(record["pid"])
            password = bytes.fromhex(record["password"])
        except FileNotFoundError:
            raise ClusterError(
                f"broker {broker_id} (pid {pid}) has not published a ZooKeeper session "
                f"({path} is missing): it is still starting, or not a minikafka broker"
            ) from None
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ClusterError(f"cannot read {path}: {e!r}") from e
        if owner != pid:
            raise ClusterError(
                f"{path} is from pid {owner}, not from broker {broker_id}'s process {pid}"
            )
        if not self.zookeeper.is_running():
            raise ClusterError(f"ZooKeeper of {self.data_dir} is not running")
        try:
            zk_expire_session(self.zookeeper.connect_string, (session_id, password), timeout)
        except ZkError as e:
            raise ClusterError(
                f"could not expire session 0x{session_id:x} of broker {broker_id}: {e}"
            ) from e
        log.info("expired broker %d's ZooKeeper session 0x%x", broker_id, session_id)
        return session_id

    def stop_zookeeper(self, timeout: float = 10.0) -> None:
        """SIGTERM ZooKeeper (SIGKILL after `timeout`); the brokers run on, disconnected.
        Sessions are kept in its data: brokers that reconnect within their session timeout
        of a restart keep theirs."""
        self.close_zk_client()
        self.zookeeper.stop(timeout=timeout)
        self._save_state()

    def kill_zookeeper(self) -> None:
        """SIGKILL ZooKeeper, as a crash would."""
        self.close_zk_client()
        self.zookeeper.kill()
        self._save_state()

    def start_zookeeper(self, timeout: float = 30.0) -> None:
        """Start a stopped ZooKeeper on its port and data; return once it serves."""
        if self._layout is not None:
            netns.require_privileges()
            if self._layout.bridge not in netns.link_names():
                raise ClusterError(
                    f"the network of the cluster in {self.data_dir} is down (no bridge "
                    f"{self._layout.bridge}); `start` brings the whole cluster up"
                )
        self.zookeeper.start(timeout=timeout)
        self._save_state()

    def restart_zookeeper(self, timeout: float = 30.0, *, kill: bool = False) -> None:
        """Stop (SIGTERM, or SIGKILL with `kill`) and start ZooKeeper again."""
        if kill:
            self.kill_zookeeper()
        else:
            self.stop_zookeeper(timeout=timeout)
        self.start_zookeeper(timeout=timeout)

    # --- ZooKeeper view ----------------------------------------------------------------

    def zk_client(self) -> ZkClient:
        """A started client on this cluster's ZooKeeper (closed by `stop`)."""
        return self._view().client()

    def _view(self) -> ZkClusterView:
        if self._zk_view is None:
            if not self.zookeeper.is_running():
                raise ClusterError(f"ZooKeeper of {self.data_dir} is not running")
            self._zk_view = ZkClusterView(self.zookeeper.connect_string)
        return self._zk_view

    def close_zk_client(self) -> None:
        if self._zk_view is not None:
            self._zk_view.close()
            self._zk_view = None

    def wait_for_registered(
        self,
        broker_ids: Iterable[int],
        timeout: float = 60.0,
        *,
        newer_than: Mapping[int, int] | None = None,
    ) -> dict[int, BrokerInfo]:
        """Wait until each broker is registered in ZooKeeper with its port (and an epoch
        above `newer_than[id]`, if given) and its port accepts connections. Raises
        BrokerStartError, with the log tail, if one exits or the deadline passes."""
        ids = sorted(set(broker_ids))
        newer = dict(newer_than or {})
        deadline = time.monotonic() + timeout
        while True:
            for bid in ids:
                b = self._broker(bid)
                if b.proc is not None and self._live_pid(b) is None:
                    raise BrokerStartError(
                        f"broker {bid} (pid {b.proc.pid}) exited with code "
                        f"{b.proc.returncode} before it was ready.\n{self.log_tail(bid)}"
                    )
            regs = self._registrations()
            ready = {
                bid: regs[bid]
                for bid in ids
                if bid in regs
                and regs[bid].port == self._brokers[bid].port
                and regs[bid].epoch > newer.get(bid, -1)
                and _port_accepts(self.broker_host(bid), self._brokers[bid].port)
            }
            if len(ready) == len(ids):
                return ready
            if time.monotonic() >= deadline:
                missing = [bid for bid in ids if bid not in ready]
                tails = "\n".join(self.log_tail(bid) for bid in missing)
                raise BrokerStartError(
                    f"broker(s) {missing} not registered in ZooKeeper and listening after "
                    f"{timeout:.1f}s.\n{tails}"
                )
            time.sleep(POLL_INTERVAL_S)

    def wait_for_metadata(self, broker_ids: Iterable[int], timeout: float = 60.0) -> None:
        """Wait until each broker's metadata (what it answers clients, fed by the
        controller's UpdateMetadata) names a controller and every one of these brokers. A
        client that bootstraps before then is told of no controller; librdkafka's admin
        client can then wait for one for the whole of its request timeout."""
        ids = sorted(set(broker_ids))

        def known() -> bool:
            for bid in ids:
                try:
                    with urllib.request.urlopen(f"{self.admin_url(bid)}/v1/broker", timeout=2) as r:
                        meta = json.load(r)["metadata"]
                except (OSError, ValueError, KeyError):
                    return False
                if meta["controller_id"] < 0 or not set(ids) <= set(meta["live_brokers"]):
                    return False
            return True

        self._await(known, timeout, f"broker(s) {ids} to receive the cluster's metadata")

    def balance_leaders(self, timeout: float) -> list[TopicPartition]:
        """Give each partition back to its preferred replica (the first assigned), as Kafka's
        preferred replica election does, once that replica is back in the ISR; returns the
        partitions still led by another broker when `timeout` has passed.

        A cluster started again brings its brokers up one by one: the first to register
        leads every partition whose leader is not up yet, and, without this, keeps them
        until the controller's auto rebalance (leader.imbalance.check.interval.seconds,
        300 s)."""
        zk = self.zk_client()
        deadline = time.monotonic() + timeout
        while True:
            live = set(zk.get_all_brokers())
            assignments = {
                TopicPartition(t, p): replicas
                for t, by_partition in zk.get_assignments(zk.get_all_topics()).items()
                for p, replicas in by_partition.items()
            }
            states = zk.get_partition_states(assignments)
            led_elsewhere = [
                tp
                for tp, replicas in assignments.items()
                if replicas
                and replicas[0] in live
                and tp in states
                and states[tp].leader != replicas[0]
            ]
            if not led_elsewhere or time.monotonic() >= deadline:
                return led_elsewhere
            # Those whose preferred replica is in the ISR (the others are still catching up).
            ready = partitions_to_rebalance(assignments, states, live, 0)
            if ready:
                # Still there while the controller works on the last request: ask after it.
                with contextlib.suppress(ZkNodeExistsError):
                    zk.create_preferred_replica_election(ready)
            time.sleep(POLL_INTERVAL_S)

    def wait_for_unregistered(self, broker_ids: Iterable[int], timeout: float = 60.0) -> None:
        """Wait until none of these brokers is registered (e.g. a killed broker's session
        has expired)."""
        ids = set(broker_ids)

        def gone() -> bool:
            regs = self._read_registrations()
            return regs is not None and not ids.intersection(regs)

        self._await(
            gone,
            timeout,
            f"broker(s) {sorted(ids)} to leave /brokers/ids",
        )

    def wait_for_controller(
        self, timeout: float = 60.0, exclude: Collection[int] = (), min_epoch: int = 0
    ) -> tuple[int, int]:
        """Wait for a controller that is a registered broker, not in `exclude`, with a
        controller epoch >= `min_epoch`; returns (controller id, controller epoch)."""
        found: list[tuple[int, int]] = []

        def elected() -> bool:
            got = self.controller()
            if got is None or got[0] in exclude or got[1] < min_epoch:
                return False
            if got[0] not in self._registrations():
                return False
            found.append(got)
            return True

        what = "a controller" + (f" other than {sorted(exclude)}" if exclude else "")
        self._await(elected, timeout, what)
        return found[-1]

    def controller(self) -> tuple[int, int] | None:
        """(controller id, controller epoch) as ZooKeeper has them now, or None."""
        try:
            return self._view().controller()
        except ClusterError:
            return None

    def registrations(self) -> dict[int, BrokerInfo]:
        """Live registrations in `/brokers/ids` (any id), empty if ZooKeeper is down."""
        return self._registrations()

    # --- status ------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """ZooKeeper and every broker: id, host, port, netns, network faults, pid, alive,
        paused, registered, broker epoch, controller; plus the controller and its epoch, and
        the network (mode; in netns mode the subnet, gateway, bridge). JSON-serialisable."""
        zk_alive = self.zookeeper.is_running()
        regs: dict[int, BrokerInfo] = {}
        ctrl: tuple[int, int] | None = None
        if zk_alive:
            regs = self.registrations()
            ctrl = self.controller()
        faults = self._load_faults() if self._layout is not None else {}
        brokers = []
        for bid in self.broker_ids:
            pid = self.pid(bid)
            reg = regs.get(bid)
            brokers.append(
                {
                    "id": bid,
                    "host": self.broker_host(bid),
                    "port": self._brokers[bid].port,
                    "admin_url": self.admin_url(bid),
                    "netns": self.broker_netns(bid),
                    "faults": faults.get(bid, {}),
                    "pid": pid,
                    "alive": pid is not None,
                    "paused": self.is_paused(bid),
                    "registered": reg is not None,
                    "epoch": None if reg is None else reg.epoch,
                    "controller": ctrl is not None and ctrl[0] == bid,
                    "log": str(self.broker_log_path(bid)),
                }
            )
        return {
            "data_dir": str(self.data_dir),
            "bootstrap_servers": self.bootstrap_servers,
            "zookeeper": {
                "connect": self.zookeeper.connect_string,
                "port": self.zookeeper.port,
                "pid": self.zookeeper.pid if zk_alive else None,
                "alive": zk_alive,
            },
            "controller": None if ctrl is None else {"id": ctrl[0], "epoch": ctrl[1]},
            "network": self._network_state(),
            "brokers": brokers,
        }

    # --- internals: processes ----------------------------------------------------------

    def _broker(self, broker_id: int) -> _Broker:
        try:
            return self._brokers[broker_id]
        except KeyError:
            raise ClusterError(
                f"no broker {broker_id} in this cluster (brokers: {self.broker_ids})"
            ) from None

    def _running(self, broker_id: int) -> tuple[_Broker, int]:
        b = self._broker(broker_id)
        pid = self._live_pid(b)
        if pid is None:
            raise ClusterError(f"broker {broker_id} is not running")
        return b, pid

    def _is_our_broker(self, b: _Broker, pid: int) -> bool:
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False  # gone; a zombie has an empty cmdline and fails below too
        return str(self.config_path(b.id)).encode() in args

    def _live_pid(self, b: _Broker) -> int | None:
        if b.proc is not None and b.proc.poll() is None:
            return b.proc.pid
        # Not (or no longer) our child: another `minikafka cluster` command may have
        # started it, and cluster.json then has its pid.
        for pid in (b.pid, self._saved_pid(b.id)):
            ours_dead = b.proc is not None and pid == b.proc.pid
            if pid is not None and not ours_dead and self._is_our_broker(b, pid):
                return pid
        return None

    def _spawn(self, b: _Broker) -> None:
        self.log_dir(b.id).mkdir(parents=True, exist_ok=True)
        if self._layout is not None:
            # A namespace of its own: nothing else can hold its port there.
            netns.add_broker(self._layout, b.id)
        else:
            for what, port in (("port", b.port), ("admin port", b.admin_port)):
                error = _bind_error(self.host, port)
                if error is not None and error.errno == errno.EADDRINUSE:
                    raise BrokerStartError(
                        f"{what} {port} of broker {b.id} is in use by another process "
                        f"(another Kafka or minikafka?); see `ss -ltnp 'sport = :{port}'`"
                    )
                if error is not None:
                    raise BrokerStartError(
                        f"broker {b.id} cannot listen on {self.host}:{port}: {error.strerror}"
                    )
        props = self.broker_properties(b.id)
        self.config_path(b.id).write_text(
            "# Written by `minikafka cluster` at every start; edit the cluster's overrides "
            "instead.\n" + "".join(f"{k}={v}\n" for k, v in props.items())
        )
        cmd = [*self.broker_command, "--config", str(self.config_path(b.id))]
        if self._layout is not None:
            cmd = [*netns.exec_prefix(self._layout, b.id), *cmd]
        # The previous process's session is of no use to expire_session.
        self.zk_session_path(b.id).unlink(missing_ok=True)
        env = dict(
            os.environ,
            PYTHONUNBUFFERED="1",  # broker.log must be current on a crash
            **{ZK_SESSION_FILE_ENV: str(self.zk_session_path(b.id))},
        )
        with open(self.broker_log_path(b.id), "ab") as out:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            out.write(f"\n=== {stamp} minikafka cluster: {' '.join(cmd)}\n".encode())
            out.flush()
            try:
                b.proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=os.getcwd(),
                    env=env,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as e:
                raise BrokerStartError(f"cannot run broker {b.id} ({' '.join(cmd)}): {e}") from e
        b.pid = b.proc.pid
        log.info("started broker %d pid %d on %s:%d", b.id, b.pid, self.broker_host(b.id), b.port)

    def _wait_exit(self, b: _Broker, pid: int, timeout: float) -> bool:
        """Wait for this pid (not for the broker: another command may start it again)."""
        if b.proc is not None and b.proc.pid == pid:
            try:
                b.proc.wait(timeout=timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        # Not our child: gone, or a zombie its parent has not reaped yet (empty cmdline).
        return self._poll(lambda: not self._is_our_broker(b, pid), timeout)

    def _terminate_all(self, group: list[_Broker], timeout: float) -> None:
        pids = [(b, pid) for b in group if (pid := self._live_pid(b)) is not None]
        for _, pid in pids:
            _signal(pid, signal.SIGTERM)
            _signal(pid, signal.SIGCONT)  # a paused broker would never see the SIGTERM
        deadline = time.monotonic() + timeout
        for b, pid in pids:
            if not self._wait_exit(b, pid, self._left(deadline)):
                log.warning(
                    "broker %d (pid %d) ignored SIGTERM for %.0fs; killing it", b.id, pid, timeout
                )
                _signal(pid, signal.SIGKILL)
                self._wait_exit(b, pid, 10.0)

    def _check_ports_free(self) -> None:
        """PortInUseError naming every fixed port that another process listens on, and the
        `minikafka cluster up` option that moves it. Picked ports (0) are free by choice;
        in netns mode each broker's ports are in a namespace of its own, and ZooKeeper's
        address is the bridge's, which `start` has yet to add."""
        wanted: list[tuple[str, int, str]] = []
        if self.zookeeper.port:
            wanted.append(("ZooKeeper's port", self.zookeeper.port, "--zookeeper-port"))
        if self._layout is None:
            for bid in self.broker_ids:
                b = self._brokers[bid]
                port = b.port or (self.base_port + bid - 1 if self.base_port else 0)
                admin = b.admin_port or (
                    self.admin_base_port + bid - 1 if self.admin_base_port else 0
                )
                if port:
                    wanted.append((f"broker {bid}'s port", port, "--port"))
                if admin:
                    wanted.append((f"broker {bid}'s admin port", admin, "--admin-port"))
        made_later = self._layout is not None
        taken: list[tuple[str, int, str]] = []
        for what, port, flag in wanted:
            error = _bind_error(self.host, port, address_made_later=made_later)
            if error is None:
                continue
            if error.errno != errno.EADDRINUSE:
                # Not a port another process holds (an address this machine does not have,
                # a privileged port): no other port would help.
                raise ClusterError(f"{what} {port}: cannot listen on {self.host}: {error.strerror}")
            taken.append((what, port, flag))
        if taken:
            lines = [
                f"{what} {port} ({self.host}) is in use by another process"
                for what, port, _ in taken
            ]
            flags = sorted({flag for _, _, flag in taken})
            raise PortInUseError(
                "; ".join(lines)
                + f". Stop what holds it (`ss -ltnp 'sport = :{taken[0][1]}'` shows it), or "
                + "move it with "
                + " and ".join(f"`minikafka cluster up {f} PORT`" for f in flags)
                + " (0 picks free ports)"
            )

    def _assign_ports(self) -> None:
        """Ports for brokers that have none yet: the Kafka port, then the admin one."""
        taken = {p for b in self._brokers.values() for p in (b.port, b.admin_port) if p}
        taken.add(self.zookeeper.port)

        def pick(base: int, bid: int) -> int:
            if base:
                return base + bid - 1
            # Kernel-chosen ports are handed out in turn, so repeats are rare; skip them.
            port = pick_free_port(self.host)
            while port in taken:
                port = pick_free_port(self.host)
            return port

        for bid in self.broker_ids:
            b = self._brokers[bid]
            if not b.port:
                b.port = pick(self.base_port, bid)
                taken.add(b.port)
            if not b.admin_port:
                b.admin_port = pick(self.admin_base_port, bid)
                taken.add(b.admin_port)

    def _saved_running(self) -> list[str]:
        """What the saved state says runs and still does (ZooKeeper, broker ids)."""
        running = [f"ZooKeeper pid {self.zookeeper.pid}"] if self.zookeeper.is_running() else []
        state = self._load_state()
        for entry in state.get("brokers", []):
            b = _Broker(int(entry["id"]), int(entry.get("port", 0)), entry.get("pid"))
            if b.pid is not None and self._is_our_broker(b, b.pid):
                running.append(f"broker {b.id} pid {b.pid}")
        return running

    # --- internals: network (netns mode) ------------------------------------------------

    def _network_up(self) -> None:
        """Remove what a crashed run left, move off a subnet someone else took since it was
        picked, then make the bridge and one namespace per broker."""
        layout = self._layout
        if layout is None:
            return
        netns.teardown(layout, self._is_our_process)
        conflicts = netns.subnet_conflicts(layout.subnet, [layout.bridge])
        if conflicts:
            if not self._subnet_auto:
                raise ClusterError(
                    f"subnet {layout.subnet} is already in use here ({'; '.join(conflicts)}); "
                    "choose another one"
                )
            subnet = netns.pick_subnet(layout.cluster_id, own_links=[layout.bridge])
            log.info("subnet %s is in use; taking %s", layout.subnet, subnet)
            layout = netns.NetnsLayout(layout.cluster_id, subnet)
            self._layout = layout
            self.host = self.zookeeper.host = str(layout.gateway)
        with self._locked():
            self._save_faults({})
        netns.setup_bridge(layout)
        for bid in self.broker_ids:
            netns.add_broker(layout, bid)
        self._save_state()

    def _network_down(self) -> None:
        if self._layout is None:
            return
        netns.teardown(self._layout, self._is_our_process)
        with self._locked():
            self.faults_path.unlink(missing_ok=True)

    def _is_our_process(self, pid: int) -> bool:
        """A process whose command line names a file of this data dir (our brokers)."""
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        prefix = str(self.data_dir).encode() + b"/"
        return any(a.startswith(prefix) for a in args)

    # --- internals: ZooKeeper ----------------------------------------------------------

    def _read_registrations(self) -> dict[int, BrokerInfo] | None:
        """None when ZooKeeper cannot be read (down, or not answering right now)."""
        try:
            return self._view().read_registrations()
        except ClusterError:
            return None

    def _registrations(self) -> dict[int, BrokerInfo]:
        return self._read_registrations() or {}

    def _registration(self, broker_id: int) -> BrokerInfo | None:
        return self._registrations().get(broker_id)

    def _current_controller(self) -> int | None:
        if not self.zookeeper.is_running():
            return None
        got = self.controller()
        return None if got is None else got[0]

    # --- internals: state file ---------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        # Several `minikafka cluster` commands may update cluster.json at once (a fault
        # command while `up` runs in the foreground).
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with open(self.data_dir / ".cluster.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _network_state(self) -> dict[str, Any]:
        if self._layout is None:
            return {"mode": "loopback"}
        return {
            "mode": "netns",
            "id": self._layout.cluster_id,
            "subnet": str(self._layout.subnet),
            "subnet_auto": self._subnet_auto,
            "gateway": str(self._layout.gateway),
            "bridge": self._layout.bridge,
        }

    def _load_state(self) -> dict[str, Any]:
        try:
            state: dict[str, Any] = json.loads(self.state_path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            raise ClusterError(f"cannot read {self.state_path}: {e}") from e
        if state.get("version") != STATE_VERSION:
            raise ClusterError(
                f"{self.state_path} has version {state.get('version')!r}, expected {STATE_VERSION}"
            )
        return state

    def _saved_pid(self, broker_id: int) -> int | None:
        with contextlib.suppress(ClusterError):
            for entry in self._load_state().get("brokers", []):
                if int(entry["id"]) == broker_id:
                    pid = entry.get("pid")
                    return None if pid is None else int(pid)
        return None

    def _save_state(self) -> None:
        """Write cluster.json atomically. Pids are the live ones, so a broker another
        command restarted (and saved) is not forgotten by our stale view."""
        with self._locked():
            brokers = []
            for bid in self.broker_ids:
                b = self._brokers[bid]
                pid = self._live_pid(b)
                brokers.append({"id": bid, "port": b.port, "admin_port": b.admin_port, "pid": pid})
            state = {
                "version": STATE_VERSION,
                "host": self.host,
                "zookeeper": {
                    "port": self.zookeeper.port,
                    "pid": self.zookeeper.pid if self.zookeeper.is_running() else None,
                },
                "brokers": brokers,
                "overrides": self.overrides,
                "broker_overrides": {str(k): v for k, v in sorted(self.broker_overrides.items())},
                "broker_command": self.broker_command,
                "network": self._network_state(),
            }
            tmp = self.state_path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(state, indent=2) + "\n")
            os.replace(tmp, self.state_path)

    # --- internals: waiting ------------------------------------------------------------

    @staticmethod
    def _left(deadline: float) -> float:
        return max(0.0, deadline - time.monotonic())

    @staticmethod
    def _poll(condition: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_INTERVAL_S)
        return True

    def _await(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        if not self._poll(condition, timeout):
            raise ClusterError(f"timed out after {timeout:.1f}s waiting for {what}")
