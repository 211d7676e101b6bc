"""A benchmark script stopped with SIGTERM (as `timeout` or a CI runner stops it) stops the
cluster it started on its way out: no broker and no ZooKeeper of it is left running."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.cluster import LocalCluster
from minikafka.cluster.waiting import wait_for
from tests.perf.bench_run import ROOT

pytestmark = pytest.mark.timeout(300)


def test_a_bench_given_sigterm_stops_its_cluster(tmp_path: Path) -> None:
    cluster_dir = tmp_path / "cluster"
    # 1,000 MB to preload: the script is still writing when the signal comes.
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "bench_reassignment.py"),
         "--megabytes", "1000", "--data-dir", str(cluster_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        # The script prints this once its cluster is up and its topic created (rich may
        # wrap it).
        printed = ""
        while "MB" not in printed and (line := proc.stdout.readline()):
            printed += line
        assert "writing" in printed, printed
        cluster = LocalCluster(cluster_dir)
        pids = {b: cluster.pid(b) for b in cluster.broker_ids}
        assert len(pids) == 3 and all(pids.values()), pids
        assert cluster.zookeeper.is_running()

        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
        after = LocalCluster(cluster_dir)
        wait_for(
            lambda: not any(after.is_alive(b) for b in after.broker_ids),
            30,
            "the brokers to be gone",
        )
        assert not after.zookeeper.is_running()
    finally:
        if proc.poll() is None:
            proc.kill()
        if (cluster_dir / "cluster.json").exists():
            LocalCluster(cluster_dir).kill_all()
