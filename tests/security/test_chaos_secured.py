"""`minikafka chaos` on a SASL_SSL cluster (`--security sasl_ssl`: SCRAM over TLS for
clients and between brokers, the authorizer on), run as a user runs it, twice on one
cluster: first against the local cluster (`--data-dir`), whose client settings chaos takes
itself; then as against a cluster it does not manage: `--bootstrap-server` with the admin's
`--command-config`, faults through a nemesis command. Its producers and the consumer group
authenticate as librdkafka clients; in the second run the replicas are read back with
chaos's own Fetch requests (client/kafka_wire.py) over TLS and SCRAM. Kill and pause leave
nothing acknowledged lost."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.chaos.test_chaos_command_mode import KILLED_BY_THE_SHIM, write_shim
from tests.chaos.test_chaos_runs import FAST
from tests.cluster.conftest import ClusterFactory
from tests.cluster.helpers import bootstrap
from tests.security.test_acls_cli import write_properties


@pytest.mark.timeout(360)
@KILLED_BY_THE_SHIM
def test_chaos_on_a_sasl_ssl_cluster_loses_nothing(
    make_cluster: ClusterFactory, tmp_path: Path
) -> None:
    cluster = make_cluster(overrides=FAST, security="sasl_ssl")
    config = cluster.client_config()
    assert cluster.admin_token()
    assert config["security.protocol"] == "SASL_SSL" and "sasl.password" in config
    properties = write_properties(tmp_path / "admin.properties", config)

    # The local cluster, by its data dir: chaos takes the cluster's settings itself.
    local_out = tmp_path / "local-report"
    local = subprocess.run(
        [sys.executable, "-m", "minikafka", "chaos", "--data-dir", str(cluster.data_dir),
         "--nemesis", "kill", "--interval", "4", "--time-limit", "8", "--rate", "50",
         "--topic", "secured-local", "--out", str(local_out)],
        capture_output=True,
        text=True,
        timeout=200,
    )  # fmt: skip
    assert local.returncode == 0, local.stdout + local.stderr
    local_report = json.loads((local_out / "report.json").read_text())
    assert local_report["result"]["valid"], local_report["result"]["problems"]
    assert local_report["result"]["acknowledged"] > 100
    assert local_report["history"]["meta"]["replica_logs_from"] == "files"
    assert [f["op"] for f in local_report["history"]["faults"]] == ["kill"]

    shim, calls = write_shim(tmp_path, cluster)
    out = tmp_path / "report"
    args = [
        "chaos",
        "--bootstrap-server",
        bootstrap(cluster),
        "--command-config",
        str(properties),
        "--zookeeper",
        cluster.zookeeper_connect,
        "--nemesis-command",
        f"{shlex.quote(str(shim))} {{op}} {{broker}}",
        "--nemesis",
        "kill,pause",
        "--seed",
        "1",  # a kill, then a pause
        "--interval",
        "5",
        # Bounded by its faults, not by time: under load the kill's heal (the broker's
        # restart over SASL_SSL) once took the whole of a 25 s run, and the pause never came.
        "--faults",
        "2",
        "--rate",
        "50",
        "--topic",
        "secured-chaos",
        "--out",
        str(out),
    ]
    result = subprocess.run(
        [sys.executable, "-m", "minikafka", *args],
        capture_output=True,
        text=True,
        timeout=200,
        # The brokers' admin endpoints want the cluster's token (`admin.listeners.token`):
        # chaos reads each replica's LEO there.
        env={**os.environ, "MINIKAFKA_ADMIN_TOKEN": cluster.admin_token() or ""},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((out / "report.json").read_text())
    verdict, history = report["result"], report["history"]
    assert verdict["valid"], verdict["problems"]
    assert verdict["acknowledged"] > 100 and verdict["lost"] == []
    assert {f["op"] for f in history["faults"]} == {"kill", "pause"}
    lines = calls.read_text().splitlines()
    assert any(line.startswith("kill ") for line in lines), lines
    # Every broker's copy of every partition, fetched over SASL_SSL.
    assert history["meta"]["replica_logs_from"] == "fetch"
    assert {(r["broker_id"], r["partition"]) for r in history["replica_logs"]} == {
        (b, p) for b in (1, 2, 3) for p in range(3)
    }
    assert all(r["records"] for r in history["replica_logs"])
    group = verdict["group"]
    assert group is not None and group["commits_acknowledged"] > 0, group
    assert not group["losses"], group
