#!/usr/bin/env python3
"""Storage benchmark: the Log next to the raw file system, in the same run, same disk.

    .venv/bin/python scripts/bench_storage.py [--dir bench-out] [--gib 1] [--runs 7]

Measures (median of --runs; a run of the append measures is one round of raw, leader and
follower back to back, and "vs raw" is the median over rounds of each round's own ratio, so
that the drift of a shared VM's disk and CPU between rounds cancels out):
Every timed run starts from the same state: the previous runs' files deleted and os.sync()
done before the clock starts, so no run pays for another's writeback or file deletion, and
an untimed warm-up write of the same size first, so that no timed run is the first to touch
page-cache memory (in a VM, first touch of guest memory is a host page fault per page).

- append: Log.append_as_leader (validate CRC, stamp offsets/epoch, write, index) and
  Log.append_as_follower (validate, write) of 16-record batches of 1 KiB records, against a
  plain os.write of the very same bytes to a file. Page cache, no fsync in either loop.
- sequential read: Log.read in 1 MiB fetches against os.pread of 1 MiB chunks.
- recovery: reopening a log whose only segment is --gib GiB after an unclean shutdown (every
  batch re-validated: header, CRC-32C, offsets, index rebuilt), page cache warm and, when
  /proc/sys/vm/drop_caches is writable, cold.
Prints a table and writes JSON next to the data.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import struct
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from minikafka.cli.signals import sigterm_as_interrupt
from minikafka.storage.log import Log
from minikafka.storage.log_config import LogConfig
from minikafka.storage.record_batch import RecordBatchBuilder

RECORD_SIZE = 1024
RECORDS_PER_BATCH = 16
MIB = 1024 * 1024


def make_batches(count: int) -> list[bytes]:
    """A pool of distinct batches (values differ so nothing is accidentally cached)."""
    out = []
    for b in range(count):
        builder = RecordBatchBuilder()
        for r in range(RECORDS_PER_BATCH):
            pattern = f"{b}:{r}:".encode()
            value = (pattern * (RECORD_SIZE // len(pattern) + 1))[:RECORD_SIZE]
            builder.append(value, timestamp=1_700_000_000_000 + b)
        out.append(builder.build())
    return out


def timed(fn: Callable[[], int], prepare: Callable[[], object] = lambda: None) -> tuple[float, int]:
    prepare()
    # Start every run with no dirty pages: otherwise a run pays for the writeback (and dirty
    # throttling) of the gigabyte its predecessor left in the page cache.
    os.sync()
    t0 = time.perf_counter()
    n = fn()
    return time.perf_counter() - t0, n


def fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def drop_caches() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--dir", type=Path, default=Path("bench-out/storage"))
    ap.add_argument(
        "--gib", type=float, default=1.0, help="bytes per append run and recovery segment"
    )
    ap.add_argument("--runs", type=int, default=7)
    return ap.parse_args(argv)


def main() -> int:
    args = parse_args()
    console = Console()
    base = args.dir.resolve()

    # bytearrays, as the broker's network layer delivers produce requests (stamped in place)
    pool = [bytearray(b) for b in make_batches(64)]
    batch_size = len(pool[0])
    assert all(len(b) == batch_size for b in pool)
    n_batches = int(args.gib * 1024 * MIB) // batch_size
    total = n_batches * batch_size
    seg_bytes = min(total + MIB, 2**31 - 1)
    config = LogConfig(segment_bytes=seg_bytes, retention_ms=-1)
    # Follower input: the same batches with offsets already assigned.
    leader_dir = fresh(base / "leader") / "t-0"
    stamped_log = Log.open(leader_dir, config)
    for i in range(len(pool)):
        stamped_log.append_as_leader(pool[i], 0)
    follower_pool = [bytearray(s) for s in _split_batches(stamped_log.read(0, 1 << 30).read())]
    stamped_log.close()
    pool_n = len(pool)

    append_dirs = [base / "raw", base / "log", base / "follower"]

    def clear_appends() -> None:
        for d in append_dirs:
            shutil.rmtree(d, ignore_errors=True)

    def run_raw() -> int:
        d = fresh(base / "raw")
        fd = os.open(d / "raw.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for i in range(n_batches):
                os.write(fd, pool[i % pool_n])
        finally:
            os.close(fd)
        return total

    opened: list[Log] = []

    def run_leader() -> int:
        log = Log.open(fresh(base / "log") / "t-0", config)
        opened.append(log)
        for i in range(n_batches):
            log.append_as_leader(pool[i % pool_n], 0)
        return total

    def run_follower() -> int:
        log = Log.open(fresh(base / "follower") / "t-0", config)
        # Follower input already carries offsets and the leader epoch; writing the next base
        # offset into a pooled buffer (one pack_into, ~0.2 us) stays inside the timing.
        set_base_offset = struct.Struct(">q").pack_into
        for i in range(n_batches):
            b = follower_pool[i % pool_n]
            set_base_offset(b, 0, i * RECORDS_PER_BATCH)
            log.append_as_follower(b)
        opened.append(log)
        return total

    timed(run_raw)  # warm-up, untimed: see the docstring
    results: dict[str, list[float]] = {"raw": [], "leader": [], "follower": []}
    order = [("raw", run_raw), ("leader", run_leader), ("follower", run_follower)]
    for r in range(args.runs):
        for name, fn in order[r % 3 :] + order[: r % 3]:  # rotate to spread order effects
            secs, nbytes = timed(fn, prepare=clear_appends)
            results[name].append(nbytes / secs / MIB)
            while opened:
                opened.pop().close()  # clean close (fsync, index) outside the timing
    med = {k: statistics.median(v) for k, v in results.items()}
    ratios = {
        k: [mb / raw for mb, raw in zip(results[k], results["raw"], strict=True)]
        for k in ("leader", "follower")
    }
    ratio_med = {k: statistics.median(v) for k, v in ratios.items()}
    if not (base / "log").exists():  # the reads below need a leader-written log
        run_leader()
        while opened:
            opened.pop().close()

    # Sequential read of the last leader log vs raw pread of its file.
    log = Log.open(base / "log" / "t-0", config, had_clean_shutdown=True)
    assert log.load_report.recovered_segments == 0
    seg_path = log.active_segment.log_path

    def read_log() -> int:
        off, got = log.log_start_offset, 0
        while off < log.log_end_offset:
            info = log.read(off, MIB)
            data = info.read()
            got += len(data)
            s = info.slice
            assert s is not None
            off = _next_offset_after(data, s.first_offset)
        return got

    def read_raw() -> int:
        fd = os.open(seg_path, os.O_RDONLY)
        pos = got = 0
        try:
            while chunk := os.pread(fd, MIB, pos):
                pos += len(chunk)
                got += len(chunk)
        finally:
            os.close(fd)
        return got

    read_res = {"log": [], "raw": []}
    for _ in range(args.runs):
        for name, fn in (("log", read_log), ("raw", read_raw)):
            secs, nbytes = timed(fn)
            read_res[name].append(nbytes / secs / MIB)
    read_med = {k: statistics.median(v) for k, v in read_res.items()}
    log.close_without_flush()

    # Recovery of one big segment after an unclean shutdown.
    def recover() -> int:
        lg = Log.open(base / "log" / "t-0", config, had_clean_shutdown=False, recovery_point=0)
        assert lg.load_report.recovered_segments == 1 and lg.load_report.truncated_bytes == 0, (
            lg.load_report
        )
        assert lg.log_end_offset == n_batches * RECORDS_PER_BATCH
        lg.close_without_flush()
        return total

    warm = [total / timed(recover)[0] / MIB for _ in range(args.runs)]
    cold: list[float] = []
    if drop_caches():
        for _ in range(args.runs):
            drop_caches()
            cold.append(total / timed(recover)[0] / MIB)

    table = Table(
        title=f"minikafka storage, {total / MIB:.0f} MiB per run, batch {batch_size} B "
        f"({RECORDS_PER_BATCH} × {RECORD_SIZE} B records), median of {args.runs}"
    )
    table.add_column("measure")
    table.add_column("MB/s", justify="right")
    table.add_column("batches/s", justify="right")
    table.add_column("vs raw", justify="right")
    table.add_column("vs raw, rounds min–max", justify="right")
    table.add_row(
        "raw os.write", f"{med['raw']:.0f}", f"{med['raw'] * MIB / batch_size:,.0f}", "1.00"
    )
    for name, label in (
        ("leader", "Log.append_as_leader"),
        ("follower", "Log.append_as_follower"),
    ):
        table.add_row(
            label,
            f"{med[name]:.0f}",
            f"{med[name] * MIB / batch_size:,.0f}",
            f"{ratio_med[name]:.2f}",
            f"{min(ratios[name]):.2f}–{max(ratios[name]):.2f}",
        )
    table.add_row("raw os.pread 1 MiB", f"{read_med['raw']:.0f}", "", "1.00")
    table.add_row(
        "Log.read 1 MiB fetches",
        f"{read_med['log']:.0f}",
        "",
        f"{read_med['log'] / read_med['raw']:.2f}",
    )
    table.add_row(
        f"recovery of {total / MIB:.0f} MiB segment (warm cache)",
        f"{statistics.median(warm):.0f}",
        "",
        "",
    )
    if cold:
        table.add_row(
            f"recovery of {total / MIB:.0f} MiB segment (cold cache)",
            f"{statistics.median(cold):.0f}",
            "",
            "",
        )
    console.print(table)
    machine = {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    console.print(f"machine: {machine}")
    out = {
        "machine": machine,
        "batch_bytes": batch_size,
        "bytes_per_run": total,
        "runs": args.runs,
        "append_mb_s": results,
        "append_median_mb_s": med,
        "append_ratio_leader_vs_raw": ratio_med["leader"],
        "append_ratio_follower_vs_raw": ratio_med["follower"],
        "append_ratios_per_round": ratios,
        "read_mb_s": read_res,
        "read_median_mb_s": read_med,
        "recovery_warm_mb_s": warm,
        "recovery_cold_mb_s": cold,
    }
    (base / "storage.json").write_text(json.dumps(out, indent=2))
    console.print(f"JSON: {base / 'storage.json'}")
    for sub in ("raw", "log", "follower", "leader"):
        shutil.rmtree(base / sub, ignore_errors=True)
    return 0


def _split_batches(data: bytes) -> list[bytes]:
    from minikafka.storage.record_batch import iter_batches

    return [data[p : p + h.size_in_bytes] for p, h in iter_batches(data)]


def _next_offset_after(data: bytes, first: int) -> int:
    from minikafka.storage.record_batch import parse_header, peek_offset_and_size

    pos, last = 0, first
    while pos < len(data):
        _, size = peek_offset_and_size(data, pos)
        last = parse_header(data, pos).next_offset
        pos += size
    return last


if __name__ == "__main__":
    # SIGTERM as Ctrl-C: the cluster is stopped on the way out, not left running.
    with sigterm_as_interrupt():
        sys.exit(main())
