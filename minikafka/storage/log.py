"""A partition's log: ordered segments, LEO, log start offset, HW, recovery, retention.

Offsets:
- log start offset: first offset still readable;
- LEO (log end offset): offset the next record will get;
- HW (high watermark): set by the replication layer, clamped here to [log start, LEO];
- recovery point: everything below it has been fsynced; recovery after a crash re-validates
  from the segment that holds it.

Files in the partition directory: `<base>.log` and `<base>.index` per segment, the
`leader-epoch-checkpoint`, and `<offset>.snapshot` files of the idempotent producers' state
(producer_snapshot.py: written on roll and on clean shutdown, loaded on open and truncation).
"""

from __future__ import annotations

import bisect
import logging
import os
import shutil
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from minikafka.clock import SYSTEM_CLOCK, Clock
from minikafka.common import TopicPartition
from minikafka.protocol.errors import (
    CorruptRecordError,
    InvalidRecordError,
    KafkaError,
    KafkaStorageError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
    RecordValidationError,
)
from minikafka.storage._batch_scan import BatchScanError
from minikafka.storage.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    CorruptCheckpointError,
    EpochEntry,
    LeaderEpochCheckpointFile,
    atomic_write_bytes,
    fsync_dir,
)
from minikafka.storage.leader_epoch_cache import LeaderEpochCache
from minikafka.storage.log_cleaner import (
    CleanedSegment,
    SegmentInfo,
    SegmentSource,
    close_sources,
    discard_staging,
    empty_batch,
    swap_in,
)
from minikafka.storage.log_config import LONG_MAX, LogConfig
from minikafka.storage.offset_index import ENTRY_SIZE as INDEX_ENTRY_BYTES
from minikafka.storage.open_files import OpenFiles
from minikafka.storage.producer_snapshot import (
    SNAPSHOT_SUFFIX,
    CorruptSnapshotError,
    decode_snapshot,
    encode_snapshot,
    needs_snapshot,
    snapshot_to_load,
    stale_snapshots,
)
from minikafka.storage.producer_state import ProducerStateManager, last_sequence
from minikafka.storage.record_batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    HEADER_SIZE,
    NO_PARTITION_LEADER_EPOCH,
    NO_TIMESTAMP,
    PRODUCER_ID_OFFSET,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    InvalidBatchError,
    Record,
    RecordBatchBuilder,
    check_compressed_batch,
    decode_records,
    invalid_batch_error,
    parse_header,
    peek_offset_and_size,
    set_log_append_time,
    validate_batch,
)
from minikafka.storage.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    LogAppendInfo,
    LogSegment,
    LogSlice,
    base_offset_of,
    file_name_for,
)

log = logging.getLogger(__name__)


class FetchDataInfo(NamedTuple):
    fetch_offset: int
    slice: LogSlice | None

    @property
    def size(self) -> int:
        return self.slice.size if self.slice is not None else 0

    def read(self) -> bytes:
        return self.slice.read() if self.slice is not None else b""


@dataclass(slots=True)
class LoadReport:
    """What opening the log found: for logs, metrics and tests."""

    recovered_segments: int = 0
    truncated_bytes: int = 0
    deleted_segments: int = 0
    rebuilt_epoch_cache: bool = False
    first_error: str | None = None


class ProducerStateRebuild(NamedTuple):
    """How the producer state was last rebuilt (log open or truncation): from the snapshot
    at `snapshot_offset` (None: from the log start), then `batches_replayed` batch headers
    read; `corrupt_snapshots` snapshots failed to decode and were deleted on the way."""

    snapshot_offset: int | None
    batches_replayed: int
    corrupt_snapshots: int


