"""Real PySpark (local[2], one session shared by the run; tests on a standalone cluster
swap in a session of their own) against a real 3-broker cluster
and ZooKeeper (one per test module; tests use topics of their own)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from minikafka.cluster import LocalCluster
from minikafka.spark import pipeline
from tests.cluster.conftest import TEST_OVERRIDES
from tests.spark.helpers import create_topic

# Retention runs every half second, so tests can age data out of a log on purpose.
SPARK_TEST_OVERRIDES = {**TEST_OVERRIDES, "log.retention.check.interval.ms": "500"}


LOCAL_MASTER = "local[2]"


def session_on(master: str, **conf: str) -> SparkSession:
    """The process's one SparkContext, on `master`: the active session if it is there
    already, else a new one (a session on another master is stopped first: a JVM has one
    SparkContext at a time)."""
    active = SparkSession.getActiveSession()
    if active is not None and active.sparkContext.master != master:
        active.stop()
    return pipeline.spark_session(
        app_name="minikafka-tests",
        driver_memory="2g",
        master=master,
        conf={
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            # No application UI on a standalone cluster either: no one looks at it here.
            "spark.ui.enabled": "false",
            **conf,
        },
    )


@pytest.fixture(scope="session")
def _stop_spark_at_the_end() -> Iterator[None]:
    yield
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


@pytest.fixture
def spark(_stop_spark_at_the_end: None) -> SparkSession:
    """The local Spark session the tests share (made again after a test module ran its
    tests on a standalone cluster)."""
    return session_on(LOCAL_MASTER)


def start_cluster(data_dir: Path, overrides: dict[str, str] | None = None) -> LocalCluster:
    cluster = LocalCluster(
        data_dir,
        3,
        base_port=0,
        zookeeper_port=0,
        overrides={**SPARK_TEST_OVERRIDES, **(overrides or {})},
        zookeeper_fsync=False,
    )
    cluster.start(timeout=60)
    return cluster


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        yield cluster
    finally:
        cluster.stop(timeout=30)


def new_topic(cluster: LocalCluster, prefix: str = "t", partitions: int = 3, **configs: str) -> str:
    """A fresh RF=3 topic (min.insync.replicas 2) with a unique name."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, name, partitions, 3, **{"min.insync.replicas": "2", **configs})
    return name
