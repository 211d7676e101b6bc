"""The dashboard's pure parts: the event timeline from metadata differences, the cluster
view (partition status, trouble-first order, broker status) and the throughput rates."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.admin_http import cluster_view as cv
from minikafka.admin_http import events as events_module
from minikafka.admin_http.events import (
    BROKER_DEREGISTERED,
    BROKER_REGISTERED,
    CONTROLLER_CHANGE,
    ISR_EXPAND,
    ISR_SHRINK,
    LEADER_ELECTION,
    PARTITION_OFFLINE,
    TOPIC_CREATED,
    TOPIC_DELETED,
    EventDraft,
    EventLog,
    metadata_events,
    partition_event_count,
    partition_events,
)
from minikafka.admin_http.throughput import RATE_NAMES, ClusterThroughput, RateSampler
from minikafka.rpc.messages import (
    BrokerNode,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
from minikafka.server.metadata_cache import MetadataCache, MetadataChange


def state(
    leader: int,
    isr: list[int],
    epoch: int = 0,
    replicas: list[int] | None = None,
    topic: str = "t",
    partition: int = 0,
    offline: list[int] | None = None,
) -> UpdateMetadataPartitionState:
    return UpdateMetadataPartitionState(
        topic, partition, 1, leader, epoch, isr, 0, replicas or [1, 2, 3], offline or []
    )


# --- events ------------------------------------------------------------------------------


def kinds(drafts: list[EventDraft]) -> list[str]:
    return [d.kind for d in drafts]


def test_an_isr_shrink_and_expand_name_the_replicas() -> None:
    shrink = partition_events(state(1, [1, 2, 3]), state(1, [1, 3]))
    assert kinds(shrink) == [ISR_SHRINK]
    assert shrink[0].details == {"old_isr": [1, 2, 3], "new_isr": [1, 3], "removed": [2]}
    assert "t-0" in shrink[0].text and "out: 2" in shrink[0].text
    expand = partition_events(state(1, [1, 3]), state(1, [1, 3, 2]))
    assert kinds(expand) == [ISR_EXPAND]
    assert expand[0].details is not None and expand[0].details["added"] == [2]


def test_a_leader_from_the_isr_is_a_clean_election_and_one_from_outside_unclean() -> None:
    clean = partition_events(state(1, [1, 2, 3]), state(2, [2, 3], epoch=1))
    assert kinds(clean) == [LEADER_ELECTION, ISR_SHRINK]
    assert clean[0].details is not None and clean[0].details["clean"] is True
    assert clean[0].severity is None  # the kind's own: info
    unclean = partition_events(state(1, [1]), state(3, [3], epoch=1))
    assert unclean[0].details is not None and unclean[0].details["clean"] is False
    assert unclean[0].severity == "error"
    assert "unclean" in unclean[0].text


def test_no_leader_is_an_offline_partition() -> None:
    drafts = partition_events(state(1, [1]), state(-1, [1], epoch=1))
    assert kinds(drafts) == [PARTITION_OFFLINE]


def test_an_unchanged_partition_or_a_new_one_has_no_partition_event() -> None:
    assert partition_events(state(1, [1, 2]), state(1, [1, 2])) == []
    assert partition_events(None, state(1, [1, 2])) == []


def test_a_partition_event_names_the_broker_it_is_about() -> None:
    """What lets the page put one failure's events together: the broker that left or
    joined the ISR, the leader that lost the partition, or the one that took it back."""
    (shrink,) = partition_events(state(1, [1, 2, 3]), state(1, [1, 3]))
    assert shrink.broker == 2
    (both,) = partition_events(state(1, [1, 2, 3]), state(1, [1]))
    assert both.broker is None and both.details is not None and both.details["removed"] == [2, 3]
    (expand,) = partition_events(state(1, [1, 3]), state(1, [1, 3, 2]))
    assert expand.broker == 2
    failover, _ = partition_events(state(2, [2, 1, 3]), state(1, [1, 3], epoch=1))
    assert failover.kind == LEADER_ELECTION and failover.broker == 2
    (preferred,) = partition_events(state(1, [1, 2, 3]), state(2, [1, 2, 3], epoch=1))
    assert preferred.broker == 2  # the old leader 1 is fine: the news is 2 leading again
    back, _ = partition_events(state(-1, [2]), state(2, [2, 3], epoch=1))
    assert back.kind == LEADER_ELECTION and back.broker == 2
    (offline,) = partition_events(state(3, [3]), state(-1, [3], epoch=1))
    assert offline.kind == PARTITION_OFFLINE and offline.broker == 3


def test_metadata_events_cover_brokers_controller_and_topics() -> None:
    drafts = metadata_events(
        MetadataChange(
            old_controller=1,
            new_controller=2,
            controller_epoch=7,
            old_brokers=[1, 2, 3],
            new_brokers=[2, 3, 4],
            changed=[(None, state(2, [2], topic="new")), (state(1, [1, 2]), state(2, [2], 1))],
            deleted_topics=["gone"],
            first_update=False,
        )
    ).all()
    assert kinds(drafts) == [
        CONTROLLER_CHANGE,
        BROKER_REGISTERED,
        BROKER_DEREGISTERED,
        LEADER_ELECTION,
        ISR_SHRINK,
        TOPIC_CREATED,
        TOPIC_DELETED,
    ]
    assert drafts[1].broker == 4 and drafts[2].broker == 1


def test_the_first_update_is_the_cluster_as_it_is_not_a_story() -> None:
    drafts = metadata_events(
        MetadataChange(-1, 1, 1, [], [1, 2, 3], [(None, state(1, [1]))], [], True)
    ).all()
    assert kinds(drafts) == [CONTROLLER_CHANGE]


members = st.lists(st.sampled_from([1, 2, 3]), unique=True, max_size=3)
partition_state = st.builds(
    lambda leader, isr, p: state(leader, isr, partition=p),
    st.sampled_from([-1, 1, 2, 3]),
    members,
    st.integers(0, 40),
)


@given(st.one_of(st.none(), partition_state), partition_state)
def test_counting_a_partitions_events_agrees_with_making_them(old, new) -> None:
    assert partition_event_count(old, new) == len(partition_events(old, new))


@given(
    st.lists(st.tuples(st.one_of(st.none(), partition_state), partition_state), max_size=40),
    st.integers(1, 12),
)
def test_an_updates_events_are_numbered_and_kept_as_if_all_were_made(changes, capacity) -> None:
    change = MetadataChange(1, 2, 3, [1, 2], [2, 3], changes, ["gone"], False)
    lazy, eager = EventLog(capacity), EventLog(capacity)
    eager.append(metadata_events(change).all(), 1000)
    lazy.append(metadata_events(change), 1000)
    assert lazy.last_seq == eager.last_seq
    assert lazy.newest() == eager.newest()


def test_an_updates_events_beyond_the_log_are_counted_not_made(monkeypatch) -> None:
    """A broker's failure at scale: an election in each of 1,000 partitions, a log of 10."""
    changes = [
        (state(1, [1, 2], partition=p), state(2, [1, 2], 1, partition=p)) for p in range(1000)
    ]
    made: list[int] = []
    real = events_module.partition_events

    def counting(old, new):
        made.append(new.partition)
        return real(old, new)

    monkeypatch.setattr(events_module, "partition_events", counting)
    log = EventLog(10)
    log.append(metadata_events(MetadataChange(1, 1, 3, [1, 2], [1, 2], changes, [], False)), 1)
    assert log.last_seq == 1000
    assert sorted(made) == list(range(990, 1000))
    assert [e.partition for e in log.newest()] == list(range(999, 989, -1))


