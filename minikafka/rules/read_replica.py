"""Where a consumer should read a partition from (KIP-392), as pure functions.

Kafka's `ReplicaManager.findPreferredReadReplica` with its two `ReplicaSelector`s: the
leader answers a consumer's Fetch (v11+, which carries the consumer's `client.rack`) with a
preferred read replica, a follower the consumer then fetches from. Only followers that
hold the fetch offset (log start <= offset <= their log end offset, as the leader last saw
them, in the ISR or not) are candidates, and only those whose broker the consumer can reach
(a rack known from the metadata cache's live brokers on the request's listener).
`RackAwareReplicaSelector`: without a rack, or with the leader on the consumer's rack, or no
candidate on it, the leader (no preferred replica); else the most caught-up candidate on the
consumer's rack (the highest log end offset, then the shortest time since it was last caught
up, then the highest broker id, as Kafka's `ReplicaView.comparator` orders them).
`LeaderSelector` (or none): always the leader.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["LEADER_SELECTOR", "RACK_AWARE_SELECTOR", "RemoteReplica", "preferred_read_replica"]

# Kafka's class names (replica.selector.class); the broker's config refuses any other.
LEADER_SELECTOR = "org.apache.kafka.common.replica.LeaderSelector"
RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


@dataclass(frozen=True, slots=True)
class RemoteReplica:
    """A follower as the leader knows it (Kafka's DefaultReplicaView of a remote replica)."""

    broker_id: int
    log_start_offset: int
    log_end_offset: int
    time_since_last_caught_up_ms: int


def preferred_read_replica(
    selector: str | None,
    client_rack: str,
    fetch_offset: int,
    leader_id: int,
    followers: Iterable[RemoteReplica],
    racks: Mapping[int, str | None],
) -> int | None:
    """The follower a consumer on `client_rack` should read from, or None for the leader.

    `racks`: the rack of each live broker reachable on the consumer's listener; a broker
    missing from it is Kafka's `Node.noNode()`, never chosen."""
    if selector != RACK_AWARE_SELECTOR or not client_rack:
        return None
    if racks.get(leader_id) == client_rack:
        return None  # Kafka's selector keeps the leader when it is on the consumer's rack
    same_rack = [
        f
        for f in followers
        if f.broker_id != leader_id
        and f.log_start_offset <= fetch_offset <= f.log_end_offset
        and f.broker_id in racks
        and racks[f.broker_id] == client_rack
    ]
    if not same_rack:
        return None
    best = max(
        same_rack,
        key=lambda f: (f.log_end_offset, -f.time_since_last_caught_up_ms, f.broker_id),
    )
    return best.broker_id
