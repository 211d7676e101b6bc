#!/usr/bin/env python3
"""Figures of the docker-compose cluster on this machine's engine.

    .venv/bin/python scripts/bench_docker.py [--runs 5] [--session-timeouts-ms 18000,6000]
        [--cold] [--base-image] [--out DIR]

- `--base-image`: scripts/docker-base-image.sh's time, building a throwaway tag (the real
  debian:bookworm-slim is left alone).
- `--cold`: `docker compose up -d --wait` with none of the project's images and no build
  cache (they are removed first: the next build starts from the base image); always: the
  warm time, images present, data volumes new.
- Failover: for each session timeout, `--runs` times: `docker kill` (scripts/docker-fault.sh)
  of the leader of a 1-partition RF3 topic, and the seconds until ZooKeeper names another
  leader; the killed broker is started again and back in the ISR before the next run.

Every project is its own (name, ports), removed with its volumes at the end. Prints a
table and writes DIR/bench_docker.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from confluent_kafka.cimpl import NewTopic
from rich.console import Console
from rich.table import Table

from minikafka.cli.signals import sigterm_as_interrupt
from minikafka.client.librdkafka import client_config, new_admin
from minikafka.cluster.compose import REPOSITORY, ComposeCluster, docker_problem, wait_for


def timed(fn: Any) -> float:
    start = time.monotonic()
    fn()
    return time.monotonic() - start


def base_image_seconds() -> float:
    tag = f"minikafka-bench/bookworm-slim:{uuid.uuid4().hex[:8]}"
    script = REPOSITORY / "scripts" / "docker-base-image.sh"
    try:
        return timed(lambda: subprocess.run([str(script), tag], check=True))
    finally:
        subprocess.run(["docker", "rmi", tag], capture_output=True)


def up_seconds(cold: bool) -> dict[str, float]:
    out: dict[str, float] = {}
    if cold:
        for image in ("minikafka-broker:dev", "minikafka-zookeeper:dev"):
            subprocess.run(["docker", "rmi", "-f", image], capture_output=True)
        subprocess.run(["docker", "builder", "prune", "-af"], capture_output=True)
        cluster = ComposeCluster()
        try:
            out["cold_up_s"] = timed(cluster.up)
        finally:
            cluster.down("--volumes")
    cluster = ComposeCluster()
    try:
        cluster.up("--build")  # images of this checkout, so the warm run only starts
        cluster.down("--volumes")
        out["warm_up_s"] = timed(cluster.up)
    finally:
        cluster.down("--volumes")
    return out


def failover_seconds(session_timeout_ms: int, runs: int) -> list[float]:
    cluster = ComposeCluster(session_timeout_ms)
    topic = "failover"
    times: list[float] = []
    try:
        cluster.up()
        admin = new_admin(client_config(cluster.bootstrap_servers, {}))
        new = [NewTopic(topic, 1, 3)]
        futures = admin.create_topics(new, operation_timeout=60, request_timeout=90)
        futures[topic].result(timeout=120)  # the controller has answered: a leader is elected
        del admin

        def state() -> Any:
            return cluster.partition_state(topic, 0)

        for _ in range(runs):
            wait_for("three in-sync replicas", lambda: (s := state()) and len(s.isr) == 3, 120)
            victim: int = state().leader

            def new_leader(victim: int = victim) -> bool:
                s = state()
                return s is not None and s.leader not in (victim, -1)

            cluster.fault("kill", victim)
            killed = time.monotonic()
            wait_for("a new leader", new_leader, session_timeout_ms / 1000 + 60, interval=0.05)
            times.append(time.monotonic() - killed)
            cluster.compose("start", f"broker{victim}")
    finally:
        cluster.down("--volumes")
    return times


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--session-timeouts-ms", default="18000,6000")
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--base-image", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("bench-docker"))
    return ap.parse_args(argv)


def main() -> None:
    args = parse_args()
    problem = docker_problem()
    if problem is not None:
        raise SystemExit(f"bench_docker: {problem}")

    figures: dict[str, Any] = {}
    if args.base_image:
        figures["base_image_s"] = base_image_seconds()
    figures.update(up_seconds(args.cold))
    failover: dict[str, list[float]] = {}
    for timeout_ms in (int(x) for x in args.session_timeouts_ms.split(",")):
        failover[str(timeout_ms)] = failover_seconds(timeout_ms, args.runs)
    figures["failover_s"] = failover

    table = Table(title="minikafka docker-compose figures")
    table.add_column("measure")
    table.add_column("seconds", justify="right")
    for key in ("base_image_s", "cold_up_s", "warm_up_s"):
        if key in figures:
            table.add_row(key.removesuffix("_s").replace("_", " "), f"{figures[key]:.1f}")
    for ms, runs in failover.items():
        table.add_row(
            f"failover after docker kill, session timeout {ms} ms: median of {len(runs)}",
            f"{statistics.median(runs):.1f} ({', '.join(f'{t:.1f}' for t in runs)})",
        )
    Console().print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_docker.json").write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    # SIGTERM as Ctrl-C: the cluster is stopped on the way out, not left running.
    with sigterm_as_interrupt():
        main()
