"""`LocalCluster`: a real ZooKeeper and N broker processes, in one data dir.

Two network modes. `loopback` (the default, no root needed): everything on 127.0.0.1, one
port per broker. `netns` (root): each broker in its own network namespace with its own
address, linked to a bridge in the root namespace, where ZooKeeper and clients stay; that
is what network faults (`partition_from_brokers`, `isolate`, `degrade`, `heal`) act on.
See `minikafka.cluster.netns` for the topology, names and how faults are made.

`LocalCluster` starts, stops and restarts the cluster and its parts, and keeps cluster.json
(`state.py`) current, so that another `minikafka cluster` command can take over. What it is
made of, one job a module: the brokers, their addresses and processes (`LocalBrokers`,
`brokers.py`); what ZooKeeper says of them and waiting for them (`ClusterReadiness`,
`readiness.py`); the network faults (`NetworkFaults`, `network_faults.py`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from minikafka.cluster import netns, ports, state
from minikafka.cluster.broker_config import (
    check_overrides,
    default_broker_command,
    write_server_properties,
)
from minikafka.cluster.brokers import BrokerProcess, log_tail, send_signal
from minikafka.cluster.data_dir import DataDir
from minikafka.cluster.errors import ClusterError
from minikafka.cluster.network import ClusterNetwork
from minikafka.cluster.network_faults import NetworkFaults
from minikafka.cluster.readiness import ClusterReadiness
from minikafka.cluster.security import ADMIN_USER, ClusterSecurity, SecurityMode
from minikafka.cluster.waiting import time_left, wait_for
from minikafka.cluster.zookeeper import (
    ClusterZooKeeper,
    check_zookeeper_installed,
    expire_broker_session,
)
from minikafka.zk.client import BrokerInfo, ZkClientAuth
from minikafka.zk.server import DEFAULT_INSTALL_DIR, LocalZooKeeper

log = logging.getLogger(__name__)

NetworkMode = Literal["loopback", "netns"]
NETWORK_MODES: tuple[NetworkMode, ...] = ("loopback", "netns")
DEFAULT_BROKERS = 3
DEFAULT_HOST = "127.0.0.1"


class LocalCluster(ClusterReadiness, NetworkFaults):
    """ZooKeeper plus `brokers` broker processes (ids 1..n) under `data_dir`.

    On a data dir that already holds a `cluster.json`, the saved ports, overrides and broker
    command are kept; `brokers=None` means the saved broker count (else 3), and `overrides`
    given here are applied over the saved ones. `base_port=0` / `zookeeper_port=0` /
    `admin_base_port=0` pick free ports on the first start; brokers otherwise listen on
    base_port, base_port+1, ... and serve their HTTP admin endpoint (metrics, health) on
    admin_base_port, admin_base_port+1, ...
    `broker_overrides` maps a broker id to properties for that broker only. `racks` gives
    each broker its `broker.rack`, in id order, one a broker; kept as the brokers' overrides.

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
        security: SecurityMode | None = None,
        racks: Sequence[str] | None = None,
    ) -> None:
        dirs = DataDir(data_dir)
        saved = state.load_state(dirs)
        saved_net: dict[str, Any] = saved.get("network") or {"mode": "loopback"}
        mode = network or saved_net.get("mode", "loopback")
        if mode not in NETWORK_MODES:
            raise ValueError(f"network must be one of {', '.join(NETWORK_MODES)}, got {mode!r}")
        self.network: NetworkMode = mode
        cluster_network: ClusterNetwork | None = None
        if mode == "netns":
            if host != DEFAULT_HOST:
                raise ValueError("host applies to network='loopback' only; netns uses subnet=")
            cluster_network = ClusterNetwork.for_data_dir(dirs, saved_net, subnet)
            host = str(cluster_network.layout.gateway)
        else:
            if subnet is not None:
                raise ValueError("subnet applies to network='netns' only")
            host = saved.get("host", host) if saved_net.get("mode") == "loopback" else host
        self.base_port = base_port
        self.admin_base_port = admin_base_port
        self.overrides: dict[str, str] = dict(saved.get("overrides", {}))
        self.overrides.update(overrides or {})
        self.broker_overrides: dict[int, dict[str, str]] = {
            int(k): dict(v) for k, v in saved.get("broker_overrides", {}).items()
        }
        for bid, props in (broker_overrides or {}).items():
            self.broker_overrides.setdefault(bid, {}).update(props)
        self.broker_command: list[str] = list(
            broker_command or saved.get("broker_command") or default_broker_command()
        )
        saved_brokers = {int(b["id"]): b for b in saved.get("brokers", [])}
        count = brokers if brokers is not None else (len(saved_brokers) or DEFAULT_BROKERS)
        if count < 1:
            raise ValueError("a cluster needs at least one broker")
        # The saved brokers keep their ids (`add_broker` and `remove_broker` may have left
        # gaps); a broker count given anew means ids 1..n.
        ids = (
            sorted(saved_brokers)
            if brokers is None and saved_brokers
            else list(range(1, count + 1))
        )
        if racks is not None:
            if len(racks) != count:
                raise ValueError(
                    f"--racks names {len(racks)} rack(s) but the cluster has {count} "
                    "brokers: give one rack a broker, in broker id order"
                )
            for bid, rack in zip(ids, racks, strict=True):
                if not rack.strip():
                    raise ValueError(f"--racks: broker {bid}'s rack is empty")
                self.broker_overrides.setdefault(bid, {})["broker.rack"] = rack.strip()
        processes: dict[int, BrokerProcess] = {}
        for bid in ids:
            b = saved_brokers.get(bid, {})
            processes[bid] = BrokerProcess(
                bid, int(b.get("port", 0)), b.get("pid"), admin_port=int(b.get("admin_port", 0))
            )
        super().__init__(dirs, processes, host, cluster_network)
        # TLS/SASL (cluster/security.py): given, else what the data dir was started with.
        mode = security or saved.get("security")
        self.security: ClusterSecurity | None = (
            ClusterSecurity(self.data_dir, mode, host) if mode is not None else None
        )
        # Checked on top of the security mode's own listener settings, which overrides may
        # refine (`listener.name.<l>.`).
        base = (
            {}
            if self.security is None
            else self.security.broker_properties(1, host, 1, password="placeholder")
        )
        check_overrides(self.overrides, base)
        for props in self.broker_overrides.values():
            check_overrides(props, base)
        saved_zk_port = int(saved.get("zookeeper", {}).get("port", 0))
        self.zookeeper: LocalZooKeeper = ClusterZooKeeper(
            dirs.zookeeper_dir,
            port=saved_zk_port or zookeeper_port,
            host=host,
            fsync=zookeeper_fsync,
            install_dir=zookeeper_install_dir,
            # A secured cluster's ZooKeeper takes SASL logins (its brokers' identity).
            server_jaas=(
                self.security.zookeeper_server_jaas_path if self.security is not None else None
            ),
        )

    # --- paths and simple properties ---------------------------------------------------

    @property
    def state_path(self) -> Path:
        return self._dir.state_path

    @property
    def faults_path(self) -> Path:
        return self._dir.faults_path

    @property
    def zookeeper_connect(self) -> str:
        return self.zookeeper.connect_string

    def admin_token(self) -> str | None:
        """The brokers' `admin.listeners.token`: a secured cluster's (`security.py`: a
        random one in its data dir), else None (the default cluster's endpoints ask for
        none)."""
        return None if self.security is None else self.security.admin_token()

    def zk_auth(self) -> ZkClientAuth | None:
        """A secured cluster's tools log in to ZooKeeper as its brokers do and create znodes
        with the brokers' ACLs; the default cluster's are anonymous."""
        if self.security is None or not self.security.zookeeper_password_path.exists():
            return None  # not secured, or a data dir whose ZooKeeper was not secured yet
        return self.security.zk_client_auth()

    def broker_environment(self) -> dict[str, str]:
        return {} if self.security is None else self.security.broker_environment()

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
        if self.security is not None:
            props.update(
                self.security.broker_properties(
                    broker_id, self.broker_host(broker_id), b.port, self.broker_ids
                )
            )
        props.update(self.overrides)
        props.update(self.broker_overrides.get(broker_id, {}))
        return props

    # --- lifecycle ---------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> None:
        """Start ZooKeeper, then every broker; return once all are registered and a
        controller is elected. On failure everything started is stopped again."""
        deadline = time.monotonic() + timeout
        self.check_installed()
        if self._netns is not None:
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
            if self.security is not None:
                self.security.prepare(self.broker_ids)
            self._network_up()
            self.zookeeper.start(timeout=max(1.0, deadline - time.monotonic()))
            # After ZooKeeper, so that a port it picked is not also given to a broker.
            self._assign_ports()
            self._save_state()
            zk = self.zk_client()
            zk.ensure_persistent_paths()
            if self.security is not None and self.security.uses_sasl:
                # The admin user, whom the brokers authenticate as to each other, exists
                # before they start (as `kafka-configs --zookeeper` bootstraps one).
                zk.set_user_config(ADMIN_USER, self.security.admin_scram_config())
            # Registrations and a /controller left by a crashed run survive in ZooKeeper's
            # data until their sessions expire: only newer ones count as this start's.
            before = {bid: info.epoch for bid, info in zk.get_all_brokers().items()}
            epoch = zk.get_controller_epoch()
            for bid in self.broker_ids:
                self._spawn(self._brokers[bid])
            self._save_state()
            self.wait_for_registered(self.broker_ids, time_left(deadline), newer_than=before)
            self.wait_for_controller(time_left(deadline), min_epoch=(epoch[0] if epoch else 0) + 1)
            self.wait_for_metadata(self.broker_ids, time_left(deadline))
            self.balance_leaders(time_left(deadline))
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
        if self._netns is not None:
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
        if self._netns is not None:
            netns.require_privileges()
        for b in self._brokers.values():
            pid = self._live_pid(b)
            if pid is not None:
                send_signal(pid, signal.SIGKILL)
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
        check_zookeeper_installed(self.zookeeper)

    # --- single brokers ----------------------------------------------------------------

    def start_broker(
        self, broker_id: int, *, wait: bool = True, timeout: float = 60.0
    ) -> BrokerInfo | None:
        """Start a stopped broker (an id beyond the current ones adds a broker) with its
        saved port and config; with `wait`, return its registration once it is ready."""
        if broker_id not in self._brokers:
            if broker_id < 1:
                raise ValueError(f"broker ids start at 1, got {broker_id}")
            self._brokers[broker_id] = BrokerProcess(broker_id, 0)
            self._assign_ports()
        b = self._brokers[broker_id]
        pid = self._live_pid(b)
        if pid is not None:
            raise ClusterError(f"broker {broker_id} is already running (pid {pid})")
        if not self.zookeeper.is_running():
            raise ClusterError(f"ZooKeeper of {self.data_dir} is not running")
        # A registration left by a killed process stays until its session expires; the new
        # one has a larger czxid (the broker epoch).
        old = self._registrations().get(broker_id)
        self._spawn(b)
        self._save_state()
        if not wait:
            return None
        newer = {broker_id: old.epoch} if old is not None else None
        return self.wait_for_registered([broker_id], timeout, newer_than=newer)[broker_id]

    def add_broker(self, timeout: float = 60.0, rack: str | None = None) -> int:
        """Start a broker with the next free id (Kafka's way of growing a cluster: a new
        broker registers, empty; reassignment moves replicas onto it), in `rack` (required
        when the others have racks: a broker without one would make rack-aware placement
        refuse every new topic). Returns its id once every broker's metadata has it."""
        if self._netns is not None:
            raise ClusterError(
                "adding a broker is for loopback clusters: a netns cluster's namespaces are "
                "made at `cluster up` (start it with one more broker instead)"
            )
        if self.security is not None:
            raise ClusterError(
                "adding a broker to a secured cluster is not supported: every broker's "
                "super.users names the brokers of `cluster up`"
            )
        racked = [b for b in self.broker_ids if "broker.rack" in self.broker_overrides.get(b, {})]
        if racked and rack is None:
            raise ClusterError(
                "this cluster's brokers have racks (broker.rack): give the new one --rack"
            )
        if rack is not None and not rack.strip():
            raise ClusterError("the new broker's rack is empty")
        deadline = time.monotonic() + timeout
        broker_id = max(self.broker_ids) + 1
        if rack is not None:
            self.broker_overrides.setdefault(broker_id, {})["broker.rack"] = rack.strip()
        # Its config is the cluster's (overrides included), as `up` gave the others.
        self.start_broker(broker_id, timeout=timeout)
        self.wait_for_metadata(self.broker_ids, time_left(deadline))
        return broker_id

    def remove_broker(self, broker_id: int, timeout: float = 30.0) -> None:
        """Stop the broker (controlled shutdown) if it runs, and forget it: it leaves
        cluster.json and its directory is deleted. The caller makes sure it holds no
        replica any more (`minikafka cluster remove-broker --drain` moves them away)."""
        self._broker(broker_id)
        if len(self._brokers) == 1:
            raise ClusterError("a cluster needs at least one broker")
        if self.is_alive(broker_id):
            self.terminate(broker_id, timeout=timeout)
        del self._brokers[broker_id]
        self.broker_overrides.pop(broker_id, None)
        self._save_state()
        shutil.rmtree(self.broker_dir(broker_id), ignore_errors=True)

    def restart(self, broker_id: int, timeout: float = 60.0) -> BrokerInfo:
        """Stop the broker if it runs (SIGTERM), start it again with the same config and
        port, and return its new registration (with a larger broker epoch)."""
        deadline = time.monotonic() + timeout
        if self.is_alive(broker_id):
            self.terminate(broker_id, timeout=timeout)
        info = self.start_broker(broker_id, timeout=time_left(deadline))
        assert info is not None
        return info

    def kill(self, broker_id: int) -> None:
        """SIGKILL, as a crash would; returns once the process is gone."""
        b, pid = self._running(broker_id)
        send_signal(pid, signal.SIGKILL)
        if not self._wait_exit(b, pid, 10.0):
            raise ClusterError(f"broker {broker_id} (pid {pid}) survived SIGKILL for 10s")
        self._save_state()

    def terminate(self, broker_id: int, timeout: float = 30.0) -> int | None:
        """SIGTERM (controlled shutdown) and wait for the exit; returns the exit code (None
        if the process is not our child). After `timeout` it is killed and ClusterError
        raised: a broker that cannot shut down is a bug worth seeing."""
        b, pid = self._running(broker_id)
        send_signal(pid, signal.SIGTERM)
        send_signal(pid, signal.SIGCONT)  # a paused broker would never see the SIGTERM
        if not self._wait_exit(b, pid, timeout):
            send_signal(pid, signal.SIGKILL)
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
        send_signal(pid, signal.SIGSTOP)
        wait_for(lambda: self.is_paused(broker_id), 5.0, f"broker {broker_id} to stop")

    def resume(self, broker_id: int) -> None:
        """SIGCONT after `pause`."""
        _, pid = self._running(broker_id)
        send_signal(pid, signal.SIGCONT)
        wait_for(lambda: not self.is_paused(broker_id), 5.0, f"broker {broker_id} to resume")

    def log_tails(self, lines: int = 40) -> str:
        """Tails of every broker's log and of ZooKeeper's, for failure reports."""
        parts = [self.log_tail(bid, lines) for bid in self.broker_ids]
        parts.append(log_tail(self.zookeeper.log_path, lines))
        return "\n".join(parts)

    # --- ZooKeeper session and process ---------------------------------------------------

    def expire_session(self, broker_id: int, timeout: float = 10.0) -> int:
        """Expire broker N's ZooKeeper session now, as a long pause would: attach a second
        client to the session (id and password from the broker's zk-session.json) and close
        it. Its registration and any /controller of it vanish at once; the broker learns at
        its next ping, gets a new session and registers again with a new broker epoch (wait
        with `wait_for_registered(..., newer_than=...)`). Returns the expired session id."""
        _, pid = self._running(broker_id)
        session_id = expire_broker_session(
            self.zookeeper,
            self.data_dir,
            broker_id,
            pid,
            self.zk_session_path(broker_id),
            timeout,
        )
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
        if self._netns is not None:
            netns.require_privileges()
            if self._netns.layout.bridge not in netns.link_names():
                raise ClusterError(
                    f"the network of the cluster in {self.data_dir} is down (no bridge "
                    f"{self._netns.layout.bridge}); `start` brings the whole cluster up"
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

    # --- status ------------------------------------------------------------------------

    def client_config(self) -> dict[str, str]:
        """What a Kafka client needs to reach this cluster, in librdkafka's property names:
        bootstrap.servers, and for a secured cluster its protocol, the admin's credentials
        (SASL) or certificate (SSL), and the CA to trust."""
        config = {"bootstrap.servers": self.bootstrap_servers}
        if self.security is not None:
            config.update(self.security.client_config())
        return config

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
        faults = self._netns.load_faults() if self._netns is not None else {}
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
            "security": None if self.security is None else self.security.mode,
            "client_config": self.client_config(),
            # Where the admin endpoints' token is, never the token.
            "admin_token_file": (
                None
                if self.security is None or self.security.admin_token() is None
                else str(self.security.admin_token_path)
            ),
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

    def _spawn(self, b: BrokerProcess) -> None:
        self.log_dir(b.id).mkdir(parents=True, exist_ok=True)
        if self._netns is not None:
            # A namespace of its own: nothing else can hold its port there.
            netns.add_broker(self._netns.layout, b.id)
        else:
            ports.check_broker_ports(self.host, b)
        write_server_properties(self.config_path(b.id), self.broker_properties(b.id))
        cmd = [*self.broker_command, "--config", str(self.config_path(b.id))]
        if self._netns is not None:
            cmd = [*netns.exec_prefix(self._netns.layout, b.id), *cmd]
        self._launch(b, cmd)
        log.info("started broker %d pid %d on %s:%d", b.id, b.pid, self.broker_host(b.id), b.port)

    def _terminate_all(self, group: list[BrokerProcess], timeout: float) -> None:
        pids = [(b, pid) for b in group if (pid := self._live_pid(b)) is not None]
        for _, pid in pids:
            send_signal(pid, signal.SIGTERM)
            send_signal(pid, signal.SIGCONT)  # a paused broker would never see the SIGTERM
        deadline = time.monotonic() + timeout
        for b, pid in pids:
            if not self._wait_exit(b, pid, time_left(deadline)):
                log.warning(
                    "broker %d (pid %d) ignored SIGTERM for %.0fs; killing it", b.id, pid, timeout
                )
                send_signal(pid, signal.SIGKILL)
                self._wait_exit(b, pid, 10.0)

    def _check_ports_free(self) -> None:
        """PortInUseError naming every fixed port that another process listens on, and the
        `minikafka cluster up` option that moves it. Picked ports (0) are free by choice;
        in netns mode each broker's ports are in a namespace of its own, and ZooKeeper's
        address is the bridge's, which `start` has yet to add."""
        loopback = self._netns is None
        wanted = ports.fixed_ports(
            self.zookeeper.port,
            [self._brokers[bid] for bid in self.broker_ids] if loopback else [],
            self.base_port,
            self.admin_base_port,
        )
        ports.check_ports_free(self.host, wanted, address_made_later=not loopback)

    def _assign_ports(self) -> None:
        """Ports for brokers that have none yet: the Kafka port, then the admin one."""
        ports.assign_ports(
            self._brokers,
            host=self.host,
            zookeeper_port=self.zookeeper.port,
            base_port=self.base_port,
            admin_base_port=self.admin_base_port,
        )

    def _saved_running(self) -> list[str]:
        """What the saved state says runs and still does (ZooKeeper, broker ids)."""
        running = [f"ZooKeeper pid {self.zookeeper.pid}"] if self.zookeeper.is_running() else []
        for entry in state.load_state(self._dir).get("brokers", []):
            b = BrokerProcess(int(entry["id"]), int(entry.get("port", 0)), entry.get("pid"))
            if b.pid is not None and self._is_our_broker(b, b.pid):
                running.append(f"broker {b.id} pid {b.pid}")
        return running

    # --- internals: network (netns mode) ------------------------------------------------

    def _network_up(self) -> None:
        """Remove what a crashed run left, move off a subnet someone else took since it was
        picked, then make the bridge and one namespace per broker."""
        network = self._netns
        if network is None:
            return
        network.remove_leftovers(self._is_our_process)
        taken = network.move_off_taken_subnet()
        if taken is not None:
            log.info("subnet %s is in use; taking %s", taken, network.layout.subnet)
            self.host = self.zookeeper.host = str(network.layout.gateway)
        network.create(self.broker_ids)
        self._save_state()

    def _network_down(self) -> None:
        if self._netns is not None:
            self._netns.down(self._is_our_process)

    def _network_state(self) -> dict[str, Any]:
        return {"mode": "loopback"} if self._netns is None else self._netns.state()

    # --- internals: state file ---------------------------------------------------------

    def _save_state(self) -> None:
        """Write cluster.json atomically. Pids are the live ones, so a broker another
        command restarted (and saved) is not forgotten by our stale view."""
        with state.locked(self._dir):
            brokers = []
            for bid in self.broker_ids:
                b = self._brokers[bid]
                pid = self._live_pid(b)
                brokers.append({"id": bid, "port": b.port, "admin_port": b.admin_port, "pid": pid})
            state.save_state(
                self._dir,
                {
                    "host": self.host,
                    "zookeeper": {
                        "port": self.zookeeper.port,
                        "pid": self.zookeeper.pid if self.zookeeper.is_running() else None,
                    },
                    "brokers": brokers,
                    "overrides": self.overrides,
                    "broker_overrides": {
                        str(k): v for k, v in sorted(self.broker_overrides.items())
                    },
                    "broker_command": self.broker_command,
                    "network": self._network_state(),
                    "security": None if self.security is None else self.security.mode,
                },
            )
