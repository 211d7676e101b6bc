import pytest

from minikafka.common import TopicPartition
from minikafka.storage.checkpoint import OffsetCheckpointFile
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_manager import (
    CLEAN_SHUTDOWN_FILE,
    LogDirFormatError,
    LogDirInUseError,
    LogManager,
)

from .conftest import batch

TP0, TP1 = TopicPartition("orders", 0), TopicPartition("orders", 1)


def manager(tmp_path, clock, dirs=("d1",), **kw):
    m = LogManager([tmp_path / d for d in dirs], LogConfig(segment_bytes=1000), clock=clock, **kw)
    m.startup()
    return m


def test_clean_shutdown_writes_marker_and_checkpoints(tmp_path, clock):
    m = manager(tmp_path, clock)
    lg = m.get_or_create_log(TP0)
    for _ in range(20):
        lg.append_as_leader(batch(3), 0)
    lg.update_high_watermark(42)
    m.shutdown()
    d = tmp_path / "d1"
    assert (d / CLEAN_SHUTDOWN_FILE).exists()
    assert OffsetCheckpointFile(d / "replication-offset-checkpoint").read() == {TP0: 42}
    assert OffsetCheckpointFile(d / "recovery-point-offset-checkpoint").read() == {TP0: 60}

    m2 = manager(tmp_path, clock)
    assert m2.had_clean_shutdown[d]
    assert not (d / CLEAN_SHUTDOWN_FILE).exists()  # a crash from now on is unclean
    lg2 = m2.get_log(TP0)
    assert (lg2.log_end_offset, lg2.high_watermark) == (60, 42)
    assert lg2.load_report.recovered_segments == 0
    m2.shutdown()


def test_crash_recovers_from_recovery_point_and_clamps_hw(tmp_path, clock):
    m = manager(tmp_path, clock)
    lg = m.get_or_create_log(TP0)
    for _ in range(20):
        lg.append_as_leader(batch(3), 0)
    lg.update_high_watermark(60)
    m.checkpoint_high_watermarks()
    m.checkpoint_recovery_points_and_log_starts()
    active = lg.active_segment.log_path
    m.close_without_shutdown()
    with open(active, "r+b") as f:  # tear the unflushed tail
        f.truncate(active.stat().st_size - 7)
    m2 = manager(tmp_path, clock)
    lg2 = m2.get_log(TP0)
    assert not m2.had_clean_shutdown[tmp_path / "d1"]
    assert lg2.log_end_offset == 57
    assert lg2.high_watermark == 57  # checkpointed HW 60 clamped to the recovered LEO
    assert lg2.load_report.recovered_segments == 1  # only from the recovery point on
    m2.shutdown()


def test_corrupt_checkpoints_fall_back_safely_and_say_which_file(tmp_path, clock, caplog):
    m = manager(tmp_path, clock)
    lg = m.get_or_create_log(TP0)
    for _ in range(20):
        lg.append_as_leader(batch(3), 0)
    m.shutdown()
    (tmp_path / "d1" / "recovery-point-offset-checkpoint").write_text("0\n1\norders zero 5\n")
    (tmp_path / "d1" / CLEAN_SHUTDOWN_FILE).unlink()
    m2 = manager(tmp_path, clock)
    assert "recovery-point-offset-checkpoint, line 3" in caplog.text
    assert m2.get_log(TP0).load_report.recovered_segments == len(m2.get_log(TP0).segments)
    assert m2.get_log(TP0).log_end_offset == 60
    m2.shutdown()


def test_new_logs_spread_over_dirs_and_delete_removes_files(tmp_path, clock):
    m = manager(tmp_path, clock, dirs=("a", "b"))
    m.get_or_create_log(TP0)
    m.get_or_create_log(TP1)
    assert (tmp_path / "a" / "orders-0").is_dir() != (tmp_path / "b" / "orders-0").is_dir()
    assert {p.parent.name for p in tmp_path.glob("*/orders-*")} == {"a", "b"}
    assert m.delete_log(TP0)
    assert not list(tmp_path.glob("*/orders-0*"))
    assert m.get_log(TP0) is None
    m.shutdown()


def test_log_dir_lock_prevents_two_managers(tmp_path, clock):
    m = manager(tmp_path, clock)
    with pytest.raises(LogDirInUseError):
        manager(tmp_path, clock)
    m.shutdown()
    manager(tmp_path, clock).shutdown()


