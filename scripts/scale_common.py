"""What bench_scale.py and bench_cluster.py --scale share: many partitions over many
topics created on a LocalCluster and waited for in every broker's own Metadata response,
and the brokers' processes read from /proc.

A script's own directory is the first entry of sys.path when Python runs it: the scripts
import this module by its name.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka.cimpl import NewTopic

from minikafka.client.kafka_wire import KafkaConnection, metadata_request
from minikafka.client.librdkafka import client_config, new_admin
from minikafka.cluster import LocalCluster

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        # The command name may hold spaces: fields start after its closing parenthesis.
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def memory_kb(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    return out


def topic_sizes(partitions: int, topics: int) -> dict[str, int]:
    """`topics` topics sharing `partitions` partitions as evenly as possible."""
    if topics == 1:
        return {"scale": partitions}
    base, extra = divmod(partitions, topics)
    return {f"scale-{i:05d}": base + (1 if i < extra else 0) for i in range(topics)}


@dataclass
class BrokerView:
    """What one broker's metadata says about the new partitions."""

    led_full_isr: int = 0
    done_after_s: float | None = None
    polls: int = 0
    errors: list[str] = field(default_factory=list)


async def count_ready(
    conn: KafkaConnection, sizes: dict[str, int], rf: int, timeout_s: float
) -> int:
    resp = await conn.call(metadata_request(sorted(sizes)), timeout_s=timeout_s)
    ready = 0
    for t in resp.topics:
        if t.name not in sizes or t.error_code != 0:
            continue
        for p in t.partitions:
            if p.error_code == 0 and p.leader_id >= 0 and len(p.isr_nodes) >= rf:
                ready += 1
    return ready


async def watch_broker(
    cluster: LocalCluster,
    broker_id: int,
    sizes: dict[str, int],
    rf: int,
    started: float,
    deadline: float,
    view: BrokerView,
    interval_s: float,
) -> None:
    total = sum(sizes.values())
    host, port = cluster.broker_address(broker_id)
    # Connects on the first request, and again on the next one after a failure.
    conn = KafkaConnection(host, port, client_id="bench-scale")
    try:
        while time.monotonic() < deadline:
            try:
                view.led_full_isr = await count_ready(conn, sizes, rf, 60.0)
                view.polls += 1
            except Exception as e:  # a busy broker may time out: just ask again
                view.errors.append(f"{type(e).__name__}: {e}")
                await conn.close()
            if view.led_full_isr >= total:
                view.done_after_s = time.monotonic() - started
                return
            await asyncio.sleep(interval_s)
    finally:
        await conn.close()


async def create_and_wait(
    cluster: LocalCluster,
    sizes: dict[str, int],
    rf: int,
    timeout_s: float,
    topics_per_request: int,
    poll_interval_s: float,
) -> dict[str, Any]:
    started = time.monotonic()
    deadline = started + timeout_s
    views = {b: BrokerView() for b in cluster.broker_ids}
    names = sorted(sizes)
    # librdkafka gives up on a request after socket.timeout.ms (60 s by default, 300 s at
    # most), whatever the operation's own timeout says.
    socket_timeout_ms = int(min(timeout_s + 30, 300) * 1000)
    admin = new_admin(
        client_config(cluster.bootstrap_servers, {"socket.timeout.ms": socket_timeout_ms})
    )
    for i in range(0, len(names), topics_per_request):
        chunk = names[i : i + topics_per_request]
        # Answered once the controller's own metadata has a leader for every partition
        # (Kafka's DelayedCreatePartitions); the watchers measure every broker.
        futures = admin.create_topics(
            [NewTopic(n, sizes[n], rf) for n in chunk],
            operation_timeout=timeout_s,
            request_timeout=timeout_s + 30,
        )
        await asyncio.gather(*(asyncio.wrap_future(f) for f in futures.values()))
    requests_done = time.monotonic() - started
    # Polled from now on only: a Metadata response of 10,000 partitions costs each broker
    # some CPU, which would slow down the creation it measures.
    await asyncio.gather(
        *(
            watch_broker(cluster, b, sizes, rf, started, deadline, views[b], poll_interval_s)
            for b in cluster.broker_ids
        )
    )
    done = [v.done_after_s for v in views.values()]
    return {
        "create_requests_returned_s": requests_done,
        "all_led_full_isr_on_every_broker_s": None if None in done else max(done),  # type: ignore[type-var]
        "per_broker": {
            b: {
                "led_full_isr_after_s": v.done_after_s,
                "partitions_seen_ready": v.led_full_isr,
                "metadata_polls": v.polls,
                "poll_errors": v.errors[:5],
            }
            for b, v in views.items()
        },
    }


