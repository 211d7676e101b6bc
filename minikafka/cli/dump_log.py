"""`minikafka dump-log`: print the batches (and records) of segment files, like
kafka-dump-log.sh, and point at the first invalid byte of a damaged one; and the
idempotent producers in a producer state snapshot (`<offset>.snapshot`)."""

from __future__ import annotations

from pathlib import Path

import click

from minikafka.storage.compression import codec_name
from minikafka.storage.producer_snapshot import (
    SNAPSHOT_SUFFIX,
    CorruptSnapshotError,
    decode_snapshot,
)
from minikafka.storage.record_batch import (
    COMPRESSION_CODEC_MASK,
    InvalidBatchError,
    decode_records,
    validate_batch,
)


def _fmt_bytes(b: bytes | None, limit: int = 60) -> str:
    if b is None:
        return "null"
    try:
        s = b.decode()
    except UnicodeDecodeError:
        s = b.hex()
    return s if len(s) <= limit else s[:limit] + "…"


@click.command("dump-log")
@click.argument(
    "files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option("--print-data-log", is_flag=True, help="Print each record too.")
def dump_log(files: tuple[Path, ...], print_data_log: bool) -> None:
    """Dump segment (.log) files batch by batch, and producer snapshot (.snapshot) files
    producer by producer. Exits 1 if any file is damaged."""
    bad = False
    for path in files:
        click.echo(f"Dumping {path}")
        data = path.read_bytes()
        if path.suffix == SNAPSHOT_SUFFIX:
            bad |= not _dump_snapshot(data)
            continue
        pos = 0
        while pos < len(data):
            try:
                h = validate_batch(data, pos)
            except InvalidBatchError as e:
                click.echo(
                    f"INVALID at position {pos}: {e.reason.value}"
                    f"{' (' + e.detail + ')' if e.detail else ''}; "
                    f"{len(data) - pos} bytes from here on are not a valid batch"
                )
                bad = True
                break
            click.echo(
                f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.record_count} "
                f"partitionLeaderEpoch: {h.partition_leader_epoch} position: {pos} "
                f"CreateTime: {h.max_timestamp} size: {h.size_in_bytes} magic: {h.magic} "
                f"compresscodec: {codec_name(h.attributes & COMPRESSION_CODEC_MASK)} "
                f"crc: {h.crc} isvalid: true"
            )
            if print_data_log:
                for r in decode_records(data, pos):
                    click.echo(
                        f"| offset: {r.offset} CreateTime: {r.timestamp} "
                        f"keySize: {-1 if r.key is None else len(r.key)} "
                        f"valueSize: {-1 if r.value is None else len(r.value)} "
                        f"key: {_fmt_bytes(r.key)} payload: {_fmt_bytes(r.value)}"
                    )
            pos += h.size_in_bytes
    if bad:
        raise SystemExit(1)


def _dump_snapshot(data: bytes) -> bool:
    """Kafka's lines for a producer snapshot; False (and why) if it is damaged."""
    try:
        entries = decode_snapshot(data)
    except CorruptSnapshotError as error:
        click.echo(f"INVALID snapshot: {error}")
        return False
    for entry in entries:
        line = (
            f"producerId: {entry.producer_id} producerEpoch: {entry.epoch} coordinatorEpoch: -1 "
            "currentTxnFirstOffset: None"
        )
        if entry.batches:
            b = entry.batches[-1]
            line += (
                f" lastTimestamp: {b.max_timestamp} firstSequence: {b.first_seq} "
                f"lastSequence: {b.last_seq} lastOffset: {b.last_offset} "
                f"offsetDelta: {b.last_offset - b.first_offset} timestamp: {b.max_timestamp}"
            )
        click.echo(line)
    return True
