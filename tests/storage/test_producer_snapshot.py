"""Producer state snapshots (storage/producer_snapshot.py, Kafka's ProducerStateManager
snapshot files) and producer.id.expiration.ms: the format (Kafka's bytes, round trips,
damage detected), which snapshots a log loads and deletes, and a log that writes them on
roll and close, loads the latest one and replays only what follows, falls back past a
corrupt one, deletes them on truncation and retention, and forgets idle producers."""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minikafka.clock import ManualClock
from minikafka.common import TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.protocol.errors import InvalidConfigError, OutOfOrderSequenceError
from minikafka.storage.log import Log
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_files import read_batches
from minikafka.storage.log_manager import LogManager
from minikafka.storage.producer_snapshot import (
    CorruptSnapshotError,
    decode_snapshot,
    encode_snapshot,
    needs_snapshot,
    snapshot_to_load,
    stale_snapshots,
    usable_snapshots,
)
from minikafka.storage.producer_state import (
    MAX_SEQUENCE,
    BatchMetadata,
    ProducerEntry,
    ProducerStateManager,
    last_sequence,
)
from minikafka.storage.record_batch import RecordBatchBuilder

NOW_MS = ManualClock().now_ms()
DAY_MS = 24 * 60 * 60 * 1000
CONFIG = LogConfig(segment_bytes=1000, index_interval_bytes=100)


# --- the format -------------------------------------------------------------------------


def _entry(pid: int, epoch: int, batches: list[BatchMetadata]) -> ProducerEntry:
    return ProducerEntry(pid, epoch, deque(batches, maxlen=5))


@st.composite
def batch_metadata(draw: st.DrawFn) -> BatchMetadata:
    first_seq = draw(st.integers(0, MAX_SEQUENCE))
    n = draw(st.integers(1, 100_000))
    first_offset = draw(st.integers(0, 2**62))
    return BatchMetadata(
        first_seq,
        last_sequence(first_seq, n),
        first_offset,
        first_offset + n - 1,
        draw(st.integers(-1, 2**62)),
    )


entries_strategy = st.dictionaries(
    st.integers(0, 2**63 - 1),
    st.tuples(st.integers(0, 2**15 - 1), st.lists(batch_metadata(), max_size=5)),
    max_size=20,
).map(lambda d: [_entry(pid, epoch, batches) for pid, (epoch, batches) in sorted(d.items())])


@settings(max_examples=300)
@given(entries=entries_strategy)
def test_a_snapshot_round_trips_each_producers_epoch_and_last_batch(
    entries: list[ProducerEntry],
) -> None:
    """As Kafka's, a snapshot holds each producer's last batch only."""
    decoded = decode_snapshot(encode_snapshot(entries))
    assert decoded == [_entry(e.producer_id, e.epoch, list(e.batches)[-1:]) for e in entries]


def test_the_bytes_are_kafkas_snapshot_version_1() -> None:
    data = encode_snapshot([_entry(7, 3, [BatchMetadata(10, 14, 100, 104, 1234)])])
    body = struct.pack(">i", 1) + struct.pack(">qhiqiqiq", 7, 3, 14, 104, 4, 1234, -1, -1)
    assert data == struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    assert encode_snapshot([]) == struct.pack(">hIi", 1, crc32c.crc32c(b"\0\0\0\0"), 0)


def test_the_first_sequence_wraps_below_zero_as_kafkas_decrement_sequence() -> None:
    wrapped = BatchMetadata(MAX_SEQUENCE - 1, 1, 50, 53, 0)  # MAX-1, MAX, 0, 1
    assert decode_snapshot(encode_snapshot([_entry(1, 0, [wrapped])]))[0].batches[0] == wrapped


@settings(max_examples=300)
@given(entries=entries_strategy.filter(bool), data=st.data())
def test_a_damaged_or_truncated_snapshot_is_detected(
    entries: list[ProducerEntry], data: st.DataObject
) -> None:
    good = encode_snapshot(entries)
    at = data.draw(st.integers(0, len(good) - 1))
    flipped = bytearray(good)
    flipped[at] ^= data.draw(st.integers(1, 255))
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(bytes(flipped))
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(good[:at])
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(good + b"\0")


