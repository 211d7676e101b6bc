"""Replication throttles (KIP-73) on a real cluster: `minikafka reassign-partitions --execute
--throttle` sets them, a new replica of a throttled partition catches up at the rate while
one of an unthrottled partition is not slowed, `--verify` clears them; bad values are
refused with Kafka's errors by an unmodified client (confluent-kafka's AdminClient)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from minikafka.cluster import LocalCluster
from tests.cluster.conftest import started_cluster, wait_until
from tests.cluster.helpers import (
    admin_client,
    create_topic,
    http_get,
    run_cli,
    send_values,
    set_configs,
)

pytestmark = pytest.mark.timeout(120)

RATE = 1024 * 1024  # 1 MiB/s
VALUE = 100 * 1024
VALUES = 80  # 8 MiB of record values a partition


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with started_cluster(
        tmp_path_factory.mktemp("throttle"), {"auto.leader.rebalance.enable": "false"}
    ) as c:
        yield c


def tool(cluster: LocalCluster, *args: str) -> tuple[int, str]:
    done = run_cli("reassign-partitions", "--bootstrap-server", cluster.bootstrap_servers, *args)
    return done.returncode, done.stdout + done.stderr


def plan_file(path: Path, topic: str, replicas: list[int]) -> Path:
    path.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}]}
        )
    )
    return path


def replica_bytes(cluster: LocalCluster, broker: int, topic: str) -> int:
    d = cluster.log_dir(broker) / f"{topic}-0"
    return sum(f.stat().st_size for f in d.glob("*.log")) if d.is_dir() else 0


def steady_rate(samples: list[tuple[float, int]], size: int) -> float:
    """Bytes/s of a replica's catch-up from the (time, bytes) on its disk sampled every
    0.1 s, past its start: a throttled catch-up starts with a burst (a rate measured over a
    window of at least a second lets a second fetch through at once), so this measures from
    the first fetch to land half a second or more after the first bytes to the last one,
    landing to landing."""
    first = next(t for t, n in samples if n > 0)
    burst = max(n for t, n in samples if t <= first + 0.5)
    t0, b0 = next((t, n) for t, n in samples if n > burst)
    t1, b1 = samples[-1]
    assert b1 == size and t1 - t0 > 2, (b1, size, t1 - t0)
    return (b1 - b0) / (t1 - t0)


def metric(cluster: LocalCluster, broker: int, name: str) -> float:
    status, body = http_get(cluster.admin_url(broker) + "/metrics")
    assert status == 200
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"no {name} in broker {broker}'s metrics")


def in_isr(cluster: LocalCluster, topic: str, broker: int) -> bool:
    from minikafka.common import TopicPartition

    tp = TopicPartition(topic, 0)
    return broker in cluster.zk_client().get_partition_states([tp])[tp].isr


def test_a_throttled_move_catches_up_at_the_rate_and_an_unthrottled_one_is_not_slowed(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    slow, fast = "throttled", "unthrottled"
    for topic in (slow, fast):
        asyncio.run(create_topic(cluster, topic, -1, -1, assignment={0: [1]}))
        send_values(cluster.bootstrap_servers, topic, [os.urandom(VALUE) for _ in range(VALUES)])
    size = replica_bytes(cluster, 1, slow)
    assert size > VALUE * VALUES

    slow_plan = plan_file(tmp_path / "slow.json", slow, [1, 2])
    code, out = tool(
        cluster, "--execute", "--reassignment-json-file", str(slow_plan), "--throttle", str(RATE)
    )
    assert code == 0, out
    lines = out.splitlines()
    assert lines[5:] == [
        "Warning: You must run --verify periodically, until the reassignment completes, to "
        "ensure the throttle is removed.",
        f"The inter-broker throttle limit was set to {RATE} B/s",
        f"Successfully started partition reassignment for {slow}-0",
    ]
    zk = cluster.zk_client()
    # Kafka's calculateLeaderThrottles / calculateFollowerThrottles: the source, the new one.
    assert zk.get_topic_config(slow) == {
        "leader.replication.throttled.replicas": "0:1",
        "follower.replication.throttled.replicas": "0:2",
    }
    for broker in (1, 2):
        assert zk.get_broker_config(str(broker)) == {
            "leader.replication.throttled.rate": str(RATE),
            "follower.replication.throttled.rate": str(RATE),
        }
    # The unthrottled partition's move starts now, on the same brokers.
    fast_started = time.monotonic()
    code, out = tool(
        cluster,
        "--execute",
        "--additional",
        "--reassignment-json-file",
        str(plan_file(tmp_path / "fast.json", fast, [1, 2])),
    )
    assert code == 0, out

    # The throttled replica's progress on broker 2's disk: (time, bytes).
    samples: list[tuple[float, int]] = []
    fast_done: float | None = None

    def slow_caught_up() -> bool:
        nonlocal fast_done
        samples.append((time.monotonic(), replica_bytes(cluster, 2, slow)))
        if fast_done is None and in_isr(cluster, fast, 2):
            fast_done = time.monotonic()
        return in_isr(cluster, slow, 2)

    wait_until(slow_caught_up, 60, "the throttled replica to catch up", interval=0.1)
    assert fast_done is not None
    fast_s = fast_done - fast_started
    rate = steady_rate(samples, size)
    assert 0.8 * RATE <= rate <= 1.2 * RATE, (rate, samples)
    # 8 MiB unthrottled is a fraction of the time it takes at 1 MiB/s.
    slow_s = samples[-1][0] - next(t for t, n in samples if n > 0)
    assert fast_s < slow_s / 3, (fast_s, slow_s)

    # Kafka's LeaderReplication / FollowerReplication byte-rate: the windows still hold the
    # move's bytes, at about the rate (the unthrottled move's are not counted).
    leader_rate = metric(cluster, 1, "kafka_server_leaderreplication_byte_rate")
    follower_rate = metric(cluster, 2, "kafka_server_followerreplication_byte_rate")
    assert 0.3 * RATE < leader_rate <= 1.5 * RATE, leader_rate
    assert 0.3 * RATE < follower_rate <= 1.5 * RATE, follower_rate
    assert metric(cluster, 1, "kafka_server_followerreplication_byte_rate") == 0

    code, out = tool(cluster, "--verify", "--reassignment-json-file", str(slow_plan))
    assert code == 0, out
    assert out.splitlines() == [
        "Status of partition reassignment:",
        f"Reassignment of partition {slow}-0 is complete.",
        "Clearing broker-level throttles on brokers 1,2,3",
        f"Clearing topic-level throttles on topic {slow}",
    ]
    assert zk.get_topic_config(slow) == {}
    for broker in (1, 2, 3):
        assert zk.get_broker_config(str(broker)) == {}


@pytest.mark.parametrize("side", ["leader", "follower"])
def test_each_side_alone_holds_a_new_replica_to_the_rate(
    cluster: LocalCluster, tmp_path: Path, side: str
) -> None:
    """Only the leader's throttle (broker 2 sending), or only the follower's (broker 3
    fetching): either alone keeps the catch-up to the rate."""
    topic = f"{side}-only"
    source = 2 if side == "leader" else 1
    throttled_broker = source if side == "leader" else 3
    asyncio.run(create_topic(cluster, topic, -1, -1, assignment={0: [source]}))
    send_values(cluster.bootstrap_servers, topic, [os.urandom(VALUE) for _ in range(60)])
    size = replica_bytes(cluster, source, topic)
    rate_name = f"{side}.replication.throttled.rate"
    replicas_name = f"{side}.replication.throttled.replicas"
    set_configs(cluster, ResourceType.TOPIC, topic, {replicas_name: f"0:{throttled_broker}"})
    set_configs(cluster, ResourceType.BROKER, str(throttled_broker), {rate_name: str(RATE)})
    try:
        code, out = tool(
            cluster,
            "--execute",
            "--reassignment-json-file",
            str(plan_file(tmp_path / "plan.json", topic, [source, 3])),
        )
        assert code == 0, out
        samples: list[tuple[float, int]] = []

        def caught_up() -> bool:
            samples.append((time.monotonic(), replica_bytes(cluster, 3, topic)))
            return in_isr(cluster, topic, 3)

        wait_until(caught_up, 60, "the throttled replica to catch up", interval=0.1)
        rate = steady_rate(samples, size)
        assert 0.8 * RATE <= rate <= 1.2 * RATE, (rate, samples)
    finally:
        set_configs(cluster, ResourceType.BROKER, str(throttled_broker), {rate_name: None})


def test_bad_throttle_values_are_refused_and_change_nothing(cluster: LocalCluster) -> None:
    topic = "bad-throttles"
    asyncio.run(create_topic(cluster, topic, 1, 1))
    admin = admin_client(cluster.bootstrap_servers)

    def alter(resource: ConfigResource) -> KafkaError:
        (future,) = admin.incremental_alter_configs([resource]).values()
        with pytest.raises(KafkaException) as info:
            future.result(30)
        error: KafkaError = info.value.args[0]
        return error

    set_ = AlterConfigOpType.SET
    for value in ("0:x", "1", "*,0:1"):
        error = alter(
            ConfigResource(
                ResourceType.TOPIC,
                topic,
                incremental_configs=[
                    ConfigEntry(
                        "follower.replication.throttled.replicas", value, incremental_operation=set_
                    )
                ],
            )
        )
        assert error.code() == KafkaError.INVALID_CONFIG, error
        assert "must be the literal '*' or a list of replicas" in error.str()
    for value in ("fast", "-1"):
        error = alter(
            ConfigResource(
                ResourceType.BROKER,
                "1",
                incremental_configs=[
                    ConfigEntry(
                        "leader.replication.throttled.rate", value, incremental_operation=set_
                    )
                ],
            )
        )
        # Kafka's AlterConfigs answers a broker config's ConfigException INVALID_REQUEST.
        assert error.code() == KafkaError.INVALID_REQUEST, error
        assert "leader.replication.throttled.rate" in error.str()
    zk = cluster.zk_client()
    assert zk.get_topic_config(topic) == {}
    assert "leader.replication.throttled.rate" not in zk.get_broker_config("1")


def test_additional_changes_a_running_moves_throttle_and_cancel_clears_it(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    topic = "rethrottled"
    asyncio.run(create_topic(cluster, topic, -1, -1, assignment={0: [3]}))
    send_values(cluster.bootstrap_servers, topic, [os.urandom(VALUE) for _ in range(30)])
    plan = str(plan_file(tmp_path / "plan.json", topic, [3, 1]))
    # 10 kB/s: past its first fetch, the move stays running for minutes.
    code, out = tool(cluster, "--execute", "--reassignment-json-file", plan, "--throttle", "10000")
    assert code == 0, out
    zk = cluster.zk_client()
    assert zk.get_broker_config("1")["leader.replication.throttled.rate"] == "10000"
    code, out = tool(cluster, "--execute", "--reassignment-json-file", plan)
    assert code == 1 and out.startswith("Cannot execute because there is an existing"), out
    code, out = tool(
        cluster,
        "--execute",
        "--additional",
        "--reassignment-json-file",
        plan,
        "--throttle",
        "20000",
    )
    assert code == 0 and "The inter-broker throttle limit was set to 20000 B/s" in out, out
    # The running move's sources and destinations, as before (Kafka's calculateCurrentMoveMap).
    assert zk.get_topic_config(topic) == {
        "leader.replication.throttled.replicas": "0:3",
        "follower.replication.throttled.replicas": "0:1",
    }
    for broker in (1, 3):
        assert zk.get_broker_config(str(broker)) == {
            "leader.replication.throttled.rate": "20000",
            "follower.replication.throttled.rate": "20000",
        }
    code, out = tool(cluster, "--verify", "--reassignment-json-file", plan)
    assert out.splitlines()[1:] == [f"Reassignment of partition {topic}-0 is still in progress."]
    assert zk.get_topic_config(topic) != {}  # nothing cleared while a move runs
    code, out = tool(cluster, "--cancel", "--reassignment-json-file", plan)
    assert code == 0, out
    assert out.splitlines()[-2:] == [
        "Clearing broker-level throttles on brokers 1,2,3",
        f"Clearing topic-level throttles on topic {topic}",
    ]
    assert zk.get_topic_config(topic) == {}
    assert all(zk.get_broker_config(str(b)) == {} for b in (1, 2, 3))
