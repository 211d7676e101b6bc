"""Checkpoint files in Kafka's text format.

    0            <- version
    2            <- number of entries
    orders 0 42  <- one entry per line
    orders 1 17

Written atomically: `<file>.tmp`, fsync, rename over the file, fsync the directory, so a
crash leaves either the old or the new checkpoint, never a mix.
"""

from __future__ import annotations

import os
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


def atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


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

    def write(self, entries: Iterable[T]) -> None:
        items = list(entries)
        lines = [str(CHECKPOINT_VERSION), str(len(items))]
        lines.extend(self._format(e) for e in items)
        atomic_write_text(self.path, "\n".join(lines) + "\n")

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
    """`topic partition offset` per line: replication-offset (HW), recovery-point, log-start."""

    def __init__(self, path: Path) -> None:
        self._file: CheckpointFile[tuple[TopicPartition, int]] = CheckpointFile(
            path, lambda e: f"{e[0].topic} {e[0].partition} {e[1]}", _parse_offset_entry
        )

    @property
    def path(self) -> Path:
        return self._file.path

    def write(self, offsets: dict[TopicPartition, int]) -> None:
        self._file.write(sorted(offsets.items(), key=lambda kv: (kv[0].topic, kv[0].partition)))

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

    def write(self, entries: Iterable[EpochEntry]) -> None:
        self._file.write(entries)

    def read(self) -> list[EpochEntry]:
        return self._file.read()
