"""Leader-epoch cache (KIP-101 / KIP-279): which leader epoch started at which offset.

Entries `(epoch, start_offset)` are strictly increasing in both fields. With a checkpoint
file, truncations are written to `leader-epoch-checkpoint` (fsync'd) as they happen; without
one the cache is a pure in-memory structure (unit tests, recovery scratch).

A new epoch (`assign`: becoming leader, or a follower appending a newer epoch's batches) is
written by `persist()` instead, which the log calls before its recovery point passes the
epoch's start. Every entry below the recovery point is then on disk, and one at or above it
is rebuilt from its batches by the recovery after a crash (a leader that wrote nothing in
its epoch may lose the entry: its end offset is the previous epoch's anyway). Kafka fsyncs
the file at each assign instead: a LeaderAndIsr making a broker leader of 30,000 partitions
would cost 60,000 fsyncs before its answer.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

from minikafka.storage.checkpoint import EpochEntry, LeaderEpochCheckpointFile

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    def __init__(
        self,
        log_end_offset: Callable[[], int],
        checkpoint: LeaderEpochCheckpointFile | None = None,
        entries: list[EpochEntry] | None = None,
    ) -> None:
        self._log_end_offset = log_end_offset
        self._checkpoint = checkpoint
        self._entries: list[EpochEntry] = []
        # An assign not written yet (see the module's docstring).
        self._dirty = False
        # The entries in the checkpoint file, as last read or written.
        self._on_disk: tuple[EpochEntry, ...] = ()
        self.restore(entries or [])

    # --- queries -------------------------------------------------------------------------

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def end_offset_for(self, requested_epoch: int) -> tuple[int, int]:
        """(epoch, end offset) answered to OffsetsForLeaderEpoch, exactly as Kafka 2.x.

        - the latest epoch: (epoch, LEO)
        - an older epoch: (largest epoch <= requested, start offset of the first epoch > requested)
        - below every epoch: (requested, start offset of the first epoch)
        - undefined or above every epoch: (-1, -1)
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._entries[-1].epoch:
            return requested_epoch, self._log_end_offset()
        epochs = [e.epoch for e in self._entries]
        higher = bisect.bisect_right(epochs, requested_epoch)
        if higher == len(epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        higher_start = self._entries[higher].start_offset
        if higher == 0:
            return requested_epoch, higher_start
        return self._entries[higher - 1].epoch, higher_start

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch whose range holds `offset` (UNDEFINED_EPOCH if none)."""
        starts = [e.start_offset for e in self._entries]
        i = bisect.bisect_right(starts, offset)
        return self._entries[i - 1].epoch if i > 0 else UNDEFINED_EPOCH

    # --- updates -------------------------------------------------------------------------

    def restore(self, entries: list[EpochEntry]) -> None:
        """Load entries read from the checkpoint (no rewrite of the file it came from)."""
        for e in entries:
            self._assign(e.epoch, e.start_offset)
        self._on_disk = tuple(self._entries)

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that `epoch` starts at `start_offset` (called per appended batch and on
        becoming leader). Entries that would break monotonicity are dropped first."""
        entries = self._entries
        # Fast path, taken for nearly every appended batch: same epoch, later offset.
        if entries and entries[-1].epoch == epoch and start_offset >= entries[-1].start_offset:
            return
        if self._assign(epoch, start_offset):
            self._dirty = self._checkpoint is not None

    def persist(self, *, sync: bool = True) -> None:
        """Write the entries (fsync'd; `sync=False`: see `atomic_write_bytes`) if an assign
        changed them since the last write."""
        if self._dirty:
            self._flush(sync=sync)

    def persist_at_close(self, log_end_offset: int, *, sync: bool = True) -> None:
        """`persist` for a log's clean close: skipped when the entries that start below
        `log_end_offset` are those on disk already. What differs then are epochs without a
        record (starting at the LEO: a leadership in which nothing was written), which the
        next batch appended would replace anyway, and whose end offset is the previous
        epoch's (see the module's docstring). A broker that changed the leaders of 30,000
        partitions wrote a file per partition at its stop for them."""
        if not self._dirty:
            return
        below = [e for e in self._entries if e.start_offset < log_end_offset]
        if below != [e for e in self._on_disk if e.start_offset < log_end_offset]:
            self._flush(sync=sync)

    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid epoch entry ({epoch}, {start_offset})")
        if self._entries:
            last = self._entries[-1]
            if epoch == last.epoch and start_offset >= last.start_offset:
                return False
        # Keep only entries strictly below the new one in both epoch and offset.
        while self._entries and (
            self._entries[-1].epoch >= epoch or self._entries[-1].start_offset >= start_offset
        ):
            self._entries.pop()
        self._entries.append(EpochEntry(epoch, start_offset))
        return True

    def truncate_from_end(self, end_offset: int, *, sync: bool = True) -> None:
        """Drop epochs starting at or after `end_offset` (the log was truncated there), and
        write the file at once (`sync=False`: without an fsync, see `atomic_write_bytes`)."""
        if end_offset < 0 or not self._entries or self._entries[-1].start_offset < end_offset:
            return
        self._entries = [e for e in self._entries if e.start_offset < end_offset]
        self._flush(sync=sync)

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at `start_offset`: drop epochs entirely before it and move the
        start of the epoch that covers it up to `start_offset`."""
        if start_offset < 0:
            return
        removed = [e for e in self._entries if e.start_offset <= start_offset]
        if not removed or (len(removed) == 1 and removed[0].start_offset == start_offset):
            return  # nothing before the new start: no change to persist
        kept = [e for e in self._entries if e.start_offset > start_offset]
        self._entries = [EpochEntry(removed[-1].epoch, start_offset), *kept]
        self._flush()

    def clear_and_flush(self) -> None:
        self._entries = []
        self._flush()

    def _flush(self, *, sync: bool = True) -> None:
        if self._checkpoint is not None:
            # Cleared first: an assign from another thread during the write marks it again.
            self._dirty = False
            self._on_disk = tuple(self._entries)
            self._checkpoint.write(self._on_disk, sync=sync)
