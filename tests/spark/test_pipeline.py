"""The click-count pipeline end to end, on a real cluster under real Spark: generated click
events -> the streaming job -> window counts in a topic and in Parquet, each right and none
twice; and `minikafka pipeline demo` as a user runs it."""

from __future__ import annotations

import uuid
from collections import Counter

from click.testing import CliRunner

from minikafka.cli.main import cli
from minikafka.cli.pipeline import read_counts
from minikafka.spark import pipeline
from tests.spark.helpers import as_ms, demo_window_counts, from_first_window

BASE_MS = 1_700_000_000_000  # a window boundary: 10-second windows start at BASE_MS + 10k*n


def test_pipeline_counts_every_closed_window_once(spark, spark_cluster, tmp_path):
    bs = spark_cluster.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    clicks_topic, counts_topic = f"clicks-{suffix}", f"page-counts-{suffix}"
    pipeline.ensure_topics(bs, {clicks_topic: 3, counts_topic: 1})
    # 200 clicks 0.3 s apart: the last at +59.7 s, so the watermark ends at +49.7 s and
    # closes the four windows up to +30..+40 s; +40..+50 and +50..+60 stay open.
    clicks = pipeline.make_clicks(200, BASE_MS, 300, seed=7)
    assert pipeline.generate(bs, clicks_topic, clicks) == 200
    expected = pipeline.expected_counts(clicks, clicks[-1].ts_ms - 10_000)
    assert {start for start, _ in expected} == {BASE_MS + 10_000 * i for i in range(4)}

    queries = pipeline.start_pipeline(
        spark,
        bs,
        clicks_topic=clicks_topic,
        counts_topic=counts_topic,
        parquet_dir=tmp_path / "parquet",
        checkpoint_dir=tmp_path / "checkpoints",
        available_now=True,
    )
    for q in queries:
        q.awaitTermination(180)
        assert q.exception() is None

    from_topic = Counter(
        (as_ms(r["window_start"]), r["page"], r["clicks"]) for r in read_counts(bs, counts_topic)
    )
    assert all(n == 1 for n in from_topic.values()), "a window written twice"
    assert len(from_topic) == len(expected), "a window written twice, with different counts"
    assert {(start, page): n for start, page, n in from_topic} == expected
    for row in read_counts(bs, counts_topic):
        assert as_ms(row["window_end"]) == as_ms(row["window_start"]) + 10_000

    parquet = spark.read.parquet(str(tmp_path / "parquet")).collect()
    from_parquet = Counter((as_ms(r.window_start), r.page, r.clicks) for r in parquet)
    assert from_parquet == from_topic

    # More clicks later: a restart from the checkpoints adds only the windows they close.
    more = pipeline.make_clicks(50, clicks[-1].ts_ms + 300, 300, seed=8)
    pipeline.generate(bs, clicks_topic, more)
    for q in pipeline.start_pipeline(
        spark,
        bs,
        clicks_topic=clicks_topic,
        counts_topic=counts_topic,
        parquet_dir=tmp_path / "parquet",
        checkpoint_dir=tmp_path / "checkpoints",
        available_now=True,
    ):
        q.awaitTermination(180)
        assert q.exception() is None
    everything = clicks + more
    expected = pipeline.expected_counts(everything, everything[-1].ts_ms - 10_000)
    rows = read_counts(bs, counts_topic)
    assert len(rows) == len(expected)
    assert {(as_ms(r["window_start"]), r["page"]): r["clicks"] for r in rows} == expected


def test_the_demo_command_prints_the_window_counts(spark, spark_cluster, tmp_path, monkeypatch):
    # The demo stops its SparkSession when done; here that is the session every later Spark
    # test module shares, so it must survive.
    monkeypatch.setattr(spark, "stop", lambda: None)
    # As a newcomer runs it: no option, in a directory of their own, with the local cluster
    # in the default data dir; its output goes there, nothing to the current directory.
    monkeypatch.setenv("MINIKAFKA_DATA_DIR", str(spark_cluster.data_dir))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(cli, ["pipeline", "demo", "--events", "120"])
    assert result.exit_code == 0, result.output
    assert "window counts in page-counts-" in result.output
    work_dir = spark_cluster.data_dir / "pipeline"
    assert (
        f"pipeline output (Parquet, checkpoints) goes to {work_dir}, in the local cluster's "
        "data dir (--work-dir DIR: elsewhere)"
    ) in result.output.splitlines()
    (run_dir,) = work_dir.iterdir()  # named after the run
    assert (run_dir / "page-counts.parquet").is_dir() and (run_dir / "checkpoints").is_dir()
    assert list(cwd.iterdir()) == []
    printed = [line.split() for line in result.output.splitlines() if line[:2] == "20"]
    got = {(as_ms(start), page): int(n) for start, page, n in printed}
    assert len(got) == len(printed), result.output
    # The demo's 120 clicks (event times in the past): the last is at +35.7 s, so the
    # watermark closes the windows at +0 s and +10 s. (tests/spark/test_spark_standalone.py
    # checks the same counts of the same demo on a Spark cluster.)
    expected = demo_window_counts(120)
    assert {start for start, _ in expected} == {0, 10_000}
    assert from_first_window(got) == expected
