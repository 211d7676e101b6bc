"""The HW and leader-epoch checkpoints across a restart (design §5).

Already covered in tests/storage: the checkpoint file format, a clean shutdown writing the
HW checkpoint, and a checkpointed HW above a recovered (torn) LEO being clamped down to it
(test_log_manager.py::test_crash_recovers_from_recovery_point_and_clamps_hw). Here: the
broker's periodic `highwatermark-checkpoint` task, a checkpointed HW below the log start
offset, and the leader-epoch checkpoint file following truncations.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from minikafka.clock import ManualClock
from minikafka.common import TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.server.broker import KafkaServer
from minikafka.storage.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
)
from minikafka.storage.log import Log
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_manager import LogManager
from minikafka.storage.record_batch import build_batch

TP = TopicPartition("t", 0)


def batch(n: int = 3) -> bytes:
    return build_batch([f"v{i}".encode() for i in range(n)])


def manager(log_dir: Path, clock: ManualClock, config: LogConfig | None = None) -> LogManager:
    m = LogManager([log_dir], config or LogConfig(), clock=clock)
    m.startup()
    return m


async def wait_for(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail("condition not met in time")
        await asyncio.sleep(0.01)


async def test_hw_checkpoint_task_writes_replication_offset_checkpoint(tmp_path: Path) -> None:
    """The broker's `highwatermark-checkpoint` task (every
    replica.high.watermark.checkpoint.interval.ms) writes each partition's current HW."""
    config = BrokerConfig(
        broker_id=1,
        log_dirs=(str(tmp_path / "d"),),
        replica_high_watermark_checkpoint_interval_ms=20,
    )
    server = KafkaServer(config, clock=ManualClock())  # no ZooKeeper needed for this
    server.log_manager.startup()
    lg = server.log_manager.get_or_create_log(TP)
    lg.append_as_leader(batch(5), 0)
    lg.update_high_watermark(2)
    checkpoint = OffsetCheckpointFile(tmp_path / "d" / REPLICATION_OFFSET_CHECKPOINT)
    assert not checkpoint.path.exists()
    server._start_periodic_tasks()
    try:
        await wait_for(lambda: checkpoint.read() == {TP: 2})
        lg.update_high_watermark(5)  # the next run writes the new HW
        await wait_for(lambda: checkpoint.read() == {TP: 5})
    finally:
        for t in server._tasks:
            t.cancel()
        await asyncio.gather(*server._tasks, return_exceptions=True)
        server.log_manager.close_without_shutdown()


def test_restart_hw_below_log_start_is_clamped_up(tmp_path: Path) -> None:
    """§5: HW = clamp(checkpoint, log start, LEO). The HW checkpoint is up to 5 s old;
    retention meanwhile moved the log start past it (and checkpointed the log start at
    once). After a crash the HW comes back as the log start, never below it."""
    clock = ManualClock()
    d = tmp_path / "d"
    m = manager(d, clock, LogConfig(segment_bytes=1000, retention_bytes=0, retention_ms=-1))
    lg = m.get_or_create_log(TP)
    for _ in range(20):
        lg.append_as_leader(batch(), 0)
    lg.update_high_watermark(10)
    m.checkpoint_high_watermarks()  # the periodic task ran at HW 10
    lg.update_high_watermark(lg.log_end_offset)
    assert m.cleanup_logs() > 0
    start, leo = lg.log_start_offset, lg.log_end_offset
    assert 10 < start < leo
    assert OffsetCheckpointFile(d / LOG_START_OFFSET_CHECKPOINT).read() == {TP: start}
    assert OffsetCheckpointFile(d / REPLICATION_OFFSET_CHECKPOINT).read() == {TP: 10}
    m.close_without_shutdown()  # crash: no HW checkpoint on the way out

    again = manager(d, clock).get_log(TP)
    assert again is not None
    assert (again.log_start_offset, again.log_end_offset) == (start, leo)
    assert again.high_watermark == start


