"""The README's "Security" walkthrough, run as written: the block as one bash script (its
export and here-document hold across lines), in a fresh directory, with two changes to
share the machine with other tests: the data dir is a temporary one, and `cluster up` gets
free ports. Each step's promise is checked in the output: alice, created and granted ACLs
by the admin, produces and consumes over SASL_SSL with her own properties file, sees only
her topic, and is refused another."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.readme import run_walkthrough

pytestmark = pytest.mark.timeout(300)

DATA_DIR_LINE = "export MINIKAFKA_DATA_DIR=~/.local/share/minikafka/secured\n"
UP = "minikafka cluster up --security sasl_ssl --detach"


def test_the_readme_security_walkthrough_runs_as_written(tmp_path: Path) -> None:
    run = run_walkthrough("Security#0", tmp_path, DATA_DIR_LINE, UP)
    done, out = run.done, run.out
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
    properties = (run.cwd / "alice.properties").read_text()
    assert f"ssl.truststore.location={run.data_dir}/security/ca.pem\n" in properties
