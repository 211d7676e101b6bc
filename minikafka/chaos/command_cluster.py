"""A cluster `minikafka chaos` does not manage (e.g. docker-compose's): faults by command.

The brokers are reached through their bootstrap servers and ZooKeeper, like any client
would; faults are injected by running a nemesis command, a template such as
`scripts/docker-fault.sh {op} {broker}`, with each `{op}` and `{broker}` substituted. Its
ops are those of scripts/docker-fault.sh:

    kill      crash the broker (SIGKILL); it stays down     start     start it again
    pause     freeze it                                      unpause   thaw it
    restart   clean stop, then start                         status    print its state
    isolate   cut it off the network (ZooKeeper included)    heal      undo a network cut
    partition-from-brokers   cut it off from the other brokers only

`status` prints the broker's state as its last line of output, as `docker inspect` names
them: running, paused, exited, ... Every op must be idempotent (a heal phase may start or
unpause a broker that already runs) and exit non-zero on failure.

Process faults and network partitions can be done this way; ZooKeeper session expiry
needs the local cluster (`minikafka cluster up`), which has the brokers' session
credentials.
"""

from __future__ import annotations

import logging
import shlex
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType

from minikafka.cluster.errors import ClusterError
from minikafka.zk.client import BrokerInfo, ZkClient, ZkError
from minikafka.zk.cluster_view import ZkClusterView

log = logging.getLogger(__name__)

# The nemesis ops a command can do (see minikafka/chaos/nemesis.py).
COMMAND_NEMESIS_OPS = (
    "kill",
    "pause",
    "restart",
    "controller",
    "coordinator",
    "partition",
    "partition-from-brokers",
    "partition-2013",
)
# The ops the command is run with.
COMMAND_OPS = (
    "kill",
    "start",
    "restart",
    "pause",
    "unpause",
    "status",
    "isolate",
    "partition-from-brokers",
    "heal",
)
# States in which the broker's process exists (it may be frozen); docker's names.
ALIVE_STATES = frozenset({"running", "paused", "restarting"})
PLACEHOLDERS = ("{op}", "{broker}")
POLL_INTERVAL_S = 0.1


class NemesisCommandError(ClusterError):
    """The nemesis command failed: it exited non-zero, timed out, or could not be run."""


def parse_nemesis_command(template: str) -> tuple[str, ...]:
    """The template's words (shell quoting, no shell); ValueError unless it has words and
    both placeholders."""
    try:
        words = tuple(shlex.split(template))
    except ValueError as e:
        raise ValueError(f"nemesis command {template!r}: {e}") from None
    if not words:
        raise ValueError("the nemesis command is empty")
    missing = [p for p in PLACEHOLDERS if not any(p in w for w in words)]
    if missing:
        raise ValueError(
            f"nemesis command {template!r} has no {' or '.join(missing)}: it is run as "
            "`CMD {op} {broker}` with both substituted"
        )
    return words


def nemesis_argv(words: Sequence[str], op: str, broker_id: int) -> list[str]:
    """Each word with `{op}` and `{broker}` replaced. Only those two: other braces (a
    `--format '{{.State.Status}}'`) stay as they are, and values are never re-split."""
    return [w.replace("{op}", op).replace("{broker}", str(broker_id)) for w in words]


