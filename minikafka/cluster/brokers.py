"""The brokers of a local cluster: their ids, addresses and files, and their processes.

A broker may have been started by this `LocalCluster` (our child) or by another `minikafka
cluster` command (its pid is then in cluster.json). Pids read from the file are only
trusted (and signalled) when `/proc/<pid>/cmdline` still names this broker's config file,
so a recycled pid is never hit. Each broker runs in its own session: a Ctrl-C in the
terminal reaches only us, and a signal we send reaches only that broker.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from minikafka.cluster import state
from minikafka.cluster.data_dir import DataDir
from minikafka.cluster.errors import BrokerStartError, ClusterError
from minikafka.cluster.network import ClusterNetwork
from minikafka.cluster.waiting import poll

# The broker writes its session there when this is set (minikafka.server.broker's
# ZK_SESSION_FILE_ENV; not imported, so that `minikafka cluster` starts fast).
ZK_SESSION_FILE_ENV = "MINIKAFKA_ZK_SESSION_FILE"


@dataclass
class BrokerProcess:
    id: int
    port: int
    pid: int | None = None  # the last pid we started or read from cluster.json
    admin_port: int = 0  # its HTTP admin endpoint (admin.listeners)
    proc: subprocess.Popen[bytes] | None = None  # set when the process is our child


def proc_state(pid: int) -> str | None:
    """The state letter in /proc/<pid>/stat (R, S, T, Z, ...), None if there is no such pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may itself contain spaces and parentheses.
    fields = stat.rpartition(")")[2].split()
    return fields[0] if fields else None


def send_signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def log_tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()[-lines:]
    except FileNotFoundError:
        return f"(no {path})"
    return f"--- last lines of {path} ---\n" + "\n".join(text)


class LocalBrokers:
    """The brokers (`brokers`, by id) of the cluster in `data_dir`, listening on `host` in
    loopback mode, or each in its namespace of `netns_network` in netns mode."""

    def __init__(
        self,
        data_dir: DataDir,
        brokers: dict[int, BrokerProcess],
        host: str,
        netns_network: ClusterNetwork | None,
    ) -> None:
        self._dir = data_dir
        self.data_dir = data_dir.root
        self._brokers = brokers
        self.host = host
        # Its netns network; None in loopback mode.
        self._netns = netns_network

    # --- ids, addresses, files -----------------------------------------------------------

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
        if self._netns is None:
            return self.host
        self._broker(broker_id)
        return str(self._netns.layout.address(broker_id))

    def broker_address(self, broker_id: int) -> tuple[str, int]:
        return self.broker_host(broker_id), self._broker(broker_id).port

    def broker_netns(self, broker_id: int) -> str | None:
        """Name of broker N's network namespace (`ip netns list`); None in loopback mode."""
        return None if self._netns is None else self._netns.layout.netns(broker_id)

    def broker_dir(self, broker_id: int) -> Path:
        return self._dir.broker_dir(broker_id)

    def config_path(self, broker_id: int) -> Path:
        return self._dir.config_path(broker_id)

    def log_dir(self, broker_id: int) -> Path:
        return self._dir.log_dir(broker_id)

    def broker_log_path(self, broker_id: int) -> Path:
        return self._dir.broker_log_path(broker_id)

    def zk_session_path(self, broker_id: int) -> Path:
        return self._dir.zk_session_path(broker_id)

    # --- processes -----------------------------------------------------------------------

    def pid(self, broker_id: int) -> int | None:
        """Pid of the running broker process, None if it is not running."""
        return self._live_pid(self._broker(broker_id))

    def is_alive(self, broker_id: int) -> bool:
        """The process exists (it may be paused)."""
        return self.pid(broker_id) is not None

    def is_paused(self, broker_id: int) -> bool:
        pid = self.pid(broker_id)
        return pid is not None and proc_state(pid) in ("T", "t")

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
        return log_tail(self.broker_log_path(broker_id), lines)

    # --- internals -----------------------------------------------------------------------

    def _broker(self, broker_id: int) -> BrokerProcess:
        try:
            return self._brokers[broker_id]
        except KeyError:
            raise ClusterError(
                f"no broker {broker_id} in this cluster (brokers: {self.broker_ids})"
            ) from None

    def _running(self, broker_id: int) -> tuple[BrokerProcess, int]:
        b = self._broker(broker_id)
        pid = self._live_pid(b)
        if pid is None:
            raise ClusterError(f"broker {broker_id} is not running")
        return b, pid

    def _is_our_broker(self, b: BrokerProcess, pid: int) -> bool:
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False  # gone; a zombie has an empty cmdline and fails below too
        return str(self.config_path(b.id)).encode() in args

    def _live_pid(self, b: BrokerProcess) -> int | None:
        if b.proc is not None and b.proc.poll() is None:
            return b.proc.pid
        # Not (or no longer) our child: another `minikafka cluster` command may have
        # started it, and cluster.json then has its pid.
        for pid in (b.pid, state.saved_pid(self._dir, b.id)):
            ours_dead = b.proc is not None and pid == b.proc.pid
            if pid is not None and not ours_dead and self._is_our_broker(b, pid):
                return pid
        return None

    def _is_our_process(self, pid: int) -> bool:
        """A process whose command line names a file of this data dir (our brokers)."""
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        prefix = str(self.data_dir).encode() + b"/"
        return any(a.startswith(prefix) for a in args)

    def broker_environment(self) -> dict[str, str]:
        """Environment variables every broker process gets on top of ours (a secured
        cluster's `KAFKA_OPTS`, naming its JAAS file)."""
        return {}

    def _launch(self, b: BrokerProcess, cmd: Sequence[str]) -> None:
        """Run `cmd` as broker b's process, in a session of its own, with its output
        appended to its broker.log; b.proc and b.pid are the new process."""
        # The previous process's session is of no use to expire_session.
        self.zk_session_path(b.id).unlink(missing_ok=True)
        env = dict(
            os.environ,
            PYTHONUNBUFFERED="1",  # broker.log must be current on a crash
            **{ZK_SESSION_FILE_ENV: str(self.zk_session_path(b.id))},
            **self.broker_environment(),
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

    def _wait_exit(self, b: BrokerProcess, pid: int, timeout: float) -> bool:
        """Wait for this pid (not for the broker: another command may start it again)."""
        if b.proc is not None and b.proc.pid == pid:
            try:
                b.proc.wait(timeout=timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        # Not our child: gone, or a zombie its parent has not reaped yet (empty cmdline).
        return poll(lambda: not self._is_our_broker(b, pid), timeout)
