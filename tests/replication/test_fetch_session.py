"""KIP-227 fetch sessions, sans-IO (minikafka/replication/fetch_session.py): the leader's
session cache (contexts, epochs, eviction, dirty and idle partitions) and the fetcher's
session handler (full and incremental requests, recovery from session errors), with
deterministic cases after Kafka's FetchSessionTest / FetchSessionHandlerTest and hypothesis
runs of a fetcher and a leader talking through faults."""

from __future__ import annotations

import random

import msgpack
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode, error_for_code
from minikafka.replication.fetch_session import (
    FINAL_EPOCH,
    INITIAL,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    CachedPartition,
    ContextKind,
    FetchMetadata,
    FetchSession,
    FetchSessionCache,
    FetchSessionHandler,
    PartitionData,
    next_epoch,
)
from minikafka.rpc import messages as m
from minikafka.rpc.framing import (
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from minikafka.rpc.schema import from_wire

T0, T1, T2 = (TopicPartition("t", i) for i in range(3))
U0 = TopicPartition("u", 0)


def data(offset: int, epoch: int = 0, log_start: int = 0) -> PartitionData:
    return PartitionData(offset, 1 << 20, epoch, log_start)


def cached(**parts: int) -> dict[TopicPartition, CachedPartition]:
    return {
        TopicPartition("t", int(k[1:])): CachedPartition.from_request(data(v))
        for k, v in parts.items()
    }


def new_session(
    cache: FetchSessionCache[object],
    now: int = 0,
    privileged: bool = True,
    partitions: dict[TopicPartition, CachedPartition] | None = None,
) -> FetchSession[object]:
    s = cache.maybe_create_session(now, privileged, partitions or cached(p0=0, p1=0))
    assert s is not None
    return s


# --- the wire --------------------------------------------------------------------------------


def _frame(chunks: list[object]) -> bytes:
    data = b"".join(bytes(c) for c in chunks)  # type: ignore[call-overload]
    return data[4:]


def test_session_fields_cross_the_wire_and_older_requests_mean_sessionless() -> None:
    req = m.FetchRequest(
        2,
        500,
        1,
        1 << 20,
        [m.FetchTopic("t", [m.FetchPartition(0, 17, 4096, 3, 5)])],
        99,
        session_id=1234,
        session_epoch=7,
        forgotten_topics=[m.ForgottenTopic("u", [1, 2])],
    )
    header = RequestHeader(int(m.ApiKey.FETCH), 0, 1, "t")
    _, got = decode_request(_frame(encode_request(header, req)))
    assert got == req
    # A sender that predates KIP-227 (no trailing fields): a sessionless full fetch.
    old = msgpack.packb([2, 500, 1, 1 << 20, [["t", [[0, 17, 4096, 3, 5]]]], 99])
    decoded = from_wire(m.FetchRequest, msgpack.unpackb(old), memoryview(b""))
    assert (decoded.session_id, decoded.session_epoch, decoded.forgotten_topics) == (
        INVALID_SESSION_ID,
        FINAL_EPOCH,
        [],
    )
    resp = m.FetchResponse(int(ErrorCode.INVALID_FETCH_SESSION_EPOCH), [], 1234)
    back = decode_response(_frame(encode_response(5, resp)), m.FetchResponse).body
    assert back == resp
    assert error_for_code(70).message == "The fetch session ID was not found."
    assert error_for_code(71).message == "The fetch session epoch is invalid."
    assert error_for_code(70).retriable and error_for_code(71).retriable


# --- epochs and metadata ---------------------------------------------------------------------


def test_epochs_follow_kafkas_fetch_metadata() -> None:
    assert next_epoch(INITIAL_EPOCH) == 1
    assert next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1  # wraps past 0 (INITIAL) and -1 (FINAL)
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH
    md = FetchMetadata.new_incremental(7)
    assert md == FetchMetadata(7, 1) and not md.is_full
    assert md.next_incremental() == FetchMetadata(7, 2)
    assert md.next_close_existing() == FetchMetadata(7, INITIAL_EPOCH)
    assert INITIAL.is_full and FetchMetadata(0, FINAL_EPOCH).is_full


# --- leader: contexts ------------------------------------------------------------------------


def test_full_fetch_creates_a_session_and_incremental_fetches_advance_its_epoch() -> None:
    cache: FetchSessionCache[object] = FetchSessionCache(rng=random.Random(1))
    ctx = cache.new_context(0, INITIAL_EPOCH, {}, [], privileged=True, now_ms=0)
    assert ctx.kind is ContextKind.FULL
    s = new_session(cache)
    assert s.id != INVALID_SESSION_ID and s.epoch == 1 and cache.get(s.id) is s
    inc = cache.new_context(s.id, 1, {T1: data(5)}, [T0], privileged=True, now_ms=10)
    assert inc.kind is ContextKind.INCREMENTAL and inc.session is s
    assert (inc.added, inc.removed) == ([], [T0])
    assert s.epoch == 2 == inc.expected_epoch and cache.is_current(s, 2)
    assert s.partitions[T1].fetch_offset == 5 and T0 not in s.partitions
    assert s.last_used_ms == 10


def test_session_errors_are_top_level_codes_70_and_71() -> None:
    cache: FetchSessionCache[object] = FetchSessionCache()
    s = new_session(cache)
    unknown = cache.new_context(s.id + 1, 1, {}, [], privileged=True, now_ms=0)
    assert (unknown.kind, unknown.error) == (
        ContextKind.SESSION_ERROR,
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
    )
    assert int(ErrorCode.FETCH_SESSION_ID_NOT_FOUND) == 70
    stale = cache.new_context(s.id, 5, {}, [], privileged=True, now_ms=0)
    assert (stale.kind, stale.error) == (
        ContextKind.SESSION_ERROR,
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
    )
    assert int(ErrorCode.INVALID_FETCH_SESSION_EPOCH) == 71
    assert s.epoch == 1  # a rejected request changes nothing
    # A duplicate of an answered request (same epoch again) is rejected too.
    assert cache.new_context(s.id, 1, {}, [], privileged=True, now_ms=0).session is s
    dup = cache.new_context(s.id, 1, {}, [], privileged=True, now_ms=0)
    assert dup.error == ErrorCode.INVALID_FETCH_SESSION_EPOCH


def test_full_fetches_close_the_named_session_and_final_epoch_is_sessionless() -> None:
    cache: FetchSessionCache[object] = FetchSessionCache()
    s = new_session(cache)
    ctx = cache.new_context(s.id, INITIAL_EPOCH, {}, [], privileged=True, now_ms=0)
    assert ctx.kind is ContextKind.FULL and cache.get(s.id) is None
    s2 = new_session(cache)
    legacy = cache.new_context(s2.id, FINAL_EPOCH, {}, [], privileged=False, now_ms=0)
    assert legacy.kind is ContextKind.SESSIONLESS and len(cache) == 0
    # Consumers' default: id 0, epoch -1.
    assert cache.new_context(0, FINAL_EPOCH, {}, [], privileged=False, now_ms=0).kind is (
        ContextKind.SESSIONLESS
    )


def test_an_incremental_fetch_that_forgets_everything_closes_the_session() -> None:
    cache: FetchSessionCache[object] = FetchSessionCache()
    s = new_session(cache)
    ctx = cache.new_context(s.id, 1, {}, [T0, T1], privileged=True, now_ms=0)
    assert ctx.kind is ContextKind.SESSIONLESS and cache.get(s.id) is None
    cache.mark_dirty(T0)  # no index entries left behind
    assert cache._by_partition == {}


def test_zero_slots_disables_sessions() -> None:
    cache: FetchSessionCache[object] = FetchSessionCache(max_slots=0)
    assert not cache.enabled
    ctx = cache.new_context(0, INITIAL_EPOCH, {T0: data(0)}, [], privileged=True, now_ms=0)
    assert ctx.kind is ContextKind.SESSIONLESS
    assert cache.maybe_create_session(0, True, cached(p0=0)) is None and len(cache) == 0


def test_eviction_prefers_stale_then_less_valuable_sessions() -> None:
    cache: FetchSessionCache[object] = FetchSessionCache(max_slots=2, eviction_ms=100)
    consumer = new_session(cache, now=0, privileged=False, partitions=cached(p0=0))
    follower = new_session(cache, now=0, privileged=True, partitions=cached(p0=0, p1=0))
    # Full, nothing stale, nothing old: a consumer cannot get in; a follower evicts the
    # consumer (Kafka: privileged sessions may evict unprivileged ones at any time).
    assert cache.maybe_create_session(50, False, cached(p0=0, p1=0, p2=0)) is None
    f2 = cache.maybe_create_session(50, True, cached(p0=0))
    assert f2 is not None and cache.get(consumer.id) is None and cache.evictions == 1
    # Both sessions now followers created at 0 and 50; at 120 neither is stale if used.
    cache.new_context(follower.id, 1, {}, [], privileged=True, now_ms=120)
    cache.new_context(f2.id, 1, {}, [], privileged=True, now_ms=120)
    # Old enough (created > 100 ms ago) follower f2 holds 1 partition: a bigger one wins,
    # an equal one does not.
    assert cache.maybe_create_session(160, True, cached(p0=0)) is None
    f3 = cache.maybe_create_session(160, True, cached(p0=0, p1=0, p2=0))
    assert f3 is not None and cache.get(f2.id) is None
    # Unused for longer than eviction_ms: evicted whatever its size, when a session is
    # created (not only when the cache is full).
    cache.new_context(f3.id, 1, {}, [], privileged=True, now_ms=250)
    f4 = cache.maybe_create_session(300, False, cached(p0=0))
    assert f4 is not None and cache.get(follower.id) is None and cache.get(f3.id) is f3
    assert len(cache) == 2 and cache.evictions == 3


# --- leader: what an incremental response carries -------------------------------------------


def test_incremental_responses_carry_only_partitions_with_news() -> None:
    cp = CachedPartition.from_request(data(10))
    assert cp.maybe_update_response(0, 10, 0, 0)  # first response: HW and log start unknown
    assert not cp.maybe_update_response(0, 10, 0, 0)  # nothing new
    assert cp.maybe_update_response(300, 10, 0, 0)  # records
    assert cp.maybe_update_response(0, 11, 0, 0)  # HW moved
    assert cp.maybe_update_response(0, 11, 4, 0)  # log start moved
    assert not cp.maybe_update_response(0, 11, 4, 0)
    assert cp.maybe_update_response(0, 11, 4, int(ErrorCode.NOT_LEADER_OR_FOLLOWER))
    assert cp.high_watermark == -1  # so the partition is sent again once the error is gone
    assert cp.maybe_update_response(0, 11, 4, 0)
    assert not cp.maybe_update_response(0, 11, 4, 0)
    # A consumer sent to another replica (KIP-392) is told so, nothing else new.
    assert cp.maybe_update_response(0, 11, 4, 0, preferred_read_replica=3)
    # Without `update` nothing is recorded (Kafka's size estimate pass).
    assert cp.maybe_update_response(0, 12, 4, 0, update=False)
    assert cp.high_watermark == 11


def test_dirty_idle_and_waking() -> None:
    cache: FetchSessionCache[str] = FetchSessionCache()
    s = cache.maybe_create_session(0, True, cached(p0=0, p1=0, p2=0))
    assert s is not None
    assert list(s.dirty) == [T0, T1, T2]  # a new session reads everything once
    s.settle(T0, True, "state0")
    s.settle(T1, True, "state1")
    s.settle(T2, False, "")
    assert list(s.dirty) == [T2] and s.idle == {T0: "state0", T1: "state1"}
    woken: list[TopicPartition | None] = []
    s.waiter = woken.append
    cache.mark_dirty(T1)
    cache.mark_dirty(U0)  # not in any session: nothing happens
    assert list(s.dirty) == [T2, T1] and T1 not in s.idle and woken == [T1]
    # Listed in a request: read on this fetch, out of idle.
    ctx = cache.new_context(s.id, 1, {T0: data(3)}, [], privileged=True, now_ms=1)
    assert ctx.session is s and T0 in s.dirty and T0 not in s.idle
    assert woken == [T1, None]  # the parked request of the previous epoch is superseded
    # An unsettled partition goes to the back of the line (rotation under a byte budget).
    s.settle(T2, False, "")
    assert list(s.dirty) == [T1, T0, T2]


def test_idle_partitions_are_checked_in_rotation() -> None:
    cache: FetchSessionCache[str] = FetchSessionCache(check_ms=900)
    s = cache.maybe_create_session(0, True, cached(p0=0, p1=0, p2=0))
    assert s is not None
    for tp in (T0, T1, T2):
        s.settle(tp, True, "idle")
    seen: list[TopicPartition] = []
    for i in range(1, 10):
        # 3 partitions every 900 ms, a fetch every 300 ms: one partition per fetch.
        seen.extend(s.due_for_check(300 * i, cache.check_ms))
    assert seen == [T0, T1, T2] * 3  # the longest unchecked first
    assert list(s.idle) == [T0, T1, T2] and not s.dirty
    # A partition that moved and was settled again goes to the back of the rotation.
    cache.mark_dirty(T0)
    s.settle(T0, True, "idle")
    assert s.due_for_check(3000, cache.check_ms) == [T1]
    assert s.due_for_check(3000, cache.check_ms) == []  # no time passed


# --- fetcher: the session handler -------------------------------------------------------------


def test_handler_sends_full_then_only_changes_and_forgotten_partitions() -> None:
    h = FetchSessionHandler(1)
    h.update(T0, data(0))
    h.update(T1, data(0))
    first = h.build()
    assert first.is_full and first.metadata == INITIAL
    assert first.to_send == {T0: data(0), T1: data(0)} and first.to_forget == []
    assert h.handle_response(0, 77, [T0, T1])
    assert h.metadata == FetchMetadata(77, 1)
    idle = h.build()
    assert not idle.is_full and idle.to_send == {} and idle.to_forget == []
    assert h.handle_response(0, 77, [])
    h.update(T0, data(5))  # appended
    h.update(T1, data(0))  # unchanged: not sent
    h.update(T2, data(9))  # added
    h.remove(T1)  # backing off: forgotten
    inc = h.build()
    assert inc.metadata == FetchMetadata(77, 2)
    assert inc.to_send == {T0: data(5), T2: data(9)} and inc.to_forget == [T1]
    assert dict(h.session_partitions) == {T0: data(5), T2: data(9)}
    assert h.handle_response(0, 77, [T0])
    assert h.metadata == FetchMetadata(77, 3)


def test_handler_goes_back_to_a_full_request_after_errors() -> None:
    h = FetchSessionHandler(1)
    h.update(T0, data(0))
    h.build()
    h.handle_response(0, 77, [T0])
    h.build()
    # Unknown session (the leader restarted or evicted it): a brand new session.
    assert not h.handle_response(int(ErrorCode.FETCH_SESSION_ID_NOT_FOUND), 0, [])
    assert h.metadata == INITIAL
    assert h.build().to_send == {T0: data(0)}
    h.handle_response(0, 78, [T0])
    h.build()
    # Wrong epoch: full, closing the old session (Kafka's nextCloseExisting).
    assert not h.handle_response(int(ErrorCode.INVALID_FETCH_SESSION_EPOCH), 78, [])
    assert h.metadata == FetchMetadata(78, INITIAL_EPOCH)
    h.build()
    h.handle_response(0, 79, [T0])
    h.build()
    h.handle_error()  # no response at all
    assert h.metadata == FetchMetadata(79, INITIAL_EPOCH)
    assert h.build().is_full


def test_handler_rejects_responses_that_do_not_match_the_request() -> None:
    h = FetchSessionHandler(1)
    h.update(T0, data(0))
    h.update(T1, data(0))
    h.build()
    assert not h.handle_response(0, 5, [T0])  # a full response omitted T1
    assert h.metadata == FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)
    h.build()
    assert h.handle_response(0, 5, [T0, T1])
    h.build()
    assert not h.handle_response(0, 5, [U0])  # not in the session
    assert h.metadata == FetchMetadata(5, INITIAL_EPOCH)


