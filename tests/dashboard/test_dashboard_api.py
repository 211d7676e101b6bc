"""The dashboard's JSON and event stream on a real 3-broker cluster (real ZooKeeper, real
broker processes, records from confluent-kafka): the shapes of `/v1/cluster...`, `/v1/local`
and `/v1/stream`; the page from a broker whose peers are paused; the endpoint is read-only."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pytest
from confluent_kafka.admin import NewTopic

from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode
from tests.cluster.conftest import ClusterFactory, wait_until
from tests.cluster.helpers import admin_client, deliver, producing
from tests.cluster.helpers import http_get as get

pytestmark = pytest.mark.timeout(180)

TOPIC = "watched"
PARTITIONS = 3


def get_json(url: str, timeout: float = 10) -> Any:
    status, body = get(url, timeout=timeout)
    assert status == 200, (status, body)
    return json.loads(body)


def first_stream_view(url: str, timeout: float = 10) -> dict[str, Any]:
    """The first `view` event of an SSE stream."""
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        event = None
        for raw in resp:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                event = line[len("event: ") :]
            elif line.startswith("data: "):
                assert event == "view"
                return json.loads(line[len("data: ") :])
    raise AssertionError("the stream ended without a view")


def setup_topic(cluster: LocalCluster, records: int = 30) -> None:
    admin = admin_client(cluster.bootstrap_servers)
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)], operation_timeout=30)[TOPIC].result(60)
    with producing(cluster.bootstrap_servers, {"acks": "all"}) as producer:
        targets = [i % PARTITIONS for i in range(records)]
        deliver(
            producer, TOPIC, [b"v%d" % i for i in range(records)], partitions=targets, timeout=30
        )


@pytest.fixture
def watched(make_cluster: ClusterFactory) -> LocalCluster:
    cluster = make_cluster()
    setup_topic(cluster)
    return cluster


def test_json_shapes(watched: LocalCluster) -> None:
    cluster = watched
    url = cluster.admin_url(3)

    def all_leaders_answer() -> bool:
        rows = get_json(f"{url}/v1/cluster/partitions?topic={TOPIC}")["partitions"]
        return len(rows) == PARTITIONS and all(r["source"] == "leader" for r in rows)

    wait_until(all_leaders_answer, 30, "every partition from its leader's view")

    header = get_json(f"{url}/v1/cluster")
    assert header["served_by"] == 3
    assert header["zookeeper"] == {"connected": True, "answered": True, "error": None}
    controller = cluster.controller()
    assert controller is not None
    assert header["controller"] == {"id": controller[0], "epoch": controller[1]}
    assert TOPIC in header["topics"]
    registrations = cluster.registrations()
    assert [b["id"] for b in header["brokers"]] == [1, 2, 3]
    for b in header["brokers"]:
        assert b["status"] == "alive" and b["registered"] and b["live"] and b["reachable"]
        assert b["broker_epoch"] == registrations[b["id"]].epoch
        assert b["admin_url"] == cluster.admin_url(b["id"])
        assert b["is_controller"] == (b["id"] == controller[0])
        assert b["zookeeper_connected"] is True and b["serving"] == (b["id"] == 3)
        host, port = cluster.broker_address(b["id"])
        assert any(e.endswith(f"{host}:{port}") for e in b["endpoints"])
    summary = header["summary"]
    assert summary["brokers_alive"] == 3 and summary["ok"] == summary["partitions"]
    assert summary["offline"] == summary["under_min_isr"] == summary["under_replicated"] == 0
    assert summary["internal"]["topics"] == summary["internal"]["partitions"] == 0

    selected = get_json(f"{url}/v1/cluster/partitions?topic={TOPIC}&limit=2")
    assert selected["topic"] == TOPIC and selected["total"] == PARTITIONS
    assert len(selected["partitions"]) == 2
    row = selected["partitions"][0]
    assert set(row) == {
        "topic", "partition", "internal", "status", "leader", "leader_epoch", "leader_reachable",
        "unreachable_brokers", "replicas", "isr", "out_of_sync", "offline_replicas", "min_insync_replicas",
        "source", "high_watermark", "log_end_offset", "log_start_offset", "replica_states",
        "adding_replicas", "removing_replicas",
    }  # fmt: skip
    assert row["adding_replicas"] == row["removing_replicas"] == [] and "reassigning" in summary
    assert row["status"] == "ok" and sorted(row["isr"]) == [1, 2, 3] and row["internal"] is False
    assert row["unreachable_brokers"] == [] and summary["waiting_on_unreachable"] == 0
    assert row["high_watermark"] == row["log_end_offset"] == 10  # 30 records over 3
    assert {r["broker_id"] for r in row["replica_states"]} == {1, 2, 3}
    for r in row["replica_states"]:
        assert set(r) == {"broker_id", "log_end_offset", "lag", "in_isr", "last_caught_up_ms_ago"}
        assert r["lag"] == 0 and r["in_isr"] is True

    events = get_json(f"{url}/v1/cluster/events")
    assert events["served_by"] == 3 and events["last_seq"] == events["events"][0]["seq"]
    created = [e for e in events["events"] if e["kind"] == "topic_created"]
    assert any(e["topic"] == TOPIC and e["details"] == {"partitions": 3} for e in created)
    seqs = [e["seq"] for e in events["events"]]
    assert seqs == sorted(seqs, reverse=True)

    # Throughput: the 30 records show up as messages in, summed over the leaders.
    def counted() -> bool:
        series = get_json(f"{url}/v1/cluster/throughput")
        rates = series["topics"].get(TOPIC, {}).get("messages_in", [])
        return round(sum(v for v in rates if v is not None)) == 30

    wait_until(counted, 15, "the produced records in the throughput series")
    series = get_json(f"{url}/v1/cluster/throughput")
    assert series["rates"] == [
        "messages_in", "bytes_in", "bytes_out", "replication_bytes_in", "replication_bytes_out",
        "follower_bytes_out",
    ]  # fmt: skip
    assert series["end_s"] - series["start_s"] + 1 == series["window_s"] == 300
    assert all(len(v) == 300 for v in series["total"].values())

    local = get_json(f"{cluster.admin_url(1)}/v1/local")
    assert local["broker"]["broker_id"] == 1
    assert local["leader_fields"] == [
        "topic", "partition", "leader", "leader_epoch", "isr", "min_insync_replicas",
        "high_watermark", "log_end_offset", "log_start_offset", "replica_states",
    ]  # fmt: skip
    assert local["replica_state_fields"] == [
        "broker_id", "log_end_offset", "lag", "in_isr", "last_caught_up_ms_ago",
    ]  # fmt: skip
    led = [dict(zip(local["leader_fields"], row, strict=True)) for row in local["leaders"]]
    assert led and all(p["leader"] == 1 and p["topic"] == TOPIC for p in led)
    assert sum(p["high_watermark"] for p in led) == 10 * len(led)

    view = first_stream_view(f"{url}/v1/stream?topic={TOPIC}&limit=1")
    assert set(view) == {
        "cluster", "partitions", "topics", "events", "last_event_seq", "throughput",
    }  # fmt: skip
    assert view["partitions"]["total"] == PARTITIONS and len(view["partitions"]["partitions"]) == 1
    assert view["partitions"]["hidden_internal"] == 0
    assert view["cluster"]["served_by"] == 3 and len(view["throughput"]["total"]["bytes_in"]) == 300

    status, body = get(f"{url}/")
    assert status == 200 and b"/static/dashboard.js" in body
    for asset in ("dashboard.js", "dashboard.css"):
        status, _ = get(f"{url}/static/{asset}")
        assert status == 200, asset


def test_bad_parameters_and_unknown_topics_get_kafka_style_errors(cluster: LocalCluster) -> None:
    url = cluster.admin_url(1)
    for path in (
        "/v1/cluster/partitions?limit=-5",
        "/v1/cluster/partitions?limit=ten",
        "/v1/cluster/events?after_seq=x",
        "/v1/stream?limit=1e9",
        "/v1/cluster/partitions?internal=maybe",
        "/v1/stream?internal=2",
    ):
        status, body = get(url + path)
        assert status == 400, path
        assert json.loads(body)["error"] == ErrorCode.INVALID_REQUEST.name
    status, body = get(f"{url}/v1/cluster/partitions?topic=nope")
    assert status == 404
    assert json.loads(body)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_the_endpoint_is_read_only(watched: LocalCluster) -> None:
    cluster = watched
    zk = cluster.zk_client()

    def state() -> tuple[Any, ...]:
        """Topics, assignments, partition state versions, pending admin requests, config
        changes, the controller."""
        topics = zk.get_all_topics()
        return (
            topics,
            {t: zk.get_assignment(t) for t in topics},
            [
                zk.stat(f"/brokers/topics/{TOPIC}/partitions/{p}/state").version
                for p in range(PARTITIONS)
            ],
            [(path, zk.get_children(path)) for path in ("/admin", "/config/changes")
             if zk.exists(path)],
            cluster.controller(),
        )  # fmt: skip

    before = state()
    url = cluster.admin_url(2)
    paths = [
        "/", "/metrics", "/health", "/v1/broker", "/v1/partitions", "/v1/local",
        "/v1/cluster", "/v1/cluster/partitions", "/v1/cluster/events",
        "/v1/cluster/throughput", "/v1/stream", "/static/dashboard.js",
    ]  # fmt: skip
    for path in paths:
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            status, _ = get(url + path, method=method)
            assert status == 405, (method, path, status)
    for path in ("/v1/topics", "/v1/cluster/brokers/1", "/admin", "/v1/cluster/elect"):
        assert get(url + path)[0] == 404, path
    # Reads with every parameter a handler takes change nothing either.
    for path in ("/v1/cluster/partitions?topic=watched&limit=0", "/v1/local?throughput_after_s=5"):
        assert get(url + path)[0] == 200
    assert state() == before


def test_a_broker_whose_peers_are_paused_still_serves_the_page(watched: LocalCluster) -> None:
    cluster = watched
    url = cluster.admin_url(3)
    get_json(f"{url}/v1/cluster")  # warm: the peers' addresses are known
    cluster.pause(1)
    cluster.pause(2)
    try:
        started = time.monotonic()
        status, page = get(f"{url}/", timeout=2)
        assert status == 200 and b"dashboard.js" in page
        first_stream_view(f"{url}/v1/stream", timeout=2)
        elapsed = time.monotonic() - started
        assert elapsed < 2.0, elapsed

        # A view gathered just before the pause may still be served for up to a second;
        # the next shows both peers unreachable (still registered: their sessions live).
        def header() -> dict[str, Any]:
            started = time.monotonic()
            got = get_json(f"{url}/v1/cluster", timeout=2)
            assert time.monotonic() - started < 2.0
            return got

        def both_unreachable() -> bool:
            statuses = {b["id"]: b["status"] for b in header()["brokers"]}
            return statuses[1] == statuses[2] == "unreachable"

        wait_until(both_unreachable, 5, "the paused brokers shown unreachable")
        by_id = {b["id"]: b for b in header()["brokers"]}
        for b in (1, 2):
            assert by_id[b]["status"] == "unreachable", by_id[b]
            assert by_id[b]["registered"] is True and by_id[b]["error"]
        assert by_id[3]["status"] == "alive"
        # Rows the paused leaders lead come from the metadata, their leader marked.
        rows = get_json(f"{url}/v1/cluster/partitions?topic={TOPIC}", timeout=2)["partitions"]
        for r in rows:
            assert r["source"] == ("leader" if r["leader"] == 3 else "metadata")
            assert r["leader_reachable"] is (r["leader"] == 3)
            # acks=all writes wait on the paused ones, leader or follower.
            assert r["unreachable_brokers"] == sorted({r["leader"], *r["isr"]} - {3}), r
    finally:
        cluster.resume(1)
        cluster.resume(2)


def test_events_name_an_unclean_election_and_the_serving_brokers_session_expiry(
    make_cluster: ClusterFactory,
) -> None:
    """Broker 3 serves the events. A partition on brokers 1 and 2: 2 falls out of the ISR
    (paused), 1 dies, 2 comes back: with unclean.leader.election.enable the controller
    elects 2, which was not in the ISR. Then broker 3's own session is expired."""
    cluster = make_cluster(
        overrides={"unclean.leader.election.enable": "true", "replica.lag.time.max.ms": "2000"}
    )
    admin = admin_client(cluster.bootstrap_servers)
    topic = NewTopic("risky", 1, replica_assignment=[[1, 2]])
    admin.create_topics([topic], operation_timeout=30)["risky"].result(60)
    zk = cluster.zk_client()
    url = cluster.admin_url(3)

    def state() -> Any:
        return zk.get_partition_state(TopicPartition("risky", 0))

    wait_until(lambda: state() is not None and set(state().isr) == {1, 2}, 30, "ISR [1,2]")
    cluster.pause(2)
    try:
        wait_until(lambda: list(state().isr) == [1], 30, "broker 2 out of the ISR")
        cluster.kill(1)
        wait_until(lambda: state().leader == -1, 30, "the partition offline")
    finally:
        cluster.resume(2)
    wait_until(lambda: state().leader == 2, 60, "broker 2 elected uncleanly")

    def events() -> list[dict[str, Any]]:
        return list(get_json(f"{url}/v1/cluster/events")["events"])

    def about_risky(kind: str) -> list[dict[str, Any]]:
        return [e for e in events() if e["kind"] == kind and e.get("topic") == "risky"]

    wait_until(lambda: about_risky("leader_election"), 30, "the election in the timeline")
    (election,) = about_risky("leader_election")
    assert election["details"]["clean"] is False and election["severity"] == "error"
    assert election["details"]["new_leader"] == 2 and "unclean" in election["text"]
    assert about_risky("partition_offline")  # between broker 1's death and the election
    assert any(e["kind"] == "broker_deregistered" and e["broker"] == 1 for e in events())

    seq = get_json(f"{url}/v1/cluster/events")["last_seq"]
    cluster.expire_session(3)

    def session_events() -> list[str]:
        after = get_json(f"{url}/v1/cluster/events?after_seq={seq}")["events"]
        return [e["kind"] for e in after if e.get("broker") == 3]

    wait_until(
        lambda: {"zk_session_expired", "zk_session_connected"} <= set(session_events()),
        30,
        "broker 3's session expiry and its new session in its own timeline",
    )
