"""The dashboard's event timeline: what changed in the cluster, as this broker saw it.

Every broker gets the same stream of UpdateMetadata from the controller, so each can tell
the story from the difference between one update and the next (`metadata_events`): ISR
shrinks and expands, leader elections, partitions going offline, controller changes,
brokers joining and leaving, topics created and deleted. To that it adds what only it knows
first-hand, its own ZooKeeper session's expiry. Pure code: the caller passes the states
and the time; `EventLog` is a bounded ring with sequence numbers so that a page can ask
for what is new since the last it saw.

An election is *clean* when the new leader was in the ISR as this broker last saw it. The
cache can trail ZooKeeper by an ISR propagation (a replica that joined the ISR moments
before its leader died), so an election that looks unclean here is one whose new leader
had not been reported in sync to the cluster.

A partition event's `broker` is the broker it is about, so that the page can put one
failure's events together (one broker's death is an ISR shrink and maybe an election in
every partition it had): the replica that left or joined the ISR (none when several did:
`details` lists them), the leader that lost the partition, or for an election that did not
depose a failed leader (a preferred election, a partition coming back online) the new one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from minikafka.common import NO_LEADER, TopicPartition
from minikafka.rpc.messages import UpdateMetadataPartitionState
from minikafka.server.metadata_cache import MetadataChange

# How many events a broker keeps (a broker failure at 10,000 partitions writes thousands).
DEFAULT_CAPACITY = 5000

ISR_SHRINK = "isr_shrink"
ISR_EXPAND = "isr_expand"
LEADER_ELECTION = "leader_election"
PARTITION_OFFLINE = "partition_offline"
CONTROLLER_CHANGE = "controller_change"
BROKER_REGISTERED = "broker_registered"
BROKER_DEREGISTERED = "broker_deregistered"
TOPIC_CREATED = "topic_created"
TOPIC_DELETED = "topic_deleted"
ZK_SESSION_EXPIRED = "zk_session_expired"
ZK_SESSION_CONNECTED = "zk_session_connected"

# How the page colours an event.
SEVERITY = {
    ISR_SHRINK: "warning",
    ISR_EXPAND: "ok",
    LEADER_ELECTION: "info",  # an unclean one is "error" (see `leader_election`)
    PARTITION_OFFLINE: "error",
    CONTROLLER_CHANGE: "info",
    BROKER_REGISTERED: "ok",
    BROKER_DEREGISTERED: "error",
    TOPIC_CREATED: "info",
    TOPIC_DELETED: "info",
    ZK_SESSION_EXPIRED: "error",
    ZK_SESSION_CONNECTED: "ok",
}


@dataclass(frozen=True)
class ClusterEvent:
    seq: int
    time_ms: int
    kind: str
    severity: str
    text: str
    topic: str | None = None
    partition: int | None = None
    broker: int | None = None
    # Kind-specific facts (old and new ISR, leaders, epochs, clean).
    details: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class EventDraft:
    """An event before the log gives it a sequence number and a time."""

    kind: str
    text: str
    topic: str | None = None
    partition: int | None = None
    broker: int | None = None
    details: Mapping[str, Any] | None = None
    severity: str | None = None


class EventLog:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._events: deque[ClusterEvent] = deque(maxlen=capacity)
        self._next_seq = 1

    @property
    def last_seq(self) -> int:
        return self._next_seq - 1

    def append(self, drafts: Iterable[EventDraft] | PendingEvents, time_ms: int) -> None:
        """Number and keep these events. An update's `PendingEvents` are made only as far
        as the log keeps them; the others are counted all the same."""
        if isinstance(drafts, PendingEvents):
            total = drafts.count()
            kept = drafts.last(min(total, self._events.maxlen or total))
            self._next_seq += total - len(kept)
            drafts = kept
        for d in drafts:
            self._events.append(
                ClusterEvent(
                    self._next_seq,
                    time_ms,
                    d.kind,
                    d.severity or SEVERITY[d.kind],
                    d.text,
                    d.topic,
                    d.partition,
                    d.broker,
                    d.details,
                )
            )
            self._next_seq += 1

    def newest(self, after_seq: int = 0, limit: int | None = None) -> list[ClusterEvent]:
        """Events with seq > after_seq, newest first, at most `limit`."""
        out: list[ClusterEvent] = []
        for e in reversed(self._events):
            if e.seq <= after_seq or (limit is not None and len(out) >= limit):
                break
            out.append(e)
        return out


def _ids(ids: Iterable[int]) -> str:
    return "[" + ",".join(str(i) for i in ids) + "]"


def partition_events(
    old: UpdateMetadataPartitionState | None, new: UpdateMetadataPartitionState
) -> list[EventDraft]:
    """What changed in one partition between two metadata states (old None: new topic)."""
    if old is None:
        return []
    tp = TopicPartition(new.topic, new.partition)
    out: list[EventDraft] = []
    old_isr, new_isr = set(old.isr), set(new.isr)
    if new.leader != old.leader:
        if new.leader == NO_LEADER:
            out.append(
                EventDraft(
                    PARTITION_OFFLINE,
                    f"{tp}: no leader (was {old.leader}); the partition is offline",
                    tp.topic,
                    tp.partition,
                    old.leader,
                    details={"old_leader": old.leader, "leader_epoch": new.leader_epoch},
                )
            )
        else:
            clean = new.leader in old_isr
            how = "clean" if clean else "unclean: not in the ISR"
            # A leader still in the ISR was not deposed by its failure: the new one is news.
            deposed = old.leader != NO_LEADER and old.leader not in new_isr
            out.append(
                EventDraft(
                    LEADER_ELECTION,
                    f"{tp}: leader {old.leader} → {new.leader} (epoch {new.leader_epoch}, {how})",
                    tp.topic,
                    tp.partition,
                    old.leader if deposed else new.leader,
                    details={
                        "old_leader": old.leader,
                        "new_leader": new.leader,
                        "leader_epoch": new.leader_epoch,
                        "clean": clean,
                    },
                    severity=None if clean else "error",
                )
            )
    removed = [r for r in old.isr if r not in new_isr]
    added = [r for r in new.isr if r not in old_isr]
    details = {"old_isr": list(old.isr), "new_isr": list(new.isr)}
    if removed:
        out.append(
            EventDraft(
                ISR_SHRINK,
                f"{tp}: ISR shrank {_ids(old.isr)} → {_ids(new.isr)} "
                f"(out: {', '.join(map(str, removed))})",
                tp.topic,
                tp.partition,
                removed[0] if len(removed) == 1 else None,
                details={**details, "removed": removed},
            )
        )
    if added:
        out.append(
            EventDraft(
                ISR_EXPAND,
                f"{tp}: ISR expanded {_ids(old.isr)} → {_ids(new.isr)} "
                f"(in: {', '.join(map(str, added))})",
                tp.topic,
                tp.partition,
                added[0] if len(added) == 1 else None,
                details={**details, "added": added},
            )
        )
    return out


def partition_event_count(
    old: UpdateMetadataPartitionState | None, new: UpdateMetadataPartitionState
) -> int:
    """len(partition_events(old, new)), without making them."""
    if old is None:
        return 0
    count = int(new.leader != old.leader)
    if old.isr != new.isr:
        old_isr, new_isr = set(old.isr), set(new.isr)
        count += int(any(r not in new_isr for r in old.isr))
        count += int(any(r not in old_isr for r in new.isr))
    return count


@dataclass
class PendingEvents:
    """One update's events, in order: `head`, then those of each changed partition, then
    `tail`. The partitions' are made on demand: a failure at 100,000 partitions changes
    tens of thousands in one update, more than the log keeps, and making each event's text
    for nothing took a third of a broker's time handling such an update."""

    head: list[EventDraft] = field(default_factory=list)
    changes: Sequence[tuple[UpdateMetadataPartitionState | None, UpdateMetadataPartitionState]] = ()
    tail: list[EventDraft] = field(default_factory=list)

    def count(self) -> int:
        return (
            len(self.head)
            + sum(partition_event_count(old, new) for old, new in self.changes)
            + len(self.tail)
        )

    def last(self, n: int) -> list[EventDraft]:
        """The last `n` events, in order."""
        backwards: list[EventDraft] = []
        backwards.extend(reversed(self.tail[-n:] if n else []))
        for old, new in reversed(self.changes):
            if len(backwards) >= n:
                break
            backwards.extend(reversed(partition_events(old, new)))
        if len(backwards) < n:
            backwards.extend(reversed(self.head))
        return backwards[:n][::-1]

    def all(self) -> list[EventDraft]:
        return self.last(self.count())


