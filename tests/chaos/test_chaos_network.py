"""Chaos runs with network partitions (issue 5): brokers in their own network namespaces
(root only; CI runs as root). Safe settings lose nothing; the 2013 negative control, with
unclean leader election and min.insync.replicas=1, must show the checker finding loss."""

from __future__ import annotations

import pytest

from minikafka.chaos.runner import ChaosOptions, ChaosReport, run_chaos
from tests.chaos.test_chaos_runs import FAST, assert_safe
from tests.cluster.conftest import ClusterFactory

pytestmark = pytest.mark.timeout(240)


@pytest.mark.parametrize(
    ("nemesis", "interval"),
    [
        ("partition", 9.0),  # past the 6 s session timeout: the isolated leader is a zombie
        ("partition-from-brokers", 6.0),  # keeps its session: it must stop acking alone
        ("zk-expire", 5.0),
    ],
)
async def test_network_chaos_run_loses_nothing(
    make_cluster: ClusterFactory, nemesis: str, interval: float
) -> None:
    cluster = make_cluster(overrides=FAST, network="netns")
    opts = ChaosOptions(
        nemesis=(nemesis,), interval_s=interval, time_limit_s=4 * interval, seed=11, rate=50
    )
    report = await run_chaos(cluster, opts, log=print)
    assert [f.op for f in report.history.faults], "the nemesis must have struck"
    assert_safe(report)


async def test_negative_control_unsafe_settings_lose_acknowledged_writes(
    make_cluster: ClusterFactory,
) -> None:
    """Unclean election + min.insync.replicas=1 + the 2013 schedule: the cut-off leader acks
    alone, then loses its session; an out-of-sync follower takes over and the old leader's
    acknowledged writes are truncated away. The checker must say so."""
    cluster = make_cluster(overrides=FAST, network="netns")
    opts = ChaosOptions(
        partitions=1,
        min_insync_replicas=1,
        unclean_leader_election=True,
        nemesis=("partition-2013",),
        interval_s=16.0,
        time_limit_s=32.0,
        seed=1,
        rate=50,
    )
    report: ChaosReport = await run_chaos(cluster, opts, log=print)
    result = report.result
    assert [f.op for f in report.history.faults] == ["partition-2013"]
    assert not result.valid
    assert result.lost, result.problems
