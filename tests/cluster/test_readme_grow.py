"""The README's "Grow, shrink and rebalance" walkthrough, run as written: the block as one
bash script, in a fresh directory, with a temporary data dir and free ports (to share the
machine with other tests). Each step's promise is checked in the output and in ZooKeeper:
broker 4 joins and takes replicas, broker 2 is drained and removed, no record is lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.readme import run_walkthrough

pytestmark = pytest.mark.timeout(300)

DATA_DIR_LINE = "export MINIKAFKA_DATA_DIR=~/.local/share/minikafka/growing\n"
UP = "minikafka cluster up --detach"
DOWN = "minikafka cluster down\n"


def test_the_readme_grow_and_shrink_walkthrough_runs_as_written(tmp_path: Path) -> None:
    run = run_walkthrough(
        "Grow, shrink and rebalance#0",
        tmp_path,
        DATA_DIR_LINE,
        UP,
        # Look at the cluster before it goes down.
        (DOWN, "minikafka cluster status --json > status.json\n" + DOWN),
    )
    done, cwd, out = run.done, run.cwd, run.out
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
