"""`minikafka dump-log`: print the batches (and records) of segment files, like
kafka-dump-log.sh, and point at the first invalid byte of a damaged one."""

from __future__ import annotations

from pathlib import Path

import click

from minikafka.storage.record_batch import (
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
    """Dump segment (.log) files batch by batch. Exits 1 if any file holds an invalid batch."""
    bad = False
    for path in files:
        click.echo(f"Dumping {path}")
        data = path.read_bytes()
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
                f"compresscodec: none crc: {h.crc} isvalid: true"
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