def test_the_event_log_numbers_events_and_returns_the_newest_first() -> None:
    log = EventLog(capacity=3)
    log.append([EventDraft(TOPIC_CREATED, f"e{i}") for i in range(5)], 1000)
    assert log.last_seq == 5
    assert [e.seq for e in log.newest()] == [5, 4, 3]  # the two oldest fell off
    assert [e.seq for e in log.newest(after_seq=3)] == [5, 4]
    assert [e.seq for e in log.newest(limit=1)] == [5]
    assert log.newest(after_seq=5) == []
    assert log.newest()[0].to_json() == {
        "seq": 5,
        "time_ms": 1000,
        "kind": TOPIC_CREATED,
        "severity": "info",
        "text": "e4",
    }


# --- the cluster view --------------------------------------------------------------------


def nodes(*ids: int) -> dict[int, BrokerNode]:
    return {i: BrokerNode(i, "127.0.0.1", 9091 + i) for i in ids}


def led_view(
    topic: str, partition: int, leader: int, epoch: int, isr: list[int], min_isr: int = 2
) -> cv.LeaderState:
    states = [[r, 12, 0, True, 5] for r in isr]
    return cv.LeaderState(topic, partition, leader, epoch, isr, min_isr, 10, 12, 0, states)


def registration(b: int) -> cv.Registration:
    return cv.Registration(b, 100 + b, (f"PLAINTEXT://127.0.0.1:{9091 + b}",), f"http://x:{b}")


