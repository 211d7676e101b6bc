"""Short chaos runs against real clusters (issue 5): each schedule ends with nothing lost,
no divergence, and epochs only increasing. Loopback faults here; network partitions are
in test_chaos_network.py (they need network namespaces)."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.chaos.runner import ChaosOptions, run_chaos, write_report
from tests.cluster.conftest import ClusterFactory

pytestmark = pytest.mark.timeout(180)

FAST = {
    "replica.lag.time.max.ms": "2000",
    "isr.change.propagation.check.interval.ms": "200",
    "isr.change.propagation.blackout.ms": "500",
}


def assert_safe(report: object) -> None:
    result = report.result  # type: ignore[attr-defined]
    assert result.valid, result.problems
    assert result.acknowledged > 100, "the workload must have written something"
    assert not result.lost and not result.replica_divergence
    assert not result.leader_epoch_violations and not result.controller_epoch_violations
    assert report.recovered  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("nemesis", "interval"),
    [
        ("kill", 5.0),
        ("pause", 9.0),  # longer than the 6 s session timeout: a zombie leader comes back
        ("controller", 5.0),
        ("restart", 5.0),
    ],
)
async def test_short_chaos_run_loses_nothing(
    make_cluster: ClusterFactory, tmp_path: Path, nemesis: str, interval: float
) -> None:
    cluster = make_cluster(overrides=FAST)
    opts = ChaosOptions(
        nemesis=(nemesis,), interval_s=interval, time_limit_s=4 * interval, seed=7, rate=50
    )
    report = await run_chaos(cluster, opts, log=print)
    paths = write_report(report, tmp_path / "report")
    assert paths["json"].stat().st_size > 0 and paths["plot"].stat().st_size > 0
    assert [f.op for f in report.history.faults], "the nemesis must have struck"
    assert_safe(report)
