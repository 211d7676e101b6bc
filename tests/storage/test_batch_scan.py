"""The C scanner (`minikafka/storage/_batch_scan.c`) against plain-Python oracles.

The oracles here are the rules of record_batch.py's docstring written out in Python (what the
storage layer did before the scanner moved to C), and the crc32c package for the CRC. Every
behaviour the C code has is compared with them on random and damaged input."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.storage import _batch_scan
from minikafka.storage._batch_scan import BatchScanError, SegmentAppender
from minikafka.storage.record_batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    build_batch,
    check_compressed_batch,
    parse_header,
    stamp,
)
from minikafka.storage.segment import LogSegment

_HEADER = struct.Struct(">qiibIhiqqqhii")


def oracle_header_fields(
    buf: bytes, pos: int, limit: int, max_batch_size: int = -1
) -> tuple[int, ...] | tuple[str, int]:
    """The validation rules in Python: the fields, or (reason name, position)."""
    if limit - pos < HEADER_SIZE:
        return ("TRUNCATED", pos)
    f = _HEADER.unpack_from(buf, pos)
    length, magic, crc, last_delta, count = f[1], f[3], f[4], f[6], f[12]
    size = length + LOG_OVERHEAD
    if size < HEADER_SIZE or (max_batch_size >= 0 and size > max_batch_size):
        return ("LENGTH_OUT_OF_BOUNDS", pos)
    if magic != 2:
        return ("BAD_MAGIC", pos)
    if pos + size > limit:
        return ("TRUNCATED", pos)
    # A cleaned batch keeps its offset range with fewer records (or none); only a leader's
    # check of a producer's batch wants one record per offset (the append tests).
    if count < 0 or last_delta < 0 or count > last_delta + 1:
        return ("RECORD_COUNT_MISMATCH", pos)
    if crc32c.crc32c(buf[pos + 21 : pos + size]) != crc:
        return ("CRC_MISMATCH", pos)
    return f


def c_header_fields(
    buf: bytes, pos: int, limit: int, max_batch_size: int = -1
) -> tuple[int, ...] | tuple[str, int]:
    try:
        return _batch_scan.header_fields(buf, pos, limit, max_batch_size)
    except BatchScanError as e:
        return (e.args[0], e.args[1])


@settings(max_examples=300)
@given(data=st.binary(max_size=5000), start=st.integers(0, 7))
def test_crc32c_equals_the_crc32c_package(data, start):
    # Unaligned starts and every tail length exercise the three-stream loop's edges.
    view = memoryview(data)[min(start, len(data)) :]
    assert _batch_scan.crc32c(view) == crc32c.crc32c(view)


@pytest.mark.parametrize("size", [0, 1, 7, 8, 767, 768, 769, 12_287, 12_288, 16_573, 1 << 20])
def test_crc32c_at_the_stream_block_boundaries(size):
    data = os.urandom(size + 3)
    for start in range(4):
        assert _batch_scan.crc32c(data[start:]) == crc32c.crc32c(data[start:])


@st.composite
def damaged_batches(draw):
    n = draw(st.integers(1, 6))
    values = [draw(st.binary(max_size=40)) for _ in range(n)]
    buf = bytearray(build_batch(values, base_offset=draw(st.integers(0, 2**40))))
    for _ in range(draw(st.integers(0, 3))):  # flip bytes anywhere, header included
        i = draw(st.integers(0, len(buf) - 1))
        buf[i] ^= draw(st.integers(1, 255))
    cut = draw(st.integers(0, len(buf)))
    if draw(st.booleans()):
        buf = buf[:cut]  # a torn tail
    prefix = draw(st.binary(max_size=5))
    return bytes(prefix + buf), len(prefix)


@settings(max_examples=500)
@given(case=damaged_batches(), max_batch_size=st.sampled_from([-1, 80, 10_000]))
def test_header_validation_equals_the_python_rules(case, max_batch_size):
    buf, pos = case
    assert c_header_fields(buf, pos, len(buf), max_batch_size) == oracle_header_fields(
        buf, pos, len(buf), max_batch_size
    )


def test_header_fields_rejects_positions_outside_the_buffer():
    b = build_batch([b"x"])
    with pytest.raises(ValueError, match="outside"):
        _batch_scan.header_fields(b, 0, len(b) + 1)
    with pytest.raises(ValueError, match="outside"):
        _batch_scan.header_fields(b, -1, len(b))


# --- SegmentAppender: LogSegment's C append side ----------------------------------------

NEVER = 10**12  # segment.bytes / segment.ms that never roll


def _never() -> int:
    raise AssertionError("the clock is read only for batches without timestamps")


def _new_segment(tmp_path: Path, interval: int = 100, base: int = 0) -> LogSegment:
    return LogSegment.create(tmp_path, base, interval, 0)


def _fetched(base: int, epoch: int, n: int = 2) -> bytes:
    return build_batch([b"r"] * n, base_offset=base, partition_leader_epoch=epoch)


def test_append_leader_stamps_every_batch_and_summarises(tmp_path):
    seg = _new_segment(tmp_path, base=100)
    buf = bytearray(build_batch([b"a", b"b"], timestamp=5) + build_batch([b"c"] * 3, timestamp=9))
    info = seg.append_leader(buf, 7, 1 << 20, NEVER, NEVER, _never, check_compressed_batch)
    assert info == (100, 104, 9, 2, 5, len(buf), None)
    first = parse_header(buf, 0)
    second = parse_header(buf, first.size_in_bytes)
    assert (first.base_offset, first.partition_leader_epoch) == (100, 7)
    assert (second.base_offset, second.partition_leader_epoch) == (102, 7)
    assert seg.read_bytes(0, seg.size) == bytes(buf)


def test_append_leader_refuses_a_batch_over_max_message_bytes(tmp_path):
    seg = _new_segment(tmp_path)
    buf = bytearray(build_batch([b"x"] * 2) + build_batch([b"y" * 500]))
    with pytest.raises(BatchScanError) as e:
        seg.append_leader(buf, 0, 300, NEVER, NEVER, _never, check_compressed_batch)
    kind, position, detail = e.value.args
    assert (kind, position) == ("MESSAGE_TOO_LARGE", len(build_batch([b"x"] * 2)))
    assert "larger than max.message.bytes 300" in detail
    assert seg.size == 0


def test_append_leader_needs_a_writable_buffer(tmp_path):
    with pytest.raises(BufferError):
        _new_segment(tmp_path).append_leader(
            build_batch([b"x"]), 0, 1 << 20, NEVER, NEVER, _never, check_compressed_batch
        )


def test_append_follower_lists_new_epochs_and_checks_the_sequence(tmp_path):
    seg = _new_segment(tmp_path, base=10)
    data = _fetched(10, 3) + _fetched(12, 3) + _fetched(14, 5)
    info = seg.append_follower(data, 2, 1 << 20, NEVER, NEVER, _never)
    assert info[:6] == (10, 15, 0, 3, 6, len(data))
    assert info.new_epochs == [(3, 10), (5, 14)]
    same_epoch = seg.append_follower(_fetched(16, 5), 5, 1 << 20, NEVER, NEVER, _never)
    assert same_epoch.new_epochs is None
    cases = [
        (_fetched(8, 5), "first batch has base offset 8, below LEO 18"),
        (_fetched(18, 5) + _fetched(21, 5), "has base offset 21, expected 20"),
        (_fetched(18, 5) + _fetched(20, 4), "has leader epoch 4 below 5"),
        (_fetched(18, 4), "has leader epoch 4 below 5"),
    ]
    for data, message in cases:
        with pytest.raises(BatchScanError, match=message) as e:
            seg.append_follower(data, 5, 1 << 20, NEVER, NEVER, _never)
        assert e.value.args[0] == "OUT_OF_SEQUENCE"
    assert seg.next_offset == 18


def test_empty_and_oversized_requests_are_refused(tmp_path):
    seg = _new_segment(tmp_path)
    with pytest.raises(BatchScanError, match="no record batch") as e:
        seg.append_leader(bytearray(), 0, 1 << 20, NEVER, NEVER, _never, check_compressed_batch)
    assert e.value.args[0] == "EMPTY"
    with pytest.raises(BatchScanError, match="no record batch"):
        seg.append_follower(b"", 0, 1 << 20, NEVER, NEVER, _never)
    two = build_batch([b"x"]) * 2
    with pytest.raises(BatchScanError, match=f"{len(two)} bytes exceed segment.bytes") as e:
        seg.append_leader(
            bytearray(two), 0, 1 << 20, len(two) - 1, NEVER, _never, check_compressed_batch
        )
    assert e.value.args[0] == "RECORD_LIST_TOO_LARGE"
    assert seg.size == 0


def test_append_leader_writes_indexes_and_tracks_timestamps(tmp_path):
    seg = _new_segment(tmp_path, interval=100)
    assert seg._largest_timestamp == -1  # a new segment: known to hold nothing
    positions = []
    for i in range(5):
        positions.append(seg.size)
        info = seg.append_leader(
            bytearray(build_batch([b"x" * 60], timestamp=50 - i)),
            1,
            10**6,
            NEVER,
            NEVER,
            _never,
            check_compressed_batch,
        )
        assert info is not None and info.first_offset == i
    assert seg.next_offset == 5
    assert seg.size == os.fstat(seg._fd).st_size == positions[-1] + info.valid_bytes
    assert seg._first_batch_timestamp == 50
    assert seg._largest_timestamp == 50
    # Kafka's rule: an entry once more than index.interval.bytes were written since the last.
    expected, since = [], 0
    for offset, position in enumerate(positions):
        if since > 100:
            expected.append((offset, position))
            since = 0
        since += info.valid_bytes
    assert seg.index.entries() == expected
    assert [b.base_offset for _, b in seg.batches()] == [0, 1, 2, 3, 4]


def test_append_leader_hands_back_a_due_roll_without_writing(tmp_path):
    seg = _new_segment(tmp_path)
    one = build_batch([b"x" * 100], timestamp=1_000)
    assert (
        seg.append_leader(bytearray(one), 0, 10**6, NEVER, 500, _never, check_compressed_batch)
        is not None
    )
    size, next_offset = seg.size, seg.next_offset
    # segment.bytes: the segment would outgrow it
    assert (
        seg.append_leader(
            bytearray(one), 0, 10**6, 2 * len(one) - 1, 500, _never, check_compressed_batch
        )
        is None
    )
    assert (
        seg.append_leader(
            bytearray(one), 0, 10**6, 2 * len(one), 500, _never, check_compressed_batch
        )
        is not None
    )
    # segment.ms, from the first batch's timestamp
    late = build_batch([b"y"], timestamp=1_500)
    assert (
        seg.append_leader(bytearray(late), 0, 10**6, NEVER, 500, _never, check_compressed_batch)
        is None
    )
    assert (
        seg.append_leader(bytearray(late), 0, 10**6, NEVER, 501, _never, check_compressed_batch)
        is not None
    )
    assert seg.next_offset == next_offset + 2
    assert seg.size == os.fstat(seg._fd).st_size == size + len(one) + len(late)


def test_offsets_beyond_the_index_range_roll(tmp_path):
    seg = _new_segment(tmp_path)
    seg.append_leader(
        bytearray(build_batch([b"x"])), 0, 10**6, NEVER, NEVER, _never, check_compressed_batch
    )
    seg.next_offset = 2**31  # the next batch's last offset would not fit in 32 bits
    assert (
        seg.append_leader(
            bytearray(build_batch([b"x"])), 0, 10**6, NEVER, NEVER, _never, check_compressed_batch
        )
        is None
    )


def test_without_timestamps_the_time_rule_reads_the_clock(tmp_path):
    seg = _new_segment(tmp_path)  # created at 0
    untimed = build_batch([b"x"], timestamp=-1)
    assert (
        seg.append_leader(bytearray(untimed), 0, 10**6, NEVER, 500, _never, check_compressed_batch)
        is not None
    )
    assert (
        seg.append_leader(
            bytearray(untimed), 0, 10**6, NEVER, 500, lambda: 499, check_compressed_batch
        )
        is not None
    )
    assert (
        seg.append_leader(
            bytearray(untimed), 0, 10**6, NEVER, 500, lambda: 500, check_compressed_batch
        )
        is None
    )

    def broken() -> int:
        raise RuntimeError("clock")

    with pytest.raises(RuntimeError, match="clock"):
        seg.append_leader(bytearray(untimed), 0, 10**6, NEVER, 500, broken, check_compressed_batch)
    assert seg.next_offset == 2


def test_append_follower_hands_back_batches_that_start_past_the_segment(tmp_path):
    seg = _new_segment(tmp_path)
    assert seg.append_follower(_fetched(0, 1), 0, 10**6, NEVER, NEVER, _never) is not None
    assert seg.append_follower(_fetched(5, 1), 1, 10**6, NEVER, NEVER, _never) is None
    assert seg.next_offset == 2


def test_a_failed_write_changes_nothing(tmp_path):
    seg = _new_segment(tmp_path)
    seg.append_leader(
        bytearray(build_batch([b"x"])), 0, 10**6, NEVER, NEVER, _never, check_compressed_batch
    )
    size, next_offset, entries = seg.size, seg.next_offset, seg.index.entries()
    read_only = os.open(seg.log_path, os.O_RDONLY)
    os.dup2(read_only, seg._fd)  # writes now fail with EBADF
    os.close(read_only)
    with pytest.raises(OSError):
        seg.append_leader(
            bytearray(build_batch([b"y"] * 50)),
            0,
            10**6,
            NEVER,
            NEVER,
            _never,
            check_compressed_batch,
        )
    assert (seg.size, seg.next_offset, seg.index.entries()) == (size, next_offset, entries)


def test_a_closed_segment_refuses_appends(tmp_path):
    seg = _new_segment(tmp_path)
    seg.close()
    args = (bytearray(build_batch([b"x"])), 0, 10**6, NEVER, NEVER, _never, check_compressed_batch)
    with pytest.raises(OSError, match="closed"):  # the segment does not open it again
        seg.append_leader(*args)
    with pytest.raises(ValueError, match="closed"):  # nor does the C side write to no file
        SegmentAppender.append_leader(seg, *args)


def test_segment_append_checks_continuity(tmp_path):
    seg = _new_segment(tmp_path)
    b = bytearray(build_batch([b"x"] * 3))
    stamp(b, 0, 0, 0)
    seg.append(b)
    stamp(b, 0, 7, 0)
    with pytest.raises(ValueError, match="next offset 3"):
        seg.append(b)
