"""The dashboard in a real browser (Playwright driving Debian's chromium, headless) against a
real 3-broker cluster: the page lists the partitions with their leaders and ISR; after a
kill -9 of a broker it shows the broker down, the ISR shrink in the table and the event
timeline, the new leaders, and when the victim was last caught up where that is known;
after the restart the ISR expands again. Screenshots of each state are saved
(MINIKAFKA_TEST_ARTIFACTS, default test-artifacts/ in the repository)."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic
from playwright.sync_api import Browser, Page, sync_playwright

from minikafka.cluster import LocalCluster
from tests.cluster.conftest import SESSION_TIMEOUT_MS, ClusterFactory
from tests.cluster.helpers import admin_client, deliver, producing

pytestmark = pytest.mark.timeout(240)

CHROMIUM = "/usr/bin/chromium"  # Debian's: Playwright's own download is not reachable here
TOPIC = "orders"
PARTITIONS = 3
ARTIFACTS = Path(
    os.environ.get("MINIKAFKA_TEST_ARTIFACTS")
    or Path(__file__).resolve().parents[2] / "test-artifacts"
)


def shots_dir() -> Path:
    shots = ARTIFACTS / "dashboard"
    shots.mkdir(parents=True, exist_ok=True)
    return shots


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: apt-get install chromium"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield pg
    context.close()
    assert errors == [], f"the page logged errors: {errors}"


def table_state(page: Page) -> dict[str, Any]:
    """What the page shows now: the header's counts, broker statuses, each partition's leader
    and ISR (in the table's order), the event lines (one event, or a group of them: its
    count, and its members while open), and how many updates it has had."""
    return page.evaluate(
        """() => ({
            updates: Number(document.body.dataset.updates || 0),
            summary: Object.fromEntries([...document.querySelectorAll('#summary [data-count]')]
                .map(x => [x.dataset.count, x.textContent])),
            brokers: Object.fromEntries([...document.querySelectorAll('#brokers tr[data-broker]')]
                .map(r => [r.dataset.broker, r.dataset.status])),
            partitions: Object.fromEntries([...document.querySelectorAll('#partitions tr[data-tp]')]
                .map(r => [r.dataset.tp, {
                    status: r.dataset.status,
                    leader: r.querySelector('.leader').textContent.trim(),
                    isr: r.querySelector('.isr').dataset.isr,
                    waiting_on: r.dataset.waitingOn,
                    marked: [...r.querySelectorAll('.isr .chip.unreachable')]
                        .map(c => c.textContent),
                    marker: r.querySelector('.status .badge.waiting')?.textContent ?? null,
                    lag: Object.fromEntries([...r.querySelectorAll('.lag [data-replica]')]
                        .map(x => [x.dataset.replica, x.textContent])),
                }])),
            events: [...document.querySelectorAll('#events > li')].map(li => ({
                kind: li.dataset.kind,
                broker: li.dataset.broker ?? null,
                count: Number(li.dataset.count || 1),
                text: (li.querySelector(':scope > details > summary')
                       || li.querySelector('.ev-text')).textContent,
                members: [...li.querySelectorAll('ol.members li[data-kind]')]
                    .map(m => m.querySelector('.ev-text').textContent),
            })),
        })"""
    )


def wait_for_page(
    page: Page, condition: Callable[[dict[str, Any]], bool], timeout: float, what: str
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        state = table_state(page)
        if condition(state):
            return state
        if time.monotonic() > deadline:
            pytest.fail(f"the page did not show {what} in {timeout} s; it shows {state}")
        page.wait_for_timeout(100)


def isr(state: dict[str, Any], p: int) -> set[int]:
    return {int(b) for b in state["partitions"][f"{TOPIC}-{p}"]["isr"].split(",") if b}


def leader(state: dict[str, Any], p: int) -> str:
    return str(state["partitions"][f"{TOPIC}-{p}"]["leader"])


def test_the_page_follows_a_broker_kill_and_restart(
    make_cluster: ClusterFactory, page: Page
) -> None:
    cluster: LocalCluster = make_cluster()
    admin = admin_client(cluster.bootstrap_servers)
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)], operation_timeout=30)[TOPIC].result(60)
    with producing(cluster.bootstrap_servers, {"acks": "all"}) as producer:
        targets = [i % PARTITIONS for i in range(300)]
        deliver(producer, TOPIC, [b"x" * 100] * 300, partitions=targets, timeout=30)
    shots = shots_dir()

    # Served by broker 3; the victim is the controller when that is another broker.
    controller = cluster.controller()
    assert controller is not None
    victim = controller[0] if controller[0] != 3 else 1
    page.goto(cluster.admin_url(3) + "/")

    healthy = wait_for_page(
        page,
        lambda s: (
            len(s["partitions"]) == PARTITIONS
            and all(isr(s, p) == {1, 2, 3} for p in range(PARTITIONS))
            and set(s["brokers"].values()) == {"alive"}
        ),
        30,
        "every partition with its full ISR",
    )
    led_by_victim = [p for p in range(PARTITIONS) if leader(healthy, p) == str(victim)]
    assert led_by_victim, f"broker {victim} leads nothing: {healthy}"
    page.screenshot(path=shots / "1-healthy.png", full_page=True)

    killed_at = time.monotonic()
    cluster.kill(victim)
    # Before its session expires the dead broker is still registered: unreachable.
    wait_for_page(
        page,
        lambda s: s["brokers"].get(str(victim)) in ("unreachable", "down"),
        10,
        f"broker {victim} unreachable",
    )
    page.screenshot(path=shots / "2-unreachable.png", full_page=True)

    def failed_over(s: dict[str, Any]) -> bool:
        kinds = {e["kind"] for e in s["events"]}
        return (
            s["brokers"].get(str(victim)) == "down"
            and all(victim not in isr(s, p) for p in range(PARTITIONS))
            and all(
                str(victim) in s["partitions"][f"{TOPIC}-{p}"]["lag"] for p in range(PARTITIONS)
            )
            and all(leader(s, p) not in (str(victim), "none") for p in led_by_victim)
            and {"isr_shrink", "leader_election", "broker_deregistered"} <= kinds
            # One line for the victim leaving every ISR.
            and any(
                (e["kind"], e["broker"], e["count"]) == ("isr_shrink", str(victim), PARTITIONS)
                for e in s["events"]
            )
        )

    failed = wait_for_page(page, failed_over, SESSION_TIMEOUT_MS / 1000 + 10, "the failover")
    kill_to_page_s = time.monotonic() - killed_at
    page.screenshot(path=shots / "3-failed-over.png", full_page=True)
    for p in range(PARTITIONS):
        row = failed["partitions"][f"{TOPIC}-{p}"]
        assert row["status"] == "under_replicated", row
        # The victim was in every ISR a moment ago: a leader that kept leading (its new
        # epoch from the controller reset the ISR rule's clock, and kept the victim's log
        # end, as Kafka's) still shows its lag and when it last saw it caught up; a new
        # leader never saw it, and says so.
        lag = row["lag"][str(victim)]
        assert "never" not in lag, row
        if p in led_by_victim:
            assert lag.endswith("unknown since leader change"), row
        else:
            assert re.search(r"lag [0-9]+, [0-9.]+ s ago$", lag), row
    shrinks = [e["text"] for e in failed["events"] if e["kind"] == "isr_shrink"]
    assert f"broker {victim} left the ISR of {PARTITIONS} partitions" in shrinks, shrinks
    elections = [e["text"] for e in failed["events"] if e["kind"] == "leader_election"]
    assert any("clean" in t and "unclean" not in t for t in elections), elections

    cluster.restart(victim)
    recovered = wait_for_page(
        page,
        lambda s: (
            s["brokers"].get(str(victim)) == "alive"
            and all(isr(s, p) == {1, 2, 3} for p in range(PARTITIONS))
            and any(e["kind"] == "isr_expand" for e in s["events"])
        ),
        60,
        "the ISR expanded again",
    )
    page.screenshot(path=shots / "4-recovered.png", full_page=True)
    assert all(r["status"] == "ok" for r in recovered["partitions"].values())
    assert recovered["updates"] > failed["updates"] > healthy["updates"]

    (shots / "failover.json").write_text(
        json.dumps(
            {
                "victim": victim,
                "kill_to_page_s": round(kill_to_page_s, 2),
                "zookeeper_session_timeout_ms": SESSION_TIMEOUT_MS,
                "events_after_failover": [e["text"] for e in failed["events"]],
            },
            indent=2,
        )
    )
    print(f"kill -9 of broker {victim} to the page showing the failover: {kill_to_page_s:.2f} s")


def test_the_topic_filter_and_throughput_charts(make_cluster: ClusterFactory, page: Page) -> None:
    cluster = make_cluster()
    admin = admin_client(cluster.bootstrap_servers)
    futures = admin.create_topics(
        [NewTopic("alpha", 2, 3), NewTopic("beta", 4, 3)], operation_timeout=30
    )
    for f in futures.values():
        f.result(60)
    page.goto(cluster.admin_url(1) + "/")
    wait_for_page(page, lambda s: len(s["partitions"]) == 6, 30, "both topics' partitions")
    page.select_option("#topic-filter", "beta")
    state = wait_for_page(
        page,
        lambda s: (
            len(s["partitions"]) == 4 and all(tp.startswith("beta-") for tp in s["partitions"])
        ),
        10,
        "only beta's partitions",
    )
    assert "of 4" in page.text_content("#partition-count")
    # Records produced now show up in beta's chart without a reload.
    with producing(cluster.bootstrap_servers, {"acks": "all"}) as producer:
        deliver(producer, "beta", [b"y" * 1000] * 2000, timeout=30)
    # Its window maximum turns non-zero: the records reached the chart, no reload.
    page.wait_for_function(
        """() => {
            const svg = document.querySelector(
                '#throughput svg[data-topic="beta"][data-rate="messages_in"]');
            return svg !== null
                && /[1-9]/.test(svg.closest('.chart').querySelector('.chart-max').textContent);
        }""",
        timeout=15000,
    )
    assert state["updates"] >= 1
    page.screenshot(path=shots_dir() / "5-filter-and-throughput.png", full_page=True)


def test_the_page_loads_in_two_seconds_when_the_other_brokers_are_paused(
    make_cluster: ClusterFactory, page: Page
) -> None:
    cluster = make_cluster()
    admin = admin_client(cluster.bootstrap_servers)
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)], operation_timeout=30)[TOPIC].result(60)
    url = cluster.admin_url(3) + "/"
    page.goto(url)
    wait_for_page(page, lambda s: len(s["partitions"]) == PARTITIONS, 30, "the partitions")
    page.goto("about:blank")
    cluster.pause(1)
    cluster.pause(2)
    try:
        started = time.monotonic()
        page.goto(url)
        # The first update rendered: brokers and partitions in the tables.
        page.wait_for_function(
            "() => Number(document.body.dataset.updates || 0) >= 1"
            " && document.querySelectorAll('#partitions tr[data-tp]').length === 3",
            timeout=2000,
        )
        loaded_s = time.monotonic() - started
        assert loaded_s < 2.0, loaded_s
        # Within a gathering or two both peers are shown unreachable, the page still live.
        state = wait_for_page(
            page,
            lambda s: s["brokers"].get("1") == s["brokers"].get("2") == "unreachable",
            5,
            "the paused brokers unreachable",
        )
        assert state["brokers"]["3"] == "alive"
        page.screenshot(path=shots_dir() / "6-peers-paused.png", full_page=True)
        print(f"page loaded with both peers paused in {loaded_s:.2f} s")
    finally:
        cluster.resume(1)
        cluster.resume(2)


def test_partitions_waiting_on_a_paused_or_killed_follower_are_marked(
    make_cluster: ClusterFactory, page: Page
) -> None:
    """acks=all writes stall on every partition whose ISR holds a dead or paused broker,
    not only those it leads: the rows of the partitions whose ISR holds the follower are
    marked (its ISR chip, and "acks=all writes wait on broker N"), the others are not, and
    the header counts them; the marks go when it is resumed, and after a kill -9 when the
    controller drops it from the ISR (its session expired)."""
    # Long enough that a paused broker is seen unreachable before its session expires on a
    # loaded machine; the kill's ISR shrink waits for it.
    session_ms = 10_000
    cluster = make_cluster(
        overrides={
            "zookeeper.session.timeout.ms": str(session_ms),
            # Kafka's stall: the killed follower stays in the ISRs until its session expires
            # (the leaders' own drop, 2 s after the kill, would race the page).
            "replica.lag.disconnected.max.ms": "-1",
        }
    )
    controller = cluster.controller()
    assert controller is not None
    # Broker 3 serves the page; the victim is neither it nor the controller.
    victim = 1 if controller[0] == 2 else 2
    other = 3 - victim
    topic = "stall"
    # The victim leads nothing: a follower in the ISR of partitions 1 and 2 only.
    assignment = [[3, other], [3, victim], [other, victim], [other, 3]]
    admin = admin_client(cluster.bootstrap_servers)
    admin.create_topics(
        [NewTopic(topic, len(assignment), -1, replica_assignment=assignment)], operation_timeout=30
    )[topic].result(60)
    with producing(cluster.bootstrap_servers, {"acks": "all"}) as producer:
        deliver(producer, topic, [b"x"] * 40, partitions=[i % 4 for i in range(40)], timeout=30)
    rows = [f"{topic}-{p}" for p in range(4)]
    holding, free = {rows[1], rows[2]}, {rows[0], rows[3]}

    def isr_of(s: dict[str, Any], tp: str) -> set[int]:
        return {int(b) for b in s["partitions"][tp]["isr"].split(",") if b}

    def unmarked(s: dict[str, Any]) -> bool:
        return (
            all(s["partitions"][tp]["waiting_on"] == "" for tp in rows)
            and "waiting_on_unreachable" not in s["summary"]
        )

    def marked(s: dict[str, Any]) -> bool:
        return s["brokers"].get(str(victim)) == "unreachable" and all(
            s["partitions"][tp]["waiting_on"] == (str(victim) if tp in holding else "")
            for tp in rows
        )

    def check_marks(s: dict[str, Any]) -> None:
        for tp in holding:
            row = s["partitions"][tp]
            assert row["marked"] == [str(victim)], row
            assert row["marker"] == f"acks=all writes wait on broker {victim}", row
        for tp in free:
            row = s["partitions"][tp]
            assert row["marked"] == [] and row["marker"] is None, row
        count = s["summary"]["waiting_on_unreachable"]
        assert count.startswith("2 partitions waiting on an unreachable broker"), count

    page.goto(cluster.admin_url(3) + "/")
    wait_for_page(
        page,
        lambda s: (
            all(tp in s["partitions"] and len(isr_of(s, tp)) == 2 for tp in rows)
            and set(s["brokers"].values()) == {"alive"}
            and unmarked(s)
        ),
        30,
        "every partition with its full ISR, none marked",
    )

    cluster.pause(victim)
    try:
        paused = wait_for_page(
            page, marked, session_ms / 1000 - 2, f"the partitions holding broker {victim} marked"
        )
        check_marks(paused)
        page.screenshot(path=shots_dir() / "10-waiting-on-paused.png", full_page=True)
    finally:
        cluster.resume(victim)
    wait_for_page(
        page,
        lambda s: (
            s["brokers"].get(str(victim)) == "alive"
            and unmarked(s)
            and all(len(isr_of(s, tp)) == 2 for tp in rows)
        ),
        session_ms / 1000 + 30,
        "the marks gone after the resume",
    )

    cluster.kill(victim)
    killed = wait_for_page(
        page, marked, session_ms / 1000 - 2, f"the partitions holding killed broker {victim} marked"
    )
    check_marks(killed)
    page.screenshot(path=shots_dir() / "11-waiting-on-killed.png", full_page=True)
    # Its session expires, the controller drops it from the ISRs: nothing waits on it.
    shrunk = wait_for_page(
        page,
        lambda s: (
            s["brokers"].get(str(victim)) == "down"
            and all(victim not in isr_of(s, tp) for tp in holding)
            and unmarked(s)
        ),
        session_ms / 1000 + 15,
        "the marks gone after the ISR shrink",
    )
    assert all(shrunk["partitions"][tp]["status"] == "under_replicated" for tp in holding)
    assert all(shrunk["partitions"][tp]["status"] == "ok" for tp in free)


def commit_offsets(cluster: LocalCluster, group: str, topic: str) -> None:
    """A group's commit: the first one creates __consumer_offsets."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    finally:
        consumer.close()