class CommandCluster:
    """A running cluster, faulted by a nemesis command (see the module docstring).

    The broker ids are those registered in ZooKeeper the first time they are asked for:
    a killed broker leaves `/brokers/ids`, so they are remembered from then on.
    """

    # Not ours: network faults are the nemesis command's (isolate, partition-from-brokers).
    network = "external"

    def __init__(
        self,
        bootstrap_servers: str,
        zookeeper_connect: str,
        nemesis_command: str,
        *,
        command_timeout_s: float = 120.0,
        admin_token: str | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self._admin_token = admin_token
        self.zookeeper_connect = zookeeper_connect
        self.nemesis_command = nemesis_command
        self._words = parse_nemesis_command(nemesis_command)
        self.command_timeout_s = command_timeout_s
        self._view = ZkClusterView(zookeeper_connect)
        self._broker_ids: list[int] | None = None
        # Brokers a network cut was made on and not healed yet: heal(None) heals these.
        self._cut: set[int] = set()

    def __enter__(self) -> CommandCluster:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._view.close()

    def admin_token(self) -> str | None:
        """The brokers' `admin.listeners.token`, as given (None: their admin endpoints ask
        for none)."""
        return self._admin_token

    # --- ZooKeeper view ------------------------------------------------------------------

    def zk_client(self) -> ZkClient:
        try:
            return self._view.client()
        except ZkError as e:
            raise ClusterError(str(e)) from e  # it names the address

    @property
    def broker_ids(self) -> list[int]:
        if self._broker_ids is None:
            ids = self.zk_client().get_broker_ids()
            if not ids:
                raise ClusterError(
                    f"no broker is registered in ZooKeeper {self.zookeeper_connect} "
                    "(/brokers/ids is empty): is the cluster up, and is the chroot right?"
                )
            self._broker_ids = ids
        return list(self._broker_ids)

    def registrations(self) -> dict[int, BrokerInfo]:
        """Live registrations in `/brokers/ids`, empty if ZooKeeper cannot be read now."""
        return self._view.read_registrations() or {}

    def controller(self) -> tuple[int, int] | None:
        """(controller id, controller epoch) as ZooKeeper has them now, or None."""
        return self._view.controller()

    def wait_for_registered(
        self,
        broker_ids: Iterable[int],
        timeout: float = 60.0,
        *,
        newer_than: Mapping[int, int] | None = None,
    ) -> dict[int, BrokerInfo]:
        """Wait until each broker is registered (with an epoch above `newer_than[id]`, if
        given) and one of its advertised addresses (a broker may advertise an internal and
        an external listener) accepts connections from here."""
        ids = sorted(set(broker_ids))
        newer = dict(newer_than or {})
        deadline = time.monotonic() + timeout
        while True:
            regs = self.registrations()
            registered = {b: regs[b] for b in ids if b in regs and regs[b].epoch > newer.get(b, -1)}
            ready = {
                b: r
                for b, r in registered.items()
                if any(_accepts(e.host, e.port) for e in r.all_endpoints())
            }
            if len(ready) == len(ids):
                return ready
            if time.monotonic() >= deadline:
                problems = []
                missing = [b for b in ids if b not in registered]
                if missing:
                    problems.append(f"broker(s) {missing} not registered in ZooKeeper")
                unreachable = [
                    "/".join(f"{e.host}:{e.port}" for e in r.all_endpoints())
                    for b, r in registered.items()
                    if b not in ready
                ]
                if unreachable:
                    problems.append(
                        f"no connection to {', '.join(unreachable)} from here (does the "
                        "advertised name resolve on this host?)"
                    )
                raise ClusterError(f"after {timeout:.1f}s: {'; '.join(problems)}")
            time.sleep(POLL_INTERVAL_S)

    # --- faults --------------------------------------------------------------------------

    def run(self, op: str, broker_id: int, timeout: float | None = None) -> str:
        """Run the nemesis command for `op` on `broker_id`; its standard output. Raises
        NemesisCommandError, with its stderr, if it fails."""
        argv = nemesis_argv(self._words, op, broker_id)
        limit = self.command_timeout_s if timeout is None else timeout
        log.info("nemesis command: %s", shlex.join(argv))
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=limit, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired as e:
            raise NemesisCommandError(
                f"nemesis command `{shlex.join(argv)}` did not finish within {limit:g}s"
                + _stderr_part(e.stderr)
            ) from None
        except OSError as e:
            raise NemesisCommandError(
                f"cannot run nemesis command `{shlex.join(argv)}`: {e}"
            ) from e
        if done.returncode != 0:
            raise NemesisCommandError(
                f"nemesis command `{shlex.join(argv)}` exited with code {done.returncode}"
                + _stderr_part(done.stderr)
            )
        if done.stderr.strip():
            log.debug("nemesis command stderr: %s", done.stderr.strip())
        return done.stdout

    def state(self, broker_id: int) -> str:
        """The broker's state as `status` prints it on its last line (running, paused, ...)."""
        lines = self.run("status", broker_id).strip().splitlines()
        if not lines:
            raise NemesisCommandError(
                f"nemesis command `{shlex.join(nemesis_argv(self._words, 'status', broker_id))}`"
                " printed no state (running, paused, exited, ...)"
            )
        return lines[-1].strip()

    def is_alive(self, broker_id: int) -> bool:
        return self.state(broker_id) in ALIVE_STATES

    def is_paused(self, broker_id: int) -> bool:
        return self.state(broker_id) == "paused"

    def kill(self, broker_id: int) -> None:
        self.run("kill", broker_id)

    def pause(self, broker_id: int) -> None:
        self.run("pause", broker_id)

    def resume(self, broker_id: int) -> None:
        self.run("unpause", broker_id)

    def start_broker(
        self, broker_id: int, *, wait: bool = True, timeout: float = 60.0
    ) -> BrokerInfo | None:
        """Start it; with `wait`, return its new registration once it is ready (a killed
        broker's old one stays until its session expires: the new one has a larger epoch)."""
        return self._start(broker_id, "start", wait, timeout)

    def restart(self, broker_id: int, timeout: float = 60.0) -> BrokerInfo:
        info = self._start(broker_id, "restart", True, timeout)
        assert info is not None
        return info

    def _start(self, broker_id: int, op: str, wait: bool, timeout: float) -> BrokerInfo | None:
        deadline = time.monotonic() + timeout
        old = self.registrations().get(broker_id)
        # A clean stop may take the broker's whole controlled shutdown: allow the timeout.
        self.run(op, broker_id, timeout=max(timeout, self.command_timeout_s))
        if not wait:
            return None
        newer = {broker_id: old.epoch} if old is not None else None
        left = max(1.0, deadline - time.monotonic())
        return self.wait_for_registered([broker_id], left, newer_than=newer)[broker_id]

    def partition_from_brokers(self, broker_id: int) -> None:
        self._cut.add(broker_id)
        self.run("partition-from-brokers", broker_id)

    def isolate(self, broker_id: int) -> None:
        self._cut.add(broker_id)
        self.run("isolate", broker_id)

    def heal(self, broker_id: int | None = None) -> None:
        """Undo the network cut of one broker, or of every broker cut so far (None)."""
        for b in sorted(self._cut) if broker_id is None else [broker_id]:
            self.run("heal", b)
            self._cut.discard(b)

    def expire_session(self, broker_id: int, timeout: float = 10.0) -> int:
        raise self._unsupported("ZooKeeper session expiry")

    @staticmethod
    def _unsupported(what: str) -> ClusterError:
        return ClusterError(f"{what} needs a local cluster (`minikafka cluster up`)")


def _accepts(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.5).close()
        return True
    except OSError:
        return False


def _stderr_part(stderr: str | bytes | None) -> str:
    if isinstance(stderr, bytes):
        stderr = stderr.decode(errors="replace")
    text = (stderr or "").strip()
    return f": {text}" if text else " (no stderr)"
