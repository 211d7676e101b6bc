"""One chaos run: workload + nemesis, then heal, drain, check, report.
`minikafka chaos` is the command-line face of `run_chaos`.

The cluster is a LocalCluster (`minikafka cluster up`), or a CommandCluster: any running
cluster, faulted by a nemesis command (the docker-compose one with scripts/docker-fault.sh).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from minikafka.chaos.checker import CheckResult, check
from minikafka.chaos.command_cluster import COMMAND_NEMESIS_OPS, CommandCluster
from minikafka.chaos.history import (
    ConsumerRead,
    DrainedPartition,
    FaultWindow,
    History,
    ProducerMode,
    ReplicaLog,
    to_json,
)
from minikafka.chaos.moves import ReassignNemesis, move_window
from minikafka.chaos.nemesis import (
    CONCURRENT_OPS,
    INSTANT_OPS,
    NEMESIS_OPS,
    NETWORK_OPS,
    ActiveFault,
    PlannedFault,
    heal_everything,
    plan,
    start_fault,
)
from minikafka.chaos.workload import (
    QUIET,
    GroupWorkload,
    StateObserver,
    Workload,
    consumer_config,
    decode_value,
)
from minikafka.client.replicas import ReplicaClient
from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition
from minikafka.storage.log_files import read_records

# What chaos runs against: a cluster it runs itself, or one it reaches from outside.
ChaosCluster = LocalCluster | CommandCluster
# (broker id, partition, end offset) -> offset -> value of the records of that replica.
ReplicaReader = Callable[[int, TopicPartition, int], Awaitable[dict[int, bytes | None]]]


@dataclass
class ChaosOptions:
    topic: str = "chaos"
    partitions: int = 3
    replication_factor: int = 3
    min_insync_replicas: int = 2
    unclean_leader_election: bool = False
    producers: int = 3
    rate: float = 100.0  # per producer, sends per second
    # plain: one try per record, duplicates counted; idempotent: Kafka's idempotent
    # producer, a duplicate fails the run (workload and checker docstrings).
    producer: ProducerMode = ProducerMode.PLAIN
    nemesis: tuple[str, ...] = ("kill", "pause")
    interval_s: float = 10.0
    time_limit_s: float = 60.0
    # Instead of the time limit: this many faults of the schedule, however long they take
    # (a long soak bounded by what it did rather than by the clock).
    faults: int | None = None
    seed: int = 0
    recovery_timeout_s: float = 90.0
    topic_configs: dict[str, str] = field(default_factory=dict)
    # Members of the consumer group chaos-<topic> (0: no group workload).
    group_members: int = 2
    # How long the group may take, once writes stop, to commit up to the final HWs.
    group_catch_up_s: float = 60.0
    # Test-only negative control: member 0 drops every n-th record unrecorded and commits
    # past it, so the checker must report group losses (0: every member is honest).
    group_drop_every: int = 0
    # Members commit asynchronously, every GROUP_ASYNC_COMMIT_EVERY records, and the
    # group's committed offsets are read back meanwhile (the checker's commit order).
    group_async_commits: bool = False


# Often enough that a member has several commits in flight after one poll's batch.
GROUP_ASYNC_COMMIT_EVERY = 5


@dataclass
class ChaosReport:
    history: History
    result: CheckResult
    recovered: bool  # every replica back in every ISR before the drain


async def run_chaos(cluster: ChaosCluster, opts: ChaosOptions, log: Any = print) -> ChaosReport:
    _check_nemesis(cluster, opts)
    t0 = time.monotonic()

    def clock() -> float:
        return round(time.monotonic() - t0, 6)

    history = History(opts.topic, meta=_meta(cluster, opts), producer=opts.producer)
    log(
        f"chaos on topic {opts.topic} ({opts.partitions} partitions, RF "
        f"{opts.replication_factor}): {opts.producers} {opts.producer} producers at "
        f"{opts.rate:g}/s each"
        + (f", a group of {opts.group_members}" if opts.group_members > 0 else "")
        + f"; nemesis {', '.join(opts.nemesis)} every {opts.interval_s:g} s for "
        + (
            f"{opts.faults} fault{'' if opts.faults == 1 else 's'}"
            if opts.faults is not None
            else f"{opts.time_limit_s:g} s"
        )
        + f" (seed {opts.seed})"
    )
    await _create_topic(cluster, opts)
    zk = cluster.zk_client()
    stop_observing = asyncio.Event()
    group = (
        GroupWorkload(
            cluster.bootstrap_servers,
            opts.topic,
            history,
            clock,
            members=opts.group_members,
            drop_every=opts.group_drop_every,
            asynchronous_commits=opts.group_async_commits,
            partitions=opts.partitions,
            commit_every=GROUP_ASYNC_COMMIT_EVERY if opts.group_async_commits else 20,
        )
        if opts.group_members > 0
        else None
    )
    observer = StateObserver(zk, opts.topic, opts.partitions, history, clock, group=history.group)
    await asyncio.to_thread(observer.poll_once)
    observing = asyncio.create_task(observer.run(stop_observing))
    workload = Workload(
        cluster.bootstrap_servers,
        opts.topic,
        opts.partitions,
        history,
        clock,
        producers=opts.producers,
        rate_per_producer=opts.rate,
        producer_mode=opts.producer,
    )
    tasks = [asyncio.create_task(workload.run_producer(i)) for i in range(opts.producers)]
    tasks.append(asyncio.create_task(workload.run_consumer()))
    grouping = asyncio.create_task(group.run()) if group is not None else None
    history.start = clock()
    log(f"writing; the first fault comes in {opts.interval_s:g} s")

    periods = (
        opts.faults
        if opts.faults is not None
        else max(1, int(opts.time_limit_s // (2 * opts.interval_s)))
    )
    # The others' schedule is what it would be without the concurrent faults (same seed,
    # same schedule); those draw theirs from the seed too, apart.
    others = tuple(op for op in opts.nemesis if op not in CONCURRENT_OPS)
    schedule = plan(others or opts.nemesis, periods, opts.seed)
    movers = None
    if "reassign" in opts.nemesis:
        movers = ReassignNemesis(
            cluster.bootstrap_servers,
            zk,
            opts.topic,
            opts.partitions,
            history,
            clock,
            request_timeout_s=max(2.0, opts.interval_s),
        )
    try:
        tracks = [_nemesis(cluster, opts, schedule, history, observer, clock, t0, log, movers)]
        if movers is not None and others:
            moves = plan(("reassign",), periods, opts.seed + 1)
            tracks.append(_move_track(movers, opts, moves, history, clock, t0, log))
        await _all_or_none(tracks)
    except BaseException:
        if movers is not None:
            with contextlib.suppress(Exception):
                await movers.close()
        # Leave nothing down or frozen behind (a paused container would stay paused).
        with contextlib.suppress(Exception):
            await asyncio.to_thread(heal_everything, cluster)
        if group is not None and grouping is not None:
            group.stop()  # its members leave the group
            with contextlib.suppress(Exception):
                await grouping
        raise

    # Heal, let the cluster recover, then stop writing and read everything back.
    await asyncio.to_thread(heal_everything, cluster)
    if movers is not None:
        # Moves the heals left unresolved (no controller to cancel them) finish now that
        # every broker is back; the ISRs are checked against the replication factor next.
        moved = await movers.finish_moves(opts.recovery_timeout_s)
        await movers.close()
        if not moved:
            log("partition moves still in progress after the recovery timeout")
    recovered = await _wait_for_full_isrs(cluster, opts, observer)
    log(f"healed; {'every replica in sync' if recovered else 'NOT fully recovered'}")
    await asyncio.sleep(2.0)  # writes after recovery show availability came back
    history.end = clock()
    workload.stop()
    await asyncio.gather(*tasks, return_exceptions=True)
    stop_observing.set()
    await observing
    await asyncio.to_thread(observer.poll_once)
    # The group keeps consuming while the drain reads the final log.
    await _drain(cluster, opts, history, clock)
    if group is not None and grouping is not None:
        await _finish_group(group, grouping, opts, history, observer, log)
    await _collect_replica_logs(cluster, opts, history)
    history.meta["consumer_resets"] = workload.consumer_resets
    history.meta["producer_fatal_errors"] = workload.fatal_errors
    history.meta["recovered"] = recovered
    result = check(history)
    return ChaosReport(history, result, recovered)


async def _finish_group(
    group: GroupWorkload,
    grouping: asyncio.Task[None],
    opts: ChaosOptions,
    history: History,
    observer: StateObserver,
    log: Any,
) -> None:
    """Once writes have stopped and the drain has read the final log: let the group
    commit up to where the drain ended (its final HWs; a partition the drain found empty
    needs nothing), then stop it; its members commit and leave the group."""
    targets = {
        d.partition: d.end_offset
        for d in history.drained
        if d.consumer is not None and d.end_offset > d.start_offset
    }
    if grouping.done():
        await grouping  # a member failed: fail the run now rather than wait for nothing
    caught_up = await group.finish(targets, opts.group_catch_up_s)
    await grouping  # a member that failed fails the run
    log(
        f"group {group.group}: "
        + ("caught up with the final log" if caught_up else "did NOT catch up in time")
    )
    history.meta["group"] = {
        "id": group.group,
        "members": group.members,
        "caught_up": caught_up,
        "targets": {str(p): o for p, o in sorted(targets.items())},
        "errors": dict(sorted(group.errors.items())),
        "coordinators": [list(c) for c in observer.coordinators],
    }


def _check_nemesis(cluster: ChaosCluster, opts: ChaosOptions) -> None:
    """Refuse, before anything starts, faults this cluster (or this run) cannot do."""
    ops = opts.nemesis
    if "coordinator" in ops and opts.group_members <= 0:
        raise ValueError(
            "nemesis coordinator kills the consumer group's coordinator: it needs group members"
        )
    if isinstance(cluster, CommandCluster):
        # Unknown ops are left to plan(), which lists the known ones. The concurrent ones
        # (reassign) need no command: only Kafka's protocol and ZooKeeper.
        unsupported = [
            op
            for op in ops
            if op in NEMESIS_OPS and op not in COMMAND_NEMESIS_OPS and op not in CONCURRENT_OPS
        ]
        if unsupported:
            raise ValueError(
                f"nemesis {','.join(unsupported)} cannot be done with a nemesis command, which "
                f"kills, pauses, restarts and cuts off brokers ({','.join(COMMAND_NEMESIS_OPS)}); "
                "ZooKeeper session expiry needs a local cluster (`minikafka cluster up`)"
            )
    elif any(op in NETWORK_OPS for op in ops) and cluster.network != "netns":
        raise ValueError("network partitions need a cluster started with --network netns (as root)")


def _meta(cluster: ChaosCluster, opts: ChaosOptions) -> dict[str, Any]:
    return {
        "brokers": cluster.broker_ids,
        "network": cluster.network,
        "options": {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(opts).items()},
    }


async def _create_topic(cluster: ChaosCluster, opts: ChaosOptions) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.cimpl import NewTopic

    from minikafka.client.librdkafka import client_config, new_admin

    configs = {
        "min.insync.replicas": str(opts.min_insync_replicas),
        "unclean.leader.election.enable": str(opts.unclean_leader_election).lower(),
        **opts.topic_configs,
    }
    admin = new_admin(client_config(cluster.bootstrap_servers, QUIET))
    new = NewTopic(opts.topic, opts.partitions, opts.replication_factor, config=configs)
    future = admin.create_topics([new], operation_timeout=60)[opts.topic]
    try:
        await asyncio.wrap_future(future)
    except KafkaException as e:
        err = e.args[0]
        if err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
            raise ValueError(f"topic {opts.topic} exists; chaos runs need a fresh topic") from e
        raise ValueError(f"creating topic {opts.topic}: {err.str()}") from e


async def _nemesis(
    cluster: ChaosCluster,
    opts: ChaosOptions,
    schedule: list[PlannedFault],
    history: History,
    observer: StateObserver,
    clock: Any,
    t0: float,
    log: Any,
    movers: ReassignNemesis | None = None,
) -> None:
    deadline = _deadline(opts, t0)

    for fault in schedule:
        await _sleep_until(min(time.monotonic() + opts.interval_s, deadline))
        if time.monotonic() >= deadline:
            break
        if fault.op in CONCURRENT_OPS:
            assert movers is not None  # reassign alone: on this track
            await _move(movers, opts, fault, history, clock, deadline, log)
            continue
        start = clock()
        active: ActiveFault | None = await asyncio.to_thread(
            start_fault, cluster, fault, observer, opts.partitions
        )
        if active is None:
            log(f"{start:7.1f}s {fault.op}: no target now, skipped")
            continue
        log(f"{start:7.1f}s {fault.op} broker {active.target}")
        if fault.op not in INSTANT_OPS:
            until = min(time.monotonic() + opts.interval_s, deadline)
            if active.midway is not None:
                await _sleep_until(time.monotonic() + (until - time.monotonic()) / 2)
                await asyncio.to_thread(active.midway)
                log(f"{clock():7.1f}s {fault.op}: second step on broker {active.target}")
            await _sleep_until(until)
            await asyncio.to_thread(active.heal)
        end = clock()
        log(f"{end:7.1f}s healed {fault.op} of broker {active.target}")
        history.faults.append(FaultWindow(fault.op, str(active.target), start, end))
    # Bounded by faults: a last quiet interval, as a time limit would leave after the last.
    await _sleep_until(deadline if math.isfinite(deadline) else time.monotonic() + opts.interval_s)


def _deadline(opts: ChaosOptions, t0: float) -> float:
    """When the nemesis stops: the time limit, or never before the schedule's `faults`
    are done."""
    return float("inf") if opts.faults is not None else t0 + opts.time_limit_s


async def _all_or_none(coros: list[Coroutine[Any, Any, None]]) -> None:
    """Run the tracks together; if one fails, stop the others before raising its error
    (as it is, not in an ExceptionGroup: the command reports it)."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _move_track(
    movers: ReassignNemesis,
    opts: ChaosOptions,
    schedule: list[PlannedFault],
    history: History,
    clock: Any,
    t0: float,
    log: Any,
) -> None:
    """The reassign faults beside the others: the k-th starts at a seeded point of the
    k-th period's middle (nominally between half an interval before the others' k-th fault
    starts and half an interval before it is healed; their heals can make them late), so
    that a move runs into a kill, a pause or a cut, and its heal often comes while that
    fault still holds."""
    deadline = _deadline(opts, t0)
    for k, fault in enumerate(schedule):
        offset = 0.5 + (fault.pick % 1000) / 1000
        await _sleep_until(t0 + (2 * k + offset) * opts.interval_s)
        if time.monotonic() >= deadline:
            break
        await _move(movers, opts, fault, history, clock, deadline, log)


