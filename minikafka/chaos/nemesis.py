"""The nemesis: which fault, when, on whom, and how it is healed.

A schedule is a pure function of (ops, interval, time limit, seed): the same seed gives the
same sequence of fault kinds and target choices, so a failing run can be replayed. Targets
are chosen when the fault starts from what the cluster looks like then ("the leader of
partition k", "the controller", "broker at index k"), which is what makes faults bite.

Faults alternate with quiet periods of the same length, as Jepsen's nemesis does: start a
fault, wait `interval`, heal it, wait `interval`. Instantaneous faults (a clean restart,
a session expiry) heal themselves; their window is the time the operation took.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

NEMESIS_OPS = (
    "kill",  # kill -9 a partition leader; healed by starting it again
    "pause",  # SIGSTOP a partition leader; healed by SIGCONT
    "partition",  # cut a partition leader off from everything (ZooKeeper included)
    "partition-from-brokers",  # cut it off from the other brokers only (Jepsen 2013)
    "zk-expire",  # expire a partition leader's ZooKeeper session
    "restart",  # clean restart (SIGTERM, controlled shutdown) of a broker
    "controller",  # kill -9 the controller; healed by starting it again
    # kill -9 the consumer group's coordinator (the leader of its __consumer_offsets
    # partition); healed by starting it again. No target in a run without a group.
    "coordinator",
    # Jepsen 2013: cut a leader off from the other brokers (its ISR shrinks to itself and,
    # with min.insync.replicas=1, it acks alone), then halfway from ZooKeeper too, so the
    # controller has to choose a new leader while the old one holds writes no one else has.
    "partition-2013",
    # ZooKeeper session expiry during an ISR change: SIGSTOP a follower of a partition, and
    # the moment its leader's shrink lands in ZooKeeper (before the change has propagated),
    # expire that leader's session; the controller's failover races the leader's own ISR
    # writes on the same state znode. Healed by SIGCONT of the follower.
    "isr-change-zk-expire",
    # AlterPartitionReassignments (KIP-455): move partitions of the topic to another replica
    # set of the same size among the live brokers (reorder it, so the preferred leader
    # changes, or replace replicas); healed when the move has finished, or, if it cannot
    # (a target broker down or cut off), by cancelling it. On its own track: moves overlap
    # the other faults (moves.py).
    "reassign",
)
INSTANT_OPS = frozenset({"zk-expire", "restart"})
# Faults that run on a track of their own, overlapping the others' windows, as an operator's
# reassignment does not wait for the cluster to be healthy.
CONCURRENT_OPS = frozenset({"reassign"})


class FaultableCluster(Protocol):
    """What the nemesis needs from a cluster (LocalCluster has all of it)."""

    @property
    def network(self) -> str: ...  # "loopback", "netns" or "external" (partitions: not loopback)

    @property
    def broker_ids(self) -> list[int]: ...

    def kill(self, broker_id: int) -> None: ...
    def start_broker(
        self, broker_id: int, *, wait: bool = True, timeout: float = 60.0
    ) -> object: ...
    def restart(self, broker_id: int, timeout: float = 60.0) -> object: ...
    def pause(self, broker_id: int) -> None: ...
    def resume(self, broker_id: int) -> None: ...
    def is_alive(self, broker_id: int) -> bool: ...
    def is_paused(self, broker_id: int) -> bool: ...
    def partition_from_brokers(self, broker_id: int) -> None: ...
    def isolate(self, broker_id: int) -> None: ...
    def heal(self, broker_id: int | None = None) -> None: ...
    def expire_session(self, broker_id: int, timeout: float = 10.0) -> int: ...
    def controller(self) -> tuple[int, int] | None: ...


class PartitionView(Protocol):
    """What the nemesis knows of partitions when it picks a target: the latest leader and
    ISR read from ZooKeeper (the chaos StateObserver), and the consumer group's
    coordinator."""

    def leader_of(self, partition: int) -> int | None: ...
    def isr_of(self, partition: int) -> tuple[int, ...]: ...
    def group_coordinator(self) -> int | None: ...  # blocking: read when the fault starts


@dataclass(frozen=True)
class PlannedFault:
    """The k-th fault of a schedule: its kind and the random pick that chooses its target
    (a partition index for leader targets, a broker index for `restart`)."""

    op: str
    pick: int


NETWORK_OPS = frozenset({"partition", "partition-from-brokers", "partition-2013"})


def choose_replicas(
    current: Sequence[int], live: Sequence[int], pick: int
) -> tuple[int, ...] | None:
    """A new replica list for a partition whose replicas are `current`: as many replicas,
    distinct, all on `live` brokers, and not `current` itself; None when there is none
    (fewer live brokers than replicas, or one replica on the only live broker).

    `pick` chooses, reproducibly, among a reorder of the same replicas (when they are all
    live: the preferred leader, the first replica, changes), the replacement of one replica
    by a live broker outside the set, and any ordered choice of live brokers."""
    size = len(current)
    pool = sorted(set(live))
    if size == 0 or len(pool) < size:
        return None
    rng = random.Random(pick)
    same = tuple(current)
    outside = [b for b in pool if b not in same]
    modes = []
    if size > 1 and set(same) <= set(pool):
        modes.append("reorder")
    if outside and set(same) <= set(pool):
        modes.append("replace")
    modes.append("any")
    mode = modes[rng.randrange(len(modes))]
    if mode == "reorder":
        # A rotation never gives the list back, and always changes its first replica.
        shift = 1 + rng.randrange(size - 1)
        return same[shift:] + same[:shift]
    if mode == "replace":
        replaced = list(same)
        replaced[rng.randrange(size)] = outside[rng.randrange(len(outside))]
        return tuple(replaced)
    target = tuple(rng.sample(pool, size))
    if target != same:
        return target
    if size > 1:
        return target[1:] + target[:1]  # a rotation of distinct brokers differs from itself
    others = [b for b in pool if b != target[0]]
    return (others[rng.randrange(len(others))],) if others else None


def choose_moves(
    assignment: Mapping[int, Sequence[int]], live: Sequence[int], pick: int
) -> dict[int, tuple[int, ...]]:
    """Which partitions of `assignment` (partition -> replicas) move, and where: one or
    more, chosen by `pick`, each to `choose_replicas`' new list (partitions with none are
    left out, so the answer may be empty)."""
    rng = random.Random(pick)
    partitions = sorted(assignment)
    if not partitions:
        return {}
    count = 1 + rng.randrange(len(partitions))
    moves: dict[int, tuple[int, ...]] = {}
    for p in sorted(rng.sample(partitions, count)):
        target = choose_replicas(assignment[p], live, rng.randrange(1 << 30))
        if target is not None:
            moves[p] = target
    return moves


def plan(ops: Sequence[str], count: int, seed: int) -> list[PlannedFault]:
    """`count` faults drawn from `ops` with a seeded generator: reproducible by seed."""
    unknown = [op for op in ops if op not in NEMESIS_OPS]
    if unknown or not ops:
        raise ValueError(
            f"unknown nemesis {', '.join(unknown) or '(none)'}; "
            f"choose from {', '.join(NEMESIS_OPS)}"
        )
    rng = random.Random(seed)
    return [PlannedFault(rng.choice(list(ops)), rng.randrange(1 << 30)) for _ in range(count)]


@dataclass
class ActiveFault:
    op: str
    target: int
    heal: Callable[[], None]
    midway: Callable[[], None] | None = None  # the second step, halfway through the fault


def start_fault(
    cluster: FaultableCluster,
    fault: PlannedFault,
    view: PartitionView,
    partitions: int,
    isr_change_timeout_s: float = 30.0,
) -> ActiveFault | None:
    """Inject `fault`; returns how to heal it, or None if it had no target right now (no
    leader, no controller) and was skipped. Blocking: call it off the event loop."""
    op = fault.op
    if op in CONCURRENT_OPS:
        raise ValueError(f"{op} runs on its own track (chaos/moves.py), not through start_fault")
    if op == "controller":
        current = cluster.controller()
        if current is None:
            return None
        target = current[0]
    elif op == "coordinator":
        coordinator = view.group_coordinator()
        if coordinator is None:
            return None
        target = coordinator
    elif op == "restart":
        brokers = cluster.broker_ids
        target = brokers[fault.pick % len(brokers)]
    else:
        leader = view.leader_of(fault.pick % partitions)
        if leader is None or leader < 0:
            return None
        target = leader
    if op in ("kill", "controller", "coordinator"):
        cluster.kill(target)
        return ActiveFault(op, target, lambda: _start_if_dead(cluster, target))
    if op == "pause":
        cluster.pause(target)
        return ActiveFault(op, target, lambda: cluster.resume(target))
    if op == "partition":
        cluster.isolate(target)
        return ActiveFault(op, target, lambda: cluster.heal(target))
    if op == "partition-from-brokers":
        cluster.partition_from_brokers(target)
        return ActiveFault(op, target, lambda: cluster.heal(target))
    if op == "partition-2013":
        cluster.partition_from_brokers(target)
        return ActiveFault(
            op, target, lambda: cluster.heal(target), midway=lambda: cluster.isolate(target)
        )
    if op == "isr-change-zk-expire":
        return _isr_change_zk_expire(
            cluster, view, fault, fault.pick % partitions, target, isr_change_timeout_s
        )
    if op == "zk-expire":
        cluster.expire_session(target)
        return ActiveFault(op, target, lambda: None)
    assert op == "restart"
    cluster.restart(target)
    return ActiveFault(op, target, lambda: None)


def _isr_change_zk_expire(
    cluster: FaultableCluster,
    view: PartitionView,
    fault: PlannedFault,
    partition: int,
    leader: int,
    timeout_s: float,
) -> ActiveFault | None:
    followers = sorted(b for b in view.isr_of(partition) if b != leader)
    # Not the controller: a paused controller could not react to the session expiry.
    controller = cluster.controller()
    if controller is not None and len(followers) > 1:
        followers = [b for b in followers if b != controller[0]]
    if not followers:
        return None  # the ISR is already the leader alone: no shrink to race with
    follower = followers[(fault.pick >> 8) % len(followers)]
    cluster.pause(follower)
    try:
        # The leader shrinks the ISR once the follower is behind for replica.lag.time.max.ms
        # (it must have something to fetch: the workload keeps writing).
        deadline = time.monotonic() + timeout_s
        while follower in view.isr_of(partition) and time.monotonic() < deadline:
            time.sleep(0.02)
        if follower in view.isr_of(partition):
            raise TimeoutError(
                f"isr-change-zk-expire: broker {follower} still in the ISR of partition "
                f"{partition} after {timeout_s:.0f} s"
            )
        cluster.expire_session(leader)
    except BaseException:
        cluster.resume(follower)
        raise
    # The window's target is the leader whose session went; the follower resumes at heal.
    return ActiveFault(fault.op, leader, lambda: cluster.resume(follower))


def _start_if_dead(cluster: FaultableCluster, broker_id: int) -> None:
    if not cluster.is_alive(broker_id):
        cluster.start_broker(broker_id)


def heal_everything(cluster: FaultableCluster) -> None:
    """After the run: every broker running, none paused, no network fault left."""
    if cluster.network != "loopback":
        cluster.heal(None)
    for b in cluster.broker_ids:
        if cluster.is_alive(b) and cluster.is_paused(b):
            cluster.resume(b)
        if not cluster.is_alive(b):
            cluster.start_broker(b)
