import itertools

from hypothesis import given
from hypothesis import strategies as st

from minikafka.storage.checkpoint import EpochEntry, LeaderEpochCheckpointFile
from minikafka.storage.leader_epoch_cache import LeaderEpochCache

LEO = [100]


def cache(*entries):
    c = LeaderEpochCache(lambda: LEO[0])
    for e, o in entries:
        c.assign(e, o)
    return c


def pairs(c):
    return [(e.epoch, e.start_offset) for e in c.entries]


def test_assign_appends_new_epochs_and_ignores_same_epoch_later_offsets():
    c = cache((0, 0), (0, 5), (1, 10), (1, 12), (3, 20))
    assert pairs(c) == [(0, 0), (1, 10), (3, 20)]


def test_assign_same_epoch_lower_offset_replaces_entry():
    c = cache((0, 0), (1, 10))
    c.assign(1, 7)
    assert pairs(c) == [(0, 0), (1, 7)]


def test_assign_drops_entries_not_strictly_below_new_one():
    c = cache((0, 0), (1, 10), (2, 20))
    c.assign(1, 15)  # epoch 1 again after 2: both old (1, 10) and (2, 20) are dropped (Kafka)
    assert pairs(c) == [(0, 0), (1, 15)]
    c = cache((0, 0), (1, 10), (2, 20))
    c.assign(3, 15)  # higher epoch at a lower offset: 2 (start 20 >= 15) must go
    assert pairs(c) == [(0, 0), (1, 10), (3, 15)]


def test_end_offset_for_latest_epoch_is_leo():
    LEO[0] = 100
    assert cache((0, 0), (2, 50)).end_offset_for(2) == (2, 100)


def test_end_offset_for_older_epoch_is_start_of_next_epoch():
    c = cache((0, 0), (2, 50), (4, 80))
    assert c.end_offset_for(0) == (0, 50)
    assert c.end_offset_for(2) == (2, 80)


def test_end_offset_for_unknown_epoch_between_known_ones_answers_floor_epoch():
    c = cache((0, 0), (2, 50), (4, 80))
    assert c.end_offset_for(1) == (0, 50)
    assert c.end_offset_for(3) == (2, 80)


def test_end_offset_for_epoch_below_all_answers_first_start():
    c = cache((3, 40), (5, 70))
    assert c.end_offset_for(1) == (1, 40)


def test_end_offset_for_epoch_above_all_is_undefined():
    assert cache((0, 0), (2, 50)).end_offset_for(7) == (-1, -1)


def test_end_offset_for_undefined_epoch_and_empty_cache():
    assert cache((0, 0)).end_offset_for(-1) == (-1, -1)
    assert cache().end_offset_for(0) == (-1, -1)


def test_truncate_from_end_removes_epochs_starting_at_or_after():
    c = cache((0, 0), (1, 10), (2, 20))
    c.truncate_from_end(20)
    assert pairs(c) == [(0, 0), (1, 10)]
    c.truncate_from_end(11)
    assert pairs(c) == [(0, 0), (1, 10)]
    c.truncate_from_end(10)
    assert pairs(c) == [(0, 0)]


def test_truncate_from_start_moves_covering_epoch_start_up():
    c = cache((0, 0), (1, 10), (2, 20))
    c.truncate_from_start(15)
    assert pairs(c) == [(1, 15), (2, 20)]
    c.truncate_from_start(20)
    assert pairs(c) == [(2, 20)]
    c.truncate_from_start(5)
    assert pairs(c) == [(2, 20)]


def test_epoch_for_offset():
    c = cache((0, 0), (2, 50))
    assert [c.epoch_for_offset(o) for o in (0, 49, 50, 999)] == [0, 0, 2, 2]
    assert cache((1, 10)).epoch_for_offset(3) == -1


def test_changes_are_persisted_and_reloadable(tmp_path):
    ck = LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint")
    c = LeaderEpochCache(lambda: 0, ck)
    c.assign(0, 0)
    c.assign(4, 30)
    # A new epoch waits for persist() (the log's flush, before its recovery point moves).
    assert ck.read() == []
    c.persist()
    assert ck.read() == [EpochEntry(0, 0), EpochEntry(4, 30)]
    c.assign(5, 40)
    # A truncation is written at once, with what was waiting.
    c.truncate_from_end(35)
    assert ck.read() == [EpochEntry(0, 0), EpochEntry(4, 30)]
    c.assign(6, 35)
    c.truncate_from_end(30)
    assert ck.read() == [EpochEntry(0, 0)]
    again = LeaderEpochCache(lambda: 0, ck, ck.read())
    assert again.entries == [EpochEntry(0, 0)]


def test_a_clean_close_writes_only_epochs_with_records(tmp_path):
    """At a log's clean close, an epoch that starts at the LEO (a leadership in which
    nothing was written) is not written; one with records is."""
    ck = LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint")
    c = LeaderEpochCache(lambda: 100, ck)
    c.assign(0, 0)
    c.assign(1, 50)
    c.persist()
    c.assign(2, 100)  # leader at the LEO, nothing appended
    c.persist_at_close(100)
    assert ck.read() == [EpochEntry(0, 0), EpochEntry(1, 50)]
    c.assign(3, 90)  # a follower's batches of epoch 3 from offset 90
    c.persist_at_close(100)
    assert ck.read() == [EpochEntry(0, 0), EpochEntry(1, 50), EpochEntry(3, 90)]


# A log's history: each step a new epoch at the LEO (delta: how much higher), then records
# appended in it (how many: 0 for a leadership that wrote nothing); or a flush's persist.
steps = st.lists(
    st.one_of(
        st.tuples(st.just("epoch"), st.integers(1, 3), st.integers(0, 3)),
        st.just(("persist", 0, 0)),
    ),
    max_size=12,
)


@given(steps)
def test_a_cache_reloaded_after_a_clean_close_answers_as_the_closed_one(tmp_path_factory, ops):
    """What the close leaves out changes no answer: once the next batch is appended (in a
    newer epoch, at the LEO), a cache reloaded from the file holds the same entries as the
    one that was closed, and answers every OffsetsForLeaderEpoch alike."""
    ck = LeaderEpochCheckpointFile(tmp_path_factory.mktemp("c") / "leader-epoch-checkpoint")
    leo = [0]
    c = LeaderEpochCache(lambda: leo[0], ck)
    for op, delta, records in ops:
        if op == "persist":
            c.persist()
            continue
        c.assign(c.latest_epoch() + delta if c.entries else delta, leo[0])
        leo[0] += records
    c.persist_at_close(leo[0])
    reloaded = LeaderEpochCache(lambda: leo[0], ck, ck.read())
    next_epoch = c.latest_epoch() + 1 if c.entries else 0
    for cache_ in (c, reloaded):
        cache_.assign(next_epoch, leo[0])
    leo[0] += 1
    assert reloaded.entries == c.entries
    for epoch in range(-1, next_epoch + 2):
        assert reloaded.end_offset_for(epoch) == c.end_offset_for(epoch)


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 500)), max_size=40))
def test_entries_always_strictly_increasing(ops):
    c = cache(*ops)
    es = c.entries
    for a, b in itertools.pairwise(es):
        assert a.epoch < b.epoch and a.start_offset < b.start_offset
    if ops:
        # the most recent assignment is always represented by the last entry
        e, o = ops[-1]
        last = es[-1]
        assert last.epoch == e and last.start_offset <= o