def build(
    partitions: list[UpdateMetadataPartitionState],
    peers: dict[int, cv.PeerAnswer | cv.PeerFailure],
    live: list[int],
    registered: list[int] | None,
    controller: int = 1,
) -> cv.ClusterView:
    zk = cv.ZkView(
        None if registered is None else {b: registration(b) for b in registered},
        None if registered is None else controller,
        None if registered is None else 4,
        None if registered is not None else "ZooKeeper did not answer",
    )
    return cv.build_cluster_view(
        3, 1_000, True, zk, cv.MetadataView(controller, 3, nodes(*live), partitions), peers
    )


def answer(*leaders: cv.LeaderState) -> cv.PeerAnswer:
    return cv.PeerAnswer(
        {"zookeeper_connected": True, "partitions": 1, "leaders": 1}, list(leaders)
    )


def test_partitions_are_sorted_worst_first_and_counted() -> None:
    parts = [
        state(1, [1, 2, 3], partition=0),  # ok
        state(1, [1, 2], partition=1),  # under-replicated
        state(-1, [2], partition=2),  # offline: no leader
        state(1, [1], partition=3),  # under min ISR (2, from the leader)
        state(2, [2, 3], partition=4),  # leader 2 is not live: offline
    ]
    leader1 = answer(*(led_view("t", p, 1, 0, s.isr) for p, s in enumerate(parts) if s.leader == 1))
    view = build(parts, {1: leader1, 3: answer()}, live=[1, 3], registered=[1, 3])
    assert [(p["partition"], p["status"]) for p in view.partitions] == [
        (2, cv.OFFLINE),
        (4, cv.OFFLINE),
        (3, cv.UNDER_MIN_ISR),
        (1, cv.UNDER_REPLICATED),
        (0, cv.OK),
    ]
    assert view.summary["offline"] == 2 and view.summary["ok"] == 1
    row4 = next(p for p in view.partitions if p["partition"] == 4)
    assert row4["offline_replicas"] == [2] and row4["source"] == "metadata"
    assert view.select("t", 2)["total"] == 5 and len(view.select("t", 2)["partitions"]) == 2
    assert view.select("other", None)["total"] == 0


