"""The click-count pipeline: a demo of a Spark job on minikafka, end to end.

An event generator produces JSON click events (`{"user", "page", "ts"}`, keyed by user) to a
`clicks` topic. A Structured Streaming job reads them with the minikafka source, parses the
JSON, counts clicks per page per 10-second event-time window with a watermark, and writes
each closed window both to a `page-counts` topic (key: the page, value: JSON) through the
minikafka sink and to Parquet files. `minikafka pipeline` (minikafka/cli/pipeline.py) is its
command line.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minikafka.client.client_security import client_security
from minikafka.client.librdkafka import client_config, kafka_error_text, new_admin, new_producer

if TYPE_CHECKING:
    from confluent_kafka import KafkaError, Message
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

PAGES = ("/home", "/search", "/product", "/cart", "/checkout")
WINDOW = "10 seconds"
WINDOW_MS = 10_000
CLICK_SCHEMA = "user STRING, page STRING, ts TIMESTAMP"


@dataclass(frozen=True)
class Click:
    user: str
    page: str
    ts_ms: int  # event time

    def to_json(self) -> bytes:
        ts = dt.datetime.fromtimestamp(self.ts_ms / 1000, dt.UTC)
        return json.dumps(
            {"user": self.user, "page": self.page, "ts": ts.isoformat(timespec="milliseconds")}
        ).encode()


def make_clicks(count: int, start_ms: int, step_ms: int, seed: int = 1) -> list[Click]:
    """`count` clicks by 20 users over PAGES, event times `step_ms` apart from `start_ms`."""
    rng = random.Random(seed)
    return [
        Click(f"user-{rng.randrange(20)}", rng.choice(PAGES), start_ms + i * step_ms)
        for i in range(count)
    ]


def expected_counts(clicks: list[Click], watermark_ms: int) -> dict[tuple[int, str], int]:
    """Clicks per (window start ms, page) for the windows a watermark of `watermark_ms`
    (the latest event time less the watermark delay) has closed."""
    counts: Counter[tuple[int, str]] = Counter()
    for c in clicks:
        start = c.ts_ms - c.ts_ms % WINDOW_MS
        if start + WINDOW_MS <= watermark_ms:
            counts[(start, c.page)] += 1
    return dict(counts)


def ensure_topics(bootstrap: str, topics: dict[str, int], timeout_s: float = 30.0) -> None:
    """Create the topics (name -> partitions) that do not exist yet, with a replication
    factor of min(3, brokers), through librdkafka's AdminClient."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.cimpl import NewTopic

    admin = new_admin(client_config(bootstrap, {}))
    # A broker that has just started may not know its peers yet: wait until it does.
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            brokers = admin.list_topics(timeout=max(deadline - time.monotonic(), 0.1)).brokers
        except KafkaException:
            brokers = {}
        if brokers:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"no brokers in the metadata of {bootstrap}")
        time.sleep(0.2)
    rf = min(3, len(brokers))
    new = [NewTopic(name, partitions, rf) for name, partitions in topics.items()]
    for name, future in admin.create_topics(new, operation_timeout=timeout_s).items():
        try:
            future.result(timeout=timeout_s)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise RuntimeError(
                    f"creating topic {name}: {kafka_error_text(e.args[0])}"
                ) from None


PROGRESS_EVERY_S = 5.0


def generate(
    bootstrap: str,
    topic: str,
    clicks: Iterable[Click],
    rate: float = 0,
    progress: Callable[[int], object] | None = None,
) -> int:
    """Produce clicks (acks=all), `rate` per second (0: as fast as possible). Returns how many
    were acknowledged; raises the first failure. `progress(acknowledged so far)` is called
    every PROGRESS_EVERY_S."""
    producer = new_producer(
        client_config(
            bootstrap,
            # Kafka's partitioner: a user's clicks go where Kafka's Java producer puts them.
            {"acks": "all", "linger.ms": 5, "partitioner": "murmur2_random"},
        )
    )
    failures: list[str] = []
    acked = 0

    def delivered(err: KafkaError | None, msg: Message) -> None:
        nonlocal acked
        if err is None:
            acked += 1
        elif not failures:
            failures.append(f"{msg.topic()}-{msg.partition()}: {kafka_error_text(err)}")

    def check() -> None:
        if failures:  # a live run goes on for ever: check as it goes
            raise RuntimeError(f"a click was not acknowledged: {failures[0]}")

    start = time.monotonic()
    next_progress = start + PROGRESS_EVERY_S
    for sent, click in enumerate(clicks, 1):
        if progress is not None and time.monotonic() >= next_progress:
            progress(acked)
            next_progress += PROGRESS_EVERY_S
        while True:
            try:
                producer.produce(
                    topic, value=click.to_json(), key=click.user, on_delivery=delivered
                )
                break
            except BufferError:  # librdkafka's queue is full: wait for acknowledgements
                producer.poll(0.1)
        producer.poll(0)
        check()
        # Waiting for the next click's time, serve acknowledgements (poll returns early
        # when it has served some).
        while rate > 0 and (delay := start + sent / rate - time.monotonic()) > 0:
            producer.poll(delay)
    producer.flush()
    check()
    return acked


