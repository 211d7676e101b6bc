"""The minikafka sink under real PySpark against a real cluster: batch and streaming writes
land where their columns say, and a failed write is not rolled back (at-least-once)."""

from __future__ import annotations

import uuid

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from minikafka.cluster import LocalCluster
from tests.spark.conftest import new_topic
from tests.spark.helpers import produce, read_topic


def writer(df, cluster: LocalCluster, **options: str):
    return (
        df.write.format("minikafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
        .options(**options)
        .mode("append")
    )


def test_batch_write_lands_in_the_topic_and_partition_of_each_row(spark, spark_cluster):
    a, b = new_topic(spark_cluster, "sink-a"), new_topic(spark_cluster, "sink-b")
    rows = [
        (a if i % 2 else b, i % 3, f"key{i}", f"value{i}".encode(), [("n", str(i).encode())])
        for i in range(60)
    ]
    df = spark.createDataFrame(
        rows,
        "topic string, partition int, key string, value binary, "
        "headers array<struct<key:string,value:binary>>",
    )
    writer(df, spark_cluster).save()
    for topic in (a, b):
        got = {(r.partition, r.key, r.value, r.headers) for r in read_topic(spark_cluster, topic)}
        expected = {(p, k.encode(), v, tuple(h)) for t, p, k, v, h in rows if t == topic}
        assert got == expected


def test_the_topic_option_overrides_the_column_and_string_values_are_utf8(spark, spark_cluster):
    target = new_topic(spark_cluster, "sink-opt", partitions=1)
    df = spark.createDataFrame(
        [("elsewhere", None, "é1"), ("elsewhere", "k", "é2")],
        "topic string, key string, value string",
    )
    writer(df, spark_cluster, topic=target).save()
    got = sorted((r.value, r.key) for r in read_topic(spark_cluster, target))
    assert got == [("é1".encode(), None), ("é2".encode(), b"k")]


def test_streaming_write_copies_a_topic(spark, spark_cluster, tmp_path):
    source, target = new_topic(spark_cluster, "copy-src"), new_topic(spark_cluster, "copy-dst")
    produce(spark_cluster, source, 150)
    query = (
        spark.readStream.format("minikafka")
        .option("kafka.bootstrap.servers", spark_cluster.bootstrap_servers)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .load()
        .selectExpr("key", "value", "headers", "partition")  # same partition, same order
        .writeStream.format("minikafka")
        .option("kafka.bootstrap.servers", spark_cluster.bootstrap_servers)
        .option("topic", target)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None

    def content(topic: str) -> list[tuple[object, ...]]:
        records = sorted(read_topic(spark_cluster, topic), key=lambda r: (r.partition, r.offset))
        return [(r.partition, r.offset, r.key, r.value, r.headers) for r in records]

    assert content(target) == content(source)


def test_bad_sink_input_is_refused_before_anything_is_written(spark, spark_cluster):
    topic = new_topic(spark_cluster, "sink-bad", partitions=1)
    cases = [
        (
            spark.createDataFrame([("k",)], "key string"),
            {"topic": topic},
            "Required attribute 'value'",
        ),
        (spark.createDataFrame([("v",)], "value string"), {}, "topic option required"),
        (
            spark.createDataFrame([(1,)], "value int"),
            {"topic": topic},
            "value attribute type must be string or binary",
        ),
        (
            spark.createDataFrame([("v", "p")], "value string, partition string"),
            {"topic": topic},
            "partition attribute type must be int",
        ),
        (
            spark.createDataFrame([("v",)], "value string"),
            {"topic": topic, "kafka.acks": "2"},
            "acks must be",
        ),
        (
            spark.createDataFrame([("v",)], "value string"),
            {"topic": topic, "kafka.nope": "1"},
            'librdkafka\'s producer config: No such configuration property: "nope"',
        ),
        (
            spark.createDataFrame([("v",)], "value string"),
            {"topic": topic, "kafka.buffer.memory": "1000000"},
            "kafka.buffer.memory is a property of Kafka's Java clients",
        ),
    ]
    for df, options, message in cases:
        with pytest.raises(PySparkException, match=message):
            writer(df, spark_cluster, **options).save()
    df = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(PySparkException, match=r"mode\('overwrite'\) is not supported"):
        writer(df, spark_cluster, topic=topic).mode("overwrite").save()
    assert read_topic(spark_cluster, topic) == []


def test_a_failed_write_is_not_rolled_back(spark: SparkSession, spark_cluster):
    """The abort path: one task fails after sending its first Arrow batch; the job fails
    with the reason, and what was sent stays in the log (at-least-once, as Spark's sink)."""
    topic = new_topic(spark_cluster, "sink-abort", partitions=1)
    rows = [(topic, f"v{i}") for i in range(10)] + [(None, "no topic")]
    df = spark.createDataFrame(rows, "topic string, value string").coalesce(1)
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "10")
    try:
        with pytest.raises(PySparkException, match="null topic present in the data"):
            writer(df, spark_cluster).save()
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert sorted(r.value for r in read_topic(spark_cluster, topic)) == sorted(
        f"v{i}".encode() for i in range(10)
    )
    # Rerunning the fixed job writes its rows again: duplicates, never gaps.
    writer(df.where("topic IS NOT NULL"), spark_cluster).save()
    values = [r.value for r in read_topic(spark_cluster, topic)]
    assert sorted(values) == sorted(f"v{i}".encode() for i in range(10) for _ in range(2))


def test_a_topic_that_does_not_exist_is_auto_created_by_the_write(spark, spark_cluster):
    """The brokers' auto.create.topics.enable (Kafka's default, true) creates the topic the
    sink's producer names, with num.partitions and default.replication.factor."""
    topic = f"auto-{uuid.uuid4().hex[:8]}"
    df = spark.createDataFrame([(f"v{i}",) for i in range(50)], "value string").coalesce(1)
    writer(df, spark_cluster, topic=topic).save()
    assert sorted(r.value for r in read_topic(spark_cluster, topic)) == sorted(
        f"v{i}".encode() for i in range(50)
    )


def test_a_topic_that_cannot_be_created_fails_the_write_once_naming_it(spark, spark_cluster):
    df = spark.createDataFrame([(f"v{i}",) for i in range(500)], "value string").coalesce(1)
    with pytest.raises(PySparkException, match="Topic bad/topic: INVALID_TOPIC_EXCEPTION"):
        writer(df, spark_cluster, topic="bad/topic", **{"kafka.max.block.ms": "60000"}).save()


def test_a_record_the_brokers_refuse_fails_the_write_with_their_error(spark, spark_cluster):
    """A delivery failure (the leader refuses a record larger than the topic's
    max.message.bytes) fails the task at its end, with the broker's error by Kafka's name."""
    topic = new_topic(spark_cluster, "sink-big", partitions=1, **{"max.message.bytes": "200"})
    df = spark.createDataFrame([("x" * 1000,)], "value string").coalesce(1)
    with pytest.raises(PySparkException, match=f"{topic}-0: MESSAGE_TOO_LARGE"):
        writer(df, spark_cluster, topic=topic).save()
    assert read_topic(spark_cluster, topic) == []