def process_pids(cluster: LocalCluster) -> dict[str, int]:
    pids: dict[str, int] = {}
    for b in cluster.broker_ids:
        pid = cluster.pid(b)
        if pid is not None:
            pids[f"broker {b}"] = pid
    zk_pid = cluster.zookeeper.pid
    if zk_pid is not None:
        pids["zookeeper"] = zk_pid
    return pids


# The partitions wanted of each topic (None: all of them).
Wanted = Mapping[str, Collection[int] | None]


@dataclass
class Watch:
    """How long one broker's metadata took to satisfy a condition."""

    done_after_s: float | None = None
    pending: int | None = None  # partitions not satisfying it at the last answer
    polls: int = 0
    errors: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        return {
            "after_s": self.done_after_s,
            "pending_at_last_poll": self.pending,
            "metadata_polls": self.polls,
            "poll_errors": self.errors[:5],
        }


async def watch_metadata(
    cluster: LocalCluster,
    broker_id: int,
    wanted: Wanted,
    ok: Callable[[Any], bool],
    started: float,
    deadline: float,
    interval_s: float,
) -> Watch:
    """Poll `broker_id` with Metadata requests until `ok` holds for each wanted partition
    (a partition of the response, which must exist and carry no error), and say when, in
    seconds since `started`. Each poll asks only about the topics not yet seen done: a
    response of 100,000 partitions costs the broker what the measure is about. For the same
    reason the pause between two polls is at least twice the last response's time: the
    watch takes at most a third of the broker's time (at 30,000 partitions, polls every
    `interval_s` regardless took most of it, and slowed what they measured)."""
    view = Watch()
    pending = {t: None if ps is None else set(ps) for t, ps in wanted.items()}
    conn = KafkaConnection(*cluster.broker_address(broker_id), client_id="bench-scale")
    try:
        while pending and time.monotonic() < deadline:
            asked = time.monotonic()
            try:
                resp = await conn.call(metadata_request(sorted(pending)), timeout_s=60.0)
                view.polls += 1
                pause = max(interval_s, 2 * (time.monotonic() - asked))
            except Exception as e:  # a busy broker may time out: just ask again
                view.errors.append(f"{type(e).__name__}: {e}")
                await conn.close()
                await asyncio.sleep(interval_s)
                continue
            answered = {t.name: t for t in resp.topics if t.error_code == 0}
            left = 0
            for name, want in list(pending.items()):
                t = answered.get(name)
                if t is None:  # not there yet: counted whole
                    left += 1 if want is None else len(want)
                    continue
                seen = {p.partition_index for p in t.partitions}
                bad = sum(
                    1
                    for p in t.partitions
                    if (want is None or p.partition_index in want)
                    and not (p.error_code == 0 and ok(p))
                )
                bad += 0 if want is None else len(want - seen)
                if bad == 0 and seen:
                    del pending[name]
                left += bad
            view.pending = left
            if not pending:
                view.done_after_s = time.monotonic() - started
                break
            await asyncio.sleep(pause)
    finally:
        await conn.close()
    return view


async def watch_everywhere(
    cluster: LocalCluster,
    broker_ids: Iterable[int],
    wanted: Wanted,
    ok: Callable[[Any], bool],
    started: float,
    timeout_s: float,
    interval_s: float,
) -> dict[int, Watch]:
    """`watch_metadata` on each of `broker_ids` at once."""
    ids = list(broker_ids)
    deadline = time.monotonic() + timeout_s
    views = await asyncio.gather(
        *(watch_metadata(cluster, b, wanted, ok, started, deadline, interval_s) for b in ids)
    )
    return dict(zip(ids, views, strict=True))


def all_done(views: Mapping[int, Watch]) -> float | None:
    """When the last of the brokers got there (None if one did not)."""
    done = [v.done_after_s for v in views.values()]
    return None if any(d is None for d in done) else max(d for d in done if d is not None)


async def partition_leaders(
    cluster: LocalCluster, broker_id: int, topics: Iterable[str]
) -> dict[tuple[str, int], tuple[int, list[int]]]:
    """(leader, replicas) of each partition of `topics` in `broker_id`'s metadata."""
    conn = KafkaConnection(*cluster.broker_address(broker_id), client_id="bench-scale")
    try:
        resp = await conn.call(metadata_request(sorted(topics)), timeout_s=120.0)
    finally:
        await conn.close()
    return {
        (t.name, p.partition_index): (p.leader_id, list(p.replica_nodes))
        for t in resp.topics
        for p in t.partitions
    }
