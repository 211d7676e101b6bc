"""All logs of one broker across its log dirs, and the per-dir checkpoint files.

Per log dir:
    .lock                               held while a broker uses the dir
    meta.properties                     the record format of the dir's logs
    .kafka_cleanshutdown                present only after a clean shutdown
    replication-offset-checkpoint       HW per partition
    recovery-point-offset-checkpoint    recovery point per partition
    log-start-offset-checkpoint         log start offset per partition
    cleaner-offset-checkpoint           first dirty offset per compacted partition
    <topic>-<partition>/                one Log each
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
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
    fsync_dir,
    sync_filesystems,
)
from minikafka.storage.log import Log
from minikafka.storage.log_cleaner import (
    CLEANER_CHECKPOINT,
    CleanableRange,
    CleanStats,
    PassResult,
    SegmentSource,
    clean_segments,
    cleanable_range,
    close_sources,
    discard_staging,
)
from minikafka.storage.log_config import LogConfig
from minikafka.storage.open_files import OpenFiles

log = logging.getLogger(__name__)

# Offsets to write, per checkpoint file: taken on the event loop, written in a thread.
# (file, offsets, time.monotonic_ns() when they were read)
CheckpointWrites = list[tuple[OffsetCheckpointFile, dict[TopicPartition, int], int]]

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
DELETE_DIR_SUFFIX = "-delete"


# Threads that create logs (and write checkpoints) in parallel, so that their fsyncs
# overlap (concurrent fsyncs share journal commits). Not more: the rest of creating a log
# is short syscalls between Python code, and more threads than this only queue for the
# GIL (measured: 8 threads created 5,000 logs more slowly than 4 on 2 cores).
IO_THREADS = 4


class LogDirInUseError(Exception):
    pass


class LogDirFormatError(Exception):
    """A log dir whose logs hold records in a format this version does not read."""


META_PROPERTIES = "meta.properties"
# Kafka's v2 records. Before, records inside the (same) batch header were msgpack arrays;
# a dir without this line and with logs in it is from then.
RECORD_FORMAT_LINE = "minikafka.record.format=kafka-v2"


def _is_log_dir(path: Path) -> bool:
    try:
        TopicPartition.parse_dir_name(path.name)
    except ValueError:
        return False
    return True


@dataclass
class CleaningJob:
    """One pass of the log cleaner over one log: chosen and set up on the event loop
    (`LogManager.prepare_cleaning`), run in a thread (`run`), swapped in on the loop
    (`LogManager.finish_cleaning`)."""

    tp: TopicPartition
    log: Log
    range: CleanableRange
    sources: list[SegmentSource]
    now_ms: int
    stop: threading.Event
    started: float = 0.0  # time.monotonic() when prepared

    def run(self) -> PassResult:
        cfg = self.log.config
        return clean_segments(
            self.log.dir,
            self.sources,
            self.range.first_dirty,
            self.now_ms,
            cfg.delete_retention_ms,
            cfg.index_interval_bytes,
            self.stop.is_set,
        )


class LogManager:
    def __init__(
        self,
        log_dirs: Sequence[Path],
        default_config: LogConfig | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
        config_for_topic: Callable[[str], LogConfig] | None = None,
        open_files: OpenFiles | None = None,
    ) -> None:
        if not log_dirs:
            raise ValueError("at least one log dir is needed")
        # Every log's segment files share it (log.open.files.max); None: each segment
        # holds its file open.
        self.open_files = open_files
        self.log_dirs = [Path(d) for d in log_dirs]
        self.default_config = default_config or LogConfig()
        self._config_for_topic = config_for_topic
        self._clock = clock
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, Path] = {}
        self._logs_in_dir: dict[Path, int] = {d: 0 for d in self.log_dirs}
        self._locks: list[int] = []
        self.had_clean_shutdown: dict[Path, bool] = {}
        # One object per checkpoint file: each skips rewriting unchanged offsets.
        self._checkpoints: dict[tuple[Path, str], OffsetCheckpointFile] = {}
        self._io_executor: ThreadPoolExecutor | None = None
        # The log cleaner's state: the first dirty offset of each compacted log (its
        # checkpoint), when a log's kept tombstones may go, and what it did so far.
        self._first_dirty: dict[TopicPartition, int] = {}
        # Logs with retired segments' files waiting for file.delete.delay.ms.
        self._retiring: set[TopicPartition] = set()
        self._tombstones_due_ms: dict[TopicPartition, int] = {}
        self._cleaner_stop = threading.Event()
        self.cleaner_stats = CleanStats()
        self.cleaner_passes = 0
        self.last_clean_seconds = 0.0  # of the last pass: prepared to swapped in
        self.last_recopy_ratio = 0.0  # bytes written / bytes read by the last pass

    # --- startup -------------------------------------------------------------------------

    def startup(self) -> None:
        for d in self.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
            self._lock(d)
        for d in self.log_dirs:
            self._check_record_format(d)
        for d in self.log_dirs:
            self._load_dir(d)

    def _check_record_format(self, d: Path) -> None:
        """Refuse a dir whose logs are in the earlier msgpack record format (no migration:
        its records would reach clients as undecodable batches); mark a new one."""
        meta = d / META_PROPERTIES
        lines = meta.read_text().splitlines() if meta.is_file() else []
        if RECORD_FORMAT_LINE in lines:
            return
        has_logs = any(
            child.is_dir() and not child.name.endswith(DELETE_DIR_SUFFIX) and _is_log_dir(child)
            for child in d.iterdir()
        )
        if has_logs:
            raise LogDirFormatError(
                f"log dir {d} holds logs in minikafka's earlier record format (msgpack "
                "records), which this version does not read: its records are Kafka's v2 "
                "records now. Move the dir away (or delete it) and start with an empty one."
            )
        atomic_write_text(meta, f"version=0\n{RECORD_FORMAT_LINE}\n")

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
        self._first_dirty.update(self._read_checkpoint(d, CLEANER_CHECKPOINT))
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
                open_files=self.open_files,
            )
            lg.update_high_watermark(hws.get(tp, 0))
            self._register(tp, d, lg)
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
        d = self.dirs_for_new_logs([tp])[tp]
        lg = self.open_new_log(tp, d, config)
        fsync_dir(d)
        return self.add_log(tp, d, lg)

    # Creating many logs at once (a LeaderAndIsr for thousands of new partitions): choose
    # their dirs (`dirs_for_new_logs`), open them (`open_new_log`, no fsync), then
    # `sync_log_dirs` once per dir, then register them (`add_log`).

    def dirs_for_new_logs(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, Path]:
        """Where each new log goes: in turn, the log dir holding the fewest logs, counting
        those placed by this call (Kafka's nextLogDirs)."""
        counts = dict(self._logs_in_dir)
        out: dict[TopicPartition, Path] = {}
        for tp in tps:
            d = min(self.log_dirs, key=lambda x: counts[x])
            counts[d] += 1
            out[tp] = d
        return out

    def open_new_log(
        self, tp: TopicPartition, log_dir: Path, config: LogConfig | None = None
    ) -> Log:
        """Create (or open) `tp`'s log in `log_dir` without registering it; touches nothing
        shared, so it may run in any thread. The partition directory
        is durable only after `sync_log_dirs`."""
        return Log.open(
            log_dir / str(tp),
            config or self._config(tp.topic),
            clock=self._clock,
            open_files=self.open_files,
        )

    def sync_log_dirs(self, log_dirs: Iterable[Path]) -> None:
        """fsync these log dirs: the partition directories created in them survive a crash
        (one fsync for however many logs were created)."""
        for d in set(log_dirs):
            fsync_dir(d)

    def add_log(self, tp: TopicPartition, log_dir: Path, lg: Log) -> Log:
        """Register a log opened with `open_new_log`."""
        if tp in self._logs:
            raise ValueError(f"{tp} already has a log")
        self._register(tp, log_dir, lg)
        return lg

    def _register(self, tp: TopicPartition, d: Path, lg: Log) -> None:
        self._logs[tp] = lg
        self._dir_of[tp] = d
        self._logs_in_dir[d] = self._logs_in_dir.get(d, 0) + 1

    @property
    def io_executor(self) -> Executor:
        """Worker threads for log file work (created on first use, shut down with us)."""
        if self._io_executor is None:
            self._io_executor = ThreadPoolExecutor(IO_THREADS, thread_name_prefix="log-io")
        return self._io_executor

    def create_logs(
        self, tps: Mapping[TopicPartition, LogConfig | None]
    ) -> tuple[dict[TopicPartition, Log], dict[TopicPartition, Exception]]:
        """Create these new logs (blocking the caller): (created, failed). Logs that exist
        already are returned as they are. One after another: a log is a few metadata
        syscalls, which worker threads would make no faster (each waits for the GIL)."""
        created = {tp: self._logs[tp] for tp in tps if tp in self._logs}
        new = [tp for tp in tps if tp not in self._logs]
        dirs = self.dirs_for_new_logs(new)
        failed: dict[TopicPartition, Exception] = {}
        opened: dict[TopicPartition, Log] = {}
        for tp in new:
            try:
                opened[tp] = self.open_new_log(tp, dirs[tp], tps[tp])
            except Exception as e:
                failed[tp] = e
        self.sync_log_dirs(dirs[tp] for tp in opened)
        for tp, lg in opened.items():
            created[tp] = self.add_log(tp, dirs[tp], lg)
        return created, failed

    def delete_log(self, tp: TopicPartition) -> bool:
        """Remove a partition's log: renamed to `<tp>.<uuid>-delete` first so a crash mid-way
        leaves nothing that loads as a partition."""
        lg = self._logs.pop(tp, None)
        d = self._dir_of.pop(tp, None)
        # A log created again under this name starts dirty from its first offset.
        self._first_dirty.pop(tp, None)
        self._tombstones_due_ms.pop(tp, None)
        if lg is None or d is None:
            return False
        self._logs_in_dir[d] -= 1
        lg.close_without_flush()
        target = d / f"{tp}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
        os.replace(lg.dir, target)
        shutil.rmtree(target, ignore_errors=True)
        return True

    # --- periodic work -------------------------------------------------------------------

    def logs_by_dir(self) -> dict[Path, dict[TopicPartition, Log]]:
        """Each log dir (every one, empty or not) with the logs in it."""
        return self._by_dir()

    def _by_dir(self) -> dict[Path, dict[TopicPartition, Log]]:
        out: dict[Path, dict[TopicPartition, Log]] = {d: {} for d in self.log_dirs}
        for tp, lg in self._logs.items():
            out[self._dir_of[tp]][tp] = lg
        return out

    def _checkpoint(self, d: Path, name: str) -> OffsetCheckpointFile:
        key = (d, name)
        file = self._checkpoints.get(key)
        if file is None:
            file = self._checkpoints[key] = OffsetCheckpointFile(d / name)
        return file

    # Each checkpoint file is rewritten only when its offsets changed since we last wrote it.
    # The periodic checkpoints take their offsets on the event loop (`*_checkpoints`, no I/O)
    # and write them in a thread (`write_checkpoints`): an fsync can wait for the disk to
    # take every dirty page of the logs first (ext4's ordered journal), tens or hundreds of
    # milliseconds under load, which no request should wait behind (Kafka writes them on
    # its scheduler's threads, never a request handler's).

    def high_watermark_checkpoints(self) -> CheckpointWrites:
        taken = time.monotonic_ns()
        return [
            (
                self._checkpoint(d, REPLICATION_OFFSET_CHECKPOINT),
                {tp: lg.high_watermark for tp, lg in logs.items()},
                taken,
            )
            for d, logs in self._by_dir().items()
        ]

    def recovery_point_and_log_start_checkpoints(self) -> CheckpointWrites:
        out: CheckpointWrites = []
        taken = time.monotonic_ns()
        for d, logs in self._by_dir().items():
            out.append(
                (
                    self._checkpoint(d, RECOVERY_POINT_CHECKPOINT),
                    {tp: lg.recovery_point for tp, lg in logs.items()},
                    taken,
                )
            )
            out.append(
                (
                    self._checkpoint(d, LOG_START_OFFSET_CHECKPOINT),
                    {tp: lg.log_start_offset for tp, lg in logs.items() if lg.log_start_offset > 0},
                    taken,
                )
            )
        return out

    @staticmethod
    def write_checkpoints(writes: CheckpointWrites) -> None:
        """Write offsets taken by `*_checkpoints` (safe from any thread: each file's writes
        are serialised, the later offsets win, and the offsets are a copy)."""
        for file, offsets, taken_ns in writes:
            file.write(offsets, taken_ns)

    def checkpoint_high_watermarks(self) -> None:
        self.write_checkpoints(self.high_watermark_checkpoints())

    def checkpoint_recovery_points_and_log_starts(self) -> None:
        self.write_checkpoints(self.recovery_point_and_log_start_checkpoints())

    def cleanup_logs(self, now_ms: int | None = None) -> int:
        """Retention pass over every log, and the expiry of idle producers
        (`remove_expired_producers`); returns segments deleted."""
        now = self._clock.now_ms() if now_ms is None else now_ms
        deleted = 0
        for tp, lg in self._logs.items():
            n = lg.delete_old_segments(now)
            if n and lg.retired_files:
                self._retiring.add(tp)
            deleted += n
        if deleted:
            self.checkpoint_recovery_points_and_log_starts()
        self.remove_expired_producers(now)
        return deleted

    def delete_retired_files(self, now_ms: int | None = None) -> int:
        """Delete the files of segments retention removed whose file.delete.delay.ms has
        passed (the broker's file-deletion task); returns how many files went."""
        now = self._clock.now_ms() if now_ms is None else now_ms
        deleted = 0
        for tp in list(self._retiring):
            lg = self._logs.get(tp)
            if lg is not None:
                deleted += lg.delete_retired_files(now)
            if lg is None or not lg.retired_files:
                self._retiring.discard(tp)
        return deleted

    def remove_expired_producers(self, now_ms: int | None = None) -> int:
        """Forget in every log the idempotent producers idle for `producer.id.expiration.ms`
        (Kafka checks every `producer.id.expiration.check.interval.ms`, 10 minutes; here the
        log-retention task does, every `log.retention.check.interval.ms`, 5 minutes).
        Returns how many were forgotten."""
        now = self._clock.now_ms() if now_ms is None else now_ms
        return sum(lg.remove_expired_producers(now) for lg in self._logs.values())

    def flush_dirty_logs(self, now_ms: int | None = None) -> int:
        now = self._clock.now_ms() if now_ms is None else now_ms
        return sum(lg.flush_if_due(now) for lg in self._logs.values())

    # --- log cleaner (log_cleaner.py) -----------------------------------------------------

    def prepare_cleaning(self, now_ms: int | None = None) -> CleaningJob | None:
        """The next pass: the compacted log with the largest dirty ratio among those at or
        above their min.cleanable.dirty.ratio, those with a dirty record older than their
        max.compaction.lag.ms (KIP-354), and those whose kept tombstones are due; None if
        none."""
        now = self._clock.now_ms() if now_ms is None else now_ms
        best: tuple[TopicPartition, Log, CleanableRange] | None = None
        for tp, lg in self._logs.items():
            r = self._cleanable_range(tp, lg, now)
            if r is None:
                continue
            cfg = lg.config
            due = self._tombstones_due_ms.get(tp)
            dirty_enough = r.dirty_bytes > 0 and (
                r.dirty_ratio >= cfg.min_cleanable_dirty_ratio or r.compaction_delay_ms > 0
            )
            if not dirty_enough and (due is None or due > now):
                continue
            if best is None or r.dirty_ratio > best[2].dirty_ratio:
                best = (tp, lg, r)
        if best is None:
            return None
        tp, lg, r = best
        return CleaningJob(
            tp, lg, r, lg.sources_for_cleaning(r.count), now, self._cleaner_stop, time.monotonic()
        )

    def max_dirty_ratio(self, now_ms: int | None = None) -> float:
        """The largest dirty ratio of the compacted logs (Kafka's max-dirty-percent / 100)."""
        now = self._clock.now_ms() if now_ms is None else now_ms
        ranges = (self._cleanable_range(tp, lg, now) for tp, lg in self._logs.items())
        return max((r.dirty_ratio for r in ranges if r is not None), default=0.0)

    def _cleanable_range(self, tp: TopicPartition, lg: Log, now_ms: int) -> CleanableRange | None:
        """What of a compacted log a pass may clean now (None: nothing, or not compacted).
        A truncation below the log's first dirty offset moves that down first (Kafka's
        maybeTruncateCheckpoint): what is written again there is dirty."""
        if lg.truncated_to is not None:
            if tp in self._first_dirty:
                self._first_dirty[tp] = min(self._first_dirty[tp], lg.truncated_to)
            lg.truncated_to = None
        if not lg.config.compact:
            return None
        return cleanable_range(
            lg.segment_infos(),
            lg.high_watermark,
            self._first_dirty.get(tp, lg.log_start_offset),
            now_ms,
            lg.config.min_compaction_lag_ms,
            lg.config.max_compaction_lag_ms,
        )

    def finish_cleaning(self, job: CleaningJob, result: PassResult | None) -> bool:
        """Swap a pass's segments in (on the event loop) and move the log's first dirty
        offset on; False if the pass failed (`result` None) or the log changed meanwhile.
        The staged files go either way."""
        close_sources(job.sources)
        try:
            if (
                result is None
                or self._logs.get(job.tp) is not job.log
                or not job.log.replace_cleaned_segments(job.sources, result.cleaned)
            ):
                return False
        finally:
            discard_staging(job.log.dir)
        self._first_dirty[job.tp] = job.range.first_uncleanable
        if result.tombstones_due_ms is None:
            self._tombstones_due_ms.pop(job.tp, None)
        else:
            self._tombstones_due_ms[job.tp] = result.tombstones_due_ms
        stats = self.cleaner_stats
        for name in ("bytes_read", "bytes_written", "records_read", "records_removed"):
            setattr(stats, name, getattr(stats, name) + getattr(result.stats, name))
        self.cleaner_passes += 1
        self.last_clean_seconds = time.monotonic() - job.started
        read = result.stats.bytes_read
        self.last_recopy_ratio = result.stats.bytes_written / read if read else 0.0
        return True

    def cleaner_checkpoints(self) -> CheckpointWrites:
        """The first dirty offsets to write (`write_checkpoints`), per log dir."""
        taken = time.monotonic_ns()
        return [
            (
                self._checkpoint(d, CLEANER_CHECKPOINT),
                {tp: self._first_dirty[tp] for tp in logs if tp in self._first_dirty},
                taken,
            )
            for d, logs in self._by_dir().items()
        ]

    # --- shutdown ------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Clean shutdown: flush and close every log, write checkpoints, leave the marker."""
        self._cleaner_stop.set()
        self.checkpoint_high_watermarks()
        # Every log's last writes (index entries, leader-epoch checkpoint, producer snapshot)
        # without an fsync each, then made durable together by one syncfs per filesystem:
        # fsync'd one by one, 30,000 logs' leader-epoch checkpoints took most of a broker's
        # clean stop. The marker is written after: a crash before it recovers the logs, as
        # after any unclean stop.
        for lg in self._logs.values():
            lg.close(sync=False)
        sync_filesystems(self.log_dirs)
        self.checkpoint_recovery_points_and_log_starts()
        for d in self.log_dirs:
            atomic_write_text(d / CLEAN_SHUTDOWN_FILE, "")
        self._release_locks()

    def close_without_shutdown(self) -> None:
        """Close files with no flush and no marker (tests simulating a crash)."""
        self._cleaner_stop.set()
        for lg in self._logs.values():
            lg.close_without_flush()
        self._release_locks()

    def _release_locks(self) -> None:
        if self._io_executor is not None:
            self._io_executor.shutdown(wait=True)
            self._io_executor = None
        for fd in self._locks:
            os.close(fd)
        self._locks.clear()
