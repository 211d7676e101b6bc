"""Brokers starting, dying and bouncing: Kafka's `processBrokerChange`, `onBrokerStartup`
and `onBrokerFailure` (design §8.3).

The controller compares the registrations under `/brokers/ids` with the brokers it knows. A
new broker gets the cluster's metadata and its replicas' states, and may lead partitions
that had no leader. A dead broker's partitions elect new leaders, and its replicas leave the
ISRs (`replica_state_machine.py`). A bounced broker (same id, newer registration: it
restarted between two looks) is both, failure first.
"""

from __future__ import annotations

import logging

from minikafka.controller.channel_manager import (
    BrokerRequestSender,
)
from minikafka.controller.context import PartitionAndReplica
from minikafka.controller.partition_state_machine import PartitionStateMachine
from minikafka.controller.parts import ControllerParts
from minikafka.controller.reassignment import PartitionReassignmentProcessor
from minikafka.controller.replica_state_machine import ReplicaStateMachine
from minikafka.controller.topic_deletion import TopicDeletionManager

log = logging.getLogger(__name__)


class BrokerChangeProcessor:
    def __init__(
        self,
        parts: ControllerParts,
        channel: BrokerRequestSender,
        partition_state_machine: PartitionStateMachine,
        replica_state_machine: ReplicaStateMachine,
        topic_deletion: TopicDeletionManager,
        reassignment: PartitionReassignmentProcessor,
    ) -> None:
        self._context = parts.context
        self._zk = parts.zk
        self._channel = channel
        self._batch = parts.batch
        self._partition_state_machine = partition_state_machine
        self._replica_state_machine = replica_state_machine
        self._topic_deletion = topic_deletion
        self._reassignment = reassignment

    async def process_broker_change(self) -> None:
        """Kafka's `processBrokerChange`: the children of `/brokers/ids` changed."""
        ctx = self._context
        current = await self._zk.get_all_brokers()
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
            self._channel.add_broker(current[b])
        for b in bounced_ids:
            self._channel.remove_broker(b)
            self._channel.add_broker(current[b])
        for b in dead_ids:
            self._channel.remove_broker(b)
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
        ctx = self._context
        existing = ctx.live_or_shutting_down_broker_ids - set(new_ids)
        # The others learn of the new brokers; the new ones get the whole cluster.
        self._batch.send_update_metadata_request(existing, ctx.epoch)
        self._batch.send_update_metadata_request(new_ids, ctx.epoch, ctx.all_partitions())

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
        await self._partition_state_machine.trigger_online_partition_state_change()
        self._batch.send_requests_to_brokers(ctx.epoch)

        # Moves waiting for a target replica on these brokers can go on.
        started = set(new_ids)
        await self._reassignment.maybe_resume_reassignments(
            lambda _, assignment: any(r in started for r in assignment.target_replicas)
        )

        # Deletions waiting for replicas on these brokers can go on.
        waiting = {r.tp.topic for r in replicas if ctx.is_topic_queued_for_deletion(r.tp.topic)}
        if waiting:
            await self._topic_deletion.resume_deletion_for_topics(waiting)

    async def _on_broker_failure(self, dead_ids: list[int]) -> None:
        """Kafka's `onBrokerFailure`."""
        ctx = self._context
        ctx.shutting_down_broker_ids -= set(dead_ids)
        await self._on_replicas_become_offline(ctx.replicas_on_brokers(dead_ids))

    async def _on_replicas_become_offline(self, replicas: list[PartitionAndReplica]) -> None:
        """Kafka's `onReplicasBecomeOffline`."""
        ctx = self._context
        for_deletion = [r for r in replicas if ctx.is_topic_queued_for_deletion(r.tp.topic)]
        others = [r for r in replicas if not ctx.is_topic_queued_for_deletion(r.tp.topic)]
        # New leaders for the partitions that lost theirs, sent at once (their clients wait
        # for them); then, in a batch of its own as in Kafka, the dead replicas leave the
        # ISRs of the others (the elections already dropped them from theirs).
        self._batch.new_batch()
        await self._partition_state_machine.trigger_online_partition_state_change()
        self._batch.send_requests_to_brokers(ctx.epoch)
        self._batch.new_batch()
        await self._replica_state_machine.offline_replicas(others)
        # Everyone learns the new set of live brokers, even if no partition changed.
        self._batch.add_update_metadata_request_for_brokers(ctx.live_or_shutting_down_broker_ids)
        self._batch.send_requests_to_brokers(ctx.epoch)
        if for_deletion:
            await self._topic_deletion.fail_replica_deletion(for_deletion)


__all__ = ["BrokerChangeProcessor"]
