"""Checkpoint files in Kafka's text format.

    0            <- version
    2            <- number of entries
    orders 0 42  <- one entry per line
    orders 1 17

Written atomically: `<file>.tmp`, fsync, rename over the file, fsync the directory, so a
crash leaves either the old or the new checkpoint, never a mix.

A file's writes always land in the order they were made, whichever threads make them: one
that a later write overtook is dropped.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from minikafka.common import TopicPartition

CHECKPOINT_VERSION = 0

REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"

T = TypeVar("T")

# The C library, for syncfs(2), which the os module does not offer.
_LIBC = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


class CorruptCheckpointError(Exception):
    """A checkpoint file that does not parse; names the file and the line."""

    def __init__(self, path: Path, line_no: int, reason: str) -> None:
        self.path = path
        self.line_no = line_no
        self.reason = reason
        super().__init__(f"corrupt checkpoint file {path}, line {line_no}: {reason}")


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_filesystem(path: Path) -> None:
    """Everything written so far to the filesystem holding `path` (data, new names) is on
    disk: Linux's syncfs(2), sync(2) where there is none. One call in place of an fsync per
    file, for a clean shutdown that writes a checkpoint in each of thousands of logs."""
    syncfs = getattr(_LIBC, "syncfs", None)
    if syncfs is None:
        os.sync()
        return
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), str(path))
    finally:
        os.close(fd)


def sync_filesystems(paths: Iterable[Path]) -> None:
    """`sync_filesystem` once for each filesystem these directories are on."""
    for path in {os.stat(p).st_dev: p for p in paths}.values():
        sync_filesystem(path)


def atomic_write_bytes(path: Path, data: bytes, *, sync: bool = True) -> None:
    """`<file>.tmp`, fsync, rename over `path`, fsync the directory (a log's `.tmp` leftovers
    are deleted when it is opened). `sync=False` leaves both fsyncs to a `sync_filesystem`
    the caller makes afterwards."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        if sync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if sync:
        fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str, *, sync: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), sync=sync)


