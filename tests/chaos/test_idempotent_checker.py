"""The checker's rules for the idempotent producer (`History.producer`): every produced
value is in the log at most once, an acknowledged one exactly once at its acknowledged
position, and a duplicate fails the run; the plain producer's duplicates are only counted."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.chaos import (
    ConsumerRead,
    DrainedPartition,
    History,
    Outcome,
    ProduceAttempt,
    ProducerMode,
    check,
)
from minikafka.chaos.history import from_json, to_json
from tests.chaos.test_checker import ack, info, read

IDEMPOTENT = ProducerMode.IDEMPOTENT


def timed_out(value: int, t: float = 1.0) -> ProduceAttempt:
    """Given up after the delivery timeout: in doubt, as every idempotent error is."""
    return ProduceAttempt(value, t - 0.01, Outcome.INFO, t, error="_MSG_TIMED_OUT: timed out")


def history(
    attempts: list[ProduceAttempt],
    reads: list[ConsumerRead],
    producer: ProducerMode = IDEMPOTENT,
    **kw: object,
) -> History:
    return History("t", attempts, reads, producer=producer, **kw)  # type: ignore[arg-type]


def test_each_value_exactly_once_passes() -> None:
    attempts = [ack(10, 0, 0), ack(11, 0, 1), ack(12, 1, 0)]
    reads = [read(0, 0, 10), read(0, 1, 11), read(1, 0, 12)]
    r = check(history(attempts, reads))
    assert r.valid, r.problems
    assert r.producer is IDEMPOTENT
    assert r.ok == 3 and r.duplicates == []


def test_an_acknowledged_value_at_a_second_offset_fails_the_run() -> None:
    # Read at its acknowledged offset and again later: a retry the broker appended again.
    attempts = [ack(10, 0, 0), ack(11, 0, 2)]
    reads = [read(0, 0, 10), read(0, 1, 10), read(0, 2, 11)]
    r = check(history(attempts, reads))
    assert [(d.value, d.positions) for d in r.duplicates] == [(10, ((0, 0), (0, 1)))]
    assert r.ok == 2 and r.lost == [] and r.moved == []
    assert not r.valid
    assert r.problems == [
        "1 values written at more than one offset by the idempotent producer: 10@[(0, 0), (0, 1)]"
    ]


def test_the_same_history_from_the_plain_producer_only_counts_the_duplicate() -> None:
    attempts = [ack(10, 0, 0), ack(11, 0, 2)]
    reads = [read(0, 0, 10), read(0, 1, 10), read(0, 2, 11)]
    r = check(history(attempts, reads, producer=ProducerMode.PLAIN))
    assert len(r.duplicates) == 1
    assert r.valid and r.producer is ProducerMode.PLAIN


def test_a_value_in_doubt_written_once_passes_twice_fails() -> None:
    # Failed after the delivery timeout, yet one of its tries was appended: at most once.
    attempts = [ack(10, 0, 0), timed_out(11), ack(12, 0, 2)]
    once = check(history(attempts, [read(0, 0, 10), read(0, 1, 11), read(0, 2, 12)]))
    assert once.valid, once.problems
    assert once.recovered == [11] and once.in_doubt == 1
    attempts = [*attempts, ack(13, 0, 4)]
    twice = check(
        history(
            attempts,
            [read(0, 0, 10), read(0, 1, 11), read(0, 2, 12), read(0, 3, 11), read(0, 4, 13)],
        )
    )
    assert [d.value for d in twice.duplicates] == [11]
    assert not twice.valid


def test_a_value_in_doubt_never_written_passes() -> None:
    attempts = [ack(10, 0, 0), timed_out(11), info(12)]
    r = check(history(attempts, [read(0, 0, 10)], drained=[DrainedPartition(0, 0, 1, 20.0)]))
    assert r.valid, r.problems
    assert r.in_doubt == 2 and r.recovered == []


def test_a_duplicate_across_partitions_and_consumers_fails() -> None:
    # A drain consumer (1) finds the value in another partition than the live one read it.
    attempts = [ack(10, 0, 0)]
    reads = [read(0, 0, 10), read(1, 0, 10, consumer=1)]
    r = check(history(attempts, reads))
    assert [(d.value, d.positions) for d in r.duplicates] == [(10, ((0, 0), (1, 0)))]
    assert not r.valid


def test_lost_is_still_a_failure() -> None:
    attempts = [ack(10, 0, 0), ack(11, 0, 1)]
    r = check(history(attempts, [read(0, 1, 11)]))
    assert r.lost == [10] and not r.valid


def test_a_fatal_producer_error_fails_the_run() -> None:
    attempts = [ack(10, 0, 0)]
    meta = {"producer_fatal_errors": ["producer 1: _FATAL: out of order sequence"]}
    r = check(history(attempts, [read(0, 0, 10)], meta=meta))
    assert not r.valid
    assert r.problems == [
        "1 producers stopped by a fatal error: producer 1: _FATAL: out of order sequence"
    ]


def test_the_report_names_the_mode_and_histories_keep_it() -> None:
    h = history([ack(10, 0, 0)], [read(0, 0, 10)])
    r = check(h)
    rows = dict(r.summary_rows())
    assert rows["producer"] == "idempotent (retries; each value at most once)"
    assert rows["duplicates (values read at two offsets): any fails the run"] == "0"
    assert json.loads(json.dumps(to_json(r)))["producer"] == "idempotent"
    data = json.loads(json.dumps(to_json(h)))
    assert data["producer"] == "idempotent"
    assert from_json(History, data) == h
    # Histories written before the mode existed are the plain producer's.
    del data["producer"]
    assert from_json(History, data).producer is ProducerMode.PLAIN
    assert dict(check(History("t")).summary_rows())["producer"] == "plain (one try per record)"


@st.composite
def idempotent_runs(draw: st.DrawFn) -> tuple[History, list[int]]:
    """A log written by an idempotent producer: acknowledged values at their offsets,
    values in doubt appended once or not at all; read back fully. Also the values that
    could be appended a second time (any value in the log)."""
    partitions = draw(st.integers(1, 3))
    logs: dict[int, list[int]] = {p: [] for p in range(partitions)}
    attempts: list[ProduceAttempt] = []
    t = 0.0
    for value in range(draw(st.integers(1, 30))):
        t += draw(st.floats(0.001, 1.0))
        p = draw(st.integers(0, partitions - 1))
        kind = draw(st.sampled_from(["ok", "ok", "ok", "info-written", "info-not"]))
        if kind == "ok":
            attempts.append(ProduceAttempt(value, t - 0.001, Outcome.OK, t, p, len(logs[p])))
            logs[p].append(value)
        else:
            if kind == "info-written":
                logs[p].append(value)
            attempts.append(ProduceAttempt(value, t - 0.001, Outcome.INFO, t, error="timed out"))
    reads = [ConsumerRead(t + 1 + o, p, o, v) for p, log in logs.items() for o, v in enumerate(log)]
    drained = [DrainedPartition(p, 0, len(log), t + 100) for p, log in logs.items()]
    h = History("t", attempts, reads, drained, start=0.0, end=t, producer=IDEMPOTENT)
    return h, [v for log in logs.values() for v in log]


@settings(max_examples=200, deadline=None)
@given(idempotent_runs(), st.data())
def test_exactly_once_passes_and_any_second_copy_fails(
    run: tuple[History, list[int]], data: st.DataObject
) -> None:
    h, written = run
    r = check(h)
    assert r.valid, r.problems
    assert r.duplicates == [] and r.lost == [] and r.ok == r.acknowledged
    if not written:
        return
    # The broker appends one of them again, at the end of some partition.
    again = data.draw(st.sampled_from(written))
    p = data.draw(st.integers(0, 2))
    end = 1 + max((x.offset for x in h.reads if x.partition == p), default=-1)
    h.reads.append(ConsumerRead(1000.0, p, end, again))
    r = check(h)
    assert [d.value for d in r.duplicates] == [again]
    assert not r.valid
