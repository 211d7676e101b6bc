"""The log cleaner: Kafka's log compaction, for logs whose cleanup.policy includes compact.

A compacted log keeps, of each key, at least its latest record. The cleaner cleans a log in
passes, as Kafka's does:

1. **What may be cleaned.** Whole segments only, never the active one, none holding an
   offset at or above the HW (what followers may not have yet), none whose newest record is
   younger than `min.compaction.lag.ms`: a prefix of the log up to the *first uncleanable
   offset*. The *first dirty offset* (the cleaner checkpoint, `cleaner-offset-checkpoint` in
   each log dir) splits it into a clean head, cleaned before, and a dirty tail.
2. **Which log.** The one with the largest dirty ratio (dirty bytes / cleanable bytes), if it
   reaches `min.cleanable.dirty.ratio`; or one holding tombstones whose time is up.
3. **The offset map**: each key of the dirty tail -> the offset of its latest record there.
4. **Rewriting**: every cleanable segment (head and tail) is rewritten keeping a record when
   its key has no later record in the map, dropping records without a key (Kafka's cleaner
   does too) and tombstones (null values) whose segment was last written more than
   `delete.retention.ms` ago. Offsets never change: a batch keeps its base offset and last
   offset delta with fewer records, and a run of batches that lost every record (of one
   leader epoch) becomes one empty batch spanning their offsets, as Kafka keeps empty batches.
   So batches stay contiguous, reads, follower fetches and recovery stay as they were, and
   readers see offsets with gaps.
5. **Swapping**: the rewriting runs in a thread, reading the segments through descriptors of
   its own, into a staging directory; the event loop then puts each rewritten segment in
   place of the old one, unless the log changed under it (truncated, segments deleted or
   replaced: then the pass is dropped and done again later). Readers that hold a region of an
   old segment keep reading it (their descriptor keeps the old file).

Crash safety: the old index is removed first, then the new log file renamed over the old
one, then the new index moved in; a crash in between leaves a segment whose index is
rebuilt on load. A staging directory left behind is removed when the log is opened.

Each replica cleans its own log; cleaning is not replicated (as in Kafka).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import crc32c

from minikafka.storage import _record_codec, compression
from minikafka.storage.record_batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    COMPRESSION_NONE,
    CRC_OFFSET,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    Record,
    decode_records,
    validate_batch,
)
from minikafka.storage.segment import INDEX_SUFFIX, LOG_SUFFIX, LogSegment, file_name_for

log = logging.getLogger(__name__)

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"  # Kafka's file name
STAGING_DIR = "cleaner-staging"  # in a partition directory while a pass runs
_READ_CHUNK = 4 * 1024 * 1024
_WRITE_CHUNK = 1024 * 1024
_HEADER = struct.Struct(">qiibIhiqqqhii")
_UINT32 = struct.Struct(">I")


# --- choosing what to clean (pure) ---------------------------------------------------------


@dataclass(frozen=True)
class SegmentInfo:
    """What the choice needs of a segment."""

    base_offset: int
    next_offset: int
    size: int
    largest_timestamp: int
    first_batch_timestamp: int = -1  # the first batch's max timestamp (-1: none)


@dataclass(frozen=True)
class CleanableRange:
    """The part of a log a pass may clean: segments [0, count) of the log, the first dirty
    offset and the first uncleanable offset; `compaction_delay_ms`, how long ago the
    oldest dirty record passed max.compaction.lag.ms (0: none has, KIP-354)."""

    count: int
    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    dirty_bytes: int
    compaction_delay_ms: int = 0

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


def cleanable_range(
    segments: Sequence[SegmentInfo],
    high_watermark: int,
    checkpointed_first_dirty: int,
    now_ms: int,
    min_compaction_lag_ms: int,
    max_compaction_lag_ms: int = 2**63 - 1,
) -> CleanableRange | None:
    """The cleanable prefix of a log whose segments (active last) are `segments`, or None
    when it has none. Its compaction delay is Kafka's (LogCleanerManager.maxCompactionDelay):
    from the earliest first-batch timestamp of the dirty closed segments."""
    count = 0
    for seg in segments[:-1]:  # never the active segment
        if seg.next_offset > high_watermark:
            break
        if min_compaction_lag_ms > 0 and now_ms - seg.largest_timestamp < min_compaction_lag_ms:
            break
        count += 1
    if count == 0:
        return None
    first_uncleanable = segments[count - 1].next_offset
    first_dirty = min(max(checkpointed_first_dirty, segments[0].base_offset), first_uncleanable)
    clean = sum(s.size for s in segments[:count] if s.next_offset <= first_dirty)
    dirty = sum(s.size for s in segments[:count] if s.next_offset > first_dirty)
    firsts = [
        s.first_batch_timestamp
        for s in segments[:-1]
        if s.next_offset > first_dirty and s.first_batch_timestamp > 0
    ]
    clean_until = now_ms - max_compaction_lag_ms
    delay = max(0, clean_until - min(firsts)) if firsts else 0
    return CleanableRange(count, first_dirty, first_uncleanable, clean, dirty, delay)


# --- rewriting batches (pure) --------------------------------------------------------------


def retained(record: Record, offset_map: dict[bytes, int], drop_tombstones: bool) -> bool:
    """Kafka's shouldRetainRecord: a keyed record no later record of its key supersedes, and
    not a tombstone whose time is up."""
    if record.key is None:
        return False
    latest = offset_map.get(record.key)
    if latest is not None and latest > record.offset:
        return False
    return not (record.value is None and drop_tombstones)


def rebuilt_batch(h: BatchHeader, records: Sequence[Record]) -> bytes:
    """The batch `h` holding only `records` (some of its own, in order): same base offset,
    last offset delta, leader epoch, producer, attributes and codec; each record keeps its
    offset."""
    codec = h.attributes & COMPRESSION_CODEC_MASK
    log_append_time = bool(h.attributes & TIMESTAMP_TYPE_MASK)
    body = bytearray()
    pos = 0
    max_ts = h.max_timestamp if log_append_time else -1
    for r in records:
        pos = _record_codec.encode_record(
            body,
            pos,
            r.offset - h.base_offset,
            0 if log_append_time else r.timestamp - h.first_timestamp,
            r.key,
            r.value,
            r.headers,
        )
        if not log_append_time and r.timestamp > max_ts:
            max_ts = r.timestamp
    data: bytes | bytearray = body[:pos]
    if codec != COMPRESSION_NONE:
        data = compression.compress(codec, memoryview(body)[:pos])
    return _with_header(
        h.base_offset,
        h.partition_leader_epoch,
        h.attributes,
        h.last_offset_delta,
        h.first_timestamp,
        max_ts,
        h.producer_id,
        h.producer_epoch,
        h.base_sequence,
        len(records),
        data,
    )


def empty_batch(base_offset: int, last_offset: int, leader_epoch: int, timestamp: int) -> bytes:
    """A batch of no records spanning [base_offset, last_offset] (what is left of batches
    that lost every record): readers move past it to last_offset + 1."""
    return _with_header(
        base_offset,
        leader_epoch,
        0,
        last_offset - base_offset,
        timestamp,
        timestamp,
        NO_PRODUCER_ID,
        NO_PRODUCER_EPOCH,
        NO_SEQUENCE,
        0,
        b"",
    )


def _with_header(
    base_offset: int,
    leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    first_ts: int,
    max_ts: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    count: int,
    records: bytes | bytearray,
) -> bytes:
    out = bytearray(HEADER_SIZE + len(records))
    _HEADER.pack_into(
        out,
        0,
        base_offset,
        len(out) - LOG_OVERHEAD,
        leader_epoch,
        MAGIC,
        0,
        attributes,
        last_offset_delta,
        first_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    )
    out[HEADER_SIZE:] = records
    _UINT32.pack_into(out, CRC_OFFSET, crc32c.crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


@dataclass
class CleanStats:
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_removed: int = 0
    tombstones_kept: int = 0  # in segments whose time is not up yet


class SegmentRewriter:
    """Rewrites one segment's batches, fed in order (`feed`); `take` hands over the new
    segment's bytes as they are ready (a run of emptied batches of one leader epoch is held
    back until it ends, then becomes one empty batch). `changed`: whether the new segment
    differs from the old."""

    def __init__(
        self, offset_map: dict[bytes, int], drop_tombstones: bool, stats: CleanStats
    ) -> None:
        self._map = offset_map
        self._drop_tombstones = drop_tombstones
        self._stats = stats
        self._out: list[bytes | memoryview] = []
        # The run of emptied batches: (base offset, last offset, leader epoch, timestamp).
        self._run: tuple[int, int, int, int] | None = None
        self.changed = False

    def feed(self, buf: bytes | memoryview, pos: int, h: BatchHeader) -> None:
        size = h.batch_length + LOG_OVERHEAD
        records = decode_records(buf, pos) if h.record_count else []
        kept = [r for r in records if retained(r, self._map, self._drop_tombstones)]
        self._stats.records_read += len(records)
        self._stats.records_removed += len(records) - len(kept)
        self._stats.tombstones_kept += sum(1 for r in kept if r.value is None)
        if not kept:
            if h.record_count:
                self.changed = True
            run = self._run
            if run is not None and run[2] == h.partition_leader_epoch:
                self._run = (run[0], h.last_offset, run[2], max(run[3], h.max_timestamp))
                self.changed = True  # two batches become one
            else:
                self._end_run()
                self._run = (
                    h.base_offset,
                    h.last_offset,
                    h.partition_leader_epoch,
                    h.max_timestamp,
                )
            return
        self._end_run()
        if len(kept) == len(records):
            self._out.append(memoryview(buf)[pos : pos + size])
        else:
            self._out.append(rebuilt_batch(h, kept))
            self.changed = True

    def _end_run(self) -> None:
        if self._run is not None:
            base, last, epoch, ts = self._run
            self._out.append(empty_batch(base, last, epoch, ts))
            self._run = None

    def take(self, final: bool = False) -> list[bytes | memoryview]:
        """The bytes ready so far (all of them when `final`)."""
        if final:
            self._end_run()
        out, self._out = self._out, []
        return out


# --- a pass over one log (runs in a worker thread) -------------------------------------------


@dataclass(frozen=True)
class SegmentSource:
    """A segment as the cleaner thread reads it: a descriptor of its own (the log may close
    the segment's meanwhile), and the size it had when the pass began."""

    base_offset: int
    next_offset: int
    size: int
    fd: int
    mtime_ns: int


@dataclass
class CleanedSegment:
    base_offset: int
    staged_log: Path
    staged_index: Path


@dataclass
class PassResult:
    cleaned: list[CleanedSegment] = field(default_factory=list)
    stats: CleanStats = field(default_factory=CleanStats)
    # When the earliest tombstone kept in this pass may go (ms since the epoch), if any.
    tombstones_due_ms: int | None = None


def iter_batches_of(src: SegmentSource) -> Iterator[tuple[memoryview, int, BatchHeader]]:
    """(buffer, position in it, header) of every batch of the segment, validated (CRC
    included): read in chunks of whole batches."""
    pos = 0
    while pos < src.size:
        chunk = os.pread(src.fd, min(_READ_CHUNK, src.size - pos), pos)
        if not chunk:
            raise _unreadable(src, pos, "segment shorter than its size")
        view = memoryview(chunk)
        rel = 0
        while rel + HEADER_SIZE <= len(view):
            length = int.from_bytes(view[rel + 8 : rel + 12], "big", signed=True)
            size = length + LOG_OVERHEAD
            if rel + size > len(view):
                break
            h = validate_batch(view, rel, len(view))
            yield view, rel, h
            rel += size
        if rel == 0:
            # One batch larger than the chunk: read exactly it.
            length = int.from_bytes(view[8:12], "big", signed=True) if len(view) >= 12 else 0
            size = length + LOG_OVERHEAD
            if size <= len(view) or pos + size > src.size:
                raise _unreadable(src, pos, f"batch of {size} bytes")
            whole = memoryview(os.pread(src.fd, size, pos))
            yield whole, 0, validate_batch(whole, 0, size)
            rel = size
        pos += rel


def _unreadable(src: SegmentSource, pos: int, what: str) -> ValueError:
    return ValueError(f"segment {src.base_offset}: cannot clean at byte {pos}: {what}")


def build_offset_map(sources: Sequence[SegmentSource], first_dirty: int) -> dict[bytes, int]:
    """Each key of the dirty records (offsets >= first_dirty) -> its latest offset."""
    offset_map: dict[bytes, int] = {}
    for src in sources:
        if src.next_offset <= first_dirty:
            continue
        for buf, pos, h in iter_batches_of(src):
            if h.last_offset < first_dirty or not h.record_count:
                continue
            for r in decode_records(buf, pos):
                if r.key is not None and r.offset >= first_dirty:
                    offset_map[r.key] = r.offset
    return offset_map


def clean_segments(
    partition_dir: Path,
    sources: Sequence[SegmentSource],
    first_dirty: int,
    now_ms: int,
    delete_retention_ms: int,
    index_interval_bytes: int,
    stopped: Callable[[], bool] = lambda: False,
) -> PassResult:
    """The pass's work: rewrite the segments `sources` into `partition_dir`/STAGING_DIR (only
    those that change). The caller swaps them in (`Log.replace_cleaned_segments`).
    CleanerStopped when `stopped()` turns true (the broker is shutting down)."""
    result = PassResult()
    offset_map = build_offset_map(sources, first_dirty)
    staging = partition_dir / STAGING_DIR
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    for src in sources:
        horizon_passed = src.mtime_ns // 1_000_000 <= now_ms - delete_retention_ms
        kept_before = result.stats.tombstones_kept
        rewriter = SegmentRewriter(offset_map, horizon_passed, result.stats)
        staged = LogSegment.create(staging, src.base_offset, index_interval_bytes, now_ms)
        try:
            pending: list[bytes | memoryview] = []
            pending_size = 0
            for buf, pos, h in iter_batches_of(src):
                if stopped():
                    raise CleanerStopped
                result.stats.bytes_read += h.batch_length + LOG_OVERHEAD
                rewriter.feed(buf, pos, h)
                for piece in rewriter.take():
                    pending.append(piece)
                    pending_size += len(piece)
                if pending_size >= _WRITE_CHUNK:
                    staged.append(b"".join(pending))
                    pending, pending_size = [], 0
            pending.extend(rewriter.take(final=True))
            if pending:
                staged.append(b"".join(pending))
            if result.stats.tombstones_kept > kept_before:
                due = src.mtime_ns // 1_000_000 + delete_retention_ms
                if result.tombstones_due_ms is None or due < result.tombstones_due_ms:
                    result.tombstones_due_ms = due
            if not rewriter.changed:
                staged.delete()
                continue
            staged.flush()
            result.stats.bytes_written += staged.size
        finally:
            staged.close()
        # The rewritten segment keeps the old one's modification time (Kafka does too):
        # retention and the tombstones' delete horizon count from it.
        os.utime(staged.log_path, ns=(src.mtime_ns, src.mtime_ns))
        result.cleaned.append(
            CleanedSegment(
                src.base_offset,
                staged.log_path,
                staging / file_name_for(src.base_offset, INDEX_SUFFIX),
            )
        )
    return result


class CleanerStopped(Exception):
    """A pass given up because the broker is shutting down."""


def discard_staging(partition_dir: Path) -> None:
    shutil.rmtree(partition_dir / STAGING_DIR, ignore_errors=True)


def close_sources(sources: Sequence[SegmentSource]) -> None:
    for src in sources:
        with contextlib.suppress(OSError):
            os.close(src.fd)


def swap_in(partition_dir: Path, cleaned: CleanedSegment) -> None:
    """Put a staged segment's files in place of the old segment's (see the module
    docstring for the order)."""
    (partition_dir / file_name_for(cleaned.base_offset, INDEX_SUFFIX)).unlink(missing_ok=True)
    os.replace(cleaned.staged_log, partition_dir / file_name_for(cleaned.base_offset, LOG_SUFFIX))
    with contextlib.suppress(FileNotFoundError):
        os.replace(
            cleaned.staged_index, partition_dir / file_name_for(cleaned.base_offset, INDEX_SUFFIX)
        )
