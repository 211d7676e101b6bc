import struct

import pytest

from minikafka.storage.offset_index import CorruptIndexError, OffsetIndex
from minikafka.storage.record_batch import build_batch, stamp
from minikafka.storage.segment import LogSegment


def fill(seg: LogSegment, batches: int, per_batch: int = 4) -> list[tuple[int, int]]:
    """Append batches; returns (base offset, position) of each."""
    out = []
    offset = seg.next_offset
    for i in range(batches):
        b = bytearray(build_batch([b"x" * 50] * per_batch, timestamp=1000 + i))
        stamp(b, 0, offset, 0)
        out.append((offset, seg.size))
        seg.append(b, offset + per_batch - 1, 1000 + i)
        offset += per_batch
    return out


def test_file_names_are_20_digit_base_offsets(tmp_path):
    seg = LogSegment.create(tmp_path, 1234, 4096, 0)
    assert seg.log_path.name == "00000000000000001234.log"
    assert seg.index.path.name == "00000000000000001234.index"


def test_sparse_index_one_entry_per_interval_and_lookup(tmp_path):
    seg = LogSegment.create(tmp_path, 100, 300, 0)
    placed = fill(seg, 20)
    entries = seg.index.entries()
    assert 0 < len(entries) < 20
    for off, pos in entries:
        # each entry maps a batch's last offset to that batch's start
        batch_start = dict((p, o) for o, p in placed)[pos]
        assert off == batch_start + 3
    for base, pos in placed:
        for target in range(base, base + 4):
            assert seg.translate_offset(target)[0] == pos


def test_read_returns_whole_batches_within_max_size_and_at_least_one(tmp_path):
    seg = LogSegment.create(tmp_path, 0, 4096, 0)
    placed = fill(seg, 10)
    size = placed[1][1]
    s = seg.read(5, max_size=size * 3 - 1)
    assert (s.position, s.size, s.first_offset) == (placed[1][1], size * 2, 4)
    s = seg.read(5, max_size=1)
    assert s.size == size  # one batch even if larger than max_size
    assert seg.read(5, max_size=1, min_one_batch=False) is None
    assert seg.read(40, 10_000) is None


def test_read_never_crosses_max_offset(tmp_path):
    seg = LogSegment.create(tmp_path, 0, 4096, 0)
    placed = fill(seg, 10)
    s = seg.read(0, 10**6, max_offset=12)
    assert s.size == placed[3][1]  # batches 0-3, 4-7, 8-11
    assert seg.read(12, 10**6, max_offset=12) is None


def test_index_flush_load_and_sanity_checks(tmp_path):
    idx = OffsetIndex(tmp_path / "0.index", 0)
    idx.append(3, 0)
    idx.append(9, 500)
    idx.flush()
    again = OffsetIndex(tmp_path / "0.index", 0)
    again.load(log_size=1000)
    assert again.entries() == [(3, 0), (9, 500)]
    with pytest.raises(CorruptIndexError):
        again.load(log_size=400)  # points past the log
    (tmp_path / "0.index").write_bytes(b"\x00" * 7)
    with pytest.raises(CorruptIndexError):
        again.load(log_size=1000)
    (tmp_path / "0.index").write_bytes(struct.pack(">iiii", 9, 500, 3, 600))
    with pytest.raises(CorruptIndexError):
        again.load(log_size=1000)
    with pytest.raises(ValueError):
        idx.append(9, 800)


def test_truncate_to_cuts_at_the_batch_holding_the_offset(tmp_path):
    seg = LogSegment.create(tmp_path, 0, 100, 0)
    placed = fill(seg, 10)
    removed = seg.truncate_to(21)
    assert seg.size == placed[5][1]
    assert removed > 0 and seg.next_offset == 20
    assert all(pos < seg.size for _, pos in seg.index.entries())
    assert seg.truncate_to(500) == 0


def test_open_existing_finds_next_offset_from_tail(tmp_path):
    seg = LogSegment.create(tmp_path, 0, 200, 0)
    fill(seg, 7)
    seg.flush()
    seg.close()
    again = LogSegment.open_existing(tmp_path, 0, 200, 0)
    assert not again.needs_recovery
    assert again.next_offset == 28


def test_open_existing_with_missing_index_needs_recovery_which_rebuilds_it(tmp_path):
    seg = LogSegment.create(tmp_path, 0, 200, 0)
    fill(seg, 7)
    seg.flush()
    entries = seg.index.entries()
    seg.close()
    (tmp_path / "00000000000000000000.index").unlink()
    again = LogSegment.open_existing(tmp_path, 0, 200, 0)
    assert again.needs_recovery
    result = again.recover()
    assert result.truncated_bytes == 0 and result.next_offset == 28
    assert again.index.entries() == entries


def test_largest_timestamp_from_headers(tmp_path):
    seg = LogSegment.create(tmp_path, 0, 200, 0)
    fill(seg, 5)
    seg.close()
    again = LogSegment.open_existing(tmp_path, 0, 200, 0)
    assert again.largest_timestamp() == 1004
    assert again.first_batch_timestamp() == 1000


def test_open_existing_indexes_a_tail_the_index_file_never_saw(tmp_path):
    seg = LogSegment.create(tmp_path, 0, 200, 0)
    fill(seg, 3)
    seg.flush()
    fill(seg, 20)  # appended after the last index flush, then a crash
    full = seg.index.entries()
    seg.close()
    again = LogSegment.open_existing(tmp_path, 0, 200, 0)
    assert again.next_offset == 92
    assert again.index.entries() == full
