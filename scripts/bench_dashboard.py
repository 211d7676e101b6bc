#!/usr/bin/env python3
"""The dashboard's figures on a real local cluster (3 brokers, real ZooKeeper), the page in
a real browser (Playwright driving Debian's chromium, headless):

    .venv/bin/python scripts/bench_dashboard.py [--dir bench-out] [--runs 3]
        [--zk-session-ms 6000] [--partitions 10000] [--replication-factor 3]
        [--measure-s 20]

- **kill to page**: a topic of 3 partitions (RF 3), the page open on broker 3; kill -9 of
  another broker that leads one of them. Time until the page shows that broker
  *unreachable*, and until it shows it *down* with every ISR without it and its partitions
  led by others (the failover; its lower bound is the ZooKeeper session timeout,
  --zk-session-ms). Median of --runs, the broker restarted and the ISRs full between runs.
- **update cost at --partitions partitions** (10 topics, RF --replication-factor, in a new
  cluster): the CPU of each broker over --measure-s seconds with no page open, then with
  one page open on broker 3 (the serving broker gathers a view each second: ZooKeeper, its
  metadata, the others' `/v1/local`), in percent of one core; the size of each update the
  page gets (SSE message, the 200 worst partitions by default) and of a `/v1/local` answer
  of each other broker (what the serving broker reads each second).

Figures go to stdout and `<dir>/bench_dashboard.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from playwright.sync_api import Page, sync_playwright

from minikafka.cli.signals import sigterm_as_interrupt
from minikafka.cluster import LocalCluster

CHROMIUM = "/usr/bin/chromium"
TOPIC = "orders"
SERVING = 3

PAGE_STATE_JS = """() => ({
    brokers: Object.fromEntries([...document.querySelectorAll('#brokers tr[data-broker]')]
        .map(r => [r.dataset.broker, r.dataset.status])),
    partitions: Object.fromEntries([...document.querySelectorAll('#partitions tr[data-tp]')]
        .map(r => [r.dataset.tp, {leader: r.querySelector('.leader').textContent.trim(),
                                  isr: r.querySelector('.isr').dataset.isr}])),
})"""


def wait_page(page: Page, cond: Callable[[dict[str, Any]], bool], timeout: float) -> float:
    """Poll the page's state every 50 ms; the monotonic time the condition held."""
    deadline = time.monotonic() + timeout
    while True:
        state = page.evaluate(PAGE_STATE_JS)
        if cond(state):
            return time.monotonic()
        if time.monotonic() > deadline:
            raise TimeoutError(f"the page did not get there in {timeout} s: {state}")
        page.wait_for_timeout(50)


def isr_of(state: dict[str, Any], tp: str) -> set[str]:
    return set(state["partitions"][tp]["isr"].split(","))


def cluster(
    data_dir: Path, zk_session_ms: int, overrides: dict[str, str] | None = None
) -> LocalCluster:
    lc = LocalCluster(
        data_dir,
        3,
        base_port=0,
        zookeeper_port=0,
        overrides={"zookeeper.session.timeout.ms": str(zk_session_ms), **(overrides or {})},
        zookeeper_fsync=False,
    )
    lc.start(timeout=120)
    return lc


def create_topics(lc: LocalCluster, topics: dict[str, int], rf: int) -> None:
    admin = AdminClient({"bootstrap.servers": lc.bootstrap_servers})
    futures = admin.create_topics(
        [NewTopic(t, n, rf) for t, n in topics.items()], operation_timeout=120
    )
    for f in futures.values():
        f.result(timeout=300)


def one_failover(
    lc: LocalCluster, page: Page, tps: list[str], zk_session_ms: int
) -> tuple[str, float, float]:
    """Kill -9 a broker (not the serving one) that leads one of `tps`; seconds until the
    page shows it unreachable, and until it shows the failover done. Then restart it."""
    full = {"1", "2", "3"}
    wait_page(
        page,
        lambda s: (
            len(s["partitions"]) == len(tps)
            and all(isr_of(s, tp) == full for tp in tps)
            and set(s["brokers"].values()) == {"alive"}
        ),
        120,
    )
    state = page.evaluate(PAGE_STATE_JS)
    led = {tp: state["partitions"][tp]["leader"] for tp in tps}
    victim = next(b for b in ("1", "2") if b in led.values())
    victim_tps = [tp for tp, leader in led.items() if leader == victim]
    killed = time.monotonic()
    lc.kill(int(victim))
    seen = wait_page(page, lambda s: s["brokers"].get(victim) != "alive", 30)
    done = wait_page(
        page,
        lambda s: (
            s["brokers"].get(victim) == "down"
            and all(victim not in isr_of(s, tp) for tp in tps)
            and all(s["partitions"][tp]["leader"] not in (victim, "none") for tp in victim_tps)
        ),
        zk_session_ms / 1000 + 60,
    )
    lc.restart(int(victim))
    return victim, seen - killed, done - killed