def test_internal_topics_come_after_the_users_and_can_be_left_out() -> None:
    """__consumer_offsets' 50 partitions must not push the user's off the page: they come
    after the user's topics (even when worse off), a selection can leave them out, and the
    counts say how many of each are internal."""
    offsets = [
        state(1, [1, 2], topic="__consumer_offsets", partition=p) for p in range(50)
    ]  # under-replicated
    orders = [state(1, [1, 2, 3], topic="orders", partition=p) for p in range(3)]  # ok
    view = build([*offsets, state(-1, [2], topic="zeta"), *orders], {}, [1, 2, 3], [1, 2, 3])
    assert [(p["topic"], p["status"]) for p in view.partitions[:5]] == [
        ("zeta", cv.OFFLINE),
        ("orders", cv.OK),
        ("orders", cv.OK),
        ("orders", cv.OK),
        ("__consumer_offsets", cv.UNDER_REPLICATED),
    ]
    assert view.topics() == ["orders", "zeta", "__consumer_offsets"]
    assert [p["internal"] for p in view.partitions] == [False] * 4 + [True] * 50
    summary = view.summary
    assert (summary["topics"], summary["partitions"], summary["under_replicated"]) == (3, 54, 50)
    assert summary["internal"] == {
        "topics": 1,
        "partitions": 50,
        "offline": 0,
        "under_min_isr": 0,
        "under_replicated": 50,
        "ok": 0,
        "waiting_on_unreachable": 0,
    }
    hidden = view.select(None, 2, internal=False)
    assert hidden["total"] == 4 and hidden["hidden_internal"] == 50
    assert [p["topic"] for p in hidden["partitions"]] == ["zeta", "orders"]
    shown = view.select(None, None)
    assert shown["total"] == 54 and shown["hidden_internal"] == 0
    # A topic asked for by name is shown whatever the toggle.
    named = view.select("__consumer_offsets", 1, internal=False)
    assert named["total"] == 50 and named["hidden_internal"] == 0


def test_the_leaders_view_wins_over_the_cache_and_a_deposed_leader_loses() -> None:
    # The cache still has the old ISR; the leader already shrank it.
    parts = [state(1, [1, 2, 3], epoch=5)]
    current = led_view("t", 0, 1, 5, [1, 3])
    deposed = led_view("t", 0, 2, 4, [2])  # still thinks it leads, an older epoch
    view = build(parts, {1: answer(current), 2: answer(deposed)}, [1, 2, 3], [1, 2, 3])
    row = view.partitions[0]
    assert row["source"] == "leader" and row["isr"] == [1, 3] and row["out_of_sync"] == [2]
    assert row["leader"] == 1 and row["high_watermark"] == 10
    assert row["replica_states"] == [
        {"broker_id": b, "log_end_offset": 12, "lag": 0, "in_isr": True, "last_caught_up_ms_ago": 5}
        for b in (1, 3)
    ]
    assert row["status"] == cv.UNDER_REPLICATED
    # Without the leader's answer: the cache's view, and the leader marked unreachable.
    view = build(parts, {1: cv.PeerFailure("timeout")}, [1, 2, 3], [1, 2, 3])
    row = view.partitions[0]
    assert row["source"] == "metadata" and row["isr"] == [1, 2, 3]
    assert row["leader_reachable"] is False and row["min_insync_replicas"] is None


