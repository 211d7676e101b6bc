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

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from minikafka.common import NO_LEADER
from minikafka.rpc.messages import BrokerNode, UpdateMetadataPartitionState

# Partition status, worst first (the table's sort order).
OFFLINE = "offline"
UNDER_MIN_ISR = "under_min_isr"
UNDER_REPLICATED = "under_replicated"
OK = "ok"
STATUS_RANK = {OFFLINE: 0, UNDER_MIN_ISR: 1, UNDER_REPLICATED: 2, OK: 3}

# The summary's count of partitions waiting on an unreachable (or down) broker.
WAITING = "waiting_on_unreachable"

# Kafka's own topics (__consumer_offsets): listed after the user's and hidden by the page
# unless asked for, so that the offsets topic's 50 partitions do not bury them.
INTERNAL_PREFIX = "__"


def is_internal(topic: str) -> bool:
    return topic.startswith(INTERNAL_PREFIX)


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


class LeaderState(NamedTuple):
    """A partition as its leader sees it: one row of `/v1/local`'s `leaders` (a JSON array
    in LEADER_FIELDS order, not an object: 10,000 of them a second must be cheap to send
    and read). `replica_states` rows are REPLICA_STATE_FIELDS arrays."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: list[int]
    min_insync_replicas: int
    high_watermark: int
    log_end_offset: int
    log_start_offset: int
    replica_states: list[list[Any]]


LEADER_FIELDS: tuple[str, ...] = LeaderState._fields
REPLICA_STATE_FIELDS = ("broker_id", "log_end_offset", "lag", "in_isr", "last_caught_up_ms_ago")


class Reassignment(NamedTuple):
    """A partition being moved (KIP-455), from the controller's `/v1/local`."""

    topic: str
    partition: int
    replicas: list[int]
    adding: list[int]
    removing: list[int]


@dataclass(frozen=True)
class PeerAnswer:
    """A broker's `/v1/local`: its `broker` facts and the partitions it leads (and, from
    the controller, the partitions being moved)."""

    broker: Mapping[str, Any]
    leaders: list[LeaderState]
    reassignments: list[Reassignment] = field(default_factory=list)


@dataclass(frozen=True)
class PeerFailure:
    error: str


@dataclass(frozen=True)
class MetadataView:
    controller_id: int
    controller_epoch: int
    live_brokers: Mapping[int, BrokerNode]
    partitions: Iterable[UpdateMetadataPartitionState]


class _Entry(NamedTuple):
    """A partition in the view before it becomes a row: the table shows a few hundred of
    10,000, so rows are built only for those (fewer objects, less garbage collection).
    Sorted: the user's topics first, then worst first; within a status, those waiting on
    an unreachable broker first (they are why acks=all writes stall: with 10,000
    partitions they must not be below the page's first 200)."""

    internal: bool
    rank: int
    not_waiting: bool
    topic: str
    partition: int
    status: str
    state: UpdateMetadataPartitionState
    led: LeaderState | None
    leader_reachable: bool | None
    unreachable: tuple[int, ...]


@dataclass
class ClusterView:
    served_by: int
    time_ms: int
    zookeeper: dict[str, Any]
    controller: dict[str, Any]
    brokers: list[dict[str, Any]]
    entries: list[_Entry]  # every partition: the user's topics' first, worst first
    live: Mapping[int, BrokerNode]
    summary: dict[str, Any] = field(default_factory=dict)
    topic_names: list[str] = field(default_factory=list)  # the user's first
    user_partitions: int = 0  # entries[:user_partitions] are the user's topics'
    # (topic, partition) -> the move the controller is making of it.
    moves: Mapping[tuple[str, int], Reassignment] = field(default_factory=dict)

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
        return self.topic_names

    @property
    def partitions(self) -> list[dict[str, Any]]:
        """Every partition's row: the user's topics' first, worst first."""
        return [_partition_row(e, self.live, self.moves) for e in self.entries]

    def select(self, topic: str | None, limit: int | None, internal: bool = True) -> dict[str, Any]:
        """Rows of one topic (or all, internal topics' too unless `internal` is false), the
        user's topics' first, worst first, at most `limit` of them. `hidden_internal`: the
        internal topics' partitions left out."""
        hidden = 0
        if topic is not None:
            chosen = [e for e in self.entries if e.topic == topic]
        elif internal:
            chosen = self.entries
        else:
            chosen = self.entries[: self.user_partitions]
            hidden = len(self.entries) - self.user_partitions
        shown = chosen if limit is None else chosen[:limit]
        return {
            "topic": topic,
            "total": len(chosen),
            "hidden_internal": hidden,
            "partitions": [_partition_row(e, self.live, self.moves) for e in shown],
        }


