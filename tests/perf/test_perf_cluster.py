"""`minikafka perf produce|consume|e2e` against a real ZooKeeper and three real brokers: the
output is Kafka's, line for line (as regular expressions), and the counts are right. No
speed is asserted, except that a throttle of 200 records/s does hold 400 records back."""

from __future__ import annotations

import asyncio
import json

import pytest
from click.testing import CliRunner, Result
from confluent_kafka.cimpl import NewTopic

from minikafka.cli.main import cli
from minikafka.client.librdkafka import client_config, new_admin
from minikafka.cluster import LocalCluster
from minikafka.perf.offered_load import run_offered_load_latency
from minikafka.rules.consumer_offsets import OFFSETS_TOPIC
from tests.cluster.conftest import ClusterFactory
from tests.cluster.helpers import http_get
from tests.perf.patterns import (
    CONSUME_ROW,
    E2E_AVG,
    E2E_PERCENTILES,
    E2E_PROGRESS,
    PRODUCE_FINAL,
    PRODUCE_PROGRESS,
)

pytestmark = pytest.mark.timeout(120)

TOPIC = "perf"
N = 3000
SIZE = 500


def perf(cluster: LocalCluster, *args: str) -> Result:
    bootstrap = ["--bootstrap-server", cluster.bootstrap_servers]
    result = CliRunner().invoke(cli, ["perf", args[0], *bootstrap, *args[1:]])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


@pytest.fixture
def cluster_with_topic(make_cluster: ClusterFactory) -> LocalCluster:
    cluster = make_cluster()
    admin = new_admin(client_config(cluster.bootstrap_servers, {}))
    new = NewTopic(TOPIC, 3, 3, config={"min.insync.replicas": "2"})
    # Answered once the controller's metadata has a leader for every partition.
    admin.create_topics([new], operation_timeout=30)[TOPIC].result(timeout=60)
    return cluster


def test_produce_then_consume_then_end_to_end(cluster_with_topic: LocalCluster) -> None:
    cluster = cluster_with_topic
    produced = perf(
        cluster,
        *("produce", "--topic", TOPIC, "--num-records", str(N), "--record-size", str(SIZE)),
        *("--throughput", "-1", "--acks", "all"),
        *("--producer-property", "linger.ms=5", "--producer-props", "batch.size=32768"),
    )
    assert produced.exit_code == 0, produced.output
    *progress, final = produced.stdout.splitlines()
    assert all(PRODUCE_PROGRESS.match(line) for line in progress), progress
    m = PRODUCE_FINAL.match(final)
    assert m is not None, final
    assert int(m.group(1)) == N
    p50, p95, p99, p999 = (int(m.group(i)) for i in range(6, 10))
    assert p50 <= p95 <= p99 <= p999 <= float(m.group(5))  # ... <= max latency
    header = produced.stderr.strip()
    assert header.startswith(f"perf produce: topic {TOPIC}: 3 partitions, RF 3, ")
    for setting in (f"{N} records x {SIZE} bytes", "acks=all", "batch.size=32768", "linger.ms=5"):
        assert setting in header

    consumed = perf(cluster, "consume", "--topic", TOPIC, "--messages", str(N))
    assert consumed.exit_code == 0, consumed.output
    csv_header, row = consumed.stdout.splitlines()
    assert csv_header.startswith("start.time, end.time, data.consumed.in.MB, MB.sec, ")
    m = CONSUME_ROW.match(row)
    assert m is not None, row
    assert float(m.group(3)) == pytest.approx(N * SIZE / 2**20, abs=0.00005)
    assert int(m.group(5)) == N  # exactly N, though the last poll may have held more
    assert m.group(7) == "0"  # rebalance.time.ms
    assert "fetch.queue.backoff.ms=10 (librdkafka)" in consumed.stderr
    assert (m.group(9), m.group(10)) == (m.group(4), m.group(6))  # fetch.* == totals

    # Asking for more than there is: Kafka's warning after --timeout, and what was read.
    short = perf(cluster, "consume", "--topic", TOPIC, "--messages", str(N + 1), "--timeout", "300")
    assert short.exit_code == 0, short.output
    _, warning, row = short.stdout.splitlines()
    assert warning.startswith("WARNING: Exiting before consuming the expected number of messages")
    m = CONSUME_ROW.match(row)
    assert m is not None and int(m.group(5)) == N

    # Each record's value is checked on arrival: a mismatch would exit 1 with Kafka's message.
    e2e = perf(cluster, "e2e", "--topic", TOPIC, "--num-records", "50", "--record-size", "100")
    assert e2e.exit_code == 0, e2e.output
    first, avg, percentiles = e2e.stdout.splitlines()
    m = E2E_PROGRESS.match(first)
    assert m is not None and m.group(1) == "0", first
    assert E2E_AVG.match(avg), avg
    m = E2E_PERCENTILES.match(percentiles)
    assert m is not None, percentiles
    assert int(m.group(1)) <= int(m.group(2)) <= int(m.group(3))
    assert "acks=all, linger.ms=0, fetch.wait.max.ms=100 (librdkafka)" in e2e.stderr


def test_throttle_holds_records_back(cluster_with_topic: LocalCluster) -> None:
    result = perf(
        cluster_with_topic,
        *("produce", "--topic", TOPIC, "--num-records", "400", "--record-size", "100"),
        *("--throughput", "200", "--reporting-interval", "500"),
    )
    assert result.exit_code == 0, result.output
    *progress, final = result.stdout.splitlines()
    assert progress and all(PRODUCE_PROGRESS.match(line) for line in progress), progress
    m = PRODUCE_FINAL.match(final)
    assert m is not None, final
    assert int(m.group(1)) == 400
    assert 400 / float(m.group(2)) >= 1.5  # seconds taken: 2 at exactly 200 records/s


def test_the_offered_load_clock_starts_after_the_group_coordinator_is_found(
    make_cluster: ClusterFactory,
) -> None:
    """The measuring consumer's group coordinator lookup creates the offsets topic in a new
    cluster (a LeaderAndIsr of its 50 partitions on every broker, as with Kafka's default):
    done before the first record is timed, so when the clock starts every offsets partition
    is led (each broker's own view, from its admin endpoint: a Metadata request naming the
    topic would create it)."""
    cluster = make_cluster(overrides={"offsets.topic.num.partitions": "50"})
    admin = new_admin(client_config(cluster.bootstrap_servers, {}))
    admin.create_topics([NewTopic(TOPIC, 3, 3)], operation_timeout=30)[TOPIC].result(timeout=60)
    led_at_start: set[int] = set()

    def on_ready(_shape: object) -> None:
        for b in cluster.broker_ids:
            status, body = http_get(f"{cluster.admin_url(b)}/v1/local")
            assert status == 200
            led_at_start.update(p for t, p, *_ in json.loads(body)["leaders"] if t == OFFSETS_TOPIC)

    result = asyncio.run(
        run_offered_load_latency(
            cluster.bootstrap_servers, TOPIC, 200, 100, 1000, on_ready=on_ready
        )
    )
    assert result.records == 200 and result.failed == 0
    assert led_at_start == set(range(50))