def test_partitions_whose_leader_or_isr_holds_an_unreachable_broker_are_marked() -> None:
    """acks=all writes wait for every ISR member: a paused follower (registered, silent)
    stalls every partition whose ISR holds it, not only those it leads; so does a down
    broker still in an ISR. Partitions it is not in, or has left the ISR of, are not
    marked; within a status the marked ones come first, and the summary counts them."""
    parts = [
        state(1, [1, 3], replicas=[1, 3], partition=0),  # 2 is not a replica
        state(1, [1, 2, 3], partition=1),  # 2 a follower in the ISR
        state(3, [3, 2], replicas=[3, 2], partition=2),  # the leader's view: 2 left
        state(2, [2, 1], replicas=[2, 1], partition=3),  # 2 leads (no answer: cache)
        state(1, [1, 4], replicas=[1, 4], partition=4),  # 4: down, still in the ISR
        state(1, [1, 3], replicas=[1, 3], topic="__consumer_offsets"),
        state(3, [3, 2], replicas=[3, 2], topic="__consumer_offsets", partition=1),
    ]
    leader1 = answer(*(led_view(s.topic, s.partition, 1, 0, s.isr) for s in parts if s.leader == 1))
    leader3 = answer(led_view("t", 2, 3, 0, [3]), led_view("__consumer_offsets", 1, 3, 0, [3, 2]))
    peers = {1: leader1, 2: cv.PeerFailure("no answer in 0.8 s"), 3: leader3}
    view = build(parts, peers, live=[1, 2, 3], registered=[1, 2, 3])
    rows = {(p["topic"], p["partition"]): p for p in view.partitions}
    marked = {tp: r["unreachable_brokers"] for tp, r in rows.items() if r["unreachable_brokers"]}
    assert marked == {
        ("t", 1): [2],
        ("t", 3): [2],  # its leader: the row is the cache's
        ("t", 4): [4],
        ("__consumer_offsets", 1): [2],
    }
    assert rows[("t", 3)]["leader_reachable"] is False
    assert view.summary["waiting_on_unreachable"] == 4
    assert view.summary["internal"]["waiting_on_unreachable"] == 1
    # The same rule as the broker table's: 2 unreachable, 4 down.
    statuses = {b["id"]: b["status"] for b in view.brokers}
    assert (statuses[2], statuses[4]) == (cv.UNREACHABLE, cv.DOWN)
    # Worst first as before (2 is under-replicated); among the ok ones the marked first.
    order = [p["partition"] for p in view.partitions if p["topic"] == "t"]
    assert order == [2, 1, 3, 4, 0]
    assert [p["unreachable_brokers"] for p in view.select("t", 3)["partitions"]] == [[], [2], [2]]

    # Resumed (it answers again): nothing is marked, the counts are 0.
    peers[2] = answer()
    view = build(parts[:4], peers, live=[1, 2, 3], registered=[1, 2, 3])
    assert all(p["unreachable_brokers"] == [] for p in view.partitions)
    assert view.summary["waiting_on_unreachable"] == 0


def test_the_unreachable_set_is_computed_once_per_view_not_per_partition(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """10,000 partitions cost a handful of broker-status checks, not one per partition."""
    calls = 0
    real = cv.broker_status

    def counted(*args: object, **kwargs: object) -> str:
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cv, "broker_status", counted)
    parts = [state(1 + p % 3, [1, 2, 3], partition=p) for p in range(10_000)]
    peers = {1: answer(), 2: cv.PeerFailure("no answer in 0.8 s"), 3: answer()}
    view = build(parts, peers, live=[1, 2, 3], registered=[1, 2, 3])
    assert view.summary["waiting_on_unreachable"] == 10_000
    assert calls <= 2 * 3  # the alive set, then the broker table


def test_broker_status_from_registration_liveness_and_answers() -> None:
    parts = [state(1, [1, 2, 3], replicas=[1, 2, 3, 4])]
    peers: dict[int, cv.PeerAnswer | cv.PeerFailure] = {
        1: answer(),
        2: cv.PeerFailure("no answer in 0.8 s"),  # paused: registered, silent
        3: answer(),
    }
    view = build(parts, peers, live=[1, 2, 3], registered=[1, 2, 3], controller=1)
    by_id = {b["id"]: b for b in view.brokers}
    assert by_id[1]["status"] == cv.ALIVE and by_id[1]["is_controller"] is True
    assert by_id[2]["status"] == cv.UNREACHABLE and by_id[2]["error"] == "no answer in 0.8 s"
    assert by_id[4]["status"] == cv.DOWN and by_id[4]["registered"] is False  # a replica only
    assert by_id[3]["serving"] is True and by_id[3]["broker_epoch"] == 103
    assert view.summary["brokers_alive"] == 2 and view.controller == {"id": 1, "epoch": 4}
    assert by_id[4]["endpoints"] == [] and by_id[4]["broker_epoch"] == -1
    # A broker seen registered before keeps its last address and epoch once gone.
    zk = cv.ZkView({b: registration(b) for b in (1, 2, 3)}, 1, 4)
    metadata = cv.MetadataView(1, 3, nodes(1, 2, 3), parts)
    view = cv.build_cluster_view(3, 1, True, zk, metadata, peers, {4: registration(4)})
    gone = next(b for b in view.brokers if b["id"] == 4)
    assert gone["status"] == cv.DOWN and gone["broker_epoch"] == 104
    assert gone["endpoints"] == ["PLAINTEXT://127.0.0.1:9095"]
    # One gone before this broker read its registration (no page was open): its address
    # as the controller last sent it live; its epoch is not in UpdateMetadata.
    view = cv.build_cluster_view(3, 1, True, zk, metadata, peers, {}, nodes(4))
    gone = next(b for b in view.brokers if b["id"] == 4)
    assert gone["status"] == cv.DOWN and gone["live"] is False and gone["broker_epoch"] == -1
    assert gone["endpoints"] == ["127.0.0.1:9095"] and gone["admin_url"] is None
    # A registration seen (with its epoch and admin endpoint) comes first.
    view = cv.build_cluster_view(3, 1, True, zk, metadata, peers, {4: registration(4)}, nodes(4))
    gone = next(b for b in view.brokers if b["id"] == 4)
    assert gone["endpoints"] == ["PLAINTEXT://127.0.0.1:9095"] and gone["broker_epoch"] == 104


