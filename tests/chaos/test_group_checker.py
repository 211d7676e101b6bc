"""The consumer-group check of `minikafka.chaos.checker` on hand-made histories, and the
group workload's recording (`GroupMember`) against a fake librdkafka consumer.

Each checker test pins one rule of the module docstring's group section: a record of the
final log below the commit point that no member was given is a group loss; delivery to any
member counts; at or above the commit point it is only "not yet consumed"; only
acknowledged commits move the commit point; only the final log is judged."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.chaos import (
    AssignmentChange,
    ConsumerRead,
    DrainedPartition,
    FaultWindow,
    GroupAssignment,
    GroupCommit,
    GroupOffsetRead,
    GroupRead,
    History,
    Outcome,
    ProduceAttempt,
    check,
)
from minikafka.chaos.history import RecordValue, from_json, to_json
from minikafka.chaos.workload import GroupMember

DRAIN = 1_000_000  # the final drain's consumer id, as the runner records it

# --- builders -----------------------------------------------------------------------------


def final_log(logs: Mapping[int, Sequence[RecordValue]], group: str | None = "g") -> History:
    """A history whose final drain read `logs` (partition -> values from offset 0), every
    integer value acknowledged at its offset; no group events yet."""
    attempts: list[ProduceAttempt] = []
    reads: list[ConsumerRead] = []
    drained: list[DrainedPartition] = []
    for p, values in logs.items():
        for o, v in enumerate(values):
            if isinstance(v, int):
                attempts.append(ProduceAttempt(v, 0.5, Outcome.OK, 1.0, p, o))
            reads.append(ConsumerRead(50.0, p, o, v, DRAIN))
        drained.append(DrainedPartition(p, 0, len(values), 51.0, DRAIN))
    return History("t", attempts, reads, drained, group=group)


def given_to(member: int, p: int, offsets_values: list[tuple[int, RecordValue]]) -> list[GroupRead]:
    return [GroupRead(10.0 + o / 100, member, p, o, v) for o, v in offsets_values]


def commit(
    member: int,
    offsets: dict[int, int],
    outcome: Outcome = Outcome.OK,
    t: float = 20.0,
    took: float = 0.01,
) -> GroupCommit:
    if outcome is Outcome.OK:
        return GroupCommit(member, t, outcome, t + took, offsets)
    return GroupCommit(member, t, outcome, t + took, offsets, error="REQUEST_TIMED_OUT: x")


def assignment(member: int, change: str, changed: list[int], owned: list[int]) -> GroupAssignment:
    return GroupAssignment(5.0, member, AssignmentChange(change), tuple(changed), tuple(owned))


# --- losses, deliveries, commit points ----------------------------------------------------


def test_record_below_the_commit_point_never_delivered_is_a_group_loss() -> None:
    """The negative control: a member commits past a record it was never given."""
    h = final_log({0: [10, 11, 12]})
    h.group_reads = given_to(0, 0, [(0, 10), (2, 12)])  # offset 1 never given
    h.group_commits = [commit(0, {0: 3})]
    r = check(h)
    assert r.group is not None
    assert [(x.partition, x.offset, x.value, x.commit_point) for x in r.group.losses] == [
        (0, 1, 11, 3)
    ]
    assert not r.valid
    assert any("never delivered to any member" in p for p in r.problems)
    assert r.lost == []  # the acknowledged writes themselves are all in the final log
    assert (r.group.final_records, r.group.delivered, r.group.not_yet_consumed) == (3, 2, 0)


def test_delivered_to_another_member_before_a_rebalance_is_not_a_loss() -> None:
    h = final_log({0: [10, 11, 12, 13]})
    h.group_assignments = [
        assignment(0, "assign", [0], [0]),
        assignment(0, "revoke", [0], []),
        assignment(1, "assign", [0], [0]),
    ]
    # Member 0 got offsets 0-1 and committed 2 on revoke; member 1 resumed from 1 (an
    # older commit point, say) and got 1 again, then 2-3.
    h.group_reads = given_to(0, 0, [(0, 10), (1, 11)]) + given_to(1, 0, [(1, 11), (2, 12), (3, 13)])
    h.group_commits = [commit(0, {0: 2}, t=20.0), commit(1, {0: 4}, t=21.0)]
    r = check(h)
    assert r.valid, r.problems
    assert r.group is not None
    assert r.group.losses == []
    assert (r.group.delivered, r.group.deliveries, r.group.redelivered) == (4, 5, 1)
    assert r.group.members == 2 and r.group.assignments == 2 and r.group.lost_assignments == 0
    assert r.group.commit_points == {0: 4}


def test_delivered_at_or_above_the_commit_point_is_not_yet_consumed_not_lost() -> None:
    h = final_log({0: [10, 11, 12], 1: [20, 21]})
    h.group_reads = given_to(0, 0, [(0, 10)])
    h.group_commits = [commit(0, {0: 1})]  # partition 1: no commit at all
    r = check(h)
    assert r.valid, r.problems
    assert r.group is not None
    assert r.group.losses == []
    assert r.group.not_yet_consumed == 4  # offsets 1-2 of partition 0, 0-1 of partition 1
    assert r.group.commit_points == {0: 1}


def test_an_unacknowledged_commit_does_not_move_the_commit_point() -> None:
    h = final_log({0: [10, 11, 12, 13]})
    h.group_reads = given_to(0, 0, [(0, 10)])
    h.group_commits = [
        commit(0, {0: 1}),
        commit(0, {0: 4}, Outcome.INFO, t=21.0),  # in doubt (a timeout): may be stored
        commit(0, {0: 3}, Outcome.FAIL, t=22.0),  # refused (an old generation)
    ]
    r = check(h)
    assert r.valid, r.problems
    assert r.group is not None
    assert r.group.commit_points == {0: 1}
    assert r.group.losses == [] and r.group.not_yet_consumed == 3
    assert (r.group.commits_acknowledged, r.group.commits_failed, r.group.commits_in_doubt) == (
        1,
        1,
        1,
    )


def test_an_acknowledged_commit_must_have_no_partition_error() -> None:
    with pytest.raises(ValueError, match="not acknowledged"):
        GroupCommit(0, 1.0, Outcome.OK, 1.1, {0: 3}, errors={0: "NOT_COORDINATOR: x"})
    with pytest.raises(ValueError, match="completion time"):
        GroupCommit(0, 1.0, Outcome.OK, None, {0: 3})


def test_only_the_final_log_is_judged() -> None:
    """Past the drain's end nothing counts, and a value that is not in the final log (an
    in-doubt write truncated away) is neither lost nor consumed."""
    h = final_log({0: [10, 11, 12]})
    # The drain read offset 3 too, but only [0, 2) is its drained range: offset 2 and 3
    # are not part of the final log.
    h.drained = [DrainedPartition(0, 0, 2, 51.0, DRAIN)]
    h.reads.append(ConsumerRead(50.0, 0, 3, 13, DRAIN))
    h.attempts.append(ProduceAttempt(13, 0.5, Outcome.OK, 1.0, 0, 3))
    h.attempts.append(ProduceAttempt(99, 0.5, Outcome.INFO, 1.0))  # never in any log
    h.group_reads = given_to(0, 0, [(0, 10), (1, 11)])
    h.group_commits = [commit(0, {0: 10})]  # far past everything drained
    r = check(h)
    assert r.group is not None
    assert r.group.final_records == 2 and r.group.delivered == 2
    assert r.group.losses == [] and r.group.not_yet_consumed == 0


def test_a_value_given_anywhere_counts_as_delivered_and_garbage_by_position() -> None:
    h = final_log({0: [10, "ff"], 1: [20]})  # "ff": garbage in the log, no attempt wrote it
    h.group_reads = [GroupRead(10.0, 0, 1, 5, 20), GroupRead(10.0, 0, 0, 1, "ff")]
    h.group_commits = [commit(0, {0: 2, 1: 1})]
    r = check(h)
    assert r.group is not None
    # 20 was given at another position: delivered; 10 was not: lost.
    assert [(x.partition, x.offset) for x in r.group.losses] == [(0, 0)]
    assert r.group.delivered == 2


def test_a_member_given_another_value_than_the_final_log_is_divergence() -> None:
    h = final_log({0: [10, 11]})
    h.attempts.append(ProduceAttempt(77, 0.5, Outcome.INFO, 1.0))
    h.group_reads = given_to(0, 0, [(0, 10), (1, 77)])  # 77 was truncated away afterwards
    h.group_commits = [commit(0, {0: 2})]
    r = check(h)
    assert r.group is not None
    assert [(c.partition, c.offset, c.values) for c in r.group.read_divergence] == [
        (0, 1, (11, 77))
    ]
    # And 11, which replaced it, was never given although committed past: a loss.
    assert [x.value for x in r.group.losses] == [11]
    assert not r.valid
    assert any("given to group members with two values" in p for p in r.problems)


def test_commit_regressions_are_reported_but_valid() -> None:
    h = final_log({0: [10, 11, 12, 13, 14]})
    h.group_reads = given_to(0, 0, [(o, 10 + o) for o in range(5)])
    h.group_commits = [
        commit(0, {0: 5}, t=20.0),  # acknowledged at 20.01
        commit(1, {0: 4}, t=19.99, took=1.0),  # invoked before that: unordered, fine
        commit(1, {0: 3}, t=21.0),  # after it was acknowledged, lower: a regression
        commit(1, {0: 2}, Outcome.INFO, t=22.0),  # not acknowledged: not a regression
    ]
    r = check(h)
    assert r.valid, r.problems
    assert r.group is not None
    assert [
        (x.partition, x.previous_offset, x.offset, x.member) for x in r.group.commit_regressions
    ] == [(0, 5, 3, 1)]
    assert dict(r.summary_rows())["group commit regressions"] == "1"


# --- commits applied out of order ---------------------------------------------------------


def pipelined_commits() -> History:
    """Member 0 sends commits to 3 then 5 without waiting; both are acknowledged, 5 first
    at 20.2, 3 at 20.5."""
    h = final_log({0: [10, 11, 12, 13, 14]})
    h.group_reads = given_to(0, 0, [(o, 10 + o) for o in range(5)])
    h.group_commits = [commit(0, {0: 3}, t=20.0, took=0.5), commit(0, {0: 5}, t=20.1, took=0.1)]
    return h


def test_a_commit_applied_after_a_later_acknowledged_one_of_its_member_is_caught() -> None:
    h = pipelined_commits()
    h.group_offset_reads = [GroupOffsetRead(19.0, 19.1, {}), GroupOffsetRead(21.0, 21.1, {0: 3})]
    r = check(h)
    assert r.group is not None
    assert [
        (x.partition, x.offset, x.later_offset, x.member) for x in r.group.commits_out_of_order
    ] == [(0, 3, 5, 0)]
    assert not r.valid and "only a commit sent before a later acknowledged one" in r.problems[0]
    rows = dict(r.summary_rows())
    assert rows["group commits applied out of order / committed-offset reads"] == "1 / 2"


def test_reads_a_correct_coordinator_can_answer_are_not_commits_out_of_order() -> None:
    h = pipelined_commits()
    h.group_commits.append(commit(1, {0: 4}, Outcome.INFO, t=20.15))
    h.group_offset_reads = [
        GroupOffsetRead(20.12, 20.3, {0: 3}),  # begun before 5 was acknowledged
        GroupOffsetRead(21.0, 21.1, {0: 5}),
        GroupOffsetRead(22.0, 22.1, {0: 4}),  # an in-doubt commit landing late
    ]
    r = check(h)
    assert r.valid, r.problems
    assert r.group is not None and r.group.commits_out_of_order == []
    # A value two commits asked for cannot tell which one wrote it.
    h.group_commits.append(commit(1, {0: 3}, t=20.16))
    h.group_offset_reads = [GroupOffsetRead(21.0, 21.1, {0: 3})]
    assert check(h).valid


def test_a_read_a_coordinator_that_lost_the_group_may_answer_is_not_judged() -> None:
    """From a change of coordinator until STALE_COORDINATOR_S after the fault around it,
    the old coordinator may answer from its old state."""
    h = pipelined_commits()
    h.meta["group"] = {"coordinators": [[0.0, 1, 0], [30.0, 2, 1]]}
    h.faults = [FaultWindow("pause", "broker-1", 25.0, 33.0)]
    h.group_offset_reads = [GroupOffsetRead(37.0, 37.1, {0: 3})]
    assert check(h).valid
    h.group_offset_reads = [GroupOffsetRead(38.5, 38.6, {0: 3})]
    assert not check(h).valid


# --- the history: round trip and backward compatibility -----------------------------------


def group_history() -> History:
    h = final_log({0: [10, 11], 1: [20, None, "zz"]}, group="chaos-t")
    h.group_reads = given_to(0, 0, [(0, 10), (1, 11)]) + given_to(1, 1, [(1, None), (2, "zz")])
    h.group_commits = [
        commit(0, {0: 2, 1: 0}),
        GroupCommit(
            1, 21.0, Outcome.INFO, 22.0, {1: 3}, errors={1: "REQUEST_TIMED_OUT: x"}, error=None
        ),
        GroupCommit(1, 23.0, Outcome.FAIL, 23.5, {1: 3}, error="ILLEGAL_GENERATION: x"),
    ]
    h.group_assignments = [
        assignment(0, "assign", [0, 1], [0, 1]),
        assignment(0, "revoke", [1], [0]),
        assignment(1, "assign", [1], [1]),
        assignment(1, "lost", [1], []),
    ]
    h.group_offset_reads = [GroupOffsetRead(24.0, 24.5, {0: 2})]
    return h


def test_history_json_round_trip_with_group_records(tmp_path: Path) -> None:
    h = group_history()
    assert from_json(History, json.loads(json.dumps(to_json(h)))) == h
    h.dump(tmp_path / "history.json")
    assert History.load(tmp_path / "history.json") == h


def test_a_history_written_before_the_group_workload_loads_without_a_group() -> None:
    d = to_json(group_history())
    for key in ("group", "group_reads", "group_commits", "group_assignments", "group_offset_reads"):
        del d[key]
    h = from_json(History, d)
    assert h.group is None and not h.group_reads and not h.group_commits
    r = check(h)
    assert r.group is None and to_json(r)["group"] is None
    assert not any(name.startswith("group") for name, _ in r.summary_rows())


def test_result_json_and_summary_rows_carry_the_group_figures() -> None:
    r = check(group_history())
    d = json.loads(json.dumps(to_json(r)))["group"]
    assert d["group"] == "chaos-t"
    assert d["commits_acknowledged"] == 1 and d["commits_in_doubt"] == 1
    assert d["commits_failed"] == 1 and d["lost_assignments"] == 1
    assert d["commit_points"] == {"0": 2, "1": 0}
    rows = dict(r.summary_rows())
    assert rows["group losses (committed past, never delivered)"] == "0"
    assert rows["group commits acknowledged / failed / in doubt"] == "1 / 1 / 1"
    assert rows["group: final-log records / delivered to a member"] == "5 / 4"


# --- property: honest members never lose, a dropped record below the commit point does ----


@st.composite
def group_runs(draw: st.DrawFn) -> tuple[History, list[tuple[int, int]]]:
    """A final log per partition and members that consume it honestly: each partition is
    handed from owner to owner; an owner starts at the last acknowledged commit (or 0),
    is given records in order and commits the next offset, acknowledged or not. Returns
    the history and the positions that were given at least once."""
    partitions = draw(st.integers(1, 3))
    h = final_log(
        {p: list(range(100 * p, 100 * p + draw(st.integers(0, 12)))) for p in range(partitions)}
    )
    t = 10.0
    given: set[tuple[int, int]] = set()
    for p in range(partitions):
        end = len([r for r in h.reads if r.partition == p])
        committed = 0
        for _ in range(draw(st.integers(1, 4))):  # owners, one after the other
            member = draw(st.integers(0, 2))
            stop = draw(st.integers(committed, end))
            for o in range(committed, stop):
                t += 0.01
                h.group_reads.append(GroupRead(t, member, p, o, 100 * p + o))
                given.add((p, o))
            if stop > committed:
                ok = draw(st.booleans())
                t += 0.01
                h.group_commits.append(
                    commit(member, {p: stop}, Outcome.OK if ok else Outcome.INFO, t=t)
                )
                if ok:
                    committed = stop
    return h, sorted(given)


@settings(max_examples=150, deadline=None)
@given(group_runs())
def test_honest_members_lose_nothing(run: tuple[History, list[tuple[int, int]]]) -> None:
    h, given = run
    r = check(h)
    assert r.valid, r.problems
    assert r.group is not None
    assert r.group.losses == [] and r.group.commit_regressions == []
    assert r.group.delivered + r.group.not_yet_consumed == r.group.final_records
    assert r.group.delivered == len(given)


@settings(max_examples=150, deadline=None)
@given(group_runs(), st.data())
def test_a_record_dropped_below_the_commit_point_is_exactly_the_loss(
    run: tuple[History, list[tuple[int, int]]], data: st.DataObject
) -> None:
    h, _ = run
    r = check(h)
    assert r.group is not None
    below = sorted(
        {(g.partition, g.offset) for g in h.group_reads}
        & {(p, o) for p, c in r.group.commit_points.items() for o in range(c)}
    )
    if not below:
        return
    p, o = data.draw(st.sampled_from(below))
    h.group_reads = [g for g in h.group_reads if (g.partition, g.offset) != (p, o)]
    r = check(h)
    assert r.group is not None
    assert [(x.partition, x.offset) for x in r.group.losses] == [(p, o)]
    assert not r.valid


# --- the recording: GroupMember against a fake consumer -----------------------------------


class FakeMessage:
    def __init__(self, partition: int, offset: int, value: bytes) -> None:
        self._p, self._o, self._v = partition, offset, value

    def error(self) -> None:
        return None

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def value(self) -> bytes:
        return self._v


class FakeTopicPartition:
    def __init__(self, partition: int, offset: int = -1001, error: Any = None) -> None:
        self.topic, self.partition, self.offset, self.error = "t", partition, offset, error


class FakeConsumer:
    """Hands out `queue` (batches, or callables run inside poll as a rebalance would be)
    and answers commits with `answers` (a function of the asked offsets)."""

    def __init__(self) -> None:
        self.queue: list[Any] = []
        self.commits: list[dict[int, int]] = []
        self.answer: Any = lambda asked: asked
        self.callbacks: dict[str, Any] = {}
        self.config: dict[str, Any] = {}
        self.unanswered: list[dict[int, int]] = []  # asynchronous commits sent
        self.closed = False

    def subscribe(self, topics: list[str], **callbacks: Any) -> None:
        self.callbacks = callbacks

    def poll(self, timeout: float) -> Any:
        while self.queue and callable(self.queue[0]):
            self.queue.pop(0)(self)
        return self.queue.pop(0) if self.queue else None

    def consume(self, n: int, timeout: float) -> list[Any]:
        out: list[Any] = []
        while self.queue and not callable(self.queue[0]) and len(out) < n:
            out.append(self.queue.pop(0))
        return out

    def commit(self, offsets: list[Any], asynchronous: bool) -> Any:
        asked = {tp.partition: tp.offset for tp in offsets}
        self.commits.append(asked)
        if asynchronous:
            self.unanswered.append(asked)
            return None
        return self.answer(asked)

    def answer_async(self, index: int = 0, error: Any = None) -> Any:
        """A poll step that serves the answer to the `index`-th unanswered asynchronous
        commit (as librdkafka's on_commit callback, inside poll)."""

        def serve(c: FakeConsumer) -> None:
            asked = c.unanswered.pop(index)
            partitions = [FakeTopicPartition(p, o) for p, o in asked.items()]
            c.config["on_commit"](error, partitions)

        return serve

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeConsumer]:
    consumer = FakeConsumer()

    def new_consumer(config: dict[str, Any]) -> FakeConsumer:
        consumer.config = config
        return consumer

    monkeypatch.setattr("minikafka.client.librdkafka.new_consumer", new_consumer)
    yield consumer


