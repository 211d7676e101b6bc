"""scripts/bench_storage.py end to end at a smoke size. No speed is asserted: only that
every figure is there, positive, and that the log it measured reads back whole."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_storage.py"


def test_bench_storage_reports_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "storage"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--dir", str(out), "--gib", "0.01", "--runs", "2"],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((out / "storage.json").read_text())
    assert report["runs"] == 2
    for kind in ("raw", "leader", "follower"):
        assert len(report["append_mb_s"][kind]) == 2
        assert all(v > 0 for v in report["append_mb_s"][kind])
    for kind in ("leader", "follower"):
        assert len(report["append_ratios_per_round"][kind]) == 2
        assert report[f"append_ratio_{kind}_vs_raw"] > 0
    assert all(v > 0 for v in report["read_mb_s"]["log"] + report["recovery_warm_mb_s"])
    assert "vs raw" in proc.stdout
