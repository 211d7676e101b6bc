"""replica.lag.disconnected.max.ms: a killed follower leaves the ISR without waiting for its
ZooKeeper session to expire (minikafka's own setting; Kafka waits).

Real processes: a follower is killed with SIGKILL, its sockets close with it, and the leader
drops it from the ISR of the partitions it followed while the dead broker is still
registered in ZooKeeper; acks=all writes to those partitions go on. With the setting at -1
the ISR changes only once the session has expired and the controller has acted, as in Kafka.
A paused follower, whose connection stays open, is left to the lag rule (see
`test_a_paused_follower_leaves_the_isr_by_the_lag_rule_and_rejoins_after_sigcont`).
"""

from __future__ import annotations

import pytest

from minikafka.cluster import LocalCluster
from minikafka.common import LeaderAndIsr, TopicPartition
from tests.cluster.conftest import ClusterFactory, wait_until
from tests.cluster.helpers import create_topic, produce_values

pytestmark = pytest.mark.timeout(180)

TOPICS = ("a", "b")
OVERRIDES = {
    # The leader's own lag rule stays out of the way: only the closed connection (or, with
    # the setting off, the controller) can shrink the ISR within the test's time.
    "replica.lag.time.max.ms": "60000",
    "isr.change.propagation.check.interval.ms": "200",
    "isr.change.propagation.blackout.ms": "500",
    "isr.change.propagation.max.delay.ms": "2000",
    "auto.leader.rebalance.enable": "false",
}


def state(cluster: LocalCluster, topic: str) -> LeaderAndIsr:
    got = cluster.zk_client().get_partition_state(TopicPartition(topic, 0))
    assert got is not None
    return got


async def leader_with_two_followers(cluster: LocalCluster) -> tuple[int, int, int]:
    """Topics led by the controller (so the killed broker is never the controller), each
    with both other brokers as followers: (leader, follower to kill, the other one)."""
    controller = cluster.controller()
    assert controller is not None
    leader = controller[0]
    doomed, other = (b for b in cluster.broker_ids if b != leader)
    for topic in TOPICS:
        await create_topic(
            cluster,
            topic,
            -1,
            -1,
            {"min.insync.replicas": "2"},
            assignment={0: [leader, doomed, other]},
        )
        await produce_values(cluster, topic, [b"before"] * 5, acks="all")
    return leader, doomed, other


async def test_a_killed_follower_leaves_the_isr_while_its_session_lives_and_acks_all_goes_on(
    make_cluster: ClusterFactory,
) -> None:
    # A session far longer than the leader's 2 s: the controller cannot have done it. (The
    # restarted broker registers again only once it has expired: a longer one slows the test.)
    cluster = make_cluster(
        overrides={
            **OVERRIDES,
            "zookeeper.session.timeout.ms": "20000",
            "replica.lag.disconnected.max.ms": "2000",
        }
    )
    leader, doomed, other = await leader_with_two_followers(cluster)
    before = {t: state(cluster, t) for t in TOPICS}
    cluster.kill(doomed)
    wait_until(
        lambda: all(doomed not in state(cluster, t).isr for t in TOPICS),
        10,
        "the leader to drop the killed follower from both ISRs",
        0.05,
    )
    zk = cluster.zk_client()
    assert doomed in zk.get_broker_ids(), "its ZooKeeper session has not expired yet"
    for t in TOPICS:
        after = state(cluster, t)
        # The leader wrote it (same epoch), not an election by the controller.
        assert (after.leader, after.leader_epoch) == (leader, before[t].leader_epoch)
        assert sorted(after.isr) == sorted([leader, other])
    # acks=all with min.insync.replicas=2: the two that are left are enough.
    await produce_values(cluster, "a", [b"after"] * 5, acks="all", exclude=[doomed])
    # Back, it catches up and rejoins.
    cluster.restart(doomed)
    wait_until(
        lambda: all(doomed in state(cluster, t).isr for t in TOPICS),
        30,
        "the restarted follower to rejoin both ISRs",
    )


async def test_with_the_setting_off_the_isr_waits_for_the_session_to_expire(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(overrides=OVERRIDES)  # the default: -1, off
    _, doomed, _ = await leader_with_two_followers(cluster)
    cluster.kill(doomed)
    wait_until(
        lambda: doomed not in state(cluster, "a").isr,
        40,
        "the ISR to shrink after the session expired",
        0.05,
    )
    # Kafka's path: the session expired, the broker's registration is gone, and only then
    # did the controller take it out of the ISR.
    assert doomed not in cluster.zk_client().get_broker_ids()
