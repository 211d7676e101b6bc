"""The reassign nemesis against a real cluster: partitions move (AlterPartitionReassignments)
while brokers are killed and paused, and nothing acknowledged is lost, replicas agree, and
the moves really happened: ZooKeeper's assignment is the target after a completed move,
the old replicas after a cancelled one."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from minikafka.chaos.history import History, MoveOutcome
from minikafka.chaos.moves import ReassignNemesis
from minikafka.chaos.nemesis import choose_moves
from minikafka.chaos.runner import ChaosOptions, ChaosReport, run_chaos, write_report
from minikafka.common import TopicPartition
from tests.chaos.test_chaos_long import LONG_S
from tests.chaos.test_chaos_runs import FAST, assert_safe
from tests.cluster.conftest import ClusterFactory, wait_until
from tests.cluster.helpers import create_topic

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


async def test_a_move_unanswered_without_a_controller_cancelled_when_stuck_and_completed(
    make_cluster: ClusterFactory,
) -> None:
    """Each way a move ends, made to happen: with the controller paused the request gets
    no answer and the attempt is recorded as unanswered (the nemesis carries on; the
    controller may still act on it once resumed, and the run waits for it); a move onto a
    paused broker (still registered: its session has not expired) cannot finish, so the
    heal cancels it and the partition is back on its replicas; with every broker running
    the move completes, ZooKeeper holds the target, and the preferred leader election that
    follows leaves the target's first replica leading. A stuck move whose cancel gets no
    answer either (the controller paused too) stays unresolved until the run's final wait."""
    cluster = make_cluster(brokers=4, overrides=FAST)
    zk = cluster.zk_client()
    wait_until(lambda: cluster.controller() is not None, 30, "a controller")
    current = cluster.controller()
    assert current is not None
    controller = current[0]
    # The broker that will be paused for the cancel: neither the controller nor a replica.
    outsider = max(b for b in cluster.broker_ids if b != controller)
    replicas = [b for b in cluster.broker_ids if b != outsider]
    topic = "moves"
    await create_topic(cluster, topic, -1, -1, assignment={0: replicas, 1: replicas[::-1]})
    history = History(topic)
    t0 = time.monotonic()
    movers = ReassignNemesis(
        cluster.bootstrap_servers,
        zk,
        topic,
        2,
        history,
        lambda: time.monotonic() - t0,
        request_timeout_s=2.0,
    )
    try:
        cluster.pause(controller)
        try:
            active, what = await movers.start(pick=1)
        finally:
            cluster.resume(controller)
        assert active is None and what.startswith("no controller answered"), what
        unanswered = list(history.moves)
        assert unanswered and all(m.outcome is MoveOutcome.UNANSWERED for m in unanswered)
        assert all(m.error for m in unanswered)
        # In doubt: the resumed controller reads the request and may carry it out, a moment
        # after it resumes (before or after the run's first look). Give it that moment, so
        # that what follows starts from where the partitions really are.
        before_doubt = zk.get_assignment(topic)
        deadline = time.monotonic() + 5.0
        while zk.get_assignment(topic) == before_doubt and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert await movers.finish_moves(30.0)
        assignment = zk.get_assignment(topic)
        assert assignment is not None
        for m in unanswered:
            assert assignment[m.partition] in (m.replicas, m.target), (m, assignment)
        history.moves.clear()

        # A pick that adds the outsider to some partition's replicas (the choice is pure).
        pick = next(
            k
            for k in range(1000)
            if any(
                outsider in t and outsider not in assignment[p]
                for p, t in choose_moves(assignment, cluster.broker_ids, k).items()
            )
        )
        cluster.pause(outsider)
        try:
            active, what = await movers.start(pick)
            assert active is not None, what
            summary = await movers.heal(active, timeout_s=1.0)
        finally:
            cluster.resume(outsider)
        onto_outsider = [
            m for m in history.moves if outsider in m.target and outsider not in m.replicas
        ]
        assert onto_outsider and all(m.outcome is MoveOutcome.CANCELLED for m in onto_outsider)
        for m in onto_outsider:
            assert m.assignment is not None and sorted(m.assignment) == sorted(m.replicas), m
            assert m.election is None, m
        assert "cancelled" in summary
        history.moves.clear()

        # Stuck, and no controller to cancel it either: unresolved until the end, when the
        # run waits for what is still moving (every broker back).
        assert await movers.finish_moves(30.0)
        assignment = zk.get_assignment(topic)
        assert assignment is not None
        pick = next(
            k
            for k in range(1000)
            if any(
                outsider in t and outsider not in assignment[p]
                for p, t in choose_moves(assignment, cluster.broker_ids, k).items()
            )
        )
        current = cluster.controller()
        assert current is not None and current[0] != outsider
        cluster.pause(outsider)
        try:
            active, what = await movers.start(pick)
            assert active is not None, what
            cluster.pause(current[0])
            try:
                summary = await movers.heal(active, timeout_s=0.5)
            finally:
                cluster.resume(current[0])
        finally:
            cluster.resume(outsider)
        assert "unresolved" in summary and not any(
            m.outcome is MoveOutcome.UNRESOLVED for m in history.moves
        )
        stuck = [
            m for m in movers.unresolved if outsider in m.target and outsider not in m.replicas
        ]
        assert stuck and all(m.error and "cancel" in m.error for m in stuck), movers.unresolved
        assert await movers.finish_moves(30.0)
        assert not movers.unresolved
        final = zk.get_assignment(topic)
        assert final is not None
        for m in history.moves:
            if outsider in m.target and outsider not in m.replicas:
                assert m.outcome is MoveOutcome.UNRESOLVED and m.assignment == final[m.partition]
                # The controller, resumed, took the cancel it had been sent, or the move
                # finished first: either way one of the two replica lists, nothing between.
                assert sorted(final[m.partition]) in (sorted(m.replicas), sorted(m.target)), m
        history.moves.clear()

        cluster.wait_for_registered(cluster.broker_ids, 30)
        before = zk.get_assignment(topic)
        assert before is not None
        active, what = await movers.start(pick=7)
        assert active is not None, what
        await movers.heal(active, timeout_s=30.0)
        assert history.moves and all(m.outcome is MoveOutcome.COMPLETED for m in history.moves)
        after = zk.get_assignment(topic)
        assert after is not None
        for m in history.moves:
            assert m.replicas == before[m.partition] and m.target != m.replicas
            assert m.assignment == m.target == after[m.partition], m
            assert m.election in ("elected", "not needed"), m
            state = zk.get_partition_state(TopicPartition(topic, m.partition))
            assert state is not None and state.leader == m.target[0], (m, state)
    finally:
        await movers.close()


@pytest.mark.slow
@pytest.mark.timeout(int(LONG_S) + 600)
async def test_long_schedule_of_moves_among_every_process_fault_loses_nothing(
    make_cluster: ClusterFactory, tmp_path: Path
) -> None:
    """The long variant (`pytest -m slow`, MINIKAFKA_CHAOS_LONG_S seconds): moves beside
    kills, pauses, controller kills and clean restarts on four brokers."""
    cluster = make_cluster(brokers=4, overrides=FAST)
    opts = ChaosOptions(
        nemesis=("kill", "pause", "controller", "restart", "reassign"),
        interval_s=6.0,
        time_limit_s=LONG_S,
        seed=2026,
    )
    report = await run_chaos(cluster, opts, log=print)
    paths = write_report(report, tmp_path / "report")
    print(f"report: {paths['json']}")
    assert_moves_recorded(report)
    assert_safe(report)
