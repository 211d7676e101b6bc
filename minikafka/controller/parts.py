"""What the controller's jobs share: the parts `KafkaController` builds once and hands to each
(the state machines, the topic and broker change processors, topic deletion, preferred
replica elections)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.controller.channel_manager import ControllerBrokerRequestBatch
from minikafka.controller.context import ControllerContext
from minikafka.controller.zk_store import ControllerZkStore


@dataclass(frozen=True, slots=True)
class ControllerParts:
    """The controller's settings, its cache of the cluster, its ZooKeeper and its current
    request batch. Every job runs only on the controller's event task."""

    # A getter: the broker replaces the controller's config when a dynamic config changes.
    current_config: Callable[[], BrokerConfig]
    context: ControllerContext
    zk: ControllerZkStore
    # The requests (LeaderAndIsr, UpdateMetadata, StopReplica) the current event sends.
    batch: ControllerBrokerRequestBatch


async def states_to_change(
    context: ControllerContext, zk: ControllerZkStore, tps: Sequence[TopicPartition]
) -> tuple[dict[TopicPartition, LeaderAndIsr], set[TopicPartition]]:
    """The states to base a first round of changes on, and which of them are the
    controller's own: those it last read or wrote (with their zk versions), ZooKeeper's
    for the others. Kafka reads every one again first: at a failover of 30,000 partitions,
    10,000 to 20,000 reads that the new controller made a second before.

    A write is conditional on the version, so a change decided on an own state that is
    out of date (a leader changed the ISR since, unheard of yet) fails to write, and the
    state is read again. A decision to write nothing is not checked that way: the caller
    must read those partitions again before deciding so (a preferred replica that just
    rejoined the ISR, a dead replica a leader just added back to it)."""
    known = context.partition_leadership
    current = {tp: known[tp] for tp in tps if tp in known}
    own = set(current)
    missing = [tp for tp in tps if tp not in own]
    if missing:
        current.update(await zk.get_partition_states(missing))
    return current, own