def partition_status(
    leader: int,
    live: Collection[int],
    isr: list[int],
    replicas: list[int],
    min_isr: int | None,
) -> str:
    if leader == NO_LEADER or leader not in live:
        return OFFLINE
    if min_isr is not None and len(isr) < min_isr:
        return UNDER_MIN_ISR
    if len(isr) < len(replicas):
        return UNDER_REPLICATED
    return OK


def broker_status(
    b: int,
    registered: Mapping[int, Registration] | None,
    live: Collection[int],
    peers: Mapping[int, PeerAnswer | PeerFailure],
) -> str:
    """ALIVE, UNREACHABLE or DOWN: the broker table's status, and what the partition rows'
    `unreachable_brokers` are drawn from (one rule for both)."""
    peer = peers.get(b)
    reachable = None if peer is None else isinstance(peer, PeerAnswer)
    is_registered = None if registered is None else b in registered
    if not is_registered and b not in live and not reachable:
        return DOWN
    if reachable is False:
        return UNREACHABLE
    return ALIVE


def waiting_on(leader: int, isr: Iterable[int], alive: Collection[int]) -> tuple[int, ...]:
    """The leader and ISR members that are not alive (unreachable, or down and still in the
    ISR): the leader of an acks=all write waits for every ISR member, so writes stall on
    them until they leave the ISR (a killed broker: replica.lag.disconnected.max.ms after its
    connections closed, or once its ZooKeeper session expires)."""
    out = [b for b in isr if b not in alive]
    if leader != NO_LEADER and leader not in alive and leader not in out:
        out.append(leader)
    return tuple(sorted(out)) if out else ()


def _entry(
    st: UpdateMetadataPartitionState,
    internal: bool,
    live: Mapping[int, BrokerNode],
    led: LeaderState | None,
    leader_reachable: bool | None,
    alive: frozenset[int],
    move: Reassignment | None = None,
) -> _Entry:
    # A moving partition's replication factor leaves out the replicas being added (Kafka's
    # under-replicated rule since KIP-455): they are not expected in the ISR yet.
    replicas = st.replicas if move is None else [r for r in st.replicas if r not in move.adding]
    if led is not None:
        leader, isr = led.leader, led.isr
        status = partition_status(leader, live, isr, replicas, led.min_insync_replicas)
    else:
        leader, isr = st.leader, st.isr
        status = partition_status(leader, live, isr, replicas, None)
    # The usual case (everyone in it alive) in one C-level check: 10,000 partitions a second.
    if alive.issuperset(isr) and (leader in alive or leader == NO_LEADER):
        unreachable: tuple[int, ...] = ()
    else:
        unreachable = waiting_on(leader, isr, alive)
    return _Entry(
        internal,
        STATUS_RANK[status],
        not unreachable,
        st.topic,
        st.partition,
        status,
        st,
        led,
        leader_reachable,
        unreachable,
    )


def _partition_row(
    e: _Entry,
    live: Mapping[int, BrokerNode],
    moves: Mapping[tuple[str, int], Reassignment] | None = None,
) -> dict[str, Any]:
    st, led = e.state, e.led
    move = (moves or {}).get((st.topic, st.partition))
    replicas = list(st.replicas)
    if led is not None:
        leader, epoch, isr = led.leader, led.leader_epoch, list(led.isr)
    else:
        leader, epoch, isr = st.leader, st.leader_epoch, list(st.isr)
    row: dict[str, Any] = {
        "topic": st.topic,
        "partition": st.partition,
        "internal": e.internal,
        "status": e.status,
        "leader": leader,
        "leader_epoch": epoch,
        "leader_reachable": e.leader_reachable,
        # The leader and ISR members that are unreachable or down: acks=all writes wait
        # on them (the page marks them, and says so on the row).
        "unreachable_brokers": list(e.unreachable),
        "replicas": replicas,
        "isr": isr,
        "out_of_sync": [r for r in replicas if r not in isr],
        "offline_replicas": sorted(
            set(st.offline_replicas) | {r for r in replicas if r not in live}
        ),
        "min_insync_replicas": None if led is None else led.min_insync_replicas,
        "source": "leader" if led is not None else "metadata",
        "high_watermark": None,
        "log_end_offset": None,
        "log_start_offset": None,
        "replica_states": None,
        # A move in progress (KIP-455): the replicas joining and those to leave once every
        # target replica is in the ISR.
        "adding_replicas": [] if move is None else list(move.adding),
        "removing_replicas": [] if move is None else list(move.removing),
    }
    if led is not None:
        row["high_watermark"] = led.high_watermark
        row["log_end_offset"] = led.log_end_offset
        row["log_start_offset"] = led.log_start_offset
        row["replica_states"] = [
            dict(zip(REPLICA_STATE_FIELDS, r, strict=True)) for r in led.replica_states
        ]
    return row