async def _move(
    movers: ReassignNemesis,
    opts: ChaosOptions,
    fault: PlannedFault,
    history: History,
    clock: Any,
    deadline: float,
    log: Any,
) -> None:
    """One reassign fault: the moves, `interval` for them to run, then the heal (wait for
    them, at most half an interval, else cancel)."""
    active, what = await movers.start(fault.pick)
    log(f"{clock():7.1f}s reassign: {what}")
    if active is None:
        return
    await _sleep_until(min(time.monotonic() + opts.interval_s, deadline))
    outcome = await movers.heal(active, opts.interval_s / 2)
    end = clock()
    log(f"{end:7.1f}s healed reassign: {outcome}")
    history.faults.append(move_window(active, end))


async def _sleep_until(when: float) -> None:
    delay = when - time.monotonic()
    if delay > 0:
        await asyncio.sleep(delay)


async def _wait_for_full_isrs(
    cluster: ChaosCluster, opts: ChaosOptions, observer: StateObserver
) -> bool:
    await asyncio.to_thread(
        cluster.wait_for_registered, cluster.broker_ids, opts.recovery_timeout_s
    )
    tps = [TopicPartition(opts.topic, p) for p in range(opts.partitions)]
    deadline = time.monotonic() + opts.recovery_timeout_s
    zk = cluster.zk_client()
    while time.monotonic() < deadline:
        states = await asyncio.to_thread(zk.get_partition_states, tps)
        if len(states) == len(tps) and all(
            len(st.isr) == opts.replication_factor and st.leader >= 0 for st in states.values()
        ):
            return True
        await asyncio.sleep(0.2)
    return False