def test_a_crc_valid_entry_that_describes_no_batch_is_refused() -> None:
    body = struct.pack(">i", 1) + struct.pack(">qhiqiqiq", 7, 0, 5, 3, 9, 0, -1, -1)
    with pytest.raises(CorruptSnapshotError, match="describe no batch"):
        decode_snapshot(struct.pack(">hI", 1, crc32c.crc32c(body)) + body)


# --- which snapshots to load, delete, write ---------------------------------------------------


def test_which_snapshots_a_log_loads_and_deletes() -> None:
    offsets = [10, 40, 70, 100]
    # First segment at 40, LEO 80: 10 is below what is on disk, 100 above the LEO.
    assert usable_snapshots(offsets, 40, 80) == [40, 70]
    assert snapshot_to_load(offsets, 40, 80) == 70
    assert stale_snapshots(offsets, 40, 80) == [10, 100]
    assert snapshot_to_load(offsets, 71, 80) is None
    assert snapshot_to_load([], 0, 80) is None
    assert snapshot_to_load(offsets, 0, 100) == 100  # at the LEO: nothing to replay


def test_when_a_snapshot_is_written() -> None:
    assert needs_snapshot([40], 70, 0)
    assert not needs_snapshot([40, 70], 70, 0)  # there already
    assert not needs_snapshot([], 0, 0)  # an empty log: nothing to replay anyway
    assert not needs_snapshot([], 30, 30)


# --- expiry (pure) ------------------------------------------------------------------------


def test_a_producer_idle_for_the_expiration_time_is_removed() -> None:
    s = ProducerStateManager()
    s.update(1, 0, 0, 0, 0, 0, 1_000)
    s.update(2, 0, 0, 0, 1, 1, 5_000)
    assert s.remove_expired(now_ms=1_000 + 9_999, expiration_ms=10_000) == []
    assert s.remove_expired(now_ms=1_000 + 10_000, expiration_ms=10_000) == [1]  # Kafka's >=
    assert set(s.producers) == {2}
    # Forgotten, the producer is accepted at any sequence, as a new one.
    assert s.check_leader_append(1, 0, 777, 777) is None


# --- a log that snapshots its producer state ------------------------------------------------


def _idempotent(pid: int, epoch: int, seq: int, n: int, ts: int = NOW_MS) -> bytes:
    builder = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    for i in range(n):
        builder.append(f"p{pid}-{seq + i}".encode(), None, ts)
    return builder.build()


class Producers:
    """Idempotent producers writing in turn to a leader's log."""

    def __init__(self, lg: Log, pids: tuple[int, ...] = (11, 12, 13)) -> None:
        self.lg = lg
        self.pids = pids
        self.next_seq = dict.fromkeys(pids, 0)
        self.turn = 0

    def send(self, batches: int, n: int = 2) -> None:
        for _ in range(batches):
            pid = self.pids[self.turn % len(self.pids)]
            self.turn += 1
            self.lg.append_as_leader(_idempotent(pid, 0, self.next_seq[pid], n), 0)
            self.next_seq[pid] += n


def _open(log_dir: Path, clock: ManualClock, config: LogConfig = CONFIG, **kw: Any) -> Log:
    return Log.open(log_dir, config, clock=clock, **kw)


def _reopen_clean(lg: Log, clock: ManualClock) -> Log:
    lg.close()
    return _open(
        lg.dir, clock, lg.config, recovery_point=lg.log_end_offset, had_clean_shutdown=True
    )


def _full_scan(log_dir: Path) -> ProducerStateManager:
    """The state from every batch header on disk (what the log did before snapshots)."""
    state = ProducerStateManager()
    tp = TopicPartition.parse_dir_name(log_dir.name)
    for h, _ in read_batches(log_dir.parent, tp):
        if h.producer_id >= 0:
            state.update(
                h.producer_id,
                h.producer_epoch,
                h.base_sequence,
                last_sequence(h.base_sequence, h.record_count),
                h.base_offset,
                h.last_offset,
                h.max_timestamp,
            )
    return state


def _assert_state_matches_full_scan(lg: Log) -> None:
    """Same producers and epochs; each producer's batches a suffix of the full scan's (a
    snapshot keeps only the last batch; those replayed after it come on top)."""
    full = _full_scan(lg.dir)
    assert set(lg.producer_state.producers) == set(full.producers)
    for pid, entry in lg.producer_state.producers.items():
        expected = full.producers[pid]
        assert entry.epoch == expected.epoch
        assert entry.batches, pid
        assert list(entry.batches) == list(expected.batches)[-len(entry.batches) :], pid


