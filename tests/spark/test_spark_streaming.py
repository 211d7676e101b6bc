"""Structured Streaming from minikafka under real PySpark against a real cluster:
Trigger.AvailableNow with admission control, restarts from a checkpoint, topics that appear
mid-stream, and a leader killed while a query runs."""

from __future__ import annotations

import json
import threading
import uuid
from collections import Counter
from datetime import datetime

from confluent_kafka import KafkaError, Message, Producer
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from tests.cluster.conftest import wait_until
from tests.spark.conftest import new_topic, start_cluster
from tests.spark.helpers import BASE_TS, add_partitions, create_topic, leader_of, produce, stream


def to_memory(df: DataFrame, trigger: dict[str, object]) -> tuple[StreamingQuery, str]:
    name = f"q_{uuid.uuid4().hex[:8]}"
    query = (
        df.selectExpr("topic", "partition", "offset", "CAST(value AS STRING) AS value")
        .writeStream.format("memory")
        .queryName(name)
        .trigger(**trigger)
        .start()
    )
    return query, name


def offsets_in(spark: SparkSession, table: str) -> Counter[tuple[str, int, int]]:
    rows = spark.sql(f"SELECT topic, partition, offset FROM {table}").collect()
    return Counter((r.topic, r.partition, r.offset) for r in rows)


def test_available_now_with_max_offsets_per_trigger(spark, spark_cluster):
    topic = new_topic(spark_cluster, "avail")
    for p in range(3):
        produce(spark_cluster, topic, 100, start=p * 100, partition=p)
    df = stream(
        spark,
        spark_cluster.bootstrap_servers,
        subscribe=topic,
        startingOffsets="earliest",
        maxOffsetsPerTrigger="100",
    )
    query, table = to_memory(df, {"availableNow": True})
    query.awaitTermination(120)
    assert query.exception() is None
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    # backlogs of 100, 67, 34 each: a third of 100 each time, rounded down (33 x 3); then 1 each
    assert sizes == [99, 99, 99, 3]
    seen = offsets_in(spark, table)
    assert seen == Counter({(topic, p, o): 1 for p in range(3) for o in range(100)})


def test_available_now_reads_only_what_was_there_at_the_start(spark, spark_cluster):
    topic = new_topic(spark_cluster, "avail-stop", partitions=1)
    produce(spark_cluster, topic, 50)
    df = stream(spark, spark_cluster.bootstrap_servers, subscribe=topic, startingOffsets="earliest")
    query, table = to_memory(df, {"availableNow": True})
    query.awaitTermination(120)
    assert query.exception() is None
    assert sorted(o for _, _, o in offsets_in(spark, table)) == list(range(50))


def test_min_offsets_per_trigger_waits_for_enough_offsets_or_the_max_trigger_delay(
    spark, spark_cluster
):
    topic = new_topic(spark_cluster, "mintrig", partitions=1)
    produce(spark_cluster, topic, 8)
    df = stream(
        spark,
        spark_cluster.bootstrap_servers,
        subscribe=topic,
        startingTimestamp=str(BASE_TS + 3),  # offsets 3.. (record i has timestamp BASE_TS + i)
        minOffsetsPerTrigger="10",
        maxTriggerDelay="6s",
    )
    # A progress event for every trigger that runs no batch, so a skipped one is seen.
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "0")
    try:
        query, table = to_memory(df, {"processingTime": "200 milliseconds"})
    finally:
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")

    def batches() -> list[dict]:
        return [p for p in query.recentProgress if p["numInputRows"]]

    def rows() -> int:
        return spark.sql(f"SELECT count(*) AS n FROM {table}").collect()[0].n

    try:
        # The first trigger runs at once, whatever the minimum.
        wait_until(lambda: rows() == 5, 60, "the first batch")
        assert sorted(o for _, _, o in offsets_in(spark, table)) == [3, 4, 5, 6, 7]
        produce(spark_cluster, topic, 4, start=8)

        def skipped_seeing_4_new() -> bool:
            return any(
                not p["numInputRows"]
                and p["sources"][0]["latestOffset"]
                and json.loads(p["sources"][0]["latestOffset"]) == {topic: {"0": 12}}
                for p in query.recentProgress
            )

        # A trigger saw offsets 8..11, fewer than 10 new: no batch.
        wait_until(skipped_seeing_4_new, 30, "a trigger that sees 4 new offsets")
        assert rows() == 5 and len(batches()) == 1
        produce(spark_cluster, topic, 6, start=12)  # 10 new now: the next trigger runs
        wait_until(lambda: rows() == 15, 60, "the batch of 10")
        produce(spark_cluster, topic, 2, start=18)  # too few: waits for maxTriggerDelay
        wait_until(lambda: rows() == 17, 60, "the delayed batch")
        # Its progress is reported a moment after its rows are in the sink.
        wait_until(lambda: len(batches()) >= 3, 30, "the delayed batch's progress")
        done = batches()
        assert [p["numInputRows"] for p in done] == [5, 10, 2]
        assert sorted(o for _, _, o in offsets_in(spark, table)) == list(range(3, 20))

        def started_ms(p: dict) -> float:
            return datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp() * 1000

        # (trigger start times; the source's clock is read a moment after each)
        assert started_ms(done[2]) - started_ms(done[1]) >= 6000 - 500
    finally:
        query.stop()