def test_leftover_delete_dirs_are_removed_at_startup(tmp_path, clock):
    (tmp_path / "d1" / "orders-3.abc-delete").mkdir(parents=True)
    (tmp_path / "d1" / "not a partition").mkdir()
    m = manager(tmp_path, clock)
    assert not (tmp_path / "d1" / "orders-3.abc-delete").exists()
    assert m.all_logs() == {}
    m.shutdown()


def test_retention_pass_updates_log_start_checkpoint(tmp_path, clock):
    m = LogManager([tmp_path / "d1"], LogConfig(segment_bytes=1000, retention_bytes=0), clock=clock)
    m.startup()
    lg = m.get_or_create_log(TP0)
    for _ in range(20):
        lg.append_as_leader(batch(3), 0)
    lg.update_high_watermark(lg.log_end_offset)
    assert m.cleanup_logs() > 0
    starts = OffsetCheckpointFile(tmp_path / "d1" / "log-start-offset-checkpoint").read()
    assert starts[TP0] == lg.log_start_offset > 0
    # The removed segments' files wait file.delete.delay.ms (Kafka's 60 s) as *.deleted.
    waiting = list(lg.dir.glob("*.deleted"))
    assert waiting and m.delete_retired_files() == 0
    clock.advance(60_000)
    assert m.delete_retired_files() == len(waiting)
    assert not list(lg.dir.glob("*.deleted"))
    m.shutdown()


# --- many logs at once, periodic checkpoints of idle logs --------------------------------


def test_many_logs_created_together_are_registered_once_and_survive_a_crash(tmp_path, clock):
    m = manager(tmp_path, clock, dirs=("a", "b"))
    existing = m.get_or_create_log(TP0)
    tps = {TopicPartition("many", p): None for p in range(300)}
    tps[TP0] = None  # already there: returned as it is
    created, failed = m.create_logs(tps)
    assert failed == {}
    assert set(created) == set(tps) and created[TP0] is existing
    assert m.all_logs() == created
    # Spread evenly over the dirs (TP0 included), each log in the dir it is registered in.
    per_dir = {d: len(list((tmp_path / d).glob("many-*"))) for d in ("a", "b")}
    assert sorted(per_dir.values()) == [150, 150]
    for tp, lg in created.items():
        assert lg.dir.is_dir() and lg.dir.name == str(tp)
        assert [s.base_offset for s in lg.segments] == [0]
    with pytest.raises(ValueError):
        m.add_log(TopicPartition("many", 0), tmp_path / "a", created[TopicPartition("many", 0)])
    created[TopicPartition("many", 299)].append_as_leader(batch(3), 0)
    m.close_without_shutdown()  # a crash

    m2 = manager(tmp_path, clock, dirs=("a", "b"))
    assert set(m2.all_logs()) == set(tps)
    assert m2.get_log(TopicPartition("many", 299)).log_end_offset == 3
    m2.shutdown()


