"""Replica leader elections an admin or the controller asks for (design §8.2, §8.9).

Preferred elections move leadership back to each partition's first assigned replica. They
are asked for by an admin through `/admin/preferred_replica_election` (Kafka's
`processReplicaLeaderElection` for that znode), or by the controller's own leader-imbalance
check (Kafka's `checkAndTriggerAutoLeaderRebalance`, every
`leader.imbalance.check.interval.seconds`; which partitions: `rebalance.py`).

An admin's ElectLeaders (KIP-460) asks for preferred or unclean elections of the partitions
it names, and gets each partition's outcome (Kafka's `processReplicaLeaderElection` triggered
by the admin client).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from minikafka.common import TopicPartition
from minikafka.controller.context import format_partitions
from minikafka.controller.events import ApiError
from minikafka.controller.partition_state_machine import (
    PartitionLeaderElectionStrategy,
    PartitionStateMachine,
)
from minikafka.controller.parts import ControllerParts
from minikafka.protocol.errors import ErrorCode
from minikafka.rules.election import ElectionType, election_needed
from minikafka.rules.rebalance import partitions_to_rebalance

# Kafka's names of the strategies, which its ElectLeaders' error messages quote.
_KAFKA_STRATEGY_NAMES = {
    ElectionType.PREFERRED: "PreferredReplicaPartitionLeaderElectionStrategy",
    ElectionType.UNCLEAN: "OfflinePartitionLeaderElectionStrategy(true)",
}

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

    async def process_admin_replica_election(
        self, partitions: Iterable[TopicPartition], election_type: ElectionType
    ) -> dict[TopicPartition, int | ApiError]:
        """Kafka's `processReplicaLeaderElection` for an admin's ElectLeaders: each
        partition's new leader, or why it got none. Unknown partitions get
        UNKNOWN_TOPIC_OR_PARTITION, those of topics being deleted INVALID_TOPIC_EXCEPTION,
        those whose leader is already valid ELECTION_NOT_NEEDED; an election that finds no
        eligible replica PREFERRED_LEADER_NOT_AVAILABLE (the preferred replica is not live
        or not in the ISR) or ELIGIBLE_LEADERS_NOT_AVAILABLE (no live replica)."""
        ctx = self._context
        results: dict[TopicPartition, int | ApiError] = {}
        electable: list[TopicPartition] = []
        live = ctx.live_broker_ids
        for tp in partitions:
            if not ctx.has_partition(tp):
                results[tp] = ApiError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
                )
            elif ctx.is_topic_queued_for_deletion(tp.topic):
                results[tp] = ApiError(
                    ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted"
                )
            else:
                leadership = ctx.partition_leadership.get(tp)
                # A partition without a state yet has no leader: the election reads its
                # state znode, and fails if there is none.
                leader = -1 if leadership is None else leadership.leader
                if election_needed(election_type, ctx.partition_replicas(tp), leader, live):
                    electable.append(tp)
                else:
                    results[tp] = ApiError(
                        ErrorCode.ELECTION_NOT_NEEDED,
                        "Leader election not needed for topic partition.",
                    )
        if not electable:
            return results
        log.info(
            "replica leader election (%s) for %s triggered by the admin client",
            election_type.name,
            format_partitions(electable),
        )
        strategy = (
            PartitionLeaderElectionStrategy.PREFERRED
            if election_type is ElectionType.PREFERRED
            else PartitionLeaderElectionStrategy.OFFLINE_ALLOW_UNCLEAN
        )
        self._batch.new_batch()
        elected, failed = await self._partition_state_machine.elect_leaders(
            ctx.sorted_partitions(set(electable)), strategy
        )
        self._batch.send_requests_to_brokers(ctx.epoch)
        no_leader = (
            ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
            if election_type is ElectionType.PREFERRED
            else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
        )
        for tp in failed:
            results[tp] = ApiError(
                no_leader,
                f"Failed to elect leader for partition {tp} under strategy "
                f"{_KAFKA_STRATEGY_NAMES[election_type]}",
            )
        for tp, leadership in elected.items():
            results[tp] = leadership.leader
        return results


__all__ = ["PreferredReplicaElectionProcessor"]