def test_without_zookeeper_registration_is_unknown_and_the_cache_names_the_controller() -> None:
    view = build([state(1, [1])], {1: answer(), 3: answer()}, [1, 3], registered=None, controller=1)
    assert view.zookeeper["answered"] is False
    by_id = {b["id"]: b for b in view.brokers}
    assert by_id[1]["registered"] is None and by_id[1]["status"] == cv.ALIVE
    assert view.controller == {"id": 1, "epoch": 3}  # metadata's controller epoch


statuses = st.sampled_from(["ok", "under_replicated", "under_min_isr", "offline"])


@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.lists(st.integers(1, 3), unique=True), st.booleans()),
        max_size=30,
    )
)
def test_any_cluster_sorts_by_trouble_and_the_summary_adds_up(
    specs: list[tuple[int, list[int], bool]],
) -> None:
    parts = [
        state(leader if leader else -1, isr, partition=i)
        for i, (leader, isr, _) in enumerate(specs)
    ]
    view = build(parts, {3: answer()}, live=[1, 2], registered=[1, 2])
    ranks = [cv.STATUS_RANK[p["status"]] for p in view.partitions]
    assert ranks == sorted(ranks)
    assert sum(view.summary[s] for s in cv.STATUS_RANK) == len(parts) == view.summary["partitions"]
    for p in view.partitions:
        expected = cv.partition_status(p["leader"], [1, 2], p["isr"], p["replicas"], None)
        assert p["status"] == expected


# --- throughput --------------------------------------------------------------------------


def test_rates_are_counter_deltas_per_second() -> None:
    sampler = RateSampler(window_s=4)
    sampler.sample(100.02, {"t": [0, 0, 0, 0, 0]})
    sampler.sample(101.02, {"t": [10, 1000, 0, 500, 0], "new": [5, 5, 5, 5, 5]})
    rows = sampler.rows_after(0)
    # A topic's counters appear with its first record: counted from 0.
    assert rows == [(101, {"t": [10.0, 1000.0, 0.0, 500.0, 0.0], "new": [5.0] * 5})]
    # The same second again is left to the next sample.
    sampler.sample(101.9, {"t": [99, 99, 99, 99, 99], "new": [5, 5, 5, 5, 5]})
    assert len(sampler.rows_after(0)) == 1
    # A late sample, two seconds on: both seconds get the interval's rate.
    sampler.sample(103.02, {"t": [30, 3000, 0, 500, 0], "new": [5, 5, 5, 5, 5]})
    assert sampler.rows_after(101) == [
        (102, {"t": [10.0, 1000.0, 0.0, 0.0, 0.0], "new": [0.0] * 5}),
        (103, {"t": [10.0, 1000.0, 0.0, 0.0, 0.0], "new": [0.0] * 5}),
    ]
    # A counter that went down (a topic deleted and created again) is no negative rate.
    sampler.sample(104.02, {"t": [1, 1, 0, 0, 0], "new": [5, 5, 5, 5, 5]})
    assert sampler.rows_after(103)[0][1]["t"] == [0.0] * 5
    sampler.sample(105.02, {"t": [1, 1, 0, 0, 0]})  # "new" deleted: no row for it
    assert sampler.rows_after(104) == [(105, {"t": [0.0] * 5})]
    assert [r[0] for r in sampler.rows_after(0)] == [102, 103, 104, 105]  # the window


