"""The minikafka source under real PySpark against a real 3-broker cluster: batch reads,
offsets options, data loss, and bad input."""

from __future__ import annotations

import json
import logging
import time

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from minikafka.cluster import LocalCluster
from minikafka.spark import cluster_calls
from minikafka.spark.offsets import DataLossError, OffsetRange
from minikafka.spark.options import SourceOptions, parse_source_options
from tests.cluster.conftest import wait_until
from tests.spark.conftest import new_topic
from tests.spark.helpers import BASE_TS, log_start, produce, row_tuple


def read(spark: SparkSession, cluster: LocalCluster, **options: str) -> DataFrame:
    return (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
        .options(**options)
        .load()
    )


def test_batch_read_of_three_partitions_equals_what_was_produced(spark, spark_cluster):
    topic = new_topic(spark_cluster, "batch")
    sent = produce(spark_cluster, topic, 300)
    df = read(spark, spark_cluster, subscribe=topic, includeHeaders="true")
    assert [f.name for f in df.schema.fields] == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int,headers:array<struct<key:string,value:binary>>>"
    )
    rows = df.selectExpr("*", "unix_millis(timestamp) AS ts_ms").collect()
    got = sorted(row_tuple(r) for r in rows)
    expected = sorted(
        (topic, md.partition, md.offset, key, value, (("i", key[1:]),)) for md, key, value in sent
    )
    assert got == expected
    assert {r["partition"] for r in rows} == {0, 1, 2}
    by_value = {bytes(r["value"]): r for r in rows}
    for md, _, value in sent:
        assert by_value[value]["ts_ms"] == md.timestamp == BASE_TS + int(value[1:])
        assert by_value[value]["timestampType"] == 0  # CreateTime
    # Without includeHeaders there is no headers column.
    assert "headers" not in read(spark, spark_cluster, subscribe=topic).columns


def test_starting_and_ending_offsets(spark, spark_cluster):
    topic = new_topic(spark_cluster, "ranges")
    sent = produce(spark_cluster, topic, 90)
    ends = {p: sum(1 for md, _, _ in sent if md.partition == p) for p in range(3)}
    assert all(n >= 10 for n in ends.values()), ends  # the keys spread over the partitions

    def offsets(**options: str | None) -> set[tuple[int, int]]:
        options.setdefault("subscribe", topic)
        options = {k: v for k, v in options.items() if v is not None}
        df = read(spark, spark_cluster, **options)
        return {(r.partition, r.offset) for r in df.select("partition", "offset").collect()}

    everything = {(md.partition, md.offset) for md, _, _ in sent}
    assert offsets() == everything
    assert offsets(startingOffsets="earliest", endingOffsets="latest") == everything
    start = json.dumps({topic: {"0": 3, "1": -2, "2": 5}})
    end = json.dumps({topic: {"0": 7, "1": -1, "2": 5}})
    assert offsets(startingOffsets=start, endingOffsets=end) == (
        {(0, o) for o in range(3, 7)} | {(1, o) for o in range(ends[1])}
    )
    # assign reads just the partitions named
    assert offsets(subscribe=None, assign=json.dumps({topic: [2]})) == {
        (2, o) for o in range(ends[2])
    }


def test_subscribe_pattern_reads_every_matching_topic(spark, spark_cluster):
    a = new_topic(spark_cluster, "pat-x", partitions=1)
    b = new_topic(spark_cluster, "pat-x", partitions=2)
    produce(spark_cluster, a, 5)
    produce(spark_cluster, b, 7)
    pattern = "pat-x-[0-9a-f]{8}"
    df = read(spark, spark_cluster, subscribePattern=pattern).where(f"topic IN ('{a}', '{b}')")
    counts = {r["topic"]: r["count"] for r in df.groupBy("topic").count().collect()}
    assert counts == {a: 5, b: 7}


def planning_error(df_builder) -> str:
    with pytest.raises((PySparkException, ValueError)) as info:
        df_builder().collect()
    return str(info.value)


def test_bad_input_fails_at_planning_naming_the_problem(spark, spark_cluster):
    topic = new_topic(spark_cluster, "bad")
    produce(spark_cluster, topic, 10)
    cases = {
        "Exactly one of the options 'subscribe', 'subscribePattern' or 'assign'": {},
        "given: subscribe, assign": {"subscribe": topic, "assign": json.dumps({topic: [0]})},
        "startingOffsets: expected e.g.": {"subscribe": topic, "startingOffsets": "{oops"},
        "assign: ghost-0 not found in the cluster": {"assign": '{"ghost":[0]}'},
        f"assign: {topic}-9 not found": {"assign": json.dumps({topic: [0, 9]})},
        "startingOffsets can't be latest for batch queries": {
            "subscribe": topic,
            "startingOffsets": "latest",
        },
        "endingOffsets can't be earliest for batch queries": {
            "subscribe": topic,
            "endingOffsets": "earliest",
        },
        "must name every partition the query reads": {
            "subscribe": topic,
            "startingOffsets": json.dumps({topic: {"0": 0}}),
        },
        "is past its high watermark": {
            "subscribe": topic,
            "endingOffsets": json.dumps({topic: {"0": 10_000, "1": -1, "2": -1}}),
        },
        "maxRecordsPerPartition must be positive": {
            "subscribe": topic,
            "maxRecordsPerPartition": "0",
        },
        "minPartitions must be positive": {"subscribe": topic, "minPartitions": "0"},
        "startingTimestamp: Expected a single long value": {
            "subscribe": topic,
            "startingTimestamp": "yesterday",
        },
    }
    for message, options in cases.items():
        text = planning_error(lambda options=options: read(spark, spark_cluster, **options))
        assert message in text, (options, text)


