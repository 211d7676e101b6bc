"""The README's "Security" walkthrough, run as written: the block as one bash script (its
export and here-document hold across lines), in a fresh directory, with two changes to
share the machine with other tests: the data dir is a temporary one, and `cluster up` gets
free ports. Each step's promise is checked in the output: alice, created and granted ACLs
by the admin, produces and consumes over SASL_SSL with her own properties file, sees only
her topic, and is refused another."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.cluster import LocalCluster
from tests.readme import block

pytestmark = pytest.mark.timeout(300)

DATA_DIR_LINE = "export MINIKAFKA_DATA_DIR=~/.local/share/minikafka/secured\n"
UP = "minikafka cluster up --security sasl_ssl --detach"


def test_the_readme_security_walkthrough_runs_as_written(tmp_path: Path) -> None:
    script = block("Security#0").text
    assert script.startswith(DATA_DIR_LINE) and script.count(UP) == 1
    data_dir = tmp_path / "secured"
    script = script.replace(DATA_DIR_LINE, f"export MINIKAFKA_DATA_DIR={data_dir}\n", 1)
    script = script.replace(UP, f"{UP} --port 0 --zookeeper-port 0 --admin-port 0", 1)
    cwd = tmp_path / "work"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINIKAFKA_")}
    env["PATH"] = f"{os.path.dirname(sys.executable)}:{env['PATH']}"
    try:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    finally:
        with contextlib.suppress(Exception):
            LocalCluster(data_dir).kill_all()
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "security: sasl_ssl; client settings:" in out
    assert "Created topic payments." in out
    assert "Completed updating config for user alice." in out
    assert "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)" in out
    assert "Processed a total of 5 messages" in done.stderr, out
    # On stdout, in a row: the 5 records consumed, what `topics --list` shows alice (her topic
    # alone), the refusal's echo.
    lines = done.stdout.splitlines()
    refused = lines.index("refused: alice may not write to audit (TOPIC_AUTHORIZATION_FAILED)")
    assert lines[refused - 1] == "payments", out
    assert all(line.isdigit() for line in lines[refused - 6 : refused - 1]), out
    assert "TOPIC_AUTHORIZATION_FAILED" in done.stderr, out
    properties = (cwd / "alice.properties").read_text()
    assert f"ssl.truststore.location={data_dir}/security/ca.pem\n" in properties