def _batches_from(log_dir: Path, offset: int) -> int:
    tp = TopicPartition.parse_dir_name(log_dir.name)
    return sum(1 for h, _ in read_batches(log_dir.parent, tp) if h.base_offset >= offset)


def _snapshot_files(log_dir: Path) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in log_dir.glob("*.snapshot"))


# `clock` (a ManualClock) and `log_dir` are conftest.py's fixtures.


def test_each_roll_writes_a_snapshot_of_the_state_at_the_new_segments_base(
    log_dir: Path, clock: ManualClock
) -> None:
    lg = _open(log_dir, clock)
    Producers(lg).send(40)
    bases = [seg.base_offset for seg in lg.segments]
    assert len(bases) >= 4
    assert lg.producer_snapshot_offsets == bases[1:] == _snapshot_files(log_dir)
    assert not list(log_dir.glob("*.tmp"))
    # The snapshot at a roll holds each producer's last batch below that offset.
    tp = TopicPartition.parse_dir_name(log_dir.name)
    for base in bases[1:]:
        last: dict[int, tuple[int, int]] = {}
        for h, _ in read_batches(log_dir.parent, tp):
            if h.base_offset < base:
                last[h.producer_id] = (h.base_offset, h.last_offset)
        entries = decode_snapshot((log_dir / f"{base:020d}.snapshot").read_bytes())
        assert {
            e.producer_id: (e.batches[0].first_offset, e.batches[0].last_offset) for e in entries
        } == last


def test_a_clean_reopen_loads_the_close_snapshot_and_replays_nothing(
    log_dir: Path, clock: ManualClock
) -> None:
    lg = _open(log_dir, clock)
    producers = Producers(lg)
    producers.send(40)
    leo = lg.log_end_offset
    reopened = _reopen_clean(lg, clock)
    assert leo in reopened.producer_snapshot_offsets
    assert reopened.last_producer_state_rebuild == (leo, 0, 0)
    _assert_state_matches_full_scan(reopened)
    for entry in reopened.producer_state.producers.values():
        assert len(entry.batches) == 1
    # Closing again without appends does not rewrite it.
    mtime = (log_dir / f"{leo:020d}.snapshot").stat().st_mtime_ns
    reopened.close()
    assert (log_dir / f"{leo:020d}.snapshot").stat().st_mtime_ns == mtime


@pytest.mark.parametrize("clean", [True, False])
def test_a_reopen_after_a_crash_replays_only_the_batches_after_the_latest_snapshot(
    log_dir: Path, clock: ManualClock, clean: bool
) -> None:
    lg = _open(log_dir, clock)
    producers = Producers(lg)
    producers.send(40)
    latest = lg.producer_snapshot_offsets[-1]
    assert latest == lg.active_segment.base_offset
    lg.flush()
    lg.close_without_flush()  # no snapshot at the LEO: a crash
    if clean:  # recovery has nothing to re-validate
        reopened = _open(log_dir, clock, recovery_point=lg.log_end_offset, had_clean_shutdown=True)
    else:  # recovery re-validates every segment; the producer state still starts at `latest`
        reopened = _open(log_dir, clock)
    rebuild = reopened.last_producer_state_rebuild
    assert rebuild.snapshot_offset == latest
    assert rebuild.batches_replayed == _batches_from(log_dir, latest) > 0
    assert rebuild.batches_replayed < _batches_from(log_dir, 0)
    _assert_state_matches_full_scan(reopened)