@given(st.lists(st.tuples(st.floats(0.3, 3.0), st.integers(0, 1000)), max_size=40))
def test_the_rates_add_up_to_the_counts_however_late_the_samples(
    steps: list[tuple[float, int]],
) -> None:
    sampler = RateSampler(window_s=1000)
    now, count = 1000.0, 0
    sampler.sample(now, {"t": [count] * 5})
    for gap, added in steps:
        now += gap
        count += added
        sampler.sample(now, {"t": [count] * 5})
    # A sample in the same second as the last is left to the next: one more, a second on.
    sampler.sample(now + 1.0, {"t": [count] * 5})
    rows = sampler.rows_after(0)
    assert sum(rates["t"][0] for _, rates in rows) == pytest.approx(count)
    seconds = [s for s, _ in rows]
    assert seconds == list(range(1001, int(now + 1.0) + 1))  # every second, once


def test_the_cluster_series_sums_brokers_by_second_with_gaps_as_none() -> None:
    tp = ClusterThroughput(window_s=5)
    tp.add(1, [(98, {"a": [1, 10, 0, 0, 0, 0]}), (99, {"a": [2, 20, 0, 0, 0, 0]})])
    tp.add(2, [(99, {"a": [3, 30, 0, 0, 0, 0], "b": [1, 1, 1, 1, 1, 1]})])
    assert tp.last_second(1) == 99 and tp.last_second(5) == 0
    series = tp.series(100)
    assert series["start_s"] == 96 and series["end_s"] == 100
    assert series["rates"] == list(RATE_NAMES)
    assert series["topics"]["a"]["messages_in"] == [None, None, 1.0, 5.0, None]
    assert series["total"]["bytes_in"] == [None, None, 10.0, 51.0, None]
    assert series["topics"]["b"]["messages_in"] == [None, None, None, 1.0, None]
    # Only what is after a second already sent.
    assert tp.series(100, after_s=98)["topics"]["a"]["messages_in"] == [5.0, None]
    tp.prune(103)  # the window is 99..103: 98 goes
    assert tp.series(103)["topics"]["a"]["messages_in"] == [5.0, None, None, None, None]
    assert tp.last_second(1) == 99


# --- the metadata cache's change listener --------------------------------------------------


def update(
    states: list[UpdateMetadataPartitionState], brokers: list[int], controller: int = 1
) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(
        controller, 2, 0, states, [BrokerNode(b, "127.0.0.1", 9091 + b) for b in brokers]
    )


def test_the_metadata_cache_reports_what_changed_and_a_failing_listener_harms_nothing() -> None:
    cache = MetadataCache(3)
    changes: list[MetadataChange] = []
    cache.add_listener(changes.append)

    def broken(change: MetadataChange) -> None:
        raise RuntimeError("a dashboard bug")

    cache.add_listener(broken)
    cache.update(update([state(1, [1, 2, 3])], [1, 2, 3]))
    cache.update(update([state(1, [1, 2, 3]), state(2, [2, 3], epoch=1, partition=1)], [2, 3], 2))
    first, second = changes
    assert first.first_update and first.old_brokers == [] and first.new_brokers == [1, 2, 3]
    assert not second.first_update
    assert (second.old_controller, second.new_controller) == (1, 2)
    assert second.old_brokers == [1, 2, 3] and second.new_brokers == [2, 3]
    # Only the partition that differs: partition 0 is unchanged, partition 1 is new.
    assert second.changed == [(None, state(2, [2, 3], epoch=1, partition=1))]
    # The updates were applied although a listener failed.
    assert cache.controller_id == 2 and sorted(cache.live_brokers) == [2, 3]
    assert len(cache.all_partition_states()) == 2
