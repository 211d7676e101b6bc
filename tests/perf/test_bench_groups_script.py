"""scripts/bench_groups.py end to end with one run of each measurement. No speed is
asserted: only that every figure is there and positive (the script fails when a group
does not settle or commits never succeed again)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_groups.py"

pytestmark = pytest.mark.timeout(400)


def test_bench_groups_reports_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "groups"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--dir", str(out), "--runs", "1", "--commit-s", "1"],
        capture_output=True,
        text=True,
        timeout=380,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = json.loads((out / "bench_groups.json").read_text())
    assert figures["rebalance_after_leave_s"]["median"] > 0
    assert figures["after_coordinator_kill_s"]["median"] > 0
    assert figures["commit"]["commits_per_s"] > 0
    assert "commits/s" in proc.stdout
