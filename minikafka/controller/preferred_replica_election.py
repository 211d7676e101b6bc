"""Preferred replica elections: leadership back to each partition's first assigned replica
(design §8.2).

Asked for by an admin through `/admin/preferred_replica_election` (Kafka's
`processReplicaLeaderElection` for that znode), or by the controller's own leader-imbalance
check (Kafka's `checkAndTriggerAutoLeaderRebalance`, every
`leader.imbalance.check.interval.seconds`; which partitions: `rebalance.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from minikafka.common import TopicPartition
from minikafka.controller.context import format_partitions
from minikafka.controller.partition_state_machine import (
    PartitionLeaderElectionStrategy,
    PartitionStateMachine,
)
from minikafka.controller.parts import ControllerParts
from minikafka.rules.rebalance import partitions_to_rebalance

log = logging.getLogger(__name__)


class PreferredReplicaElectionProcessor:
    def __init__(
        self, parts: ControllerParts, partition_state_machine: PartitionStateMachine
    ) -> None:
        self._current_config = parts.current_config
        self._context = parts.context
        self._zk = parts.zk
        self._batch = parts.batch
        self._partition_state_machine = partition_state_machine

    async def process_preferred_replica_election_znode(self) -> None:
        """Elect the partitions `/admin/preferred_replica_election` names, then delete the
        znode, whatever the outcome."""
        partitions = await self._zk.get_preferred_replica_election()
        if partitions is None:
            return
        try:
            await self._on_preferred_replica_election(partitions)
        finally:
            await self._zk.delete_preferred_replica_election(self._context.epoch_zk_version)

    async def check_and_trigger_auto_leader_rebalance(self) -> None:
        """Preferred elections for the partitions of the brokers whose leader imbalance
        passes `leader.imbalance.per.broker.percentage`."""
        ctx = self._context
        candidates = partitions_to_rebalance(
            {tp: ctx.partition_replicas(tp) for tp in ctx.all_partitions()},
            ctx.partition_leadership,
            ctx.live_broker_ids,
            self._current_config().leader_imbalance_per_broker_percentage,
            excluded=ctx.topics_to_be_deleted,
        )
        if candidates:
            log.info(
                "leader imbalance: preferred replica election for %s",
                format_partitions(candidates),
            )
            await self._on_preferred_replica_election(candidates)

    async def _on_preferred_replica_election(self, partitions: Iterable[TopicPartition]) -> None:
        """Kafka's `onReplicaElection` with the preferred strategy: unknown partitions, those
        being deleted and those already led by their preferred replica are skipped."""
        ctx = self._context
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
        await self._partition_state_machine.elect_leaders(
            ctx.sorted_partitions(set(electable)), PartitionLeaderElectionStrategy.PREFERRED
        )
        self._batch.send_requests_to_brokers(ctx.epoch)


__all__ = ["PreferredReplicaElectionProcessor"]