def test_after_a_reopen_a_retry_of_the_last_batch_is_a_duplicate_and_a_gap_is_refused(
    log_dir: Path, clock: ManualClock
) -> None:
    lg = _open(log_dir, clock)
    producers = Producers(lg)
    producers.send(20)
    pid = producers.pids[0]
    seq = producers.next_seq[pid]
    first = lg.append_as_leader(_idempotent(pid, 0, seq, 3), 0)
    reopened = _reopen_clean(lg, clock)
    leo = reopened.log_end_offset
    retry = reopened.append_as_leader(_idempotent(pid, 0, seq, 3), 0)
    assert (retry.first_offset, retry.last_offset, retry.num_records) == (
        first.first_offset,
        first.last_offset,
        0,
    )
    assert reopened.log_end_offset == leo
    with pytest.raises(OutOfOrderSequenceError):
        reopened.append_as_leader(_idempotent(pid, 0, seq + 4, 1), 0)
    assert reopened.append_as_leader(_idempotent(pid, 0, seq + 3, 1), 0).first_offset == leo
    # Another producer's last batch (written before the close) is a duplicate too.
    other = producers.pids[1]
    last_other = reopened.producer_state.producers[other].batches[-1]
    again = reopened.append_as_leader(
        _idempotent(other, 0, last_other.first_seq, last_other.last_seq - last_other.first_seq + 1),
        0,
    )
    assert (again.first_offset, again.num_records) == (last_other.first_offset, 0)


def test_truncation_below_snapshots_deletes_them_and_rebuilds_from_an_older_one(
    log_dir: Path, clock: ManualClock
) -> None:
    lg = _open(log_dir, clock)
    producers = Producers(lg)
    producers.send(50)
    snapshots = lg.producer_snapshot_offsets
    assert len(snapshots) >= 3
    # A batch boundary between the first two snapshots.
    target = next(
        h.next_offset
        for h, _ in read_batches(log_dir.parent, lg.topic_partition)
        if snapshots[0] < h.next_offset < snapshots[1]
    )
    assert lg.truncate_to(target)
    assert lg.log_end_offset == target
    assert lg.producer_snapshot_offsets == [snapshots[0]] == _snapshot_files(log_dir)
    rebuild = lg.last_producer_state_rebuild
    assert rebuild.snapshot_offset == snapshots[0]
    assert rebuild.batches_replayed == _batches_from(log_dir, snapshots[0])
    _assert_state_matches_full_scan(lg)
    # The next in-sequence batch of each producer (as of the truncation) is accepted.
    for pid, entry in lg.producer_state.producers.items():
        lg.append_as_leader(_idempotent(pid, 0, entry.last_seq + 1, 1), 0)
    # And a reopen agrees.
    _assert_state_matches_full_scan(_reopen_clean(lg, clock))


def test_truncation_to_a_snapshots_offset_keeps_it(log_dir: Path, clock: ManualClock) -> None:
    lg = _open(log_dir, clock)
    Producers(lg).send(40)
    snapshots = lg.producer_snapshot_offsets
    lg.truncate_to(snapshots[1])
    assert lg.producer_snapshot_offsets == snapshots[:2]
    assert lg.last_producer_state_rebuild == (snapshots[1], 0, 0)
    _assert_state_matches_full_scan(lg)


def test_truncation_to_the_first_segment_deletes_every_snapshot(
    log_dir: Path, clock: ManualClock
) -> None:
    lg = _open(log_dir, clock)
    Producers(lg).send(40)
    lg.truncate_to(0)
    assert lg.producer_snapshot_offsets == [] == _snapshot_files(log_dir)
    assert len(lg.producer_state) == 0


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-1] + bytes([data[-1] ^ 1]),  # a flipped bit: bad CRC
        lambda data: data[:9],  # truncated
        lambda data: b"",  # empty
    ],
    ids=["flipped", "truncated", "empty"],
)
def test_a_corrupt_latest_snapshot_is_deleted_and_an_older_one_used(
    log_dir: Path, clock: ManualClock, damage: Callable[[bytes], bytes]
) -> None:
    lg = _open(log_dir, clock)
    Producers(lg).send(40)
    leo = lg.log_end_offset
    roll_snapshot = lg.producer_snapshot_offsets[-1]
    lg.close()
    path = log_dir / f"{leo:020d}.snapshot"
    path.write_bytes(damage(path.read_bytes()))
    reopened = _open(log_dir, clock, recovery_point=leo, had_clean_shutdown=True)
    assert not path.exists()
    assert reopened.producer_snapshot_offsets[-1] == roll_snapshot
    assert reopened.last_producer_state_rebuild == (
        roll_snapshot,
        _batches_from(log_dir, roll_snapshot),
        1,
    )
    _assert_state_matches_full_scan(reopened)


