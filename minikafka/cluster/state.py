"""`cluster.json`: what another `minikafka cluster` command needs of a running cluster.

Everything another process needs (`minikafka cluster status`/`down`/`kill`, a later `up`)
is in `cluster.json`: ports, pids, config overrides, the broker command, the network. A
`LocalCluster` built on an existing data dir picks them up from there. Writes are atomic
(a temporary file renamed over the old one) and made under the data dir's lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from minikafka.cluster.data_dir import DataDir
from minikafka.cluster.errors import ClusterError

STATE_VERSION = 1


@contextlib.contextmanager
def locked(data_dir: DataDir) -> Iterator[None]:
    # Several `minikafka cluster` commands may update cluster.json at once (a fault
    # command while `up` runs in the foreground).
    data_dir.root.mkdir(parents=True, exist_ok=True)
    with open(data_dir.lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write `data` to `path` atomically, as indented JSON."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


def load_state(data_dir: DataDir) -> dict[str, Any]:
    """The saved state; empty when there is none yet."""
    path = data_dir.state_path
    try:
        state: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise ClusterError(f"cannot read {path}: {e}") from e
    if state.get("version") != STATE_VERSION:
        raise ClusterError(f"{path} has version {state.get('version')!r}, expected {STATE_VERSION}")
    return state


def saved_pid(data_dir: DataDir, broker_id: int) -> int | None:
    """The broker's pid as the saved state has it (None if the state cannot be read)."""
    with contextlib.suppress(ClusterError):
        for entry in load_state(data_dir).get("brokers", []):
            if int(entry["id"]) == broker_id:
                pid = entry.get("pid")
                return None if pid is None else int(pid)
    return None


def save_state(data_dir: DataDir, state: Mapping[str, Any]) -> None:
    """Write cluster.json (the caller holds the lock); `version` is added."""
    write_json(data_dir.state_path, {"version": STATE_VERSION, **state})
