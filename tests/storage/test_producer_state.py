"""Idempotent producers' per-partition state (storage/producer_state.py): Kafka's rules for
a leader's check of a client's batch, and a hypothesis run of producers that retry any of
their in-flight batches in any order, against a model: no batch is ever appended twice,
a retry gets its first try's offsets, and nothing is refused that Kafka accepts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.protocol.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from minikafka.storage.producer_state import (
    MAX_SEQUENCE,
    BatchMetadata,
    ProducerStateManager,
    last_sequence,
)


def append(state: ProducerStateManager, pid: int, epoch: int, seq: int, n: int, offset: int):
    """The leader's path: check, then update unless it is a duplicate."""
    last = last_sequence(seq, n)
    dup = state.check_leader_append(pid, epoch, seq, last)
    if dup is not None:
        return dup
    state.update(pid, epoch, seq, last, offset, offset + n - 1, 0)
    return None


def test_in_order_batches_are_appended_and_a_retry_gets_the_first_offsets() -> None:
    s = ProducerStateManager()
    assert append(s, 7, 0, 0, 3, 100) is None  # seq 0-2 at offsets 100-102
    assert append(s, 7, 0, 3, 2, 103) is None  # seq 3-4
    assert append(s, 7, 0, 0, 3, 999) == BatchMetadata(0, 2, 100, 102, 0)
    assert append(s, 7, 0, 3, 2, 999) == BatchMetadata(3, 4, 103, 104, 0)
    assert append(s, 7, 0, 5, 1, 105) is None


def test_a_gap_or_an_old_sequence_is_out_of_order() -> None:
    s = ProducerStateManager()
    append(s, 1, 0, 0, 1, 0)
    with pytest.raises(OutOfOrderSequenceError, match="sequence 2 does not follow 0"):
        append(s, 1, 0, 2, 1, 1)
    for i in range(1, 7):
        append(s, 1, 0, i, 1, i)
    # Sequence 1 was six batches ago: no longer a known retry, and not next either.
    with pytest.raises(OutOfOrderSequenceError):
        append(s, 1, 0, 1, 1, 99)


def test_an_older_epoch_is_fenced_and_a_new_one_starts_at_zero() -> None:
    s = ProducerStateManager()
    append(s, 1, 3, 0, 5, 0)
    with pytest.raises(InvalidProducerEpochError):
        append(s, 1, 2, 5, 1, 5)
    with pytest.raises(OutOfOrderSequenceError, match="new epoch 4 starts at sequence 5"):
        append(s, 1, 4, 5, 1, 5)
    assert append(s, 1, 4, 0, 1, 5) is None
    # The old epoch's batches are no duplicates of the new epoch's.
    assert append(s, 1, 4, 1, 1, 6) is None


def test_an_unknown_producer_is_accepted_at_any_sequence() -> None:
    s = ProducerStateManager()
    assert append(s, 9, 0, 1234, 10, 0) is None
    assert append(s, 9, 0, 1244, 1, 10) is None


def test_sequences_wrap_after_the_largest() -> None:
    s = ProducerStateManager()
    append(s, 1, 0, MAX_SEQUENCE - 1, 2, 0)  # MAX-1, MAX
    assert append(s, 1, 0, 0, 3, 2) is None
    assert last_sequence(MAX_SEQUENCE, 3) == 1


@settings(max_examples=200)
@given(
    producers=st.integers(min_value=1, max_value=3),
    steps=st.lists(
        st.tuples(st.integers(0, 2), st.integers(1, 4), st.integers(0, 4), st.booleans()),
        min_size=1,
        max_size=60,
    ),
)
def test_retries_of_in_flight_batches_are_never_appended_twice(producers, steps) -> None:
    """Each step: producer p either sends its next batch of n records, or retries one of its
    last five sent batches (chosen by index) as if its acknowledgement was lost."""
    s = ProducerStateManager()
    next_seq = dict.fromkeys(range(producers), 0)
    sent: dict[int, list[tuple[int, int]]] = {p: [] for p in range(producers)}  # (seq, n)
    log: list[tuple[int, int]] = []  # (producer, sequence) of every appended record
    first_offsets: dict[tuple[int, int], int] = {}  # (producer, first seq) -> offset
    for p_raw, n, back, retry in steps:
        p = p_raw % producers
        if retry and sent[p]:
            seq, n = sent[p][-1 - min(back, len(sent[p]) - 1)]
        else:
            seq = next_seq[p]
            sent[p].append((seq, n))
            next_seq[p] = seq + n
        dup = append(s, p, 0, seq, n, len(log))
        if dup is None:
            first_offsets[(p, seq)] = len(log)
            log += [(p, seq + i) for i in range(n)]
        else:
            assert dup.first_offset == first_offsets[(p, seq)]
    assert len(log) == len(set(log)), "a record was appended twice"
    for p in range(producers):
        assert sorted(q for pp, q in log if pp == p) == list(range(next_seq[p]))