def test_timestamps_select_exactly_the_records_whose_timestamps_qualify(spark, spark_cluster):
    topic = new_topic(spark_cluster, "ts")
    sent = produce(spark_cluster, topic, 60)  # record i has timestamp BASE_TS + i
    partition_of = {int(value[1:]): md.partition for md, _, value in sent}

    def values(**options: str) -> list[int]:
        rows = read(spark, spark_cluster, subscribe=topic, **options).select("value").collect()
        return sorted(int(bytes(r.value)[1:]) for r in rows)

    # From the first record at or after the start, up to (not with) the first at or after
    # the end; startingTimestamp wins over startingOffsets (Spark's precedence).
    assert values(
        startingTimestamp=str(BASE_TS + 20),
        startingOffsets=json.dumps({topic: {"0": -2, "1": -2, "2": -2}}),
        endingTimestamp=str(BASE_TS + 40),
        endingOffsets="latest",
    ) == list(range(20, 40))
    # Per partition; an end no record reaches is the latest offset.
    starts = {0: BASE_TS + 10, 1: BASE_TS + 30, 2: BASE_TS}
    ends = {0: BASE_TS + 50, 1: BASE_TS + 10_000, 2: BASE_TS + 5}
    as_json = lambda ts: json.dumps({topic: {str(p): t for p, t in ts.items()}})  # noqa: E731
    assert values(
        startingOffsetsByTimestamp=as_json(starts),
        endingOffsetsByTimestamp=as_json(ends),
        **{"kafka.group.id": "ts-readers"},
    ) == [i for i in range(60) if starts[partition_of[i]] <= BASE_TS + i < ends[partition_of[i]]]
    # A start no record reaches: an error by default, the latest offset with the strategy.
    late = {"startingTimestamp": str(BASE_TS + 10_000)}
    text = planning_error(lambda: read(spark, spark_cluster, subscribe=topic, **late))
    assert f"No offset matched from request of topic-partition {topic}-0" in text, text
    assert values(**late, startingOffsetsByTimestampStrategy="latest") == []
    text = planning_error(
        lambda: read(
            spark,
            spark_cluster,
            subscribe=topic,
            startingTimestamp=str(BASE_TS + 50),
            endingTimestamp=str(BASE_TS + 10),
        )
    )
    assert "(from startingTimestamp) is after its end offset" in text, text


def test_min_partitions_splits_a_partition_into_tasks_reading_each_record_once(
    spark, spark_cluster
):
    topic = new_topic(spark_cluster, "minparts", partitions=1)
    produce(spark_cluster, topic, 40)
    df = read(spark, spark_cluster, subscribe=topic, minPartitions="4", groupIdPrefix="split")
    assert df.rdd.getNumPartitions() == 4  # four Spark tasks for one Kafka partition
    rows = df.selectExpr("offset", "spark_partition_id() AS task").collect()
    assert sorted(r.offset for r in rows) == list(range(40))  # each record exactly once
    tasks = {}
    for r in rows:
        tasks.setdefault(r.task, []).append(r.offset)
    assert sorted(sorted(offsets) for offsets in tasks.values()) == [
        list(range(0, 10)),
        list(range(10, 20)),
        list(range(20, 30)),
        list(range(30, 40)),
    ]


def test_max_records_per_partition_caps_each_task_reading_each_record_once(spark, spark_cluster):
    topic = new_topic(spark_cluster, "maxrecs", partitions=2)
    produce(spark_cluster, topic, 25, partition=0)
    produce(spark_cluster, topic, 7, start=25, partition=1)
    df = read(spark, spark_cluster, subscribe=topic, maxRecordsPerPartition="10")
    # partition 0's 25 offsets in three even pieces (8, 8, 9), partition 1's 7 whole
    assert df.rdd.getNumPartitions() == 4
    rows = df.selectExpr("partition", "offset", "spark_partition_id() AS task").collect()
    assert sorted((r.partition, r.offset) for r in rows) == [(0, o) for o in range(25)] + [
        (1, o) for o in range(7)
    ]  # each record exactly once
    tasks: dict[int, list[tuple[int, int]]] = {}
    for r in rows:
        tasks.setdefault(r.task, []).append((r.partition, r.offset))
    assert sorted(sorted(read) for read in tasks.values()) == [
        [(0, o) for o in range(0, 8)],
        [(0, o) for o in range(8, 16)],
        [(0, o) for o in range(16, 25)],
        [(1, o) for o in range(7)],
    ]


