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


async def test_zk_session_expiry_during_an_isr_change_loses_nothing(
    make_cluster: ClusterFactory,
) -> None:
    """A follower is paused; the moment its leader's ISR shrink lands in ZooKeeper, before
    the change has propagated, the leader's session is expired. The controller's failover
    and the leader's own conditional ISR writes race on the same state znode."""
    cluster = make_cluster(overrides=FAST)
    opts = ChaosOptions(
        nemesis=("isr-change-zk-expire",), interval_s=6.0, time_limit_s=24.0, seed=7, rate=50
    )
    report = await run_chaos(cluster, opts, log=print)
    history = report.history
    assert history.faults, "the nemesis must have struck"
    starts = [w.start for w in history.faults] + [history.end or float("inf")]
    for window, next_start in zip(history.faults, starts[1:], strict=True):
        leader = int(window.target)
        # Which partitions: those this broker led when the fault started.
        led = {
            o.partition for o in history.leaders if o.leader == leader and o.time <= window.start
        }
        shrunk = {
            o.partition
            for o in history.isr
            if o.partition in led
            and window.start <= o.time <= (window.end or next_start)
            and len(o.isr) < 3
        }
        assert shrunk, f"no ISR shrink during {window}"
        # The session expiry moved leadership away before the next fault (the window itself
        # may be cut short by the time limit before the controller acts).
        moved = [
            o
            for o in history.leaders
            if o.partition in shrunk and window.start <= o.time < next_start and o.leader != leader
        ]
        assert moved, f"leadership did not move after the session expiry in {window}"
    assert_safe(report)
