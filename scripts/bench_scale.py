#!/usr/bin/env python3
"""Partition scale: N partitions (default 10,000, RF=3) on a local 3-broker cluster.

Measures, on a fresh LocalCluster (ZooKeeper + brokers on loopback, default broker settings
but auto.leader.rebalance.enable=false):

1. creation: from the first CreateTopics request until every partition has a leader and a
   full ISR (RF replicas) in the metadata of *every* broker (each broker is polled with its
   own Metadata request once the CreateTopics calls returned, i.e. once the controller's
   own metadata had a leader for each partition; a broker's metadata follows the
   LeaderAndIsr it answered, so this also means every replica exists on disk). The time
   until the CreateTopics calls returned is reported too (librdkafka's AdminClient,
   `--topics-per-request` topics per call, one call after another). `--topics T` spreads
   the partitions over T topics (default 1).
2. idle cost: CPU of each broker and of ZooKeeper over `--idle-seconds` (default 60) with no
   client traffic, from /proc/<pid>/stat (utime + stime), as % of one core; measured after
   `--settle-seconds` (default 10) so that start-up work (first checkpoints, follower
   fetch sessions) is over.
3. resident memory (VmRSS, and the peak VmHWM) per broker and of ZooKeeper.
4. a scrape of each broker's `/metrics` (admin endpoint): how long it takes, its size, and
   the longest a request to the same broker (ApiVersions, sent back to back) waited while
   the scrape ran, against the same requests without a scrape: what a scrape costs the
   broker's event loop.
5. clean shutdown: SIGTERM to every broker (controlled shutdown, the controller last) until
   all have exited, as `LocalCluster.stop` does it.

Prints a table and writes the figures as JSON (`--json`, default <data-dir>/bench_scale.json).

Usage: .venv/bin/python scripts/bench_scale.py [--partitions 10000] [--replication-factor 3]
       [--topics 1] [--idle-seconds 60] [--settle-seconds 10] [--brokers 3]
       [--data-dir DIR] [--json PATH] [--timeout 600] [--broker-config key=value ...]
       [--broker-command CMD]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import shlex
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp
from kio.schema.api_versions.v0.request import ApiVersionsRequest
from rich.console import Console
from rich.table import Table
from scale_common import cpu_seconds, create_and_wait, memory_kb, process_pids, topic_sizes

from minikafka.cli.signals import sigterm_as_interrupt
from minikafka.client.kafka_wire import KafkaConnection
from minikafka.cluster import LocalCluster


async def ping_while(
    host: str, port: int, busy: asyncio.Future[Any] | None, seconds: float
) -> list[float]:
    """Round trips (s) of Kafka ApiVersions requests sent one after another to a broker,
    until `busy` is done (or for `seconds` when there is none)."""
    conn = KafkaConnection(host, port, client_id="bench-scale-ping")
    times: list[float] = []
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    try:
        while (busy is not None and not busy.done()) or (busy is None and loop.time() < end):
            t = time.perf_counter()
            await conn.call(ApiVersionsRequest(), timeout_s=30)
            times.append(time.perf_counter() - t)
    finally:
        await conn.close()
    return times


async def measure_scrape(cluster: LocalCluster, broker_id: int) -> dict[str, Any]:
    """One /metrics scrape of a broker, with ApiVersions round trips to it meanwhile."""
    host, port = cluster.broker_address(broker_id)
    quiet = await ping_while(host, port, None, 2.0)
    async with aiohttp.ClientSession() as session:
        t = time.perf_counter()
        scrape = asyncio.ensure_future(session.get(cluster.admin_url(broker_id) + "/metrics"))
        pings = await ping_while(host, port, scrape, 0)
        resp = await scrape
        body = await resp.read()
        took = time.perf_counter() - t
    return {
        "scrape_s": took,
        "bytes": len(body),
        "samples": sum(1 for line in body.splitlines() if line and not line.startswith(b"#")),
        "ping_max_ms_during_scrape": 1000 * max(pings, default=0.0),
        "pings_during_scrape": len(pings),
        "ping_max_ms_quiet": 1000 * max(quiet, default=0.0),
    }


def measure_idle(pids: dict[str, int], seconds: float) -> dict[str, float]:
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    t0 = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - t0
    return {name: 100.0 * (cpu_seconds(pid) - before[name]) / elapsed for name, pid in pids.items()}


def parse_overrides(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--broker-config wants key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--replication-factor", type=int, default=3)
    ap.add_argument("--topics", type=int, default=1, help="spread the partitions over T topics")
    ap.add_argument("--topics-per-request", type=int, default=100)
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--idle-seconds", type=float, default=60.0)
    ap.add_argument("--settle-seconds", type=float, default=10.0)
    ap.add_argument("--poll-interval", type=float, default=0.5, help="metadata polls, seconds")
    ap.add_argument("--timeout", type=float, default=600.0, help="for creation, seconds")
    ap.add_argument("--stop-timeout", type=float, default=600.0)
    ap.add_argument("--data-dir", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--broker-config", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument(
        "--broker-command",
        help="the broker's command line without --config (default: this Python -m minikafka "
        "broker), e.g. to run it under a profiler",
    )
    args = ap.parse_args(argv)
    if not 1 <= args.topics <= args.partitions:
        ap.error("--topics must be between 1 and --partitions")
    return args


def main() -> None:
    args = parse_args()
    logging.basicConfig(level=logging.WARNING)

    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    overrides = {"auto.leader.rebalance.enable": "false", **parse_overrides(args.broker_config)}
    cluster = LocalCluster(
        data_dir,
        args.brokers,
        overrides=overrides,
        broker_command=shlex.split(args.broker_command) if args.broker_command else None,
    )
    console = Console()
    sizes = topic_sizes(args.partitions, args.topics)
    figures: dict[str, Any] = {
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "settings": {
            "brokers": args.brokers,
            "partitions": args.partitions,
            "replication_factor": args.replication_factor,
            "topics": args.topics,
            "idle_seconds": args.idle_seconds,
            "settle_seconds": args.settle_seconds,
            "broker_overrides": overrides,
            "data_dir": str(data_dir),
        },
    }
    t0 = time.monotonic()
    cluster.start(timeout=120)
    figures["cluster_start_s"] = time.monotonic() - t0
    console.print(
        f"cluster up in {figures['cluster_start_s']:.1f}s ({data_dir}); creating "
        f"{args.partitions} partitions RF={args.replication_factor} in {args.topics} topic(s)"
    )
    stopped = False
    try:
        creation = asyncio.run(
            create_and_wait(
                cluster,
                sizes,
                args.replication_factor,
                args.timeout,
                args.topics_per_request,
                args.poll_interval,
            )
        )
        figures["creation"] = creation
        console.print(
            f"create requests returned after {creation['create_requests_returned_s']:.1f}s; "
            f"all led with full ISR on every broker after "
            f"{creation['all_led_full_isr_on_every_broker_s']}s"
        )
        controller = cluster.controller()
        figures["controller"] = None if controller is None else controller[0]
        pids = process_pids(cluster)
        console.print(
            f"settling {args.settle_seconds:.0f}s, then measuring idle CPU over "
            f"{args.idle_seconds:.0f}s"
        )
        time.sleep(args.settle_seconds)
        figures["idle_cpu_percent"] = measure_idle(pids, args.idle_seconds)
        figures["memory_kb"] = {name: memory_kb(pid) for name, pid in pids.items()}
        console.print("scraping each broker's /metrics")
        figures["scrape"] = {
            str(b): asyncio.run(measure_scrape(cluster, b)) for b in cluster.broker_ids
        }
        t1 = time.monotonic()
        cluster.stop(timeout=args.stop_timeout)
        stopped = True
        figures["shutdown_s"] = time.monotonic() - t1
    finally:
        if not stopped:
            cluster.stop(timeout=60)

    table = Table(
        title=f"minikafka scale: {args.partitions} partitions RF={args.replication_factor}, "
        f"{args.topics} topic(s), {args.brokers} brokers"
    )
    table.add_column("measure")
    table.add_column("result", justify="right")
    c = figures["creation"]
    table.add_row("create requests returned", f"{c['create_requests_returned_s']:.1f} s")
    led = c["all_led_full_isr_on_every_broker_s"]
    table.add_row(
        "all partitions led, full ISR, in every broker's metadata",
        "not reached" if led is None else f"{led:.1f} s",
    )
    for b, v in c["per_broker"].items():
        after = v["led_full_isr_after_s"]
        table.add_row(
            f"  broker {b}'s metadata complete",
            f"{after:.1f} s" if after is not None else f"{v['partitions_seen_ready']} ready",
        )
    for name, pct in figures["idle_cpu_percent"].items():
        mem = figures["memory_kb"][name]
        table.add_row(
            f"{name}: idle CPU over {args.idle_seconds:.0f} s / RSS (peak)",
            f"{pct:.1f} %  /  {mem.get('VmRSS', 0) / 1024:.0f} MiB "
            f"({mem.get('VmHWM', 0) / 1024:.0f} MiB)",
        )
    for b, sc in figures["scrape"].items():
        table.add_row(
            f"broker {b}: /metrics scrape; longest ApiVersions during it (without one)",
            f"{sc['scrape_s']:.2f} s, {sc['samples']:,} samples; "
            f"{sc['ping_max_ms_during_scrape']:.0f} ms ({sc['ping_max_ms_quiet']:.0f} ms)",
        )
    table.add_row("clean shutdown of the cluster", f"{figures['shutdown_s']:.1f} s")
    console.print(table)
    out = args.json or data_dir / "bench_scale.json"
    out.write_text(json.dumps(figures, indent=2))
    console.print(f"figures written to {out}")


if __name__ == "__main__":
    # SIGTERM as Ctrl-C: the cluster is stopped on the way out, not left running.
    with sigterm_as_interrupt():
        main()