def aged_out_topic(cluster: LocalCluster) -> tuple[str, int]:
    """A one-partition topic whose first segments retention has deleted: (name, log start)."""
    topic = new_topic(
        cluster, "aged", partitions=1, **{"segment.bytes": "2048", "retention.bytes": "4096"}
    )
    for start in range(0, 200, 20):  # separate requests, so batches fill several segments
        produce(cluster, topic, 20, start=start)
    start = [0]

    def moved() -> bool:
        start[0] = log_start(cluster, topic, 0)
        return start[0] > 0

    wait_until(moved, timeout=30, what="retention to delete the first segments")
    return topic, start[0]


def test_an_offset_below_the_log_start_fails_or_skips_per_fail_on_data_loss(spark, spark_cluster):
    topic, log_start = aged_out_topic(spark_cluster)
    start = json.dumps({topic: {"0": 0}})
    text = planning_error(
        lambda: read(spark, spark_cluster, subscribe=topic, startingOffsets=start)
    )
    assert f"{topic}-0's offset 0 is below its log start offset" in text
    assert 'set the source option "failOnDataLoss" to "false"' in text

    df = read(spark, spark_cluster, subscribe=topic, startingOffsets=start, failOnDataLoss="false")
    offsets = sorted(r.offset for r in df.select("offset").collect())
    # skipped to the log start (retention may have moved it further since)
    assert offsets[0] >= log_start and offsets == list(range(offsets[0], 200))


def source_options(cluster: LocalCluster, topic: str, **options: str):
    return parse_source_options(
        {"kafka.bootstrap.servers": cluster.bootstrap_servers, "subscribe": topic, **options},
        streaming=False,
    )


def test_a_read_below_the_log_start_is_data_loss_reported_by_the_consumer(
    spark_cluster, caplog, monkeypatch
):
    """A range planned before retention deleted its start: the read itself finds out
    (librdkafka's offset-out-of-range event; it never resets on its own) and fails, or with
    failOnDataLoss=false warns and reads on from the log start."""
    topic, start = aged_out_topic(spark_cluster)
    planned = OffsetRange(topic, 0, 0, 200)  # as if planned before retention ran
    failing = source_options(spark_cluster, topic, **{"kafkaConsumer.pollTimeoutMs": "20000"})

    def pool_of(options: SourceOptions) -> list:
        # Consumers are pooled per Python worker by cluster and properties (the group.id,
        # unique to a query, among them).
        key = (spark_cluster.bootstrap_servers, tuple(sorted(options.consumer_config.items())))
        return cluster_calls._idle_consumers.setdefault(key, [])

    pool = pool_of(failing)
    assert pool == []
    with pytest.raises(DataLossError, match=f"Cannot fetch offset 0 of {topic}-0: the log now"):
        list(cluster_calls.read_range(failing, planned))
    assert pool == []  # the consumer of a failed read is closed, not kept
    skipping = source_options(
        spark_cluster, topic, failOnDataLoss="false", **{"kafka.max.poll.records": "7"}
    )
    pool = pool_of(skipping)
    with caplog.at_level(logging.WARNING):
        chunks = list(cluster_calls.read_range(skipping, planned))
    assert f"Cannot fetch offset 0 of {topic}-0" in caplog.text
    offsets = [m.offset() for chunk in chunks for m in chunk]
    assert offsets[0] >= start and offsets == list(range(offsets[0], 200))
    assert max(len(chunk) for chunk in chunks) <= 7  # kafka.max.poll.records
    ((kept, _),) = pool  # kept for the worker's next read
    again = list(cluster_calls.read_range(skipping, OffsetRange(topic, 0, 195, 200)))
    assert [m.offset() for chunk in again for m in chunk] == list(range(195, 200))
    assert [c for c, _ in pool] == [kept]  # the same consumer read it, and is back
    # One idle for longer than IDLE_TIMEOUT_S is closed at the pool's next use.
    monkeypatch.setattr(cluster_calls, "IDLE_TIMEOUT_S", 0.0)
    list(cluster_calls.read_range(skipping, OffsetRange(topic, 0, 199, 200)))
    ((fresh, _),) = pool
    assert fresh is not kept
    pool.pop()[0].close()


def test_a_read_that_makes_no_progress_fails_after_poll_timeout(spark_cluster):
    topic = new_topic(spark_cluster, "stuck", partitions=1)
    produce(spark_cluster, topic, 10)
    options = source_options(spark_cluster, topic, **{"kafkaConsumer.pollTimeoutMs": "1500"})
    began = time.monotonic()
    with pytest.raises(
        cluster_calls.ReadTimeoutError,
        match=rf"Cannot fetch records in \[10, 20\) of {topic}-0 within "
        r"kafkaConsumer\.pollTimeoutMs=1500",
    ):
        # offsets 0..9 exist; 10..19 never come
        list(cluster_calls.read_range(options, OffsetRange(topic, 0, 0, 20)))
    assert 1.5 <= time.monotonic() - began < 10
