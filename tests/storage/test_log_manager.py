import pytest

from minikafka.common import TopicPartition
from minikafka.storage.checkpoint import OffsetCheckpointFile
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_manager import CLEAN_SHUTDOWN_FILE, LogDirInUseError, LogManager

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
    m.shutdown()
