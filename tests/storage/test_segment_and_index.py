import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minikafka.storage.offset_index import CorruptIndexError, OffsetIndex
from minikafka.storage.record_batch import build_batch, check_compressed_batch, stamp
from minikafka.storage.segment import LogSegment


def fill(seg: LogSegment, batches: int, per_batch: int = 4) -> list[tuple[int, int]]:
    """Append batches; returns (base offset, position) of each."""
    out = []
    offset = seg.next_offset
    for i in range(batches):
        b = bytearray(build_batch([b"x" * 50] * per_batch, timestamp=1000 + i))
        stamp(b, 0, offset, 0)
        out.append((offset, seg.size))
        seg.append(b)
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
    # The time rule of a reopened segment counts from its first batch's timestamp, which the
    # append side reads back from the file when it first needs it.
    assert again._first_batch_timestamp is None
    late = bytearray(build_batch([b"z"], timestamp=1500))
    assert (
        again.append_leader(late, 0, 10**6, 10**6, 500, lambda: 0, check_compressed_batch) is None
    )
    assert again._first_batch_timestamp == 1000


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


def _walk_read(seg: LogSegment, start: int, max_size: int, max_offset: int | None, min_one: bool):
    """Reference: walk every batch header from the start of the segment."""
    chosen = []
    for pos, h in seg.batches():
        if h.last_offset < start:
            continue
        if max_offset is not None and h.last_offset >= max_offset:
            break
        taken = sum(c[1].size_in_bytes for c in chosen)
        if taken + h.size_in_bytes > max_size and not (min_one and not chosen):
            break
        chosen.append((pos, h))
    if not chosen:
        return None
    return chosen[0][0], sum(h.size_in_bytes for _, h in chosen), chosen[0][1].base_offset


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    counts=st.lists(st.integers(1, 6), min_size=1, max_size=25),
    interval=st.sampled_from([0, 50, 200, 4096]),
    data=st.data(),
)
def test_read_with_index_jumps_equals_walking_every_header(tmp_path, counts, interval, data):
    """The index lets a read skip headers; the slice must be exactly the header walk's:
    whole batches, within max_size (at least one if asked), none at or past max_offset."""
    d = Path(tempfile.mkdtemp(dir=tmp_path))
    seg = LogSegment.create(d, 10, interval, 0)
    offset = 10
    for i, n in enumerate(counts):
        b = bytearray(build_batch([b"y" * (10 * n)] * n, timestamp=1000 + i))
        stamp(b, 0, offset, 0)
        seg.append(b)
        offset += n
    start = data.draw(st.integers(10, offset))
    max_size = data.draw(st.integers(1, seg.size + 100))
    max_offset = data.draw(st.none() | st.integers(10, offset + 1))
    min_one = data.draw(st.booleans())
    got = seg.read(start, max_size, max_offset, min_one)
    want = _walk_read(seg, start, max_size, max_offset, min_one)
    assert (None if got is None else (got.position, got.size, got.first_offset)) == want
    seg.close()
