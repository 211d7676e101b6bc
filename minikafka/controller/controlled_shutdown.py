"""Controlled shutdown: Kafka's `KafkaController.doControlledShutdown` (design §8.7).

A broker stopping on SIGTERM asks the controller, and retries while the answer is not empty,
to move leadership off it first, so that clients see a leader change rather than a dead
leader: the partitions it leads get a new leader from their ISR, and it leaves the ISR of
those it follows. Partitions with one replica, and those of topics being deleted, stay as
they are.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from minikafka.common import TopicPartition
from minikafka.controller.channel_manager import ControllerBrokerRequestBatch
from minikafka.controller.context import ControllerContext, PartitionAndReplica
from minikafka.controller.partition_state_machine import (
    PartitionLeaderElectionStrategy,
    PartitionStateMachine,
)
from minikafka.controller.replica_state_machine import ReplicaStateMachine
from minikafka.protocol.errors import BrokerNotAvailableError, StaleBrokerEpochError

log = logging.getLogger(__name__)

UNKNOWN_BROKER_EPOCH = -1  # a ControlledShutdown without one skips the epoch check (Kafka)


def _check(ctx: ControllerContext, broker_id: int, broker_epoch: int) -> None:
    info = ctx.live_brokers.get(broker_id)
    if info is None:
        raise BrokerNotAvailableError(f"broker {broker_id} is not registered")
    if broker_epoch != UNKNOWN_BROKER_EPOCH and broker_epoch < info.epoch:
        raise StaleBrokerEpochError(
            f"broker {broker_id}'s epoch {broker_epoch} is older than {info.epoch}"
        )


async def do_controlled_shutdown(
    broker_id: int,
    broker_epoch: int,
    *,
    context: ControllerContext,
    batch: ControllerBrokerRequestBatch,
    partition_state_machine: PartitionStateMachine,
    replica_state_machine: ReplicaStateMachine,
    queued: Sequence[tuple[int, int]] = (),
) -> list[TopicPartition]:
    """Mark the broker shutting down, move leadership off it, take its follower replicas
    offline; returns the replicated partitions it still leads. The caller checks that this
    broker is the active controller.

    `queued`: (broker id, broker epoch) of the ControlledShutdowns waiting behind this one.
    The elections here prefer a leader outside them: stopping several brokers at once then
    moves a partition once rather than once per broker. They are still live and in the ISRs
    until their own turn (Kafka processes each request alone)."""
    ctx = context
    _check(ctx, broker_id, broker_epoch)
    ctx.shutting_down_broker_ids.add(broker_id)
    ctx.leaving_next_broker_ids = set()
    for other, other_epoch in queued:
        try:
            _check(ctx, other, other_epoch)
        except (BrokerNotAvailableError, StaleBrokerEpochError):
            continue  # its own turn answers it with the error
        ctx.leaving_next_broker_ids.add(other)
    try:
        return await _move_off(
            broker_id, ctx, batch, partition_state_machine, replica_state_machine
        )
    finally:
        ctx.leaving_next_broker_ids = set()


async def _move_off(
    broker_id: int,
    ctx: ControllerContext,
    batch: ControllerBrokerRequestBatch,
    partition_state_machine: PartitionStateMachine,
    replica_state_machine: ReplicaStateMachine,
) -> list[TopicPartition]:
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
    if movable:
        # The new leaders go out in a batch of their own (as Kafka's handleStateChanges
        # sends each), before the ISR writes below.
        batch.new_batch()
        await partition_state_machine.elect_leaders(
            movable, PartitionLeaderElectionStrategy.CONTROLLED_SHUTDOWN
        )
        batch.send_requests_to_brokers(ctx.epoch)
    # As a follower it stops fetching and leaves the ISR, so acks=all stops waiting for it.
    batch.new_batch()
    await replica_state_machine.offline_replicas(
        [PartitionAndReplica(tp, broker_id) for tp in followed]
    )
    batch.send_requests_to_brokers(ctx.epoch)
    # A partition it leads is one of its own (a leader is always an assigned replica): no
    # need to go through every partition of the cluster again.
    return [tp for tp in to_act_on if ctx.partition_leadership[tp].leader == broker_id]


__all__ = ["UNKNOWN_BROKER_EPOCH", "do_controlled_shutdown"]
