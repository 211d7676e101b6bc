"""KIP-227 incremental fetch sessions: Kafka's FetchSession.scala (leader side) and
FetchSessionHandler.java (fetcher side), sans-IO.

A fetcher's first request is *full*: it lists every partition, with session epoch 0
(INITIAL_EPOCH), and the leader answers with a new session id if it has a free slot
(`max.incremental.fetch.session.cache.slots`). Later requests are *incremental* (that id,
epoch 1, 2, ...): they list only the partitions whose fetch parameters changed, and
`forgotten_topics` for the ones dropped; the others are fetched with the parameters the
leader cached. The response carries only partitions with something new: records, a high
watermark or log start offset change, or an error. A wrong epoch is answered with
INVALID_FETCH_SESSION_EPOCH, an unknown id with FETCH_SESSION_ID_NOT_FOUND; the fetcher then
goes back to a full request. Epoch -1 (FINAL_EPOCH) with id 0 is a sessionless full fetch,
what consumers send.

Beyond Kafka, a leader session tracks which of its partitions are *dirty*: listed in a
request, moved since they were last read (an append, a HW or log start change, a role
change: the replica manager calls `FetchSessionCache.mark_dirty`), or not yet settled
(behind, in error, not in the ISR, or a fetch state on the leader that does not know the
follower's offset yet). Only dirty partitions are read on an incremental fetch; the rest
are *idle*: a follower fetching at the leader's LEO, whose fetch state the replica manager
refreshes in one tight loop (`FollowerState`s in `FetchSession.idle`). So an idle
partition costs two attribute writes per fetch and nothing on the wire; and, as a safety
net, a few comparisons every `check_ms` (`FetchSession.due_for_check`).

No sockets, no asyncio, no clock of its own: times come in as `now_ms`, session ids from an
injected `random.Random`.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from itertools import islice
from typing import Generic, NamedTuple, TypeVar

from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0  # a full request that asks for a new session
FINAL_EPOCH = -1  # a full request without a session (and closes the one named, if any)
_INT32_MAX = 2**31 - 1


def next_epoch(prev: int) -> int:
    """Kafka's FetchMetadata.nextEpoch: FINAL stays FINAL; wraps to 1, never to 0."""
    if prev < 0:
        return FINAL_EPOCH
    if prev == _INT32_MAX:
        return 1
    return prev + 1


class FetchMetadata(NamedTuple):
    """Session id and epoch of one request (Kafka's FetchMetadata)."""

    session_id: int
    epoch: int

    @property
    def is_full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    def next_close_existing(self) -> FetchMetadata:
        """A full request that closes this session and asks for a new one."""
        return FetchMetadata(self.session_id, INITIAL_EPOCH)

    def next_incremental(self) -> FetchMetadata:
        return FetchMetadata(self.session_id, next_epoch(self.epoch))

    @staticmethod
    def new_incremental(session_id: int) -> FetchMetadata:
        return FetchMetadata(session_id, next_epoch(INITIAL_EPOCH))


INITIAL = FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)
LEGACY = FetchMetadata(INVALID_SESSION_ID, FINAL_EPOCH)  # sessionless (consumers)


class PartitionData(NamedTuple):
    """One partition's fetch parameters, as a request carries them."""

    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1  # the fetcher's own


# --- leader side ---------------------------------------------------------------------------


@dataclass(slots=True)
class CachedPartition:
    """A session partition: its last request parameters and what was last sent for it."""

    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int
    fetcher_log_start_offset: int
    high_watermark: int = -1  # last sent; -1 after an error, so it is sent again
    local_log_start_offset: int = -1  # last sent

    @classmethod
    def from_request(cls, data: PartitionData) -> CachedPartition:
        return cls(
            data.fetch_offset, data.max_bytes, data.current_leader_epoch, data.log_start_offset
        )

    def update_request(self, data: PartitionData) -> None:
        self.fetch_offset = data.fetch_offset
        self.max_bytes = data.max_bytes
        self.current_leader_epoch = data.current_leader_epoch
        self.fetcher_log_start_offset = data.log_start_offset

    def request_data(self) -> PartitionData:
        return PartitionData(
            self.fetch_offset,
            self.max_bytes,
            self.current_leader_epoch,
            self.fetcher_log_start_offset,
        )

    def maybe_update_response(
        self,
        records_size: int,
        high_watermark: int,
        log_start_offset: int,
        error_code: int,
        *,
        update: bool = True,
        preferred_read_replica: int = -1,
    ) -> bool:
        """Kafka's maybeUpdateResponseData: whether an incremental response must include
        this partition (records, a HW or log start change, an error, a preferred read
        replica); with `update`, what is sent becomes the cached state."""
        must = records_size > 0 or preferred_read_replica >= 0
        if self.high_watermark != high_watermark:
            must = True
            if update:
                self.high_watermark = high_watermark
        if self.local_log_start_offset != log_start_offset:
            must = True
            if update:
                self.local_log_start_offset = log_start_offset
        if error_code != ErrorCode.NONE:
            must = True
            if update:
                self.high_watermark = -1
        return must