def test_with_every_snapshot_corrupt_the_state_comes_from_a_full_scan(
    log_dir: Path, clock: ManualClock
) -> None:
    lg = _open(log_dir, clock)
    Producers(lg).send(40)
    lg.close()
    snapshots = _snapshot_files(log_dir)
    for offset in snapshots:
        (log_dir / f"{offset:020d}.snapshot").write_bytes(b"\x00\x01garbage")
    reopened = _open(log_dir, clock, recovery_point=lg.log_end_offset, had_clean_shutdown=True)
    assert reopened.last_producer_state_rebuild == (None, _batches_from(log_dir, 0), len(snapshots))
    assert _snapshot_files(log_dir) == []
    full = _full_scan(log_dir)
    assert reopened.producer_state.producers == full.producers


def test_snapshots_above_the_recovered_log_end_are_deleted_on_open(
    log_dir: Path, clock: ManualClock
) -> None:
    lg = _open(log_dir, clock)
    Producers(lg).send(40)
    snapshots = lg.producer_snapshot_offsets
    lg.close_without_flush()
    # A crash tore the second segment: recovery cuts it and deletes the later ones, and
    # the snapshots from the second segment's end on describe batches the log no longer has.
    second = sorted(log_dir.glob("*.log"))[1]
    with open(second, "r+b") as f:
        f.truncate(second.stat().st_size // 2)
    reopened = _open(log_dir, clock)
    assert snapshots[0] < reopened.log_end_offset < snapshots[1]
    assert reopened.producer_snapshot_offsets == [snapshots[0]] == _snapshot_files(log_dir)
    _assert_state_matches_full_scan(reopened)


def test_retention_deletes_the_snapshots_below_the_log_start(
    log_dir: Path, clock: ManualClock
) -> None:
    lg = _open(log_dir, clock)
    Producers(lg).send(50)
    snapshots = lg.producer_snapshot_offsets
    lg.update_high_watermark(lg.log_end_offset)
    # DeleteRecords inside the third segment: the first two go, and the snapshots below the
    # third one's base; the one at its base stays (replaying from it reads batches still on
    # disk, though below the log start offset).
    assert lg.maybe_increment_log_start_offset(snapshots[1] + 1)
    assert lg.delete_old_segments() == 2
    assert lg.segments[0].base_offset == snapshots[1]
    assert lg.producer_snapshot_offsets == snapshots[1:] == _snapshot_files(log_dir)
    # Reopened (without the close snapshot) it loads the latest of the rest.
    lg.flush()
    lg.close_without_flush()
    reopened = _open(
        log_dir,
        clock,
        log_start_offset=snapshots[1] + 1,
        recovery_point=lg.log_end_offset,
        had_clean_shutdown=True,
    )
    assert reopened.last_producer_state_rebuild.snapshot_offset == snapshots[-1]
    _assert_state_matches_full_scan(reopened)


def test_an_empty_log_writes_no_snapshot_at_close(log_dir: Path, clock: ManualClock) -> None:
    lg = _open(log_dir, clock)
    lg.close()
    assert _snapshot_files(log_dir) == []


def test_a_non_idempotent_log_snapshots_an_empty_state(log_dir: Path, clock: ManualClock) -> None:
    lg = _open(log_dir, clock)
    for _ in range(3):
        b = RecordBatchBuilder()
        b.append(b"x" * 400, None, NOW_MS)
        lg.append_as_leader(b.build(), 0)
    assert lg.producer_snapshot_offsets
    reopened = _reopen_clean(lg, clock)
    assert reopened.last_producer_state_rebuild.batches_replayed == 0
    assert len(reopened.producer_state) == 0


# --- producer.id.expiration.ms -----------------------------------------------------------


def test_an_expired_producer_is_forgotten_and_its_next_batch_is_a_new_producers(
    log_dir: Path, clock: ManualClock
) -> None:
    lg = _open(log_dir, clock, LogConfig(producer_id_expiration_ms=60_000))
    lg.append_as_leader(_idempotent(1, 0, 0, 2, ts=clock.now_ms()), 0)
    clock.advance(30_000)
    lg.append_as_leader(_idempotent(2, 0, 0, 2, ts=clock.now_ms()), 0)
    clock.advance(29_999)
    assert lg.remove_expired_producers() == 0
    with pytest.raises(OutOfOrderSequenceError):
        lg.append_as_leader(_idempotent(1, 0, 50, 1, ts=clock.now_ms()), 0)
    clock.advance(1)
    assert lg.remove_expired_producers() == 1
    assert set(lg.producer_state.producers) == {2}
    # Any sequence is accepted from it now, as from a producer the log never saw.
    info = lg.append_as_leader(_idempotent(1, 0, 50, 1, ts=clock.now_ms()), 0)
    assert (info.first_offset, info.num_records) == (4, 1)
    assert lg.producer_state.producers[1].last_seq == 50


def test_a_snapshot_holds_no_expired_producer_and_a_load_drops_the_ones_expired_since(
    log_dir: Path, clock: ManualClock
) -> None:
    config = LogConfig(producer_id_expiration_ms=60_000)
    lg = _open(log_dir, clock, config)
    lg.append_as_leader(_idempotent(1, 0, 0, 1, ts=clock.now_ms()), 0)
    clock.advance(40_000)
    lg.append_as_leader(_idempotent(2, 0, 0, 1, ts=clock.now_ms()), 0)
    clock.advance(20_000)
    assert lg.remove_expired_producers() == 1
    lg.close()
    entries = decode_snapshot((log_dir / f"{lg.log_end_offset:020d}.snapshot").read_bytes())
    assert [e.producer_id for e in entries] == [2]
    clock.advance(40_000)  # producer 2's last batch is 60 s old now
    reopened = _open(log_dir, clock, config, recovery_point=2, had_clean_shutdown=True)
    assert len(reopened.producer_state) == 0


def test_the_log_managers_retention_pass_expires_producers(
    tmp_path: Path, clock: ManualClock
) -> None:
    config = LogConfig(segment_bytes=1000, producer_id_expiration_ms=DAY_MS)
    m = LogManager([tmp_path / "d1"], config, clock=clock)
    m.startup()
    lg = m.get_or_create_log(TopicPartition("orders", 0))
    lg.append_as_leader(_idempotent(1, 0, 0, 1, ts=clock.now_ms()), 0)
    m.cleanup_logs()
    assert len(lg.producer_state) == 1
    clock.advance(DAY_MS)
    m.cleanup_logs()
    assert len(lg.producer_state) == 0
    m.shutdown()


def test_producer_id_expiration_ms_is_a_broker_config() -> None:
    cfg = BrokerConfig.from_properties({"broker.id": "1", "producer.id.expiration.ms": "1000"})
    assert cfg.log_config().producer_id_expiration_ms == 1000
    assert BrokerConfig(broker_id=1).log_config().producer_id_expiration_ms == DAY_MS
    for bad in ("0", "-5"):
        with pytest.raises(
            InvalidConfigError, match=r"producer\.id\.expiration\.ms must be a positive"
        ):
            BrokerConfig.from_properties({"broker.id": "1", "producer.id.expiration.ms": bad})
    with pytest.raises(InvalidConfigError, match=r"invalid value for producer\.id\.expiration\.ms"):
        BrokerConfig.from_properties({"broker.id": "1", "producer.id.expiration.ms": "1d"})
    # Broker-wide, as in Kafka: no topic-level override.
    with pytest.raises(InvalidConfigError, match="unknown topic config"):
        cfg.log_config().with_overrides({"producer.id.expiration.ms": "5"})


# --- a property: whatever happens, the loaded state agrees with a full scan --------------------


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["send", "send", "send", "close", "crash", "truncate"]),
            st.integers(0, 2),
            st.integers(1, 4),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_the_loaded_state_always_agrees_with_a_full_scan(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int, int]]
) -> None:
    log_dir = tmp_path_factory.mktemp("p") / "t-0"
    clock = ManualClock()
    lg = _open(log_dir, clock)
    for op, p, n in steps:
        if op == "send":
            entry = lg.producer_state.producers.get(p)
            seq = entry.last_seq + 1 if entry is not None else 0
            lg.append_as_leader(_idempotent(p, 0, seq, n), 0)
        elif op == "close":
            lg = _reopen_clean(lg, clock)
        elif op == "crash":
            lg.flush()
            lg.close_without_flush()
            lg = _open(log_dir, clock, recovery_point=lg.log_end_offset)
        elif lg.log_end_offset > 0:
            lg.truncate_to(lg.log_end_offset * p // 3)
        _assert_state_matches_full_scan(lg)
        assert set(lg.producer_snapshot_offsets) == set(_snapshot_files(log_dir))
        assert all(o <= lg.log_end_offset for o in lg.producer_snapshot_offsets)
    lg.close()
