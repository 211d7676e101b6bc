"""The README's Spark example and its pipeline commands, run as written (only the brokers'
address is this cluster's, and the checkpoint a temporary directory), in the README's
order, against a real cluster under real Spark. The long-running ones are bounded: each is
stopped the way the README says (Ctrl-C, `kill`) once it has done what it is for."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minikafka.cluster import LocalCluster
from minikafka.spark import pipeline
from tests.cluster.conftest import wait_until
from tests.cluster.helpers import ctrl_c_as_in_a_terminal
from tests.kafka_protocol.test_confluent_kafka import consume_from_beginning
from tests.readme import block

pytestmark = pytest.mark.timeout(900)


def test_the_spark_example_counts_the_clicks_and_stops_on_ctrl_c(
    spark_cluster: LocalCluster, tmp_path: Path
) -> None:
    bootstrap = spark_cluster.bootstrap_servers
    code = block("Pipelines with Spark#1").text
    assert code.count('"localhost:9092"') == 2 and "/tmp/clicks-per-page-checkpoint" in code
    code = code.replace('"localhost:9092"', json.dumps(bootstrap)).replace(
        "/tmp/clicks-per-page-checkpoint", str(tmp_path / "checkpoint")
    )
    # Clicks as `pipeline generate` writes them, over a minute of past event time: the
    # watermark closes the first windows as soon as the query has read them.
    pipeline.ensure_topics(bootstrap, {"clicks": 3, "clicks-per-page": 1})
    now = int(time.time() * 1000)
    clicks = pipeline.make_clicks(200, now - 120_000, 300)
    assert pipeline.generate(bootstrap, "clicks", clicks) == 200
    expected = pipeline.expected_counts(clicks, clicks[-1].ts_ms - 10_000)

    log = tmp_path / "example.log"  # not a pipe: Spark's log would fill it and block
    with log.open("wb") as out:
        example = subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=ctrl_c_as_in_a_terminal,
        )
    try:
        wait_until(
            lambda: (
                len(consume_from_beginning(bootstrap, "clicks-per-page", 1, 10)) >= len(expected)
                or example.poll() is not None
            ),
            420,
            "the example's window counts",
        )
        assert example.poll() is None, log.read_text()
        counts = consume_from_beginning(bootstrap, "clicks-per-page", 1, 10)
        got = sorted((msg.key().decode(), json.loads(msg.value())["count"]) for msg in counts)
        assert got == sorted((page, n) for (_, page), n in expected.items())
        example.send_signal(signal.SIGINT)  # Ctrl-C
        example.wait(timeout=120)
    finally:
        if example.poll() is None:
            example.kill()
    output = log.read_text()
    assert example.returncode == 0, output
    # No Python traceback (PySpark's Ctrl-C handler ended in py4j's "reentrant call").
    assert "Traceback" not in output and "Py4J" not in output, output


def test_the_pipeline_commands_run_in_the_order_given(
    spark_cluster: LocalCluster, tmp_path: Path
) -> None:
    """The block as one shell script: the demo, the live job in the background, clicks for
    30 s, the first window counts read back, and the job stopped with `kill`."""
    script = block("Pipelines with Spark#2").text
    assert script.startswith("minikafka pipeline demo")
    env = {
        **os.environ,
        # No local cluster in this data dir: the commands use this bootstrap address.
        "MINIKAFKA_DATA_DIR": str(tmp_path / "data"),
        # ... and the job's checkpoints go under this, not a previous run's in $HOME.
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "MINIKAFKA_BOOTSTRAP_SERVERS": spark_cluster.bootstrap_servers,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "PYTHONUNBUFFERED": "1",
    }
    log = tmp_path / "script.log"
    with log.open("wb") as out:
        done = subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=720,
        )
    output = log.read_text()
    assert done.returncode == 0, output
    assert "window counts in page-counts-" in output  # the demo's summary
    counts = [line.split("\t") for line in output.splitlines() if line.startswith("/")]
    assert len(counts) == 5, output  # --max-messages 5 of the live job's window counts
    for page, value in counts:
        assert page in pipeline.PAGES and json.loads(value)["clicks"] > 0
    assert "Processed a total of 5 messages" in output
    # `kill` stopped the job in one line, not in tracebacks of PySpark's and py4j's.
    assert "stopped: the queries and Spark" in output, output
    assert "Traceback" not in output and "Py4J" not in output, output
