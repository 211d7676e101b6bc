"""scripts/bench_dashboard.py end to end, small: one failover, 100 partitions. No speed is
asserted: only that every figure is there and sensible (the script fails when the page
never shows the failover)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_dashboard.py"

pytestmark = pytest.mark.timeout(400)


def test_bench_dashboard_reports_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "dashboard"
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--dir",
            str(out),
            "--runs",
            "1",
            "--partitions",
            "100",
            "--measure-s",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=380,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = json.loads((out / "bench_dashboard.json").read_text())
    kill = figures["kill_to_page"]
    # The failover cannot be shown before the dead broker's session expires: 6 s after
    # its last ping, which can be up to a third of that before the kill.
    assert kill["failover_shown_s"]["median"] > 3.5
    assert kill["failover_shown_s"]["median"] > kill["unreachable_s"]["median"] > 0
    cost = figures["update_cost"]
    assert cost["partitions"] == 100
    assert set(cost["cpu_percent_one_page"]) == {"1", "2", "3"}
    assert cost["update_bytes"]["median_after"] > 0
    assert {v["leaders"] for v in cost["peer_local_view"].values()} != {0}
    assert "failover shown after" in proc.stdout
