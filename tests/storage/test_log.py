import itertools
import os

import pytest

from minikafka.clock import ManualClock
from minikafka.protocol.errors import (
    CorruptRecordError,
    InvalidProducerEpochError,
    InvalidRecordError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    RecordListTooLargeError,
)
from minikafka.storage import compression
from minikafka.storage.log import Log
from minikafka.storage.log_config import LogConfig
from minikafka.storage.record_batch import (
    RecordBatchBuilder,
    build_batch,
    decode_all,
    parse_header,
)

from .conftest import batch


def values(data: bytes) -> list[bytes]:
    return [r.value for r in decode_all(data)]


def test_leader_append_assigns_offsets_and_stamps_epoch(open_log):
    lg = open_log()
    a = lg.append_as_leader(batch(3), leader_epoch=5)
    b = lg.append_as_leader(batch(2, "w"), leader_epoch=5)
    assert (a.first_offset, a.last_offset, b.first_offset, b.last_offset) == (0, 2, 3, 4)
    assert lg.log_end_offset == 5
    data = lg.read(0, 10**6).read()
    assert values(data) == [b"v0", b"v1", b"v2", b"w0", b"w1"]
    assert parse_header(data).partition_leader_epoch == 5
    assert lg.leader_epoch_cache.end_offset_for(5) == (5, 5)


def test_leader_append_of_several_batches_in_one_request(open_log):
    lg = open_log()
    info = lg.append_as_leader(batch(2) + batch(3, "w"), leader_epoch=0)
    assert (info.first_offset, info.last_offset, info.num_batches) == (0, 4, 2)
    assert [r.offset for r in decode_all(lg.read(0, 10**6).read())] == [0, 1, 2, 3, 4]


def test_follower_append_keeps_offsets_and_epochs(open_log):
    lg = open_log()
    lg.append_as_follower(build_batch([b"a", b"b"], base_offset=0, partition_leader_epoch=1))
    lg.append_as_follower(build_batch([b"c"], base_offset=2, partition_leader_epoch=3))
    assert lg.log_end_offset == 3
    assert [(e.epoch, e.start_offset) for e in lg.leader_epoch_cache.entries] == [(1, 0), (3, 2)]
    with pytest.raises(CorruptRecordError):
        lg.append_as_follower(build_batch([b"x"], base_offset=1, partition_leader_epoch=3))
    assert lg.log_end_offset == 3


def test_a_follower_takes_a_batch_over_its_max_message_bytes(open_log):
    # The leader accepted it (its max.message.bytes, dynamic, may differ, or have been
    # lowered since): a follower that refused it would stop replicating the partition.
    lg = open_log(LogConfig(max_message_bytes=100))
    big = build_batch([b"x" * 500], base_offset=0, partition_leader_epoch=1)
    with pytest.raises(MessageTooLargeError):
        lg.append_as_leader(big, 1)
    info = lg.append_as_follower(big)
    assert (info.last_offset, lg.log_end_offset) == (0, 1)


def test_bad_appends_are_rejected_and_leave_the_log_unchanged(open_log):
    lg = open_log(LogConfig(segment_bytes=5000, max_message_bytes=200))
    lg.append_as_leader(batch(1), 0)
    before = lg.read(0, 10**6).read()
    bad = bytearray(batch(2))
    bad[-1] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC"):
        lg.append_as_leader(bad, 0)
    with pytest.raises(CorruptRecordError, match="truncated"):
        lg.append_as_leader(batch(2)[:30], 0)
    with pytest.raises(CorruptRecordError):
        lg.append_as_leader(b"", 0)
    with pytest.raises(MessageTooLargeError):
        lg.append_as_leader(build_batch([b"x" * 300]), 0)
    with pytest.raises(RecordListTooLargeError):
        lg.append_as_leader(batch(1) * 80, 0)
    # One bad batch rejects the whole request, though the good one before it was stamped.
    with pytest.raises(CorruptRecordError, match="CRC"):
        lg.append_as_leader(bytearray(batch(2)) + bad, 5)
    assert lg.log_end_offset == 1
    assert lg.read(0, 10**6).read() == before
    assert [(e.epoch, e.start_offset) for e in lg.leader_epoch_cache.entries] == [(0, 0)]


