"""Replicas going offline: the OfflineReplica transition of Kafka's `ReplicaStateMachine`.

A replica goes offline when its broker dies or shuts down in a controlled way: it leaves the
ISR of its partition (written to the state znode, fenced and conditional like every
controller write) so that acks=all stops waiting for it, and the other replicas learn the
new state. The deletion states of a topic being deleted are `topic_deletion.py`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from minikafka.common import NO_LEADER, LeaderAndIsr, TopicPartition
from minikafka.controller.context import (
    PartitionAndReplica,
    format_partitions,
)
from minikafka.controller.parts import ControllerParts, states_to_change

log = logging.getLogger(__name__)


class ReplicaStateMachine:
    """Takes replicas offline; adds its requests to the controller's current batch."""

    def __init__(self, parts: ControllerParts) -> None:
        self._context = parts.context
        self._zk = parts.zk
        self._batch = parts.batch

    async def offline_replicas(self, replicas: Sequence[PartitionAndReplica]) -> None:
        """Kafka's OfflineReplica transition: StopReplica(delete_partition=False) to the
        replica's broker (dropped if it is dead), remove it from the ISR with a new leader
        epoch, LeaderAndIsr to the other replicas. Adds to the current batch."""
        ctx = self._context
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
        ctx = self._context
        changed: dict[TopicPartition, LeaderAndIsr] = {}
        remaining = list(partitions)
        current, own = await states_to_change(ctx, self._zk, remaining)
        # A dead broker left out of an ISR this controller wrote in this event (the elections
        # of a failover or of a broker's death) is not read again: only a replica that
        # fetches is added back, and a shutting-down one still does.
        dead = broker_id not in ctx.live_or_shutting_down_broker_ids
        while remaining:
            updates: dict[TopicPartition, tuple[LeaderAndIsr, int]] = {}
            recheck: list[TopicPartition] = []  # not in the ISR of the controller's own state
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
                    if tp in own and not (dead and tp in ctx.written_in_event):
                        recheck.append(tp)  # a leader may have added it back since
                    else:
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
            done: dict[TopicPartition, LeaderAndIsr] = {}
            conflicts: list[TopicPartition] = []
            if updates:
                done, conflicts = await self._zk.update_partition_states(
                    updates, ctx.epoch_zk_version
                )
            ctx.written_in_event.update(done)
            for tp, leadership in done.items():
                ctx.partition_leadership[tp] = leadership
                changed[tp] = leadership
            remaining = [*conflicts, *recheck]
            own = set()
            if remaining:
                current = await self._zk.get_partition_states(remaining)
        if changed:
            log.info(
                "removed broker %d from the ISR of %s",
                broker_id,
                format_partitions(ctx.sorted_partitions(changed)),
            )
        return changed


__all__ = ["ReplicaStateMachine"]