def kill_to_page(base: Path, runs: int, zk_session_ms: int, page: Page) -> dict[str, Any]:
    lc = cluster(base / "failover", zk_session_ms)
    try:
        create_topics(lc, {TOPIC: 3}, 3)
        page.goto(lc.admin_url(SERVING) + "/")
        tps = [f"{TOPIC}-{p}" for p in range(3)]
        unreachable_s, failover_s = [], []
        for run in range(runs):
            victim, seen, done = one_failover(lc, page, tps, zk_session_ms)
            unreachable_s.append(seen)
            failover_s.append(done)
            print(
                f"run {run + 1}: broker {victim} killed; unreachable on the page after "
                f"{seen:.2f} s, down with the ISRs shrunk and new leaders after {done:.2f} s"
            )
        return {
            "zookeeper_session_timeout_ms": zk_session_ms,
            "unreachable_s": summary(unreachable_s),
            "failover_shown_s": summary(failover_s),
        }
    finally:
        lc.stop()


def summary(values: list[float]) -> dict[str, Any]:
    return {"median": round(statistics.median(values), 2), "runs": [round(v, 2) for v in values]}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_percent(lc: LocalCluster, seconds: float) -> dict[int, float]:
    pids = {b: lc.pid(b) for b in lc.broker_ids}
    before = {b: cpu_seconds(p) for b, p in pids.items() if p}
    started = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - started
    return {b: round((cpu_seconds(p) - before[b]) / elapsed * 100, 1) for b, p in pids.items() if p}


def sse_sizes(url: str, messages: int) -> list[int]:
    sizes = []
    with urllib.request.urlopen(url, timeout=60) as resp:
        size = 0
        for raw in resp:
            size += len(raw)
            if raw == b"\n":
                sizes.append(size)
                size = 0
                if len(sizes) == messages:
                    break
    return sizes


def update_cost(
    base: Path, partitions: int, rf: int, seconds: float, zk_session_ms: int, page: Page
) -> dict[str, Any]:
    lc = cluster(base / "scale", zk_session_ms)
    try:
        per_topic = partitions // 10
        started = time.monotonic()
        create_topics(lc, {f"scale{i}": per_topic for i in range(10)}, rf)
        url = lc.admin_url(SERVING)

        def every_partition_led() -> bool:
            with urllib.request.urlopen(url + "/v1/cluster", timeout=30) as resp:
                summary = json.loads(resp.read())["summary"]
            return summary["partitions"] == partitions and summary["ok"] == partitions

        while not every_partition_led():
            time.sleep(1)
        print(
            f"{partitions} partitions (RF {rf}) created and led in {time.monotonic() - started:.0f} s"
        )
        time.sleep(10)  # the creation's own work settles
        idle = cpu_percent(lc, seconds)
        page.goto(url + "/")
        page.wait_for_function(
            "() => Number(document.body.dataset.updates || 0) >= 2", timeout=60000
        )
        watched = cpu_percent(lc, seconds)
        page.goto("about:blank")
        sizes = sse_sizes(url + "/v1/stream", 6)
        local_sizes = {}
        for b in lc.broker_ids:
            if b == SERVING:
                continue
            with urllib.request.urlopen(lc.admin_url(b) + "/v1/local", timeout=30) as resp:
                body = resp.read()
            local_sizes[b] = {"bytes": len(body), "leaders": len(json.loads(body)["leaders"])}
        return {
            "partitions": partitions,
            "replication_factor": rf,
            "seconds": seconds,
            "cpu_percent_no_page": idle,
            "cpu_percent_one_page": watched,
            "serving_broker": SERVING,
            "serving_broker_added_cpu_percent": round(watched[SERVING] - idle[SERVING], 1),
            "update_bytes": {"first": sizes[0], "median_after": int(statistics.median(sizes[1:]))},
            "peer_local_view": local_sizes,
        }
    finally:
        lc.stop()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--dir", type=Path, default=Path("bench-out"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--zk-session-ms", type=int, default=6000)
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--replication-factor", type=int, default=3)
    ap.add_argument("--measure-s", type=float, default=20.0)
    args = ap.parse_args(argv)
    if args.partitions % 10:
        ap.error("--partitions: a multiple of 10 (10 topics)")
    return args


def main() -> None:
    args = parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="bench-dashboard-"))
    figures: dict[str, Any] = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            figures["kill_to_page"] = kill_to_page(base, args.runs, args.zk_session_ms, page)
            figures["update_cost"] = update_cost(
                base,
                args.partitions,
                args.replication_factor,
                args.measure_s,
                args.zk_session_ms,
                page,
            )
            browser.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    k, u = figures["kill_to_page"], figures["update_cost"]
    print(
        f"kill -9 to the page: broker unreachable after {k['unreachable_s']['median']} s, "
        f"failover shown after {k['failover_shown_s']['median']} s (median of {args.runs}; "
        f"ZooKeeper session {args.zk_session_ms} ms)"
    )
    print(
        f"{u['partitions']} partitions: CPU per broker without a page {u['cpu_percent_no_page']}, "
        f"with one page on broker {SERVING} {u['cpu_percent_one_page']} (% of a core); "
        f"update {u['update_bytes']['median_after']} bytes (first {u['update_bytes']['first']}); "
        f"/v1/local per other broker {u['peer_local_view']}"
    )
    (args.dir / "bench_dashboard.json").write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    # SIGTERM as Ctrl-C: the cluster is stopped on the way out, not left running.
    with sigterm_as_interrupt():
        main()