def test_roll_by_size_and_new_segment_starts_at_leo(open_log):
    lg = open_log()
    for _ in range(30):
        lg.append_as_leader(batch(3), 0)
    segs = lg.segments
    assert len(segs) > 1
    assert all(s.size <= 1000 for s in segs)
    for prev, nxt in itertools.pairwise(segs):
        assert nxt.base_offset == prev.next_offset
    assert lg.recovery_point == segs[-1].base_offset  # rolled segments were flushed


def test_roll_by_time_uses_record_timestamps(open_log, clock):
    lg = open_log(LogConfig(segment_ms=1000))
    lg.append_as_leader(batch(1, ts=10_000), 0)
    lg.append_as_leader(batch(1, ts=10_999), 0)
    assert len(lg.segments) == 1
    lg.append_as_leader(batch(1, ts=11_000), 0)
    assert [s.base_offset for s in lg.segments] == [0, 2]


def test_roll_by_time_without_timestamps_uses_segment_age(open_log, clock):
    lg = open_log(LogConfig(segment_ms=1000))
    lg.append_as_leader(batch(1, ts=-1), 0)
    clock.advance(999)
    lg.append_as_leader(batch(1, ts=-1), 0)
    assert len(lg.segments) == 1
    clock.advance(1)
    lg.append_as_leader(batch(1, ts=-1), 0)
    assert len(lg.segments) == 2


def test_segment_jitter_rolls_each_segment_a_random_share_before_segment_ms(open_log, monkeypatch):
    picked: list[int] = []

    def randrange(n: int) -> int:
        picked.append(n)
        return 400

    monkeypatch.setattr("minikafka.storage.segment.random.randrange", randrange)
    lg = open_log(LogConfig(segment_ms=1000, segment_jitter_ms=5000))
    lg.append_as_leader(batch(1, ts=10_000), 0)
    lg.append_as_leader(batch(1, ts=10_599), 0)
    assert len(lg.segments) == 1
    lg.append_as_leader(batch(1, ts=10_600), 0)  # 1000 - 400 ms after the first record
    assert [s.base_offset for s in lg.segments] == [0, 2]
    lg.append_as_leader(batch(1, ts=10_700), 0)
    lg.append_as_leader(batch(1, ts=10_800), 0)
    # Chosen below min(segment.jitter.ms, segment.ms), once for each segment.
    assert picked == [1000, 1000]


def test_a_full_offset_index_rolls_the_segment(open_log):
    # Two 8-byte entries fit; an entry for every batch after a segment's first
    # (index.interval.bytes 0), as Kafka's.
    lg = open_log(LogConfig(segment_index_bytes=16, index_interval_bytes=0))
    for _ in range(7):
        lg.append_as_leader(batch(1), 0)
    assert [s.base_offset for s in lg.segments] == [0, 3, 6]
    assert all(len(s.index.entry_arrays()[0]) <= 2 for s in lg.segments)


def test_preallocate_reserves_segment_bytes_of_disk_and_gives_back_the_rest_on_roll(open_log):
    lg = open_log(LogConfig(segment_bytes=4 * 1024 * 1024, preallocate=True))
    lg.append_as_leader(batch(3), 0)
    first = lg.segments[0]
    st = os.stat(first.log_path)
    assert st.st_size == first.size < 4096  # readers see the bytes written, no more
    assert st.st_blocks * 512 >= 4 * 1024 * 1024  # the disk is reserved
    lg.roll()
    st = os.stat(first.log_path)
    assert st.st_size == first.size and st.st_blocks * 512 < 64 * 1024
    assert os.stat(lg.segments[-1].log_path).st_blocks * 512 >= 4 * 1024 * 1024
    lg.close()  # a clean close gives back the active segment's reservation too
    assert os.stat(lg.segments[-1].log_path).st_blocks * 512 < 64 * 1024


def test_read_bounds_and_max_offset(open_log):
    lg = open_log()
    for _ in range(10):
        lg.append_as_leader(batch(3), 0)
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(31, 100)
    assert lg.read(30, 100).slice is None
    lg.update_high_watermark(9)
    assert [r.offset for r in decode_all(lg.read(0, 10**6, max_offset=9).read())] == list(range(9))
    assert lg.read(9, 10**6, max_offset=9).slice is None
    # a read can start in the middle of a batch: the whole batch comes back
    assert decode_all(lg.read(4, 10**6).read())[0].offset == 3