def test_internal_topics_are_hidden_until_the_toggle_shows_them(
    make_cluster: ClusterFactory, page: Page
) -> None:
    """__consumer_offsets' 50 partitions would list before the user's 3: hidden by default,
    counted in the header, shown after the user's with the toggle (kept in the address)."""
    cluster = make_cluster(overrides={"offsets.topic.num.partitions": "50"})
    admin = admin_client(cluster.bootstrap_servers)
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)], operation_timeout=30)[TOPIC].result(60)
    commit_offsets(cluster, "billing", TOPIC)
    page.goto(cluster.admin_url(1) + "/")
    orders = [f"{TOPIC}-{p}" for p in range(PARTITIONS)]

    hidden = wait_for_page(
        page,
        lambda s: "53" in s["summary"].get("partitions", "") and list(s["partitions"]) == orders,
        30,
        "the user's partitions only, the offsets topic's counted",
    )
    assert hidden["summary"]["topics"] == "2 topics (1 internal, hidden)"
    assert hidden["summary"]["partitions"] == "53 partitions (50 internal, hidden)"
    assert page.is_visible("#show-internal") and not page.is_checked("#show-internal")
    assert "50 of internal topics hidden" in page.text_content("#partition-count")
    options = page.eval_on_selector_all("#topic-filter option", "os => os.map(o => o.value)")
    assert options == ["", TOPIC]

    page.check("#show-internal")
    internal = [f"__consumer_offsets-{p}" for p in range(50)]
    shown = wait_for_page(
        page, lambda s: len(s["partitions"]) == 53, 10, "the offsets topic's partitions too"
    )
    # The user's topics first, then the internal ones.
    assert list(shown["partitions"])[:PARTITIONS] == orders
    assert set(list(shown["partitions"])[PARTITIONS:]) == set(internal)
    assert shown["summary"]["partitions"] == "53 partitions (50 internal)"
    options = page.eval_on_selector_all("#topic-filter option", "os => os.map(o => o.value)")
    assert options == ["", TOPIC, "__consumer_offsets"]
    page.screenshot(path=shots_dir() / "7-internal-topics-shown.png", full_page=True)

    # The choice is in the address: a reload keeps it.
    assert "internal=1" in page.url
    page.reload()
    wait_for_page(page, lambda s: len(s["partitions"]) == 53, 10, "still shown after a reload")
    assert page.is_checked("#show-internal")
    page.uncheck("#show-internal")
    wait_for_page(page, lambda s: list(s["partitions"]) == orders, 10, "hidden again")
    assert "internal=1" not in page.url


