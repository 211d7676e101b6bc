"""Leader elections: Kafka's `PartitionStateMachine` (design §8.4).

Not every state is modelled: a partition with no state znode is new (NewPartition), one whose
leader is not a registered broker is offline (OfflinePartition); moving either to
OnlinePartition is writing its state znode (fenced by the controller epoch, conditional on
the version read) and adding LeaderAndIsr / UpdateMetadata to the controller's current
request batch. Which replica leads is decided in `election.py`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from enum import Enum

from minikafka.common import NO_LEADER, LeaderAndIsr, TopicPartition
from minikafka.controller.context import format_items
from minikafka.controller.parts import ControllerParts, states_to_change
from minikafka.rules.election import (
    ElectionResult,
    controlled_shutdown_election,
    new_partition_election,
    offline_partition_election,
    preferred_replica_election,
)
from minikafka.rules.reassignment import reassign_partition_leader_election
from minikafka.storage.log_config import parse_bool
from minikafka.zk.client import ZkNodeExistsError, ZkNoNodeError

log = logging.getLogger(__name__)

UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"
# New partitions' state znodes are created in fenced multis of at most this many partitions
# and about this many bytes: one multi for a whole topic of thousands of partitions would
# exceed ZooKeeper's jute.maxbuffer (1 MiB), which the server answers by dropping the
# connection.
STATE_CREATION_CHUNK_PARTITIONS = 1000
STATE_CREATION_CHUNK_BYTES = 512 * 1024


class PartitionLeaderElectionStrategy(Enum):
    """Kafka's `PartitionLeaderElectionStrategy`."""

    OFFLINE = "offline"
    # Kafka's OfflinePartitionLeaderElectionStrategy(allowUnclean = true): an admin's UNCLEAN
    # ElectLeaders, which may elect a replica outside the ISR whatever the topic's
    # unclean.leader.election.enable says.
    OFFLINE_ALLOW_UNCLEAN = "offline (unclean allowed)"
    REASSIGN = "reassign partition"
    PREFERRED = "preferred"
    CONTROLLED_SHUTDOWN = "controlled shutdown"


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


