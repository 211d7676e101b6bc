"""The brokers' HTTP admin endpoint on a real cluster (real ZooKeeper, real broker processes,
records produced by a real Kafka client, confluent-kafka): Prometheus metrics that follow
produce, replication, an ISR shrink and expand, and a ZooKeeper session expiry; the health
check and JSON views; errors for bad requests."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from confluent_kafka.admin import NewTopic
from prometheus_client.parser import text_string_to_metric_families

from minikafka.client.librdkafka import topic_metadata
from minikafka.cluster import LocalCluster
from minikafka.protocol.errors import ErrorCode
from tests.cluster.conftest import ClusterFactory, wait_until
from tests.cluster.helpers import admin_client, deliver, producing
from tests.cluster.helpers import http_get as get

pytestmark = pytest.mark.timeout(180)

TOPIC = "metered"
PARTITIONS = 2
N = 30  # records per partition
M = 5  # records per partition produced while a follower is paused

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def get_json(url: str) -> tuple[int, Any]:
    status, body = get(url)
    return status, json.loads(body)


def scrape(cluster: LocalCluster, broker_id: int) -> Samples:
    status, body = get(cluster.admin_url(broker_id) + "/metrics")
    assert status == 200, body
    samples: Samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples


def value(samples: Samples, name: str, **labels: object) -> float:
    return samples[(name, frozenset((k, str(v)) for k, v in labels.items()))]


def partition_gauges(samples: Samples, name: str) -> dict[int, float]:
    """{partition: value} of a per-partition gauge of TOPIC."""
    out = {}
    for (n, labels), v in samples.items():
        d = dict(labels)
        if n == name and d.get("topic") == TOPIC:
            out[int(d["partition"])] = v
    return out


def leaders_of(cluster: LocalCluster) -> dict[int, int]:
    """{partition: leader} of TOPIC, in the cluster's metadata as a client gets it."""
    with producing(cluster.bootstrap_servers) as client:
        md = topic_metadata(client, TOPIC, 30)
    return {p: pm.leader for p, pm in md.topics[TOPIC].partitions.items()}


def create(cluster: LocalCluster, partitions: int) -> None:
    admin = admin_client(cluster.bootstrap_servers)
    futures = admin.create_topics([NewTopic(TOPIC, partitions, 3)], operation_timeout=30)
    futures[TOPIC].result(timeout=60)


def produce(
    cluster: LocalCluster,
    count: int,
    acks: str,
    skip: int | None = None,
    partitions: Sequence[int] = range(PARTITIONS),
) -> None:
    """`count` records to each of `partitions`, bootstrapping from every broker but `skip`
    (a paused broker still accepts connections, and a client that picked it would hang)."""
    ports = cluster.broker_ports
    bootstrap = ",".join(f"{cluster.host}:{ports[b]}" for b in ports if b != skip)
    targets = [p for p in partitions for _ in range(count)]
    values = [f"{p}-{i}".encode() * 10 for p in partitions for i in range(count)]
    with producing(bootstrap, {"acks": acks}) as producer:
        deliver(producer, TOPIC, values, partitions=targets, timeout=30)


def summed(scrapes: Mapping[int, Samples], name: str, **labels: object) -> float:
    return sum(value(s, name, **labels) for s in scrapes.values())