def test_one_failures_events_are_one_line_each_kind(
    make_cluster: ClusterFactory, page: Page
) -> None:
    """A kill -9 with the offsets topic's 50 partitions: every partition's ISR shrink is one
    line that opens on its members, the internal topics' counted but listed only when the
    internal toggle shows them."""
    cluster = make_cluster(overrides={"offsets.topic.num.partitions": "50"})
    admin = admin_client(cluster.bootstrap_servers)
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)], operation_timeout=30)[TOPIC].result(60)
    commit_offsets(cluster, "billing", TOPIC)
    page.goto(cluster.admin_url(3) + "/")
    orders = [f"{TOPIC}-{p}" for p in range(PARTITIONS)]
    healthy = wait_for_page(
        page,
        lambda s: (
            "53" in s["summary"].get("partitions", "")
            and all(isr(s, p) == {1, 2, 3} for p in range(PARTITIONS))
        ),
        30,
        "the cluster with its offsets topic",
    )
    victim = 2
    cluster.kill(victim)

    def one_line(s: dict[str, Any]) -> bool:
        return any(
            (e["kind"], e["broker"], e["count"]) == ("isr_shrink", str(victim), 53)
            for e in s["events"]
        ) and all(victim not in isr(s, p) for p in range(PARTITIONS))

    failed = wait_for_page(
        page, one_line, SESSION_TIMEOUT_MS / 1000 + 20, "one line for the ISR shrinks"
    )
    lines = failed["events"]
    (shrink,) = [e for e in lines if e["kind"] == "isr_shrink"]
    assert shrink["text"] == (
        f"broker {victim} left the ISR of 53 partitions "
        "(3 of your topics'; 50 of __consumer_offsets, hidden)"
    )
    # Elections: one line for the partitions the victim led (a third of them, about).
    (elected,) = [e for e in lines if e["kind"] == "leader_election"]
    assert elected["broker"] == str(victim) and 10 <= elected["count"] <= 30, elected
    n = elected["count"]
    assert (
        f"broker {victim} lost the leadership of {n} partitions in clean elections ("
        in (elected["text"])
    ), elected
    # Over 100 events since the kill, a few lines.
    new_lines = [(e["kind"], e["text"]) for e in lines[: len(lines) - len(healthy["events"])]]
    assert len(new_lines) <= 4, new_lines
    count = page.text_content("#event-count") or ""
    assert re.fullmatch(r"\d+ in \d+ lines \(\d+ internal hidden\)", count), count

    # Opened: the user's partitions only, the rest said to be hidden.
    page.click(f'#events li[data-kind="isr_shrink"][data-broker="{victim}"] summary')
    opened = wait_for_page(
        page,
        lambda s: any(len(e["members"]) == PARTITIONS for e in s["events"]),
        5,
        "the shrink line opened on the user's partitions",
    )
    (shrink,) = [e for e in opened["events"] if e["kind"] == "isr_shrink"]
    assert sorted(m.split(":")[0] for m in shrink["members"]) == orders
    assert all(f"out: {victim}" in m for m in shrink["members"])
    assert page.is_visible("#events .hidden-note")
    page.screenshot(path=shots_dir() / "8-grouped-events.png", full_page=True)

    # With the internal topics shown: the same line, all 53 in it, still open.
    page.check("#show-internal")
    shown = wait_for_page(
        page,
        lambda s: any(len(e["members"]) == 53 for e in s["events"]),
        10,
        "the shrink line with the offsets topic's partitions too",
    )
    (shrink,) = [e for e in shown["events"] if e["kind"] == "isr_shrink"]
    assert shrink["text"] == (
        f"broker {victim} left the ISR of 53 partitions (3 of your topics', 50 of __consumer_offsets)"
    )
    page.screenshot(path=shots_dir() / "9-grouped-events-internal.png", full_page=True)


