"""The controller: Kafka's ZooKeeper-era `KafkaController` (design §8).

Every broker runs one; the one that wins the `/controller` election (§8.1) loads the cluster
from ZooKeeper and decides leadership for everybody (§8.2–8.5, §8.7). All work happens in
one asyncio task that takes events from one queue, one at a time, as Kafka's
`ControllerEventThread` does: ZooKeeper watches, timers and API calls only enqueue.

Every write to ZooKeeper is fenced by the `/controller_epoch` zk version this broker got
when it was elected; a `ControllerMovedError` means another broker has been elected since,
and this one resigns on the spot (stops acting, forgets the cluster, closes its channels).

Leadership decisions follow Kafka's state machines without modelling every state:
a partition with no state znode is new, one whose leader is not a registered broker is
offline, and the replicas of a topic being deleted carry Kafka's deletion states.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum

from minikafka.clock import SYSTEM_CLOCK, Clock
from minikafka.common import NO_LEADER, LeaderAndIsr, TopicPartition, new_kafka_uuid
from minikafka.config.broker import BrokerConfig
from minikafka.controller.channel_manager import (
    BrokerRequestSender,
    ControllerBrokerRequestBatch,
    ControllerChannelManager,
)
from minikafka.controller.context import (
    ControllerContext,
    PartitionAndReplica,
    ReplicaDeletionState,
)
from minikafka.controller.election import (
    ElectionResult,
    controlled_shutdown_election,
    new_partition_election,
    offline_partition_election,
    preferred_replica_election,
)
from minikafka.controller.rebalance import partitions_to_rebalance
from minikafka.controller.zk_store import ControllerZkStore, WatchHandle
from minikafka.protocol.errors import (
    BrokerNotAvailableError,
    ErrorCode,
    KafkaError,
    NotControllerError,
    StaleBrokerEpochError,
)
from minikafka.rpc.messages import StopReplicaResponse
from minikafka.storage.log_config import parse_bool
from minikafka.zk.client import ControllerMovedError, ZkError, ZkNodeExistsError, ZkNoNodeError

log = logging.getLogger(__name__)

UNKNOWN_BROKER_EPOCH = -1  # a ControlledShutdown without one skips the epoch check (Kafka)
UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"
# Kafka waits this long after becoming controller before the first imbalance check.
INITIAL_AUTO_REBALANCE_DELAY_S = 5.0
# After a ZooKeeper error during the election check, check again this much later: nothing
# else would if /controller did not change meanwhile.
ELECTION_RETRY_BACKOFF_S = 1.0
# New partitions' state znodes are created in fenced multis of at most this many partitions
# and about this many bytes: one multi for a whole topic of thousands of partitions would
# exceed ZooKeeper's jute.maxbuffer (1 MiB), which the server answers by dropping the
# connection.
STATE_CREATION_CHUNK_PARTITIONS = 1000
STATE_CREATION_CHUNK_BYTES = 512 * 1024


# --- events -------------------------------------------------------------------------------------


class ControllerEvent:
    """Something the controller's event task must handle (Kafka's `ControllerEvent`)."""

    def __repr__(self) -> str:
        return type(self).__name__


class Startup(ControllerEvent):
    """Watch `/controller` and try to become controller."""


class Reelect(ControllerEvent):
    """`/controller` was deleted: resign if we were controller, then run the election."""


class ControllerChange(ControllerEvent):
    """`/controller` was created or changed: resign if it no longer names us."""


class RegisterBrokerAndReelect(ControllerEvent):
    """A new ZooKeeper session (the broker registered itself again): re-run the election."""


class Expire(ControllerEvent):
    """The ZooKeeper session expired: `/controller`, if ours, is gone; resign."""


class BrokerChange(ControllerEvent):
    """Children of `/brokers/ids` changed."""


class TopicChange(ControllerEvent):
    """Children of `/brokers/topics` changed."""


class TopicDeletion(ControllerEvent):
    """Children of `/admin/delete_topics` changed."""


@dataclass(repr=False)
class PartitionModifications(ControllerEvent):
    """`/brokers/topics/<topic>` (its assignment) changed: Kafka's PartitionModifications,
    from its PartitionModificationsHandler. Partitions added by an admin get created."""

    topic: str

    def __repr__(self) -> str:
        return f"PartitionModifications({self.topic})"


class IsrChangeNotification(ControllerEvent):
    """Children of `/isr_change_notification` changed."""


class PreferredReplicaLeaderElection(ControllerEvent):
    """`/admin/preferred_replica_election` was created."""


class UncleanLeaderElectionEnable(ControllerEvent):
    """`unclean.leader.election.enable` became true (a topic's, or the brokers' dynamic
    default): Kafka's UncleanLeaderElectionEnable and TopicUncleanLeaderElectionEnable, which
    try the offline partitions again."""


class AutoPreferredReplicaLeaderElection(ControllerEvent):
    """The leader-imbalance timer fired."""


@dataclass(repr=False)
class TopicDeletionStopReplicaResponseReceived(ControllerEvent):
    broker_id: int
    partitions: list[TopicPartition]
    response: object  # StopReplicaResponse, or the error the request failed with
    controller_epoch: int  # of the controller that sent the request


@dataclass(repr=False)
class ControlledShutdown(ControllerEvent):
    broker_id: int
    broker_epoch: int
    result: asyncio.Future[list[TopicPartition]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class _Strategy(Enum):
    """Kafka's `PartitionLeaderElectionStrategy` (reassignment is not implemented)."""

    OFFLINE = "offline"
    PREFERRED = "preferred"
    CONTROLLED_SHUTDOWN = "controlled shutdown"


def _tps(tps: Iterable[TopicPartition]) -> str:
    return ",".join(str(tp) for tp in tps) or "-"


def _state_creation_bytes(tp: TopicPartition) -> int:
    """Upper bound of what creating `tp`'s `partitions/<p>` and `state` znodes adds to a
    multi: both paths hold the topic name; 512 covers the rest (the partition number, the
    state's JSON, the chroot of a reasonable `zookeeper.connect`, per-operation overhead)."""
    return 2 * len(tp.topic.encode()) + 512


def state_creation_chunks(
    states: dict[TopicPartition, LeaderAndIsr],
    max_partitions: int = STATE_CREATION_CHUNK_PARTITIONS,
    max_bytes: int = STATE_CREATION_CHUNK_BYTES,
) -> list[dict[TopicPartition, LeaderAndIsr]]:
    """`states` in (topic, partition) order, cut into the chunks created one multi each."""
    chunks: list[dict[TopicPartition, LeaderAndIsr]] = []
    current: dict[TopicPartition, LeaderAndIsr] = {}
    size = 0
    for tp in sorted(states, key=lambda x: (x.topic, x.partition)):
        cost = _state_creation_bytes(tp)
        if current and (len(current) >= max_partitions or size + cost > max_bytes):
            chunks.append(current)
            current, size = {}, 0
        current[tp] = states[tp]
        size += cost
    if current:
        chunks.append(current)
    return chunks


# --- the controller --------------------------------------------------------------------------------