def member(commit_every: int = 2, drop_every: int = 0, asynchronous: bool = False) -> GroupMember:
    ticks = iter(range(1, 10_000))
    return GroupMember(
        7,
        {},
        "t",
        lambda: float(next(ticks)),
        commit_every,
        3600.0,
        drop_every=drop_every,
        asynchronous=asynchronous,
    )


def assign(*partitions: int) -> Any:
    return lambda c: c.callbacks["on_assign"](c, [FakeTopicPartition(p) for p in partitions])


def revoke(*partitions: int) -> Any:
    return lambda c: c.callbacks["on_revoke"](c, [FakeTopicPartition(p) for p in partitions])


def acked(asked: dict[int, int]) -> list[FakeTopicPartition]:
    return [FakeTopicPartition(p, o) for p, o in asked.items()]


def test_member_records_what_it_is_given_and_commits_the_next_offsets(
    fake: FakeConsumer,
) -> None:
    m = member(commit_every=2)
    events = m.subscribe()
    fake.answer = acked
    fake.queue = [assign(0, 1), FakeMessage(0, 0, b"10"), FakeMessage(1, 5, b"25")]
    events += m.step()
    reads = [e for e in events if isinstance(e, GroupRead)]
    commits = [e for e in events if isinstance(e, GroupCommit)]
    assert [(r.member, r.partition, r.offset, r.value) for r in reads] == [
        (7, 0, 0, 10),
        (7, 1, 5, 25),
    ]
    assert [(c.offsets, c.outcome) for c in commits] == [({0: 1, 1: 6}, Outcome.OK)]
    assignments = [e for e in events if isinstance(e, GroupAssignment)]
    assert [(a.change, a.partitions) for a in assignments] == [(AssignmentChange.ASSIGN, (0, 1))]
    # Nothing new: nothing committed again.
    assert m.step() == [] and len(fake.commits) == 1