def build_cluster_view(
    served_by: int,
    now_ms: int,
    local_zk_connected: bool,
    zk: ZkView,
    metadata: MetadataView,
    peers: Mapping[int, PeerAnswer | PeerFailure],
    last_known: Mapping[int, Registration] | None = None,
    last_live: Mapping[int, BrokerNode] | None = None,
) -> ClusterView:
    """`last_known`: registrations seen earlier, for the address and epoch of a broker
    that is gone. `last_live`: each broker as the controller last sent it live, for the
    address of one that went before this broker read its registration (a page opened
    after the broker went down)."""
    live = metadata.live_brokers
    led: dict[tuple[str, int], LeaderState] = {}
    moves: dict[tuple[str, int], Reassignment] = {}
    for answer in peers.values():
        if isinstance(answer, PeerAnswer):
            for move in answer.reassignments:
                moves[(move.topic, move.partition)] = move
            for p in answer.leaders:
                # A deposed leader that has not heard of its successor yet still answers
                # as leader: the higher leader epoch is the current one.
                key = (p.topic, p.partition)
                other = led.get(key)
                if other is None or p.leader_epoch > other.leader_epoch:
                    led[key] = p

    registered = zk.registered
    # The brokers alive, once per view (a handful), not per partition: a partition's
    # leader or ISR member outside it is one its acks=all writes wait on. A broker known
    # only as a replica (not live, registered or asked) is down, so not in it either.
    candidates = set(live) | set(peers) | set(registered or {}) | {served_by}
    alive = frozenset(b for b in candidates if broker_status(b, registered, live, peers) == ALIVE)

    entries = []
    replica_ids: set[int] = set()
    topics: dict[str, bool] = {}  # topic → internal
    reachable_ids = {b for b, a in peers.items() if isinstance(a, PeerAnswer)}
    for st in metadata.partitions:
        internal = topics.get(st.topic)
        if internal is None:
            internal = topics[st.topic] = is_internal(st.topic)
        replica_ids.update(st.replicas)
        view = led.get((st.topic, st.partition))
        reachable = None if st.leader not in peers else st.leader in reachable_ids
        moving = moves.get((st.topic, st.partition)) if moves else None
        entries.append(_entry(st, internal, live, view, reachable, alive, moving))
    entries.sort()

    controller_id = zk.controller_id if zk.controller_id is not None else metadata.controller_id
    controller_epoch = (
        zk.controller_epoch if zk.controller_epoch is not None else metadata.controller_epoch
    )
    known = set(live) | replica_ids | set(peers) | set(registered or {}) | {served_by}
    brokers = []
    for b in sorted(known):
        reg = None if registered is None else registered.get(b)
        shown = reg or (last_known or {}).get(b)
        peer = peers.get(b)
        is_registered = None if registered is None else reg is not None
        is_live = b in live
        reachable = None if peer is None else isinstance(peer, PeerAnswer)
        status = broker_status(b, registered, live, peers)
        facts: Mapping[str, Any] = peer.broker if isinstance(peer, PeerAnswer) else {}
        node = live.get(b) or (last_live or {}).get(b)
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
                "throttled_out": facts.get("throttled_out"),
                "throttled_in": facts.get("throttled_in"),
                "serving": b == served_by,
            }
        )

    counts = {s: 0 for s in STATUS_RANK}
    internal_counts = {s: 0 for s in STATUS_RANK}
    waiting = internal_waiting = 0
    for e in entries:
        counts[e.status] += 1
        if e.internal:
            internal_counts[e.status] += 1
        if e.unreachable:
            waiting += 1
            internal_waiting += e.internal
    user_partitions = len(entries) - sum(internal_counts.values())
    summary = {
        "topics": len(topics),
        "partitions": len(entries),
        **counts,
        # Partitions whose leader or an ISR member is unreachable or down: their acks=all
        # writes stall until it answers again or leaves the ISR.
        WAITING: waiting,
        "brokers": len(brokers),
        "brokers_alive": sum(b["status"] == ALIVE for b in brokers),
        # Partitions being moved between brokers (reassignment).
        "reassigning": len(moves),
        # Of the counts above, the internal topics' (the page says how many it hides).
        "internal": {
            "topics": sum(topics.values()),
            "partitions": len(entries) - user_partitions,
            **internal_counts,
            WAITING: internal_waiting,
        },
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
        entries=entries,
        live=live,
        summary=summary,
        topic_names=sorted(topics, key=lambda t: (topics[t], t)),
        user_partitions=user_partitions,
        moves=moves,
    )
