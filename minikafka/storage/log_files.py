"""Reading a partition's segment files from outside the broker that owns them.

Tools use this (the chaos checker comparing replicas, tests reading what is on disk). It
reads the files the way recovery would: batch by batch, stopping a segment at its first
invalid batch (the unflushed tail of a killed broker), never trusting an index.
"""

from __future__ import annotations

from pathlib import Path

from minikafka.common import TopicPartition
from minikafka.storage.record_batch import (
    BatchHeader,
    InvalidBatchError,
    decode_records,
    iter_batches,
)


def partition_dir(log_dir: Path, tp: TopicPartition) -> Path:
    return log_dir / f"{tp.topic}-{tp.partition}"


def read_batches(log_dir: Path, tp: TopicPartition) -> list[tuple[BatchHeader, bytes]]:
    """(header, bytes) of every valid batch in `tp`'s segment files under `log_dir`."""
    batches: list[tuple[BatchHeader, bytes]] = []
    for segment in sorted(partition_dir(log_dir, tp).glob("*.log")):
        data = segment.read_bytes()
        try:
            for pos, header in iter_batches(data):
                batches.append((header, data[pos : pos + header.size_in_bytes]))
        except InvalidBatchError:
            pass  # a torn tail ends this segment, as recovery would cut it
    return batches


def read_records(
    log_dir: Path, tp: TopicPartition, end_offset: int | None = None
) -> dict[int, bytes | None]:
    """offset -> value of every record (below `end_offset`, if given) on disk."""
    out: dict[int, bytes | None] = {}
    for _, batch in read_batches(log_dir, tp):
        for r in decode_records(batch):
            if end_offset is None or r.offset < end_offset:
                out[r.offset] = r.value
    return out