def test_member_commit_with_a_partition_error_is_not_acknowledged_and_is_retried(
    fake: FakeConsumer,
) -> None:
    from confluent_kafka import KafkaError

    m = member(commit_every=1)
    m.subscribe()
    fake.answer = lambda asked: [
        FakeTopicPartition(0, asked[0], KafkaError(KafkaError.NOT_COORDINATOR))
    ]
    fake.queue = [assign(0), FakeMessage(0, 0, b"10")]
    (_, _, first) = m.step()
    assert isinstance(first, GroupCommit) and first.outcome is Outcome.INFO
    assert first.errors and 0 in first.errors
    fake.answer = lambda asked: [FakeTopicPartition(0, asked[0], KafkaError(22))]
    fake.queue = [FakeMessage(0, 1, b"11")]
    (_, second) = m.step()
    assert isinstance(second, GroupCommit) and second.outcome is Outcome.FAIL
    fake.answer = acked
    (third,) = m.commit_pending()
    assert isinstance(third, GroupCommit) and third.outcome is Outcome.OK
    assert third.offsets == {0: 2}
    assert m.commit_pending() == []


def test_member_commits_on_revoke_and_never_commits_a_partition_it_gave_up(
    fake: FakeConsumer,
) -> None:
    m = member(commit_every=100)
    m.subscribe()
    fake.answer = acked
    fake.queue = [assign(0, 1), FakeMessage(0, 0, b"10"), FakeMessage(1, 0, b"20")]
    m.step()
    assert fake.commits == []
    fake.queue = [revoke(1)]
    events = m.step()
    assert fake.commits == [{1: 1}]  # the handover commit, of the revoked partition only
    assert [e.change for e in events if isinstance(e, GroupAssignment)] == [AssignmentChange.REVOKE]
    m.commit_pending()
    assert fake.commits == [{1: 1}, {0: 1}]