def test_handler_without_a_session_from_the_leader_keeps_sending_full_requests() -> None:
    h = FetchSessionHandler(1)
    h.update(T0, data(0))
    for _ in range(3):
        req = h.build()
        assert req.is_full and req.metadata == INITIAL and req.to_send == {T0: data(0)}
        assert h.handle_response(0, INVALID_SESSION_ID, [T0])
    # An incremental response with id 0: the leader closed the session.
    h.handle_response(0, 9, [T0])
    h.build()
    assert h.handle_response(0, INVALID_SESSION_ID, [])
    assert h.metadata == INITIAL


# --- hypothesis: a fetcher and a leader through faults -------------------------------------

TPS = [TopicPartition(t, p) for t in ("a", "b") for p in range(3)]

op = st.one_of(
    st.tuples(st.just("update"), st.sampled_from(TPS), st.integers(0, 5), st.integers(0, 2)),
    st.tuples(st.just("remove"), st.sampled_from(TPS)),
    st.tuples(
        st.just("round_trip"),
        st.sampled_from(["ok", "ok", "ok", "lost", "restart", "evict", "duplicate"]),
    ),
)


@settings(max_examples=300, deadline=None)
@given(ops=st.lists(op, max_size=60), slots=st.sampled_from([0, 1, 1000]))
def test_fetcher_and_leader_agree_on_the_session_through_faults(
    ops: list[tuple[object, ...]], slots: int
) -> None:
    """After every answered round trip the leader's session holds exactly what the fetcher
    wants fetched (or there is no session and every request is full); requests after an
    error are full; incremental requests carry only what changed."""
    cache: FetchSessionCache[object] = FetchSessionCache(max_slots=slots, rng=random.Random(0))
    h = FetchSessionHandler(1)
    now = 0
    touched: set[TopicPartition] = set()
    must_be_full = True
    for o in ops:
        now += 10
        if o[0] == "update":
            _, tp, offset, epoch = o
            assert isinstance(tp, TopicPartition)
            h.update(tp, data(int(offset), int(epoch)))  # type: ignore[call-overload]
            touched.add(tp)
            continue
        if o[0] == "remove":
            assert isinstance(o[1], TopicPartition)
            h.remove(o[1])
            touched.add(o[1])
            continue
        fault = o[1]
        wanted = dict(h.fetchable)
        req = h.build()
        if must_be_full:
            assert req.is_full
        if not req.is_full:
            assert set(req.to_send) | set(req.to_forget) <= touched
        touched = set()
        if fault == "restart":
            cache = FetchSessionCache(max_slots=slots, rng=random.Random(now))
        elif fault == "evict" and req.metadata.session_id in cache.sessions:
            cache.remove(req.metadata.session_id)
        md = req.metadata
        ctx = cache.new_context(
            md.session_id, md.epoch, req.to_send, req.to_forget, privileged=True, now_ms=now
        )
        if fault == "duplicate" and ctx.kind is ContextKind.INCREMENTAL:
            # The same request again (a retry): rejected, the first one stands.
            dup = cache.new_context(md.session_id, md.epoch, {}, [], privileged=True, now_ms=now)
            assert dup.error == ErrorCode.INVALID_FETCH_SESSION_EPOCH
        if ctx.kind is ContextKind.SESSION_ERROR:
            ok = h.handle_response(int(ctx.error), INVALID_SESSION_ID, [])
            assert not ok
            must_be_full = True
            continue
        if ctx.kind is ContextKind.INCREMENTAL:
            assert ctx.session is not None
            session_id = ctx.session.id
            # Any partition of the session may come back (it had news).
            answered = [tp for i, tp in enumerate(ctx.session.partitions) if (i + now) % 2]
        else:
            answered = list(req.to_send)
            session_id = INVALID_SESSION_ID
            if ctx.kind is ContextKind.FULL:
                created = cache.maybe_create_session(
                    now,
                    True,
                    {tp: CachedPartition.from_request(d) for tp, d in req.to_send.items()},
                )
                session_id = INVALID_SESSION_ID if created is None else created.id
        if fault == "lost":
            h.handle_error()
            must_be_full = True
            continue
        assert h.handle_response(0, session_id, answered)
        must_be_full = session_id == INVALID_SESSION_ID
        if session_id != INVALID_SESSION_ID:
            s = cache.get(session_id)
            assert s is not None
            assert {tp: cp.request_data() for tp, cp in s.partitions.items()} == wanted
        else:
            assert h.metadata == INITIAL
    # The partition index always matches the sessions.
    for tp, sessions in cache._by_partition.items():
        assert sessions and all(tp in s.partitions for s in sessions)
    for s in cache.sessions.values():
        for tp in s.partitions:
            assert s in cache._by_partition[tp]


