"""scripts/bench_replication.py end to end, small: one ISR shrink and expansion, 2,000
records per acks mode. No speed is asserted: only that every figure is there and sensible,
and that the ISR timings are those of the path it says it times (the leader's lag check and
the ISR change notification's blackout, not an expired ZooKeeper session)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.perf.bench_run import run_bench

pytestmark = pytest.mark.timeout(300)

RECORDS = 2000
LAG_S = 3.0  # the script's replica.lag.time.max.ms
BLACKOUT_S = 5.0  # isr.change.propagation.blackout.ms (the default)
ROW_LABELS = (
    "ISR shrink: SIGSTOP follower → state znode without it",
    "shrink ISR write (znode mtime) → every live broker's Metadata",
    "ISR expand: SIGCONT → state znode with it again",
    "expand ISR write (znode mtime) → every broker's Metadata",
    "produce acks=all, 1 KiB records, RF=3 (records/s)",
    "produce acks=1, 1 KiB records, RF=3 (MB/s)",
)


def test_bench_replication_reports_every_figure(tmp_path: Path) -> None:
    cluster_dir, figures_path = tmp_path / "cluster", tmp_path / "bench_replication.json"
    printed = run_bench(
        "bench_replication.py",
        [
            *("--runs", "1", "--records", str(RECORDS)),
            *("--data-dir", str(cluster_dir), "--json", str(figures_path)),
        ],
        tmp_path,
        cluster_dir,
        timeout_s=240,
    )
    figures = json.loads(figures_path.read_text())
    (isr,) = figures["isr_runs"]
    assert isr["paused"] != isr["leader"] and {isr["paused"], isr["leader"]} <= {1, 2, 3}
    # An expired session would have the controller shrink the ISR, not the leader.
    assert isr["session_kept"] is True
    # The record produced after the SIGSTOP leaves the follower behind; the leader drops
    # it only once it has not caught up for replica.lag.time.max.ms.
    assert isr["shrink_write_s"] > LAG_S - 0.5
    assert isr["shrink_s"] >= isr["shrink_write_s"] - 0.01  # seen after written (ms mtime)
    assert isr["expand_s"] >= isr["expand_write_s"] - 0.01
    assert isr["expand_s"] > 0
    # A leader announces an ISR change once none happened for the blackout.
    live = {b for b in (1, 2, 3) if b != isr["paused"]}
    for phase, brokers in (("shrink", live), ("expand", {1, 2, 3})):
        per_broker = isr[f"{phase}_propagation_per_broker_s"]
        assert {int(b) for b in per_broker} == brokers, phase
        assert isr[f"{phase}_propagation_s"] == max(per_broker.values())
        assert isr[f"{phase}_propagation_s"] > BLACKOUT_S - 0.5, phase
    assert isr["paused_s"] > isr["shrink_s"]

    tput = figures["throughput"]
    assert tput["records_per_mode"] == RECORDS and tput["record_bytes"] == 1024
    (run,) = tput["runs"]
    assert set(run) == {"all", "1"}
    for acks, f in run.items():
        assert f["seconds"] > 0 and f["records_per_s"] > 0, acks
        assert f["records_per_s"] == pytest.approx(RECORDS / f["seconds"])
        assert f["mb_per_s"] == pytest.approx(f["records_per_s"] * 1024 / 2**20)
        assert f"run 1: acks={acks}: {RECORDS} records sent" in printed

    assert "WARNING" not in printed
    for label in ROW_LABELS:
        assert label in printed, label