def test_a_broken_member_commits_past_records_it_did_not_record(fake: FakeConsumer) -> None:
    m = member(commit_every=3, drop_every=2)
    m.subscribe()
    fake.answer = acked
    fake.queue = [assign(0), *(FakeMessage(0, o, str(10 + o).encode()) for o in range(3))]
    events = m.step()
    assert [e.offset for e in events if isinstance(e, GroupRead)] == [0, 2]
    assert fake.commits == [{0: 3}]


def test_an_asynchronous_member_keeps_several_commits_in_flight_and_records_each_answer(
    fake: FakeConsumer,
) -> None:
    from confluent_kafka import KafkaError

    m = member(commit_every=2, asynchronous=True)
    m.subscribe()
    fake.queue = [assign(0), *(FakeMessage(0, o, str(10 + o).encode()) for o in range(5))]
    m.step()
    # Every 2 records, then what is left of the batch, none waited for.
    assert fake.commits == [{0: 2}, {0: 4}, {0: 5}]
    assert len(fake.unanswered) == 3
    # Answers come in poll; 2 and 5 acknowledged, 4 failed in doubt.
    fake.queue = [
        fake.answer_async(0),
        fake.answer_async(0, KafkaError(KafkaError.REQUEST_TIMED_OUT)),
        fake.answer_async(0),
    ]
    events = m.step()
    commits = [e for e in events if isinstance(e, GroupCommit)]
    assert [(c.offsets, c.outcome) for c in commits] == [
        ({0: 2}, Outcome.OK),
        ({0: 4}, Outcome.INFO),
        ({0: 5}, Outcome.OK),
    ]
    assert all(c.complete_time is not None and c.complete_time > c.invoke_time for c in commits)
    assert fake.commits == [{0: 2}, {0: 4}, {0: 5}]  # 5 covers 4: nothing asked again
    # Something processed and a commit in flight at close: in doubt.
    fake.queue = [FakeMessage(0, 5, b"15")]
    m.step()
    (last,) = [e for e in m.close() if isinstance(e, GroupCommit)]
    assert (last.offsets, last.outcome, last.complete_time) == ({0: 6}, Outcome.INFO, None)
