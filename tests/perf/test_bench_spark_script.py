"""scripts/bench_spark.py end to end at a smoke size (its own cluster and Spark). No speed is
asserted: only that every figure is there, and that the sink wrote every record (the
script checks that itself by reading the topic back)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_spark.py"


def test_bench_spark_reports_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--records",
            "3000",
            "--trickle-rate",
            "50",
            "--trickle-seconds",
            "3",
            "--out",
            str(out),
            "--data-dir",
            str(tmp_path / "cluster"),
        ],
        capture_output=True,
        text=True,
        timeout=280,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((out / "bench_spark.json").read_text())
    for name in ("perf_produce", "perf_consume", "spark_read", "spark_write"):
        assert report[name]["rows"] == 3000
        assert report[name]["mb_per_s"] > 0 and report[name]["rows_per_s"] > 0
    assert report["read_vs_perf_consume"] > 0 and report["write_vs_perf_produce"] > 0
    trickle = report["spark_trickle"]
    assert trickle["records_read"] == trickle["records_sent"] > 0
    assert trickle["micro_batches"] >= 1 and trickle["batch_duration_ms_p50"] > 0
    assert "Spark batch read" in proc.stdout and "micro-batches" in proc.stdout