class KafkaController:
    def __init__(
        self,
        config: BrokerConfig,
        zk: ControllerZkStore,
        *,
        clock: Clock = SYSTEM_CLOCK,
        channel: BrokerRequestSender | None = None,
    ) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.zk = zk
        self.clock = clock
        inter_broker_listener = config.resolved_listeners().inter_broker
        self.channel: BrokerRequestSender = (
            channel
            if channel is not None
            else ControllerChannelManager(
                config.broker_id,
                request_timeout_ms=config.controller_socket_timeout_ms,
                inter_broker_listener=inter_broker_listener,
            )
        )
        self.context = ControllerContext()
        self._batch = ControllerBrokerRequestBatch(
            config.broker_id,
            self.context,
            self.channel,
            self._on_stop_replica_response,
            inter_broker_listener,
        )
        self._queue: asyncio.Queue[ControllerEvent] = asyncio.Queue()
        self._event_task: asyncio.Task[None] | None = None
        self._stopped = False
        self._active = False
        self._active_controller_id = -1
        self._controller_watch: WatchHandle | None = None
        self._controller_only_watches: list[WatchHandle] = []
        # Kafka's partitionModificationsHandlers: one data watch per topic.
        self._partition_modification_watches: dict[str, WatchHandle] = {}
        self._timers: set[asyncio.Task[None]] = set()
        self._rebalance_timer: asyncio.Task[None] | None = None
        self.active_since_ms: int | None = None

    # --- public interface (called by the broker) -----------------------------------------------

    async def startup(self) -> None:
        """Start the event task and enqueue Startup (watch `/controller`, try to elect)."""
        if self._event_task is not None:
            return
        self._stopped = False
        self._event_task = asyncio.create_task(
            self._process_events(), name=f"controller-event-thread-{self.broker_id}"
        )
        self._enqueue(Startup())

    async def shutdown(self) -> None:
        """Stop processing and resign locally; `/controller` stays (the broker's ZooKeeper
        session ends right after, which deletes it)."""
        self._stopped = True
        task, self._event_task = self._event_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        while not self._queue.empty():
            self._fail_event(self._queue.get_nowait(), NotControllerError("controller shut down"))
            self._queue.task_done()
        if self._controller_watch is not None:
            self._controller_watch.cancel()
            self._controller_watch = None
        await self._on_controller_resignation()
        self._active_controller_id = -1
        for timer in list(self._timers):
            timer.cancel()

    @property
    def is_active(self) -> bool:
        return self._active

    @property
    def epoch(self) -> int:
        return self.context.epoch

    @property
    def controller_id(self) -> int:
        """The controller as last seen in `/controller`; -1 if unknown."""
        return self._active_controller_id

    def is_topic_queued_for_deletion(self, topic: str) -> bool:
        """Kafka's `topicDeletionManager.isTopicQueuedUpForDeletion` (False unless active)."""
        return self._active and self.context.is_topic_queued_for_deletion(topic)

    async def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> list[TopicPartition]:
        """Move leadership off a broker that is shutting down (§8.7); returns the replicated
        partitions it still leads (the broker retries while that is not empty)."""
        if not self._active or self._stopped:
            raise NotControllerError(f"broker {self.broker_id} is not the controller")
        event = ControlledShutdown(broker_id, broker_epoch)
        self._enqueue(event)
        return await event.result

    def enable_unclean_leader_election(self) -> None:
        """`unclean.leader.election.enable` became true somewhere: elect leaders for the
        offline partitions again (on the event loop; only the active controller acts)."""
        self._enqueue(UncleanLeaderElectionEnable())

    def on_zk_session_reestablished(self) -> None:
        """Call (on the event loop) after the broker registered itself on a new session."""
        self._enqueue(RegisterBrokerAndReelect())

    def on_zk_session_expired(self) -> None:
        """Call (on the event loop) when the ZooKeeper session is lost."""
        self._enqueue(Expire())

    async def wait_for_idle(self) -> None:
        """Until every queued event, and those they queued, is processed (for tests)."""
        await self._queue.join()

    # --- event loop ----------------------------------------------------------------------------

    def _enqueue(self, event: ControllerEvent) -> None:
        if self._stopped:
            self._fail_event(event, NotControllerError("controller shut down"))
            return
        self._queue.put_nowait(event)

    @staticmethod
    def _fail_event(event: ControllerEvent, error: Exception) -> None:
        if isinstance(event, ControlledShutdown) and not event.result.done():
            event.result.set_exception(error)

    async def _process_events(self) -> None:
        while True:
            event = await self._queue.get()
            try:
                await self._process(event)
            except Exception:
                log.exception("controller event %s failed", event)
            finally:
                self._queue.task_done()

    async def _process(self, event: ControllerEvent) -> None:
        try:
            await self._dispatch(event)
        except asyncio.CancelledError:
            self._fail_event(event, NotControllerError("controller shut down"))
            raise
        except ControllerMovedError as e:
            log.info("Controller moved to another broker when processing %s: %s", event, e)
            self._fail_event(event, NotControllerError(str(e)))
            await self._handle_controller_moved()
        except KafkaError as e:  # an API call refused (ControlledShutdown)
            log.info("%s failed: %s", event, e)
            self._fail_event(event, e)
        except Exception as e:
            log.exception("Error processing event %s", event)
            self._fail_event(event, e)

    async def _dispatch(self, event: ControllerEvent) -> None:
        if isinstance(event, Startup):
            await self._process_startup()
        elif isinstance(event, Reelect | RegisterBrokerAndReelect):
            await self._process_reelect()
        elif isinstance(event, ControllerChange):
            await self._maybe_resign()
        elif isinstance(event, Expire):
            await self._process_expire()
        elif isinstance(event, ControlledShutdown):
            remaining = await self._process_controlled_shutdown(event.broker_id, event.broker_epoch)
            if not event.result.done():
                event.result.set_result(remaining)
        elif not self._active:
            return  # the rest is controller work; a resigned controller drops it (as Kafka)
        elif isinstance(event, BrokerChange):
            await self._process_broker_change()
        elif isinstance(event, TopicChange):
            await self._process_topic_change()
        elif isinstance(event, PartitionModifications):
            await self._process_partition_modifications(event.topic)
        elif isinstance(event, TopicDeletion):
            await self._process_topic_deletion()
        elif isinstance(event, TopicDeletionStopReplicaResponseReceived):
            await self._process_topic_deletion_stop_replica_response(event)
        elif isinstance(event, IsrChangeNotification):
            await self._process_isr_change_notification()
        elif isinstance(event, PreferredReplicaLeaderElection):
            await self._process_preferred_replica_election_znode()
        elif isinstance(event, AutoPreferredReplicaLeaderElection):
            await self._process_auto_preferred_replica_leader_election()
        elif isinstance(event, UncleanLeaderElectionEnable):
            if self._active:
                self._batch.new_batch()
                await self._trigger_online_partition_state_change()
                self._batch.send_requests_to_brokers(self.context.epoch)
        else:
            raise AssertionError(f"unknown controller event {event!r}")

    # --- election, failover, resignation (§8.1, §8.2) ------------------------------------------

    async def _process_startup(self) -> None:
        if self._controller_watch is None:
            try:
                self._controller_watch = await self.zk.watch_controller(self._on_controller_znode)
            except ZkError as e:
                log.warning("cannot watch /controller (%s); retrying", e)
                self._schedule(ELECTION_RETRY_BACKOFF_S, Startup())
                return
        await self._elect_or_retry()

    def _enqueuer(self, event_type: type[ControllerEvent]) -> Callable[[], None]:
        def enqueue() -> None:
            self._enqueue(event_type())

        return enqueue

    def _on_controller_znode(self, exists: bool) -> None:
        self._enqueue(ControllerChange() if exists else Reelect())

    async def _process_reelect(self) -> None:
        await self._maybe_resign()
        await self._elect_or_retry()

    async def _process_expire(self) -> None:
        self._active_controller_id = -1
        await self._on_controller_resignation()

    async def _elect_or_retry(self) -> None:
        try:
            await self._elect()
        except ZkError as e:
            log.warning("controller election check failed (%s); retrying", e)
            self._schedule(ELECTION_RETRY_BACKOFF_S, Reelect())

    async def _maybe_resign(self) -> None:
        was_active = self._active
        current = await self.zk.get_controller_id()
        self._active_controller_id = -1 if current is None else current
        if was_active and current != self.broker_id:
            log.info("broker %d is no longer the controller (now %s)", self.broker_id, current)
            await self._on_controller_resignation()

    async def _elect(self) -> None:
        current = await self.zk.get_controller_id()
        if current is not None and (current != self.broker_id or self._active):
            self._active_controller_id = current
            return
        # No controller, or `/controller` names us but we are not acting as controller
        # (e.g. after a ControllerMovedError): the election checks that the znode is ours.
        won = await self.zk.try_elect_controller(self.broker_id)
        if won is None:
            current = await self.zk.get_controller_id()
            # A znode with our id owned by another session (our previous process) is not us.
            self._active_controller_id = (
                -1 if current is None or current == self.broker_id else current
            )
            log.info("broker %d lost the controller election to %s", self.broker_id, current)
            return
        ctx = self.context
        ctx.epoch, ctx.epoch_zk_version = won
        self._active_controller_id = self.broker_id
        self._active = True
        self.active_since_ms = self.clock.now_ms()
        log.info(
            "broker %d is the controller, epoch %d (zk version %d)",
            self.broker_id,
            ctx.epoch,
            ctx.epoch_zk_version,
        )
        try:
            await self._on_controller_failover()
        except ControllerMovedError as e:
            # Deposed before we even finished: another broker won meanwhile.
            log.info("controller moved while broker %d was taking over: %s", self.broker_id, e)
            await self._on_controller_resignation()
            current = await self.zk.get_controller_id()
            self._active_controller_id = (
                -1 if current is None or current == self.broker_id else current
            )
        except Exception:
            log.exception("Error while becoming controller on broker %d", self.broker_id)
            await self._trigger_controller_move()

    async def _trigger_controller_move(self) -> None:
        """Give up a controllership we cannot exercise, so that another broker takes it."""
        fence = self.context.epoch_zk_version
        await self._on_controller_resignation()
        self._active_controller_id = -1
        with contextlib.suppress(ControllerMovedError):
            await self.zk.delete_controller(fence)

    async def _handle_controller_moved(self) -> None:
        await self._on_controller_resignation()
        self._active_controller_id = -1
        await self._elect_or_retry()

    async def _on_controller_failover(self) -> None:
        """Kafka's `onControllerFailover`: watches, cluster load, then act on it (§8.2)."""
        ctx = self.context
        # Watches first, so that no change after the loads below is missed; their events are
        # processed after this one.
        zk = self.zk
        watches = (
            (zk.watch_broker_ids, BrokerChange),
            (zk.watch_topics, TopicChange),
            (zk.watch_topic_deletions, TopicDeletion),
            (zk.watch_isr_change_notifications, IsrChangeNotification),
            (zk.watch_preferred_replica_election, PreferredReplicaLeaderElection),
        )
        for watch, event_type in watches:
            # One at a time, so that resigning cancels those set before a failure.
            handle = await watch(self._enqueuer(event_type))
            self._controller_only_watches.append(handle)
        # Older notifications are covered by reading every partition state below.
        stale = await zk.get_isr_change_notifications()
        if stale:
            await zk.delete_isr_change_notifications(stale, ctx.epoch_zk_version)

        await self._initialize_controller_context()
        await self._initialize_topic_deletion()

        # Brokers learn the live brokers before LeaderAndIsr names them as leaders.
        self._send_update_metadata(ctx.live_or_shutting_down_broker_ids, ctx.all_partitions())

        # Kafka's replicaStateMachine.startup(): every replica on a live broker gets its
        # partition's current state.
        self._batch.new_batch()
        for tp in ctx.all_partitions():
            leadership = ctx.partition_leadership.get(tp)
            if leadership is None or ctx.is_topic_queued_for_deletion(tp.topic):
                continue
            replicas = ctx.partition_replicas(tp)
            online = [r for r in replicas if ctx.is_replica_online(r)]
            self._batch.add_leader_and_isr_request_for_brokers(online, tp, leadership, replicas)
        self._batch.send_requests_to_brokers(ctx.epoch)

        # Kafka's partitionStateMachine.startup(): leaders for new and offline partitions;
        # and the end of replicaStateMachine.startup(): replicas on brokers that died while
        # there was no controller (typically the previous controller itself) leave the ISRs,
        # as a broker failure would have made them.
        dead = {r for tp in ctx.all_partitions() for r in ctx.partition_replicas(tp)}
        dead -= set(ctx.live_brokers)
        self._batch.new_batch()
        await self._trigger_online_partition_state_change()
        await self._offline_replicas(
            [
                r
                for r in ctx.replicas_on_brokers(dead)
                if not ctx.is_topic_queued_for_deletion(r.tp.topic)
            ]
        )
        self._batch.send_requests_to_brokers(ctx.epoch)

        log.info("controller %d ready, epoch %d", self.broker_id, ctx.epoch)
        await self._resume_deletions()
        await self._process_preferred_replica_election_znode()
        if self.config.auto_leader_rebalance_enable:
            self._schedule_auto_leader_rebalance(INITIAL_AUTO_REBALANCE_DELAY_S)

    async def _initialize_controller_context(self) -> None:
        ctx, zk = self.context, self.zk
        ctx.reset()
        brokers = await zk.get_all_brokers()
        ctx.add_live_brokers(brokers.values())
        for broker in brokers.values():
            self.channel.add_broker(broker)
        topics = await zk.get_all_topics()
        # Before reading the assignments, so that no partition added later is missed.
        await self._watch_partition_modifications(topics)
        for topic, assignment in (await zk.get_assignments(topics)).items():
            ctx.set_assignment(topic, assignment)
        await self._load_topic_ids(topics)
        ctx.partition_leadership.update(await zk.get_partition_states(ctx.all_partitions()))
        log.info(
            "controller %d loaded %d live brokers %s, %d topics, %d partitions",
            self.broker_id,
            len(ctx.live_brokers),
            sorted(ctx.live_brokers),
            len(ctx.all_topics),
            len(ctx.partition_leadership),
        )

    async def _on_controller_resignation(self) -> None:
        """Stop acting as controller: Kafka's `onControllerResignation`."""
        was_active = self._active
        self._active = False
        self.active_since_ms = None
        for watch in self._controller_only_watches:
            watch.cancel()
        self._controller_only_watches = []
        self._unwatch_partition_modifications(list(self._partition_modification_watches))
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
            self._rebalance_timer = None
        self._batch.clear()
        await self.channel.close()
        self.context.reset()
        if was_active:
            log.info("broker %d resigned as controller", self.broker_id)

    # --- timers ----------------------------------------------------------------------------------

    def _schedule(self, delay_s: float, event: ControllerEvent) -> asyncio.Task[None]:
        async def fire() -> None:
            await asyncio.sleep(delay_s)
            self._enqueue(event)

        task = asyncio.create_task(fire())
        self._timers.add(task)
        task.add_done_callback(self._timers.discard)
        return task

    def _schedule_auto_leader_rebalance(self, delay_s: float) -> None:
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
        self._rebalance_timer = self._schedule(delay_s, AutoPreferredReplicaLeaderElection())

    # --- requests ----------------------------------------------------------------------------------

    def _send_update_metadata(
        self,
        broker_ids: Iterable[int],
        partitions: Iterable[TopicPartition] = (),
        deleted_topics: Iterable[str] = (),
    ) -> None:
        self._batch.new_batch()
        self._batch.add_update_metadata_request_for_brokers(broker_ids, partitions)
        self._batch.add_deleted_topics(broker_ids, deleted_topics)
        self._batch.send_requests_to_brokers(self.context.epoch)

    # --- leader election (§8.4) -------------------------------------------------------------------

    async def _trigger_online_partition_state_change(self) -> None:
        """Elect leaders for new partitions and partitions whose leader is gone (Kafka's
        `triggerOnlinePartitionStateChange`), skipping topics being deleted. Adds the
        resulting requests to the current batch."""
        ctx = self.context
        new: list[TopicPartition] = []
        offline: list[TopicPartition] = []
        for tp in ctx.all_partitions():
            if ctx.is_topic_queued_for_deletion(tp.topic):
                continue
            leadership = ctx.partition_leadership.get(tp)
            if leadership is None:
                new.append(tp)
            elif leadership.leader not in ctx.live_or_shutting_down_broker_ids:
                offline.append(tp)
        if new:
            await self._initialize_leader_and_isr(new)
        if offline:
            await self._elect_leaders(offline, _Strategy.OFFLINE)

    async def _initialize_leader_and_isr(self, partitions: Sequence[TopicPartition]) -> None:
        """First state of new partitions (new-partition strategy, leader epoch 0).

        A partition none of whose replicas is live gets leader -1 with every assigned replica
        in the ISR: all their logs are empty, so the first to come back may lead.

        The state znodes are created in chunks (`state_creation_chunks`), and the batch is
        sent after each chunk (callers start a batch before and send it after, so this only
        sends earlier), so that brokers create the first chunk's replicas while the next one
        is written to ZooKeeper, and no single LeaderAndIsr has to create tens of thousands
        of logs within the request timeout. This holds for a topic created while a new
        controller loads, too.
        """
        ctx = self.context
        states: dict[TopicPartition, LeaderAndIsr] = {}
        for tp in partitions:
            replicas = ctx.partition_replicas(tp)
            result = new_partition_election(replicas, ctx.live_broker_ids)
            if result is None:
                log.warning("no replica of new partition %s is alive: it has no leader", tp)
                states[tp] = LeaderAndIsr(NO_LEADER, 0, replicas, ctx.epoch)
            else:
                states[tp] = LeaderAndIsr(result.leader, 0, result.isr, ctx.epoch)
        for chunk in state_creation_chunks(states):
            for tp, leadership in (await self._create_partition_states(chunk)).items():
                ctx.partition_leadership[tp] = leadership
                replicas = ctx.partition_replicas(tp)
                if leadership.leader == NO_LEADER:
                    self._batch.add_update_metadata_request_for_brokers(
                        ctx.live_or_shutting_down_broker_ids, [tp]
                    )
                else:
                    self._batch.add_leader_and_isr_request_for_brokers(
                        leadership.isr, tp, leadership, replicas, is_new=True
                    )
            self._batch.send_requests_to_brokers(ctx.epoch)

    async def _create_partition_states(
        self, states: dict[TopicPartition, LeaderAndIsr]
    ) -> dict[TopicPartition, LeaderAndIsr]:
        ctx = self.context
        try:
            return await self.zk.create_partition_states(states, ctx.epoch_zk_version)
        except (ZkNodeExistsError, ZkNoNodeError):
            pass
        # One of them exists already (an earlier controller got this far) or its topic is
        # gone: create the others one by one, as Kafka does.
        created: dict[TopicPartition, LeaderAndIsr] = {}
        for tp, state in states.items():
            try:
                created.update(
                    await self.zk.create_partition_states({tp: state}, ctx.epoch_zk_version)
                )
            except ZkNodeExistsError:
                log.warning("state of new partition %s already exists; using it", tp)
                ctx.partition_leadership.update(await self.zk.get_partition_states([tp]))
                self._batch.add_update_metadata_request_for_brokers(
                    ctx.live_or_shutting_down_broker_ids, [tp]
                )
            except ZkNoNodeError:
                log.warning("cannot create the state of %s: its topic is gone", tp)
        return created

    async def _elect_leaders(
        self, partitions: Sequence[TopicPartition], strategy: _Strategy
    ) -> tuple[dict[TopicPartition, LeaderAndIsr], list[TopicPartition]]:
        """Kafka's `electLeaderForPartitions`: read each state znode, elect, write it with
        leader epoch + 1 conditionally on the version read, retry the conflicts. Adds
        LeaderAndIsr (and UpdateMetadata) to the current batch; returns (elected, failed)."""
        ctx = self.context
        elected: dict[TopicPartition, LeaderAndIsr] = {}
        failed: list[TopicPartition] = []
        unclean_allowed: dict[str, bool] = {}
        remaining = list(partitions)
        while remaining:
            current = await self.zk.get_partition_states(remaining)
            updates: dict[TopicPartition, tuple[LeaderAndIsr, int]] = {}
            recipients: dict[TopicPartition, list[int]] = {}
            unclean: set[TopicPartition] = set()
            for tp in remaining:
                state = current.get(tp)
                if state is None:
                    log.error("cannot elect a leader for %s: it has no state znode", tp)
                    failed.append(tp)
                    continue
                if state.controller_epoch > ctx.epoch:
                    log.error(
                        "aborted %s leader election for %s: its state was written by controller "
                        "epoch %d, ours is %d",
                        strategy.value,
                        tp,
                        state.controller_epoch,
                        ctx.epoch,
                    )
                    failed.append(tp)
                    continue
                result, live_replicas = await self._compute_election(
                    tp, state, strategy, unclean_allowed
                )
                if result is None:
                    log.warning(
                        "%s leader election for %s failed: no eligible replica (replicas %s, "
                        "isr %s, live brokers %s)",
                        strategy.value,
                        tp,
                        list(ctx.partition_replicas(tp)),
                        list(state.isr),
                        sorted(ctx.live_broker_ids),
                    )
                    ctx.partition_leadership[tp] = state
                    failed.append(tp)
                    continue
                new = LeaderAndIsr(
                    result.leader, state.leader_epoch + 1, result.isr, ctx.epoch, state.zk_version
                )
                updates[tp] = (new, state.zk_version)
                recipients[tp] = live_replicas
                if result.unclean:
                    unclean.add(tp)
            if not updates:
                break
            done, conflicts = await self.zk.update_partition_states(updates, ctx.epoch_zk_version)
            for tp, leadership in done.items():
                ctx.partition_leadership[tp] = leadership
                elected[tp] = leadership
                if tp in unclean:
                    ctx.unclean_leader_elections += 1
                    log.warning(
                        "unclean leader election for %s: %d leads although it was not in "
                        "the ISR; records it lacks are lost",
                        tp,
                        leadership.leader,
                    )
                self._batch.add_leader_and_isr_request_for_brokers(
                    recipients[tp], tp, leadership, ctx.partition_replicas(tp)
                )
            if done:
                log.info(
                    "%s leader election: %s",
                    strategy.value,
                    ", ".join(
                        f"{tp} -> {lai.leader} (epoch {lai.leader_epoch})"
                        for tp, lai in done.items()
                    ),
                )
            remaining = list(conflicts)
        return elected, failed

    async def _compute_election(
        self,
        tp: TopicPartition,
        state: LeaderAndIsr,
        strategy: _Strategy,
        unclean_allowed: dict[str, bool],
    ) -> tuple[ElectionResult | None, list[int]]:
        """The election result and the replicas to send the new state to."""
        ctx = self.context
        replicas = ctx.partition_replicas(tp)
        live = ctx.live_broker_ids
        live_replicas = [r for r in replicas if r in live]
        if strategy is _Strategy.OFFLINE:
            result = offline_partition_election(replicas, state.isr, live, False)
            if result is None and await self._unclean_leader_election_enabled(
                tp.topic, unclean_allowed
            ):
                result = offline_partition_election(replicas, state.isr, live, True)
            return result, live_replicas
        if strategy is _Strategy.PREFERRED:
            return preferred_replica_election(replicas, state.isr, live), live_replicas
        # Controlled shutdown: the broker leaving gets the new state too, so it stops leading.
        live_or_shutting_down = ctx.live_or_shutting_down_broker_ids
        result = controlled_shutdown_election(
            replicas, state.isr, live_or_shutting_down, ctx.shutting_down_broker_ids
        )
        return result, [r for r in replicas if r in live_or_shutting_down]

    async def _unclean_leader_election_enabled(self, topic: str, cache: dict[str, bool]) -> bool:
        """The topic's `unclean.leader.election.enable` override, else the broker's; read only
        when a clean election failed, as Kafka does."""
        if topic not in cache:
            enabled = self.config.unclean_leader_election_enable
            raw = (await self.zk.get_topic_config(topic)).get(UNCLEAN_LEADER_ELECTION_ENABLE)
            if raw is not None:
                try:
                    enabled = parse_bool(raw)
                except ValueError:
                    log.warning(
                        "topic %s: invalid %s=%r", topic, UNCLEAN_LEADER_ELECTION_ENABLE, raw
                    )
            cache[topic] = enabled
        return cache[topic]

    # --- replicas going offline ------------------------------------------------------------------

    async def _offline_replicas(self, replicas: Sequence[PartitionAndReplica]) -> None:
        """Kafka's OfflineReplica transition: StopReplica(delete_partition=False) to the
        replica's broker (dropped if it is dead), remove it from the ISR with a new leader
        epoch, LeaderAndIsr to the other replicas. Adds to the current batch."""
        ctx = self.context
        by_broker: dict[int, list[TopicPartition]] = {}
        for r in replicas:
            by_broker.setdefault(r.replica, []).append(r.tp)
        for broker_id, tps in sorted(by_broker.items()):
            for tp in tps:
                self._batch.add_stop_replica_request_for_brokers([broker_id], tp, False)
            updated = await self._remove_replica_from_isr(
                broker_id, [tp for tp in tps if tp in ctx.partition_leadership]
            )
            for tp in tps:
                leadership = updated.get(tp)
                replicas_of_tp = ctx.partition_replicas(tp)
                if leadership is not None and not ctx.is_topic_queued_for_deletion(tp.topic):
                    others = [r for r in replicas_of_tp if r != broker_id]
                    self._batch.add_leader_and_isr_request_for_brokers(
                        others, tp, leadership, replicas_of_tp
                    )
                else:
                    # Unchanged state, but its offline replicas changed.
                    self._batch.add_update_metadata_request_for_brokers(
                        ctx.live_or_shutting_down_broker_ids, [tp]
                    )

    async def _remove_replica_from_isr(
        self, broker_id: int, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, LeaderAndIsr]:
        """Kafka's `removeReplicasFromIsr`: the new states of the partitions that changed.

        The ISR keeps its last member (it alone may hold every committed record); a leader
        that is removed is replaced by -1 (no leader), with leader epoch + 1 either way.
        """
        ctx = self.context
        changed: dict[TopicPartition, LeaderAndIsr] = {}
        remaining = list(partitions)
        while remaining:
            current = await self.zk.get_partition_states(remaining)
            updates: dict[TopicPartition, tuple[LeaderAndIsr, int]] = {}
            for tp in remaining:
                state = current.get(tp)
                if state is None:
                    log.warning(
                        "cannot remove %d from the ISR of %s: no state znode", broker_id, tp
                    )
                    continue
                if state.controller_epoch > ctx.epoch:
                    log.error("not changing %s: written by a newer controller", tp)
                    continue
                if broker_id not in state.isr:
                    ctx.partition_leadership[tp] = state
                    continue
                leader = NO_LEADER if state.leader == broker_id else state.leader
                isr = (
                    state.isr
                    if len(state.isr) == 1
                    else tuple(r for r in state.isr if r != broker_id)
                )
                updates[tp] = (
                    LeaderAndIsr(leader, state.leader_epoch + 1, isr, ctx.epoch, state.zk_version),
                    state.zk_version,
                )
            if not updates:
                break
            done, conflicts = await self.zk.update_partition_states(updates, ctx.epoch_zk_version)
            for tp, leadership in done.items():
                ctx.partition_leadership[tp] = leadership
                changed[tp] = leadership
            remaining = list(conflicts)
        if changed:
            log.info(
                "removed broker %d from the ISR of %s",
                broker_id,
                _tps(ctx.sorted_partitions(changed)),
            )
        return changed

    # --- broker changes (§8.3) ---------------------------------------------------------------------

    async def _process_broker_change(self) -> None:
        ctx = self.context
        current = await self.zk.get_all_brokers()
        known = dict(ctx.live_brokers)
        new_ids = sorted(set(current) - set(known))
        dead_ids = sorted(set(known) - set(current))
        # Same id, newer registration: the broker restarted between two looks (§8.3).
        bounced_ids = sorted(
            b for b in set(current) & set(known) if current[b].epoch > known[b].epoch
        )
        if not (new_ids or dead_ids or bounced_ids):
            return
        log.info(
            "broker change: new %s, dead %s, bounced %s; live %s",
            new_ids,
            dead_ids,
            bounced_ids,
            sorted(current),
        )
        for b in new_ids:
            self.channel.add_broker(current[b])
        for b in bounced_ids:
            self.channel.remove_broker(b)
            self.channel.add_broker(current[b])
        for b in dead_ids:
            self.channel.remove_broker(b)
        if new_ids:
            ctx.add_live_brokers(current[b] for b in new_ids)
            await self._on_broker_startup(new_ids)
        if bounced_ids:
            ctx.remove_live_brokers(bounced_ids)
            await self._on_broker_failure(bounced_ids)
            ctx.add_live_brokers(current[b] for b in bounced_ids)
            await self._on_broker_startup(bounced_ids)
        if dead_ids:
            ctx.remove_live_brokers(dead_ids)
            await self._on_broker_failure(dead_ids)

    async def _on_broker_startup(self, new_ids: list[int]) -> None:
        """Kafka's `onBrokerStartup`."""
        ctx = self.context
        existing = ctx.live_or_shutting_down_broker_ids - set(new_ids)
        # The others learn of the new brokers; the new ones get the whole cluster.
        self._send_update_metadata(existing)
        self._send_update_metadata(new_ids, ctx.all_partitions())

        # Its replicas come online: each gets its partition's state.
        replicas = ctx.replicas_on_brokers(new_ids)
        self._batch.new_batch()
        for r in replicas:
            leadership = ctx.partition_leadership.get(r.tp)
            if leadership is not None and not ctx.is_topic_queued_for_deletion(r.tp.topic):
                self._batch.add_leader_and_isr_request_for_brokers(
                    [r.replica], r.tp, leadership, ctx.partition_replicas(r.tp)
                )
        self._batch.send_requests_to_brokers(ctx.epoch)

        # It may be able to lead partitions that had no leader.
        self._batch.new_batch()
        await self._trigger_online_partition_state_change()
        self._batch.send_requests_to_brokers(ctx.epoch)

        # Deletions waiting for replicas on these brokers can go on.
        waiting = {r.tp.topic for r in replicas if ctx.is_topic_queued_for_deletion(r.tp.topic)}
        if waiting:
            ctx.topics_ineligible_for_deletion -= waiting
            await self._resume_deletions()

    async def _on_broker_failure(self, dead_ids: list[int]) -> None:
        """Kafka's `onBrokerFailure`."""
        ctx = self.context
        ctx.shutting_down_broker_ids -= set(dead_ids)
        await self._on_replicas_become_offline(ctx.replicas_on_brokers(dead_ids))

    async def _on_replicas_become_offline(self, replicas: list[PartitionAndReplica]) -> None:
        ctx = self.context
        for_deletion = [r for r in replicas if ctx.is_topic_queued_for_deletion(r.tp.topic)]
        others = [r for r in replicas if not ctx.is_topic_queued_for_deletion(r.tp.topic)]
        self._batch.new_batch()
        # New leaders for the partitions that lost theirs, then the dead replicas leave the
        # ISRs of the others (the elections already dropped them from theirs).
        await self._trigger_online_partition_state_change()
        await self._offline_replicas(others)
        # Everyone learns the new set of live brokers, even if no partition changed.
        self._batch.add_update_metadata_request_for_brokers(ctx.live_or_shutting_down_broker_ids)
        self._batch.send_requests_to_brokers(ctx.epoch)
        if for_deletion:
            await self._fail_replica_deletion(for_deletion)

    # --- topics --------------------------------------------------------------------------------------

    async def _process_topic_change(self) -> None:
        ctx = self.context
        topics = set(await self.zk.get_all_topics())
        new_topics = topics - ctx.all_topics
        for topic in sorted(ctx.all_topics - topics):
            log.info("topic %s disappeared from ZooKeeper", topic)
            ctx.remove_topic(topic)
            self._unwatch_partition_modifications([topic])
        if not new_topics:
            return
        # Watched before their assignments are read, as at failover.
        await self._watch_partition_modifications(new_topics)
        assignments = await self.zk.get_assignments(new_topics)
        new_partitions: list[TopicPartition] = []
        for topic, assignment in sorted(assignments.items()):
            ctx.set_assignment(topic, assignment)
            new_partitions += ctx.partitions_for_topic(topic)
        await self._load_topic_ids(assignments)
        log.info("new topics %s: creating partitions %s", sorted(assignments), _tps(new_partitions))
        await self._on_new_partition_creation(new_partitions)

    async def _load_topic_ids(self, topics: Iterable[str]) -> None:
        """The topics' ids into the context; a topic written without one (by an older
        tool) gets one, written back with the controller's fence, as Kafka's controller
        does (KIP-516)."""
        ctx = self.context
        for topic, topic_id in sorted((await self.zk.get_topic_ids(topics)).items()):
            if topic_id is None and topic in ctx.partition_assignments:
                topic_id = new_kafka_uuid()
                try:
                    await self.zk.set_topic_assignment(
                        topic, ctx.partition_assignments[topic], ctx.epoch_zk_version, topic_id
                    )
                except ZkNoNodeError:
                    continue  # deleted meanwhile: the topic change watch sees to it
                log.info("topic %s had no topic id: gave it %s", topic, topic_id)
            if topic_id is not None:
                ctx.topic_ids[topic] = topic_id

    async def _on_new_partition_creation(self, new_partitions: Sequence[TopicPartition]) -> None:
        """Kafka's onNewPartitionCreation: NewPartition -> OnlinePartition (first leader and
        ISR written, LeaderAndIsr to the replicas, UpdateMetadata to every broker)."""
        if new_partitions:
            self._batch.new_batch()
            await self._initialize_leader_and_isr(new_partitions)
            self._batch.send_requests_to_brokers(self.context.epoch)

    # --- partitions added to existing topics (Kafka's PartitionModificationsHandler) -------------

    async def _watch_partition_modifications(self, topics: Iterable[str]) -> None:
        names = sorted(set(topics))
        if not names:
            return
        handles = await self.zk.watch_partition_modifications(
            names, self._on_partition_modification
        )
        for topic, handle in handles.items():
            previous = self._partition_modification_watches.pop(topic, None)
            if previous is not None:
                previous.cancel()
            self._partition_modification_watches[topic] = handle

    def _unwatch_partition_modifications(self, topics: Iterable[str]) -> None:
        for topic in topics:
            handle = self._partition_modification_watches.pop(topic, None)
            if handle is not None:
                handle.cancel()

    def _on_partition_modification(self, topic: str) -> None:
        self._enqueue(PartitionModifications(topic))

    async def _process_partition_modifications(self, topic: str) -> None:
        """Kafka's `processPartitionModifications`: partitions in the topic's assignment that
        the controller does not know yet are new (CreatePartitions wrote them); they take
        the path a new topic's partitions take. Changes to existing partitions' replicas are
        left alone (that would be a reassignment). A topic being deleted gets its
        assignment back without the additions."""
        ctx = self.context
        if topic not in ctx.all_topics:
            log.debug("ignoring a change of unknown topic %s", topic)
            return
        assignment = (await self.zk.get_assignments([topic])).get(topic)
        if assignment is None:
            return  # deleted meanwhile: the topic change watch sees to it
        known = ctx.partition_assignments.get(topic, {})
        added = {p: replicas for p, replicas in assignment.items() if p not in known}
        if ctx.is_topic_queued_for_deletion(topic):
            if added:
                log.warning(
                    "Skipping adding partitions %s for topic %s since it is currently being "
                    "deleted",
                    ",".join(str(p) for p in sorted(added)),
                    topic,
                )
                # Kafka's restorePartitionReplicaAssignment.
                with contextlib.suppress(ZkNoNodeError):
                    await self.zk.set_topic_assignment(
                        topic, known, ctx.epoch_zk_version, ctx.topic_ids.get(topic)
                    )
            else:
                log.info(
                    "Ignoring partition change of %s during topic deletion as no new partitions "
                    "are added",
                    topic,
                )
            return
        if not added:
            return
        ctx.set_assignment(topic, {**known, **added})
        new_partitions = [TopicPartition(topic, p) for p in sorted(added)]
        log.info(
            "New partitions to be added %s",
            ", ".join(f"{tp} -> {list(added[tp.partition])}" for tp in new_partitions),
        )
        await self._on_new_partition_creation(new_partitions)

    # --- topic deletion (Kafka's TopicDeletionManager) ----------------------------------------------

    async def _initialize_topic_deletion(self) -> None:
        """Kafka's `fetchTopicDeletionsInProgress` + `TopicDeletionManager.init`."""
        ctx = self.context
        requested = set(await self.zk.get_topic_deletions())
        if not self.config.delete_topic_enable:
            if requested:
                log.info(
                    "delete.topic.enable is false: dropping deletion requests %s", sorted(requested)
                )
                await self.zk.delete_topic_deletion_requests(
                    sorted(requested), ctx.epoch_zk_version
                )
            return
        ctx.topics_to_be_deleted |= requested
        # Deletion needs every replica to confirm; one on a dead broker holds it up.
        ctx.topics_ineligible_for_deletion |= {
            topic
            for topic in requested
            if any(not ctx.is_replica_online(r.replica) for r in ctx.replicas_for_topic(topic))
        }

    async def _process_topic_deletion(self) -> None:
        ctx = self.context
        requested = set(await self.zk.get_topic_deletions())
        non_existent = requested - ctx.all_topics
        if non_existent:
            log.info("dropping deletion requests of unknown topics %s", sorted(non_existent))
            await self.zk.delete_topic_deletion_requests(sorted(non_existent), ctx.epoch_zk_version)
        requested -= non_existent
        if not requested:
            return
        if not self.config.delete_topic_enable:
            log.info(
                "delete.topic.enable is false: dropping deletion requests %s", sorted(requested)
            )
            await self.zk.delete_topic_deletion_requests(sorted(requested), ctx.epoch_zk_version)
            return
        new = requested - ctx.topics_to_be_deleted
        if new:
            log.info("topics queued for deletion: %s", sorted(new))
            ctx.topics_to_be_deleted |= new
            await self._resume_deletions()

    async def _resume_deletions(self) -> None:
        """Kafka's `resumeDeletions`: finish, retry or start the deletions that can progress."""
        ctx = self.context
        if not self.config.delete_topic_enable:
            return
        retry: set[str] = set()
        eligible: set[str] = set()
        for topic in sorted(ctx.topics_to_be_deleted):
            if ctx.are_all_replicas_in_state(topic, ReplicaDeletionState.SUCCESSFUL):
                await self._complete_delete_topic(topic)
                continue
            if not ctx.is_any_replica_in_state(
                topic, ReplicaDeletionState.STARTED
            ) and ctx.is_any_replica_in_state(topic, ReplicaDeletionState.INELIGIBLE):
                retry.add(topic)
            if ctx.is_topic_eligible_for_deletion(topic):
                eligible.add(topic)
        for topic in retry:
            # Failed replicas become plain offline replicas again: asked anew once the topic
            # is eligible (its brokers are back).
            for r in ctx.replicas_for_topic(topic):
                if ctx.replica_deletion_states.get(r) is ReplicaDeletionState.INELIGIBLE:
                    del ctx.replica_deletion_states[r]
        if eligible:
            await self._on_topic_deletion(eligible)

    async def _on_topic_deletion(self, topics: set[str]) -> None:
        ctx = self.context
        started = topics - ctx.topics_with_deletion_started
        if started:
            log.info("deleting topics %s", sorted(started))
            ctx.topics_with_deletion_started |= started
        # Brokers drop the topics from their metadata now (Kafka: leader -2 for their partitions).
        live = ctx.live_or_shutting_down_broker_ids
        self._send_update_metadata(live, deleted_topics=topics)
        self._batch.new_batch()
        for topic in sorted(topics):
            # Kafka's startReplicaDeletion.
            waiting_for_dead_broker = False
            for r in ctx.replicas_for_topic(topic):
                if ctx.replica_deletion_states.get(r) is ReplicaDeletionState.SUCCESSFUL:
                    continue
                if ctx.is_replica_online(r.replica):
                    ctx.replica_deletion_states[r] = ReplicaDeletionState.STARTED
                    self._batch.add_stop_replica_request_for_brokers([r.replica], r.tp, True)
                else:
                    ctx.replica_deletion_states[r] = ReplicaDeletionState.INELIGIBLE
                    waiting_for_dead_broker = True
            if waiting_for_dead_broker:
                log.info("deletion of topic %s waits for replicas on dead brokers", topic)
                ctx.topics_ineligible_for_deletion.add(topic)
        self._batch.send_requests_to_brokers(ctx.epoch)

    def _on_stop_replica_response(
        self, broker_id: int, partitions: list[TopicPartition], response: object
    ) -> None:
        """StopReplica(delete_partition=True) answered: continue in the event task."""
        self._enqueue(
            TopicDeletionStopReplicaResponseReceived(
                broker_id, partitions, response, self.context.epoch
            )
        )

    async def _process_topic_deletion_stop_replica_response(
        self, event: TopicDeletionStopReplicaResponseReceived
    ) -> None:
        ctx = self.context
        if event.controller_epoch != ctx.epoch:
            return  # answers a request of an earlier controllership
        response = event.response
        errors: dict[TopicPartition, int]
        if isinstance(response, StopReplicaResponse) and response.error_code == ErrorCode.NONE:
            errors = {
                TopicPartition(e.topic, e.partition): e.error_code
                for e in response.partition_errors
            }
        else:
            # The whole request failed.
            if isinstance(response, StopReplicaResponse):
                code = response.error_code
            elif isinstance(response, KafkaError):
                code = int(response.code)
            else:
                code = int(ErrorCode.UNKNOWN_SERVER_ERROR)
            errors = dict.fromkeys(event.partitions, code)
        succeeded: list[PartitionAndReplica] = []
        failed: list[PartitionAndReplica] = []
        for tp in event.partitions:
            r = PartitionAndReplica(tp, event.broker_id)
            if ctx.replica_deletion_states.get(r) is not ReplicaDeletionState.STARTED:
                continue
            (failed if errors.get(tp, ErrorCode.NONE) != ErrorCode.NONE else succeeded).append(r)
        for r in succeeded:
            ctx.replica_deletion_states[r] = ReplicaDeletionState.SUCCESSFUL
        if failed:
            log.warning(
                "broker %d failed to delete %s", event.broker_id, _tps(r.tp for r in failed)
            )
            await self._fail_replica_deletion(failed)
        elif succeeded:
            await self._resume_deletions()

    async def _fail_replica_deletion(self, replicas: Sequence[PartitionAndReplica]) -> None:
        """Kafka's `failReplicaDeletion`: the topic waits until the broker comes back."""
        ctx = self.context
        topics: set[str] = set()
        for r in replicas:
            if not ctx.is_topic_queued_for_deletion(r.tp.topic):
                continue
            if ctx.replica_deletion_states.get(r) is not ReplicaDeletionState.SUCCESSFUL:
                ctx.replica_deletion_states[r] = ReplicaDeletionState.INELIGIBLE
                topics.add(r.tp.topic)
        if topics:
            ctx.topics_ineligible_for_deletion |= topics
            await self._resume_deletions()

    async def _complete_delete_topic(self, topic: str) -> None:
        ctx = self.context
        await self.zk.delete_topic_znodes(topic, ctx.epoch_zk_version)
        ctx.remove_topic(topic)
        self._unwatch_partition_modifications([topic])
        log.info("topic %s deleted", topic)
        self._send_update_metadata(ctx.live_or_shutting_down_broker_ids, deleted_topics=[topic])

    # --- ISR change notifications (§8.5) ------------------------------------------------------------

    async def _process_isr_change_notification(self) -> None:
        ctx = self.context
        names = await self.zk.get_isr_change_notifications()
        if not names:
            return
        try:
            tps = {
                tp
                for tp in await self.zk.read_isr_change_notifications(names)
                if ctx.has_partition(tp)
            }
            states = await self.zk.get_partition_states(tps)
            ctx.partition_leadership.update(states)
            if states:
                log.debug("ISR changes of %s", _tps(ctx.sorted_partitions(states)))
                self._send_update_metadata(ctx.live_or_shutting_down_broker_ids, states)
        finally:
            await self.zk.delete_isr_change_notifications(names, ctx.epoch_zk_version)

    # --- preferred replica election ------------------------------------------------------------------

    async def _process_preferred_replica_election_znode(self) -> None:
        partitions = await self.zk.get_preferred_replica_election()
        if partitions is None:
            return
        try:
            await self._on_preferred_replica_election(partitions)
        finally:
            await self.zk.delete_preferred_replica_election(self.context.epoch_zk_version)

    async def _on_preferred_replica_election(self, partitions: Iterable[TopicPartition]) -> None:
        ctx = self.context
        electable: list[TopicPartition] = []
        for tp in partitions:
            replicas = ctx.partition_replicas(tp)
            leadership = ctx.partition_leadership.get(tp)
            if not replicas:
                log.warning("preferred replica election: unknown partition %s", tp)
            elif ctx.is_topic_queued_for_deletion(tp.topic):
                log.warning("preferred replica election: %s is being deleted", tp)
            elif leadership is not None and leadership.leader != replicas[0]:
                electable.append(tp)
        if not electable:
            return
        self._batch.new_batch()
        await self._elect_leaders(ctx.sorted_partitions(set(electable)), _Strategy.PREFERRED)
        self._batch.send_requests_to_brokers(ctx.epoch)

    async def _process_auto_preferred_replica_leader_election(self) -> None:
        ctx = self.context
        try:
            candidates = partitions_to_rebalance(
                {tp: ctx.partition_replicas(tp) for tp in ctx.all_partitions()},
                ctx.partition_leadership,
                ctx.live_broker_ids,
                self.config.leader_imbalance_per_broker_percentage,
                excluded=ctx.topics_to_be_deleted,
            )
            if candidates:
                log.info("leader imbalance: preferred replica election for %s", _tps(candidates))
                await self._on_preferred_replica_election(candidates)
        finally:
            if self._active and self.config.auto_leader_rebalance_enable:
                self._schedule_auto_leader_rebalance(
                    float(self.config.leader_imbalance_check_interval_seconds)
                )

    # --- controlled shutdown (§8.7) ------------------------------------------------------------------

    async def _process_controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> list[TopicPartition]:
        """Kafka's `doControlledShutdown`."""
        ctx = self.context
        if not self._active:
            raise NotControllerError(f"broker {self.broker_id} is not the controller")
        info = ctx.live_brokers.get(broker_id)
        if info is None:
            raise BrokerNotAvailableError(f"broker {broker_id} is not registered")
        if broker_epoch != UNKNOWN_BROKER_EPOCH and broker_epoch < info.epoch:
            raise StaleBrokerEpochError(
                f"broker {broker_id}'s epoch {broker_epoch} is older than {info.epoch}"
            )
        ctx.shutting_down_broker_ids.add(broker_id)
        log.info(
            "controlled shutdown of broker %d; shutting down: %s",
            broker_id,
            sorted(ctx.shutting_down_broker_ids),
        )

        def replicated(tp: TopicPartition) -> bool:
            return len(ctx.partition_replicas(tp)) > 1 and not ctx.is_topic_queued_for_deletion(
                tp.topic
            )

        to_act_on = [
            tp
            for tp in ctx.partitions_on_broker(broker_id)
            if replicated(tp) and tp in ctx.partition_leadership
        ]
        led = [tp for tp in to_act_on if ctx.partition_leadership[tp].leader == broker_id]
        followed = [tp for tp in to_act_on if ctx.partition_leadership[tp].leader != broker_id]
        # The election would fail, state znode read and all, for each partition none of whose
        # other replicas is live (the last broker of a cluster stopping leads everything):
        # those stay led by it, and it is told so, without the work.
        live = ctx.live_broker_ids
        movable = [tp for tp in led if any(r in live for r in ctx.partition_replicas(tp))]
        if len(movable) < len(led):
            log.info(
                "controlled shutdown of broker %d: %d of the partitions it leads have no other "
                "live replica to move to",
                broker_id,
                len(led) - len(movable),
            )
        self._batch.new_batch()
        if movable:
            await self._elect_leaders(movable, _Strategy.CONTROLLED_SHUTDOWN)
        # As a follower it stops fetching and leaves the ISR, so acks=all stops waiting for it.
        await self._offline_replicas([PartitionAndReplica(tp, broker_id) for tp in followed])
        self._batch.send_requests_to_brokers(ctx.epoch)
        return [
            tp
            for tp in ctx.all_partitions()
            if replicated(tp)
            and tp in ctx.partition_leadership
            and ctx.partition_leadership[tp].leader == broker_id
        ]


__all__ = [
    "AutoPreferredReplicaLeaderElection",
    "BrokerChange",
    "ControlledShutdown",
    "ControllerChange",
    "ControllerEvent",
    "Expire",
    "IsrChangeNotification",
    "KafkaController",
    "PartitionModifications",
    "PreferredReplicaLeaderElection",
    "Reelect",
    "RegisterBrokerAndReelect",
    "Startup",
    "TopicChange",
    "TopicDeletion",
    "TopicDeletionStopReplicaResponseReceived",
    "state_creation_chunks",
]
