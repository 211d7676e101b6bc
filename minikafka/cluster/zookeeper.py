"""The local cluster's ZooKeeper: the server process, and the sessions of its brokers."""

from __future__ import annotations

import json
from pathlib import Path

from minikafka.cluster.errors import ClusterError
from minikafka.zk.client import ZkError
from minikafka.zk.client import expire_session as zk_expire_session
from minikafka.zk.server import LocalZooKeeper, ZooKeeperNotInstalledError

INSTALL_HINT = "apt-get install -y zookeeper"


class ClusterZooKeeper(LocalZooKeeper):
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


def check_zookeeper_installed(zookeeper: LocalZooKeeper) -> None:
    """Raise ZooKeeperNotInstalledError, with the install command, if Debian's
    ZooKeeper is missing."""
    script = zookeeper.install_dir / "bin" / "zkServer.sh"
    if not script.is_file():
        raise ZooKeeperNotInstalledError(
            f"ZooKeeper is not installed ({script} not found). minikafka runs Debian's "
            f"ZooKeeper; install it with `{INSTALL_HINT}` (as root)."
        )


def expire_broker_session(
    zookeeper: LocalZooKeeper,
    data_dir: Path,
    broker_id: int,
    pid: int,
    session_path: Path,
    timeout: float,
) -> int:
    """Expire the session that broker `broker_id`, running as `pid`, published in
    `session_path` (its zk-session.json): attach a second client to the session and close
    it. Returns the expired session id."""
    try:
        record = json.loads(session_path.read_text())
        session_id, owner = int(record["session_id"]), int(record["pid"])
        password = bytes.fromhex(record["password"])
    except FileNotFoundError:
        raise ClusterError(
            f"broker {broker_id} (pid {pid}) has not published a ZooKeeper session "
            f"({session_path} is missing): it is still starting, or not a minikafka broker"
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ClusterError(f"cannot read {session_path}: {e!r}") from e
    if owner != pid:
        raise ClusterError(
            f"{session_path} is from pid {owner}, not from broker {broker_id}'s process {pid}"
        )
    if not zookeeper.is_running():
        raise ClusterError(f"ZooKeeper of {data_dir} is not running")
    try:
        zk_expire_session(zookeeper.connect_string, (session_id, password), timeout)
    except ZkError as e:
        raise ClusterError(
            f"could not expire session 0x{session_id:x} of broker {broker_id}: {e}"
        ) from e
    return session_id