@settings(max_examples=300, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["dirty", "settle", "unsettle", "list", "forget"]),
            st.sampled_from(TPS),
        ),
        max_size=80,
    )
)
def test_dirty_and_idle_partitions_stay_disjoint(steps: list[tuple[str, TopicPartition]]) -> None:
    """A session partition is dirty (read on the next fetch), idle (refreshed in place) or
    settled without follower state, never two of these; idle ones are exactly those settled
    since they last moved."""
    cache: FetchSessionCache[str] = FetchSessionCache(rng=random.Random(0))
    s = cache.maybe_create_session(
        0, True, {tp: CachedPartition.from_request(data(0)) for tp in TPS}
    )
    assert s is not None
    epoch = 1
    expect_idle: set[TopicPartition] = set()
    for kind, tp in steps:
        if kind == "dirty":
            cache.mark_dirty(tp)
            expect_idle.discard(tp)
        elif kind == "settle":
            s.settle(tp, True, "st")
            if tp in s.partitions:
                expect_idle.add(tp)
        elif kind == "unsettle":
            s.settle(tp, False, "st")
            expect_idle.discard(tp)
        else:
            listed = {tp: data(1)} if kind == "list" else {}
            forget = [tp] if kind == "forget" else []
            ctx = cache.new_context(s.id, epoch, listed, forget, privileged=True, now_ms=0)
            if ctx.kind is not ContextKind.INCREMENTAL:
                return  # everything forgotten: the session is closed
            epoch += 1
            expect_idle.discard(tp)
        assert not (s.dirty.keys() & s.idle.keys())
        assert s.dirty.keys() <= s.partitions.keys() and s.idle.keys() <= s.partitions.keys()
        assert set(s.idle) == expect_idle
