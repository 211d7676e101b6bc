"""The controller: Kafka's ZooKeeper-era `KafkaController` (design §8).

Every broker runs one; the one that wins the `/controller` election (§8.1) loads the cluster
from ZooKeeper and decides leadership for everybody (§8.2–8.5, §8.7). All work happens in
one asyncio task that takes events (`events.py`) from one queue, one at a time
(`event_manager.py`, Kafka's `ControllerEventThread`): ZooKeeper watches, timers and API
calls only enqueue.

Every write to ZooKeeper is fenced by the `/controller_epoch` zk version this broker got
when it was elected; a `ControllerMovedError` means another broker has been elected since,
and this one resigns on the spot (stops acting, forgets the cluster, closes its channels).

This module holds the event dispatch, the election, failover and resignation (§8.1, §8.2),
and the ISR change notifications (§8.5). The rest is one job per module, as Kafka splits it:
- leader elections: `partition_state_machine.py` (strategies in `election.py`);
- replicas going offline (leaving the ISR): `replica_state_machine.py`;
- brokers starting, dying, bouncing: `broker_changes.py`;
- new topics and partitions added to topics: `topic_changes.py`;
- topic deletion: `topic_deletion.py`;
- preferred replica elections, by an admin or the imbalance check, and an admin's
  ElectLeaders (preferred or unclean): `preferred_replica_election.py`;
- partition reassignment (KIP-455): `reassignment.py`;
- controlled shutdown: `controlled_shutdown.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable

from minikafka.clock import SYSTEM_CLOCK, Clock
from minikafka.common import TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.controller.broker_changes import BrokerChangeProcessor
from minikafka.controller.channel_manager import (
    BrokerRequestSender,
    ControllerBrokerRequestBatch,
    ControllerChannelManager,
)
from minikafka.controller.context import ControllerContext, format_partitions
from minikafka.controller.controlled_shutdown import do_controlled_shutdown
from minikafka.controller.event_manager import ControllerEventManager
from minikafka.controller.events import (
    ApiError,
    ApiPartitionReassignment,
    AutoPreferredReplicaLeaderElection,
    BrokerChange,
    ControlledShutdown,
    ControllerChange,
    ControllerEvent,
    Expire,
    IsrChangeNotification,
    ListPartitionReassignments,
    PartitionModifications,
    PartitionReassignmentIsrChange,
    PreferredReplicaLeaderElection,
    Reelect,
    RegisterBrokerAndReelect,
    ReplicaLeaderElection,
    Startup,
    TopicChange,
    TopicDeletion,
    TopicDeletionStopReplicaResponseReceived,
    UncleanLeaderElectionEnable,
    ZkPartitionReassignment,
)
from minikafka.controller.partition_state_machine import PartitionStateMachine
from minikafka.controller.parts import ControllerParts
from minikafka.controller.preferred_replica_election import PreferredReplicaElectionProcessor
from minikafka.controller.reassignment import PartitionReassignmentProcessor
from minikafka.controller.replica_state_machine import ReplicaStateMachine
from minikafka.controller.topic_changes import TopicChangeProcessor
from minikafka.controller.topic_deletion import TopicDeletionManager
from minikafka.controller.zk_store import ControllerZkStore, WatchHandle
from minikafka.protocol.errors import ErrorCode, KafkaError, NotControllerError
from minikafka.rpc.connection import PLAINTEXT_CONNECTIONS, ConnectionSecurity
from minikafka.rules.election import ElectionType
from minikafka.rules.reassignment import ReplicaAssignment
from minikafka.zk.client import ControllerMovedError, ZkError

log = logging.getLogger(__name__)

# Kafka waits this long after becoming controller before the first imbalance check.
INITIAL_AUTO_REBALANCE_DELAY_S = 5.0
# After a ZooKeeper error during the election check, check again this much later: nothing
# else would if /controller did not change meanwhile.
ELECTION_RETRY_BACKOFF_S = 1.0


class _ControllerDeletionClient:
    """Kafka's `ControllerDeletionClient`: what topic deletion asks of the controller."""

    def __init__(self, parts: ControllerParts, topic_changes: TopicChangeProcessor) -> None:
        self._context = parts.context
        self._batch = parts.batch
        self._topic_changes = topic_changes

    def mute_partition_modifications(self, topic: str) -> None:
        self._topic_changes.unwatch_partition_modifications([topic])

    def send_metadata_update(self, deleted_topics: Iterable[str]) -> None:
        ctx = self._context
        self._batch.send_update_metadata_request(
            ctx.live_or_shutting_down_broker_ids, ctx.epoch, deleted_topics=deleted_topics
        )