def test_metrics_follow_produce_replication_and_an_isr_shrink_and_expand(
    make_cluster: ClusterFactory,
) -> None:
    # The leader shrinks the ISR after 2 s without the paused follower catching up, long
    # before the controller could hear of its death (session timeout 30 s): the shrink
    # counted is the leader's own, as Kafka's IsrShrinksPerSec.
    cluster = make_cluster(
        overrides={"replica.lag.time.max.ms": "2000", "zookeeper.session.timeout.ms": "30000"}
    )
    create(cluster, PARTITIONS)
    produce(cluster, N, "all")
    brokers = cluster.broker_ids

    def everywhere(name: str, expected: float) -> bool:
        return all(
            partition_gauges(scrape(cluster, b), name) == dict.fromkeys(range(PARTITIONS), expected)
            for b in brokers
        )

    wait_until(lambda: everywhere("minikafka_partition_highwatermark", N), 20, "every HW at N")
    assert everywhere("kafka_log_log_logendoffset", N)
    leaders = leaders_of(cluster)
    m = {b: scrape(cluster, b) for b in brokers}
    for b in brokers:
        led = [p for p, leader in leaders.items() if leader == b]
        followed = [p for p in range(PARTITIONS) if p not in led]
        sizes = partition_gauges(m[b], "kafka_log_log_size")
        # Produce is counted on the leader: records, and bytes as appended (= the log's size).
        assert value(
            m[b], "kafka_server_brokertopicmetrics_messagesin_total", topic=TOPIC
        ) == N * len(led)
        assert value(m[b], "kafka_server_brokertopicmetrics_bytesin_total", topic=TOPIC) == sum(
            sizes[p] for p in led
        )
        # What a follower fetched and appended is replication bytes in, the whole log.
        assert value(
            m[b], "kafka_server_brokertopicmetrics_replicationbytesin_total", topic=TOPIC
        ) == sum(sizes[p] for p in followed)
        assert value(m[b], "kafka_server_replicamanager_partitioncount") == PARTITIONS
        assert value(m[b], "kafka_server_replicamanager_leadercount") == len(led)
        assert value(m[b], "kafka_server_replicamanager_underreplicatedpartitions") == 0
        assert value(m[b], "kafka_server_replicamanager_isrshrinks_total") == 0
        assert value(m[b], "minikafka_zookeeper_connected") == 1
    # Followers fetched every byte the leaders hold, twice over (two followers each).
    total_log = sum(partition_gauges(m[leaders[p]], "kafka_log_log_size")[p] for p in leaders)
    assert (
        summed(m, "kafka_server_brokertopicmetrics_replicationbytesout_total", topic=TOPIC)
        == 2 * total_log
    )
    controller, _ = cluster.wait_for_controller(timeout=10)
    active = {b: value(m[b], "kafka_controller_kafkacontroller_activecontrollercount") for b in m}
    assert active == {b: int(b == controller) for b in brokers}
    assert value(m[controller], "kafka_controller_kafkacontroller_globaltopiccount") == 1
    assert value(m[controller], "kafka_controller_kafkacontroller_globalpartitioncount") == 2
    assert value(m[controller], "kafka_controller_kafkacontroller_offlinepartitionscount") == 0

    # Pause a broker that is not the controller (one that leads nothing, if there is one):
    # each partition it follows loses it from the ISR, by its leader's own ISR write.
    victim = min(
        (b for b in brokers if b != controller),
        key=lambda b: list(leaders.values()).count(b),
    )
    followed = [p for p, leader in leaders.items() if leader != victim]
    others = [b for b in brokers if b != victim]
    cluster.pause(victim)
    try:
        # A follower at the leader's LEO is never out of sync (Kafka's rule): move the LEO.
        # Only to the partitions it follows: when every broker but the controller leads
        # one, the victim leads one too, and its leader is paused.
        produce(cluster, M, "1", skip=victim, partitions=followed)

        def shrunk() -> bool:
            s = {b: scrape(cluster, b) for b in others}
            return summed(s, "kafka_server_replicamanager_underreplicatedpartitions") == len(
                followed
            ) and summed(s, "kafka_server_replicamanager_isrshrinks_total") >= len(followed)

        wait_until(shrunk, 30, "the leaders to shrink their ISRs")
        for p in followed:
            s = scrape(cluster, leaders[p])
            labels = {"topic": TOPIC, "partition": p}
            assert value(s, "kafka_cluster_partition_underreplicated", **labels) == 1
            assert value(s, "kafka_cluster_partition_insyncreplicascount", **labels) == 2
            assert value(s, "kafka_cluster_partition_replicascount", **labels) == 3
            assert value(s, "minikafka_replica_logendoffset", **labels, replica=victim) == N
            # Not caught up for more than replica.lag.time.max.ms: why it left the ISR.
            age = value(s, "minikafka_replica_lastcaughtupagems", **labels, replica=victim)
            assert age > 2000
    finally:
        cluster.resume(victim)

    def expanded() -> bool:
        # Every shrink undone by an expand (a follower slowed down by a loaded machine may
        # have left and rejoined too).
        s = {b: scrape(cluster, b) for b in brokers}
        expands = summed(s, "kafka_server_replicamanager_isrexpands_total")
        return (
            summed(s, "kafka_server_replicamanager_underreplicatedpartitions") == 0
            and expands >= len(followed)
            and expands == summed(s, "kafka_server_replicamanager_isrshrinks_total")
        )

    wait_until(expanded, 30, "the resumed follower back in every ISR")