def launched_by_spark_submit() -> bool:
    """Whether spark-submit started this process: its JVM, which holds spark-submit's
    settings (--master, --conf, spark-defaults.conf) as `spark.*` properties, is already
    running, and PySpark's PythonRunner told this process its gateway's port."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def spark_session(
    app_name: str = "minikafka-click-pipeline",
    cores: int = 2,
    driver_memory: str | None = None,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """A Spark session (UTC, log level ERROR) with the minikafka format registered, on
    `master` (a Spark master URL, e.g. spark://host:7077) or else a local Spark
    (`local[cores]`, its web UI off); `conf` goes to the builder last, so it overrides these
    defaults. Launched by spark-submit (`launched_by_spark_submit`) without a `master`,
    the master is spark-submit's and so is every setting it was given: the defaults here
    fill in only what it left unset. Python workers, the driver's and the executors', run
    this interpreter (the one minikafka is installed in): on a cluster, every worker
    machine needs it at that path."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from minikafka.spark import MinikafkaDataSource

    submitted = master is None and launched_by_spark_submit()
    if not submitted and master is None:
        master = f"local[{cores}]"
    defaults = {
        "spark.app.name": app_name,
        "spark.sql.shuffle.partitions": str(cores),
        "spark.sql.session.timeZone": "UTC",
        # The stage progress bars would interleave with what the commands print.
        "spark.ui.showConsoleProgress": "false",
        # Executors started by a cluster's workers run the same Python as the driver.
        "spark.pyspark.python": sys.executable,
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
    }
    if master is not None and master.startswith("local"):
        # In-process Spark: no one looks at its UI. A cluster's application keeps Spark's
        # (port 4040), which the master's UI links to.
        defaults["spark.ui.enabled"] = "false"
    if driver_memory is not None:
        defaults["spark.driver.memory"] = driver_memory
    builder = SparkSession.builder
    if master is not None:
        builder = builder.master(master)
    else:
        from pyspark import SparkConf, SparkContext

        # spark-submit's JVM, and with it the properties it was given, which a SparkConf
        # made now loads.
        SparkContext._ensure_initialized()
        given = SparkConf()
        defaults = {k: v for k, v in defaults.items() if not given.contains(k)}
    for key, value in {**defaults, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(MinikafkaDataSource)
    return spark


def client_options() -> dict[str, str]:
    """The process's client security settings (`--command-config`: TLS, SASL) as the minikafka
    source's and sink's `kafka.*` options. Spark runs the source's reads and the sink's
    writes in Python workers of its own, which the process's default does not reach."""
    return {f"kafka.{k}": v for k, v in client_security().items() if k != "bootstrap.servers"}


def page_counts(spark: SparkSession, bootstrap: str, clicks_topic: str) -> DataFrame:
    """The job's transformation: clicks -> (window_start, window_end, page, clicks) rows,
    one per closed 10-second window and page."""
    from pyspark.sql import functions as F

    clicks = (
        spark.readStream.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .options(**client_options())
        .option("subscribe", clicks_topic)
        .option("startingOffsets", "earliest")
        .load()
        .select(F.from_json(F.col("value").cast("string"), CLICK_SCHEMA).alias("click"))
        .select("click.*")
    )
    return (
        clicks.withWatermark("ts", WINDOW)
        .groupBy(F.window("ts", WINDOW), "page")
        .agg(F.count("*").alias("clicks"))
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "page",
            "clicks",
        )
    )


def start_pipeline(
    spark: SparkSession,
    bootstrap: str,
    *,
    clicks_topic: str,
    counts_topic: str,
    parquet_dir: Path,
    checkpoint_dir: Path,
    available_now: bool = False,
) -> tuple[StreamingQuery, StreamingQuery]:
    """Start the two output queries of the job: the windows to a topic and to Parquet, each
    with its own checkpoint."""
    from pyspark.sql import functions as F

    counts = page_counts(spark, bootstrap, clicks_topic)
    trigger: dict[str, Any] = (
        {"availableNow": True} if available_now else {"processingTime": "2 seconds"}
    )
    to_topic = (
        counts.select(
            F.col("page").alias("key"),
            F.to_json(F.struct("window_start", "window_end", "page", "clicks")).alias("value"),
        )
        .writeStream.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .options(**client_options())
        .option("topic", counts_topic)
        .option("checkpointLocation", str(checkpoint_dir / "topic"))
        .outputMode("append")
        .trigger(**trigger)
        .start()
    )
    to_parquet = (
        counts.writeStream.format("parquet")
        .option("path", str(parquet_dir))
        .option("checkpointLocation", str(checkpoint_dir / "parquet"))
        .outputMode("append")
        .trigger(**trigger)
        .start()
    )
    return to_topic, to_parquet