class KafkaController:
    def __init__(
        self,
        config: BrokerConfig,
        zk: ControllerZkStore,
        *,
        clock: Clock = SYSTEM_CLOCK,
        channel: BrokerRequestSender | None = None,
        connection_security: ConnectionSecurity = PLAINTEXT_CONNECTIONS,
    ) -> None:
        self.config = config  # the settings in force (the broker replaces it when they change)
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
                connection_security=connection_security,
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
        self._event_manager = ControllerEventManager(
            self._process, name=f"controller-event-thread-{self.broker_id}"
        )
        self._active = False
        self._active_controller_id = -1
        self._controller_watch: WatchHandle | None = None
        self._controller_only_watches: list[WatchHandle] = []
        self._timers: set[asyncio.Task[None]] = set()
        self._rebalance_timer: asyncio.Task[None] | None = None
        self.active_since_ms: int | None = None

        # The jobs, each in its own module; all share these parts (the context and the
        # request batch among them), and run only on the event task.
        def current_config() -> BrokerConfig:
            return self.config

        parts = ControllerParts(current_config, self.context, zk, self._batch)
        self._partition_state_machine = PartitionStateMachine(parts)
        self._replica_state_machine = ReplicaStateMachine(parts)
        self._topic_changes = TopicChangeProcessor(
            parts, self._partition_state_machine, self._on_partition_modification
        )
        self._topic_deletion = TopicDeletionManager(
            parts, _ControllerDeletionClient(parts, self._topic_changes)
        )
        self._reassignment = PartitionReassignmentProcessor(
            parts,
            self._partition_state_machine,
            self._replica_state_machine,
            lambda tp: self._enqueue(PartitionReassignmentIsrChange(tp)),
            self._topic_deletion.resume_deletion_for_topics,
        )
        self._broker_changes = BrokerChangeProcessor(
            parts,
            self.channel,
            self._partition_state_machine,
            self._replica_state_machine,
            self._topic_deletion,
            self._reassignment,
        )
        self._preferred_replica_election = PreferredReplicaElectionProcessor(
            parts, self._partition_state_machine
        )

    # --- public interface (called by the broker) -----------------------------------------------

    async def startup(self) -> None:
        """Start the event task and enqueue Startup (watch `/controller`, try to elect)."""
        if self._event_manager.is_started:
            return
        self._event_manager.start()
        self._enqueue(Startup())

    async def shutdown(self) -> None:
        """Stop processing and resign locally; `/controller` stays (the broker's ZooKeeper
        session ends right after, which deletes it)."""
        await self._event_manager.close()
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
        if not self._active or self._event_manager.is_closed:
            raise NotControllerError(f"broker {self.broker_id} is not the controller")
        event = ControlledShutdown(broker_id, broker_epoch)
        self._enqueue(event)
        return await event.result

    async def elect_leaders(
        self, partitions: Iterable[TopicPartition], election_type: ElectionType
    ) -> dict[TopicPartition, int | ApiError]:
        """An admin's ElectLeaders (KIP-460), on the event task: each partition's new leader,
        or its error. NotControllerError if this broker is not (or stops being) the
        controller before the event is processed."""
        if not self._active or self._event_manager.is_closed:
            raise NotControllerError(f"broker {self.broker_id} is not the controller")
        event = ReplicaLeaderElection(frozenset(partitions), election_type)
        self._enqueue(event)
        return await event.result

    async def alter_partition_reassignments(
        self, reassignments: dict[TopicPartition, tuple[int, ...] | None]
    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        """AlterPartitionReassignments (KIP-455): an error code and message per partition;
        NotControllerError if this broker is not the controller."""
        if not self._active or self._event_manager.is_closed:
            raise NotControllerError("This is not the correct controller for this cluster.")
        event = ApiPartitionReassignment(reassignments)
        self._enqueue(event)
        return await event.result

    async def list_partition_reassignments(
        self, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        """ListPartitionReassignments: the moving partitions among `partitions` (None: all)."""
        if not self._active or self._event_manager.is_closed:
            raise NotControllerError("This is not the correct controller for this cluster.")
        event = ListPartitionReassignments(partitions)
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
        await self._event_manager.wait_for_idle()

    # --- event processing ----------------------------------------------------------------------

    def _enqueue(self, event: ControllerEvent) -> None:
        self._event_manager.put(event)

    async def _process(self, event: ControllerEvent) -> None:
        """Kafka's `KafkaController.process`: one event, its errors answered here."""
        self.context.written_in_event.clear()
        try:
            await self._dispatch(event)
        except asyncio.CancelledError:
            event.fail(NotControllerError("controller shut down"))
            raise
        except ControllerMovedError as e:
            log.info("Controller moved to another broker when processing %s: %s", event, e)
            event.fail(NotControllerError(str(e)))
            await self._handle_controller_moved()
        except KafkaError as e:  # an API call refused (ControlledShutdown)
            log.info("%s failed: %s", event, e)
            event.fail(e)
        except Exception as e:
            log.exception("Error processing event %s", event)
            event.fail(e)

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
        elif isinstance(event, ReplicaLeaderElection):
            if not self._active:
                raise NotControllerError("This is not the correct controller for this cluster.")
            elections = await self._preferred_replica_election.process_admin_replica_election(
                event.partitions, event.election_type
            )
            if not event.result.done():
                event.result.set_result(elections)
        elif isinstance(event, ApiPartitionReassignment | ListPartitionReassignments):
            if not self._active:
                raise NotControllerError("This is not the correct controller for this cluster.")
            if isinstance(event, ApiPartitionReassignment):
                results = await self._reassignment.process_api_reassignment(event.reassignments)
                if not event.result.done():
                    event.result.set_result(results)
            elif not event.result.done():
                event.result.set_result(
                    self._reassignment.list_partition_reassignments(event.partitions)
                )
        elif not self._active:
            return  # the rest is controller work; a resigned controller drops it (as Kafka)
        elif isinstance(event, BrokerChange):
            await self._broker_changes.process_broker_change()
        elif isinstance(event, TopicChange):
            await self._topic_changes.process_topic_change()
        elif isinstance(event, PartitionModifications):
            await self._topic_changes.process_partition_modifications(event.topic)
        elif isinstance(event, TopicDeletion):
            await self._topic_deletion.process_topic_deletion()
        elif isinstance(event, TopicDeletionStopReplicaResponseReceived):
            await self._topic_deletion.process_stop_replica_response(event)
        elif isinstance(event, IsrChangeNotification):
            await self._process_isr_change_notification()
        elif isinstance(event, ZkPartitionReassignment):
            await self._reassignment.process_zk_partition_reassignment()
        elif isinstance(event, PartitionReassignmentIsrChange):
            await self._reassignment.process_isr_change(event.tp)
        elif isinstance(event, PreferredReplicaLeaderElection):
            await self._preferred_replica_election.process_preferred_replica_election_znode()
        elif isinstance(event, AutoPreferredReplicaLeaderElection):
            await self._process_auto_preferred_replica_leader_election()
        elif isinstance(event, UncleanLeaderElectionEnable):
            if self._active:
                self._batch.new_batch()
                await self._partition_state_machine.trigger_online_partition_state_change()
                self._batch.send_requests_to_brokers(self.context.epoch)
        else:
            raise AssertionError(f"unknown controller event {event!r}")

    def _enqueuer(self, event_type: type[ControllerEvent]) -> Callable[[], None]:
        def enqueue() -> None:
            self._enqueue(event_type())

        return enqueue

    def _on_controller_znode(self, exists: bool) -> None:
        self._enqueue(ControllerChange() if exists else Reelect())

    def _on_partition_modification(self, topic: str) -> None:
        self._enqueue(PartitionModifications(topic))

    def _on_stop_replica_response(
        self, broker_id: int, partitions: list[TopicPartition], response: object
    ) -> None:
        """StopReplica(delete_partition=True) answered: continue in the event task."""
        self._enqueue(
            TopicDeletionStopReplicaResponseReceived(
                broker_id, partitions, response, self.context.epoch
            )
        )

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
            (zk.watch_partition_reassignment, ZkPartitionReassignment),
        )
        for watch, event_type in watches:
            # One at a time, so that resigning cancels those set before a failure.
            handle = await watch(self._enqueuer(event_type))
            self._controller_only_watches.append(handle)
        # Older notifications are covered by reading every partition state below.
        stale = await zk.get_isr_change_notifications()
        if stale:
            await zk.delete_isr_change_notifications(stale, ctx.epoch_zk_version)

        started = time.monotonic()
        await self._initialize_controller_context()
        await self._topic_deletion.initialize()
        loaded = time.monotonic()

        # Brokers learn the live brokers before LeaderAndIsr names them as leaders (Kafka's
        # reason for its UpdateMetadata first).
        live = ctx.live_or_shutting_down_broker_ids
        self._batch.send_update_metadata_request(live, ctx.epoch)

        # Kafka's partitionStateMachine.startup() (leaders for new and offline partitions),
        # then replicaStateMachine.startup() (every replica on a live broker gets its
        # partition's current state), in one batch. Kafka sends each partition's state to
        # every broker first and the elected ones' again after the elections; here each
        # broker gets each partition's state once, the new leaders' included, and those
        # sooner: at 30,000 partitions the first round cost the brokers and the
        # controller about 4 s before the elections could start.
        self._batch.new_batch()
        # New partitions get their first state, and LeaderAndIsr (is_new), there.
        new = {tp for tp in ctx.all_partitions() if tp not in ctx.partition_leadership}
        await self._partition_state_machine.trigger_online_partition_state_change()
        elected = time.monotonic()
        for tp in ctx.all_partitions():
            if tp in new:
                continue
            leadership = ctx.partition_leadership.get(tp)
            if leadership is None or ctx.is_topic_queued_for_deletion(tp.topic):
                # A topic being deleted is announced as deleted.
                self._batch.add_update_metadata_request_for_brokers(live, [tp])
                continue
            replicas = ctx.partition_replicas(tp)
            online = [r for r in replicas if ctx.is_replica_online(r)]
            self._batch.add_leader_and_isr_request_for_brokers(online, tp, leadership, replicas)
        self._batch.send_requests_to_brokers(ctx.epoch)
        sent = time.monotonic()

        # The end of replicaStateMachine.startup(): replicas on brokers that died while there
        # was no controller (typically the previous controller itself) leave the ISRs, as a
        # broker failure would have made them. In a batch of its own, as in Kafka: the new
        # leaders reach the brokers without waiting for these ISR writes.
        dead = {r for tp in ctx.all_partitions() for r in ctx.partition_replicas(tp)}
        dead -= set(ctx.live_brokers)
        self._batch.new_batch()
        await self._replica_state_machine.offline_replicas(
            [
                r
                for r in ctx.replicas_on_brokers(dead)
                if not ctx.is_topic_queued_for_deletion(r.tp.topic)
            ]
        )
        self._batch.send_requests_to_brokers(ctx.epoch)

        # Where a failover's time goes, for large clusters: reading the cluster from
        # ZooKeeper, the elections (state znodes read and written), the requests to the
        # brokers (built and queued; sent by the channel), the replicas that died meanwhile.
        log.info(
            "controller %d ready, epoch %d, in %.2fs: loaded %.2fs, elections %.2fs, "
            "requests %.2fs, dead replicas %.2fs",
            self.broker_id,
            ctx.epoch,
            time.monotonic() - started,
            loaded - started,
            elected - loaded,
            sent - elected,
            time.monotonic() - sent,
        )
        await self._reassignment.initialize()
        await self._topic_deletion.resume_deletions()
        await self._preferred_replica_election.process_preferred_replica_election_znode()
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
        await self._topic_changes.watch_partition_modifications(topics)
        for topic, assignment in (await zk.get_full_assignments(topics)).items():
            ctx.set_assignment(topic, assignment)
        # Kafka's partitionsBeingReassigned: moves the previous controller left unfinished.
        ctx.partitions_being_reassigned = set(ctx.reassignment_states)
        await self._topic_changes.load_topic_ids(topics)
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
        self._topic_changes.unwatch_all_partition_modifications()
        self._reassignment.unwatch_all()
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
                log.debug("ISR changes of %s", format_partitions(ctx.sorted_partitions(states)))
                self._batch.send_update_metadata_request(
                    ctx.live_or_shutting_down_broker_ids, ctx.epoch, states
                )
        finally:
            await self.zk.delete_isr_change_notifications(names, ctx.epoch_zk_version)

    # --- preferred replica election ------------------------------------------------------------------

    async def _process_auto_preferred_replica_leader_election(self) -> None:
        try:
            await self._preferred_replica_election.check_and_trigger_auto_leader_rebalance()
        finally:
            # The next check, for as long as this broker is controller.
            if self._active and self.config.auto_leader_rebalance_enable:
                self._schedule_auto_leader_rebalance(
                    float(self.config.leader_imbalance_check_interval_seconds)
                )

    # --- controlled shutdown (§8.7) ------------------------------------------------------------------

    async def _process_controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> list[TopicPartition]:
        if not self._active:
            raise NotControllerError(f"broker {self.broker_id} is not the controller")
        return await do_controlled_shutdown(
            broker_id,
            broker_epoch,
            context=self.context,
            batch=self._batch,
            partition_state_machine=self._partition_state_machine,
            replica_state_machine=self._replica_state_machine,
            queued=[
                (e.broker_id, e.broker_epoch)
                for e in self._event_manager.queued(ControlledShutdown)
            ],
        )


__all__ = ["KafkaController"]
