"""What the controller's jobs share: the parts `KafkaController` builds once and hands to each
(the state machines, the topic and broker change processors, topic deletion, preferred
replica elections)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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
