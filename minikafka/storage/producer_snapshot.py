"""Producer state snapshot files (Kafka's ProducerStateManager snapshots, KIP-98 without
transactions). Pure: the bytes of a snapshot, and which snapshots a log loads or deletes;
`log.py` does the file IO.

A snapshot `<20-digit offset>.snapshot` in the partition directory holds the producer
state as of that offset: the effect of every batch below it. The log writes one at the new
segment's base offset when it rolls, and one at the LEO when it is closed cleanly. Opening
(or truncating) a log loads the latest snapshot it can trust and replays only the batch
headers from the snapshot's offset to the LEO, instead of every header from the log start.

The format is Kafka's, byte for byte (ProducerStateManager, snapshot version 1), big-endian:

    version                  int16   1
    crc                      uint32  CRC-32C of everything after this field
    count                    int32   then `count` entries of:
      producer_id            int64
      epoch                  int16
      last_sequence          int32
      last_offset            int64
      offset_delta           int32   last_offset - first_offset of the last batch
      timestamp              int64   the last batch's max timestamp
      coordinator_epoch      int32   -1 (no transactions)
      current_txn_first_offset int64 -1 (no transactions)

As in Kafka, a snapshot keeps only each producer's LAST batch, not the five the state
keeps: after a log is loaded from a snapshot, a retry of that last batch is still known as
a duplicate, but a retry of an older in-flight one is out of order (Kafka's behaviour too).
Batches replayed after the snapshot are all remembered again.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Final

import crc32c

from minikafka.storage.producer_state import (
    BATCHES_TO_RETAIN,
    MAX_SEQUENCE,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    BatchMetadata,
    ProducerEntry,
)

SNAPSHOT_SUFFIX: Final = ".snapshot"
SNAPSHOT_VERSION: Final = 1
NO_COORDINATOR_EPOCH: Final = -1
NO_TXN_FIRST_OFFSET: Final = -1

_VERSION_AND_CRC = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
# Where the CRC'd part starts: after the version and the CRC.
_ENTRIES_OFFSET: Final = _VERSION_AND_CRC.size


class CorruptSnapshotError(Exception):
    """A snapshot that does not decode (bad version, bad CRC, truncated, trailing bytes)."""


def encode_snapshot(entries: Iterable[ProducerEntry]) -> bytes:
    """A snapshot file's bytes: each producer's epoch and last batch."""
    items = list(entries)
    body = bytearray(_COUNT.pack(len(items)))
    for e in items:
        if e.batches:
            last = e.batches[-1]
            body += _ENTRY.pack(
                e.producer_id,
                e.epoch,
                last.last_seq,
                last.last_offset,
                last.last_offset - last.first_offset,
                last.max_timestamp,
                NO_COORDINATOR_EPOCH,
                NO_TXN_FIRST_OFFSET,
            )
        else:
            # An entry without a batch (Kafka writes these for producers whose data was
            # removed); minikafka's state never holds one, but the format allows it.
            body += _ENTRY.pack(
                e.producer_id,
                e.epoch,
                NO_SEQUENCE,
                -1,
                0,
                NO_TIMESTAMP,
                NO_COORDINATOR_EPOCH,
                NO_TXN_FIRST_OFFSET,
            )
    return _VERSION_AND_CRC.pack(SNAPSHOT_VERSION, crc32c.crc32c(body)) + bytes(body)


def _first_sequence(last_seq: int, delta: int) -> int:
    """Kafka's DefaultRecordBatch.decrementSequence: the sequence `delta` before
    `last_seq`, wrapping below 0 to 2^31-1."""
    return (last_seq - delta) % (MAX_SEQUENCE + 1)


def decode_snapshot(data: bytes) -> list[ProducerEntry]:
    """The entries of a snapshot file; raises CorruptSnapshotError for anything else."""
    if len(data) < _ENTRIES_OFFSET + _COUNT.size:
        raise CorruptSnapshotError(f"{len(data)} bytes: too short for a snapshot header")
    version, crc = _VERSION_AND_CRC.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"unsupported snapshot version {version}")
    computed = crc32c.crc32c(memoryview(data)[_ENTRIES_OFFSET:])
    if crc != computed:
        raise CorruptSnapshotError(f"CRC mismatch: stored {crc:#010x}, computed {computed:#010x}")
    (count,) = _COUNT.unpack_from(data, _ENTRIES_OFFSET)
    start = _ENTRIES_OFFSET + _COUNT.size
    if count < 0 or len(data) != start + count * _ENTRY.size:
        raise CorruptSnapshotError(
            f"{count} entries do not fit the {len(data) - start} bytes after the header"
        )
    out: list[ProducerEntry] = []
    for pid, epoch, last_seq, last_offset, delta, timestamp, _coord, _txn in _ENTRY.iter_unpack(
        memoryview(data)[start:]
    ):
        batches: deque[BatchMetadata] = deque(maxlen=BATCHES_TO_RETAIN)
        if last_offset >= 0:
            if delta < 0 or last_seq < 0 or delta > last_offset:
                raise CorruptSnapshotError(
                    f"producer {pid}: last sequence {last_seq}, last offset {last_offset} "
                    f"and offset delta {delta} describe no batch"
                )
            batches.append(
                BatchMetadata(
                    _first_sequence(last_seq, delta),
                    last_seq,
                    last_offset - delta,
                    last_offset,
                    timestamp,
                )
            )
        out.append(ProducerEntry(pid, epoch, batches))
    return out


# --- which snapshots a log loads or deletes -----------------------------------------------


def usable_snapshots(offsets: Iterable[int], lowest: int, highest: int) -> list[int]:
    """The snapshot offsets a log can load, in order: within [lowest, highest], where
    `lowest` is the base offset of its first segment (from a snapshot below it, the batches
    up to that segment are gone and could not be replayed) and `highest` its LEO (a
    snapshot above it describes batches the log does not hold: cut by recovery after a
    crash, or by a truncation)."""
    return sorted(o for o in offsets if lowest <= o <= highest)


def snapshot_to_load(offsets: Iterable[int], lowest: int, highest: int) -> int | None:
    """The latest usable snapshot (see `usable_snapshots`), or None: replay from the log
    start."""
    usable = usable_snapshots(offsets, lowest, highest)
    return usable[-1] if usable else None


def stale_snapshots(offsets: Iterable[int], lowest: int, highest: int) -> list[int]:
    """The snapshot offsets outside [lowest, highest]: to delete (when a log is opened or
    truncated, `highest` is its LEO; after retention, `lowest` is its first segment's base
    offset)."""
    return sorted(o for o in offsets if not lowest <= o <= highest)


def needs_snapshot(offsets: Sequence[int], offset: int, lowest: int) -> bool:
    """Whether to write a snapshot at `offset` (a roll's base offset, the LEO at close):
    not when one is there already (the state at an offset does not change), nor at the
    first segment's base offset, from which there is nothing to replay anyway (Kafka's
    `lastMapOffset > lastSnapOffset`: an empty log writes none)."""
    return offset > lowest and offset not in offsets
