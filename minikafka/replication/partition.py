"""One partition replica on this broker: its log, its role, and the leader's bookkeeping.

The rules (HW, ISR membership, fetch state) are in `partition_state`; this adapter applies
their answers to the log and reports what changed so the replica manager can wake waiting
requests and write ISR changes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final, NamedTuple

from minikafka.clock import Clock
from minikafka.common import NO_LEADER, TopicPartition
from minikafka.protocol.errors import (
    FencedLeaderEpochError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    PolicyViolationError,
    UnknownLeaderEpochError,
)
from minikafka.replication.partition_state import LeaderReplicaState
from minikafka.rpc.messages import (
    NO_LEADER_EPOCH,
    LeaderAndIsrPartitionState,
    ReplicaState,
)
from minikafka.storage.log import FetchDataInfo, Log
from minikafka.storage.segment import LogAppendInfo

log = logging.getLogger(__name__)

# DeleteRecords' offset -1: up to the high watermark.
DELETE_TO_HIGH_WATERMARK: Final = -1


class ReadResult(NamedTuple):
    info: FetchDataInfo
    high_watermark: int
    log_start_offset: int
    log_end_offset: int


class Partition:
    def __init__(
        self,
        tp: TopicPartition,
        local_broker_id: int,
        log: Log,
        clock: Clock,
        replica_lag_time_max_ms: int,
    ) -> None:
        self.tp = tp
        self.local_broker_id = local_broker_id
        self.log = log
        self._clock = clock
        self.leader_id = NO_LEADER
        self.leader_epoch = NO_LEADER_EPOCH
        self.isr: tuple[int, ...] = ()
        self.isr_write_in_flight = False
        # Bumped whenever this broker stops leading; a waiting acks=all request compares it,
        # so a leader epoch bump that keeps us leader (an ISR change by the controller)
        # does not fail it, as in Kafka.
        self.leadership_losses = 0
        self.assigned_replicas: tuple[int, ...] = ()
        # A reassignment's replicas being added (KIP-455): not yet part of the replication
        # factor (Kafka's OngoingReassignmentState).
        self.adding_replicas: tuple[int, ...] = ()
        self.zk_version = -1
        self.controller_epoch = -1
        self.replica_state = LeaderReplicaState(local_broker_id, replica_lag_time_max_ms)

    def __repr__(self) -> str:
        return (
            f"Partition({self.tp}, leader={self.leader_id}, epoch={self.leader_epoch}, "
            f"isr={sorted(self.isr)}, hw={self.log.high_watermark}, leo={self.log.log_end_offset})"
        )

    @property
    def replication_factor(self) -> int:
        """Kafka's `assignmentState.replicationFactor`: the replicas less those a
        reassignment is adding."""
        return len(self.assigned_replicas) - len(self.adding_replicas)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    # --- role changes (LeaderAndIsr) ---------------------------------------------------

    def _apply_state(self, st: LeaderAndIsrPartitionState) -> None:
        self.controller_epoch = st.controller_epoch
        self.leader_id = st.leader
        self.leader_epoch = st.leader_epoch
        self.isr = tuple(st.isr)
        self.assigned_replicas = tuple(st.replicas)
        self.adding_replicas = tuple(st.adding_replicas)
        self.zk_version = st.zk_version

    def make_leader(self, st: LeaderAndIsrPartitionState, log_level: int = logging.INFO) -> None:
        """§7.5. `log_level`: of the line saying so (a LeaderAndIsr of thousands of
        partitions logs one line for them all instead)."""
        new_leader = not self.is_leader
        self._apply_state(st)
        leo = self.log.log_end_offset
        # The epoch starts at the current LEO; followers reconcile against it (§9).
        self.log.leader_epoch_cache.assign(st.leader_epoch, leo)
        self.replica_state.become_leader(
            st.replicas, st.isr, leo, self._clock.now_ms(), new_leader=new_leader
        )
        self.maybe_increment_high_watermark()
        log.log(
            log_level,
            "%s: leader in epoch %d, ISR %s, LEO %d, HW %d",
            self.tp,
            st.leader_epoch,
            sorted(st.isr),
            leo,
            self.log.high_watermark,
        )

    def make_follower(self, st: LeaderAndIsrPartitionState, log_level: int = logging.INFO) -> None:
        """§7.6. The fetcher then reconciles with the leader of this (new) epoch (§9)."""
        self.leadership_losses += 1
        self._apply_state(st)
        self.replica_state.followers = {}
        log.log(log_level, "%s: follower of %d in epoch %d", self.tp, st.leader, st.leader_epoch)

    def become_offline(self) -> None:
        self.leadership_losses += 1
        self.leader_id = NO_LEADER

    # --- leader side ---------------------------------------------------------------------

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """§7.8 fencing for fetches, list offsets and epoch queries (-1 = not checked)."""
        if current_leader_epoch == NO_LEADER_EPOCH:
            return
        if current_leader_epoch < self.leader_epoch:
            raise FencedLeaderEpochError(
                f"{self.tp}: request epoch {current_leader_epoch} < current {self.leader_epoch}"
            )
        if current_leader_epoch > self.leader_epoch:
            raise UnknownLeaderEpochError(
                f"{self.tp}: request epoch {current_leader_epoch} > current {self.leader_epoch}"
            )

    def _require_leader(self) -> None:
        if not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"broker {self.local_broker_id} is not the leader of {self.tp} "
                f"(leader {self.leader_id}, epoch {self.leader_epoch})"
            )

    def append_records_to_leader(
        self, records: bytes | bytearray | memoryview, required_acks: int, min_isr: int
    ) -> LogAppendInfo:
        self._require_leader()
        if required_acks == -1 and len(self.isr) < min_isr:
            raise NotEnoughReplicasError(
                f"the ISR of {self.tp} is {sorted(self.isr)}, below min.insync.replicas {min_isr}"
            )
        info = self.log.append_as_leader(records, self.leader_epoch)
        self.maybe_increment_high_watermark()
        return info

    def maybe_increment_high_watermark(self) -> bool:
        """§7.2; the HW only moves forward while this broker leads."""
        candidate = self.replica_state.high_watermark_candidate(
            self.log.log_end_offset, set(self.isr), self._clock.now_ms()
        )
        if candidate > self.log.high_watermark:
            self.log.update_high_watermark(candidate)
            return True
        return False

    def delete_records_on_leader(self, offset: int) -> int:
        """DeleteRecords on the leader (Kafka's deleteRecordsOnLeader): the log now starts
        at `offset` (-1: the HW), which may not be beyond the HW; an offset below the log
        start changes nothing. Returns the offset asked for. The segments wholly below go
        with the next retention pass, as in Kafka."""
        self._require_leader()
        if not self.log.config.delete:
            raise PolicyViolationError(
                f"Records of partition {self.tp} can not be deleted due to the configured policy"
            )
        hw = self.log.high_watermark
        requested = hw if offset == DELETE_TO_HIGH_WATERMARK else offset
        if requested < 0 or requested > hw:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {requested} of partition "
                f"{self.tp} since it is larger than the high watermark {hw}"
                if requested > hw
                else f"The offset {requested} for partition {self.tp} is not valid"
            )
        if self.log.maybe_increment_log_start_offset(requested):
            log.info("%s: log start offset moved to %d (DeleteRecords)", self.tp, requested)
        return requested

    def low_watermark_if_leader(self, alive: Callable[[int], bool]) -> int:
        """The lowest log start offset among this leader and its followers on live brokers
        (Kafka's lowWatermarkIfLeader): where DeleteRecords is done everywhere. A follower
        that has not fetched since this broker became leader counts as -1 (unknown)."""
        self._require_leader()
        low = self.log.log_start_offset
        for st in self.replica_state.followers.values():
            if alive(st.broker_id) and st.log_start_offset < low:
                low = st.log_start_offset
        return low

    def read_records(
        self,
        fetch_offset: int,
        max_bytes: int,
        current_leader_epoch: int,
        *,
        fetch_only_from_leader: bool,
        up_to_high_watermark: bool,
        min_one_batch: bool,
    ) -> ReadResult:
        if fetch_only_from_leader:
            self._require_leader()
        self.check_leader_epoch(current_leader_epoch)
        # Capture both ends before reading: the follower fetch state needs the LEO as of now.
        hw = self.log.high_watermark
        leo = self.log.log_end_offset
        info = self.log.read(
            fetch_offset,
            max_bytes,
            max_offset=hw if up_to_high_watermark else None,
            min_one_batch=min_one_batch,
            skip_empty_batches=up_to_high_watermark,  # consumers; followers copy every batch
        )
        return ReadResult(info, hw, self.log.log_start_offset, leo)

    def update_follower_fetch_state(
        self,
        follower_id: int,
        fetch_offset: int,
        follower_log_start_offset: int,
        leader_end_offset: int,
    ) -> bool:
        """A follower fetched; returns whether the HW or the low watermark (the follower's
        log start offset, which DeleteRecords waits for) may have moved."""
        st = self.replica_state.follower(follower_id)
        if st is None:
            return False
        start_before = st.log_start_offset
        st.update_fetch_state(
            fetch_offset, follower_log_start_offset, leader_end_offset, self._clock.now_ms()
        )
        return self.maybe_increment_high_watermark() or st.log_start_offset != start_before

    def replica_states(self, now_ms: int) -> list[ReplicaState]:
        """On the leader: each replica as the leader sees it (itself first), for
        the admin endpoint. A follower not seen caught up since this
        broker became leader has age -1 (before, only the previous leader knew)."""
        states = [ReplicaState(self.local_broker_id, self.log_end_offset, 0, True)]
        for st in self.replica_state.followers.values():
            caught_up = st.last_known_caught_up_ms
            states.append(
                ReplicaState(
                    st.broker_id,
                    st.log_end_offset,
                    now_ms - caught_up if caught_up else -1,
                    st.broker_id in self.isr,
                )
            )
        return states

    def update_isr(self, isr: tuple[int, ...], zk_version: int) -> bool:
        """A new ISR was written (by us, §8.5); returns whether the HW moved."""
        self.isr = isr
        self.zk_version = zk_version
        return self.maybe_increment_high_watermark()
