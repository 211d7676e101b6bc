"""Sparse offset index of one segment: `<base>.index`.

Each 8-byte entry is (offset - segment base as int32, file position as int32), big-endian as
in Kafka; the offset is the *last* offset of the batch that starts at that position. A
lookup finds the greatest entry whose offset <= target; the batch holding the target is at or
after that position.

Entries live in memory and reach the file on `flush()` (segment roll, log flush, clean
shutdown), like Kafka's memory-mapped index: the index is derived data, rebuilt from the log
whenever it is missing or fails its sanity check.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from pathlib import Path

ENTRY_SIZE = 8
_ENTRY = struct.Struct(">ii")


class CorruptIndexError(Exception):
    pass


class OffsetIndex:
    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._offsets: array[int] = array("q")
        self._positions: array[int] = array("q")
        self._flushed_entries = 0

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def last_offset(self) -> int:
        return self._offsets[-1] if self._offsets else self.base_offset

    @property
    def last_position(self) -> int:
        return self._positions[-1] if self._positions else 0

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._offsets, self._positions, strict=True))

    def append(self, offset: int, position: int) -> None:
        offsets, positions = self._offsets, self._positions
        if offsets and (offset <= offsets[-1] or position <= positions[-1]):
            raise ValueError(
                f"index entry ({offset}, {position}) is not after "
                f"({offsets[-1]}, {positions[-1]}) in {self.path}"
            )
        offsets.append(offset)
        positions.append(position)

    def entry_arrays(self) -> tuple[array[int], array[int]]:
        """The (last offsets, positions) arrays, for the segment's C append side to add entries
        to directly. They stay the same objects for the index's life (changed in place)."""
        return self._offsets, self._positions

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """(offset, position) of the greatest entry with offset <= target, else (base, 0)."""
        i = bisect.bisect_right(self._offsets, target_offset)
        if i == 0:
            return self.base_offset, 0
        return self._offsets[i - 1], self._positions[i - 1]

    def farthest_boundary(self, max_position: int, max_offset: int | None) -> tuple[int, int]:
        """(offset, position) of the last entry at or below `max_position` whose offset is
        at most `max_offset`, else (base, 0). Entries point at batch starts, so every batch
        before that position ends at or below it and holds only offsets below `max_offset`:
        a fetch can take all of them without reading their headers."""
        i = bisect.bisect_right(self._positions, max_position)
        if max_offset is not None:
            i = min(i, bisect.bisect_right(self._offsets, max_offset))
        if i == 0:
            return self.base_offset, 0
        return self._offsets[i - 1], self._positions[i - 1]

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at or beyond `position` (the log was cut there)."""
        i = bisect.bisect_left(self._positions, position)
        if i < len(self._positions):
            del self._offsets[i:]
            del self._positions[i:]
            self._flushed_entries = min(self._flushed_entries, i)
            self._write_all()

    def reset(self) -> None:
        del self._offsets[:]
        del self._positions[:]
        self._flushed_entries = 0
        self._write_all()

    def load(self, log_size: int) -> None:
        """Read the index file and sanity-check it against the log's size.

        Raises CorruptIndexError (the caller rebuilds) when the file is torn, out of order,
        or points past the end of the log.
        """
        data = self.path.read_bytes()
        if len(data) % ENTRY_SIZE:
            raise CorruptIndexError(f"{self.path}: size {len(data)} is not a multiple of 8")
        offsets: array[int] = array("q")
        positions: array[int] = array("q")
        prev_off, prev_pos = -1, -1
        for rel, pos in _ENTRY.iter_unpack(data):
            off = self.base_offset + rel
            if rel < 0 or off <= prev_off or pos <= prev_pos or pos >= log_size:
                raise CorruptIndexError(f"{self.path}: bad entry ({rel}, {pos})")
            offsets.append(off)
            positions.append(pos)
            prev_off, prev_pos = off, pos
        # In place: the segment's C append side holds these arrays (entry_arrays).
        self._offsets[:] = offsets
        self._positions[:] = positions
        self._flushed_entries = len(offsets)

    def create_empty(self) -> None:
        """Create (or empty a stale) file for a new segment's index, without an fsync: there is no
        content to make durable, and an index lost in a crash is rebuilt from the log. (At
        10,000 new partitions that fsync was over half of the brokers' creation time.)"""
        os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))

    def flush(self, *, sync: bool = True) -> None:
        """Persist entries appended since the last flush, then fsync (unless not `sync`)."""
        if self._flushed_entries == len(self._offsets) and self.path.exists():
            return
        new = b"".join(
            _ENTRY.pack(self._offsets[i] - self.base_offset, self._positions[i])
            for i in range(self._flushed_entries, len(self._offsets))
        )
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, self._flushed_entries * ENTRY_SIZE)
            os.pwrite(fd, new, self._flushed_entries * ENTRY_SIZE)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        self._flushed_entries = len(self._offsets)

    def _write_all(self) -> None:
        # After a truncation the file must not keep entries past the cut.
        if self.path.exists():
            with open(self.path, "r+b") as f:
                f.truncate(self._flushed_entries * ENTRY_SIZE)

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
