"""The log cleaner (storage/log_cleaner.py) on real logs in a temp dir: what a pass keeps,
offsets and gaps, tombstones and their delete horizon, the cleanable range, the dirty
ratio, crash leftovers, and a log that changes under a pass."""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.clock import ManualClock
from minikafka.common import TopicPartition
from minikafka.protocol.errors import InvalidRecordError, RecordValidationError
from minikafka.storage import compression
from minikafka.storage.log import Log
from minikafka.storage.log_cleaner import (
    CLEANER_CHECKPOINT,
    STAGING_DIR,
    SegmentInfo,
    cleanable_range,
)
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_manager import LogManager
from minikafka.storage.record_batch import (
    COMPRESSION_NONE,
    RecordBatchBuilder,
    decode_all,
    iter_batches,
    parse_header,
)

TP = TopicPartition("compacted", 0)
COMPACT = LogConfig(
    segment_bytes=300,
    index_interval_bytes=100,
    cleanup_policy="compact",
    min_cleanable_dirty_ratio=0.0,
    delete_retention_ms=60_000,
)


def keyed(pairs: list[tuple[bytes | None, bytes | None]], codec: int = COMPRESSION_NONE) -> bytes:
    builder = RecordBatchBuilder()
    for key, value in pairs:
        builder.append(value, key, int(time.time() * 1000))
    return builder.build(codec)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(int(time.time() * 1000))


@pytest.fixture
def manager(tmp_path: Path, clock: ManualClock):
    lm = LogManager([tmp_path], COMPACT, clock=clock)
    lm.startup()
    yield lm
    lm.shutdown()


def produce(lg: Log, pairs: list[tuple[bytes | None, bytes | None]], codec: int = 0) -> None:
    lg.append_as_leader(keyed(pairs, codec), leader_epoch=0)
    lg.update_high_watermark(lg.log_end_offset)


def clean(lm: LogManager) -> bool:
    job = lm.prepare_cleaning()
    if job is None:
        return False
    return lm.finish_cleaning(job, job.run())


