"""scripts/bench_spark.py end to end at a smoke size (its own cluster and Spark: local, and a
standalone cluster of one worker). No speed is asserted: only that every figure is there,
that the sink wrote every record and that the pipeline's window counts equal the clicks
produced (the script checks both itself, by reading the topics back)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_spark.py"

# A local Spark, then a standalone cluster, and 22 s of clicks for the pipeline: two
# minutes, run with `-m slow`. The source, sink and pipeline it times are tested in
# tests/spark, on local Spark and on a standalone cluster.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


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
            "--workers",
            "1",
            # 20 s of clicks close at least the first window (its end is within 10 s of the
            # first click, and the watermark is 10 s behind the last).
            "--latency-seconds",
            "22",
            "--latency-rate",
            "50",
            "--latency-on",
            "standalone",
            "--out",
            str(out),
            "--data-dir",
            str(tmp_path / "cluster"),
        ],
        capture_output=True,
        text=True,
        timeout=560,
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
    (standalone,) = report["standalone_read"].values()
    assert standalone["rows"] == 3000 and standalone["mb_per_s"] > 0
    assert standalone["vs_perf_consume"] > 0 and standalone["vs_local"] > 0
    latency = report["latency_standalone"]
    assert latency["workers"] == 1 and latency["window_counts_measured"] >= 1
    assert 0 < latency["clicks_measured"] <= latency["clicks_sent"]
    # Each count came after the batch that acted on its window's watermark had started,
    # which started after the window's end + the watermark delay.
    for window in latency["windows"]:
        assert window["watermark_wait_ms"] >= 0 and window["processing_ms"] > 0
    assert latency["latency_ms"]["p50"] >= latency["floor_ms"]["p50"] >= 10_000
    assert "click pipeline (1 worker(s))" in proc.stdout