class Log:
    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        clock: Clock,
        open_files: OpenFiles | None = None,
    ) -> None:
        self.dir = directory
        # The broker's cache of open segment files (None: each segment keeps its own open).
        self._files = open_files
        self.topic_partition = TopicPartition.parse_dir_name(directory.name)
        self.config = config
        self._clock = clock
        self._now_ms = clock.now_ms  # bound once: the append path passes it on every call
        # Files of segments retention removed, renamed *.deleted: (when to delete, paths)
        # (file.delete.delay.ms).
        self.retired_files: list[tuple[int, list[Path]]] = []
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self.log_start_offset = 0
        self.recovery_point = 0
        self.high_watermark = 0
        self._unflushed_records = 0
        self._last_flush_ms = clock.now_ms()
        self.load_report = LoadReport()
        self.leader_epoch_cache = LeaderEpochCache(
            lambda: self.log_end_offset,
            LeaderEpochCheckpointFile(directory / LEADER_EPOCH_CHECKPOINT),
        )
        # Idempotent producers' sequences (producer_state.py): loaded from the latest
        # snapshot and the batch headers after it when the log is opened or truncated,
        # updated by every append. `_snapshots`: the offsets of the snapshot files.
        self.producer_state = ProducerStateManager()
        self._snapshots: list[int] = []
        self.last_producer_state_rebuild = ProducerStateRebuild(None, 0, 0)
        # The lowest offset the log was truncated to since the log cleaner last looked.
        self.truncated_to: int | None = None

    # --- opening and recovery ------------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        had_clean_shutdown: bool = False,
        open_files: OpenFiles | None = None,
    ) -> Log:
        """Open (or create) the log in `directory` (named `<topic>-<partition>`).

        After an unclean shutdown every segment from the one holding `recovery_point` on is
        re-validated; the log is cut at the first invalid batch and later segments deleted.
        """
        self = cls(directory, config or LogConfig(), clock, open_files)
        directory.mkdir(parents=True, exist_ok=True)
        self._load(log_start_offset, recovery_point, had_clean_shutdown)
        self._rebuild_producer_state()
        return self

    def _load(self, log_start_offset: int, recovery_point: int, had_clean_shutdown: bool) -> None:
        now = self._clock.now_ms()
        interval = self.config.index_interval_bytes
        discard_staging(self.dir)  # a cleaner pass cut short: its old segments stand
        for leftover in self.dir.iterdir():
            if leftover.name.endswith((".tmp", ".deleted")) or (
                leftover.suffix == INDEX_SUFFIX and not leftover.with_suffix(LOG_SUFFIX).exists()
            ):
                leftover.unlink(missing_ok=True)
            elif leftover.suffix == SNAPSHOT_SUFFIX:
                try:
                    self._snapshots.append(base_offset_of(leftover))
                except ValueError:
                    log.warning("ignoring %s: not a producer snapshot's name", leftover)
        self._snapshots.sort()
        for path in sorted(self.dir.glob("*" + LOG_SUFFIX), key=base_offset_of):
            self._add_segment(
                LogSegment.open_existing(self.dir, base_offset_of(path), interval, now, self._files)
            )

        checkpointed_epochs = self._read_epoch_checkpoint()
        cache = self.leader_epoch_cache
        cache.restore(checkpointed_epochs or [])

        # Which segments to re-validate.
        report = self.load_report
        first_to_recover = len(self._segments)
        if not had_clean_shutdown and self._segments:
            i = bisect.bisect_right(self._bases, recovery_point) - 1
            first_to_recover = max(i, 0)
        i = 0
        while i < len(self._segments):
            seg = self._segments[i]
            if i >= first_to_recover or seg.needs_recovery:
                result = seg.recover(on_batch=self._assign_epoch_of)
                report.recovered_segments += 1
                if result.truncated_bytes:
                    report.truncated_bytes += result.truncated_bytes
                    if report.first_error is None and result.error is not None:
                        report.first_error = str(result.error)
                    log.warning(
                        "%s: truncated %d invalid bytes of %s (%s)",
                        self.topic_partition,
                        result.truncated_bytes,
                        seg.log_path.name,
                        result.error,
                    )
                    # Nothing after the first invalid batch can be trusted.
                    for later in self._segments[i + 1 :]:
                        later.delete()
                        report.deleted_segments += 1
                    del self._segments[i + 1 :]
                    del self._bases[i + 1 :]
            i += 1

        if not self._segments:
            self._add_segment(
                LogSegment.create(
                    self.dir,
                    log_start_offset,
                    interval,
                    now,
                    self._preallocate_bytes(),
                    self._files,
                )
            )

        leo = self.log_end_offset
        if leo < log_start_offset:
            # Everything readable was lost (e.g. the tail above the log start was torn): start
            # over empty at the checkpointed log start, as Kafka does.
            log.warning(
                "%s: LEO %d below log start offset %d, starting empty",
                self.topic_partition,
                leo,
                log_start_offset,
            )
            self._truncate_fully(log_start_offset)
            leo = log_start_offset
        self.log_start_offset = max(log_start_offset, self._segments[0].base_offset)

        if checkpointed_epochs is None and leo > self.log_start_offset:
            self._rebuild_epoch_cache()
            report.rebuilt_epoch_cache = True
        cache.truncate_from_end(leo)
        cache.truncate_from_start(self.log_start_offset)
        # Everything below LEO was either flushed at a clean shutdown or has just been
        # re-validated (Kafka sets the recovery point to the recovered LEO as well); the
        # epochs the recovery found are written before the recovery point passes them.
        cache.persist()
        self.recovery_point = leo
        self.high_watermark = self.log_start_offset

    def _read_epoch_checkpoint(self) -> list[EpochEntry] | None:
        """Checkpointed epochs, or None when the file is missing or corrupt (rebuild instead)."""
        checkpoint = LeaderEpochCheckpointFile(self.dir / LEADER_EPOCH_CHECKPOINT)
        if not checkpoint.path.exists():
            return None
        try:
            return checkpoint.read()
        except CorruptCheckpointError as e:
            log.warning("%s; rebuilding the leader-epoch cache from the log", e)
            return None

    def _rebuild_epoch_cache(self) -> None:
        self.leader_epoch_cache.clear_and_flush()
        for seg in self._segments:
            for _, h in seg.batches():
                self._assign_epoch_of(h)

    def _assign_epoch_of(self, h: BatchHeader) -> None:
        # Only a newer epoch starts an entry (as Kafka's recovery does): re-scanning batches
        # of an epoch the cache already knows must not move that epoch's start.
        if h.partition_leader_epoch > self.leader_epoch_cache.latest_epoch():
            self.leader_epoch_cache.assign(h.partition_leader_epoch, h.base_offset)

    def _add_segment(self, seg: LogSegment) -> None:
        self._segments.append(seg)
        self._bases.append(seg.base_offset)

    # --- state ---------------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    def update_high_watermark(self, hw: int) -> int:
        """Set the HW, clamped to [log start offset, LEO]; returns what was set."""
        self.high_watermark = min(max(hw, self.log_start_offset), self.log_end_offset)
        return self.high_watermark

    def latest_epoch(self) -> int:
        return self.leader_epoch_cache.latest_epoch()

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self.leader_epoch_cache.end_offset_for(epoch)

    # --- appends -------------------------------------------------------------------------

    def _scan_error(self, e: BatchScanError) -> KafkaError:
        """The Kafka error for a request the batch scanner refused."""
        kind, _position, detail = e.args
        if kind == "MESSAGE_TOO_LARGE":
            return MessageTooLargeError(detail)
        if kind == "RECORD_LIST_TOO_LARGE":
            return RecordListTooLargeError(detail)
        if kind == "INVALID_RECORD":
            return InvalidRecordError(str(invalid_batch_error(e)))
        if kind in ("OUT_OF_SEQUENCE", "EMPTY"):
            return CorruptRecordError(detail)
        return CorruptRecordError(str(invalid_batch_error(e)))

    def append_as_leader(
        self, records: bytes | bytearray | memoryview, leader_epoch: int
    ) -> LogAppendInfo:
        """Validate, assign offsets from LEO, stamp the leader epoch, append.

        A bytearray (what the network layer reads requests into) is stamped in place, as
        Kafka stamps the request's buffer; immutable bytes are copied first. Stamping as we
        validate is safe: a request with an invalid batch is rejected whole and its buffer
        dropped. Checks, CRC, stamping, the roll check, the write and the index are one C
        call (`SegmentAppender.append_leader`): this is the produce path's per-request cost.
        """
        if leader_epoch < 0:
            raise ValueError(f"a leader appends with its leader epoch, got {leader_epoch}")
        buf = records if type(records) is bytearray else bytearray(records)
        config = self.config
        now = self._now_ms()
        self._validate_records(buf, now)
        if config.target_codec is not None:
            buf = self._recompress(buf, config.target_codec)
        if config.log_append_time:
            self._stamp_log_append_time(buf, now)
        idempotent = _producer_of(buf)
        if idempotent is not None:
            duplicate = self._check_idempotent_append(buf, idempotent)
            if duplicate is not None:
                return duplicate
        info = self._append(
            LogSegment.append_leader,
            buf,
            leader_epoch,
            self.config.max_message_bytes,
            check_compressed_batch,
        )
        self.leader_epoch_cache.assign(leader_epoch, info.first_offset)
        if idempotent is not None or info.num_batches > 1:
            # (A request of several batches is none a Kafka client sends, v3 on; any
            # idempotent batch after its first is recorded all the same.)
            self._update_producer_state(buf)
        self._count_unflushed(info.num_records)
        return info

    def _validate_records(self, buf: bytearray, now: int) -> None:
        """Kafka's LogValidator's checks of single records (KIP-467: each bad record is
        named by its index in its batch): a compacted topic's records need a key (the
        cleaner keeps records by key); with CreateTime, a timestamp at most
        message.timestamp.difference.max.ms from the leader's clock; and a producer does not
        set LogAppendTime. Records are decoded only when a check needs them; batches that do
        not decode are left to the append's checks."""
        config = self.config
        max_difference = config.timestamp_max_difference
        refused: list[tuple[int, str]] = []
        invalid_timestamp = False
        pos = 0
        while pos + HEADER_SIZE <= len(buf):
            _, size = peek_offset_and_size(buf, pos)
            producer_log_append_time = bool(buf[pos + ATTRIBUTES_OFFSET + 1] & TIMESTAMP_TYPE_MASK)
            if config.compact or max_difference is not None or producer_log_append_time:
                try:
                    records = decode_records(buf, pos)
                except InvalidBatchError:
                    break
                for index, r in enumerate(records):
                    if config.compact and r.key is None:
                        refused.append(
                            (
                                index,
                                "Compacted topic cannot accept message without key in topic "
                                f"partition {self.topic_partition}.",
                            )
                        )
                    elif (
                        max_difference is not None
                        and r.timestamp != NO_TIMESTAMP
                        and abs(r.timestamp - now) > max_difference
                    ):
                        invalid_timestamp = True
                        refused.append(
                            (
                                index,
                                f"Timestamp {r.timestamp} of message with offset {r.offset} is "
                                f"out of range. The timestamp should be within "
                                f"[{now - max_difference}, {now + max_difference}]",
                            )
                        )
                    elif producer_log_append_time:
                        invalid_timestamp = True
                        refused.append(
                            (
                                index,
                                f"Invalid timestamp type in message with offset {r.offset}. "
                                "Producer should not set timestamp type to LogAppendTime.",
                            )
                        )
            pos += max(size, HEADER_SIZE)
        if refused:
            raise RecordValidationError(refused, invalid_timestamp=invalid_timestamp)

    def _recompress(self, buf: bytearray, codec: int) -> bytearray:
        """compression.type names a codec: each batch in another one is rebuilt in it, its
        records, timestamps, headers and producer fields kept, as Kafka's LogValidator does
        (offsets are the leader's to assign anyway). A batch is checked whole first (header,
        CRC, its records as its header says): the rebuilt one gets a CRC of its own, and
        must not make a damaged batch look whole."""
        out = bytearray()
        pos = 0
        while pos < len(buf):
            try:
                h = validate_batch(buf, pos)
                end = pos + h.size_in_bytes
                if h.attributes & COMPRESSION_CODEC_MASK == codec:
                    out += buf[pos:end]
                    pos = end
                    continue
                records = decode_records(buf, pos)
            except InvalidBatchError as e:
                raise CorruptRecordError(str(e)) from None
            if [r.offset for r in records] != list(range(h.base_offset, h.next_offset)):
                raise InvalidRecordError(
                    f"invalid record batch at byte {pos}: records do not match the batch header"
                )
            builder = RecordBatchBuilder(
                0, NO_PARTITION_LEADER_EPOCH, h.producer_id, h.producer_epoch, h.base_sequence
            )
            for r in records:
                builder.append(r.value, r.key, r.timestamp, r.headers)
            out += builder.build(codec)
            pos = end
        return out

    def _stamp_log_append_time(self, buf: bytearray, now: int) -> None:
        """message.timestamp.type=LogAppendTime: each batch's timestamp type becomes
        LogAppendTime and its max timestamp the leader's clock (every record's timestamp, as
        consumers read it), as Kafka's LogValidator stamps them. Both lie inside the CRC,
        which is checked first (a damaged batch must not be made to look whole) and then
        computed again."""
        pos = 0
        while pos + HEADER_SIZE <= len(buf):
            try:
                h = validate_batch(buf, pos)
            except InvalidBatchError:
                return  # refused by the append's own checks
            set_log_append_time(buf, pos, now)
            pos += h.size_in_bytes

    def _check_idempotent_append(self, buf: bytearray, producer_id: int) -> LogAppendInfo | None:
        """Kafka's analyzeAndValidateProducerState for a client's batch: the request's one
        batch is checked (header and CRC first, so a damaged batch is CORRUPT_MESSAGE, not a
        sequence error), then its sequences. A duplicate's info carries the original
        offsets, and nothing is appended."""
        try:
            h = validate_batch(buf)
        except InvalidBatchError as e:
            raise CorruptRecordError(str(e)) from None
        if h.size_in_bytes != len(buf):
            # Produce v3+ sends exactly one batch per partition; idempotence relies on it.
            raise InvalidRecordError(
                "an idempotent produce request holds exactly one record batch per partition"
            )
        duplicate = self.producer_state.check_leader_append(
            producer_id,
            h.producer_epoch,
            h.base_sequence,
            last_sequence(h.base_sequence, h.last_offset_delta + 1),
        )
        if duplicate is None:
            return None
        return LogAppendInfo(
            duplicate.first_offset, duplicate.last_offset, duplicate.max_timestamp, 0, 0, 0
        )

    def _update_producer_state(self, buf: bytes | bytearray | memoryview) -> None:
        """Record the idempotent batches among just-appended ones (offsets as stamped)."""
        pos = 0
        n = len(buf)
        while pos + HEADER_SIZE <= n:
            h = parse_header(buf, pos)
            self._record_producer_batch(h)
            pos += h.size_in_bytes

    def _rebuild_producer_state(self) -> ProducerStateRebuild:
        """The producer state as of the LEO (Kafka's truncateAndReload): the snapshots
        outside [first segment's base offset, LEO] are deleted, the latest of the others is
        loaded (a corrupt one is deleted and the next older one tried), and the headers of
        the batches from its offset on are replayed; without a snapshot, from the log start.
        Producers that expired are left out of a loaded snapshot, as Kafka does."""
        lowest, highest = self._segments[0].base_offset, self.log_end_offset
        self._delete_snapshots(stale_snapshots(self._snapshots, lowest, highest))
        state = self.producer_state
        state.clear()
        start = self.log_start_offset
        loaded: int | None = None
        corrupt = 0
        while (offset := snapshot_to_load(self._snapshots, lowest, highest)) is not None:
            path = self._snapshot_path(offset)
            try:
                entries = decode_snapshot(path.read_bytes())
            except (CorruptSnapshotError, OSError) as e:
                log.warning(
                    "%s: producer snapshot %s is unreadable (%s); deleting it",
                    self.topic_partition,
                    path.name,
                    e,
                )
                self._delete_snapshots([offset])
                corrupt += 1
                continue
            state.load(entries)
            state.remove_expired(self._clock.now_ms(), self.config.producer_id_expiration_ms)
            start = loaded = offset
            break
        replayed = 0
        i = max(bisect.bisect_right(self._bases, start) - 1, 0)
        for seg in self._segments[i:]:
            position = 0
            if seg.base_offset < start:
                found = seg.translate_offset(start)
                if found is None:
                    continue
                position = found[0]
            for _pos, h in seg.batches(position):
                replayed += 1
                if h.next_offset > start:
                    self._record_producer_batch(h)
        result = ProducerStateRebuild(loaded, replayed, corrupt)
        self.last_producer_state_rebuild = result
        return result

    # --- producer snapshots ----------------------------------------------------------------

    def _snapshot_path(self, offset: int) -> Path:
        return self.dir / file_name_for(offset, SNAPSHOT_SUFFIX)

    @property
    def producer_snapshot_offsets(self) -> list[int]:
        """The offsets of the producer snapshot files, in order."""
        return list(self._snapshots)

    def _take_producer_snapshot(self, offset: int, *, sync: bool = True) -> None:
        """Write the producer state as the snapshot at `offset` (the LEO, or the base offset
        of a new segment: the state is the state there) unless there is no need to."""
        if not needs_snapshot(self._snapshots, offset, self._segments[0].base_offset):
            return
        path = self._snapshot_path(offset)
        try:
            atomic_write_bytes(path, encode_snapshot(self.producer_state.entries()), sync=sync)
        except OSError as e:
            # Not fatal: the batches are on disk, and the next open replays them instead.
            log.warning(
                "%s: could not write producer snapshot %s: %s", self.topic_partition, path, e
            )
            return
        bisect.insort(self._snapshots, offset)

    def _delete_snapshots(self, offsets: list[int]) -> None:
        for offset in offsets:
            self._snapshot_path(offset).unlink(missing_ok=True)
            self._snapshots.remove(offset)

    def remove_expired_producers(self, now_ms: int | None = None) -> int:
        """Forget the producers idle for `producer.id.expiration.ms` (by their last batch's
        timestamp); returns how many. The LogManager's retention pass calls it."""
        now = self._clock.now_ms() if now_ms is None else now_ms
        return len(self.producer_state.remove_expired(now, self.config.producer_id_expiration_ms))

    def _record_producer_batch(self, h: BatchHeader) -> None:
        if h.producer_id >= 0:
            self.producer_state.update(
                h.producer_id,
                h.producer_epoch,
                h.base_sequence,
                last_sequence(h.base_sequence, h.last_offset_delta + 1),
                h.base_offset,
                h.last_offset,
                h.max_timestamp,
            )

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> LogAppendInfo:
        """Append batches fetched from the leader as they are (offsets and epochs kept).

        One C call (`SegmentAppender.append_follower`) checks them (each batch valid, the
        first at or above the LEO, the rest contiguous, leader epochs never going backwards)
        and writes them."""
        records = self._trim_emptied_head(records)
        # No size check (Kafka's ignoreRecordSize): the leader accepted these batches, maybe
        # under a larger max.message.bytes than this replica's config says now.
        info = self._append(
            LogSegment.append_follower,
            records,
            self.leader_epoch_cache.latest_epoch(),
            LONG_MAX,
        )
        if info.new_epochs is not None:
            for epoch, start in info.new_epochs:
                self.leader_epoch_cache.assign(epoch, start)
        self._update_producer_state(records)
        self._count_unflushed(info.num_records)
        return info

    def _trim_emptied_head(
        self, records: bytes | bytearray | memoryview
    ) -> bytes | bytearray | memoryview:
        """The fetched batches, their first cut to start at the LEO if it is an empty batch
        that spans it. The leader's cleaner turns a run of batches that lost every record
        into one empty batch over their offsets; a follower that had fetched part of that run
        before it was cleaned (it was out of the ISR, or the HW moved on without it) is sent
        the empty batch, which starts below its LEO. It already holds the offsets below its
        LEO, and the rest of the run has no records: an empty batch from its LEO to the
        run's end takes the leader's place, and its offsets stay contiguous."""
        if len(records) < HEADER_SIZE:
            return records
        leo = self.log_end_offset
        if peek_offset_and_size(records, 0)[0] >= leo:
            return records
        h = parse_header(bytes(records[:HEADER_SIZE]))
        if h.record_count or h.last_offset < leo:
            return records  # not this case: the append refuses it as before
        rest = memoryview(records)[h.size_in_bytes :]
        log.info(
            "%s: the leader's empty batch [%d, %d] spans the LEO %d (its cleaner merged "
            "emptied batches): appending [%d, %d]",
            self.dir.name,
            h.base_offset,
            h.last_offset,
            leo,
            leo,
            h.last_offset,
        )
        head = empty_batch(leo, h.last_offset, h.partition_leader_epoch, h.max_timestamp)
        return head + bytes(rest)

    def _append(
        self,
        append: Callable[..., LogAppendInfo | None],
        records: bytes | bytearray | memoryview,
        epoch: int,
        max_batch_bytes: int,
        *extra: object,
    ) -> LogAppendInfo:
        """One request through the active segment's C append (`append_leader` with the
        leader's epoch and the check of compressed batches as `extra`, `append_follower`
        with the latest epoch of the cache); a roll first
        when it hands the request back. The caller records the epochs before counting the
        records towards flush.messages: a flush moves the recovery point past them, and
        recovery rebuilds epochs only from there on."""
        config = self.config
        seg = self._segments[-1]
        if seg.size and seg.index_entries() >= config.segment_index_bytes // INDEX_ENTRY_BYTES:
            seg = self.roll()  # its offset index is full (segment.index.bytes)
        try:
            info = append(
                seg,
                records,
                epoch,
                max_batch_bytes,
                config.segment_bytes,
                config.max_segment_ms
                - seg.roll_jitter_ms(config.segment_jitter_ms, config.max_segment_ms),
                self._now_ms,
                *extra,
            )
            if info is None:
                # The segment must roll first, or (a follower) the leader's log starts past
                # ours: continue in a segment of its own, since offsets inside one segment
                # are contiguous (recovery relies on it). The leader's first batch already
                # carries the LEO as its base offset.
                first, _ = peek_offset_and_size(records)
                seg = self.roll(max(first, self.log_end_offset))
                info = append(
                    seg,
                    records,
                    epoch,
                    max_batch_bytes,
                    config.segment_bytes,
                    config.segment_ms,
                    self._now_ms,
                    *extra,
                )
                assert info is not None, "a new segment at the first offset takes the request"
        except BatchScanError as e:
            raise self._scan_error(e) from None
        except OSError as e:
            raise KafkaStorageError(f"append to {seg.log_path} failed: {e}") from e
        return info

    def _count_unflushed(self, num_records: int) -> None:
        unflushed = self._unflushed_records + num_records
        self._unflushed_records = unflushed
        if unflushed >= self.config.flush_messages:
            self.flush()

    def roll(self, base_offset: int | None = None) -> LogSegment:
        """Start a new active segment at LEO; the old one is fsynced (Kafka flushes on roll)."""
        new_base = self.log_end_offset if base_offset is None else base_offset
        old = self._segments[-1]
        if old.size == 0 and old.base_offset == new_base:
            return old
        if old.size == 0:
            old.delete()
            self._segments.pop()
            self._bases.pop()
        if not self._segments:
            self.log_start_offset = max(self.log_start_offset, new_base)
            self.high_watermark = max(self.high_watermark, self.log_start_offset)
        old.trim_preallocation()
        seg = LogSegment.create(
            self.dir,
            new_base,
            self.config.index_interval_bytes,
            self._clock.now_ms(),
            self._preallocate_bytes(),
            self._files,
        )
        self._add_segment(seg)
        fsync_dir(self.dir)
        self.flush(new_base)
        # Kafka snapshots the producer state at every roll: a later open replays from here.
        self._take_producer_snapshot(new_base)
        return seg

    def flush(self, offset: int | None = None) -> None:
        """fsync segments holding [recovery point, offset) and move the recovery point there."""
        upto = self.log_end_offset if offset is None else min(offset, self.log_end_offset)
        for seg in self._segments:
            if seg.next_offset > self.recovery_point and seg.base_offset < upto:
                seg.flush()
        # The epochs starting below the new recovery point go to disk first: recovery after
        # a crash rebuilds only those at or above it (leader_epoch_cache.py).
        self.leader_epoch_cache.persist()
        self.recovery_point = max(self.recovery_point, upto)
        if offset is None:
            self._unflushed_records = 0
            self._last_flush_ms = self._clock.now_ms()

    def flush_if_due(self, now_ms: int) -> bool:
        """For the periodic flusher: flush when `flush.ms` has passed since the last flush."""
        if (
            self.recovery_point < self.log_end_offset
            and now_ms - self._last_flush_ms >= self.config.flush_ms
        ):
            self.flush()
            return True
        return False

    # --- reads ---------------------------------------------------------------------------

    def read(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
        *,
        skip_empty_batches: bool = False,
    ) -> FetchDataInfo:
        """Whole batches starting with the one that holds `offset`.

        `max_offset` (exclusive) bounds what is visible: the HW for consumers, None (LEO) for
        followers. `skip_empty_batches` (consumers of a compacted log) starts the data at the
        first batch that holds records: an answer of empty batches only is one a client takes
        for a batch too large to fetch (librdkafka doubles its fetch size each time, then
        reports an error). Raises OffsetOutOfRangeError outside [log start offset, LEO].
        """
        leo = self.log_end_offset
        if offset < self.log_start_offset or offset > leo:
            raise OffsetOutOfRangeError(
                f"offset {offset} outside [{self.log_start_offset}, {leo}] of {self.topic_partition}"
            )
        requested = offset
        skip = skip_empty_batches and self.config.compact
        i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        while i < len(self._segments):
            if offset >= leo or (max_offset is not None and offset >= max_offset):
                break
            seg = self._segments[i]
            try:
                s = seg.read(offset, max_bytes, max_offset, min_one_batch)
            except OSError as e:
                # Out of descriptors (or a disk error): this read fails, the log stays.
                raise KafkaStorageError(f"read of {seg.log_path} failed: {e}") from e
            if s is not None and skip:
                s, after = _without_leading_empty_batches(s)
                if s is None:
                    offset = after  # all empty: read on from the batch after them
                    continue
            if s is not None:
                return FetchDataInfo(requested, s)
            if max_offset is not None and seg.next_offset >= max_offset:
                break
            i += 1
        return FetchDataInfo(requested, None)

    # --- lookups by timestamp (ListOffsets) ------------------------------------------------

    def offset_for_timestamp(self, timestamp: int, max_offset: int) -> tuple[int, int] | None:
        """Kafka's fetchOffsetByTimestamp: (offset, timestamp) of the first record below
        `max_offset` whose timestamp is at or after `timestamp`, or None if there is none.

        Kafka keeps a time index for this; here segments whose largest timestamp is earlier
        are skipped, then batch headers (each holds its max timestamp) are scanned, and only
        the batch that holds the answer is decoded."""
        for seg in list(self._segments):
            if seg.base_offset >= max_offset:
                break
            if seg.largest_timestamp() < timestamp:
                continue
            for record in self._records_of_batches(
                seg, max_offset, lambda h: h.max_timestamp >= timestamp
            ):
                if record.timestamp >= timestamp:
                    return record.offset, record.timestamp
        return None

    def offset_for_max_timestamp(self, max_offset: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record below `max_offset` with the largest
        timestamp (ListOffsets' MAX_TIMESTAMP, KIP-734), or None for an empty range."""
        best: tuple[int, int] | None = None  # (timestamp, offset)
        for seg in list(self._segments):
            if seg.base_offset >= max_offset:
                break
            for pos, h in seg.batches():
                if h.base_offset >= max_offset:
                    break
                if h.next_offset <= self.log_start_offset:
                    continue
                if best is None or h.max_timestamp > best[0]:
                    for record in decode_records(seg.read_bytes(pos, h.size_in_bytes)):
                        if self.log_start_offset <= record.offset < max_offset and (
                            best is None or record.timestamp > best[0]
                        ):
                            best = (record.timestamp, record.offset)
        return None if best is None else (best[1], best[0])

    def _records_of_batches(
        self, seg: LogSegment, max_offset: int, wanted: Callable[[BatchHeader], bool]
    ) -> Iterator[Record]:
        """The records (from the log start offset, below `max_offset`) of the segment's
        batches whose header `wanted` accepts, in offset order."""
        for pos, h in seg.batches():
            if h.base_offset >= max_offset:
                return
            if h.next_offset <= self.log_start_offset or not wanted(h):
                continue
            for record in decode_records(seg.read_bytes(pos, h.size_in_bytes)):
                if record.offset >= max_offset:
                    return
                if record.offset >= self.log_start_offset:
                    yield record

    # --- truncation ----------------------------------------------------------------------

    def truncate_to(self, offset: int, *, sync: bool = True) -> bool:
        """Remove everything from `offset` on (a follower diverged). Returns whether anything
        was removed. `sync=False` leaves the fsync of the leader-epoch checkpoint to the
        caller's `sync_filesystem`, which must come before anything is appended."""
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        if offset >= self.log_end_offset:
            # As Kafka: still drop epochs starting at the LEO. This broker may have led an
            # epoch without writing in it; left in place, that entry would be "newer" than
            # the batches the new leader sends from there on.
            self.leader_epoch_cache.truncate_from_end(self.log_end_offset, sync=sync)
            return False
        if offset <= self._segments[0].base_offset:
            self._truncate_fully(offset)
            return True
        # The snapshots above the truncation point go first (and for good: the directory is
        # fsynced), so that no crash leaves one that describes batches the log no longer has.
        above = [o for o in self._snapshots if o > offset]
        if above:
            self._delete_snapshots(above)
            fsync_dir(self.dir)
        while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
            self._segments.pop().delete()
            self._bases.pop()
        self._segments[-1].truncate_to(offset)
        leo = self.log_end_offset
        self.leader_epoch_cache.truncate_from_end(leo, sync=sync)
        self.log_start_offset = min(self.log_start_offset, leo)
        self.high_watermark = min(self.high_watermark, leo)
        self.recovery_point = min(self.recovery_point, leo)
        self._note_truncation(leo)
        self._rebuild_producer_state()
        return True

    def _note_truncation(self, offset: int) -> None:
        # What is written again from here on is dirty, whatever the cleaner checkpoint says
        # (Kafka's maybeTruncateCheckpoint); the log manager takes it at the next pass.
        if self.truncated_to is None or offset < self.truncated_to:
            self.truncated_to = offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop everything and continue empty from `offset` (follower far behind the leader's
        log start, or ahead of it)."""
        self._truncate_fully(offset)

    def _truncate_fully(self, offset: int) -> None:
        self._note_truncation(offset)
        if self._snapshots:  # first, for good: see truncate_to
            self._delete_snapshots(list(self._snapshots))
            fsync_dir(self.dir)
        for seg in self._segments:
            seg.delete()
        self._segments.clear()
        self._bases.clear()
        self._add_segment(
            LogSegment.create(
                self.dir,
                offset,
                self.config.index_interval_bytes,
                self._clock.now_ms(),
                self._preallocate_bytes(),
                self._files,
            )
        )
        fsync_dir(self.dir)
        self.leader_epoch_cache.clear_and_flush()
        self.log_start_offset = offset
        self.high_watermark = offset
        self.recovery_point = offset
        self.producer_state.clear()

    # --- retention -----------------------------------------------------------------------

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """Move the log start offset up (never beyond the HW); followers mirror the leader's."""
        target = min(offset, self.high_watermark)
        if target <= self.log_start_offset:
            return False
        self.log_start_offset = target
        self.leader_epoch_cache.truncate_from_start(target)
        return True

    def delete_old_segments(self, now_ms: int | None = None) -> int:
        """Retention by time, by size and by log start offset. Whole segments only, never the
        active one, never one holding offsets at or above the HW. Returns segments deleted."""
        now = self._clock.now_ms() if now_ms is None else now_ms
        cfg = self.config
        deleted = 0
        if cfg.delete and cfg.retention_ms >= 0:
            deleted += self._delete_while(
                lambda seg, _rest: now - _largest_timestamp(seg) > cfg.retention_ms
            )
        if cfg.delete and cfg.retention_bytes >= 0:
            excess = [self.size_in_bytes - cfg.retention_bytes]

            def over_size(seg: LogSegment, _rest: int) -> bool:
                if excess[0] - seg.size < 0:
                    return False
                excess[0] -= seg.size
                return True

            deleted += self._delete_while(over_size)
        deleted += self._delete_while(lambda _seg, next_base: next_base <= self.log_start_offset)
        return deleted

    def _retire(self, seg: LogSegment) -> None:
        """A segment retention removed: its files deleted file.delete.delay.ms from now
        (`delete_retired_files`), at once with no delay."""
        delay = self.config.file_delete_delay_ms
        if delay <= 0:
            seg.delete()
            return
        self.retired_files.append((self._clock.now_ms() + delay, seg.retire()))

    def delete_retired_files(self, now_ms: int | None = None) -> int:
        """Delete the files of retired segments whose file.delete.delay.ms has passed;
        returns how many files went."""
        now = self._clock.now_ms() if now_ms is None else now_ms
        deleted = 0
        waiting = []
        for due, paths in self.retired_files:
            if due > now:
                waiting.append((due, paths))
                continue
            for path in paths:
                path.unlink(missing_ok=True)
                deleted += 1
        self.retired_files = waiting
        return deleted

    def _delete_while(self, predicate: Callable[[LogSegment, int], bool]) -> int:
        n = 0
        while len(self._segments) > 1:
            seg, next_base = self._segments[0], self._segments[1].base_offset
            if next_base > self.high_watermark or not predicate(seg, next_base):
                break
            self._retire(seg)
            self._segments.pop(0)
            self._bases.pop(0)
            n += 1
        if n:
            self.log_start_offset = max(self.log_start_offset, self._segments[0].base_offset)
            self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
            # The snapshots below the first segment left are of no use any more: the batches
            # between them and it are gone. (The one at its base offset stays, even when the
            # log start offset is above it: replaying from it reads batches still on disk.)
            first = self._segments[0].base_offset
            self._delete_snapshots(stale_snapshots(self._snapshots, first, self.log_end_offset))
        return n

    # --- log cleaner (log_cleaner.py) -----------------------------------------------------

    def segment_infos(self) -> list[SegmentInfo]:
        return [
            SegmentInfo(
                seg.base_offset,
                seg.next_offset,
                seg.size,
                _largest_timestamp(seg),
                seg.first_batch_timestamp(),
            )
            for seg in self._segments
        ]

    def sources_for_cleaning(self, count: int) -> list[SegmentSource]:
        """The first `count` segments as the cleaner thread reads them (descriptors of its
        own: the caller closes them)."""
        sources: list[SegmentSource] = []
        try:
            for seg in self._segments[:count]:
                fd = seg.dup_fd()
                try:
                    mtime_ns = os.fstat(fd).st_mtime_ns
                except OSError:
                    os.close(fd)
                    raise
                sources.append(
                    SegmentSource(seg.base_offset, seg.next_offset, seg.size, fd, mtime_ns)
                )
        except OSError:
            close_sources(sources)
            raise
        return sources

    def replace_cleaned_segments(
        self, sources: list[SegmentSource], cleaned: list[CleanedSegment]
    ) -> bool:
        """Swap the cleaner's rewritten segments in, if the log still holds the segments it
        read (same base, next offset and size, not the active one). Else nothing changes and
        False is returned (the staged files are the caller's to discard)."""
        by_base = {s.base_offset: s for s in sources}
        index_of = {seg.base_offset: i for i, seg in enumerate(self._segments)}
        for c in cleaned:
            i = index_of.get(c.base_offset)
            src = by_base[c.base_offset]
            if i is None or i == len(self._segments) - 1:
                return False
            seg = self._segments[i]
            if seg.closed or seg.size != src.size or seg.next_offset != src.next_offset:
                return False
        now = self._clock.now_ms()
        for c in cleaned:
            i = index_of[c.base_offset]
            old = self._segments[i]
            old.close()
            swap_in(self.dir, c)
            new = LogSegment.open_existing(
                self.dir, c.base_offset, self.config.index_interval_bytes, now, self._files
            )
            if new.needs_recovery:
                new.recover()
            self._segments[i] = new
        fsync_dir(self.dir)
        return True

    # --- lifecycle -----------------------------------------------------------------------

    def _preallocate_bytes(self) -> int:
        """What a new segment reserves of disk: segment.bytes with preallocate, else 0."""
        return self.config.segment_bytes if self.config.preallocate else 0

    def close(self, *, sync: bool = True) -> None:
        """Flush everything, indexes included, snapshot the producer state at the LEO, and
        close the files (clean shutdown). `sync=False`: write all that without an fsync;
        the caller makes it durable with `sync_filesystem` (one call for every log)."""
        for seg in self._segments:
            seg.trim_preallocation()
            # As `flush`: what lies below the recovery point is on disk already (an idle
            # broker of 100,000 partitions would otherwise fsync each at every stop).
            if seg.next_offset > self.recovery_point or self.config.preallocate:
                seg.flush(sync=sync)
        self.leader_epoch_cache.persist_at_close(self.log_end_offset, sync=sync)
        self.recovery_point = self.log_end_offset
        self._take_producer_snapshot(self.log_end_offset, sync=sync)
        for seg in self._segments:
            seg.close()

    def close_without_flush(self) -> None:
        for seg in self._segments:
            seg.close()

    def delete(self) -> None:
        for seg in self._segments:
            seg.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __repr__(self) -> str:
        return (
            f"Log({self.topic_partition}, start={self.log_start_offset}, "
            f"hw={self.high_watermark}, leo={self.log_end_offset}, segments={len(self._segments)})"
        )


_PRODUCER_ID = struct.Struct(">q")


def _producer_of(buf: bytes | bytearray | memoryview) -> int | None:
    """The producer id of the request's first batch if it is an idempotent producer's (a
    peek at the header; the append validates it), else None."""
    if len(buf) < HEADER_SIZE:
        return None
    (producer_id,) = _PRODUCER_ID.unpack_from(buf, PRODUCER_ID_OFFSET)
    return producer_id if producer_id >= 0 else None


def _without_leading_empty_batches(s: LogSlice) -> tuple[LogSlice | None, int]:
    """The slice from its first batch that holds records (None if it has none), and the
    offset after the empty batches it skipped."""
    seg, pos, end = s.segment, s.position, s.position + s.size
    after = s.first_offset
    while pos < end:
        h = parse_header(seg.read_bytes(pos, HEADER_SIZE))
        if h.record_count:
            return LogSlice(seg, pos, end - pos, h.base_offset), after
        pos += h.size_in_bytes
        after = h.next_offset
    return None, after


def _largest_timestamp(seg: LogSegment) -> int:
    ts = seg.largest_timestamp()
    # Kafka falls back to the file's modification time when records carry no timestamps.
    return ts if ts >= 0 else int(os.stat(seg.log_path).st_mtime * 1000)