class CheckpointFile(Generic[T]):
    """A versioned list of entries; `format_entry`/`parse_entry` define one line."""

    def __init__(
        self,
        path: Path,
        format_entry: Callable[[T], str],
        parse_entry: Callable[[list[str]], T],
    ) -> None:
        self.path = path
        self._format = format_entry
        self._parse = parse_entry
        # Writes are numbered as they are made; one that a later write overtook (already on
        # disk, from another thread: a flush in a worker thread, a truncation on the event
        # loop) is dropped. The lock orders the two.
        self._lock = threading.Lock()
        self._generation = 0
        self._written_generation = 0

    def write(self, entries: Iterable[T], *, sync: bool = True) -> None:
        """Replace the file's entries (`sync=False`: see `atomic_write_bytes`)."""
        items = list(entries)
        lines = [str(CHECKPOINT_VERSION), str(len(items))]
        lines.extend(self._format(e) for e in items)
        text = "\n".join(lines) + "\n"
        self._generation += 1
        self._write_text(text, self._generation, sync)

    def _write_text(self, text: str, generation: int, sync: bool = True) -> None:
        with self._lock:
            if generation <= self._written_generation:
                return  # a later write is on disk already
            atomic_write_text(self.path, text, sync=sync)
            self._written_generation = generation

    def read(self) -> list[T]:
        """Entries in file order; [] if the file does not exist."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except UnicodeDecodeError as e:
            raise CorruptCheckpointError(self.path, 1, f"not UTF-8 text ({e.reason})") from e
        lines = text.splitlines()
        if not lines:
            raise CorruptCheckpointError(self.path, 1, "empty file, expected a version line")
        version = self._int(lines[0], 1, "version")
        if version != CHECKPOINT_VERSION:
            raise CorruptCheckpointError(self.path, 1, f"unsupported version {version}")
        if len(lines) < 2:
            raise CorruptCheckpointError(self.path, 2, "missing entry count line")
        count = self._int(lines[1], 2, "entry count")
        body = lines[2:]
        if len(body) != count:
            raise CorruptCheckpointError(
                self.path,
                2 + min(len(body), count) + (1 if len(body) < count else 0),
                f"expected {count} entries, found {len(body)}",
            )
        out: list[T] = []
        for i, line in enumerate(body, start=3):
            try:
                out.append(self._parse(line.split()))
            except (ValueError, IndexError) as e:
                raise CorruptCheckpointError(self.path, i, f"bad entry {line!r}: {e}") from e
        return out

    def _int(self, s: str, line_no: int, what: str) -> int:
        try:
            return int(s.strip())
        except ValueError:
            raise CorruptCheckpointError(
                self.path, line_no, f"{what} {s!r} is not an integer"
            ) from None


def _parse_offset_entry(fields: list[str]) -> tuple[TopicPartition, int]:
    if len(fields) != 3:
        raise ValueError(f"expected 'topic partition offset', got {len(fields)} fields")
    partition, offset = int(fields[1]), int(fields[2])
    if partition < 0:
        raise ValueError("negative partition")
    return TopicPartition(fields[0], partition), offset


def _parse_epoch_entry(fields: list[str]) -> EpochEntry:
    if len(fields) != 2:
        raise ValueError(f"expected 'epoch start_offset', got {len(fields)} fields")
    entry = EpochEntry(int(fields[0]), int(fields[1]))
    if entry.epoch < 0 or entry.start_offset < 0:
        raise ValueError("negative epoch or offset")
    return entry


class OffsetCheckpointFile:
    """`topic partition offset` per line: replication-offset (HW), recovery-point, log-start.

    Keep one object per file: it skips rewriting a file whose offsets did not change since
    its last write (the periodic checkpoints of thousands of idle partitions would
    otherwise cost a rename and two fsyncs each time, for the same bytes)."""

    def __init__(self, path: Path) -> None:
        self._file: CheckpointFile[tuple[TopicPartition, int]] = CheckpointFile(
            path, lambda e: f"{e[0].topic} {e[0].partition} {e[1]}", _parse_offset_entry
        )
        self._last_written: dict[TopicPartition, int] | None = None
        # The periodic writes run in a thread; a shutdown's write may start meanwhile. Of
        # two writes, the offsets taken later win, whichever reaches the file first.
        self._lock = threading.Lock()
        self._last_taken_ns = -1

    @property
    def path(self) -> Path:
        return self._file.path

    def write(self, offsets: dict[TopicPartition, int], taken_ns: int | None = None) -> bool:
        """Write the offsets unless this object last wrote exactly these and the file is
        still there, or wrote offsets taken after these (`taken_ns`: time.monotonic_ns()
        when they were read; default now); returns whether it wrote."""
        if taken_ns is None:
            taken_ns = time.monotonic_ns()
        with self._lock:
            if taken_ns < self._last_taken_ns:
                return False
            self._last_taken_ns = taken_ns
            if offsets == self._last_written and self.path.exists():
                return False
            snapshot = dict(offsets)
            self._file.write(
                sorted(snapshot.items(), key=lambda kv: (kv[0].topic, kv[0].partition))
            )
            self._last_written = snapshot
            return True

    def read(self) -> dict[TopicPartition, int]:
        return dict(self._file.read())


class LeaderEpochCheckpointFile:
    """`epoch start_offset` per line, one file per partition directory."""

    def __init__(self, path: Path) -> None:
        self._file: CheckpointFile[EpochEntry] = CheckpointFile(
            path, lambda e: f"{e.epoch} {e.start_offset}", _parse_epoch_entry
        )

    @property
    def path(self) -> Path:
        return self._file.path

    def write(self, entries: Iterable[EpochEntry], *, sync: bool = True) -> None:
        self._file.write(entries, sync=sync)

    def read(self) -> list[EpochEntry]:
        return self._file.read()
