"""Running a benchmark script that starts its own LocalCluster, from a test: a subprocess
whose output goes to files, and whatever cluster it left behind killed."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from minikafka.cluster import LocalCluster

ROOT = Path(__file__).resolve().parents[2]


def run_bench(
    script: str, args: Sequence[str], tmp_path: Path, cluster_dir: Path, timeout_s: float
) -> str:
    """Run scripts/<script> with `args` until it exits (it must exit 0) and return what it
    printed on stdout. `cluster_dir` is the data dir the script was told to use."""
    stdout_path, stderr_path = tmp_path / f"{script}.stdout", tmp_path / f"{script}.stderr"
    try:
        with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
            proc = subprocess.run(
                [sys.executable, str(ROOT / "scripts" / script), *args],
                stdout=stdout,
                stderr=stderr,
                timeout=timeout_s,
                cwd=ROOT,
                # rich wraps its tables at 80 columns when not on a terminal.
                env={**os.environ, "COLUMNS": "200"},
            )
    finally:
        # The brokers and ZooKeeper run in sessions of their own: a script killed at the
        # timeout, or one that crashed, would leave them running on this machine.
        # A script running several clusters keeps each in a directory of its own there.
        for state in (cluster_dir / "cluster.json", *cluster_dir.glob("*/cluster.json")):
            if state.exists():
                LocalCluster(state.parent).kill_all()
    printed = stdout_path.read_text()
    assert proc.returncode == 0, (
        f"scripts/{script} exited {proc.returncode} (broker logs under {cluster_dir})\n"
        f"{printed[-3000:]}\n{stderr_path.read_text()[-3000:]}"
    )
    return printed
