"""DescribeLogDirs (Kafka API 35) and `minikafka log-dirs --describe` against a real
3-broker cluster: every broker's log dir with the size of each replica, which is what its
segment files hold on disk, in kafka-log-dirs.sh's output."""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from minikafka.client.kafka_wire import KafkaConnection
from minikafka.cluster import LocalCluster
from tests.cluster.conftest import started_cluster
from tests.cluster.helpers import bootstrap, create_topic, run_cli, send_values

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with started_cluster(tmp_path_factory.mktemp("log-dirs")) as cluster:
        yield cluster


def new_topic(cluster: LocalCluster, partitions: int, records: int) -> str:
    name = f"ld-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_topic(cluster, name, partitions, 3))
    values = [b"x" * (i % 50) for i in range(records)]
    send_values(
        bootstrap(cluster), name, values, partitions=[i % partitions for i in range(records)]
    )
    return name


def size_on_disk(cluster: LocalCluster, broker_id: int, partition: str) -> int:
    return sum(p.stat().st_size for p in (cluster.log_dir(broker_id) / partition).glob("*.log"))


def log_dirs(cluster: LocalCluster, *args: str) -> tuple[list[str], dict[str, Any]]:
    result = run_cli("log-dirs", "--describe", "--bootstrap-server", bootstrap(cluster), *args)
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert len(lines) == 3, lines
    return lines[:2], json.loads(lines[2])


def test_each_replicas_size_is_what_its_files_hold(shared: LocalCluster) -> None:
    cluster = shared
    topic = new_topic(cluster, 2, 300)  # acks=all: every replica has every record
    other = new_topic(cluster, 1, 5)
    head, doc = log_dirs(cluster, "--topic-list", topic)
    assert head == [
        "Querying brokers for log directories information",
        "Received log directory information from brokers 1,2,3",
    ]
    assert doc["version"] == 1
    assert [b["broker"] for b in doc["brokers"]] == [1, 2, 3]
    for b in doc["brokers"]:
        (d,) = b["logDirs"]
        assert list(d) == ["logDir", "error", "partitions"]  # Kafka's key order
        assert d["logDir"] == str(cluster.log_dir(b["broker"]).absolute())
        assert d["error"] is None
        parts = {p["partition"]: p for p in d["partitions"]}
        assert set(parts) == {f"{topic}-0", f"{topic}-1"}  # --topic-list: not `other`
        for name, p in parts.items():
            assert list(p) == ["partition", "size", "offsetLag", "isFuture"]
            assert p["size"] == size_on_disk(cluster, b["broker"], name) > 0
            assert (p["offsetLag"], p["isFuture"]) == (0, False)

    # One broker, every topic.
    head, doc = log_dirs(cluster, "--broker-list", "2")
    assert head[1] == "Received log directory information from brokers 2"
    (b,) = doc["brokers"]
    names = {p["partition"] for p in b["logDirs"][0]["partitions"]}
    assert {f"{topic}-0", f"{topic}-1", f"{other}-0"} <= names


def test_a_broker_not_in_the_cluster_fails_the_command(shared: LocalCluster) -> None:
    result = run_cli(
        "log-dirs", "--describe", "--bootstrap-server", bootstrap(shared), "--broker-list", "1,9"
    )
    assert result.returncode == 1
    assert "broker 9 is not in the cluster metadata" in result.stderr
    missing = run_cli("log-dirs", "--bootstrap-server", bootstrap(shared))
    assert missing.returncode == 2
    assert "describe" in missing.stderr


def test_v4_names_the_partitions_asked_and_the_volume(shared: LocalCluster) -> None:
    from kio.schema.describe_log_dirs.v4.request import (
        DescribableLogDirTopic,
        DescribeLogDirsRequest,
    )
    from kio.schema.types import TopicName
    from kio.static.primitive import i32

    cluster = shared
    topic = new_topic(cluster, 2, 20)
    request = DescribeLogDirsRequest(
        topics=(DescribableLogDirTopic(topic=TopicName(topic), partitions=(i32(1),)),)
    )

    async def call() -> Any:
        conn = KafkaConnection(*cluster.broker_address(1), client_id="log-dirs-test")
        try:
            return await conn.call(request, timeout_s=30)
        finally:
            await conn.close()

    response = asyncio.run(call())
    assert int(response.error_code) == 0
    (d,) = response.results
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in d.topics] == [(topic, [1])]
    usage = shutil.disk_usage(cluster.log_dir(1))
    assert d.total_bytes == usage.total
    assert 0 < d.usable_bytes <= usage.total
