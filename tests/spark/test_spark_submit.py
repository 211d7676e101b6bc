"""`minikafka pipeline run` launched by spark-submit, as a Spark application is submitted:
spark-submit's master and settings hold, not the command's defaults (local[2], its
shuffle partitions), and the job counts the clicks as it does on its own.

spark-submit takes a Python application by its .py suffix; the Spark image links the
`minikafka` command as minikafka-app.py (docker/Dockerfile), and so does this test, to the
venv's command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.cli.pipeline import read_counts
from minikafka.cluster import LocalCluster
from minikafka.spark import pipeline
from minikafka.spark.standalone import spark_home
from tests.spark.test_pipeline import BASE_MS, as_ms

# A spark-submit of its own (a JVM and a job: one to four minutes on 2 cores). In the
# default run, tests/docker's spark profile test submits the demo with spark-submit to the
# compose cluster's master, where it runs only if the master is left to spark-submit.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_spark_submit_of_the_pipeline_keeps_its_master_and_settings(
    spark_cluster: LocalCluster, tmp_path: Path
) -> None:
    bs = spark_cluster.bootstrap_servers
    clicks_topic, counts_topic = "clicks-submitted", "page-counts-submitted"
    pipeline.ensure_topics(bs, {clicks_topic: 3, counts_topic: 1})
    clicks = pipeline.make_clicks(100, BASE_MS, 300, seed=3)
    assert pipeline.generate(bs, clicks_topic, clicks) == 100
    expected = pipeline.expected_counts(clicks, clicks[-1].ts_ms - 10_000)

    app = tmp_path / "minikafka-app.py"
    app.symlink_to(Path(sys.executable).parent / "minikafka")
    work = tmp_path / "work"
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_MASTER", "PYSPARK_GATEWAY_PORT")}
    env["PYSPARK_PYTHON"] = sys.executable  # spark-submit's Python: the venv's
    done = subprocess.run(
        [
            str(spark_home() / "bin" / "spark-submit"),
            *("--master", "local[1]"),
            *("--conf", "spark.sql.shuffle.partitions=3"),
            *("--conf", "spark.ui.enabled=false"),
            *("--conf", "spark.driver.host=127.0.0.1"),
            str(app),
            *("pipeline", "run", "--available-now", "--bootstrap-server", bs),
            *("--clicks-topic", clicks_topic, "--counts-topic", counts_topic),
            *("--work-dir", str(work)),
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=420,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-5000:]
    # spark-submit's master, not the command's default local[2] ...
    assert "(Spark master local[1])" in done.stdout, done.stdout
    # ... and its settings: the query ran with its shuffle partitions (the command's
    # default would be 2), which the checkpoint records.
    first_batch = (work / "checkpoints" / "topic" / "offsets" / "0").read_text().splitlines()
    metadata = json.loads(first_batch[1])
    assert metadata["conf"]["spark.sql.shuffle.partitions"] == "3"

    got = {
        (as_ms(r["window_start"]), str(r["page"])): r["clicks"]
        for r in read_counts(bs, counts_topic)
    }
    assert got == expected
