"""Long chaos schedules (minutes each), kept out of the default run: `pytest -m slow`.

Every fault kind in one seeded schedule, on a loopback cluster and on a netns cluster (where
network partitions are possible). Same invariants as the short runs: nothing acknowledged is
lost, replicas agree below the HW, epochs only increase, and the cluster recovers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from minikafka.chaos.runner import ChaosOptions, run_chaos, write_report
from tests.chaos.test_chaos_runs import FAST, assert_safe
from tests.cluster.conftest import ClusterFactory

LONG_S = float(os.environ.get("MINIKAFKA_CHAOS_LONG_S", "300"))

pytestmark = [pytest.mark.slow, pytest.mark.timeout(int(LONG_S) + 600)]


@pytest.mark.parametrize(
    ("network", "nemesis"),
    [
        ("loopback", ("kill", "pause", "controller", "restart", "isr-change-zk-expire")),
        (
            "netns",
            ("kill", "pause", "partition", "partition-from-brokers", "zk-expire", "controller"),
        ),
    ],
)
async def test_long_mixed_schedule_loses_nothing(
    make_cluster: ClusterFactory, tmp_path: Path, network: str, nemesis: tuple[str, ...]
) -> None:
    cluster = make_cluster(overrides=FAST, network=network)
    opts = ChaosOptions(nemesis=nemesis, interval_s=8.0, time_limit_s=LONG_S, seed=2026)
    report = await run_chaos(cluster, opts, log=print)
    paths = write_report(report, tmp_path / "report")
    print(f"report: {paths['json']}")
    struck = {f.op for f in report.history.faults}
    assert len(struck) >= min(3, len(nemesis)), f"too few kinds of fault struck: {struck}"
    assert_safe(report)
