"""The leader's view of its followers, and the rules that follow from it (design §7).

Sans-IO: no logs, sockets or ZooKeeper here. The partition adapter feeds in what happened
(a follower fetched, the leader appended, time passed) with `now_ms` from its clock and
performs the effects the answers imply (move the HW, write a new ISR).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from minikafka.common import TopicPartition

UNKNOWN_OFFSET = -1


@dataclass
class FollowerState:
    """What a leader knows about one follower (Kafka's Replica on the leader)."""

    broker_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    log_start_offset: int = UNKNOWN_OFFSET
    last_fetch_time_ms: int = 0
    last_fetch_leader_log_end_offset: int = 0
    last_caught_up_time_ms: int = 0
    # When it was last caught up before this broker's latest LeaderAndIsr, if this broker
    # led then too: the rule's clock starts over at each (§7.5), what was seen does not.
    caught_up_before_ms: int = 0

    @property
    def last_known_caught_up_ms(self) -> int:
        """For reports, not the rules: the last time this leader saw it caught up (0: not
        since it became leader)."""
        return max(self.last_caught_up_time_ms, self.caught_up_before_ms)

    def reset(self, leader_log_end_offset: int, now_ms: int, in_isr: bool) -> None:
        """On becoming leader (§7.5): LEO unknown; an ISR member counts as caught up now, so
        it is not expelled before it had a chance to fetch."""
        self.log_end_offset = UNKNOWN_OFFSET
        self.log_start_offset = UNKNOWN_OFFSET
        self.last_fetch_leader_log_end_offset = leader_log_end_offset
        self.last_fetch_time_ms = now_ms
        self.last_caught_up_time_ms = now_ms if in_isr else 0

    def update_fetch_state(
        self,
        fetch_offset: int,
        follower_log_start_offset: int,
        leader_end_offset: int,
        now_ms: int,
    ) -> None:
        """§7.1. `leader_end_offset` is the leader's LEO captured before the read."""
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        self.log_end_offset = fetch_offset
        self.log_start_offset = follower_log_start_offset
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = now_ms


def refresh_idle_followers(states: Iterable[FollowerState], now_ms: int) -> None:
    """§7.1 for followers that fetched again at the leader's LEO with nothing else changed
    (idle partitions of an incremental fetch session, KIP-227): caught up now. Equivalent
    to `update_fetch_state(leo, same log start, leo, now_ms)`, in a tight loop: an idle
    broker runs it over every partition it leads, every replica.fetch.wait.max.ms."""
    for st in states:
        st.last_fetch_time_ms = now_ms
        if st.last_caught_up_time_ms < now_ms:
            st.last_caught_up_time_ms = now_ms


class LeaderReplicaState:
    """Follower states of one partition led by `local_broker_id`, with the HW, shrink and
    expand rules of design §7.2–7.4."""

    def __init__(self, local_broker_id: int, replica_lag_time_max_ms: int) -> None:
        self.local_broker_id = local_broker_id
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.followers: dict[int, FollowerState] = {}
        self.leader_epoch_start_offset = UNKNOWN_OFFSET

    def become_leader(
        self,
        replicas: Iterable[int],
        isr: Iterable[int],
        leader_log_end_offset: int,
        now_ms: int,
        *,
        new_leader: bool = True,
    ) -> None:
        """§7.5. `new_leader`: this broker did not lead the partition until now. A new
        epoch on the same leader (the controller took a dead follower out of the ISR, or a
        reassignment) keeps what the leader knows of each follower's log, as Kafka's
        makeLeader resets the remote replicas' offsets only when it is a new leader: a
        caught-up follower whose fetch is answered without being re-read (an idle session
        partition) must not leave its LEO unknown and the HW held back."""
        isr_set = set(isr)
        self.leader_epoch_start_offset = leader_log_end_offset
        # Non-empty when this broker led until now, or before it went offline: the rule's
        # clock starts over, but when a follower was last caught up is still known.
        before = self.followers
        self.followers = {}
        for r in replicas:
            if r == self.local_broker_id:
                continue
            st = FollowerState(r)
            st.reset(leader_log_end_offset, now_ms, r in isr_set)
            old = before.get(r)
            if old is not None:
                st.caught_up_before_ms = old.last_known_caught_up_ms
                if not new_leader:
                    st.log_end_offset = old.log_end_offset
                    st.log_start_offset = old.log_start_offset
            self.followers[r] = st

    def update_assignment(self, replicas: Iterable[int]) -> None:
        """Keep states of replicas still assigned; add new ones (a reassignment)."""
        wanted = [r for r in replicas if r != self.local_broker_id]
        self.followers = {r: self.followers.get(r) or FollowerState(r) for r in wanted}

    def follower(self, broker_id: int) -> FollowerState | None:
        return self.followers.get(broker_id)

    def high_watermark_candidate(
        self, leader_log_end_offset: int, isr: set[int], now_ms: int
    ) -> int:
        """§7.2: min LEO over the leader, ISR members and recently caught-up followers.

        The caller applies it only if it is larger than the current HW.
        """
        new_hw = leader_log_end_offset
        for st in self.followers.values():
            if st.log_end_offset >= new_hw:
                continue
            if st.broker_id in isr or self._caught_up_recently(st, now_ms):
                # An unknown LEO (-1) right after becoming leader holds the HW back.
                new_hw = st.log_end_offset
        return new_hw

    def _caught_up_recently(self, st: FollowerState, now_ms: int) -> bool:
        return now_ms - st.last_caught_up_time_ms <= self.replica_lag_time_max_ms

    def out_of_sync_replicas(
        self, leader_log_end_offset: int, isr: set[int], now_ms: int
    ) -> set[int]:
        """§7.3: ISR followers that are behind and have not caught up for too long. The
        leader is never among them."""
        return {
            st.broker_id
            for st in self.followers.values()
            if st.broker_id in isr
            and st.log_end_offset != leader_log_end_offset
            and now_ms - st.last_caught_up_time_ms > self.replica_lag_time_max_ms
        }

    def disconnected_replicas(
        self,
        isr: set[int],
        connections_lost_ms: Mapping[int, int],
        now_ms: int,
        disconnected_max_ms: int,
    ) -> set[int]:
        """ISR followers presumed gone (replica.lag.disconnected.max.ms, minikafka's own): the
        broker's fetch connection to this leader closed (at the time
        `connections_lost_ms` gives) at least `disconnected_max_ms` ago, and it has not
        fetched this partition since. A killed broker's socket closes at once; a paused or
        cut-off one's stays open and is left to §7.3. Dropping a follower from the ISR
        never risks acknowledged data; min.insync.replicas still guards acks=all. -1: off."""
        if disconnected_max_ms < 0:
            return set()
        out = set()
        for broker_id, lost_ms in connections_lost_ms.items():
            st = self.followers.get(broker_id)
            if (
                st is not None
                and broker_id in isr
                and now_ms - lost_ms >= disconnected_max_ms
                and st.last_fetch_time_ms <= lost_ms
            ):
                out.add(broker_id)
        return out

    def presume_gone(self, broker_ids: Iterable[int]) -> None:
        """Followers `disconnected_replicas` named, on their way out of the ISR: no longer
        caught up recently either, so the HW stops waiting for them once they are out (a
        follower dropped by §7.3 has not been caught up for replica.lag.time.max.ms; one
        dropped for its closed connection may have been a moment ago). A fetch makes it
        caught up again."""
        for broker_id in broker_ids:
            st = self.followers.get(broker_id)
            if st is not None:
                st.caught_up_before_ms = st.last_known_caught_up_ms
                st.last_caught_up_time_ms = 0

    def can_join_isr(self, broker_id: int, high_watermark: int, isr: set[int]) -> bool:
        """§7.4: a follower outside the ISR that reached the HW and this epoch's start."""
        st = self.followers.get(broker_id)
        return (
            st is not None
            and broker_id not in isr
            and st.log_end_offset >= high_watermark
            and st.log_end_offset >= self.leader_epoch_start_offset
        )


class IsrChangePropagation:
    """When a broker tells the controller about its ISR changes (design §8.5).

    Changes are batched: checked every `check_interval_ms` (2500); propagated once no change
    happened for `blackout_ms` (5000), or at the latest `max_delay_ms` (60000) after the
    previous propagation, so a steady trickle of changes cannot postpone it forever.
    """

    def __init__(
        self,
        blackout_ms: int = 5000,
        max_delay_ms: int = 60000,
        now_ms: int = 0,
    ) -> None:
        self.blackout_ms = blackout_ms
        self.max_delay_ms = max_delay_ms
        self.changed: set[TopicPartition] = set()
        self.last_change_ms = now_ms
        self.last_propagation_ms = now_ms

    def record_change(self, tp: TopicPartition, now_ms: int) -> None:
        self.changed.add(tp)
        self.last_change_ms = now_ms

    def take_if_due(self, now_ms: int) -> list[TopicPartition]:
        """The partitions to announce now (and forget), or [] if it is not time yet."""
        if not self.changed:
            return []
        if (
            self.last_change_ms + self.blackout_ms < now_ms
            or self.last_propagation_ms + self.max_delay_ms < now_ms
        ):
            out = sorted(self.changed)
            self.changed.clear()
            self.last_propagation_ms = now_ms
            return out
        return []

    def put_back(self, tps: Iterable[TopicPartition]) -> None:
        """A notification write failed: announce these with the next batch."""
        self.changed.update(tps)
