"""Where a local cluster lives: the default data dir, and the files inside one.

Layout of the data dir:

    cluster.json                 state: ports, pids, config overrides, network (`state.py`)
    network-faults.json          the network faults in force (netns mode), for `status`
    .cluster.lock                taken while a command updates either of the two above
    zookeeper/                   LocalZooKeeper's config, data and log
    broker-<id>/server.properties
    broker-<id>/logs/            the broker's log.dirs
    broker-<id>/broker.log       the broker process's stdout and stderr
    broker-<id>/zk-session.json  the broker's current ZooKeeper session id and password
                                 (mode 0600), written by the broker, for `expire_session`
"""

from __future__ import annotations

import os
from pathlib import Path

STATE_FILE = "cluster.json"
FAULTS_FILE = "network-faults.json"
LOCK_FILE = ".cluster.lock"
ZK_SESSION_FILE = "zk-session.json"

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


class DataDir:
    """The paths of one cluster's data dir.

    `root` is resolved: the config paths matched against /proc/<pid>/cmdline must be the
    same whichever (relative, symlinked) spelling of the data dir a later command uses."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()

    @property
    def state_path(self) -> Path:
        return self.root / STATE_FILE

    @property
    def faults_path(self) -> Path:
        return self.root / FAULTS_FILE

    @property
    def lock_path(self) -> Path:
        return self.root / LOCK_FILE

    @property
    def zookeeper_dir(self) -> Path:
        return self.root / "zookeeper"

    def broker_dir(self, broker_id: int) -> Path:
        return self.root / f"broker-{broker_id}"

    def config_path(self, broker_id: int) -> Path:
        return self.broker_dir(broker_id) / "server.properties"

    def log_dir(self, broker_id: int) -> Path:
        return self.broker_dir(broker_id) / "logs"

    def broker_log_path(self, broker_id: int) -> Path:
        return self.broker_dir(broker_id) / "broker.log"

    def zk_session_path(self, broker_id: int) -> Path:
        return self.broker_dir(broker_id) / ZK_SESSION_FILE
