"""Followers pull from leaders: one fetcher (one connection, one loop) per source broker.

Each partition a fetcher serves first reconciles its log with the leader's by leader epoch
(design §9, OffsetsForLeaderEpoch, iterating until the epochs agree), then fetches from its
LEO. Fetched batches are appended as the bytes they arrived as. A partition removed while a
request is in flight ignores the response: removal and response handling both run on the
event loop, and nothing between the membership check and the append awaits.

Fetches go through a KIP-227 fetch session (`fetch_session.FetchSessionHandler`): the first
request lists every fetchable partition, later ones only those whose offset, epoch or log
start moved, plus the ones no longer fetched (removed, truncating, backing off) as
forgotten. The loop tells the handler about each such change as it happens, so an idle
fetcher does no work per partition. After a session error the next request is full,
straight away (no backoff: a full request cannot fail that way).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from minikafka.common import TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.protocol.errors import ErrorCode, KafkaError, error_for_code
from minikafka.replication.fetch_session import FetchSessionHandler, PartitionData
from minikafka.replication.replica_manager import FollowerAssignment, ReplicaManager
from minikafka.rpc.connection import (
    PLAINTEXT_CONNECTIONS,
    BrokerConnection,
    ConnectionSecurity,
    NetworkError,
)
from minikafka.rpc.messages import (
    NO_LEADER_EPOCH,
    BrokerNode,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    ForgottenTopic,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from minikafka.rules.replication_quota import UNLIMITED_RATE
from minikafka.storage.checkpoint import sync_filesystems

log = logging.getLogger(__name__)

_SESSION_ERRORS = (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH)


# How often a fetcher whose throttled partitions are held back (the follower quota exceeded)
# looks again, when nothing else it fetches wakes it.
THROTTLE_RECHECK_S = 0.1
DELAY_LOG_PARTITIONS = 10  # partitions named in a line about many backing off


class FetchPhase(Enum):
    TRUNCATING = "truncating"
    FETCHING = "fetching"


@dataclass
class PartitionFetchState:
    leader_epoch: int
    phase: FetchPhase = FetchPhase.TRUNCATING
    delayed_until: float = 0.0  # loop time; backoff after an error
    # Kafka's isReplicaInSync: the last fetch brought our LEO to the leader's HW. A
    # throttled partition in sync is never held back.
    in_sync: bool = False


class ReplicaFetcher:
    def __init__(
        self,
        source: BrokerNode,
        replica_manager: ReplicaManager,
        config: BrokerConfig,
        connection_security: ConnectionSecurity = PLAINTEXT_CONNECTIONS,
    ) -> None:
        self.source = source
        self._connection_security = connection_security
        self._rm = replica_manager
        self._config = config
        self.partitions: dict[TopicPartition, PartitionFetchState] = {}
        self._wakeup = asyncio.Event()
        self._conn: BrokerConnection | None = None
        self._task: asyncio.Task[None] | None = None
        self._backoff_s = config.replica_fetch_backoff_ms / 1000
        self._stopped = False
        self.failed_requests = 0  # fetch or truncation round trips that failed (backoff)
        self.session = FetchSessionHandler(source.node_id)
        self._truncating: set[TopicPartition] = set()  # phase TRUNCATING
        self._delayed: set[TopicPartition] = set()  # backing off until delayed_until
        # No delayed partition is due before this: the loop does not scan them all on every
        # round (tens of thousands back off together while a broker restarts).
        self._next_release = math.inf
        # Throttled partitions left out of fetches while the follower quota is exceeded.
        self._held: set[TopicPartition] = set()

    def __repr__(self) -> str:
        return (
            f"ReplicaFetcher(broker {self.source.node_id} at {self.source.host}:{self.source.port})"
        )

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=repr(self))

    def state_summary(self) -> str:
        """For a stuck broker's task dump (SIGUSR1): what this fetcher holds."""
        return (
            f"stopped={self._stopped} task_done={self._task is not None and self._task.done()} "
            f"partitions={ {str(tp): (st.leader_epoch, st.phase.name) for tp, st in self.partitions.items()} } "
            f"truncating={sorted(map(str, self._truncating))} delayed={sorted(map(str, self._delayed))} "
            f"session={self.session!r} next={sorted(map(str, self.session.fetchable))} "
            f"held={sorted(map(str, self.session.session_partitions))}"
        )

    @property
    def stopped(self) -> bool:
        """Its fetch loop has ended (after shutdown)."""
        return self._task is not None and self._task.done()

    def add_partitions(self, partitions: Mapping[TopicPartition, int]) -> None:
        for tp, epoch in partitions.items():
            self.partitions[tp] = PartitionFetchState(epoch)
            self._truncating.add(tp)
            self._delayed.discard(tp)
            self._held.discard(tp)
            self.session.remove(tp)  # fetched again once reconciled, in the new epoch
        self._wakeup.set()

    def remove_partitions(self, tps: set[TopicPartition]) -> None:
        for tp in tps:
            if self.partitions.pop(tp, None) is not None:
                self._truncating.discard(tp)
                self._delayed.discard(tp)
                self._held.discard(tp)
                self.session.remove(tp)

    async def shutdown(self) -> None:
        self._stopped = True
        self._wakeup.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._conn is not None:
            await self._conn.close()

    # --- loop ----------------------------------------------------------------------------

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._stopped:
            now = loop.time()
            self._release_delays(now)
            self._apply_follower_throttle()
            truncating = {
                tp: self.partitions[tp] for tp in self._truncating if tp not in self._delayed
            }
            if not truncating and not self.session.fetchable:
                self._wakeup.clear()
                delays = [self._next_release - now] if self._delayed else []
                if self._held:
                    delays.append(THROTTLE_RECHECK_S)
                # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancellation
                # that races with the event being set, leaving shutdown waiting forever.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(delays, default=None)):
                        await self._wakeup.wait()
                continue
            try:
                conn = await self._connection()
                if truncating:
                    await self._truncate(conn, truncating)
                    continue
                await self._fetch(conn)
            except (NetworkError, KafkaError, OSError) as e:
                self.failed_requests += 1
                log.warning("%r: %s; backing off %.1fs", self, e, self._backoff_s)
                await self._drop_connection()
                self.session.handle_error()
                until = loop.time() + self._backoff_s
                for tp, st in self.partitions.items():
                    if tp not in self._delayed:
                        self._set_delay(tp, st, until)

    async def _connection(self) -> BrokerConnection:
        if self._conn is None or not self._conn.connected:
            conn = BrokerConnection(
                self.source.host,
                self.source.port,
                client_id=f"replica-fetcher-{self._rm.broker_id}",
                connect_timeout_s=self._config.request_timeout_ms / 1000,
                security=self._connection_security,
            )
            await conn.connect()
            self._conn = conn
        return self._conn

    async def _drop_connection(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    def _delay(self, tp: TopicPartition, why: str, level: int = logging.INFO) -> None:
        st = self.partitions.get(tp)
        if st is not None:
            log.log(level, "%r: %s: %s; retrying in %.1fs", self, tp, why, self._backoff_s)
            self._set_delay(tp, st, asyncio.get_running_loop().time() + self._backoff_s)

    def _delay_many(self, tps: list[TopicPartition], why: str) -> None:
        """`_delay` of partitions a response refused alike, logged in one line: a broker
        restarting at 100,000 partitions had each refused, and logged, hundreds of
        thousands of times."""
        until = asyncio.get_running_loop().time() + self._backoff_s
        delayed = [tp for tp in tps if tp in self.partitions]
        for tp in delayed:
            self._set_delay(tp, self.partitions[tp], until)
        if delayed:
            shown = ", ".join(map(str, delayed[:DELAY_LOG_PARTITIONS]))
            more = len(delayed) - DELAY_LOG_PARTITIONS
            log.info(
                "%r: %d partition(s): %s (%s%s); retrying in %.1fs",
                self,
                len(delayed),
                why,
                shown,
                f" and {more} more" if more > 0 else "",
                self._backoff_s,
            )

    def _set_delay(self, tp: TopicPartition, st: PartitionFetchState, until: float) -> None:
        st.delayed_until = until
        self._delayed.add(tp)
        if until < self._next_release:
            self._next_release = until
        self.session.remove(tp)  # forgotten while it backs off, as Kafka's fetcher does

    def _release_delays(self, now: float) -> None:
        if not self._delayed:
            self._next_release = math.inf
            return
        if now < self._next_release:
            return
        for tp in [tp for tp in self._delayed if self.partitions[tp].delayed_until <= now]:
            self._release(tp)
        self._next_release = min(
            (self.partitions[tp].delayed_until for tp in self._delayed), default=math.inf
        )

    def _release(self, tp: TopicPartition) -> None:
        self._delayed.discard(tp)
        if tp not in self._truncating:
            self._resume(tp)

    def _resume(self, tp: TopicPartition) -> None:
        """Tell the session this partition is fetchable with its current parameters (the
        handler sends them only if they differ from what the leader has)."""
        st = self.partitions.get(tp)
        p = self._rm.partitions.get(tp)
        if (
            st is None
            or p is None
            or st.phase is not FetchPhase.FETCHING
            or tp in self._delayed
            or tp in self._held
        ):
            self.session.remove(tp)
            return
        lg = p.log
        self.session.update(
            tp,
            PartitionData(
                lg.log_end_offset,
                self._config.replica_fetch_max_bytes,
                st.leader_epoch,
                lg.log_start_offset,
            ),
        )

    def _apply_follower_throttle(self) -> None:
        """Kafka's shouldFollowerThrottle, before each fetch: a throttled partition not in
        sync is left out of the fetch while the follower quota is exceeded, and back in once
        it no longer is."""
        quota = self._rm.follower_quota
        if quota.bound >= UNLIMITED_RATE and not self._held:
            return
        exceeded: bool | None = None
        for tp, st in self.partitions.items():
            if st.phase is not FetchPhase.FETCHING or tp in self._delayed:
                continue
            p = self._rm.partitions.get(tp)
            if (
                p is None
                or st.in_sync
                or not p.log.config.follower_throttled.throttles(tp.partition, self._rm.broker_id)
            ):
                hold = False
            else:
                if exceeded is None:
                    exceeded = quota.is_quota_exceeded()
                hold = exceeded
            if hold and tp not in self._held:
                self._held.add(tp)
                self.session.remove(tp)
            elif not hold and tp in self._held:
                self._held.discard(tp)
                self._resume(tp)

    def _start_fetching(self, tp: TopicPartition, st: PartitionFetchState) -> None:
        st.phase = FetchPhase.FETCHING
        self._truncating.discard(tp)
        self._resume(tp)

    # --- truncation (§9) -----------------------------------------------------------------

    async def _truncate(
        self, conn: BrokerConnection, states: dict[TopicPartition, PartitionFetchState]
    ) -> None:
        asks: dict[str, list[OffsetForLeaderPartition]] = {}
        asked: dict[TopicPartition, tuple[int, int]] = {}
        for tp, st in states.items():
            p = self._rm.partitions.get(tp)
            if p is None:
                continue
            latest = p.log.latest_epoch()
            if latest == NO_LEADER_EPOCH:
                # Nothing to compare: only the HW is known to be committed.
                p.log.truncate_to(max(p.high_watermark, p.log.log_start_offset))
                self._start_fetching(tp, st)
                continue
            asked[tp] = (st.leader_epoch, latest)
            asks.setdefault(tp.topic, []).append(
                OffsetForLeaderPartition(tp.partition, st.leader_epoch, latest)
            )
        if not asks:
            return
        resp: OffsetForLeaderEpochResponse = await conn.send(
            OffsetForLeaderEpochRequest(
                self._rm.broker_id,
                [OffsetForLeaderTopic(t, parts) for t, parts in asks.items()],
            ),
            timeout_s=self._config.request_timeout_ms / 1000,
        )
        # The leader-epoch checkpoints the truncations rewrite are written one by one and
        # made durable together, in a thread, before any of these partitions fetches (an
        # fsync or two each on the event loop took seconds once a broker followed for
        # thousands of partitions it had led).
        truncated: dict[TopicPartition, PartitionFetchState] = {}
        log_dirs: set[Path] = set()
        for t in resp.topics:
            for r in t.partitions:
                tp = TopicPartition(t.name, r.partition)
                cur = self.partitions.get(tp)
                p = self._rm.partitions.get(tp)
                if cur is None or p is None or tp not in asked or asked[tp][0] != cur.leader_epoch:
                    continue  # removed or re-added in a newer epoch meanwhile
                if r.error_code != ErrorCode.NONE:
                    self._delay(tp, f"OffsetsForLeaderEpoch: {ErrorCode(r.error_code).name}")
                    continue
                if self._apply_epoch_end_offset(tp, cur, r.leader_epoch, r.end_offset):
                    truncated[tp] = cur
                    log_dirs.add(p.log.dir.parent)
        if not truncated:
            return
        await asyncio.get_running_loop().run_in_executor(
            self._rm.log_manager.io_executor, sync_filesystems, log_dirs
        )
        for tp, st in truncated.items():
            if self.partitions.get(tp) is st and tp in self._truncating:
                self._start_fetching(tp, st)

    def _apply_epoch_end_offset(
        self, tp: TopicPartition, st: PartitionFetchState, leader_epoch: int, leader_end: int
    ) -> bool:
        """Truncate as the leader's answer says (the leader-epoch checkpoint not yet
        fsync'd); whether the partition may fetch once it is."""
        p = self._rm.partitions[tp]
        lg = p.log
        leo = lg.log_end_offset
        if leader_end < 0:
            target, done = max(p.high_watermark, lg.log_start_offset), True
        else:
            my_epoch, my_end = lg.end_offset_for_epoch(leader_epoch)
            if my_epoch == NO_LEADER_EPOCH:
                target, done = min(leader_end, leo), True
            elif my_epoch != leader_epoch:
                # Our history diverges before the leader's epoch: cut back to where our
                # epoch ends and ask again with what is left (§9).
                target, done = min(my_end, leo), False
            else:
                target, done = min(leader_end, my_end, leo), True
        if target < leo:
            log.info(
                "%s: truncating from %d to %d (leader epoch %d ends at %d)",
                tp,
                leo,
                target,
                leader_epoch,
                leader_end,
            )
        # Even at the LEO: this drops an epoch we led without writing in it (Kafka's
        # truncateTo), which would otherwise reject the leader's batches of older epochs.
        lg.truncate_to(target, sync=False)
        return done

    # --- fetching ------------------------------------------------------------------------

    async def _fetch(
        self,
        conn: BrokerConnection,
        states: Mapping[TopicPartition, PartitionFetchState] | None = None,
    ) -> None:
        """One fetch round trip through the session. `states` (callers that step the
        fetcher by hand) are fetched now even if they are backing off."""
        if states is not None:
            for tp in states:
                if tp in self._delayed:
                    self._release(tp)
        if not self.session.fetchable:
            return
        data = self.session.build()
        by_topic: dict[str, list[FetchPartition]] = {}
        for tp, pd in data.to_send.items():
            by_topic.setdefault(tp.topic, []).append(
                FetchPartition(
                    tp.partition,
                    pd.fetch_offset,
                    pd.max_bytes,
                    pd.current_leader_epoch,
                    pd.log_start_offset,
                )
            )
        forgotten: dict[str, list[int]] = {}
        for tp in data.to_forget:
            forgotten.setdefault(tp.topic, []).append(tp.partition)
        cfg = self._config
        try:
            resp: FetchResponse = await conn.send(
                FetchRequest(
                    self._rm.broker_id,
                    cfg.replica_fetch_wait_max_ms,
                    cfg.replica_fetch_min_bytes,
                    cfg.replica_fetch_response_max_bytes,
                    [FetchTopic(t, parts) for t, parts in by_topic.items()],
                    self._rm.broker_epoch,
                    data.metadata.session_id,
                    data.metadata.epoch,
                    [ForgottenTopic(t, parts) for t, parts in forgotten.items()],
                ),
                timeout_s=(cfg.request_timeout_ms + cfg.replica_fetch_wait_max_ms) / 1000,
            )
        except BaseException:
            self.session.handle_error()
            raise
        received = [TopicPartition(t.name, r.partition) for t in resp.topics for r in t.partitions]
        if not self.session.handle_response(resp.error_code, resp.session_id, received):
            if resp.error_code == ErrorCode.NONE or resp.error_code in _SESSION_ERRORS:
                return  # the next request is a full one, sent right away
            raise error_for_code(resp.error_code, "fetch request failed")
        # What the leader answered from: each partition's parameters as it held them.
        used = self.session.session_partitions
        refused: dict[str, list[TopicPartition]] = {}  # error name -> partitions
        for t in resp.topics:
            for r in t.partitions:
                tp = TopicPartition(t.name, r.partition)
                cur = self.partitions.get(tp)
                p = self._rm.partitions.get(tp)
                sent = used.get(tp)
                if cur is None or p is None or sent is None:
                    continue
                if (
                    cur.leader_epoch != sent.current_leader_epoch
                    or cur.phase is not FetchPhase.FETCHING
                    or tp in self._delayed
                ):
                    continue
                if p.log.log_end_offset != sent.fetch_offset:
                    # The log moved under us (truncated by a newer role change): make sure
                    # the leader learns where we are now.
                    self._resume(tp)
                    continue
                code = ErrorCode(r.error_code)
                if code == ErrorCode.NONE:
                    if self._append(tp, r.records, r.high_watermark, r.log_start_offset):
                        cur.in_sync = p.log.log_end_offset >= r.high_watermark
                        self._resume(tp)
                elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    self._handle_out_of_range(tp, r.log_end_offset, r.log_start_offset)
                    self._resume(tp)
                else:
                    # Fenced / unknown epoch / not leader: the controller's next
                    # LeaderAndIsr re-points us; until then retry after a backoff.
                    refused.setdefault(code.name, []).append(tp)
        for name, tps in refused.items():
            self._delay_many(tps, f"fetch: {name}")

    def _append(
        self,
        tp: TopicPartition,
        records: object,
        leader_hw: int,
        leader_log_start: int,
    ) -> bool:
        """Append fetched data; False if it failed (the partition then backs off)."""
        p = self._rm.partitions[tp]
        data = records if isinstance(records, bytes | bytearray | memoryview) else b""
        if len(data):
            try:
                info = p.log.append_as_follower(data)
            except KafkaError as e:
                # Invalid data from the leader (Kafka logs it at ERROR too): it will not
                # heal by itself, an operator has to look.
                self._delay(tp, f"append of fetched data failed: {e}", logging.ERROR)
                return False
            self._rm.topic_stats.record_replication_in(tp.topic, info.valid_bytes)
            if p.log.config.follower_throttled.throttles(tp.partition, self._rm.broker_id):
                # Kafka's ReplicaFetcherThread: throttled bytes, in sync or not, count.
                self._rm.follower_quota.record(len(data))
        # §7.7: the follower's HW is the leader's, capped by what it has.
        hw_before = p.high_watermark
        p.log.update_high_watermark(min(p.log.log_end_offset, leader_hw))
        if leader_log_start > p.log.log_start_offset:
            p.log.maybe_increment_log_start_offset(min(leader_log_start, p.high_watermark))
        if p.high_watermark != hw_before:
            # Consumers reading this follower (KIP-392) wait for its HW to move.
            self._rm.purgatory.notify(tp)
        return True

    def _handle_out_of_range(
        self, tp: TopicPartition, leader_leo: int, leader_log_start: int
    ) -> None:
        p = self._rm.partitions[tp]
        lg = p.log
        if leader_leo < 0:
            self._delay(tp, "out of range without leader offsets")
        elif leader_leo < lg.log_end_offset:
            log.info("%s: leader LEO %d below ours, truncating", tp, leader_leo)
            lg.truncate_to(leader_leo)
        else:
            start = max(leader_log_start, lg.log_end_offset)
            log.info("%s: our LEO is below the leader's log start; restarting at %d", tp, start)
            lg.truncate_fully_and_start_at(start)


class ReplicaFetcherManager:
    """`num.replica.fetchers` = 1: one fetcher per source broker."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        config: BrokerConfig,
        connection_security: ConnectionSecurity = PLAINTEXT_CONNECTIONS,
    ) -> None:
        self._connection_security = connection_security
        self._rm = replica_manager
        self._config = config
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self._closing: set[asyncio.Task[None]] = set()

    def add_partitions(self, partitions: Mapping[TopicPartition, FollowerAssignment]) -> None:
        by_source: dict[int, dict[TopicPartition, int]] = {}
        for tp, a in partitions.items():
            fetcher = self.fetchers.get(a.leader.node_id)
            if fetcher is not None and (
                fetcher.source.host != a.leader.host or fetcher.source.port != a.leader.port
            ):
                # The leader moved to a new address: start over with a fresh connection.
                self._retire(a.leader.node_id)
                fetcher = None
            if fetcher is None:
                fetcher = ReplicaFetcher(
                    a.leader, self._rm, self._config, self._connection_security
                )
                fetcher.start()
                self.fetchers[a.leader.node_id] = fetcher
            by_source.setdefault(a.leader.node_id, {})[tp] = a.leader_epoch
        for source, parts in by_source.items():
            self.fetchers[source].add_partitions(parts)

    async def remove_partitions(self, tps: set[TopicPartition]) -> None:
        for source, fetcher in list(self.fetchers.items()):
            fetcher.remove_partitions(tps)
            if not fetcher.partitions:
                self._retire(source)

    def _retire(self, source: int) -> None:
        fetcher = self.fetchers.pop(source)
        task = asyncio.create_task(fetcher.shutdown())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def partition_count(self) -> int:
        return sum(len(f.partitions) for f in self.fetchers.values())

    async def shutdown(self) -> None:
        for source in list(self.fetchers):
            self._retire(source)
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
