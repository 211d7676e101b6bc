"""Leadership back to the preferred replicas of a local cluster that has just started: Kafka's
preferred replica election, asked for in `/admin/preferred_replica_election` as Kafka's
`kafka-preferred-replica-election.sh --zookeeper` asks for it."""

from __future__ import annotations

import contextlib
import time

from minikafka.cluster.waiting import POLL_INTERVAL_S
from minikafka.common import TopicPartition
from minikafka.rules.rebalance import partitions_to_rebalance
from minikafka.zk.client import ZkClient, ZkNodeExistsError


def balance_leaders(zk: ZkClient, timeout: float) -> list[TopicPartition]:
    """Give each partition back to its preferred replica (the first assigned), as Kafka's
    preferred replica election does, once that replica is back in the ISR; returns the
    partitions still led by another broker when `timeout` has passed.

    A cluster started again brings its brokers up one by one: the first to register
    leads every partition whose leader is not up yet, and, without this, keeps them
    until the controller's auto rebalance (leader.imbalance.check.interval.seconds,
    300 s)."""
    deadline = time.monotonic() + timeout
    while True:
        live = set(zk.get_all_brokers())
        assignments = {
            TopicPartition(t, p): replicas
            for t, by_partition in zk.get_assignments(zk.get_all_topics()).items()
            for p, replicas in by_partition.items()
        }
        states = zk.get_partition_states(assignments)
        led_elsewhere = [
            tp
            for tp, replicas in assignments.items()
            if replicas
            and replicas[0] in live
            and tp in states
            and states[tp].leader != replicas[0]
        ]
        if not led_elsewhere or time.monotonic() >= deadline:
            return led_elsewhere
        # Those whose preferred replica is in the ISR (the others are still catching up).
        ready = partitions_to_rebalance(assignments, states, live, 0)
        if ready:
            # Still there while the controller works on the last request: ask after it.
            with contextlib.suppress(ZkNodeExistsError):
                zk.create_preferred_replica_election(ready)
        time.sleep(POLL_INTERVAL_S)
