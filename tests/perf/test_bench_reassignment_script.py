"""scripts/bench_reassignment.py end to end at a smoke size. No speed is asserted: only
that every figure is there and sensible (the moves completed, the new replicas copied at
least the data written before, and every probe send was acknowledged)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.perf.bench_run import run_bench

pytestmark = pytest.mark.timeout(300)


def test_bench_reassignment_reports_every_figure(tmp_path: Path) -> None:
    cluster_dir, figures_path = tmp_path / "cluster", tmp_path / "bench_reassignment.json"
    printed = run_bench(
        "bench_reassignment.py",
        ["--megabytes", "12", "--rate", "100", "--seconds", "2",
         "--data-dir", str(cluster_dir), "--json", str(figures_path)],
        tmp_path,
        cluster_dir,
        timeout_s=240,
    )  # fmt: skip
    figures = json.loads(figures_path.read_text())
    for phase in ("at_rest", "during_reassignment"):
        got = figures[phase]
        assert got["count"] > 0 and 0 < got["p50_ms"] <= got["p99_ms"] <= got["max_ms"], phase
    assert figures["partitions_moved"] == 3 and figures["move_seconds"] > 0
    # Half the partitions (6 MB of the 12 written before) were copied to the new broker.
    assert figures["bytes_copied"] >= 6 * 1024 * 1024
    assert figures["probe_failed_sends"] == 0
    assert "partitions moved onto broker 4 in" in printed