def test_restart_from_the_checkpoint_reads_exactly_the_new_records(spark, spark_cluster, tmp_path):
    topic = new_topic(spark_cluster, "restart")
    sent = produce(spark_cluster, topic, 60)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run() -> None:
        df = stream(
            spark, spark_cluster.bootstrap_servers, subscribe=topic, startingOffsets="earliest"
        )
        query = (
            df.selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None

    run()
    assert spark.read.parquet(str(out)).count() == 60
    sent += produce(spark_cluster, topic, 45, start=60)
    ends = Counter(md.partition for md, _, _ in sent)
    run()
    rows = spark.read.parquet(str(out)).collect()
    values = Counter(r.value for r in rows)
    assert values == Counter({f"v{i}": 1 for i in range(105)})  # nothing twice or missing
    # The checkpoint's offsets are Kafka's JSON: usable as startingOffsets as they are.
    logs = [p for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()]
    last = max(logs, key=lambda p: int(p.name))
    source_offsets = last.read_text().splitlines()[-1]
    assert json.loads(source_offsets) == {topic: {"0": ends[0], "1": ends[1], "2": ends[2]}}
    assert list(json.loads(source_offsets)[topic]) == ["0", "1", "2"]  # sorted keys
    df = (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", spark_cluster.bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", source_offsets)
        .load()
    )
    assert df.count() == 0  # the checkpoint is at the end


def test_a_topic_created_mid_stream_is_read_from_its_earliest_offset(spark, spark_cluster):
    prefix = f"mid-{uuid.uuid4().hex[:6]}"
    first = f"{prefix}-a"
    create_topic(spark_cluster, first, 1)
    df = stream(spark, spark_cluster.bootstrap_servers, subscribePattern=f"{prefix}-.*")
    query, table = to_memory(df, {"processingTime": "2 seconds"})
    try:
        query.processAllAvailable()
        produce(spark_cluster, first, 5)
        # Created and written between two triggers: the records exist before the query
        # sees the topic, so only "new partitions start at earliest" reads them.
        second = f"{prefix}-b"
        create_topic(spark_cluster, second, 2)
        produce(spark_cluster, second, 8)

        def seen() -> Counter[tuple[str, int, int]]:
            query.processAllAvailable()
            return offsets_in(spark, table)

        wait_until(lambda: sum(seen().values()) >= 13, timeout=60, what="13 records")
        got = seen()
        assert sum(1 for t, _, _ in got if t == first) == 5
        assert sum(1 for t, _, _ in got if t == second) == 8
        assert set(got.values()) == {1}
    finally:
        query.stop()


