"""scripts/bench_cleaner.py end to end at a smoke size. No speed is asserted: only that every
figure is there and positive, and that the pass left exactly the latest record of each key
(the script checks it and fails otherwise)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_cleaner.py"


def test_bench_cleaner_reports_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "cleaner"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--dir", str(out), "--mib", "4", "--codec", "lz4"],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run,) = json.loads((out / "bench_cleaner.json").read_text())["runs"]
    assert run["records"] == 4 * 1024
    assert run["kept"] == round(run["records"] * 0.1)
    assert run["mb_per_s"] > 0 and run["records_per_s"] > 0
    assert run["size_after_mib"] < run["size_before_mib"]
    assert "MB/s cleaned" in proc.stdout
