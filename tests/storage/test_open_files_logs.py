"""Many logs through a cache of 8 open segment files (log.open.files.max=8): appends,
reads, a region held across evictions, truncation, retention, compaction, a restart, all
the same as with every file open, and the process's descriptors bounded all along."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from minikafka.clock import ManualClock
from minikafka.common import TopicPartition
from minikafka.protocol.errors import KafkaStorageError
from minikafka.storage.log import Log
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_manager import LogManager
from minikafka.storage.open_files import OpenFiles
from minikafka.storage.record_batch import RecordBatchBuilder, decode_all

CAP = 8
PARTITIONS = 40
CONFIG = LogConfig(segment_bytes=400, index_interval_bytes=100, retention_ms=-1)
COMPACT = LogConfig(
    segment_bytes=300,
    index_interval_bytes=100,
    cleanup_policy="compact",
    retention_ms=-1,
    min_cleanable_dirty_ratio=0.0,
)


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def keyed(pairs: list[tuple[bytes, bytes]]) -> bytes:
    builder = RecordBatchBuilder()
    for key, value in pairs:
        builder.append(value, key, int(time.time() * 1000))
    return builder.build(0)


def one(value: bytes) -> bytes:
    b = RecordBatchBuilder()
    b.append(value, None, 0)
    return b.build(0)


def records(lg: Log, start: int = 0) -> list[tuple[int, bytes | None, bytes | None]]:
    out: list[tuple[int, bytes | None, bytes | None]] = []
    offset = max(start, lg.log_start_offset)
    while offset < lg.log_end_offset:
        recs = decode_all(lg.read(offset, 10**6, skip_empty_batches=True).read())
        out.extend((r.offset, r.key, r.value) for r in recs if r.offset >= offset)
        offset = recs[-1].offset + 1 if recs else lg.log_end_offset
    return out


@pytest.fixture
def files() -> OpenFiles:
    return OpenFiles(CAP)


def test_many_logs_write_read_truncate_and_restart_within_the_cap(
    tmp_path: Path, files: OpenFiles
) -> None:
    baseline = _fds()
    manager = LogManager([tmp_path], CONFIG, open_files=files)
    manager.startup()
    baseline += 1  # the log dir's lock
    tps = [TopicPartition("t", p) for p in range(PARTITIONS)]
    logs = {tp: manager.get_or_create_log(tp, CONFIG) for tp in tps}
    expected: dict[TopicPartition, list[bytes]] = {tp: [] for tp in tps}
    for round_ in range(12):
        for tp, lg in logs.items():
            values = [f"{tp.partition}-{round_}-{i}".encode() for i in range(3)]
            b = RecordBatchBuilder()
            for v in values:
                b.append(v, None, 0)
            # (the test's own batches, built as a producer would)
            lg.append_as_leader(b.build(0), leader_epoch=0)
            expected[tp] += values
            assert files.open_count <= CAP and files.pinned_count == 0
            assert _fds() <= baseline + CAP
    assert sum(len(lg.segments) for lg in logs.values()) > 4 * CAP
    assert files.evictions > 0
    for tp, lg in logs.items():
        assert [v for _, _, v in records(lg)] == expected[tp]
        assert files.open_count <= CAP

    # A response's region keeps its own descriptor while the segment's is evicted.
    first = logs[tps[0]]
    region = first.read(0, 10**6).slice.region()  # type: ignore[union-attr]
    for lg in logs.values():
        lg.read(0, 100)
    assert first.segments[0]._fd == -1, "evicted meanwhile"
    data = region.read()
    region.close()
    assert [r.value for r in decode_all(data)] == expected[tps[0]][: len(decode_all(data))]

    # Truncation (a follower diverging) into an evicted segment, then appends again.
    for tp, lg in list(logs.items())[::3]:
        cut = lg.log_end_offset // 2
        lg.truncate_to(cut)
        expected[tp] = expected[tp][: records(lg)[-1][0] + 1] if lg.log_end_offset else []
        lg.append_as_leader(one(b"again"), 0)
        expected[tp].append(b"again")
    # Retention by log start offset, flushes (fsync through re-opened descriptors).
    for tp, lg in logs.items():
        lg.update_high_watermark(lg.log_end_offset)
        start = lg.segments[1].base_offset
        lg.maybe_increment_log_start_offset(start)
        lg.delete_old_segments()
        expected[tp] = expected[tp][start:]
        lg.flush()
        assert lg.recovery_point == lg.log_end_offset
    for tp, lg in logs.items():
        assert [v for _, _, v in records(lg, lg.log_start_offset)] == expected[tp]
    assert files.open_count <= CAP and _fds() <= baseline + CAP

    # A clean restart through the same cap finds every record.
    manager.shutdown()
    assert files.open_count == 0
    again = LogManager([tmp_path], CONFIG, open_files=files)
    again.startup()
    try:
        assert files.open_count <= CAP
        for tp in tps:
            lg = again.get_log(tp)
            assert lg is not None
            assert [v for _, _, v in records(lg, lg.log_start_offset)] == expected[tp]
        assert files.open_count <= CAP and _fds() <= baseline + CAP
    finally:
        again.shutdown()


def test_compaction_with_the_cap_in_force(tmp_path: Path, files: OpenFiles) -> None:
    lm = LogManager(
        [tmp_path], COMPACT, clock=ManualClock(int(time.time() * 1000)), open_files=files
    )
    lm.startup()
    try:
        logs = [lm.get_or_create_log(TopicPartition("c", p), COMPACT) for p in range(6)]
        for round_ in range(8):
            for p, lg in enumerate(logs):
                lg.append_as_leader(
                    keyed([(b"k%d" % k, b"%d-%d-%d" % (p, k, round_)) for k in range(3)]), 0
                )
                lg.update_high_watermark(lg.log_end_offset)
        assert sum(len(lg.segments) for lg in logs) > CAP
        passes = 0
        while (job := lm.prepare_cleaning()) is not None:
            # The pass reads descriptors of its own while the loop's cache churns.
            for lg in logs:
                lg.read(lg.log_start_offset, 100)
            assert lm.finish_cleaning(job, job.run())
            passes += 1
            assert files.open_count <= CAP and files.pinned_count == 0
        assert passes == len(logs)
        for p, lg in enumerate(logs):
            got = records(lg)
            cleanable_end = lg.segments[-2].next_offset
            keys = [k for o, k, _ in got if o < cleanable_end]
            assert len(keys) == len(set(keys)), "one record per key in the cleaned part"
            latest = {k: v for _, k, v in got}
            assert latest == {b"k%d" % k: b"%d-%d-7" % (p, k) for k in range(3)}
    finally:
        lm.shutdown()
    assert files.open_count == 0


def test_a_read_out_of_descriptors_is_a_storage_error_and_the_log_goes_on(
    tmp_path: Path, files: OpenFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    lg = Log.open(tmp_path / "t-0", CONFIG, open_files=files)
    lg.append_as_leader(one(b"v"), 0)
    lg.update_high_watermark(lg.log_end_offset)
    files.close_idle()
    seg = lg.active_segment
    real_open = os.open

    def emfile(*args: object, **kw: object) -> int:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(os, "open", emfile)
    with pytest.raises(KafkaStorageError, match="Too many open files"):
        lg.read(0, 100)
    with pytest.raises(KafkaStorageError, match="Too many open files"):
        lg.append_as_leader(one(b"w"), 0)
    assert files.retries == 2
    monkeypatch.setattr(os, "open", real_open)
    assert not seg.closed and lg.log_end_offset == 1
    lg.append_as_leader(one(b"w"), 0)
    assert [v for _, _, v in records(lg)] == [b"v", b"w"]
    lg.close()
