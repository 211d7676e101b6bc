"""The README's "Grow, shrink and rebalance" walkthrough, run as written: the block as one
bash script, in a fresh directory, with a temporary data dir and free ports (to share the
machine with other tests). Each step's promise is checked in the output and in ZooKeeper:
broker 4 joins and takes replicas, broker 2 is drained and removed, no record is lost."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.cluster import LocalCluster
from tests.readme import block

pytestmark = pytest.mark.timeout(300)

DATA_DIR_LINE = "export MINIKAFKA_DATA_DIR=~/.local/share/minikafka/growing\n"
UP = "minikafka cluster up --detach"
DOWN = "minikafka cluster down\n"


def test_the_readme_grow_and_shrink_walkthrough_runs_as_written(tmp_path: Path) -> None:
    script = block("Grow, shrink and rebalance#0").text
    assert script.startswith(DATA_DIR_LINE) and script.count(UP) == 1
    data_dir = tmp_path / "growing"
    script = script.replace(DATA_DIR_LINE, f"export MINIKAFKA_DATA_DIR={data_dir}\n", 1)
    script = script.replace(UP, f"{UP} --port 0 --zookeeper-port 0 --admin-port 0", 1)
    # Look at the cluster before it goes down.
    script = script.replace(DOWN, "minikafka cluster status --json > status.json\n" + DOWN, 1)
    cwd = tmp_path / "work"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINIKAFKA_")}
    env["PATH"] = f"{os.path.dirname(sys.executable)}:{env['PATH']}"
    try:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    finally:
        with contextlib.suppress(Exception):
            LocalCluster(data_dir).kill_all()
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "broker 4 is running at " in out
    plan = json.loads((cwd / "plan.json").read_text())
    moved = {p["partition"]: p["replicas"] for p in plan["partitions"]}
    assert sorted(moved) == list(range(6))
    assert any(4 in replicas for replicas in moved.values())
    assert "Successfully started partition reassignments for orders-0," in out
    # --verify said every move was done before --describe ran; broker 2 is gone at the end.
    described = [line for line in done.stdout.splitlines() if "\tPartition: " in line]
    assert len(described) == 6, out
    assert "broker 2 stopped and removed; brokers now: [1, 3, 4]" in out
    status = json.loads((cwd / "status.json").read_text())
    assert sorted(b["id"] for b in status["brokers"]) == [1, 3, 4]
    # Every record written before the moves is read back after them.
    # (`wc -l`'s count is the script's last bare number: `cluster down` may say more after
    # it, e.g. while a broker's controlled shutdown retries.)
    numbers = [line.strip() for line in done.stdout.splitlines() if line.strip().isdigit()]
    assert numbers[-1:] == ["1000"], out
