"""`minikafka dump-log` on the files a real log writes: a segment's batches (with their
codec) and records, a producer snapshot's producers, and a damaged file of each kind
pointed at, with exit code 1."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from minikafka.cli.main import cli
from minikafka.clock import ManualClock
from minikafka.storage import compression
from minikafka.storage.log import Log
from minikafka.storage.log_config import LogConfig
from minikafka.storage.record_batch import RecordBatchBuilder


def dump(*args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(cli, ["dump-log", *args])
    return result.exit_code, result.output.splitlines()


def test_segments_and_snapshots_are_dumped_as_kafka_dumps_them(
    log_dir: Path, clock: ManualClock
) -> None:
    lg = Log.open(log_dir, LogConfig(), clock=clock)
    ts = clock.now_ms()
    plain = RecordBatchBuilder()
    plain.append(b"v", b"k", ts)
    lg.append_as_leader(plain.build(), 0)
    zstd = RecordBatchBuilder(producer_id=42, producer_epoch=3, base_sequence=0)
    for i in range(3):
        zstd.append(f"value-{i}".encode(), None, ts)
    lg.append_as_leader(zstd.build(compression.ZSTD), 0)
    lg.close()  # writes the producer snapshot at the log end (offset 4)

    segment, snapshot = log_dir / f"{0:020d}.log", log_dir / f"{4:020d}.snapshot"
    code, lines = dump("--print-data-log", str(segment))
    assert code == 0
    assert lines[0] == f"Dumping {segment}"
    assert lines[1].startswith("baseOffset: 0 lastOffset: 0 count: 1 ")
    assert "compresscodec: none" in lines[1]
    assert lines[2].endswith("keySize: 1 valueSize: 1 key: k payload: v")
    assert lines[3].startswith("baseOffset: 1 lastOffset: 3 count: 3 ")
    assert "compresscodec: zstd" in lines[3]
    assert [line.split("payload: ")[1] for line in lines[4:]] == ["value-0", "value-1", "value-2"]

    code, lines = dump(str(snapshot))
    assert code == 0
    assert lines == [
        f"Dumping {snapshot}",
        "producerId: 42 producerEpoch: 3 coordinatorEpoch: -1 currentTxnFirstOffset: None "
        f"lastTimestamp: {ts} firstSequence: 0 lastSequence: 2 lastOffset: 3 offsetDelta: 2 "
        f"timestamp: {ts}",
    ]

    snapshot.write_bytes(snapshot.read_bytes()[:-1])
    code, lines = dump(str(snapshot))
    assert code == 1 and lines[1].startswith("INVALID snapshot: ")
    damaged = bytearray(segment.read_bytes())
    damaged[-1] ^= 1
    segment.write_bytes(bytes(damaged))
    code, lines = dump(str(segment))
    assert code == 1
    assert lines[-1].startswith("INVALID at position ")
