"""Short chaos runs against real clusters (issue 5): each schedule ends with nothing lost,
no divergence, and epochs only increasing; the consumer group of the run (two members
committing by hand) never committed past a record no member was given, and by the end
every record of the final log was given to some member. Loopback faults here; network
partitions are in test_chaos_network.py (they need network namespaces)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from minikafka.chaos.history import Outcome, ProducerMode
from minikafka.chaos.runner import ChaosOptions, ChaosReport, run_chaos, write_report
from tests.cluster.conftest import ClusterFactory

pytestmark = pytest.mark.timeout(180)

FAST = {
    "replica.lag.time.max.ms": "2000",
    "isr.change.propagation.check.interval.ms": "200",
    "isr.change.propagation.blackout.ms": "500",
}


def assert_safe(report: ChaosReport) -> None:
    result = report.result
    assert result.valid, result.problems
    assert result.acknowledged > 100, "the workload must have written something"
    assert not result.lost and not result.replica_divergence
    assert not result.leader_epoch_violations and not result.controller_epoch_violations
    assert report.recovered
    assert_group_consumed_everything(report)


def assert_group_consumed_everything(report: ChaosReport) -> None:
    """At-least-once delivery of the run's consumer group, when it had one: nothing below
    the commit point left undelivered, and once writes stopped the group caught up, so
    every record of the final log was given to some member."""
    group = report.result.group
    if report.history.group is None:
        return
    assert group is not None
    assert not group.losses and not group.read_divergence, report.result.problems
    assert group.final_records > 100, "the final log must hold the workload's records"
    assert report.history.meta["group"]["caught_up"], report.history.meta["group"]
    assert group.delivered == group.final_records and group.not_yet_consumed == 0
    assert group.commits_acknowledged > 0 and group.assignments >= 2


@pytest.mark.parametrize(
    ("nemesis", "interval"),
    [
        ("kill", 5.0),
        ("pause", 9.0),  # longer than the 6 s session timeout: a zombie leader comes back
        ("controller", 5.0),
        ("restart", 5.0),
        ("coordinator", 5.0),  # kill -9 of the consumer group's coordinator
    ],
)
async def test_short_chaos_run_loses_nothing(
    make_cluster: ClusterFactory, tmp_path: Path, nemesis: str, interval: float
) -> None:
    cluster = make_cluster(overrides=FAST)
    opts = ChaosOptions(
        nemesis=(nemesis,), interval_s=interval, time_limit_s=4 * interval, seed=7, rate=50
    )
    logged: list[str] = []
    report = await run_chaos(cluster, opts, log=lambda line: logged.append(str(line)))
    paths = write_report(report, tmp_path / "report")
    assert paths["json"].stat().st_size > 0 and paths["plot"].stat().st_size > 0
    assert [f.op for f in report.history.faults], "the nemesis must have struck"
    assert_safe(report)
    # Not silent until the first fault: what runs, then that writing has begun.
    assert logged[0].startswith(f"chaos on topic {opts.topic} (3 partitions, RF 3)"), logged
    assert logged[1] == f"writing; the first fault comes in {interval:g} s", logged


async def test_idempotent_producers_write_every_value_once_through_a_leader_kill(
    make_cluster: ClusterFactory,
) -> None:
    """Kafka's idempotent producer (retries until the delivery timeout, five requests in
    flight) through one kill -9 of a broker: the sends it cut off are retried to the new
    leaders, which must recognise batches already appended (their producer state comes
    from replication), so every value is in the log once, none lost, none given up; the
    consumer group reads the topic as with the plain producer."""
    cluster = make_cluster(overrides=FAST)
    opts = ChaosOptions(
        nemesis=("kill",),
        interval_s=5.0,
        faults=1,
        seed=7,
        rate=50,
        producer=ProducerMode.IDEMPOTENT,
    )
    logged: list[str] = []
    report = await run_chaos(cluster, opts, log=lambda line: logged.append(str(line)))
    result = report.result
    assert [f.op for f in report.history.faults] == ["kill"]
    assert result.producer is ProducerMode.IDEMPOTENT
    assert dict(result.summary_rows())["producer"].startswith("idempotent")
    assert "3 idempotent producers" in logged[0] and logged[0].endswith("for 1 fault (seed 7)")
    assert result.duplicates == [] and result.lost == [], result.problems
    assert report.history.meta["producer_fatal_errors"] == []
    # The delivery timeout outlasts the fault: every send was acknowledged in the end.
    assert result.in_doubt == 0 and result.failed == 0, [
        a.error for a in report.history.attempts if a.outcome is not Outcome.OK
    ]
    assert_safe(report)
    slowest = max((a.complete_time or 0.0) - a.invoke_time for a in report.history.attempts)
    print(
        f"idempotent kill run: {result.acknowledged} acknowledged, {len(result.duplicates)} "
        f"duplicates, {len(result.lost)} lost, slowest acknowledgement {slowest:.2f} s"
    )


async def test_asynchronous_group_commits_are_applied_in_the_order_each_member_sent_them(
    make_cluster: ClusterFactory,
) -> None:
    """Members commit every few records without waiting, so each has several commits in
    flight on its coordinator connection, through kill -9s of the coordinator; the group's
    committed offsets, read back all along, never show a commit applied after a later
    acknowledged one of the same member (Kafka processes a connection's requests in
    order), and nothing is lost."""
    cluster = make_cluster(overrides=FAST)
    opts = ChaosOptions(
        nemesis=("coordinator",),
        interval_s=5.0,
        time_limit_s=20.0,
        seed=7,
        rate=50,
        group_async_commits=True,
    )
    report = await run_chaos(cluster, opts, log=print)
    assert [f.op for f in report.history.faults], "the nemesis must have struck"
    assert_safe(report)
    group = report.result.group
    assert group is not None and group.commits_out_of_order == []
    # Commits pipelined: many acknowledged, read back many times.
    assert group.commits_acknowledged > 100 and group.offset_reads > 50
    commits = sorted(report.history.group_commits, key=lambda c: (c.member, c.invoke_time))
    in_flight_together = sum(
        1
        for a, b in itertools.pairwise(commits)
        if a.member == b.member and b.invoke_time < (a.complete_time or float("inf"))
    )
    assert in_flight_together > 10, "members must have had commits in flight together"


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


async def test_negative_control_a_member_committing_past_what_it_was_given_is_caught(
    make_cluster: ClusterFactory,
) -> None:
    """A deliberately broken member (test-only option): member 0 leaves every 25th record
    it is given unrecorded, as if never given, and commits past it. The checker must find
    those records below the group's commit point and call the run invalid, while the
    acknowledged writes themselves are all there."""
    cluster = make_cluster(overrides=FAST)
    opts = ChaosOptions(
        nemesis=("coordinator",),
        interval_s=4.0,
        time_limit_s=8.0,
        seed=7,
        rate=50,
        group_drop_every=25,
    )
    report = await run_chaos(cluster, opts, log=print)
    result = report.result
    assert result.group is not None
    assert result.group.losses, result.group
    assert not result.valid
    assert all("group" in p for p in result.problems), result.problems
    assert not result.lost and not result.replica_divergence


def test_sigterm_stops_a_chaos_run_and_heals_its_fault(make_cluster: ClusterFactory) -> None:
    """SIGTERM mid-fault: the run ends as on Ctrl-C, the paused broker is resumed, and the
    command says so and exits with 143."""
    import signal
    import subprocess
    import sys

    from tests.cluster.conftest import wait_until

    cluster = make_cluster(overrides=FAST)
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "minikafka", "chaos", "--data-dir", str(cluster.data_dir)),
            *("--nemesis", "pause", "--interval", "2", "--time-limit", "120"),
            *("--group-members", "0", "--topic", "chaos-sigterm"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if " pause broker " in line:
                break
        paused = int(lines[-1].split(" pause broker ")[1].split()[0].removeprefix("broker-"))
        assert cluster.is_paused(paused), lines
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    output = "".join(lines) + rest
    assert proc.returncode == 143, output
    assert "stopped: every fault healed" in output
    wait_until(lambda: not cluster.is_paused(paused), 10, "the broker resumed")