class PartitionStateMachine:
    """Moves partitions online: first leaders of new partitions, new leaders of offline
    ones, preferred and controlled-shutdown elections. The caller owns the batch: it starts
    one before and sends it after (new partitions may send it earlier, chunk by chunk)."""

    def __init__(self, parts: ControllerParts) -> None:
        self._current_config = parts.current_config
        self._context = parts.context
        self._zk = parts.zk
        self._batch = parts.batch

    async def trigger_online_partition_state_change(self) -> None:
        """Elect leaders for new partitions and partitions whose leader is gone (Kafka's
        `triggerOnlinePartitionStateChange`), skipping topics being deleted. Adds the
        resulting requests to the current batch."""
        ctx = self._context
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
            await self.initialize_leader_and_isr(new)
        if offline:
            await self.elect_leaders(offline, PartitionLeaderElectionStrategy.OFFLINE)

    async def initialize_leader_and_isr(self, partitions: Sequence[TopicPartition]) -> None:
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
        ctx = self._context
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
        ctx = self._context
        try:
            return await self._zk.create_partition_states(states, ctx.epoch_zk_version)
        except (ZkNodeExistsError, ZkNoNodeError):
            pass
        # One of them exists already (an earlier controller got this far) or its topic is
        # gone: create the others one by one, as Kafka does.
        created: dict[TopicPartition, LeaderAndIsr] = {}
        for tp, state in states.items():
            try:
                created.update(
                    await self._zk.create_partition_states({tp: state}, ctx.epoch_zk_version)
                )
            except ZkNodeExistsError:
                log.warning("state of new partition %s already exists; using it", tp)
                ctx.partition_leadership.update(await self._zk.get_partition_states([tp]))
                self._batch.add_update_metadata_request_for_brokers(
                    ctx.live_or_shutting_down_broker_ids, [tp]
                )
            except ZkNoNodeError:
                log.warning("cannot create the state of %s: its topic is gone", tp)
        return created

    async def elect_leaders(
        self, partitions: Sequence[TopicPartition], strategy: PartitionLeaderElectionStrategy
    ) -> tuple[dict[TopicPartition, LeaderAndIsr], list[TopicPartition]]:
        """Kafka's `electLeaderForPartitions`: read each state znode, elect, write it with
        leader epoch + 1 conditionally on the version read, retry the conflicts. Adds
        LeaderAndIsr (and UpdateMetadata) to the current batch; returns (elected, failed)."""
        ctx = self._context
        elected: dict[TopicPartition, LeaderAndIsr] = {}
        failed: list[TopicPartition] = []
        unclean_allowed: dict[str, bool] = {}
        remaining = list(partitions)
        current, own = await states_to_change(ctx, self._zk, remaining)
        while remaining:
            updates: dict[TopicPartition, tuple[LeaderAndIsr, int]] = {}
            recipients: dict[TopicPartition, list[int]] = {}
            unclean: set[TopicPartition] = set()
            recheck: list[TopicPartition] = []  # failed on the controller's own state
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
                if result is None and tp in own:
                    recheck.append(tp)  # decided again on ZooKeeper's state
                    continue
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
            done: dict[TopicPartition, LeaderAndIsr] = {}
            conflicts: list[TopicPartition] = []
            if updates:
                done, conflicts = await self._zk.update_partition_states(
                    updates, ctx.epoch_zk_version
                )
            ctx.written_in_event.update(done)
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
                    format_items(
                        done.items(),
                        fmt=lambda e: f"{e[0]} -> {e[1].leader} (epoch {e[1].leader_epoch})",
                    ),
                )
            remaining = [*conflicts, *recheck]
            own = set()
            if remaining:
                current = await self._zk.get_partition_states(remaining)
        return elected, failed

    async def _compute_election(
        self,
        tp: TopicPartition,
        state: LeaderAndIsr,
        strategy: PartitionLeaderElectionStrategy,
        unclean_allowed: dict[str, bool],
    ) -> tuple[ElectionResult | None, list[int]]:
        """The election result and the replicas to send the new state to."""
        ctx = self._context
        replicas = ctx.partition_replicas(tp)
        live = ctx.live_broker_ids
        live_replicas = [r for r in replicas if r in live]
        if strategy is PartitionLeaderElectionStrategy.OFFLINE_ALLOW_UNCLEAN:
            return offline_partition_election(replicas, state.isr, live, True), live_replicas
        if strategy is PartitionLeaderElectionStrategy.OFFLINE:
            result = offline_partition_election(replicas, state.isr, live, False)
            if result is None and await self._unclean_leader_election_enabled(
                tp.topic, unclean_allowed
            ):
                result = offline_partition_election(replicas, state.isr, live, True)
            return result, live_replicas
        if strategy is PartitionLeaderElectionStrategy.PREFERRED:
            return preferred_replica_election(replicas, state.isr, live), live_replicas
        if strategy is PartitionLeaderElectionStrategy.REASSIGN:
            # The target replicas only: a move's removed replicas may not lead.
            target = ctx.full_replica_assignment(tp).target_replicas
            live_target = [r for r in target if r in live]
            return reassign_partition_leader_election(target, state.isr, live), live_target
        # Controlled shutdown: the broker leaving gets the new state too, so it stops leading.
        live_or_shutting_down = ctx.live_or_shutting_down_broker_ids
        result = controlled_shutdown_election(
            replicas,
            state.isr,
            live_or_shutting_down,
            ctx.shutting_down_broker_ids,
            ctx.leaving_next_broker_ids,
        )
        return result, [r for r in replicas if r in live_or_shutting_down]

    async def _unclean_leader_election_enabled(self, topic: str, cache: dict[str, bool]) -> bool:
        """The topic's `unclean.leader.election.enable` override, else the broker's; read only
        when a clean election failed, as Kafka does."""
        if topic not in cache:
            enabled = self._current_config().unclean_leader_election_enable
            raw = (await self._zk.get_topic_config(topic)).get(UNCLEAN_LEADER_ELECTION_ENABLE)
            if raw is not None:
                try:
                    enabled = parse_bool(raw)
                except ValueError:
                    log.warning(
                        "topic %s: invalid %s=%r", topic, UNCLEAN_LEADER_ELECTION_ENABLE, raw
                    )
            cache[topic] = enabled
        return cache[topic]


__all__ = [
    "STATE_CREATION_CHUNK_BYTES",
    "STATE_CREATION_CHUNK_PARTITIONS",
    "UNCLEAN_LEADER_ELECTION_ENABLE",
    "PartitionLeaderElectionStrategy",
    "PartitionStateMachine",
    "state_creation_chunks",
]
