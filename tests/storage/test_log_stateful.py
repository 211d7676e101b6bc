"""A hypothesis state machine: random appends, reads, rolls, truncations, retention,
clean close/reopen and simulated crashes, against an in-memory model of the log.

Crashes damage only what was never fsynced (bytes at or after the recovery point's position
in the active segment): a torn tail, trailing garbage, or a flipped byte. After recovery the
log must equal the model's longest valid prefix, and no read may ever return a batch that
fails validation.

The 4-byte leader-epoch field is the one part of a batch that neither the CRC (by Kafka's
design, so leaders can stamp it) nor the contiguity checks can cover, so flips are not aimed
there; a flipped base offset is caught by contiguity.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from minikafka.clock import ManualClock
from minikafka.storage.log import Log
from minikafka.storage.log_config import LogConfig
from minikafka.storage.open_files import OpenFiles
from minikafka.storage.record_batch import (
    PARTITION_LEADER_EPOCH_OFFSET,
    build_batch,
    decode_all,
    iter_batches,
)

CONFIG = LogConfig(segment_bytes=700, index_interval_bytes=150, retention_ms=-1)


@dataclass
class ModelBatch:
    base: int
    values: list[bytes]
    epoch: int

    @property
    def next(self) -> int:
        return self.base + len(self.values)


@dataclass
class Model:
    batches: list[ModelBatch] = field(default_factory=list)
    log_start: int = 0

    @property
    def leo(self) -> int:
        return self.batches[-1].next if self.batches else self.log_start

    def records_from(self, offset: int) -> list[tuple[int, bytes]]:
        out = []
        for b in self.batches:
            if b.next > offset:
                out.extend((b.base + i, v) for i, v in enumerate(b.values))
        return out

    def truncate(self, offset: int) -> None:
        # the batch holding `offset` goes entirely, as in the log
        self.batches = [b for b in self.batches if b.next <= offset]

    def keep_batches_ending_by(self, end: int) -> None:
        self.batches = [b for b in self.batches if b.next <= end]


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp())
        self.dir = self.tmp / "t-0"
        self.clock = ManualClock()
        self.model = Model()
        self.epoch = 0
        self.counter = 0
        self.log: Log
        self.files: OpenFiles | None = None

    @initialize()
    def open_empty(self) -> None:
        self.log = Log.open(self.dir, CONFIG, clock=self.clock, open_files=self.files)

    def teardown(self) -> None:
        self.log.close_without_flush()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # --- operations ----------------------------------------------------------------------

    @rule(n=st.integers(1, 6), bump_epoch=st.booleans(), size=st.integers(0, 60))
    def append_as_leader(self, n: int, bump_epoch: bool, size: int) -> None:
        if bump_epoch:
            self.epoch += 1
        values = []
        for _ in range(n):
            self.counter += 1
            values.append(f"{self.counter}:".encode() + b"x" * size)
        info = self.log.append_as_leader(build_batch(values), self.epoch)
        assert info.first_offset == self.model.leo
        self.model.batches.append(ModelBatch(info.first_offset, values, self.epoch))

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule(data=st.data())
    def read(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(self.model.log_start, self.model.leo))
        max_bytes = data.draw(st.integers(1, 2000))
        got = self.log.read(offset, max_bytes).read()
        records = [(r.offset, r.value) for r in decode_all(got)]  # validates every batch
        expected = self.model.records_from(offset)
        assert records == expected[: len(records)]
        if expected:
            assert records, "a read below LEO returns at least one batch"
            assert records[0][0] <= offset

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(self.model.log_start, self.model.leo + 2))
        self.log.truncate_to(offset)
        if offset <= self.model.log_start and offset < self.model.leo:
            # below the first segment's base: the log starts over at `offset`
            self.model.batches = []
            self.model.log_start = offset
        else:
            self.model.truncate(offset)

    @rule(data=st.data(), bytes_kept=st.integers(0, 1500))
    def retention(self, data: st.DataObject, bytes_kept: int) -> None:
        hw = data.draw(st.integers(self.model.log_start, self.model.leo))
        hw = self.log.update_high_watermark(hw)
        self.log.config = LogConfig(
            segment_bytes=CONFIG.segment_bytes,
            index_interval_bytes=CONFIG.index_interval_bytes,
            retention_ms=-1,
            retention_bytes=bytes_kept,
        )
        old_start = self.log.log_start_offset
        self.log.delete_old_segments()
        self.log.config = CONFIG
        new_start = self.log.log_start_offset
        assert old_start <= new_start <= max(hw, old_start)
        assert new_start == self.model.leo or any(b.base == new_start for b in self.model.batches)
        self.model.batches = [b for b in self.model.batches if b.base >= new_start]
        self.model.log_start = new_start

    @rule()
    def clean_reopen(self) -> None:
        start, rp = self.log.log_start_offset, self.log.recovery_point
        self.log.close()
        self.log = Log.open(
            self.dir,
            CONFIG,
            clock=self.clock,
            open_files=self.files,
            log_start_offset=start,
            recovery_point=rp,
            had_clean_shutdown=True,
        )
        assert self.log.load_report.truncated_bytes == 0

    @rule()
    def reopen_without_indexes(self) -> None:
        start = self.log.log_start_offset
        self.log.close()
        for idx in self.dir.glob("*.index"):
            idx.unlink()
        self.log = Log.open(
            self.dir,
            CONFIG,
            clock=self.clock,
            open_files=self.files,
            log_start_offset=start,
            had_clean_shutdown=True,
        )

    @rule(kind=st.sampled_from(["tear", "garbage", "flip", "none"]), data=st.data())
    def crash(self, kind: str, data: st.DataObject) -> None:
        log = self.log
        start, rp = log.log_start_offset, log.recovery_point
        seg = log.active_segment
        batches = seg.batches()
        # first byte that was not fsynced: the start of the first batch at/after the RP
        unflushed = next((pos for pos, h in batches if h.base_offset >= rp), seg.size)
        path = seg.log_path
        log.close_without_flush()
        base_of_seg = seg.base_offset
        if kind == "tear" and seg.size > unflushed:
            cut = data.draw(st.integers(unflushed, seg.size - 1))
            os.truncate(path, cut)
            self.model.keep_batches_ending_by(self._offset_end_at(batches, base_of_seg, cut))
        elif kind == "garbage":
            junk = data.draw(st.binary(min_size=1, max_size=200))
            with open(path, "ab") as f:
                f.write(junk)
        elif kind == "flip" and seg.size > unflushed:
            where = data.draw(st.integers(unflushed, seg.size - 1))
            bpos = max(p for p, _ in batches if p <= where)
            if PARTITION_LEADER_EPOCH_OFFSET <= where - bpos < PARTITION_LEADER_EPOCH_OFFSET + 4:
                where = bpos + PARTITION_LEADER_EPOCH_OFFSET + 4  # the magic byte instead
            raw = bytearray(path.read_bytes())
            raw[where] ^= data.draw(st.integers(1, 255))
            path.write_bytes(bytes(raw))
            self.model.keep_batches_ending_by(self._offset_end_at(batches, base_of_seg, where))
        self.log = Log.open(
            self.dir,
            CONFIG,
            clock=self.clock,
            open_files=self.files,
            log_start_offset=start,
            recovery_point=rp,
        )
        if self.model.leo < self.model.log_start:
            self.model.batches = []

    @staticmethod
    def _offset_end_at(batches: list, seg_base: int, byte: int) -> int:
        """The LEO that survives when the active segment is damaged at `byte`."""
        end = seg_base
        for pos, h in batches:
            if pos + h.size_in_bytes <= byte:
                end = h.next_offset
        return end

    # --- invariants ----------------------------------------------------------------------

    @invariant()
    def matches_model(self) -> None:
        if not hasattr(self, "log"):
            return
        log = self.log
        assert log.log_start_offset == self.model.log_start
        assert log.log_end_offset == self.model.leo
        assert log.log_start_offset <= log.high_watermark <= log.log_end_offset
        got: list[tuple[int, bytes]] = []
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            chunk = log.read(offset, 100_000).read()
            list(iter_batches(chunk))  # never an invalid batch
            recs = decode_all(chunk)
            got.extend((r.offset, r.value) for r in recs if r.offset >= offset)
            offset = recs[-1].offset + 1
        assert got == self.model.records_from(self.model.log_start)
        # epoch cache agrees with the batches that exist
        expected_epochs: list[tuple[int, int]] = []
        for b in self.model.batches:
            if not expected_epochs or expected_epochs[-1][0] != b.epoch:
                expected_epochs.append((b.epoch, b.base))
        actual = [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries]
        if self.model.batches:
            # retention may have moved the first epoch's start up to the log start
            assert actual[1:] == expected_epochs[1:]
            assert actual[0][0] == expected_epochs[0][0]
        else:
            # retention keeps the epoch covering the log start, moved up to it (Kafka's
            # truncateFromStart), even when no record of it is left
            assert all(start <= self.model.leo for _, start in actual)


LogMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("MINIKAFKA_HYPOTHESIS_EXAMPLES", "150")),
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestLogStateMachine = LogMachine.TestCase


class CappedLogMachine(LogMachine):
    """The same, with the log's segment files in a cache of 2 open descriptors: segments
    are closed and opened again all the time, and nothing of the above may change."""

    CAP = 2

    def __init__(self) -> None:
        super().__init__()
        self.files = OpenFiles(self.CAP)

    @invariant()
    def within_the_cap(self) -> None:
        assert self.files is not None
        assert self.files.pinned_count == 0, "a pin outlived its call"
        assert self.files.open_count <= self.CAP


CappedLogMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("MINIKAFKA_HYPOTHESIS_EXAMPLES", "150")) // 3,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestCappedLogStateMachine = CappedLogMachine.TestCase
