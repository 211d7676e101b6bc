"""scripts/bench_scale.py end to end, small: 100 partitions, no settling, 2 idle seconds.
No speed is asserted: only that every figure is there and sensible (every broker's metadata
ends up with every partition led and its ISR full, or the figure says it was not reached)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.perf.bench_run import run_bench

pytestmark = pytest.mark.timeout(300)

PARTITIONS = 100
PROCESSES = {"broker 1", "broker 2", "broker 3", "zookeeper"}


def test_bench_scale_reports_every_figure(tmp_path: Path) -> None:
    cluster_dir = tmp_path / "cluster"
    printed = run_bench(
        "bench_scale.py",
        [
            *("--partitions", str(PARTITIONS), "--idle-seconds", "2", "--settle-seconds", "0"),
            *("--data-dir", str(cluster_dir)),
        ],
        tmp_path,
        cluster_dir,
        timeout_s=240,
    )
    # Without --json the figures go into the data dir.
    figures = json.loads((cluster_dir / "bench_scale.json").read_text())
    settings = figures["settings"]
    assert (settings["partitions"], settings["topics"], settings["brokers"]) == (PARTITIONS, 1, 3)
    assert figures["cluster_start_s"] > 0
    assert figures["controller"] in (1, 2, 3)

    creation = figures["creation"]
    returned = creation["create_requests_returned_s"]
    assert returned > 0
    assert set(creation["per_broker"]) == {"1", "2", "3"}
    for b, view in creation["per_broker"].items():
        assert view["partitions_seen_ready"] == PARTITIONS, b
        # Each broker's metadata is polled only once the CreateTopics calls returned.
        assert view["led_full_isr_after_s"] >= returned, b
        assert view["metadata_polls"] >= 1, b
    assert creation["all_led_full_isr_on_every_broker_s"] == max(
        v["led_full_isr_after_s"] for v in creation["per_broker"].values()
    )

    assert set(figures["idle_cpu_percent"]) == PROCESSES
    for name, pct in figures["idle_cpu_percent"].items():
        assert 0 <= pct <= 100 * figures["machine"]["cores"], name  # idle may round to 0
    assert set(figures["memory_kb"]) == PROCESSES
    for name, mem in figures["memory_kb"].items():
        assert 0 < mem["VmRSS"] <= mem["VmHWM"], name

    assert set(figures["scrape"]) == {"1", "2", "3"}
    for b, scrape in figures["scrape"].items():
        assert scrape["scrape_s"] > 0 and scrape["bytes"] > 0 and scrape["samples"] > 0, b
        assert scrape["ping_max_ms_quiet"] > 0, b  # 2 s of round trips without a scrape
    assert figures["shutdown_s"] > 0

    assert "all partitions led, full ISR, in every broker's metadata" in printed
    assert "not reached" not in printed
    assert "clean shutdown of the cluster" in printed
    assert f"figures written to {cluster_dir / 'bench_scale.json'}" in printed