def contents(lg: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    out = []
    for seg in lg.segments:
        out += [(r.offset, r.key, r.value) for r in decode_all(seg.read_bytes(0, seg.size))]
    return out


def test_a_pass_keeps_the_latest_record_of_each_key_at_its_offset(manager: LogManager) -> None:
    lg = manager.get_or_create_log(TP, COMPACT)
    for round_ in range(6):
        produce(lg, [(b"k%d" % k, b"v%d-%d" % (k, round_)) for k in range(4)])
    produce(lg, [(b"other", b"x")])  # the active segment: never cleaned
    before = contents(lg)
    leo = lg.log_end_offset
    assert len(lg.segments) > 2
    assert clean(manager)
    after = contents(lg)
    cleanable_end = lg.segments[-2].next_offset
    latest = {key: offset for offset, key, _ in before if offset < cleanable_end}
    assert [o for o, _, _ in after if o < cleanable_end] == sorted(latest.values())
    assert [r for r in after if r[0] >= cleanable_end] == [
        r for r in before if r[0] >= cleanable_end
    ]
    assert lg.log_end_offset == leo
    # Reading from an offset that is gone gives the next record kept.
    kept = {r[0] for r in after}
    gone = next(o for o in range(leo) if o not in kept)
    assert next_record_from(lg, gone) == min(o for o in kept if o > gone)


def test_a_follower_whose_leo_falls_inside_a_merged_empty_batch_appends_the_rest(
    manager: LogManager, tmp_path: Path, clock: ManualClock
) -> None:
    """A follower fetched part of a run of batches before the leader's cleaner emptied them
    and merged the run into one empty batch: fetching from its LEO it gets that batch, which
    starts below its LEO, and appends the run's remaining offsets as an empty batch of its
    own, then the rest, as the leader has them."""
    lg = manager.get_or_create_log(TP, COMPACT)
    for round_ in range(8):
        produce(lg, [(b"same", b"v%d" % round_)])  # one-record batches, all superseded
    produce(lg, [(b"same", b"last")])
    follower = Log.open(tmp_path / "follower" / "compacted-0", COMPACT, clock=clock)
    first_two = lg.read(0, 10**6).read()
    two = [h for _, h in iter_batches(first_two)][:2]
    follower.append_as_follower(first_two[: sum(h.size_in_bytes for h in two)])
    assert follower.log_end_offset == 2
    assert clean(manager)
    fetched = lg.read(follower.log_end_offset, 10**6).read()
    head = parse_header(fetched[:61])
    assert head.base_offset < 2 <= head.last_offset and head.record_count == 0
    while follower.log_end_offset < lg.log_end_offset:
        follower.append_as_follower(lg.read(follower.log_end_offset, 10**6).read())
    # Its own two records stay until its own cleaner runs (cleaning is per replica).
    assert [r for r in contents(follower) if r[0] >= 2] == contents(lg)
    assert follower.log_end_offset == lg.log_end_offset
    data = b"".join(seg.read_bytes(0, seg.size) for seg in follower.segments)
    headers = [h for _, h in iter_batches(data)]
    for a, b in itertools.pairwise(headers):
        assert b.base_offset == a.last_offset + 1
    follower.close()


def next_record_from(lg: Log, offset: int) -> int:
    """The offset of the first record a consumer reading from `offset` gets: past empty
    batches, as Kafka's consumers move on to a batch's last offset + 1."""
    while offset < lg.log_end_offset:
        data = lg.read(offset, 10**6).read()
        records = decode_all(data)
        if records:
            return records[0].offset
        offset = max(h.next_offset for _, h in iter_batches(data))
    raise AssertionError("no record after the offset")


def test_batches_stay_contiguous_and_a_follower_and_a_restart_take_the_cleaned_log(
    manager: LogManager, tmp_path: Path, clock: ManualClock
) -> None:
    lg = manager.get_or_create_log(TP, COMPACT)
    for round_ in range(8):
        produce(lg, [(b"same", b"v%d" % round_)])  # one-record batches, all superseded
    produce(lg, [(b"same", b"last")])
    assert clean(manager)
    data = b"".join(seg.read_bytes(0, seg.size) for seg in lg.segments)
    headers = [h for _, h in iter_batches(data)]
    for a, b in itertools.pairwise(headers):
        assert b.base_offset == a.last_offset + 1
    assert any(h.record_count == 0 for h in headers)  # emptied batches merged into one
    follower = Log.open(tmp_path / "follower" / "compacted-0", COMPACT, clock=clock)
    follower.append_as_follower(data)
    assert contents(follower) == contents(lg)
    follower.close()
    again = Log.open(follower.dir, COMPACT, clock=clock, had_clean_shutdown=False)
    assert again.load_report.truncated_bytes == 0
    assert contents(again) == contents(lg)
    again.close()


def test_compressed_batches_are_rewritten_with_their_codec(manager: LogManager) -> None:
    lg = manager.get_or_create_log(TP, COMPACT)
    for round_ in range(5):
        produce(lg, [(b"a", b"a%d" % round_), (b"b%d" % round_, b"b")], compression.GZIP)
    produce(lg, [(b"z", b"z")])
    assert clean(manager)
    data = lg.segments[0].read_bytes(0, lg.segments[0].size)
    kept = [h for _, h in iter_batches(data) if h.record_count]
    assert kept and all(h.attributes & 0x07 == compression.GZIP for h in kept)
    assert {r.key for r in decode_all(data)} >= {b"b0"}


def test_tombstones_stay_until_their_segment_is_older_than_delete_retention(
    manager: LogManager, clock: ManualClock
) -> None:
    lg = manager.get_or_create_log(TP, COMPACT)
    produce(lg, [(b"gone", b"value")])
    for i in range(6):
        produce(lg, [(b"filler%d" % i, b"x" * 40)])
    produce(lg, [(b"gone", None)])  # the tombstone
    for i in range(6):
        produce(lg, [(b"more%d" % i, b"y" * 40)])
    assert clean(manager)
    kept = contents(lg)
    assert (b"gone", b"value") not in [(k, v) for _, k, v in kept]
    assert (b"gone", None) in [(k, v) for _, k, v in kept]  # not old enough yet
    # Nothing new is dirty, yet the kept tombstone's time coming up makes a pass due.
    assert manager.prepare_cleaning() is None
    clock.advance(COMPACT.delete_retention_ms + 1000)
    assert clean(manager)
    assert b"gone" not in [k for _, k, _ in contents(lg)]


def test_keyless_records_are_refused_by_a_compacted_log(manager: LogManager) -> None:
    lg = manager.get_or_create_log(TP, COMPACT)
    with pytest.raises(RecordValidationError, match="One or more records") as refused:
        lg.append_as_leader(
            keyed([(b"k", b"v"), (None, b"v"), (b"k", b"v"), (None, b"v")]), leader_epoch=0
        )
    # KIP-467: each keyless record by its index in the batch, with Kafka's message.
    why = f"Compacted topic cannot accept message without key in topic partition {TP}."
    assert refused.value.record_errors == ((1, why), (3, why))
    assert isinstance(refused.value, InvalidRecordError)
    assert lg.log_end_offset == 0
    plain = manager.get_or_create_log(TopicPartition("plain", 0), LogConfig())
    plain.append_as_leader(keyed([(None, b"v")]), leader_epoch=0)


def test_only_segments_below_the_hw_are_cleaned(manager: LogManager) -> None:
    lg = manager.get_or_create_log(TP, COMPACT)
    for round_ in range(6):
        lg.append_as_leader(keyed([(b"k", b"v%d" % round_)]), leader_epoch=0)
    assert lg.high_watermark == 0
    assert manager.prepare_cleaning() is None
    lg.update_high_watermark(lg.segments[1].base_offset)
    job = manager.prepare_cleaning()
    assert job is not None and job.range.first_uncleanable <= lg.high_watermark
    manager.finish_cleaning(job, job.run())


def test_the_dirty_ratio_and_the_checkpoint_decide_what_is_cleaned_again(
    manager: LogManager, tmp_path: Path
) -> None:
    lg = manager.get_or_create_log(TP, COMPACT)
    for round_ in range(6):
        produce(lg, [(b"k%d" % round_, b"v" * 50)])
    assert clean(manager)
    assert manager.prepare_cleaning() is None  # all cleaned: nothing dirty
    manager.write_checkpoints(manager.cleaner_checkpoints())
    text = (tmp_path / CLEANER_CHECKPOINT).read_text()
    assert f"compacted 0 {lg.segments[-2].next_offset}" in text
    lg.config = replace(COMPACT, min_cleanable_dirty_ratio=0.99)
    produce(lg, [(b"new", b"v" * 150)])
    produce(lg, [(b"new2", b"v" * 150)])
    assert manager.prepare_cleaning() is None  # dirty, but below the ratio


def test_a_log_changed_under_a_pass_is_left_as_it_is(manager: LogManager) -> None:
    lg = manager.get_or_create_log(TP, COMPACT)
    for round_ in range(6):
        produce(lg, [(b"k", b"v%d" % round_)])
    job = manager.prepare_cleaning()
    assert job is not None
    result = job.run()
    lg.truncate_to(lg.segments[0].next_offset)  # a follower truncated meanwhile
    before = contents(lg)
    assert not manager.finish_cleaning(job, result)
    assert contents(lg) == before
    assert not (lg.dir / STAGING_DIR).exists()


def test_leftovers_of_a_pass_cut_short_are_removed_on_open(
    tmp_path: Path, clock: ManualClock
) -> None:
    manager = LogManager([tmp_path], COMPACT, clock=clock)
    manager.startup()
    lg = manager.get_or_create_log(TP, COMPACT)
    for round_ in range(6):
        produce(lg, [(b"k", b"v%d" % round_)])
    job = manager.prepare_cleaning()
    assert job is not None
    job.run()  # staged, never swapped in: as if the broker died here
    before = contents(lg)
    first = lg.segments[0]
    first.index.path.unlink()  # and as if it died mid-swap, after the old index went
    manager.close_without_shutdown()
    again = Log.open(lg.dir, COMPACT, clock=clock, had_clean_shutdown=True)
    assert not (lg.dir / STAGING_DIR).exists()
    assert contents(again) == before
    again.close()


def test_retention_deletes_nothing_of_a_compact_only_log(
    manager: LogManager, clock: ManualClock
) -> None:
    cfg = replace(COMPACT, retention_ms=1)
    lg = manager.get_or_create_log(TP, cfg)
    for round_ in range(6):
        produce(lg, [(b"k%d" % round_, b"v" * 50)])
    clock.advance(10_000)
    assert lg.delete_old_segments() == 0
    lg.config = replace(cfg, cleanup_policy="compact,delete")
    assert lg.delete_old_segments() > 0


@settings(max_examples=200)
@given(
    sizes=st.lists(st.integers(1, 5), min_size=1, max_size=8),
    hw_cut=st.integers(0, 40),
    checkpoint=st.integers(0, 40),
    lag=st.integers(0, 3),
)
def test_the_cleanable_range_is_a_prefix_below_the_hw(
    sizes: list[int], hw_cut: int, checkpoint: int, lag: int
) -> None:
    segments, offset = [], 0
    for i, n in enumerate(sizes):
        segments.append(SegmentInfo(offset, offset + n, n * 100, i))
        offset += n
    r = cleanable_range(segments, hw_cut, checkpoint, now_ms=len(sizes), min_compaction_lag_ms=lag)
    if r is None:
        return
    chosen = segments[: r.count]
    assert r.count < len(segments)  # never the active segment
    assert chosen[-1].next_offset <= hw_cut
    assert all(len(sizes) - s.largest_timestamp >= lag for s in chosen) or lag == 0
    assert r.first_uncleanable == chosen[-1].next_offset
    assert segments[0].base_offset <= r.first_dirty <= r.first_uncleanable
    assert r.clean_bytes + r.dirty_bytes == sum(s.size for s in chosen)
    assert 0.0 <= r.dirty_ratio <= 1.0


def test_cleaned_segments_keep_their_modification_time(manager: LogManager) -> None:
    lg = manager.get_or_create_log(TP, COMPACT)
    for round_ in range(6):
        produce(lg, [(b"k", b"v%d" % round_)])
    old = 1_600_000_000_000_000_000
    os.utime(lg.segments[0].log_path, ns=(old, old))
    assert clean(manager)
    assert os.stat(lg.segments[0].log_path).st_mtime_ns == old


def test_a_producer_batch_must_hold_a_record_at_every_offset(manager: LogManager) -> None:
    from minikafka.protocol.errors import CorruptRecordError
    from minikafka.storage.log_cleaner import empty_batch, rebuilt_batch
    from minikafka.storage.record_batch import decode_records, parse_header

    full = keyed([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")])
    h = parse_header(full)
    thinned = rebuilt_batch(h, [r for r in decode_records(full) if r.key != b"b"])
    lg = manager.get_or_create_log(TP, COMPACT)
    for bad in (thinned, empty_batch(0, 2, 0, 0)):
        with pytest.raises(CorruptRecordError, match="record count"):
            lg.append_as_leader(bad, leader_epoch=0)
    # What the cleaner writes is a valid batch elsewhere: a follower takes it.
    lg.append_as_follower(thinned)
    assert [(r.offset, r.key) for r in decode_all(lg.read(0, 10**6).read())] == [
        (0, b"a"),
        (2, b"c"),
    ]
    assert lg.log_end_offset == 3


def test_a_truncation_makes_what_is_written_again_dirty(manager: LogManager) -> None:
    lg = manager.get_or_create_log(TP, COMPACT)
    for round_ in range(20):
        produce(lg, [(b"k%d" % round_, b"v")])
    assert clean(manager)
    first_dirty = lg.segments[-2].next_offset  # where the pass left the checkpoint
    cut = lg.segments[0].next_offset
    lg.truncate_to(cut)  # a follower diverged, below the first dirty offset
    produce(lg, [(b"j", b"1")])
    produce(lg, [(b"j", b"2")])
    js = [o for o, k, _ in contents(lg) if k == b"j"]
    assert max(js) < first_dirty  # written again where the checkpoint said "clean"
    for round_ in range(8):
        produce(lg, [(b"pad%d" % round_, b"v")])
    assert clean(manager)
    assert [(k, v) for _, k, v in contents(lg) if k == b"j"] == [(b"j", b"2")]


def test_consumer_reads_start_at_the_first_batch_that_holds_records(manager: LogManager) -> None:
    lg = manager.get_or_create_log(TP, COMPACT)
    for round_ in range(12):
        produce(lg, [(b"same", b"v%d" % round_)])  # all but the last superseded
    produce(lg, [(b"other", b"x")])
    assert clean(manager)
    assert parse_header(lg.read(0, 10**6).read()).record_count == 0  # a follower: every batch
    data = lg.read(0, 10**6, lg.high_watermark, skip_empty_batches=True).read()
    headers = [h for _, h in iter_batches(data)]
    assert headers and headers[0].record_count > 0
    assert decode_all(data)[0].key == b"same"
    # Nothing but empty batches up to the HW: nothing to answer.
    end = headers[0].base_offset
    assert lg.read(0, 10**6, end, skip_empty_batches=True).slice is None


def test_a_log_deleted_and_created_again_is_dirty_from_its_start(manager: LogManager) -> None:
    lg = manager.get_or_create_log(TP, COMPACT)
    for round_ in range(20):
        produce(lg, [(b"k%d" % round_, b"v")])
    assert clean(manager)
    assert manager.delete_log(TP)
    lg = manager.get_or_create_log(TP, COMPACT)
    for round_ in range(6):
        produce(lg, [(b"same", b"v%d" % round_)])
    assert clean(manager)
    cleanable_end = lg.segments[-2].next_offset
    assert [k for o, k, _ in contents(lg) if o < cleanable_end] == [b"same"]


# --- max.compaction.lag.ms (KIP-354) ------------------------------------------------------


def test_compaction_delay_counts_from_the_oldest_dirty_closed_segments_first_batch() -> None:
    segments = [
        SegmentInfo(0, 10, 1000, 150, first_batch_timestamp=100),  # clean (below checkpoint)
        SegmentInfo(10, 20, 1000, 250, first_batch_timestamp=200),
        SegmentInfo(20, 30, 1000, 350, first_batch_timestamp=300),
        SegmentInfo(30, 31, 10, 400, first_batch_timestamp=50),  # the active one: not counted
    ]
    r = cleanable_range(
        segments, 31, 10, now_ms=1000, min_compaction_lag_ms=0, max_compaction_lag_ms=500
    )
    assert r is not None and r.compaction_delay_ms == (1000 - 500) - 200
    r = cleanable_range(
        segments, 31, 10, now_ms=1000, min_compaction_lag_ms=0, max_compaction_lag_ms=800
    )
    assert r is not None and r.compaction_delay_ms == 0  # nothing dirty older than 800 ms
    r = cleanable_range(segments, 31, 10, now_ms=1000, min_compaction_lag_ms=0)
    assert r is not None and r.compaction_delay_ms == 0  # the default: no limit


def test_a_log_with_records_older_than_the_max_compaction_lag_is_cleaned_whatever_its_ratio(
    manager: LogManager, clock: ManualClock
) -> None:
    lazy = replace(COMPACT, min_cleanable_dirty_ratio=0.9, max_compaction_lag_ms=60_000)
    lg = manager.get_or_create_log(TP, lazy)
    for round_ in range(8):
        produce(lg, [(b"k", b"v%d" % round_), (b"pad%d" % round_, b"x" * 60)])
    assert clean(manager)  # all of it dirty: ratio 1
    for round_ in range(8, 11):
        produce(lg, [(b"k", b"v%d" % round_), (b"pad%d" % round_, b"x" * 60)])
    r = manager._cleanable_range(TP, lg, clock.now_ms())
    assert r is not None and r.dirty_bytes > 0 and r.dirty_ratio < 0.9
    assert manager.prepare_cleaning() is None  # not dirty enough, nothing overdue yet
    clock.advance(120_000)  # the new records are now older than max.compaction.lag.ms
    assert clean(manager)
    kept = [v for _, k, v in contents(lg) if k == b"k"]
    assert b"v8" not in kept and kept[-1] == b"v10"  # v8 was dirty and closed: cleaned


def test_a_compacted_logs_active_segment_rolls_by_the_max_compaction_lag(
    manager: LogManager,
) -> None:
    lg = manager.get_or_create_log(
        TP, replace(COMPACT, segment_bytes=10**6, max_compaction_lag_ms=1000)
    )
    for ts in (5000, 5999, 6000):
        batch = RecordBatchBuilder()
        batch.append(b"v", b"k", ts)
        lg.append_as_leader(batch.build(), leader_epoch=0)
    # Rolled 1000 ms after the first record (segment.ms is a week): it can be cleaned.
    assert [s.base_offset for s in lg.segments] == [0, 2]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"max.compaction.lag.ms": "0"}, "Value must be at least 1"),
        (
            {"min.compaction.lag.ms": "5000", "max.compaction.lag.ms": "1000"},
            r"min\.compaction\.lag\.ms \(5000\) > max\.compaction\.lag\.ms \(1000\)",
        ),
    ],
)
def test_bad_compaction_lags_are_refused(overrides: dict[str, str], message: str) -> None:
    from minikafka.protocol.errors import InvalidConfigError

    with pytest.raises(InvalidConfigError, match=message):
        LogConfig().with_overrides(overrides)
