"""The cluster as the dashboard shows it, assembled by whichever broker serves the page.

Three sources, each possibly incomplete:
- ZooKeeper: which brokers are registered (and their epochs), the controller and its
  epoch. Unreachable ZooKeeper leaves these unknown.
- this broker's metadata cache (the controller's UpdateMetadata): every partition's leader,
  leader epoch, replicas and ISR, and the live brokers.
- each broker's own view (`/v1/local` of its admin endpoint): the partitions it leads, with
  HW, LEO and each replica's LEO and last-caught-up age, the numbers the ISR rule uses. A
  leader's ISR is fresher than the cache's (the cache learns of ISR changes only after
  they propagate), so a partition whose leader answered is shown from the leader.

Pure code: the adapter (dashboard.py) gathers the inputs with short timeouts; a broker
that did not answer is marked so here rather than waited for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from minikafka.common import NO_LEADER
from minikafka.protocol.messages import BrokerNode, UpdateMetadataPartitionState

# Partition status, worst first (the table's sort order).
OFFLINE = "offline"
UNDER_MIN_ISR = "under_min_isr"
UNDER_REPLICATED = "under_replicated"
OK = "ok"
STATUS_RANK = {OFFLINE: 0, UNDER_MIN_ISR: 1, UNDER_REPLICATED: 2, OK: 3}

# Broker status.
ALIVE = "alive"  # registered and answering
UNREACHABLE = "unreachable"  # registered, but its admin endpoint did not answer in time
DOWN = "down"  # not registered in ZooKeeper and not live in the metadata


@dataclass(frozen=True)
class Registration:
    """A broker's `/brokers/ids/<id>` as the dashboard needs it."""

    broker_id: int
    epoch: int
    endpoints: tuple[str, ...]
    admin_url: str | None


@dataclass(frozen=True)
class ZkView:
    registered: Mapping[int, Registration] | None  # None: ZooKeeper did not answer
    controller_id: int | None
    controller_epoch: int | None
    error: str | None = None


@dataclass(frozen=True)
class PeerAnswer:
    """A broker's `/v1/local`: its `broker` facts and the partitions it leads."""

    broker: Mapping[str, Any]
    leaders: list[Mapping[str, Any]]


@dataclass(frozen=True)
class PeerFailure:
    error: str


@dataclass(frozen=True)
class MetadataView:
    controller_id: int
    controller_epoch: int
    live_brokers: Mapping[int, BrokerNode]
    partitions: Iterable[UpdateMetadataPartitionState]


@dataclass
class ClusterView:
    served_by: int
    time_ms: int
    zookeeper: dict[str, Any]
    controller: dict[str, Any]
    brokers: list[dict[str, Any]]
    partitions: list[dict[str, Any]]  # every partition, worst first
    summary: dict[str, Any] = field(default_factory=dict)

    def header(self) -> dict[str, Any]:
        """Everything but the partition rows (`/v1/cluster`)."""
        return {
            "served_by": self.served_by,
            "time_ms": self.time_ms,
            "zookeeper": self.zookeeper,
            "controller": self.controller,
            "brokers": self.brokers,
            "summary": self.summary,
        }

    def topics(self) -> list[str]:
        return sorted({p["topic"] for p in self.partitions})

    def select(self, topic: str | None, limit: int | None) -> dict[str, Any]:
        """Rows of one topic (or all), worst first, at most `limit` of them."""
        rows = (
            self.partitions
            if topic is None
            else [p for p in self.partitions if p["topic"] == topic]
        )
        return {
            "topic": topic,
            "total": len(rows),
            "partitions": rows if limit is None else rows[:limit],
        }


def partition_status(
    leader: int, live: Iterable[int], isr: list[int], replicas: list[int], min_isr: int | None
) -> str:
    if leader == NO_LEADER or leader not in set(live):
        return OFFLINE
    if min_isr is not None and len(isr) < min_isr:
        return UNDER_MIN_ISR
    if len(isr) < len(replicas):
        return UNDER_REPLICATED
    return OK


def _partition_row(
    st: UpdateMetadataPartitionState,
    live: Mapping[int, BrokerNode],
    led: Mapping[str, Any] | None,
    leader_reachable: bool | None,
) -> dict[str, Any]:
    replicas = list(st.replicas)
    if led is not None:
        leader, epoch, isr = led["leader"], led["leader_epoch"], list(led["isr"])
    else:
        leader, epoch, isr = st.leader, st.leader_epoch, list(st.isr)
    min_isr = None if led is None else led.get("min_insync_replicas")
    row: dict[str, Any] = {
        "topic": st.topic,
        "partition": st.partition,
        "status": partition_status(leader, live, isr, replicas, min_isr),
        "leader": leader,
        "leader_epoch": epoch,
        "leader_reachable": leader_reachable,
        "replicas": replicas,
        "isr": isr,
        "out_of_sync": [r for r in replicas if r not in isr],
        "offline_replicas": sorted(
            set(st.offline_replicas) | {r for r in replicas if r not in live}
        ),
        "min_insync_replicas": min_isr,
        "source": "leader" if led is not None else "metadata",
        "high_watermark": None,
        "log_end_offset": None,
        "log_start_offset": None,
        "replica_states": None,
    }
    if led is not None:
        row["high_watermark"] = led["high_watermark"]
        row["log_end_offset"] = led["log_end_offset"]
        row["log_start_offset"] = led["log_start_offset"]
        row["replica_states"] = led.get("replica_states")
    return row


