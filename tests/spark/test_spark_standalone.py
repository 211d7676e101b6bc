"""The minikafka source and sink on a real Spark standalone cluster (a master and two
workers of one core each, from the installed pyspark): reads and writes run in executors
outside the driver, which start with nothing cached; the demo's job counts what it counts
in local Spark; and a partition leader or a worker lost mid-stream costs neither records
nor duplicates.

The module shares one standalone cluster and one session on it (the demo command's, which
runs first); the worker-loss test runs last (by file order), as it leaves one worker."""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from confluent_kafka import KafkaError, Message, Producer
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from minikafka.cli.main import cli
from minikafka.cli.pipeline import read_counts
from minikafka.client.librdkafka import position
from minikafka.cluster import LocalCluster
from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.spark import pipeline
from minikafka.spark.standalone import StandaloneCluster
from tests.cluster.conftest import wait_until
from tests.spark.conftest import new_topic, session_on
from tests.spark.helpers import (
    Acked,
    as_ms,
    demo_window_counts,
    from_first_window,
    produce,
    read_topic,
    stream,
)

# One executor of one core on each worker (standalone spreads an application's executors).
EXECUTORS = {
    "spark.executor.cores": "1",
    "spark.executor.memory": "512m",
    "spark.cores.max": "2",
    "spark.sql.shuffle.partitions": "2",
}