def test_read_spans_to_next_segment_when_offset_is_at_a_segment_end(open_log):
    lg = open_log()
    for _ in range(30):
        lg.append_as_leader(batch(3), 0)
    second = lg.segments[1]
    data = lg.read(second.base_offset, 10**6).read()
    assert decode_all(data)[0].offset == second.base_offset


def test_hw_is_clamped_to_log_start_and_leo(open_log):
    lg = open_log()
    lg.append_as_leader(batch(3), 0)
    assert lg.update_high_watermark(10) == 3
    assert lg.update_high_watermark(-5) == 0


def test_truncate_to_removes_later_segments_and_epochs(open_log):
    lg = open_log()
    for i in range(30):
        lg.append_as_leader(batch(3), leader_epoch=i // 10)
    lg.update_high_watermark(90)
    assert lg.truncate_to(33)
    assert lg.log_end_offset == 33
    assert all(s.base_offset < 33 for s in lg.segments)
    assert lg.latest_epoch() == 1
    assert lg.high_watermark == 33
    assert not lg.truncate_to(50)
    lg.append_as_leader(batch(3), leader_epoch=7)
    assert decode_all(lg.read(33, 10**6).read())[0].offset == 33


def test_truncate_below_first_segment_starts_over(open_log):
    lg = open_log()
    lg.append_as_leader(batch(3), 0)
    lg.truncate_to(0)
    assert (lg.log_start_offset, lg.log_end_offset, len(lg.segments)) == (0, 0, 1)
    lg.truncate_fully_and_start_at(500)
    assert (lg.log_start_offset, lg.log_end_offset, lg.high_watermark) == (500, 500, 500)
    assert lg.leader_epoch_cache.entries == []
    lg.append_as_follower(build_batch([b"x"], base_offset=500, partition_leader_epoch=2))
    assert lg.log_end_offset == 501


def test_retention_leaves_files_renamed_deleted_for_the_file_delete_delay(open_log, clock):
    lg = open_log(LogConfig(segment_bytes=1000, retention_bytes=0, file_delete_delay_ms=60_000))
    for _ in range(40):
        lg.append_as_leader(batch(3), 0)
    lg.update_high_watermark(lg.log_end_offset)
    first = lg.segments[0]
    files = [first.log_path, first.index.path]
    assert lg.delete_old_segments() > 0
    assert lg.segments[0].base_offset > first.base_offset
    waiting = [f.with_name(f.name + ".deleted") for f in files]
    assert all(not f.exists() for f in files) and all(f.exists() for f in waiting)
    clock.advance(59_999)
    assert lg.delete_retired_files() == 0 and all(f.exists() for f in waiting)
    clock.advance(1)
    assert lg.delete_retired_files() >= 2
    assert not any(f.exists() for f in waiting) and lg.retired_files == []


def test_without_a_file_delete_delay_retention_deletes_at_once(open_log):
    lg = open_log(LogConfig(segment_bytes=1000, retention_bytes=0, file_delete_delay_ms=0))
    for _ in range(40):
        lg.append_as_leader(batch(3), 0)
    lg.update_high_watermark(lg.log_end_offset)
    lg.delete_old_segments()
    assert not list(lg.dir.glob("*.deleted")) and lg.retired_files == []


def test_retention_by_size_never_deletes_active_or_beyond_hw(open_log):
    lg = open_log(LogConfig(segment_bytes=1000, retention_bytes=1500, retention_ms=-1))
    for _ in range(40):
        lg.append_as_leader(batch(3), 0)
    n_before = len(lg.segments)
    assert lg.delete_old_segments() == 0  # HW is 0: nothing is deletable
    lg.update_high_watermark(lg.log_end_offset)
    deleted = lg.delete_old_segments()
    assert deleted == n_before - 2
    assert lg.size_in_bytes <= 1500 + 1000
    assert lg.log_start_offset == lg.segments[0].base_offset
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(0, 100)


def test_retention_by_time_uses_largest_record_timestamp(open_log, clock):
    now = clock.now_ms()
    lg = open_log(LogConfig(segment_bytes=1000, retention_ms=60_000))
    for i in range(30):
        lg.append_as_leader(batch(3, ts=now - 120_000 if i < 20 else now), 0)
    lg.update_high_watermark(lg.log_end_offset)
    first_new = next(s for s in lg.segments if s.largest_timestamp() == now)
    lg.delete_old_segments()
    # every segment holding only old records is gone, the first one with new records stays
    assert lg.segments[0].base_offset <= first_new.base_offset
    assert all(s.largest_timestamp() == now for s in lg.segments[1:])
    assert lg.segments[0].largest_timestamp() == now or lg.segments[0] is lg.active_segment


def test_log_start_offset_follows_and_deletes_segments_below_it(open_log):
    lg = open_log()
    for _ in range(30):
        lg.append_as_leader(batch(3), 2)
    lg.update_high_watermark(lg.log_end_offset)
    third = lg.segments[2].base_offset
    assert lg.maybe_increment_log_start_offset(third + 1)
    lg.delete_old_segments()
    assert lg.segments[0].base_offset == third
    assert lg.log_start_offset == third + 1
    assert lg.leader_epoch_cache.entries[0].start_offset == third + 1


def test_clean_reopen_keeps_everything(open_log):
    lg = open_log()
    for i in range(30):
        lg.append_as_leader(batch(3), i // 10)
    data = lg.read(0, 10**6).read()
    epochs = lg.leader_epoch_cache.entries
    lg.close()
    again = open_log(had_clean_shutdown=True, recovery_point=90)
    assert again.log_end_offset == 90
    assert again.load_report.recovered_segments == 0
    assert again.read(0, 10**6).read() == data
    assert again.leader_epoch_cache.entries == epochs


def _crash_reopen(open_log, damage):
    lg = open_log()
    for i in range(30):
        lg.append_as_leader(batch(3), i // 10)
    path = lg.active_segment.log_path
    lg.close_without_flush()
    damage(path)
    return open_log(recovery_point=0)


def test_recovery_cuts_torn_tail(open_log):
    def tear(path):
        size = os.path.getsize(path)
        os.truncate(path, size - 10)

    lg = _crash_reopen(open_log, tear)
    assert lg.log_end_offset == 87
    assert lg.load_report.truncated_bytes > 0
    assert lg.latest_epoch() == 2
    assert decode_all(lg.read(84, 10**6).read())[-1].offset == 86


def test_recovery_cuts_trailing_garbage(open_log):
    def garbage(path):
        with open(path, "ab") as f:
            f.write(os.urandom(333))

    lg = _crash_reopen(open_log, garbage)
    assert lg.log_end_offset == 90
    assert lg.load_report.truncated_bytes == 333


def test_recovery_cuts_at_flipped_byte_and_deletes_later_segments(open_log, log_dir):
    def flip_in_first_segment(_active):
        first = sorted(log_dir.glob("*.log"))[0]
        data = bytearray(first.read_bytes())
        data[200] ^= 0xFF
        first.write_bytes(bytes(data))

    lg = _crash_reopen(open_log, flip_in_first_segment)
    assert len(lg.segments) == 1
    assert lg.load_report.deleted_segments > 0
    # everything readable is valid and contiguous from 0
    recs = decode_all(lg.read(0, 10**6).read())
    assert [r.offset for r in recs] == list(range(lg.log_end_offset))
    assert lg.log_end_offset < 90
    lg.append_as_leader(batch(1), 3)  # the log keeps working


def test_clean_open_with_missing_index_rebuilds_it(open_log, log_dir):
    lg = open_log()
    for _ in range(30):
        lg.append_as_leader(batch(3), 0)
    lg.close()
    for idx in log_dir.glob("*.index"):
        idx.unlink()
    again = open_log(had_clean_shutdown=True)
    assert again.log_end_offset == 90
    assert again.load_report.recovered_segments == len(again.segments)
    assert decode_all(again.read(45, 10**6).read())[0].offset <= 45


def test_corrupt_epoch_checkpoint_is_rebuilt_from_batches(open_log, log_dir):
    lg = open_log()
    for i in range(9):
        lg.append_as_leader(batch(3), leader_epoch=i // 3)
    lg.close()
    (log_dir / "leader-epoch-checkpoint").write_text("garbage\n")
    again = open_log(had_clean_shutdown=True)
    assert again.load_report.rebuilt_epoch_cache
    assert [(e.epoch, e.start_offset) for e in again.leader_epoch_cache.entries] == [
        (0, 0),
        (1, 9),
        (2, 18),
    ]


def test_recovery_truncation_also_truncates_epoch_cache(open_log, log_dir):
    lg = open_log()
    for i in range(4):
        lg.append_as_leader(batch(3), leader_epoch=i)
    lg.close_without_flush()
    seg = sorted(log_dir.glob("*.log"))[-1]
    os.truncate(seg, os.path.getsize(seg) - 5)
    again = open_log()
    assert again.log_end_offset == 9
    assert again.latest_epoch() == 2


def _checkpointed_epochs(log_dir):
    from minikafka.storage.checkpoint import LeaderEpochCheckpointFile

    return LeaderEpochCheckpointFile(log_dir / "leader-epoch-checkpoint").read()


def test_a_new_epoch_reaches_disk_before_the_recovery_point_passes_it(open_log, log_dir):
    """Becoming leader writes no checkpoint (no fsync per partition of a LeaderAndIsr); the
    flush that moves the recovery point past the epoch's start writes it first."""
    from minikafka.storage.checkpoint import EpochEntry

    lg = open_log()
    lg.append_as_leader(batch(3), 0)
    lg.flush()
    assert _checkpointed_epochs(log_dir) == [EpochEntry(0, 0)]
    lg.leader_epoch_cache.assign(4, lg.log_end_offset)  # as Partition.make_leader does
    lg.append_as_leader(batch(2), 4)
    assert _checkpointed_epochs(log_dir) == [EpochEntry(0, 0)]
    lg.flush()
    assert _checkpointed_epochs(log_dir) == [EpochEntry(0, 0), EpochEntry(4, 3)]
    assert lg.recovery_point == 5


def test_a_crash_before_the_flush_rebuilds_the_new_epoch_from_its_batches(open_log, log_dir):
    from minikafka.storage.checkpoint import EpochEntry

    lg = open_log()
    lg.append_as_leader(batch(3), 0)
    lg.flush()
    lg.leader_epoch_cache.assign(4, lg.log_end_offset)
    lg.append_as_leader(batch(2), 4)
    lg.close_without_flush()  # the checkpoint on disk knows epoch 0 only
    again = open_log(recovery_point=3)
    assert again.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(4, 3)]
    # Written before the recovery point moved to the LEO: a second crash recovers from 5.
    assert again.recovery_point == 5
    assert _checkpointed_epochs(log_dir) == [EpochEntry(0, 0), EpochEntry(4, 3)]


def test_a_clean_close_fsyncs_only_what_the_last_flush_left(open_log, monkeypatch):
    from minikafka.storage.segment import LogSegment

    lg = open_log()
    lg.append_as_leader(batch(3), 0)
    lg.roll()
    lg.append_as_leader(batch(2), 0)
    lg.flush()
    lg.roll()
    lg.append_as_leader(batch(1), 0)
    flushed = []
    real = LogSegment.flush
    monkeypatch.setattr(
        LogSegment,
        "flush",
        lambda seg, sync=True: (flushed.append(seg.base_offset), real(seg, sync=sync)),
    )
    lg.close()
    assert flushed == [5]  # the segments below the recovery point were fsynced by the flush
    assert lg.recovery_point == 6


def test_log_start_above_recovered_leo_starts_empty(open_log, log_dir):
    lg = open_log()
    lg.append_as_leader(batch(3), 0)
    lg.close_without_flush()
    again = open_log(log_start_offset=50)
    assert (again.log_start_offset, again.log_end_offset) == (50, 50)


def _damage_header_field(log_dir, batch_index: int, field_offset: int, new: bytes) -> None:
    from minikafka.storage.segment import LogSegment

    path = sorted(log_dir.glob("*.log"))[-1]
    seg = LogSegment.open_existing(log_dir, int(path.name[:20]), 4096, 0)
    pos = seg.batches()[batch_index][0]
    seg.close()
    raw = bytearray(path.read_bytes())
    raw[pos + field_offset : pos + field_offset + len(new)] = new
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("new_base", [0, 4, 10**9])
def test_recovery_catches_flipped_base_offset_outside_the_crc(open_log, log_dir, new_base):
    lg = open_log(LogConfig(segment_bytes=100_000))
    for _ in range(4):
        lg.append_as_leader(batch(3), 0)
    lg.close_without_flush()
    _damage_header_field(log_dir, 2, 0, new_base.to_bytes(8, "big"))
    again = open_log(LogConfig(segment_bytes=100_000))
    assert again.log_end_offset == 6
    assert "base offset" in again.load_report.first_error


def test_recovery_catches_leader_epoch_going_backwards(open_log, log_dir):
    lg = open_log(LogConfig(segment_bytes=100_000))
    for e in (1, 2, 3):
        lg.append_as_leader(batch(3), e)
    lg.close_without_flush()
    _damage_header_field(log_dir, 2, 12, (0).to_bytes(4, "big"))
    again = open_log(LogConfig(segment_bytes=100_000))
    assert again.log_end_offset == 6
    assert again.latest_epoch() == 2


def test_follower_append_past_leo_continues_in_new_segment(open_log):
    lg = open_log()
    lg.append_as_follower(build_batch([b"a"], base_offset=0, partition_leader_epoch=0))
    lg.append_as_follower(build_batch([b"b", b"c"], base_offset=10, partition_leader_epoch=1))
    assert [s.base_offset for s in lg.segments] == [0, 10]
    assert lg.log_end_offset == 12
    with pytest.raises(CorruptRecordError, match="expected 13"):
        lg.append_as_follower(
            build_batch([b"d"], base_offset=12, partition_leader_epoch=1)
            + build_batch([b"e"], base_offset=14, partition_leader_epoch=1)
        )
    with pytest.raises(CorruptRecordError, match="leader epoch 0 below 1"):
        lg.append_as_follower(build_batch([b"d"], base_offset=12, partition_leader_epoch=0))
    lg.close_without_flush()
    again = open_log()
    assert again.log_end_offset == 12 and again.load_report.truncated_bytes == 0


def test_leader_append_stamps_a_bytearray_in_place_and_never_mutates_bytes(open_log):
    lg = open_log()
    lg.append_as_leader(batch(2), 0)
    immutable = batch(3)
    copy = bytes(immutable)
    lg.append_as_leader(immutable, 4)
    assert immutable == copy
    mutable = bytearray(batch(1))
    lg.append_as_leader(mutable, 4)
    assert parse_header(mutable).base_offset == 5
    assert parse_header(mutable).partition_leader_epoch == 4


def test_clean_reopen_does_not_rewrite_the_epoch_checkpoint(open_log, log_dir, monkeypatch):
    from minikafka.storage.checkpoint import LeaderEpochCheckpointFile

    lg = open_log()
    for e in range(5):
        lg.append_as_leader(batch(2), e)
    lg.close()
    writes = []
    original = LeaderEpochCheckpointFile.write
    monkeypatch.setattr(
        LeaderEpochCheckpointFile,
        "write",
        lambda self, es: (writes.append(list(es)), original(self, es)),
    )
    again = open_log(had_clean_shutdown=True)
    assert again.latest_epoch() == 4
    assert writes == []  # loading is not a change: no fsync'd rewrite at startup


def _timed_batch(timestamps: list[int], codec: int = 0) -> bytes:
    builder = RecordBatchBuilder()
    for ts in timestamps:
        builder.append(f"at {ts}".encode(), None, ts)
    return builder.build(codec)


def test_offset_for_timestamp_is_the_first_record_at_or_after_it(open_log):
    lg = open_log()
    lg.append_as_leader(_timed_batch([100, 200]), 0)  # offsets 0, 1
    lg.roll()
    lg.append_as_leader(_timed_batch([300]), 0)  # 2
    lg.append_as_leader(_timed_batch([300, 500], codec=compression.ZSTD), 0)  # 3, 4
    lg.roll()
    lg.append_as_leader(_timed_batch([700, 600]), 0)  # 5, 6: out of order inside a batch
    assert len(lg.segments) == 3
    end = lg.log_end_offset
    assert lg.offset_for_timestamp(50, end) == (0, 100)
    assert lg.offset_for_timestamp(150, end) == (1, 200)
    assert lg.offset_for_timestamp(300, end) == (2, 300)
    assert lg.offset_for_timestamp(400, end) == (4, 500)
    assert lg.offset_for_timestamp(550, end) == (5, 700)  # offset order, as Kafka
    assert lg.offset_for_timestamp(800, end) is None
    assert lg.offset_for_timestamp(400, 4) is None  # nothing visible at or after it
    assert lg.offset_for_max_timestamp(end) == (5, 700)
    assert lg.offset_for_max_timestamp(5) == (4, 500)
    assert lg.offset_for_max_timestamp(0) is None
    # Below the log start offset nothing is found.
    lg.update_high_watermark(end)
    assert lg.maybe_increment_log_start_offset(1)
    assert lg.offset_for_timestamp(50, end) == (1, 200)


# Idempotent batches are stamped with the test clock's time: a producer whose last batch
# is producer.id.expiration.ms (a day) older than the log's clock is forgotten.
NOW_MS = ManualClock().now_ms()


def _idempotent(pid: int, epoch: int, seq: int, n: int, tag: str = "r") -> bytes:
    builder = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    for i in range(n):
        builder.append(f"{tag}{seq + i}".encode(), None, NOW_MS)
    return builder.build()


def test_a_retried_idempotent_batch_is_not_appended_twice(open_log):
    lg = open_log()
    first = lg.append_as_leader(_idempotent(5, 0, 0, 2), 0)
    assert (first.first_offset, first.last_offset) == (0, 1)
    again = lg.append_as_leader(_idempotent(5, 0, 0, 2), 0)  # its acknowledgement was lost
    assert (again.first_offset, again.last_offset, again.num_records) == (0, 1, 0)
    assert lg.log_end_offset == 2
    assert lg.append_as_leader(_idempotent(5, 0, 2, 1), 0).first_offset == 2
    with pytest.raises(OutOfOrderSequenceError):
        lg.append_as_leader(_idempotent(5, 0, 9, 1), 0)
    lg.append_as_leader(_idempotent(6, 2, 0, 1), 0)
    with pytest.raises(InvalidProducerEpochError):
        lg.append_as_leader(_idempotent(6, 1, 1, 1), 0)
    with pytest.raises(InvalidRecordError, match="exactly one record batch"):
        lg.append_as_leader(_idempotent(7, 0, 0, 1) + _idempotent(7, 0, 1, 1), 0)
    corrupt = bytearray(_idempotent(5, 0, 3, 1))
    corrupt[-1] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC"):
        lg.append_as_leader(corrupt, 0)
    assert [r.value for r in decode_all(lg.read(0, 10**6).read())] == [b"r0", b"r1", b"r2", b"r0"]


def test_producer_state_survives_reopen_follows_replication_and_truncation(open_log, log_dir):
    leader = open_log()
    leader.append_as_leader(_idempotent(5, 0, 0, 2), 3)
    leader.append_as_leader(_idempotent(5, 0, 2, 2), 3)
    # A follower copies the leader's batches and learns the sequences from them: as the next
    # leader it knows a retry of either batch.
    follower = Log.open(log_dir.parent / "t-1", LogConfig())
    follower.append_as_follower(leader.read(0, 10**6).read())
    assert follower.append_as_leader(_idempotent(5, 0, 2, 2), 4).first_offset == 2
    assert follower.log_end_offset == 4
    # Reopened, the state is loaded from the snapshot the close wrote, which (as Kafka's)
    # keeps only the producer's last batch: a retry of that one is still known, one of an
    # older batch is out of order.
    leader.close()
    reopened = open_log()
    assert reopened.append_as_leader(_idempotent(5, 0, 2, 2), 3).num_records == 0
    with pytest.raises(OutOfOrderSequenceError):
        reopened.append_as_leader(_idempotent(5, 0, 0, 2), 3)
    # Truncated away, the batch is no duplicate any more: its retry is written again.
    reopened.truncate_to(2)
    retried = reopened.append_as_leader(_idempotent(5, 0, 2, 2), 3)
    assert (retried.first_offset, retried.num_records) == (2, 2)


def test_an_idempotent_batch_after_the_first_of_a_request_is_recorded(open_log):
    lg = open_log()
    lg.append_as_leader(batch(1) + _idempotent(8, 0, 0, 2), 0)  # offsets 0, then 1-2
    assert lg.append_as_leader(_idempotent(8, 0, 0, 2), 0).first_offset == 1  # a retry