def test_logs_opened_concurrently_from_threads_then_added(tmp_path, clock):
    import threading

    m = manager(tmp_path, clock, dirs=("a", "b", "c"))
    tps = [TopicPartition("conc", p) for p in range(120)]
    dirs = m.dirs_for_new_logs(tps)
    assert {d.name: list(dirs.values()).count(d) for d in set(dirs.values())} == {
        "a": 40,
        "b": 40,
        "c": 40,
    }
    opened = {}
    barrier = threading.Barrier(8)

    def open_share(share):
        barrier.wait()
        for tp in share:
            opened[tp] = m.open_new_log(tp, dirs[tp])

    threads = [threading.Thread(target=open_share, args=(tps[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert m.all_logs() == {}  # opened, not registered yet
    m.sync_log_dirs(dirs.values())
    for tp in tps:
        m.add_log(tp, dirs[tp], opened[tp])
    assert set(m.all_logs()) == set(tps)
    # The next new log goes to the dir with the fewest logs, as counted by add_log.
    assert m.dirs_for_new_logs([TP0]) == {TP0: tmp_path / "a"}
    m.shutdown()
    m2 = manager(tmp_path, clock, dirs=("a", "b", "c"))
    assert set(m2.all_logs()) == set(tps)
    m2.shutdown()


def test_periodic_checkpoints_of_unchanged_offsets_rewrite_nothing(tmp_path, clock):
    m = manager(tmp_path, clock)
    for p in range(50):
        m.get_or_create_log(TopicPartition("idle", p))
    lg = m.get_or_create_log(TP0)
    lg.append_as_leader(batch(3), 0)
    lg.update_high_watermark(3)
    m.checkpoint_high_watermarks()
    m.checkpoint_recovery_points_and_log_starts()
    d = tmp_path / "d1"
    names = ("replication-offset-checkpoint", "recovery-point-offset-checkpoint")
    before = {n: (d / n).stat() for n in names}
    for _ in range(3):
        m.checkpoint_high_watermarks()
        m.checkpoint_recovery_points_and_log_starts()
    after = {n: (d / n).stat() for n in names}
    assert {n: (s.st_ino, s.st_mtime_ns) for n, s in after.items()} == {
        n: (s.st_ino, s.st_mtime_ns) for n, s in before.items()
    }
    # One HW moves: that file is rewritten, the other stays.
    lg.append_as_leader(batch(3), 0)
    lg.update_high_watermark(6)
    m.checkpoint_high_watermarks()
    m.checkpoint_recovery_points_and_log_starts()
    hw = d / "replication-offset-checkpoint"
    assert hw.stat().st_ino != before[names[0]].st_ino
    assert OffsetCheckpointFile(hw).read()[TP0] == 6
    rp = d / "recovery-point-offset-checkpoint"
    assert (rp.stat().st_ino, rp.stat().st_mtime_ns) == (
        before[names[1]].st_ino,
        before[names[1]].st_mtime_ns,
    )
    m.shutdown()
    assert OffsetCheckpointFile(rp).read()[TP0] == 6  # shutdown writes what changed


def test_a_log_dir_from_the_msgpack_record_format_is_refused_and_a_new_one_is_marked(
    tmp_path, clock
):
    old = tmp_path / "old"
    (old / "orders-0").mkdir(parents=True)  # logs, and no record format line: from before
    with pytest.raises(LogDirFormatError, match="earlier record format"):
        LogManager([old], LogConfig(), clock=clock).startup()
    m = manager(tmp_path, clock)
    m.get_or_create_log(TP0).append_as_leader(batch(2), 0)
    m.shutdown()
    assert "minikafka.record.format=kafka-v2" in (tmp_path / "d1" / "meta.properties").read_text()
    again = manager(tmp_path, clock)  # marked: its logs load
    assert again.get_log(TP0).log_end_offset == 2
    again.shutdown()


def test_a_clean_shutdown_syncs_each_filesystem_once_not_each_file(tmp_path, clock, monkeypatch):
    """Every log's last writes (index entries, leader-epoch checkpoint, producer snapshot)
    go out without an fsync each and are made durable by one syncfs per filesystem, before
    the marker: the fsyncs do not grow with the number of logs."""
    import os

    from minikafka.storage import checkpoint

    m = manager(tmp_path, clock, dirs=("a", "b"))
    tps = [TopicPartition("many", p) for p in range(60)]
    for tp in tps:
        lg = m.get_or_create_log(tp)
        for _ in range(5):
            lg.append_as_leader(batch(3), 7)  # epoch 7: a leader-epoch checkpoint to write
    fsyncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd))[1])
    synced: list[object] = []
    real_sync = checkpoint.sync_filesystem

    def recording_sync(path):
        synced.append((path, (path / CLEAN_SHUTDOWN_FILE).exists()))
        real_sync(path)

    monkeypatch.setattr(checkpoint, "sync_filesystem", recording_sync)
    m.shutdown()
    # Both dirs are on tmp_path's filesystem: one syncfs, made before either marker.
    assert len(synced) == 1 and synced[0][1] is False
    # The fixed checkpoint files of two dirs, however many logs there are.
    assert len(fsyncs) <= 16, len(fsyncs)

    m2 = manager(tmp_path, clock, dirs=("a", "b"))
    assert all(m2.had_clean_shutdown.values())
    for tp in tps:
        lg2 = m2.get_log(tp)
        assert lg2.log_end_offset == 15
        assert lg2.latest_epoch() == 7
        assert lg2.load_report.recovered_segments == 0
        assert (lg2.dir / "leader-epoch-checkpoint").read_text().splitlines() == ["0", "1", "7 0"]
    m2.shutdown()
