"""The dashboard's adapter: gathers the inputs of cluster_view.py on the broker's loop and
pushes views to the open pages.

- Events: every UpdateMetadata is diffed into the event log as it arrives (events.py), and
  this broker's own ZooKeeper session changes are added; cheap, always on.
- Throughput: this broker's counters become per-second rates once a second (always on,
  O(topics)); the other brokers' rows come with their answers.
- The cluster view is gathered only while someone looks: at most once a second while a
  page is open (Server-Sent Events), or when a `/v1/cluster...` request finds the last view
  older than a second. ZooKeeper is read in a worker thread and the peers' `/v1/local` are
  asked concurrently, each with a short timeout: a dead or paused broker is marked
  unreachable, never waited for.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any

import aiohttp

from minikafka.admin_http.cluster_view import (
    LEADER_FIELDS,
    REPLICA_STATE_FIELDS,
    ClusterView,
    LeaderState,
    MetadataView,
    PeerAnswer,
    PeerFailure,
    Reassignment,
    Registration,
    ZkView,
    build_cluster_view,
)
from minikafka.admin_http.events import (
    ZK_SESSION_CONNECTED,
    ZK_SESSION_EXPIRED,
    EventDraft,
    EventLog,
    metadata_events,
)
from minikafka.admin_http.throughput import RATE_NAMES, ClusterThroughput, RateSampler
from minikafka.replication.partition import Partition
from minikafka.rpc.messages import BrokerNode
from minikafka.server.metadata_cache import MetadataChange
from minikafka.zk.bridge import LoopBridge
from minikafka.zk.client import ZkState

if TYPE_CHECKING:
    from minikafka.server.admin_endpoint import BrokerView

log = logging.getLogger(__name__)

# How long the page's gathering waits for ZooKeeper and for each other broker.
ZK_TIMEOUT_S = 0.5
PEER_TIMEOUT_S = 0.8
# At most one view a second (the page's update rate).
VIEW_INTERVAL_S = 1.0
# Events a page gets when it opens; later ones come as they happen, all of them: the page
# counts one failure's events together (a broker failure at 10,000 partitions writes
# thousands at once), a count cut short would be wrong.
INITIAL_EVENTS = 1000


def leader_state(p: Partition, now_ms: int) -> LeaderState:
    leo = p.log_end_offset
    return LeaderState(
        p.tp.topic,
        p.tp.partition,
        p.leader_id,
        p.leader_epoch,
        list(p.isr),
        p.log.config.min_insync_replicas,
        p.high_watermark,
        leo,
        p.log.log_start_offset,
        [
            [
                r.broker_id,
                r.log_end_offset,
                leo - r.log_end_offset if r.log_end_offset >= 0 else None,
                r.in_isr,
                r.last_caught_up_ms_ago,
            ]
            for r in p.replica_states(now_ms)
        ],
    )


def reassignment_rows(broker: BrokerView) -> list[list[Any]]:
    """The partitions being moved, as only the active controller knows them:
    [topic, partition, replicas, adding, removing] rows."""
    controller = broker.controller
    if controller is None or not controller.is_active:
        return []
    return [
        [tp.topic, tp.partition, list(a.replicas), list(a.adding), list(a.removing)]
        for tp, a in sorted(
            controller.context.reassignment_states.items(),
            key=lambda item: (item[0].topic, item[0].partition),
        )
    ]


def local_broker_facts(broker: BrokerView, leaders: int) -> dict[str, Any]:
    rm = broker.replica_manager
    controller = broker.controller
    return {
        "broker_id": broker.broker_id,
        "broker_epoch": broker.broker_epoch,
        "zookeeper_connected": broker.zk.connected,
        "controller_epoch": rm.controller_epoch,
        "is_controller": controller is not None and controller.is_active,
        "partitions": len(rm.partitions),
        "leaders": leaders,
        # KIP-73: bytes/s sent as leader and fetched as follower for throttled replicas.
        "throttled_out": rm.leader_quota.byte_rate(),
        "throttled_in": rm.follower_quota.byte_rate(),
    }


class Dashboard:
    """`token`: the cluster's `admin.listeners.token` (every broker has the same), sent to
    the other brokers' endpoints; None: none is asked for."""

    def __init__(self, broker: BrokerView, token: str | None = None) -> None:
        self._broker = broker
        self._headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        self.events = EventLog()
        self.rates = RateSampler()
        self.throughput = ClusterThroughput()
        self._view: ClusterView | None = None
        self._view_at = 0.0  # monotonic
        self._gathering: asyncio.Task[ClusterView] | None = None
        self._zk_read: asyncio.Future[ZkView] | None = None
        # Every registration seen: the addresses to ask, and what a gone broker was.
        self._known: dict[int, Registration] = {}
        # Every broker the controller has said was live, kept from start whether or not a
        # page is open: the last known address of a broker that went down before one was.
        self._last_live: dict[int, BrokerNode] = {}
        self._session: aiohttp.ClientSession | None = None
        self._sampler: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._subscribers = 0
        self._new_view = asyncio.Event()
        self._zk_lost = False
        self._closed = False

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        s = self._broker
        s.metadata_cache.add_listener(self._on_metadata)
        bridge = LoopBridge(asyncio.get_running_loop())
        s.zk.add_connection_listener(bridge.wrap(self._on_zk_state))
        # The counters as they are now (a fresh broker's are all 0): the first interval
        # starts here, so records appended before the first whole second are counted.
        self._sample_now()
        self._sampler = asyncio.create_task(self._sample_rates(), name="dashboard-rates")

    async def stop(self) -> None:
        # Open pages' streams end at their next wake-up.
        self._closed = True
        self._new_view.set()
        for task in (self._sampler, self._ticker, self._gathering):
            if task is not None:
                task.cancel()
        for task in (self._sampler, self._ticker, self._gathering):
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self._session is not None:
            await self._session.close()

    # --- events --------------------------------------------------------------------------

    def _on_metadata(self, change: MetadataChange) -> None:
        self._last_live.update(self._broker.metadata_cache.live_brokers)
        self.events.append(metadata_events(change), self._broker.clock.now_ms())

    def _on_zk_state(self, state: ZkState) -> None:
        bid = self._broker.broker_id
        if state is ZkState.LOST:
            self._zk_lost = True
            draft = EventDraft(
                ZK_SESSION_EXPIRED,
                f"broker {bid}'s ZooKeeper session expired (this broker)",
                broker=bid,
            )
        elif state is ZkState.CONNECTED and self._zk_lost:
            self._zk_lost = False
            draft = EventDraft(
                ZK_SESSION_CONNECTED,
                f"broker {bid} has a new ZooKeeper session (this broker)",
                broker=bid,
            )
        else:
            return
        self.events.append([draft], self._broker.clock.now_ms())

    # --- throughput ----------------------------------------------------------------------

    def _sample_now(self) -> None:
        stats = self._broker.replica_manager.topic_stats.topics
        self.rates.sample(
            time.time(), {t: [getattr(s, n) for n in RATE_NAMES] for t, s in stats.items()}
        )

    async def _sample_rates(self) -> None:
        while True:
            # Just after each whole second, so that every broker's rows share their seconds.
            await asyncio.sleep(1.0 - time.time() % 1.0 + 0.02)
            try:
                self._sample_now()
            except Exception:
                log.exception("dashboard: sampling the topic counters failed")

    # --- the local view (what other brokers ask of this one) -----------------------------

    def local_view(self, throughput_after_s: int) -> dict[str, Any]:
        s = self._broker
        now = s.clock.now_ms()
        led = s.replica_manager.leader_partitions()
        return {
            "broker": local_broker_facts(s, len(led)),
            "leader_fields": LEADER_FIELDS,
            "replica_state_fields": REPLICA_STATE_FIELDS,
            "leaders": [leader_state(p, now) for p in led],
            "throughput": self.rates.rows_after(throughput_after_s),
            "reassignments": reassignment_rows(s),
        }

    # --- gathering -----------------------------------------------------------------------

    async def view(self, max_age_s: float = VIEW_INTERVAL_S) -> ClusterView:
        """The cluster view, gathered anew if the last is older than `max_age_s` (concurrent
        callers share one gathering)."""
        if self._view is not None and time.monotonic() - self._view_at < max_age_s:
            return self._view
        if self._gathering is None or self._gathering.done():
            self._gathering = asyncio.create_task(self._gather(), name="dashboard-gather")
        return await asyncio.shield(self._gathering)

    def _read_zk(self) -> ZkView:
        zk = self._broker.zk
        brokers = zk.get_all_brokers()
        controller = zk.get_controller_id()
        epoch = zk.get_controller_epoch()
        return ZkView(
            {
                b: Registration(
                    b, info.epoch, tuple(str(e) for e in info.all_endpoints()), info.admin_url
                )
                for b, info in brokers.items()
            },
            -1 if controller is None else controller,
            None if epoch is None else epoch[0],
        )

    async def _zk_view(self) -> ZkView:
        # A ZooKeeper read that is still running from the last gathering is not started
        # again: threads must not pile up behind a slow server.
        if self._zk_read is None or self._zk_read.done():
            self._zk_read = asyncio.ensure_future(asyncio.to_thread(self._read_zk))
        try:
            view = await asyncio.wait_for(asyncio.shield(self._zk_read), ZK_TIMEOUT_S)
        except TimeoutError:
            return ZkView(None, None, None, f"ZooKeeper did not answer in {ZK_TIMEOUT_S} s")
        except Exception as e:
            return ZkView(None, None, None, f"ZooKeeper: {e}")
        return view

    async def _ask_peer(self, broker_id: int, url: str) -> PeerAnswer | PeerFailure:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=PEER_TIMEOUT_S), headers=self._headers
            )
        after = self.throughput.last_second(broker_id)
        try:
            async with self._session.get(
                f"{url}/v1/local", params={"throughput_after_s": str(after)}
            ) as resp:
                if resp.status == 401:
                    return PeerFailure("HTTP 401: its admin.listeners.token is not this broker's")
                if resp.status != 200:
                    return PeerFailure(f"HTTP {resp.status}")
                body = await resp.json(loads=json.loads)
        except TimeoutError:
            return PeerFailure(f"no answer in {PEER_TIMEOUT_S} s")
        except (aiohttp.ClientError, OSError, ValueError) as e:
            return PeerFailure(str(e) or type(e).__name__)
        self.throughput.add(broker_id, [(r[0], r[1]) for r in body.get("throughput", [])])
        try:
            leaders = [LeaderState._make(row) for row in body["leaders"]]
            moves = [Reassignment._make(row) for row in body.get("reassignments", [])]
        except (KeyError, TypeError) as e:
            return PeerFailure(f"a /v1/local this broker cannot read: {e}")
        return PeerAnswer(body["broker"], leaders, moves)

    async def _gather(self) -> ClusterView:
        s = self._broker
        # The view's time is when gathering began: every broker's throughput rows up to
        # the second before it exist by then.
        started_ms = s.clock.now_ms()
        zk = await self._zk_view()
        if zk.registered is not None:
            self._known.update(zk.registered)
            registered = set(zk.registered)
        else:
            # Without ZooKeeper: the brokers the controller last said were live.
            registered = set(s.metadata_cache.live_brokers)
        urls = {
            b: r.admin_url
            for b, r in self._known.items()
            if b in registered and b != s.broker_id and r.admin_url is not None
        }
        answers: dict[int, PeerAnswer | PeerFailure] = {}
        if urls:
            got = await asyncio.gather(*(self._ask_peer(b, u) for b, u in urls.items()))
            answers.update(zip(urls, got, strict=True))
        local = self.local_view(self.throughput.last_second(s.broker_id))
        self.throughput.add(s.broker_id, local["throughput"])
        answers[s.broker_id] = PeerAnswer(
            local["broker"],
            local["leaders"],
            [Reassignment._make(row) for row in local["reassignments"]],
        )
        self.throughput.prune(int(time.time()))
        cache = s.metadata_cache
        view = build_cluster_view(
            s.broker_id,
            started_ms,
            s.zk.connected,
            zk,
            MetadataView(
                cache.controller_id,
                s.replica_manager.controller_epoch,
                cache.live_brokers,
                cache.all_partition_states(),
            ),
            answers,
            self._known,
            self._last_live,
        )
        self._view = view
        self._view_at = time.monotonic()
        self._new_view.set()
        self._new_view = asyncio.Event()
        return view

    # --- pushing to pages ----------------------------------------------------------------

    async def _tick(self) -> None:
        while self._subscribers > 0 and not self._closed:
            started = time.monotonic()
            try:
                await self.view(max_age_s=0.0)
            except Exception:
                log.exception("dashboard: gathering the cluster view failed")
            await asyncio.sleep(max(0.05, VIEW_INTERVAL_S - (time.monotonic() - started)))

    async def updates(
        self, topic: str | None, limit: int, last_event_seq: int = 0, internal: bool = True
    ) -> AsyncGenerator[dict[str, Any], None]:
        """One payload per new view (at most one a second) for as long as the caller reads:
        the cluster, the selected partitions (internal topics' too if `internal`), events
        newer than the last sent, and the throughput points since the last sent (all of the
        window in the first)."""
        self._subscribers += 1
        if self._ticker is None or self._ticker.done():
            self._ticker = asyncio.create_task(self._tick(), name="dashboard-ticker")
        after_s: int | None = None
        seq = last_event_seq
        first = True
        try:
            while True:
                view = self._view
                # The last view serves a new page only while fresh: its throughput points
                # end where that view's gathering fetched the other brokers' rows.
                if not first or view is None or self._age(view) >= VIEW_INTERVAL_S:
                    await self._new_view.wait()
                    view = self._view
                    if self._closed or view is None:
                        return
                first = False
                sent_seq, end_s = self.events.last_seq, self.end_second(view)
                yield self.payload(view, topic, limit, seq, after_s, sent_seq, end_s, internal)
                seq, after_s = sent_seq, end_s
        finally:
            self._subscribers -= 1

    @staticmethod
    def end_second(view: ClusterView) -> int:
        # The last whole second every broker had sampled when the view was gathered.
        return view.time_ms // 1000 - 1

    def _age(self, view: ClusterView) -> float:
        return time.monotonic() - self._view_at if view is self._view else float("inf")

    def payload(
        self,
        view: ClusterView,
        topic: str | None,
        limit: int,
        after_event_seq: int,
        throughput_after_s: int | None,
        last_event_seq: int,
        end_s: int,
        internal: bool = True,
    ) -> dict[str, Any]:
        """What a page gets: events in (after_event_seq, last_event_seq], newest first, and
        throughput seconds in (throughput_after_s, end_s]; None: the first payload, the
        whole throughput window and the latest INITIAL_EVENTS events."""
        first = throughput_after_s is None
        events = [
            e
            for e in self.events.newest(after_event_seq, INITIAL_EVENTS if first else None)
            if e.seq <= last_event_seq
        ]
        return {
            "cluster": view.header(),
            "partitions": view.select(topic, limit, internal),
            "topics": view.topics(),
            "events": [e.to_json() for e in events],
            "last_event_seq": last_event_seq,
            "throughput": self.throughput.series(end_s, throughput_after_s),
        }


def as_json(obj: Mapping[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()
