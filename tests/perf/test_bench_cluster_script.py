"""scripts/bench_cluster.py end to end with one failover run (its other measures at their
README sizes: they take seconds). No speed is asserted: only that every figure is there
and sensible (the script itself fails when the leader does not change after the kill, or
leadership has not moved when the controlled shutdown ends)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.perf.bench_run import run_bench

pytestmark = pytest.mark.timeout(300)

ROW_LABELS = (
    "kill -9 leader → first acks=all produce on new leader (median of 1)",
    "controlled shutdown, broker leading 100 partitions",
    "create topic 1,000 partitions RF=3, all leaders elected",
    "preferred election of the 1,000 partitions after a broker restart, in every broker's metadata",
    "stop the whole cluster (clean close of every broker, ZooKeeper)",
)


def test_bench_cluster_reports_every_figure(tmp_path: Path) -> None:
    cluster_dir, figures_path = tmp_path / "cluster", tmp_path / "bench_cluster.json"
    printed = run_bench(
        "bench_cluster.py",
        ["--runs", "1", "--data-dir", str(cluster_dir), "--json", str(figures_path)],
        tmp_path,
        cluster_dir,
        timeout_s=240,
    )
    figures = json.loads(figures_path.read_text())
    (failover,) = figures["failover_seconds"]
    # No new leader before the killed one's ZooKeeper session (6 s) expires: 6 s after its
    # last ping, which can be up to a third of that before the kill.
    assert failover > 3.5
    assert figures["failover_median_seconds"] == failover
    for key in (
        "controlled_shutdown_100_leaders_seconds",
        "create_1000_partitions_rf3_seconds",
        "preferred_election_1000_partitions_seconds",
        "whole_cluster_stop_seconds",
    ):
        assert figures[key] > 0, key
    # The restarted broker's preferred leaderships, about a third of them, moved back.
    assert 0 < figures["preferred_election_partitions_moved"] < 1000
    assert figures["machine"]["cores"] >= 1

    run = re.search(
        r"run 1: killed leader (\d); new leader (\d); acked offset (\d+) after ([\d.]+)s", printed
    )
    assert run is not None, printed
    old, new, offset = int(run[1]), int(run[2]), int(run[3])
    assert old != new and {old, new} <= {1, 2, 3}
    assert float(run[4]) == pytest.approx(failover, abs=0.006)  # printed to 2 decimals
    # Right after the warm-up record (offset 0), on the new leader: none lost, none twice.
    assert offset == 1
    for label in ROW_LABELS:
        assert label in printed, label


def test_bench_cluster_times_a_throttled_move(tmp_path: Path) -> None:
    """`--throttled-move`: 8 MiB unthrottled and at 1 MiB/s; the throttled one takes
    seconds (about 8 less the first response, of up to a fetch per partition, which
    passes at once), the unthrottled one far less."""
    cluster_dir, figures_path = tmp_path / "cluster", tmp_path / "throttle.json"
    printed = run_bench(
        "bench_cluster.py",
        [
            "--throttled-move",
            "8",
            "--throttles",
            "0,1048576",
            "--data-dir",
            str(cluster_dir),
            "--json",
            str(figures_path),
        ],
        tmp_path,
        cluster_dir,
        timeout_s=240,
    )
    figures = json.loads(figures_path.read_text())
    free, throttled = figures["moves"]
    assert (free["throttle_bytes_per_s"], throttled["throttle_bytes_per_s"]) == (0, 1048576)
    assert 2.5 < throttled["seconds"] < 12, throttled
    assert free["seconds"] < throttled["seconds"] / 3, (free, throttled)
    assert "8 MB at throttle 1048576" in printed


# Two clusters, a kill and a session timeout each: about a minute. What it measures is
# tested in tests/cluster/test_disconnected_followers.py, in the default run.
@pytest.mark.slow
def test_bench_cluster_times_acks_all_writes_after_a_kill_both_ways(tmp_path: Path) -> None:
    """`--write-resume`: one kill -9 at a 6 s session, with replica.lag.disconnected.max.ms
    at 2 s and off. With it, the partition a survivor leads takes writes again well before
    the killed broker's session expires; without it, not before (Kafka's behaviour)."""
    cluster_dir, figures_path = tmp_path / "cluster", tmp_path / "resume.json"
    printed = run_bench(
        "bench_cluster.py",
        [
            *("--write-resume", "--runs", "1", "--session-timeout-ms", "6000"),
            *("--data-dir", str(cluster_dir), "--json", str(figures_path)),
        ],
        tmp_path,
        cluster_dir,
        timeout_s=240,
    )
    figures = json.loads(figures_path.read_text())
    on, off = figures["disconnected_max_ms_2000"], figures["disconnected_max_ms_-1"]
    # The killed broker led its partition: no new leader before its session (6 s) expires,
    # 6 s after its last ping, which can be up to a third of that before the kill.
    for setting in (on, off):
        (killed_led,) = setting["killed_led_seconds"]
        assert killed_led > 3.5, setting
    (survivor_on,) = on["survivor_led_seconds"]
    (survivor_off,) = off["survivor_led_seconds"]
    assert 1.9 < survivor_on < 3.5, on  # the 2 s bound, then one ISR write
    assert survivor_off > 3.5, off
    assert "partition led by a survivor" in printed


SCALE_PARTITIONS = 60


def test_bench_cluster_at_scale_reports_every_figure(tmp_path: Path) -> None:
    """`--scale`, tiny: 60 partitions in one topic, a 6 s session (the mode's default).
    Each broker is the preferred leader of a third of them (Kafka's round-robin
    assignment), so the killed controller and the broker shut down each led 20."""
    cluster_dir, figures_path = tmp_path / "cluster", tmp_path / "scale.json"
    printed = run_bench(
        "bench_cluster.py",
        [
            *("--scale", str(SCALE_PARTITIONS)),
            *("--data-dir", str(cluster_dir), "--json", str(figures_path)),
            *("--profile", str(tmp_path / "profile")),
        ],
        tmp_path,
        cluster_dir,
        timeout_s=150,
    )
    figures = json.loads(figures_path.read_text())
    settings = figures["settings"]
    assert (settings["partitions"], settings["topics"]) == (SCALE_PARTITIONS, 1)
    assert settings["zookeeper_session_timeout_ms"] == 6000

    creation = figures["creation"]
    assert (
        0 < creation["create_requests_returned_s"] <= creation["all_led_full_isr_on_every_broker_s"]
    )
    assert set(figures["memory_kb"]) == {"broker 1", "broker 2", "broker 3", "zookeeper"}
    for name, mem in figures["memory_kb"].items():
        assert 0 < mem["VmRSS"] <= mem["VmHWM"], name

    failover = figures["controller_failover"]
    dead = failover["killed_broker"]
    assert failover["affected_partitions"] == SCALE_PARTITIONS // 3
    # The session expires 6 s after the killed broker's last ping, which can be up to a
    # third of that before the kill.
    expired = failover["session_expired_after_kill_s"]
    assert expired > 3.5
    assert failover["new_controller"] in {1, 2, 3} - {dead}
    assert failover["controller_elected_after_kill_s"] >= expired
    after_kill = failover["all_led_everywhere_after_kill_s"]
    assert after_kill > expired
    assert failover["all_led_everywhere_after_expiry_s"] == pytest.approx(after_kill - expired)
    assert set(failover["per_broker"]) == {str(b) for b in {1, 2, 3} - {dead}}
    for b, view in failover["per_broker"].items():
        assert 0 < view["after_s"] <= after_kill and view["pending_at_last_poll"] == 0, b

    # The restarted broker's 20 leaderships moved back to it.
    election = figures["preferred_election"]
    assert election["partitions_moved"] == SCALE_PARTITIONS // 3
    assert election["seconds"] > 0

    shutdown = figures["controlled_shutdown"]
    assert shutdown["broker"] != failover["new_controller"]  # not the controller
    assert shutdown["led_partitions"] == SCALE_PARTITIONS // 3
    assert shutdown["exited_s"] > 0 and shutdown["moved_everywhere_s"] > 0
    assert set(shutdown["per_broker"]) == {str(b) for b in {1, 2, 3} - {shutdown["broker"]}}
    assert figures["whole_cluster_stop_s"] > 0

    # --profile: each step's stacks of each broker (the broker shut down, until it exited;
    # the controller killed -9 right after its sampler started may have left none).
    killed = f"failover-broker{dead}.txt"
    profiles = {p.name for p in (tmp_path / "profile").iterdir()} - {killed}
    steps = ("failover", "preferred-election", "controlled-shutdown", "whole-stop")
    expected = {f"{step}-broker{b}.txt" for step in steps for b in (1, 2, 3)} - {killed}
    assert profiles == expected
    # Only busy samples are kept: a broker idle through a short step may have none (here the
    # election of 20 partitions, or the controlled shutdown of a broker leading 20, may take
    # less than a sample), but the steps that last seconds even at this size have the
    # brokers' stacks.
    sampled: set[str] = set()
    for name in expected:
        stacks = (tmp_path / "profile" / name).read_text().splitlines()
        assert all(re.fullmatch(r".* \d+", line) for line in stacks), name
        if any("minikafka" in line for line in stacks):
            sampled.add(name.rpartition("-broker")[0])
    assert sampled >= {"failover", "whole-stop"}

    for label in (
        f"minikafka at {SCALE_PARTITIONS} partitions RF=3 (1 topic), 3 brokers, "
        "zookeeper.session.timeout.ms=6000",
        f"kill -9 of the controller (broker {dead}, leading 20) → its session expired",
        "every partition it led has a live leader in every survivor's metadata",
        "every partition it led has another leader in every remaining broker's metadata",
        "stop the whole cluster (clean close of every broker, ZooKeeper)",
    ):
        assert label in printed, label


def test_bench_cluster_refuses_profile_without_scale(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "scripts" / "bench_cluster.py"
    done = subprocess.run(
        [sys.executable, str(script), "--profile", str(tmp_path / "p")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--profile goes with --scale" in done.stderr, done.stderr
    assert not (tmp_path / "p").exists()