def test_a_partition_being_moved_is_marked_until_the_move_completes(
    make_cluster: ClusterFactory, page: Page
) -> None:
    """A reassignment (KIP-455) adding broker 4 and removing broker 2: the row says the
    partition is moving, marks the joining and the leaving replica, the header counts it;
    once broker 4 has caught up the move completes and the marks go."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from minikafka.client.controller_calls import ControllerClient
    from minikafka.common import TopicPartition as Tp

    cluster = make_cluster(overrides={"auto.leader.rebalance.enable": "false"})
    cluster.start_broker(4)
    cluster.wait_for_metadata(cluster.broker_ids, 60)
    admin = admin_client(cluster.bootstrap_servers)
    new = NewTopic(TOPIC, 1, replica_assignment=[[1, 2]])
    admin.create_topics([new], operation_timeout=30)[TOPIC].result(60)
    with producing(cluster.bootstrap_servers) as producer:
        deliver(producer, TOPIC, [b"%d" % i for i in range(500)])
    page.goto(cluster.admin_url(1) + "/")
    tp = f"{TOPIC}-0"
    wait_for_page(page, lambda s: tp in s["partitions"], 30, "the partition")

    async def move() -> None:
        client = ControllerClient(
            ",".join("{}:{}".format(*cluster.broker_address(b)) for b in (1, 2, 3)),
            client_id="test",
        )
        try:
            errors = await client.alter_partition_reassignments({Tp(TOPIC, 0): [1, 4]})
            assert errors == {Tp(TOPIC, 0): None}
        finally:
            await client.close()

    cluster.pause(4)  # the move stays in the middle until broker 4 runs again
    try:
        # Playwright's own event loop runs in this thread.
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, move()).result(60)
        moving = page.wait_for_selector(
            f'#partitions tr[data-tp="{tp}"][data-adding="4"][data-removing="2"]', timeout=15000
        )
        assert moving is not None
        assert moving.query_selector(".status .badge.moving") is not None
        # Broker 4 is not expected in the ISR yet: not under-replicated (KIP-455's rule).
        assert moving.get_attribute("data-status") == "ok"
        assert moving.query_selector(".replicas .chip.adding").text_content() == "4"
        assert moving.query_selector(".replicas .chip.removing").text_content() == "2"
        state = table_state(page)
        assert state["summary"]["reassigning"] == "1 partition moving between brokers"
        page.screenshot(path=shots_dir() / "9-partition-moving.png", full_page=True)
    finally:
        cluster.resume(4)
    done = page.wait_for_selector(
        f'#partitions tr[data-tp="{tp}"][data-adding=""][data-removing=""]', timeout=60000
    )
    assert done is not None and done.query_selector(".status .badge.moving") is None
    wait_for_page(
        page,
        lambda s: (
            set(s["partitions"][tp]["isr"].split(",")) == {"1", "4"}
            and "reassigning" not in s["summary"]
        ),
        60,
        "the move completed: replicas 1 and 4, both in the ISR",
    )
