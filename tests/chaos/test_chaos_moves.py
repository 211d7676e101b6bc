"""The reassign nemesis against a real cluster: partitions move (AlterPartitionReassignments)
while brokers are killed and paused, and nothing acknowledged is lost, replicas agree, and
the moves really happened: ZooKeeper's assignment is the target after a completed move,
the old replicas after a cancelled one."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.chaos.history import MoveOutcome
from minikafka.chaos.runner import ChaosOptions, ChaosReport, run_chaos, write_report
from tests.chaos.test_chaos_runs import FAST, assert_safe
from tests.cluster.conftest import ClusterFactory

pytestmark = pytest.mark.timeout(240)


def assert_moves_recorded(report: ChaosReport) -> None:
    moves = report.history.moves
    completed = [m for m in moves if m.outcome is MoveOutcome.COMPLETED]
    assert completed, f"no move completed: {moves}"
    for m in completed:
        # What ZooKeeper held when the heal was done (a later move may change it again).
        assert m.assignment == m.target != m.replicas, m
    for m in moves:
        if m.outcome is MoveOutcome.CANCELLED:
            # Back on the old replicas: Kafka's origin replicas, the moving list less the
            # adding ones, so in that list's order rather than the old one's.
            assert m.assignment is not None and sorted(m.assignment) == sorted(m.replicas), m
    windows = [f for f in report.history.faults if f.op == "reassign"]
    assert windows and all(f.end is not None and f.end > f.start for f in windows)
    assert "reassign" in report.result.unavailability_by_fault


async def test_partitions_move_during_kills_and_pauses_and_nothing_is_lost(
    make_cluster: ClusterFactory, tmp_path: Path
) -> None:
    cluster = make_cluster(brokers=4, overrides=FAST)
    opts = ChaosOptions(
        nemesis=("kill", "pause", "reassign"), interval_s=4.0, time_limit_s=32.0, seed=11, rate=50
    )
    report = await run_chaos(cluster, opts, log=print)
    write_report(report, tmp_path / "report")
    ops = [f.op for f in report.history.faults]
    assert "reassign" in ops and {"kill", "pause"} & set(ops), ops
    # The reassign faults overlapped the others (their own track).
    others = [f for f in report.history.faults if f.op != "reassign"]
    moves = [f for f in report.history.faults if f.op == "reassign"]
    assert any(
        m.start < (o.end or m.start) and o.start < (m.end or o.start) for m in moves for o in others
    ), report.history.faults
    assert_moves_recorded(report)
    assert_safe(report)
    print(report.result.summary_rows())