def test_a_leader_killed_mid_query_loses_and_repeats_nothing(spark, tmp_path):
    """kill -9 of a partition leader while an acks=all producer and a streaming query run:
    the query goes on once a new leader is elected, every acknowledged record is in its
    output, and no log record (partition, offset) is output twice. (A value may be in the
    log twice, at two offsets: the producer has no idempotence, so a batch whose response was
    lost with the leader is sent again, as with Kafka's enable.idempotence=false.)"""
    cluster = start_cluster(tmp_path / "cluster")
    try:
        topic = new_topic(cluster, "failover")
        out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
        df = stream(spark, cluster.bootstrap_servers, subscribe=topic, startingOffsets="earliest")
        query = (
            df.selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="500 milliseconds")
            .start()
        )
        acked: list[str] = []
        failed: list[KafkaError] = []  # an unacknowledged record is allowed
        stop = threading.Event()

        def producer_loop() -> None:
            producer = Producer(
                {
                    "bootstrap.servers": cluster.bootstrap_servers,
                    "acks": "all",
                    "enable.idempotence": False,
                    "linger.ms": 2,
                    "delivery.timeout.ms": 120_000,
                }
            )

            def delivered(err: KafkaError | None, msg: Message) -> None:
                if err is None:
                    acked.append((msg.value() or b"").decode())
                else:
                    failed.append(err)

            i = 0
            while not stop.is_set():
                producer.produce(topic, f"r{i}".encode(), on_delivery=delivered)
                i += 1
                if i % 20 == 0:  # 20 at a time, each batch acknowledged (or failed) in turn
                    producer.flush(180)
            producer.flush(180)

        thread = threading.Thread(target=producer_loop, daemon=True)
        thread.start()
        try:
            wait_until(lambda: len(acked) >= 300, timeout=60, what="300 acked records")
            # (processAllAvailable would chase the running producer: wait for a batch instead)
            wait_until(
                lambda: any(p["numInputRows"] for p in query.recentProgress),
                timeout=60,
                what="the query to read a micro-batch",
            )
            victim = leader_of(cluster, topic, 0)
            cluster.kill(victim)
            before = len(acked)
            wait_until(
                lambda: leader_of(cluster, topic, 0) not in (victim, -1),
                timeout=60,
                what="a new leader of partition 0",
            )
            wait_until(lambda: len(acked) >= before + 300, timeout=120, what="acks after failover")
        finally:
            stop.set()
            thread.join(timeout=180)
        query.processAllAvailable()
        assert query.isActive and query.exception() is None
        query.stop()
        rows = spark.read.parquet(str(out)).collect()
        values = Counter(r.value for r in rows)
        positions = Counter((r.partition, r.offset) for r in rows)
        missing = [v for v in acked if values[v] == 0]
        repeated = [p for p, n in positions.items() if n > 1]
        assert not missing, f"{len(missing)} acknowledged records missing, e.g. {missing[:5]}"
        assert not repeated, f"log records output twice (partition, offset): {repeated[:5]}"
        assert len(acked) >= 600
    finally:
        cluster.stop(timeout=30)


def test_a_partition_added_mid_stream_is_read_from_its_earliest_offset(spark, spark_cluster):
    topic = new_topic(spark_cluster, "grow", partitions=2)
    produce(spark_cluster, topic, 10)
    df = stream(spark, spark_cluster.bootstrap_servers, subscribe=topic)  # from latest
    query, table = to_memory(df, {"processingTime": "2 seconds"})
    try:
        query.processAllAvailable()
        add_partitions(spark_cluster, topic, 4)
        # Written to the new partitions before the query can have seen them: only "a new
        # partition starts at earliest" reads these.
        produce(spark_cluster, topic, 6, start=100, partition=2)
        produce(spark_cluster, topic, 4, start=200, partition=3)
        produce(spark_cluster, topic, 3, start=300, partition=0)

        def seen() -> Counter[tuple[str, int, int]]:
            query.processAllAvailable()
            return offsets_in(spark, table)

        wait_until(lambda: sum(seen().values()) >= 13, timeout=60, what="13 records")
        got = seen()
        assert sorted(p for _, p, _ in got) == [0] * 3 + [2] * 6 + [3] * 4
        assert {(p, o) for _, p, o in got if p >= 2} == {(2, o) for o in range(6)} | {
            (3, o) for o in range(4)
        }
        assert set(got.values()) == {1}
    finally:
        query.stop()
