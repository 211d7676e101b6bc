#!/usr/bin/env python3
"""Log cleaner benchmark: one compaction pass over a large compacted log, on this disk.

    .venv/bin/python scripts/bench_cleaner.py [--dir bench-out] [--mib 1024] [--live 0.1]
        [--codec none|gzip|snappy|lz4|zstd] [--runs 1]

Builds a log of --mib MiB of 1 KiB records in 16-record batches (as a producer batches
them), segments of 64 MiB, keys written round-robin so that a share --live of the records
is the latest of its key (0.1: every key written 10 times). Then times one pass of the
cleaner (LogManager.prepare_cleaning, the pass itself, the swap: what the broker's cleaner
task does), on a warm page cache, and reports MB/s of log cleaned (MB = 2^20 bytes, bytes
read by the pass over its time), records/s, and the log's size before and after. Checks
that what is left is exactly the latest record of each key, at its offset.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from minikafka.cli.signals import sigterm_as_interrupt
from minikafka.clock import SystemClock
from minikafka.common import TopicPartition
from minikafka.storage import compression
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_manager import LogManager
from minikafka.storage.record_batch import RecordBatchBuilder, decode_all

MiB = 1024 * 1024
RECORD = 1024
BATCH = 16
CODECS = {
    "none": compression.NONE,
    "gzip": compression.GZIP,
    "snappy": compression.SNAPPY,
    "lz4": compression.LZ4,
    "zstd": compression.ZSTD,
}


def build_log(root: Path, mib: int, live: float, codec: int) -> tuple[LogManager, int, int]:
    """The log, its record count and its key count."""
    cfg = LogConfig(
        segment_bytes=64 * MiB,
        cleanup_policy="compact",
        min_cleanable_dirty_ratio=0.0,
        delete_retention_ms=0,
    )
    lm = LogManager([root], cfg, clock=SystemClock())
    lm.startup()
    lg = lm.get_or_create_log(TopicPartition("bench-compacted", 0), cfg)
    records = mib * MiB // RECORD
    keys = max(1, round(records * live))
    value = b"v" * (RECORD - 40)
    now = int(time.time() * 1000)
    for start in range(0, records, BATCH):
        builder = RecordBatchBuilder()
        for i in range(start, min(start + BATCH, records)):
            builder.append(value, b"key-%012d" % (i % keys), now)
        lg.append_as_leader(builder.build(codec), leader_epoch=0)
    # Everything committed, and an active segment of its own (never cleaned).
    lg.roll()
    lg.update_high_watermark(lg.log_end_offset)
    return lm, records, keys


def one_run(root: Path, mib: int, live: float, codec: int) -> dict[str, float]:
    lm, records, keys = build_log(root, mib, live, codec)
    try:
        lg = next(iter(lm.all_logs().values()))
        before = lg.size_in_bytes
        start = time.perf_counter()
        job = lm.prepare_cleaning()
        assert job is not None
        result = job.run()
        assert lm.finish_cleaning(job, result)
        seconds = time.perf_counter() - start
        left = [r for seg in lg.segments for r in decode_all(seg.read_bytes(0, seg.size))]
        expected = {b"key-%012d" % (i % keys): i for i in range(records)}
        assert sorted((r.key, r.offset) for r in left) == sorted(expected.items()), (
            "the pass did not keep exactly the latest record of each key"
        )
        return {
            "seconds": seconds,
            "mb_per_s": result.stats.bytes_read / MiB / seconds,
            "records_per_s": result.stats.records_read / seconds,
            "size_before_mib": before / MiB,
            "size_after_mib": lg.size_in_bytes / MiB,
            "records": records,
            "kept": len(left),
        }
    finally:
        lm.shutdown()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path("bench-out"))
    ap.add_argument("--mib", type=int, default=1024, help="log size (MiB)")
    ap.add_argument("--live", type=float, default=0.1, help="share of records that stay")
    ap.add_argument("--codec", choices=sorted(CODECS), default="none")
    ap.add_argument("--runs", type=int, default=1)
    return ap.parse_args(argv)


def main() -> None:
    args = parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    runs = []
    for _ in range(args.runs):
        root = Path(tempfile.mkdtemp(prefix="bench-cleaner-", dir=args.dir))
        try:
            runs.append(one_run(root, args.mib, args.live, CODECS[args.codec]))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    table = Table(title=f"log cleaner: one pass, {args.mib} MiB, {args.live:.0%} live keys")
    for col in ("MB/s cleaned", "records/s", "seconds", "size before → after (MiB)"):
        table.add_column(col, justify="right")
    table.add_row(
        f"{med['mb_per_s']:,.1f}",
        f"{med['records_per_s']:,.0f}",
        f"{med['seconds']:.1f}",
        f"{med['size_before_mib']:,.0f} → {med['size_after_mib']:,.0f}",
    )
    Console().print(table)
    out = args.dir / "bench_cleaner.json"
    out.write_text(json.dumps({"settings": vars(args) | {"dir": str(args.dir)}, "runs": runs}))
    print(f"wrote {out}")


if __name__ == "__main__":
    # SIGTERM as Ctrl-C: the cluster is stopped on the way out, not left running.
    with sigterm_as_interrupt():
        main()