def test_restart_hw_below_a_follower_restart_offset_is_clamped_up(tmp_path: Path) -> None:
    """A follower far behind the leader's log start drops its log and continues at the
    leader's log start (§9, out of range); it crashes before any checkpoint is rewritten.
    Its log now starts at 500, so the old HW checkpoint (3) comes back as 500."""
    clock = ManualClock()
    d = tmp_path / "d"
    m = manager(d, clock)
    lg = m.get_or_create_log(TP)
    lg.append_as_follower(build_batch([b"a", b"b", b"c"], base_offset=0, partition_leader_epoch=0))
    lg.update_high_watermark(3)
    m.checkpoint_high_watermarks()
    m.checkpoint_recovery_points_and_log_starts()
    lg.truncate_fully_and_start_at(500)
    lg.append_as_follower(build_batch([b"x"], base_offset=500, partition_leader_epoch=4))
    m.close_without_shutdown()

    again = manager(d, clock).get_log(TP)
    assert again is not None
    assert (again.log_start_offset, again.log_end_offset) == (500, 501)
    assert again.high_watermark == 500
    assert [(e.epoch, e.start_offset) for e in again.leader_epoch_cache.entries] == [(4, 500)]


def _on_disk(lg: Log) -> list[tuple[int, int]]:
    entries = LeaderEpochCheckpointFile(lg.dir / LEADER_EPOCH_CHECKPOINT).read()
    return [(e.epoch, e.start_offset) for e in entries]


def _in_memory(lg: Log) -> list[tuple[int, int]]:
    return [(e.epoch, e.start_offset) for e in lg.leader_epoch_cache.entries]


def test_leader_epoch_checkpoint_follows_truncation_on_disk(tmp_path: Path) -> None:
    """§5/§9: truncate_to removes epoch entries starting at or after the truncation point,
    and the leader-epoch-checkpoint file is rewritten with them, not left for the next
    restart to fix; a truncation inside an epoch keeps it, and one at the LEO still drops an
    epoch that starts there."""
    clock = ManualClock()
    lg = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=1000), clock=clock)
    for i in range(10):  # epochs 0, 1, 2 start at 0, 12, 24 (4 batches of 3 records each)
        lg.append_as_leader(batch(), i // 4 if i < 8 else 2)
    # New epochs are written by the flush that moves the recovery point past them.
    assert _on_disk(lg) == []
    lg.flush()
    assert _on_disk(lg) == _in_memory(lg) == [(0, 0), (1, 12), (2, 24)]
    assert lg.log_end_offset == 30

    lg.truncate_to(27)  # inside epoch 2: nothing to remove
    assert _on_disk(lg) == _in_memory(lg) == [(0, 0), (1, 12), (2, 24)]
    lg.truncate_to(24)  # exactly where epoch 2 began
    assert _on_disk(lg) == _in_memory(lg) == [(0, 0), (1, 12)]
    lg.truncate_to(15)
    assert _on_disk(lg) == _in_memory(lg) == [(0, 0), (1, 12)]
    lg.truncate_to(9)
    assert _on_disk(lg) == _in_memory(lg) == [(0, 0)]

    # A crash now: the reopened log has exactly the truncated history.
    lg.close_without_flush()
    again = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=1000), clock=clock)
    assert again.log_end_offset == 9
    assert _on_disk(again) == _in_memory(again) == [(0, 0)]
    # This broker leads epoch 4 and writes nothing (its cache says (4, 9)), then follows a
    # leader whose history continues epoch 0: reconciling truncates to 9, which changes no
    # record but must drop (4, 9), in memory and on disk (Kafka's truncateTo does too).
    again.leader_epoch_cache.assign(4, 9)
    assert _in_memory(again) == [(0, 0), (4, 9)]
    assert not again.truncate_to(9)
    assert _on_disk(again) == _in_memory(again) == [(0, 0)]
    again.append_as_follower(build_batch([b"x"], base_offset=9, partition_leader_epoch=0))
    assert _on_disk(again) == [(0, 0)]
    # The next epoch starts where the log ends.
    again.append_as_leader(batch(), 5)
    again.flush()
    assert _on_disk(again) == [(0, 0), (5, 10)]
    # Truncating everything empties the file too.
    again.truncate_to(0)
    assert _on_disk(again) == _in_memory(again) == []
    again.close()