async def _drain(cluster: ChaosCluster, opts: ChaosOptions, history: History, clock: Any) -> None:
    """A fresh consumer reads every partition from its log start to its HW."""
    from confluent_kafka import OFFSET_BEGINNING
    from confluent_kafka import TopicPartition as RdTopicPartition

    from minikafka.client.librdkafka import consume_ready, new_consumer, position, watermarks

    drain_consumer = 1_000_000  # its own read sequence, apart from the live consumer's
    consumer = new_consumer(consumer_config(cluster.bootstrap_servers, "earliest"))
    try:
        tps = [RdTopicPartition(opts.topic, p) for p in range(opts.partitions)]
        # Asked again while the leaders settle after the last fault (NOT_LEADER_OR_FOLLOWER
        # from a broker that just lost the partition).
        marks = {
            tp.partition: await asyncio.to_thread(watermarks, consumer, tp.topic, tp.partition, 60)
            for tp in tps
        }
        starts = {p: low for p, (low, _) in marks.items()}
        ends = {p: high for p, (_, high) in marks.items()}
        consumer.assign([RdTopicPartition(opts.topic, p, OFFSET_BEGINNING) for p in marks])
        deadline = time.monotonic() + 120
        reached = dict(starts)
        while time.monotonic() < deadline and any(reached[p] < ends[p] for p in marks):
            batch = await asyncio.to_thread(consume_ready, consumer, 1000, 0.5)
            now = clock()
            for msg in batch:
                if msg.error() is not None:
                    continue  # librdkafka retries; what was not read does not count
                p, offset = position(msg)
                history.reads.append(
                    ConsumerRead(now, p, offset, decode_value(msg.value()), drain_consumer)
                )
                reached[p] = max(reached[p], offset + 1)
        for p in sorted(marks):
            # Only what was really read through counts as drained (the checker relies on it).
            end = min(reached[p], ends[p])
            history.drained.append(DrainedPartition(p, starts[p], end, clock(), drain_consumer))
    finally:
        await asyncio.to_thread(consumer.close)