def _sort_key(row: Mapping[str, Any]) -> tuple[int, str, int]:
    return (STATUS_RANK[row["status"]], row["topic"], row["partition"])


def build_cluster_view(
    served_by: int,
    now_ms: int,
    local_zk_connected: bool,
    zk: ZkView,
    metadata: MetadataView,
    peers: Mapping[int, PeerAnswer | PeerFailure],
    last_known: Mapping[int, Registration] | None = None,
) -> ClusterView:
    """`last_known`: registrations seen earlier, for the address and epoch of a broker
    that is gone."""
    live = metadata.live_brokers
    led: dict[tuple[str, int], Mapping[str, Any]] = {}
    for answer in peers.values():
        if isinstance(answer, PeerAnswer):
            for p in answer.leaders:
                # A deposed leader that has not heard of its successor yet still answers
                # as leader: the higher leader epoch is the current one.
                key = (p["topic"], p["partition"])
                other = led.get(key)
                if other is None or p["leader_epoch"] > other["leader_epoch"]:
                    led[key] = p

    rows = []
    replica_ids: set[int] = set()
    topics: set[str] = set()
    for st in metadata.partitions:
        topics.add(st.topic)
        replica_ids.update(st.replicas)
        view = led.get((st.topic, st.partition))
        leader_answer = peers.get(st.leader)
        reachable = None if leader_answer is None else isinstance(leader_answer, PeerAnswer)
        rows.append(_partition_row(st, live, view, reachable))
    rows.sort(key=_sort_key)

    controller_id = zk.controller_id if zk.controller_id is not None else metadata.controller_id
    controller_epoch = (
        zk.controller_epoch if zk.controller_epoch is not None else metadata.controller_epoch
    )
    registered = zk.registered
    known = set(live) | replica_ids | set(peers) | set(registered or {}) | {served_by}
    brokers = []
    for b in sorted(known):
        reg = None if registered is None else registered.get(b)
        shown = reg or (last_known or {}).get(b)
        peer = peers.get(b)
        is_registered = None if registered is None else reg is not None
        is_live = b in live
        reachable = None if peer is None else isinstance(peer, PeerAnswer)
        if not is_registered and not is_live and not reachable:
            status = DOWN
        elif reachable is False:
            status = UNREACHABLE
        else:
            status = ALIVE
        facts: Mapping[str, Any] = peer.broker if isinstance(peer, PeerAnswer) else {}
        node = live.get(b)
        if shown is not None:
            endpoints = list(shown.endpoints)
        elif node is not None:
            endpoints = [f"{e.listener}://{e.host}:{e.port}" for e in node.endpoints] or [
                f"{node.host}:{node.port}"
            ]
        else:
            endpoints = []
        epoch = shown.epoch if shown is not None else facts.get("broker_epoch", -1)
        brokers.append(
            {
                "id": b,
                "status": status,
                "registered": is_registered,
                "live": is_live,
                "reachable": reachable,
                "error": peer.error if isinstance(peer, PeerFailure) else None,
                "endpoints": endpoints,
                "admin_url": None if shown is None else shown.admin_url,
                "broker_epoch": epoch,
                "is_controller": b == controller_id,
                "zookeeper_connected": facts.get("zookeeper_connected"),
                "partitions": facts.get("partitions"),
                "leaders": facts.get("leaders"),
                "serving": b == served_by,
            }
        )

    counts = {s: 0 for s in STATUS_RANK}
    for r in rows:
        counts[r["status"]] += 1
    summary = {
        "topics": len(topics),
        "partitions": len(rows),
        **counts,
        "brokers": len(brokers),
        "brokers_alive": sum(b["status"] == ALIVE for b in brokers),
    }
    return ClusterView(
        served_by=served_by,
        time_ms=now_ms,
        zookeeper={
            "connected": local_zk_connected,
            "answered": registered is not None,
            "error": zk.error,
        },
        controller={"id": controller_id, "epoch": controller_epoch},
        brokers=brokers,
        partitions=rows,
        summary=summary,
    )