S = TypeVar("S")


class FetchSession(Generic[S]):
    """One fetcher's session on the leader. `S` is what the replica manager refreshes for
    idle partitions (its follower fetch state); the session only stores it."""

    def __init__(
        self,
        session_id: int,
        privileged: bool,
        partitions: dict[TopicPartition, CachedPartition],
        now_ms: int,
    ) -> None:
        self.id = session_id
        self.privileged = privileged  # created by a follower (Kafka: evicted last)
        self.partitions = partitions
        self.creation_ms = now_ms
        self.last_used_ms = now_ms
        self.epoch = next_epoch(INITIAL_EPOCH)
        # Partitions to read on the next fetch, oldest first (an ordered set); the rest are
        # settled, and those of a follower in `idle` with its state.
        self.dirty: dict[TopicPartition, None] = dict.fromkeys(partitions)
        self.idle: dict[TopicPartition, S] = {}
        # Set by a request parked on this session (the replica manager's delayed fetch, in
        # its purgatory): called with each partition that moves, or None when the request
        # must stop waiting (superseded, closed, shutdown).
        self.waiter: Callable[[TopicPartition | None], None] | None = None
        self._check_at_ms = now_ms
        self._check_credit = 0.0

    def __repr__(self) -> str:
        return (
            f"FetchSession(id={self.id}, epoch={self.epoch}, partitions={len(self.partitions)}, "
            f"dirty={len(self.dirty)}, privileged={self.privileged})"
        )

    def __len__(self) -> int:
        return len(self.partitions)

    def update(
        self,
        fetch_data: Mapping[TopicPartition, PartitionData],
        to_forget: Iterable[TopicPartition],
    ) -> tuple[list[TopicPartition], list[TopicPartition]]:
        """An incremental request: listed partitions are added or updated (and read on this
        fetch), forgotten ones removed. Returns (added, removed)."""
        added: list[TopicPartition] = []
        removed: list[TopicPartition] = []
        for tp, data in fetch_data.items():
            cached = self.partitions.get(tp)
            if cached is None:
                self.partitions[tp] = CachedPartition.from_request(data)
                added.append(tp)
            else:
                cached.update_request(data)
            self.idle.pop(tp, None)
            self.dirty[tp] = None
        for tp in to_forget:
            if self.partitions.pop(tp, None) is not None:
                removed.append(tp)
                self.dirty.pop(tp, None)
                self.idle.pop(tp, None)
        return added, removed

    def mark_dirty(self, tp: TopicPartition) -> None:
        if tp not in self.partitions:
            return
        self.idle.pop(tp, None)
        self.dirty[tp] = None
        if self.waiter is not None:
            self.waiter(tp)

    def settle(self, tp: TopicPartition, settled: bool, idle_state: S) -> None:
        """After a read of `tp` whose response is about to be sent: `settled` = nothing more
        to send or do until the partition moves (the fetcher is at the end, no error, in the
        ISR). A settled partition goes idle with `idle_state` (for a follower: its fetch
        state on the leader); an unsettled one stays dirty, moved to the back (so a
        response budget rotates over partitions)."""
        if tp not in self.partitions:
            return
        self.dirty.pop(tp, None)
        if settled:
            self.idle[tp] = idle_state
        else:
            self.idle.pop(tp, None)
            self.dirty[tp] = None

    def wake(self) -> None:
        if self.waiter is not None:
            self.waiter(None)

    def due_for_check(self, now_ms: int, interval_ms: int) -> list[TopicPartition]:
        """A safety net for changes that bypass `mark_dirty`: the idle partitions whose turn
        it is to be checked against the partition's current state (the caller marks the
        ones that moved dirty), in rotation, longest unchecked first, so that each is
        checked at least every `interval_ms` (Kafka reads every session partition on every
        fetch; this costs a few comparisons per partition per interval)."""
        elapsed = now_ms - self._check_at_ms
        self._check_at_ms = now_ms
        if not self.idle or elapsed <= 0 or interval_ms <= 0:
            self._check_credit = 0.0
            return []
        self._check_credit += len(self.partitions) * elapsed / interval_ms
        n = min(int(self._check_credit), len(self.idle))
        if n <= 0:
            return []
        self._check_credit -= n
        due = list(islice(self.idle, n))
        for tp in due:
            self.idle[tp] = self.idle.pop(tp)  # to the back of the rotation
        return due