async def _collect_replica_logs(
    cluster: ChaosCluster, opts: ChaosOptions, history: History
) -> None:
    """Every replica's records below what it knows to be committed: min(leader HW, its LEO)."""
    async with ReplicaClient(cluster.bootstrap_servers, admin_token=cluster.admin_token()) as views:
        described = await views.describe_replicas([opts.topic], timeout_ms=30_000)
        source, read = _replica_reader(cluster, views)
        history.meta["replica_logs_from"] = source
        for pr in described:
            if pr.error is not None:
                history.meta.setdefault("replicas_unread", []).append(
                    f"partition {pr.partition}: {pr.error}"
                )
                continue
            for rep in pr.replicas:
                if rep.log_end_offset < 0:
                    continue
                hw = min(pr.high_watermark, rep.log_end_offset)
                records = await read(rep.broker_id, pr.tp, hw)
                history.replica_logs.append(
                    ReplicaLog(
                        rep.broker_id,
                        pr.partition,
                        hw,
                        {o: decode_value(v) for o, v in records.items()},
                    )
                )


def _replica_reader(cluster: ChaosCluster, views: ReplicaClient) -> tuple[str, ReplicaReader]:
    """Where replicas are read back from, and how. A local cluster's segment files: the
    stronger check, the bytes on disk as recovery would read them, not what a broker
    chooses to serve. Other clusters' brokers over the wire: Kafka's Fetch as the debugging
    consumer (replica id -2), which a follower answers too, up to the same offset."""
    if isinstance(cluster, LocalCluster):
        log_dir = cluster.log_dir

        async def from_files(
            broker_id: int, tp: TopicPartition, end: int
        ) -> dict[int, bytes | None]:
            return await asyncio.to_thread(read_records, log_dir(broker_id), tp, end)

        return "files", from_files

    async def by_fetch(broker_id: int, tp: TopicPartition, end: int) -> dict[int, bytes | None]:
        return await views.fetch_replica_records(broker_id, tp, end, timeout_ms=30_000)

    return "fetch", by_fetch


def write_report(report: ChaosReport, out_dir: Path) -> dict[str, Path]:
    """report.json (result + history) and timeline.png; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / "report.json", "plot": out_dir / "timeline.png"}
    data = to_json({"result": report.result, "history": report.history})
    paths["json"].write_text(json.dumps(data, indent=1) + "\n")
    from minikafka.chaos.plot import plot_timeline

    plot_timeline(report.history, paths["plot"])
    return paths