@pytest.fixture(scope="module")
def standalone(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[StandaloneCluster]:
    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"), workers=2)
    cluster.launch()
    try:
        request.getfixturevalue("spark_cluster")  # starts while the Spark daemons boot
        cluster.wait_ready()
        yield cluster
    finally:
        active = SparkSession.getActiveSession()
        if active is not None and active.sparkContext.master == cluster.master_url:
            active.stop()  # before its executors go
        cluster.stop()


def executors(spark: SparkSession) -> int:
    """How many executors the application has (the status tracker counts the driver too)."""
    tracker = spark.sparkContext._jsc.sc().statusTracker()  # type: ignore[union-attr]
    return len(tracker.getExecutorInfos()) - 1


@pytest.fixture
def on_cluster(standalone: StandaloneCluster) -> SparkSession:
    """The session on the standalone cluster, once both workers run an executor of it."""
    spark = session_on(standalone.master_url, **EXECUTORS)
    wait_until(lambda: executors(spark) == 2, 90, "an executor on each worker")
    return spark


def read_batch(spark: SparkSession, cluster: LocalCluster, topic: str) -> list[tuple]:
    df = (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
        .option("subscribe", topic)
        .load()
    )
    return [(r.partition, r.offset, bytes(r.key), bytes(r.value)) for r in df.collect()]


def test_the_demo_on_the_master_given_counts_the_windows_local_spark_counts(
    standalone, spark_cluster, tmp_path, monkeypatch
):
    # The command makes its own session: none may be active, or it would get that one.
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    # The session the demo makes and stops when done is kept for the module's other tests.
    monkeypatch.setattr(SparkSession, "stop", lambda self: None)
    monkeypatch.setenv("SPARK_MASTER", standalone.master_url)  # what --master defaults to
    app = f"demo-{uuid.uuid4().hex[:6]}"
    bootstrap = spark_cluster.bootstrap_servers
    args = ["pipeline", "demo", "--events", "120", "--work-dir", str(tmp_path)]
    args += ["--bootstrap-server", bootstrap]
    confs = {
        **EXECUTORS,
        "spark.app.name": app,
        "spark.driver.host": "127.0.0.1",
        # If this starts the process's JVM: as much heap as the local session would give it.
        "spark.driver.memory": "2g",
    }
    for key, value in confs.items():
        args += ["--conf", f"{key}={value}"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    # The master ran the application, with the executors --conf asked for.
    (running,) = [a for a in standalone.state()["activeapps"] if a["name"] == app]
    assert running["cores"] == 2 and running["memoryperexecutor"] == 512
    # The window counts the executors wrote (through the sink) are those of the same demo
    # in local Spark (tests/spark/test_pipeline.py checks it there against the same counts:
    # the demo's clicks are the same for the same count of events, whenever it runs).
    (topic,) = re.findall(r"window counts in (page-counts-\S+) and", result.output)
    got: Counter[tuple[int, str]] = Counter()
    for row in read_counts(bootstrap, topic):
        assert as_ms(row["window_end"]) == as_ms(row["window_start"]) + pipeline.WINDOW_MS
        got[(as_ms(row["window_start"]), str(row["page"]))] += int(str(row["clicks"]))
    expected = demo_window_counts(120)
    assert {start for start, _ in expected} == {0, 10_000}  # two windows closed
    assert from_first_window(got) == expected


def test_malformed_spark_settings_are_refused():
    result = CliRunner().invoke(cli, ["pipeline", "run", "--conf", "spark.executor.cores"])
    assert result.exit_code == 2
    assert "'spark.executor.cores': a Spark setting is KEY=VALUE" in result.output
    result = CliRunner().invoke(cli, ["pipeline", "demo", "--conf", "=1"])
    assert result.exit_code == 2 and "a Spark setting is KEY=VALUE" in result.output


def test_a_batch_read_on_the_cluster_equals_a_kafka_consumers_read(on_cluster, spark_cluster):
    topic = new_topic(spark_cluster, "sa-batch", partitions=12)
    produce(spark_cluster, topic, 1200, headers=False)
    got = read_batch(on_cluster, spark_cluster, topic)
    expected = [(r.partition, r.offset, r.key, r.value) for r in read_topic(spark_cluster, topic)]
    assert len(expected) == 1200 and len({p for p, _, _, _ in expected}) == 12
    assert Counter(got) == Counter(expected)  # every (partition, offset) once, same bytes
    assert len({(p, o) for p, o, _, _ in got}) == len(got)


def test_a_streaming_read_on_the_cluster_reads_every_record_once(on_cluster, spark_cluster):
    topic = new_topic(spark_cluster, "sa-stream", partitions=12)
    produce(spark_cluster, topic, 300, headers=False)
    table = f"q_{uuid.uuid4().hex[:8]}"
    query = (
        stream(
            on_cluster,
            spark_cluster.bootstrap_servers,
            subscribe=topic,
            startingOffsets="earliest",
            maxOffsetsPerTrigger="120",
        )
        .selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
        .writeStream.format("memory")
        .queryName(table)
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:
        wait_until(lambda: query.lastProgress is not None, 90, "a first micro-batch")
        produce(spark_cluster, topic, 200, start=300, headers=False)  # while it runs

        def rows() -> int:
            return int(on_cluster.sql(f"SELECT count(*) FROM {table}").first()[0])

        wait_until(
            lambda: rows() >= 500 or query.exception() is not None,
            120,
            "500 rows",
            interval=0.5,  # each look is a Spark job
        )
        assert query.exception() is None
    finally:
        query.stop()
    batches = [p for p in query.recentProgress if p["numInputRows"]]
    assert len(batches) >= 4  # maxOffsetsPerTrigger split the read into micro-batches
    seen = on_cluster.sql(f"SELECT partition, offset, value FROM {table}").collect()
    expected = {(r.partition, r.offset, r.value.decode()) for r in read_topic(spark_cluster, topic)}
    assert Counter((r.partition, r.offset, r.value) for r in seen) == Counter(expected)


def test_the_sink_on_the_cluster_writes_exactly_what_it_was_given(on_cluster, spark_cluster):
    topic = new_topic(spark_cluster, "sa-sink", partitions=12)
    rows = [(f"k{i}", f"v{i}".encode()) for i in range(2000)]
    df = on_cluster.createDataFrame(rows, "key string, value binary").repartition(6)
    (
        df.write.format("minikafka")
        .option("kafka.bootstrap.servers", spark_cluster.bootstrap_servers)
        .option("kafka.acks", "all")
        .option("topic", topic)
        .mode("append")
        .save()
    )
    got = Counter((r.key, r.value) for r in read_topic(spark_cluster, topic))
    assert got == Counter((k.encode(), v) for k, v in rows)


def test_a_record_refused_on_an_executor_fails_the_write_at_the_driver(on_cluster, spark_cluster):
    """The executor's producer waits for every acknowledgement before its task ends, and the
    broker's refusal comes back to the driver by Kafka's name (after Spark's task retries)."""
    topic = new_topic(spark_cluster, "sa-big", partitions=1, **{"max.message.bytes": "200"})
    df = on_cluster.createDataFrame([("x" * 1000,)], "value string").coalesce(1)
    with pytest.raises(PySparkException, match=f"{topic}-0: MESSAGE_TOO_LARGE"):
        (
            df.write.format("minikafka")
            .option("kafka.bootstrap.servers", spark_cluster.bootstrap_servers)
            .option("topic", topic)
            .mode("append")
            .save()
        )
    assert read_topic(spark_cluster, topic) == []


def to_parquet(records: DataFrame, out: Path, checkpoint: Path) -> StreamingQuery:
    """A streaming query writing (partition, offset, value as a string) to Parquet files at
    `out`, a micro-batch every 200 ms."""
    return (
        records.selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="200 milliseconds")
        .start()
    )


def test_a_partition_leader_killed_mid_stream_loses_and_repeats_nothing(
    on_cluster, spark_cluster, tmp_path: Path
):
    """kill -9 of a partition's leader while the executors' tasks of a micro-batch read from
    it, and a producer (acks=all) writes: the read follows the new leader (or its task is run
    again), later micro-batches read from the new leader, and the output holds every
    acknowledged record once, by (partition, offset) and value. The broker is back in every
    ISR at the end, for the module's later tests."""
    topic = new_topic(spark_cluster, "sa-leader", partitions=2)
    tps = [TopicPartition(topic, p) for p in range(2)]
    acked: list[tuple[int, int, str]] = []  # (partition, offset, value)
    failed: list[KafkaError] = []  # an unacknowledged record is allowed, not counted
    stop = threading.Event()

    def producer_loop() -> None:
        producer = Producer(
            {
                "bootstrap.servers": spark_cluster.bootstrap_servers,
                "acks": "all",
                # No value twice in the log: the output and the log compare one to one.
                "enable.idempotence": True,
                "linger.ms": 5,
                "delivery.timeout.ms": 120_000,
            }
        )

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                failed.append(err)
                return
            p, offset = position(msg)
            acked.append((p, offset, (msg.value() or b"").decode()))

        i = 0
        while not stop.is_set():
            producer.produce(topic, f"v{i}".encode(), key=f"k{i}".encode(), on_delivery=delivered)
            i += 1
            if i % 10 == 0:  # about 100 a second, acknowledged (or failed) 10 at a time
                producer.flush(180)
                stop.wait(0.1)
        producer.flush(180)

    producer = threading.Thread(target=producer_loop, daemon=True)
    producer.start()
    checkpoint = tmp_path / "checkpoint"
    out = tmp_path / "out"
    query = None
    victim = -1
    try:
        wait_until(lambda: len(acked) >= 200, 60, "a backlog of 200 acknowledged records")
        query = to_parquet(
            stream(
                on_cluster,
                spark_cluster.bootstrap_servers,
                subscribe=topic,
                startingOffsets="earliest",
                maxOffsetsPerTrigger="200",
                # Each fetch waits 2.5 s for bytes that never come: a task's read lasts that
                # long, so the kill comes while it reads.
                **{"kafka.fetch.min.bytes": "1000000", "kafka.fetch.wait.max.ms": "2500"},
            ),
            out,
            checkpoint,
        )

        def logged(kind: str) -> set[int]:
            """The batch ids in the checkpoint's offset log ("offsets": planned, written
            before the batch's tasks run) or commit log ("commits": done)."""
            d = checkpoint / kind
            return {int(f.name) for f in d.iterdir() if f.name.isdigit()} if d.is_dir() else set()

        # Past the first micro-batch, whose tasks start the executors' Python workers, to
        # one whose tasks are reading.
        wait_until(
            lambda: 0 in logged("commits") or query.exception() is not None, 90, "a first batch"
        )
        assert query.exception() is None
        tracker = on_cluster.sparkContext.statusTracker()

        def reading() -> bool:
            for stage in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage)
                if info is not None and info.numActiveTasks > 0:
                    return True
            return False

        def planned(b: int) -> int:
            # The offset log's last line: the source's end offsets of batch b.
            lines = (checkpoint / "offsets" / str(b)).read_text().splitlines()
            return int(json.loads(lines[-1])[topic]["0"])

        # The status tracker learns of tasks from Spark's listener bus, which a loaded
        # machine can leave behind the executors by more than a read's 2.5 s: a kill that
        # came after the batch's reads had finished did not test a read. The broker then
        # comes back into the ISR and a later batch is tried, three times at most; a read
        # that does not wait for a new leader fails every try.
        for _ in range(3):
            victim = states(spark_cluster, tps)[tps[0]].leader
            # A batch's tasks just started: the first sight of active tasks after a moment
            # with none (between batches), so the kill comes early in their 2.5 s reads, not
            # at the end of a batch already running when the wait began.
            wait_until(lambda: not reading(), 60, "a moment between micro-batches", 0.005)
            wait_until(reading, 60, "a micro-batch's tasks reading", 0.005)
            spark_cluster.kill(victim)
            batch = max(logged("offsets"))  # the one whose tasks read (one batch at a time)
            at_kill = len(acked)
            wait_until(
                lambda v=victim: states(spark_cluster, tps)[tps[0]].leader not in (v, -1),
                60,
                "a new leader of partition 0",
                0.02,
            )
            # The batch was still reading when the new leader was elected (seconds after the
            # kill: the broker's ZooKeeper session had to expire first), with offsets of
            # partition 0 to read (it was planned before the kill: its tasks ran).
            done = batch in logged("commits")
            assert planned(batch) > planned(batch - 1)
            if not done:
                break
            spark_cluster.start_broker(victim)
            restarted, victim = victim, -1
            wait_until(
                lambda r=restarted: all(r in st.isr for st in states(spark_cluster, tps).values()),
                60,
                f"broker {restarted} back in the ISR",
                0.2,
            )
        assert not done, (
            f"batch {batch} was done before partition 0 had a new leader, in each of three "
            "tries: its read did not wait for one (or had read everything before the kill)"
        )
        # Records acknowledged by partition 0's new leader, read by later micro-batches.
        wait_until(
            lambda: sum(1 for p, _, _ in acked[at_kill:] if p == 0) >= 100,
            120,
            "records acknowledged by the new leader",
            0.2,
        )
    finally:
        stop.set()
        producer.join(180)
        try:
            if query is not None and victim != -1:
                # The topic as it is now, read by librdkafka: what the query must output.
                log = {
                    (r.partition, r.offset, (r.value or b"").decode())
                    for r in read_topic(spark_cluster, topic)
                }
                ends = {p: 1 + max(o for q, o, _ in log if q == p) for p in range(2)}
                wait_caught_up(query, topic, ends)
        finally:
            if query is not None:
                query.stop()
            if victim != -1:
                # Back for the module's later tests (their topics want three brokers), and in
                # every ISR of this topic, as it was.
                spark_cluster.start_broker(victim)
                wait_until(
                    lambda: all(victim in st.isr for st in states(spark_cluster, tps).values()),
                    60,
                    f"broker {victim} back in the ISR",
                    0.2,
                )
    assert not producer.is_alive()
    assert set(acked) <= log and len(acked) >= 300
    rows = on_cluster.read.parquet(str(out)).collect()
    seen = Counter((r.partition, r.offset) for r in rows)
    assert [k for k, n in seen.items() if n > 1] == []  # no (partition, offset) twice
    output = {(r.partition, r.offset, r.value) for r in rows}
    missing = set(acked) - output
    assert not missing, f"{len(missing)} acknowledged records missing, e.g. {sorted(missing)[:5]}"
    assert output == log  # and nothing that is not in the log


def states(cluster: LocalCluster, tps: list[TopicPartition]) -> dict[TopicPartition, LeaderAndIsr]:
    return cluster.zk_client().get_partition_states(tps)


def wait_caught_up(query: StreamingQuery, topic: str, ends: dict[int, int]) -> None:
    """Wait until the query has read each partition of the topic up to its end offset."""

    def caught_up() -> bool:
        if query.exception() is not None:
            raise AssertionError(f"the query failed: {query.exception()}")
        progress = query.lastProgress
        if progress is None:
            return False
        end = progress["sources"][0]["endOffset"]
        end = json.loads(end) if isinstance(end, str) else end
        return all(int(end.get(topic, {}).get(str(p), -1)) >= n for p, n in ends.items())

    wait_until(caught_up, 120, f"the query to read {topic} up to {ends}", 0.2)


def test_a_worker_killed_mid_stream_loses_and_repeats_nothing(
    on_cluster, standalone, spark_cluster, tmp_path: Path
):
    topic = new_topic(spark_cluster, "sa-kill", partitions=12)
    acked = produce(spark_cluster, topic, 300, headers=False)
    out = tmp_path / "out"
    query = to_parquet(
        stream(
            on_cluster,
            spark_cluster.bootstrap_servers,
            subscribe=topic,
            startingOffsets="earliest",
            maxOffsetsPerTrigger="60",
        ),
        out,
        tmp_path / "checkpoint",
    )
    more: list[tuple[Acked, bytes, bytes]] = []
    producer = threading.Thread(
        target=lambda: more.extend(produce(spark_cluster, topic, 300, start=300, headers=False))
    )
    tracker = on_cluster.sparkContext.statusTracker()

    busy: list[int] = []  # the stage whose tasks ran on both executors at the kill

    def both_executors_busy() -> bool:
        # One core each: two tasks running means one on each worker.
        busy[:] = [s for s in tracker.getActiveStageIds() if running(s) == 2]
        return bool(busy)

    def running(stage: int) -> int:
        info = tracker.getStageInfo(stage)
        return 0 if info is None else info.numActiveTasks

    try:
        wait_until(lambda: len(query.recentProgress) >= 1, 90, "a first micro-batch")
        producer.start()
        wait_until(both_executors_busy, 30, "a micro-batch's tasks on both executors")
        standalone.kill_worker(0)  # mid-task: its task is run again on the other worker
        producer.join(60)
        acked += more
        assert len(acked) == 600

        def done() -> bool:
            if query.exception() is not None:
                return True
            return sum(p["numInputRows"] for p in query.recentProgress) >= 600

        wait_until(done, 120, "every record through the query", interval=0.2)
        assert query.exception() is None
    finally:
        query.stop()
    seen = Counter((r.partition, r.offset) for r in on_cluster.read.parquet(str(out)).collect())
    assert [k for k, n in seen.items() if n > 1] == []  # no (partition, offset) twice
    assert set(seen) >= {(md.partition, md.offset) for md, _, _ in acked}
    assert executors(on_cluster) == 1  # the killed worker's executor is gone
    # Its task failed with it (and the stage still completed: it was run again).
    (stage,) = busy
    info = tracker.getStageInfo(stage)
    assert info is not None and info.numFailedTasks >= 1