class ContextKind(Enum):
    SESSION_ERROR = "session-error"
    SESSIONLESS = "sessionless"
    FULL = "full"
    INCREMENTAL = "incremental"


@dataclass
class FetchContext(Generic[S]):
    """How to answer one fetch request (Kafka's FetchContext subclasses)."""

    kind: ContextKind
    error: ErrorCode = ErrorCode.NONE
    session: FetchSession[S] | None = None  # INCREMENTAL
    expected_epoch: int = FINAL_EPOCH  # INCREMENTAL: the session's epoch while it is current
    privileged: bool = False
    added: list[TopicPartition] = field(default_factory=list)
    removed: list[TopicPartition] = field(default_factory=list)


class FetchSessionCache(Generic[S]):
    """The leader's sessions (Kafka's FetchSessionCache and FetchManager.newContext).

    `max_slots` = `max.incremental.fetch.session.cache.slots` (0: no sessions at all);
    `eviction_ms` = `min.incremental.fetch.session.eviction.ms`. When full, a new session may
    evict one unused for longer than eviction_ms; otherwise, one older than eviction_ms that
    is less valuable (unprivileged before privileged, then fewer partitions); a follower's
    session may also evict any consumer's. `check_ms`: see `FetchSession.due_for_check`.
    """

    def __init__(
        self,
        max_slots: int = 1000,
        eviction_ms: int = 120_000,
        rng: random.Random | None = None,
        check_ms: int = 5_000,
    ) -> None:
        self.max_slots = max_slots
        self.eviction_ms = eviction_ms
        self.check_ms = check_ms
        self._rng = rng or random.Random()
        self.sessions: dict[int, FetchSession[S]] = {}
        self._by_partition: dict[TopicPartition, list[FetchSession[S]]] = {}
        self.evictions = 0

    def __len__(self) -> int:
        return len(self.sessions)

    @property
    def enabled(self) -> bool:
        return self.max_slots > 0

    def total_partitions(self) -> int:
        return sum(len(s) for s in self.sessions.values())

    def get(self, session_id: int) -> FetchSession[S] | None:
        return self.sessions.get(session_id)

    @staticmethod
    def is_current(session: FetchSession[S], expected_epoch: int) -> bool:
        """No later request moved the session's epoch on while this one waited (Kafka
        checks this before answering; a closed session still answers, and the fetcher's
        next request learns it is gone)."""
        return session.epoch == expected_epoch

    # --- contexts ------------------------------------------------------------------------

    def new_context(
        self,
        session_id: int,
        epoch: int,
        fetch_data: Mapping[TopicPartition, PartitionData],
        to_forget: Collection[TopicPartition],
        *,
        privileged: bool,
        now_ms: int,
    ) -> FetchContext[S]:
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID and self.remove(session_id) is not None:
                log.debug("full fetch request closed fetch session %d", session_id)
            if epoch == FINAL_EPOCH or not self.enabled:
                return FetchContext(ContextKind.SESSIONLESS, privileged=privileged)
            return FetchContext(ContextKind.FULL, privileged=privileged)
        session = self.sessions.get(session_id)
        if session is None:
            log.debug("fetch session %d not found", session_id)
            return FetchContext(ContextKind.SESSION_ERROR, ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            log.debug(
                "fetch session %d: expected epoch %d, got %d", session_id, session.epoch, epoch
            )
            return FetchContext(ContextKind.SESSION_ERROR, ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        added, removed = session.update(fetch_data, to_forget)
        for tp in added:
            self._by_partition.setdefault(tp, []).append(session)
        for tp in removed:
            self._unindex(tp, session)
        if not session.partitions:
            # Kafka: nothing left, close the session and answer sessionless.
            self.remove(session_id)
            return FetchContext(ContextKind.SESSIONLESS, privileged=privileged)
        session.last_used_ms = now_ms
        session.epoch = next_epoch(session.epoch)
        session.wake()  # a request still parked on the previous epoch is superseded
        return FetchContext(
            ContextKind.INCREMENTAL,
            session=session,
            expected_epoch=session.epoch,
            privileged=privileged,
            added=added,
            removed=removed,
        )

    def maybe_create_session(
        self,
        now_ms: int,
        privileged: bool,
        partitions: dict[TopicPartition, CachedPartition],
    ) -> FetchSession[S] | None:
        """After a full fetch: a new session holding `partitions` (all dirty), or None if
        there is no slot and nothing may be evicted."""
        if not self.enabled:
            return None
        # Sessions nobody used for eviction_ms (a follower that restarted, a consumer that
        # left) go now rather than when the cache is full: each one costs memory and work
        # on every change of its partitions. Their owners, if any, get a full fetch.
        for stale in [
            s for s in self.sessions.values() if now_ms - s.last_used_ms > self.eviction_ms
        ]:
            log.info("evicting unused %r", stale)
            self.remove(stale.id)
            self.evictions += 1
        if len(self.sessions) >= self.max_slots and not self._try_evict(
            privileged, len(partitions), now_ms
        ):
            log.debug(
                "no fetch session slot for privileged=%s size=%d", privileged, len(partitions)
            )
            return None
        session: FetchSession[S] = FetchSession(
            self._new_session_id(), privileged, partitions, now_ms
        )
        self.sessions[session.id] = session
        for tp in partitions:
            self._by_partition.setdefault(tp, []).append(session)
        log.debug("created %r", session)
        return session

    def remove(self, session_id: int) -> FetchSession[S] | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            for tp in session.partitions:
                self._unindex(tp, session)
            session.wake()
        return session

    # --- change tracking -----------------------------------------------------------------

    def mark_dirty(self, tp: TopicPartition) -> None:
        """Partition `tp` moved on this broker (append, HW, log start, role, ISR): every
        session holding it reads it on its next fetch, and a parked fetch wakes."""
        sessions = self._by_partition.get(tp)
        if sessions:
            for s in sessions:
                s.mark_dirty(tp)

    def wake_all(self) -> None:
        for s in list(self.sessions.values()):
            s.wake()

    # --- internals -----------------------------------------------------------------------

    def _unindex(self, tp: TopicPartition, session: FetchSession[S]) -> None:
        sessions = self._by_partition.get(tp)
        if sessions is None:
            return
        try:
            sessions.remove(session)
        except ValueError:
            return
        if not sessions:
            del self._by_partition[tp]

    def _new_session_id(self) -> int:
        while True:
            sid = self._rng.randint(1, _INT32_MAX - 1)
            if sid not in self.sessions:
                return sid

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        if not self.sessions:
            return False
        stale = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stale.last_used_ms > self.eviction_ms:
            log.info("evicting stale %r", stale)
            self.remove(stale.id)
            self.evictions += 1
            return True
        candidates = [
            s
            for s in self.sessions.values()
            if now_ms - s.creation_ms > self.eviction_ms or (privileged and not s.privileged)
        ]
        if not candidates:
            return False
        victim = min(candidates, key=lambda s: (s.privileged, len(s), s.id))
        # Kafka compares (privileged, size, id=0) with the victim's key: ties keep the victim.
        if (privileged, size) <= (victim.privileged, len(victim)):
            return False
        log.info("evicting %r for a session of %d partitions", victim, size)
        self.remove(victim.id)
        self.evictions += 1
        return True


# --- fetcher side --------------------------------------------------------------------------


@dataclass(frozen=True)
class FetchRequestData:
    """What the next request carries (Kafka's FetchSessionHandler.FetchRequestData)."""

    metadata: FetchMetadata
    to_send: dict[TopicPartition, PartitionData]
    to_forget: list[TopicPartition]

    @property
    def is_full(self) -> bool:
        return self.metadata.is_full


class FetchSessionHandler:
    """A fetcher's side of its session with one leader (Kafka's FetchSessionHandler).

    The fetcher says what changed: `update(tp, data)` when a partition becomes fetchable or
    its parameters move (offset, epoch, log start), `remove(tp)` when it stops being fetched
    (removed, truncating, backing off). `build()` then makes the next request: full (every
    fetchable partition) at the start and after any error, else incremental (the partitions
    whose parameters differ from what the leader has, and the forgotten ones). Work per
    request is proportional to what changed, not to the number of partitions.
    """

    def __init__(self, node_id: int = -1) -> None:
        self.node_id = node_id
        self.metadata: FetchMetadata = INITIAL
        self._next: dict[TopicPartition, PartitionData] = {}  # fetchable now
        self._session: dict[TopicPartition, PartitionData] = {}  # as the leader has them
        self._changed: dict[TopicPartition, None] = {}  # since the last build
        self.full_requests = 0
        self.incremental_requests = 0

    def __repr__(self) -> str:
        return (
            f"FetchSessionHandler(node {self.node_id}, {self.metadata}, "
            f"{len(self._next)} fetchable, {len(self._session)} in session)"
        )

    @property
    def fetchable(self) -> Mapping[TopicPartition, PartitionData]:
        return self._next

    @property
    def session_partitions(self) -> Mapping[TopicPartition, PartitionData]:
        """Each partition's parameters as the leader holds them after the last build: the
        ones a response to that request was computed with."""
        return self._session

    def update(self, tp: TopicPartition, data: PartitionData) -> None:
        self._next[tp] = data
        self._changed[tp] = None

    def remove(self, tp: TopicPartition) -> None:
        if self._next.pop(tp, None) is not None or tp in self._session:
            self._changed[tp] = None

    def build(self) -> FetchRequestData:
        if self.metadata.is_full:
            self._session = dict(self._next)
            self._changed.clear()
            self.full_requests += 1
            return FetchRequestData(self.metadata, dict(self._next), [])
        to_send: dict[TopicPartition, PartitionData] = {}
        to_forget: list[TopicPartition] = []
        for tp in self._changed:
            now = self._next.get(tp)
            before = self._session.get(tp)
            if now is None:
                if before is not None:
                    del self._session[tp]
                    to_forget.append(tp)
            elif now != before:
                self._session[tp] = now
                to_send[tp] = now
        self._changed.clear()
        self.incremental_requests += 1
        return FetchRequestData(self.metadata, to_send, to_forget)

    def handle_response(
        self, error_code: int, session_id: int, partitions: Collection[TopicPartition]
    ) -> bool:
        """Kafka's handleResponse: False if the response cannot be used (a top-level error
        or partitions that do not match the request); the next request is then full."""
        if error_code != ErrorCode.NONE:
            log.info(
                "node %d could not process the fetch request with %s: %s",
                self.node_id,
                self.metadata,
                _code_name(error_code),
            )
            if error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.metadata = INITIAL
            else:
                self.metadata = self.metadata.next_close_existing()
            return False
        if self.metadata.is_full:
            got = set(partitions)
            if got != self._session.keys():
                log.info(
                    "node %d: full fetch response with omitted %d / extra %d partitions",
                    self.node_id,
                    len(self._session.keys() - got),
                    len(got - self._session.keys()),
                )
                self.metadata = self.metadata.next_close_existing()
                return False
            if session_id == INVALID_SESSION_ID:
                self.metadata = INITIAL  # no session for us (yet): full again next time
            else:
                self.metadata = FetchMetadata.new_incremental(session_id)
            return True
        extra = [tp for tp in partitions if tp not in self._session]
        if extra:
            log.info(
                "node %d: incremental fetch response with %d partitions not in the session",
                self.node_id,
                len(extra),
            )
            self.metadata = self.metadata.next_close_existing()
            return False
        if session_id == INVALID_SESSION_ID:
            self.metadata = INITIAL  # the leader closed the session
        else:
            self.metadata = self.metadata.next_incremental()
        return True

    def handle_error(self) -> None:
        """The request failed (no response): start over with a full request, closing the
        session the leader may still hold."""
        self.metadata = self.metadata.next_close_existing()


def _code_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
