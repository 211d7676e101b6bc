"""Auto leader rebalance decision (design §8.2), pure.

Kafka's `KafkaController.checkAndTriggerAutoLeaderRebalance`: after a broker
bounces, its partitions are led by others; every
`leader.imbalance.check.interval.seconds` the controller moves leadership back to
preferred replicas for brokers whose share of partitions they do not lead exceeds
`leader.imbalance.per.broker.percentage`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.rules.election import preferred_replica_election


def partitions_to_rebalance(
    assignments: Mapping[TopicPartition, Sequence[int]],
    leadership: Mapping[TopicPartition, LeaderAndIsr],
    live: Collection[int],
    imbalance_percentage: int,
    excluded: Collection[str] = (),
) -> list[TopicPartition]:
    """Partitions that should get a preferred replica election, sorted by (topic, partition).

    Per preferred broker (first assigned replica): imbalance = partitions it does not
    lead / partitions it prefers; a partition without known leadership counts in the
    total only, one with leader -1 counts as not led (as in Kafka). Over the threshold
    (strictly: Kafka compares with `>`), pick its not-led partitions where a preferred
    election would succeed (preferred replica live and in the ISR). Topics in
    `excluded` (queued for deletion) are ignored entirely.
    """
    by_preferred: dict[int, list[TopicPartition]] = {}
    for tp, replicas in assignments.items():
        if replicas and tp.topic not in excluded:
            by_preferred.setdefault(replicas[0], []).append(tp)

    chosen: list[TopicPartition] = []
    for preferred, partitions in by_preferred.items():
        not_led = [
            tp for tp in partitions if tp in leadership and leadership[tp].leader != preferred
        ]
        # not_led / total > percentage / 100, in integers to avoid rounding at the boundary.
        if len(not_led) * 100 > imbalance_percentage * len(partitions):
            chosen.extend(
                tp
                for tp in not_led
                if preferred_replica_election(assignments[tp], leadership[tp].isr, live) is not None
            )
    return sorted(chosen, key=lambda tp: (tp.topic, tp.partition))