def metadata_events(change: MetadataChange) -> PendingEvents:
    """The events of one metadata update. The first update a broker gets is the cluster as
    it already is: no events for what existed before."""
    old_controller, new_controller = change.old_controller, change.new_controller
    out: list[EventDraft] = []
    pending = PendingEvents(head=out)
    if new_controller != old_controller and new_controller >= 0:
        out.append(
            EventDraft(
                CONTROLLER_CHANGE,
                f"broker {new_controller} is the controller (epoch {change.controller_epoch})"
                + ("" if old_controller < 0 else f", was broker {old_controller}"),
                broker=new_controller,
                details={
                    "old_controller": old_controller,
                    "new_controller": new_controller,
                    "controller_epoch": change.controller_epoch,
                },
            )
        )
    if change.first_update:
        return pending
    old_set, new_set = set(change.old_brokers), set(change.new_brokers)
    for b in sorted(new_set - old_set):
        out.append(EventDraft(BROKER_REGISTERED, f"broker {b} registered (live)", broker=b))
    for b in sorted(old_set - new_set):
        out.append(
            EventDraft(
                BROKER_DEREGISTERED,
                f"broker {b} is gone from /brokers/ids "
                "(its ZooKeeper session expired or it shut down)",
                broker=b,
            )
        )
    new_topics: dict[str, int] = {}
    for _, new in (c for c in change.changed if c[0] is None):
        new_topics[new.topic] = new_topics.get(new.topic, 0) + 1
    pending.changes = change.changed  # a new topic's partitions have no events of their own
    out = pending.tail
    for topic, n in sorted(new_topics.items()):
        out.append(
            EventDraft(
                TOPIC_CREATED,
                f"topic {topic}: {n} new partition{'s' if n != 1 else ''}",
                topic,
                details={"partitions": n},
            )
        )
    for topic in change.deleted_topics:
        out.append(EventDraft(TOPIC_DELETED, f"topic {topic} deleted", topic))
    return pending
