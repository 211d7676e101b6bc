"""All logs of one broker across its log dirs, and the per-dir checkpoint files.

Per log dir:
    .lock                               held while a broker uses the dir
    .kafka_cleanshutdown                present only after a clean shutdown
    replication-offset-checkpoint       HW per partition
    recovery-point-offset-checkpoint    recovery point per partition
    log-start-offset-checkpoint         log start offset per partition
    <topic>-<partition>/                one Log each
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from minikafka.clock import SYSTEM_CLOCK, Clock
from minikafka.common import TopicPartition
from minikafka.storage.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CorruptCheckpointError,
    OffsetCheckpointFile,
    atomic_write_text,
)
from minikafka.storage.log import Log
from minikafka.storage.log_config import LogConfig

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
DELETE_DIR_SUFFIX = "-delete"


class LogDirInUseError(Exception):
    pass


class LogManager:
    def __init__(
        self,
        log_dirs: Sequence[Path],
        default_config: LogConfig | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
        config_for_topic: Callable[[str], LogConfig] | None = None,
    ) -> None:
        if not log_dirs:
            raise ValueError("at least one log dir is needed")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.default_config = default_config or LogConfig()
        self._config_for_topic = config_for_topic
        self._clock = clock
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, Path] = {}
        self._locks: list[int] = []
        self.had_clean_shutdown: dict[Path, bool] = {}

    # --- startup -------------------------------------------------------------------------

    def startup(self) -> None:
        for d in self.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
            self._lock(d)
        for d in self.log_dirs:
            self._load_dir(d)

    def _lock(self, d: Path) -> None:
        fd = os.open(d / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LogDirInUseError(f"log dir {d} is in use by another broker") from None
        self._locks.append(fd)

    def _read_checkpoint(self, d: Path, name: str) -> dict[TopicPartition, int]:
        try:
            return OffsetCheckpointFile(d / name).read()
        except CorruptCheckpointError as e:
            # Safe fallbacks: no recovery point = re-validate everything; no log start = first
            # segment; no HW = log start (the leader moves it up again).
            log.error("%s; ignoring it", e)
            return {}

    def _load_dir(self, d: Path) -> None:
        marker = d / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        self.had_clean_shutdown[d] = clean
        recovery_points = self._read_checkpoint(d, RECOVERY_POINT_CHECKPOINT)
        log_starts = self._read_checkpoint(d, LOG_START_OFFSET_CHECKPOINT)
        hws = self._read_checkpoint(d, REPLICATION_OFFSET_CHECKPOINT)
        for child in sorted(d.iterdir()):
            if not child.is_dir():
                continue
            if child.name.endswith(DELETE_DIR_SUFFIX):
                shutil.rmtree(child, ignore_errors=True)
                continue
            try:
                tp = TopicPartition.parse_dir_name(child.name)
            except ValueError:
                log.warning("ignoring %s: not a partition directory", child)
                continue
            lg = Log.open(
                child,
                self._config(tp.topic),
                clock=self._clock,
                log_start_offset=log_starts.get(tp, 0),
                recovery_point=recovery_points.get(tp, 0),
                had_clean_shutdown=clean,
            )
            lg.update_high_watermark(hws.get(tp, 0))
            self._logs[tp] = lg
            self._dir_of[tp] = d
        reports = [self._logs[tp].load_report for tp, dd in self._dir_of.items() if dd == d]
        if not clean and reports:
            log.info(
                "%s: no clean shutdown marker; recovered %d segments of %d logs "
                "(%d invalid bytes truncated)",
                d,
                sum(r.recovered_segments for r in reports),
                len(reports),
                sum(r.truncated_bytes for r in reports),
            )
        # From now on a crash must be treated as unclean.
        marker.unlink(missing_ok=True)

    def _config(self, topic: str) -> LogConfig:
        return self._config_for_topic(topic) if self._config_for_topic else self.default_config

    # --- logs ----------------------------------------------------------------------------

    def get_log(self, tp: TopicPartition) -> Log | None:
        return self._logs.get(tp)

    def all_logs(self) -> dict[TopicPartition, Log]:
        return dict(self._logs)

    def get_or_create_log(self, tp: TopicPartition, config: LogConfig | None = None) -> Log:
        existing = self._logs.get(tp)
        if existing is not None:
            return existing
        counts = {d: 0 for d in self.log_dirs}
        for d in self._dir_of.values():
            counts[d] += 1
        d = min(self.log_dirs, key=lambda x: counts[x])
        lg = Log.open(d / str(tp), config or self._config(tp.topic), clock=self._clock)
        self._logs[tp] = lg
        self._dir_of[tp] = d
        return lg

    def delete_log(self, tp: TopicPartition) -> bool:
        """Remove a partition's log: renamed to `<tp>.<uuid>-delete` first so a crash mid-way
        leaves nothing that loads as a partition."""
        lg = self._logs.pop(tp, None)
        d = self._dir_of.pop(tp, None)
        if lg is None or d is None:
            return False
        lg.close_without_flush()
        target = d / f"{tp}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
        os.replace(lg.dir, target)
        shutil.rmtree(target, ignore_errors=True)
        return True

    # --- periodic work -------------------------------------------------------------------

    def _by_dir(self) -> dict[Path, dict[TopicPartition, Log]]:
        out: dict[Path, dict[TopicPartition, Log]] = {d: {} for d in self.log_dirs}
        for tp, lg in self._logs.items():
            out[self._dir_of[tp]][tp] = lg
        return out

    def checkpoint_high_watermarks(self) -> None:
        for d, logs in self._by_dir().items():
            OffsetCheckpointFile(d / REPLICATION_OFFSET_CHECKPOINT).write(
                {tp: lg.high_watermark for tp, lg in logs.items()}
            )

    def checkpoint_recovery_points_and_log_starts(self) -> None:
        for d, logs in self._by_dir().items():
            OffsetCheckpointFile(d / RECOVERY_POINT_CHECKPOINT).write(
                {tp: lg.recovery_point for tp, lg in logs.items()}
            )
            OffsetCheckpointFile(d / LOG_START_OFFSET_CHECKPOINT).write(
                {tp: lg.log_start_offset for tp, lg in logs.items() if lg.log_start_offset > 0}
            )

    def cleanup_logs(self, now_ms: int | None = None) -> int:
        """Retention pass over every log; returns segments deleted."""
        now = self._clock.now_ms() if now_ms is None else now_ms
        deleted = sum(lg.delete_old_segments(now) for lg in self._logs.values())
        if deleted:
            self.checkpoint_recovery_points_and_log_starts()
        return deleted

    def flush_dirty_logs(self, now_ms: int | None = None) -> int:
        now = self._clock.now_ms() if now_ms is None else now_ms
        return sum(lg.flush_if_due(now) for lg in self._logs.values())

    # --- shutdown ------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Clean shutdown: flush and close every log, write checkpoints, leave the marker."""
        self.checkpoint_high_watermarks()
        for lg in self._logs.values():
            lg.close()
        self.checkpoint_recovery_points_and_log_starts()
        for d in self.log_dirs:
            atomic_write_text(d / CLEAN_SHUTDOWN_FILE, "")
        self._release_locks()

    def close_without_shutdown(self) -> None:
        """Close files with no flush and no marker (tests simulating a crash)."""
        for lg in self._logs.values():
            lg.close_without_flush()
        self._release_locks()

    def _release_locks(self) -> None:
        for fd in self._locks:
            os.close(fd)
        self._locks.clear()
