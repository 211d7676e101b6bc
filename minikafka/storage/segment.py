"""One log segment: `<20-digit base offset>.log` plus its sparse `.index`.

The log file is a plain concatenation of record batches. Appends go straight to the file
(page cache) with pwrite; reads find whole batches by walking batch headers from the
nearest index entry and return byte slices of the file (`LogSlice`), which the network
layer can send without decoding.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import logging
import os
import random
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from minikafka.storage import _batch_scan
from minikafka.storage._batch_scan import SegmentAppender
from minikafka.storage.offset_index import CorruptIndexError, OffsetIndex
from minikafka.storage.open_files import FileClosedError, OpenFiles
from minikafka.storage.record_batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    BatchHeader,
    InvalidBatchError,
    InvalidBatchReason,
    parse_header,
    validate_batch,
)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
# Up to and including last offset delta: enough to know a batch's offsets and size.
_PREFIX = struct.Struct(">qiibIhi")
_RECOVERY_CHUNK = 8 * 1024 * 1024
_INT32_MAX = 2**31 - 1

log = logging.getLogger(__name__)


def file_name_for(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


def base_offset_of(path: Path) -> int:
    return int(path.name.split(".", 1)[0])


class LogAppendInfo(NamedTuple):
    """What one append wrote (Kafka's LogAppendInfo). The C append side builds one per
    produce request and follower fetch."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    num_batches: int
    num_records: int
    valid_bytes: int
    # Follower appends: (epoch, start offset) of each leader epoch newer than the log's
    # latest that these batches start; None if none.
    new_epochs: list[tuple[int, int]] | None = None


_batch_scan.set_append_info_type(LogAppendInfo)


class LogSlice(NamedTuple):
    """A run of whole batches inside one segment file: what a fetch returns."""

    segment: LogSegment
    position: int
    size: int
    first_offset: int  # base offset of the first batch in the slice

    def read(self) -> bytes:
        return self.segment.read_bytes(self.position, self.size)

    def region(self) -> SegmentRegion:
        """The slice as a region a response can carry and the network layer sendfile()."""
        return self.segment.region(self.position, self.size)


class SegmentRegion:
    """Bytes of a segment file held for a response (a `FileRegion`). It keeps a duplicate of
    the segment's descriptor, so the bytes stay reachable if the segment is closed, deleted
    by retention or truncated before the response leaves (a shortened file is caught when
    sending: the sender then drops the connection, as Kafka does)."""

    __slots__ = ("_fd", "position", "size")

    def __init__(self, fd: int, position: int, size: int) -> None:
        self._fd = os.dup(fd)
        self.position = position
        self.size = size

    def fileno(self) -> int:
        if self._fd < 0:
            raise ValueError("region already closed")
        return self._fd

    def read(self) -> bytes:
        """The bytes, copied (for transports without sendfile and in-process callers)."""
        data = os.pread(self.fileno(), self.size, self.position)
        if len(data) != self.size:
            raise EOFError(
                f"segment shrank under a response: {len(data)} of {self.size} bytes "
                f"at position {self.position}"
            )
        return data

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        # A response dropped unsent (its connection closed) must not leak the descriptor.
        self.close()


@dataclass(slots=True)
class RecoveryResult:
    valid_bytes: int
    truncated_bytes: int
    next_offset: int
    error: InvalidBatchError | None


class LogSegment(SegmentAppender):
    """A segment. Its append side (descriptor, size, next offset, index bookkeeping, the
    append_leader / append_follower calls) is the C base class SegmentAppender, so that one
    call per request scans, writes and indexes; reads, recovery and truncation are here.

    With `files` (the broker's OpenFiles) the file is open only while the cache keeps it:
    every use of the descriptor pins it (`_pin` / `_unpin`), which opens it again if it was
    closed. Without, the segment holds its descriptor from creation to `close` (staging
    segments of the log cleaner, tools, tests)."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        index_interval_bytes: int,
        created_ms: int,
        *,
        create: bool,
        files: OpenFiles | None = None,
    ) -> None:
        self.base_offset = base_offset
        self.log_path = directory / file_name_for(base_offset, LOG_SUFFIX)
        self.index = OffsetIndex(directory / file_name_for(base_offset, INDEX_SUFFIX), base_offset)
        self._index_offsets, self._index_positions = self.index.entry_arrays()
        self.index_interval_bytes = index_interval_bytes
        self.created_ms = created_ms
        self._files = files
        self._closed = False
        # Created by the first open only: a re-open must find the same file.
        self._open_flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        fd = self._pin()
        try:
            # A created file is empty (O_EXCL): no fstat, one syscall fewer per new log.
            self.size = 0 if create else os.fstat(fd).st_size
        finally:
            self._unpin()
        self.next_offset = base_offset
        self._bytes_since_last_index_entry = 0
        self._first_batch_timestamp = None
        self._largest_timestamp = None if self.size else -1
        # Set by open_existing when the index or the tail did not check out.
        self.needs_recovery = False
        self._roll_jitter: tuple[int, int] | None = None  # (segment.jitter.ms, jitter)
        self.preallocated = False  # disk reserved past its end (preallocate)

    def roll_jitter_ms(self, segment_jitter_ms: int, segment_ms: int) -> int:
        """How much before segment.ms this segment rolls: a random share of
        segment.jitter.ms (below segment.ms too), chosen once per segment, as Kafka's."""
        if segment_jitter_ms <= 0:
            return 0
        if self._roll_jitter is None or self._roll_jitter[0] != segment_jitter_ms:
            jitter = random.randrange(min(segment_jitter_ms, segment_ms))
            self._roll_jitter = (segment_jitter_ms, jitter)
        return self._roll_jitter[1]

    def index_entries(self) -> int:
        return len(self._index_offsets)

    # --- the descriptor --------------------------------------------------------------------

    def _open_file(self) -> int:
        fd = os.open(self.log_path, self._open_flags, 0o644)
        self._open_flags = os.O_RDWR
        return fd

    def _pin(self) -> int:
        """The open descriptor, kept open until `_unpin` (opened again if the broker's
        cache closed it); FileClosedError once the segment is closed for good."""
        if self._files is not None:
            return self._files.pin(self)
        if self._fd < 0:
            if self._closed:
                raise FileClosedError(errno.EBADF, f"{self!r} is closed")
            self._fd = self._open_file()
        return self._fd

    def _unpin(self) -> None:
        if self._files is not None:
            self._files.unpin(self)

    def region(self, position: int, size: int) -> SegmentRegion:
        """Bytes of the file as a region with a descriptor of its own (see SegmentRegion)."""
        fd = self._pin()
        try:
            return SegmentRegion(fd, position, size)
        finally:
            self._unpin()

    def append_leader(self, *args: object) -> LogAppendInfo | None:
        self._pin()
        try:
            return super().append_leader(*args)  # type: ignore[arg-type]
        finally:
            self._unpin()

    def append_follower(self, *args: object) -> LogAppendInfo | None:
        self._pin()
        try:
            return super().append_follower(*args)  # type: ignore[arg-type]
        finally:
            self._unpin()

    # --- opening ---------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        directory: Path,
        base_offset: int,
        index_interval_bytes: int,
        now_ms: int,
        preallocate_bytes: int = 0,
        files: OpenFiles | None = None,
    ) -> LogSegment:
        """A new empty segment; `preallocate_bytes` > 0 (preallocate=true: segment.bytes)
        reserves that much disk for it, its size left at 0 (`trim_preallocation` gives back
        what it did not use)."""
        seg = cls(directory, base_offset, index_interval_bytes, now_ms, create=True, files=files)
        seg.index.create_empty()
        if preallocate_bytes > 0:
            fd = seg._pin()
            try:
                seg.preallocated = _reserve(fd, preallocate_bytes, seg.log_path)
            finally:
                seg._unpin()
        return seg

    def trim_preallocation(self) -> None:
        """Give back the disk a preallocated segment reserved past its end (it rolled, or
        its log closes): truncating to its own size frees the blocks beyond it."""
        if self.preallocated and not self._closed:
            fd = self._pin()
            try:
                os.ftruncate(fd, self.size)
            finally:
                self._unpin()
            self.preallocated = False

    @classmethod
    def open_existing(
        cls,
        directory: Path,
        base_offset: int,
        index_interval_bytes: int,
        now_ms: int,
        files: OpenFiles | None = None,
    ) -> LogSegment:
        """Open a segment written before; cheap: trusts the data, checks the index and the tail.

        Falls back to a full `recover()` when the index is missing/corrupt or the tail does not
        parse; the caller learns about it through `needs_recovery`.
        """
        seg = cls(directory, base_offset, index_interval_bytes, now_ms, create=False, files=files)
        try:
            seg.index.load(seg.size)
            seg._pin()
            try:
                seg._load_tail()
            finally:
                seg._unpin()
        except (FileNotFoundError, CorruptIndexError, InvalidBatchError):
            seg.needs_recovery = True
        return seg

    def _load_tail(self) -> None:
        """Find next_offset by walking headers from the last index entry to the end."""
        pos = self.index.last_position
        next_offset = self.base_offset
        prev_last = -1
        # The walk also indexes the tail, so an index that lagged behind the log (flushed
        # before the last appends) cannot make later reads scan from far back.
        since_entry = 0
        while pos < self.size:
            base, size, last = self._peek(pos)
            if (
                size < HEADER_SIZE
                or pos + size > self.size
                or (prev_last >= 0 and base != prev_last + 1)
            ):
                raise InvalidBatchError(InvalidBatchReason.LENGTH_OUT_OF_BOUNDS, pos)
            if since_entry > self.index_interval_bytes and last > self.index.last_offset:
                self.index.append(last, pos)
                since_entry = 0
            since_entry += size
            prev_last = last
            next_offset = last + 1
            pos += size
        self._bytes_since_last_index_entry = since_entry
        if self.size and next_offset == self.base_offset:
            raise InvalidBatchError(InvalidBatchReason.TRUNCATED, 0)
        self.next_offset = next_offset

    # --- appends -------------------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview) -> LogAppendInfo:
        """Append whole, valid batches that continue this segment's offsets (checked, as a
        follower's are), whatever the roll rules say: for tools and tests; the Log appends
        through `append_leader` / `append_follower`."""
        info = self.append_follower(data, -1, _INT32_MAX, 2**62, 2**62, _never)
        if info is None:
            raise ValueError(f"batches start past this segment's next offset {self.next_offset}")
        return info

    def first_batch_timestamp(self) -> int:
        """The first batch's max timestamp (-1 if empty), as Kafka's
        getFirstBatchTimestamp: when the segment's oldest record was written."""
        if self._first_batch_timestamp is not None:
            return int(self._first_batch_timestamp)
        if self.size < HEADER_SIZE:
            return -1
        return parse_header(self.read_bytes(0, HEADER_SIZE)).max_timestamp

    def largest_timestamp(self) -> int:
        """Max record timestamp in the segment (-1 if empty); computed once from headers."""
        if self._largest_timestamp is None:
            largest = -1
            pos = 0
            fd = self._pin()
            try:
                while pos + HEADER_SIZE <= self.size:
                    h = parse_header(os.pread(fd, HEADER_SIZE, pos))
                    largest = max(largest, h.max_timestamp)
                    pos += h.size_in_bytes
            finally:
                self._unpin()
            self._largest_timestamp = largest
        return self._largest_timestamp

    # --- reads ---------------------------------------------------------------------------

    def read_bytes(self, position: int, size: int) -> bytes:
        fd = self._pin()
        try:
            return os.pread(fd, size, position)
        finally:
            self._unpin()

    @property
    def closed(self) -> bool:
        """Closed for good (not merely by the cache of open files)."""
        return self._closed

    def dup_fd(self) -> int:
        """A descriptor of the file of the caller's own, to close when done."""
        fd = self._pin()
        try:
            return os.dup(fd)
        finally:
            self._unpin()

    def _peek(self, pos: int) -> tuple[int, int, int]:
        """(base offset, size in bytes, last offset) of the batch at `pos`; the caller has
        the descriptor pinned."""
        raw = os.pread(self._fd, _PREFIX.size, pos)
        if len(raw) < _PREFIX.size:
            raise InvalidBatchError(InvalidBatchReason.TRUNCATED, pos)
        base, length, _epoch, magic, _crc, _attrs, last_delta = _PREFIX.unpack(raw)
        if magic != MAGIC:
            raise InvalidBatchError(InvalidBatchReason.BAD_MAGIC, pos)
        return base, length + LOG_OVERHEAD, base + last_delta

    def translate_offset(self, offset: int) -> tuple[int, int, int, int] | None:
        """(position, base offset, size, last offset) of the first batch whose last offset
        >= `offset`."""
        _, pos = self.index.lookup(offset)
        self._pin()
        try:
            while pos < self.size:
                base, size, last = self._peek(pos)
                if last >= offset:
                    return pos, base, size, last
                pos += size
        finally:
            self._unpin()
        return None

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> LogSlice | None:
        """Whole batches from the one holding `start_offset`, at most `max_size` bytes (but at
        least one batch when `min_one_batch`), none holding an offset >= `max_offset`."""
        self._pin()
        try:
            return self._read(start_offset, max_size, max_offset, min_one_batch)
        finally:
            self._unpin()

    def _read(
        self, start_offset: int, max_size: int, max_offset: int | None, min_one_batch: bool
    ) -> LogSlice | None:
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        start_pos, first_base, size, last = found  # the first batch's header is read once
        pos = start_pos
        # Jump over the batches the index proves fit (whole, below max_offset): a 1 MiB fetch
        # then peeks at a few headers instead of every batch's.
        _, jump = self.index.farthest_boundary(start_pos + max_size, max_offset)
        if jump > start_pos:
            pos = jump
            _base, size, last = self._peek(pos)
        while True:
            if max_offset is not None and last >= max_offset:
                break
            if pos + size - start_pos > max_size and not (min_one_batch and pos == start_pos):
                break
            pos += size
            if pos >= self.size:
                break
            _base, size, last = self._peek(pos)
        if pos == start_pos:
            return None
        return LogSlice(self, start_pos, pos - start_pos, first_base)

    def batches(self, position: int = 0) -> list[tuple[int, BatchHeader]]:
        """(position, header) of every batch from the one at `position` (a batch's start)
        on, headers only: for the producer state's replay, tools and tests."""
        out = []
        pos = position
        fd = self._pin()
        try:
            while pos + HEADER_SIZE <= self.size:
                h = parse_header(os.pread(fd, HEADER_SIZE, pos))
                out.append((pos, h))
                pos += h.size_in_bytes
        finally:
            self._unpin()
        return out

    # --- recovery and truncation ---------------------------------------------------------

    def recover(self, on_batch: Callable[[BatchHeader], None] | None = None) -> RecoveryResult:
        """Re-validate every batch (header, CRC, contiguous offsets, non-decreasing leader
        epochs), rebuild the index, and cut
        the file at the first invalid byte. `on_batch` sees each valid batch (epoch cache)."""
        self._pin()
        try:
            return self._recover(on_batch)
        finally:
            self._unpin()

    def _recover(self, on_batch: Callable[[BatchHeader], None] | None) -> RecoveryResult:
        self.index.reset()
        self._bytes_since_last_index_entry = 0
        self._first_batch_timestamp = None
        largest_ts = -1
        next_offset = self.base_offset
        last_epoch = -1
        error: InvalidBatchError | None = None
        buf = bytearray()
        buf_start = 0  # file position of buf[0]
        read_pos = 0
        pos = 0
        while True:
            # Make sure buf holds at least one whole batch starting at pos (or all that is left).
            avail = buf_start + len(buf) - pos
            if avail < HEADER_SIZE or avail < self._needed(buf, pos - buf_start):
                if read_pos >= self.size:
                    if avail == 0:
                        break
                else:
                    del buf[: pos - buf_start]
                    buf_start = pos
                    want = max(_RECOVERY_CHUNK, self._needed(buf, 0))
                    chunk = os.pread(self._fd, want, read_pos)
                    buf += chunk
                    read_pos += len(chunk)
                    continue
            rel = pos - buf_start
            try:
                h = validate_batch(buf, rel)
                # Base offset and leader epoch lie outside the CRC (so leaders can stamp them);
                # without compaction a segment's batches are contiguous and epochs never go
                # down, which catches damage there too.
                if h.base_offset != next_offset:
                    raise InvalidBatchError(
                        InvalidBatchReason.OFFSET_OUT_OF_SEQUENCE,
                        pos,
                        f"base offset {h.base_offset}, expected {next_offset}",
                    )
                if h.partition_leader_epoch < last_epoch:
                    raise InvalidBatchError(
                        InvalidBatchReason.EPOCH_OUT_OF_SEQUENCE,
                        pos,
                        f"leader epoch {h.partition_leader_epoch} after {last_epoch}",
                    )
                if h.last_offset - self.base_offset > _INT32_MAX:
                    raise InvalidBatchError(
                        InvalidBatchReason.LENGTH_OUT_OF_BOUNDS, pos, "offset beyond segment range"
                    )
            except InvalidBatchError as e:
                error = InvalidBatchError(e.reason, pos, e.detail)
                break
            if self._bytes_since_last_index_entry > self.index_interval_bytes:
                self.index.append(h.last_offset, pos)
                self._bytes_since_last_index_entry = 0
            if pos == 0:
                self._first_batch_timestamp = h.max_timestamp
            largest_ts = max(largest_ts, h.max_timestamp)
            last_epoch = h.partition_leader_epoch
            next_offset = h.next_offset
            size = h.size_in_bytes
            self._bytes_since_last_index_entry += size
            pos += size
            if on_batch is not None:
                on_batch(h)
        truncated = self.size - pos
        if truncated:
            os.ftruncate(self._fd, pos)
            self.size = pos
        self.next_offset = next_offset
        self._largest_timestamp = largest_ts
        self.index.flush()
        return RecoveryResult(pos, truncated, next_offset, error)

    @staticmethod
    def _needed(buf: bytearray, rel: int) -> int:
        """Bytes a batch at buf[rel:] needs, as far as its length field says (header if unknown)."""
        if len(buf) - rel < LOG_OVERHEAD:
            return HEADER_SIZE
        length = int.from_bytes(buf[rel + 8 : rel + 12], "big", signed=True)
        return max(HEADER_SIZE, length + LOG_OVERHEAD)

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset >= `offset`; returns bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position = found[0]
        removed = self.size - position
        fd = self._pin()
        try:
            os.ftruncate(fd, position)
        finally:
            self._unpin()
        self.size = position
        self.index.truncate_to_position(position)
        self._bytes_since_last_index_entry = position - self.index.last_position
        self.next_offset = found[1] if position else self.base_offset
        if position == 0:
            self._first_batch_timestamp = None
            self._largest_timestamp = -1
        else:
            self._largest_timestamp = None
        return removed

    # --- lifecycle -----------------------------------------------------------------------

    def flush(self, *, sync: bool = True) -> None:
        """The index's entries written, and with `sync` both files fsync'd."""
        if sync:
            fd = self._pin()
            try:
                os.fsync(fd)
            finally:
                self._unpin()
        self.index.flush(sync=sync)

    def close(self) -> None:
        """Close the file for good (a reader that pinned it keeps it until it unpins)."""
        self._closed = True
        if self._files is not None:
            self._files.close(self)
        elif self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        self.close()
        self.log_path.unlink(missing_ok=True)
        self.index.delete()

    def retire(self) -> list[Path]:
        """Close the segment and rename its files with the `.deleted` suffix, to be deleted
        later (file.delete.delay.ms); the renamed paths. Opening a log deletes leftovers."""
        self.close()
        renamed = []
        for path in (self.log_path, self.index.path):
            target = path.with_name(path.name + DELETED_SUFFIX)
            try:
                path.rename(target)
            except FileNotFoundError:
                continue
            renamed.append(target)
        return renamed

    def __repr__(self) -> str:
        return f"LogSegment(base={self.base_offset}, size={self.size}, next={self.next_offset})"


DELETED_SUFFIX = ".deleted"  # Kafka's, for files waiting for file.delete.delay.ms

_FALLOC_FL_KEEP_SIZE = 0x01
_libc: ctypes.CDLL | None = None


def _reserve(fd: int, size: int, path: Path) -> bool:
    """Reserve `size` bytes of disk for the file without changing its length (Linux's
    fallocate with FALLOC_FL_KEEP_SIZE: readers, recovery and sendfile see the file as
    before). Kafka sets the length instead and trims it later; keeping the length keeps
    every size-based rule here as it is. False, and a warning, where the file system
    cannot."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        _libc.fallocate.argtypes = [
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_longlong,
            ctypes.c_longlong,
        ]
    if _libc.fallocate(fd, _FALLOC_FL_KEEP_SIZE, 0, size) == 0:
        return True
    errno = ctypes.get_errno()
    log.warning("preallocate: cannot reserve %d bytes for %s: %s", size, path, os.strerror(errno))
    return False


def _never() -> int:
    return 0  # a clock for appends that never roll