def test_health_json_views_errors_and_a_session_expiry(cluster: LocalCluster) -> None:
    create(cluster, 1)
    with producing(cluster.bootstrap_servers, {"acks": "all"}) as producer:
        for i in range(5):
            deliver(producer, TOPIC, [str(i).encode()], partitions=[0], timeout=30)
    regs = cluster.registrations()
    controller, _ = cluster.wait_for_controller(timeout=10)
    (leader,) = leaders_of(cluster).values()

    for b in cluster.broker_ids:
        status, health = get_json(cluster.admin_url(b) + "/health")
        assert (status, health["status"], health["broker_id"]) == (200, "ok", b)
        status, broker = get_json(cluster.admin_url(b) + "/v1/broker")
        assert status == 200
        assert broker["broker_id"] == b and broker["broker_epoch"] == regs[b].epoch
        assert broker["advertised"] == f"{cluster.host}:{cluster.broker_ports[b]}"
        assert broker["is_controller"] == (b == controller)
        assert broker["controller_id"] == controller
        assert broker["metadata"] == {
            "controller_id": controller,
            "live_brokers": cluster.broker_ids,
        }

    def leader_view_caught_up() -> bool:
        _, body = get_json(cluster.admin_url(leader) + f"/v1/partitions?topic={TOPIC}")
        (p,) = body["partitions"]
        states = p["replica_states"]
        return p["high_watermark"] == 5 and all(r["lag"] == 0 and r["in_isr"] for r in states)

    wait_until(leader_view_caught_up, 20, "the leader to see every replica caught up")
    _, body = get_json(cluster.admin_url(leader) + f"/v1/partitions?topic={TOPIC}")
    (p,) = body["partitions"]
    assert (p["role"], p["leader"], p["log_end_offset"]) == ("leader", leader, 5)
    assert sorted(p["isr"]) == sorted(p["replicas"]) == cluster.broker_ids
    assert sorted(r["broker_id"] for r in p["replica_states"]) == cluster.broker_ids
    follower = next(b for b in cluster.broker_ids if b != leader)
    _, body = get_json(cluster.admin_url(follower) + "/v1/partitions")
    (p,) = body["partitions"]
    assert (p["role"], p["leader"], p["log_end_offset"]) == ("follower", leader, 5)
    assert "replica_states" not in p

    # Bad requests: Kafka's error for an unknown topic, HTTP's for the rest.
    status, err = get_json(cluster.admin_url(leader) + "/v1/partitions?topic=no-such-topic")
    assert status == 404
    assert err["error"] == "UNKNOWN_TOPIC_OR_PARTITION"
    assert err["error_code"] == int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    assert get(cluster.admin_url(leader) + "/no-such-path")[0] == 404
    assert get(cluster.admin_url(leader) + "/metrics", method="POST")[0] == 405

    # A ZooKeeper session expiry is counted, and the broker is healthy again once it has
    # registered on its new session.
    victim = follower
    cluster.expire_session(victim)

    def registered_again() -> bool:
        status, health = get_json(cluster.admin_url(victim) + "/health")
        return status == 200 and health["broker_epoch"] > regs[victim].epoch

    wait_until(registered_again, 30, "the broker to register on a new session")
    s = scrape(cluster, victim)
    assert value(s, "kafka_server_sessionexpirelistener_zookeeperexpires_total") == 1
    assert value(s, "minikafka_broker_epoch") == cluster.registrations()[victim].epoch

    # Without ZooKeeper no broker is healthy; with it back, every one is again.
    cluster.stop_zookeeper()
    try:

        def all_report(status_wanted: int) -> bool:
            return all(
                get(cluster.admin_url(b) + "/health")[0] == status_wanted
                for b in cluster.broker_ids
            )

        wait_until(lambda: all_report(503), 20, "every broker to report 503 without ZooKeeper")
        status, health = get_json(cluster.admin_url(leader) + "/health")
        assert health["status"] == "unavailable"
        assert "no ZooKeeper session" in health["problems"]
        assert value(scrape(cluster, leader), "minikafka_zookeeper_connected") == 0
    finally:
        cluster.start_zookeeper()
    wait_until(lambda: all_report(200), 30, "every broker healthy with ZooKeeper back")
