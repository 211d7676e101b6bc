"""Partition reassignment: Kafka's `onPartitionReassignment` and what starts, resumes and
finishes it (KIP-455, Kafka 2.4+ in ZooKeeper mode).

A reassignment comes from AlterPartitionReassignments (the API), from
`/admin/reassign_partitions` (the older path, which the controller watches), or is resumed
from `/brokers/topics/<t>` after a controller failover or when a target replica's broker
comes back. For a partition moving from ORS to TRS (the rules in `rules/reassignment.py`):

1. `/brokers/topics/<t>` gets RS = TRS + ORS with `adding_replicas` and
   `removing_replicas`, then the controller's memory; replicas an earlier target added
   and this one does not want are stopped and deleted.
2. Until every target replica is in the ISR: LeaderAndIsr with leader epoch + 1 and RS to
   every replica (the adding ones create their logs and fetch from the log start), and
   the controller watches the state znode for the leader's ISR changes.
3. Then: the assignment becomes TRS in memory; a leader outside TRS (or dead) is replaced
   by the first live target replica in the ISR, otherwise the leader epoch is bumped so the
   replicas learn the smaller set; the removed replicas leave the ISR and are deleted
   (StopReplica with delete); `/brokers/topics/<t>` gets TRS; the partition leaves
   `/admin/reassign_partitions`; every broker gets UpdateMetadata.

Removing replicas only after all of TRS is in the ISR means a reassignment never shrinks
the ISR below the target's size on its own, and acks=all writes keep flowing throughout.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence

from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.controller.context import PartitionAndReplica
from minikafka.controller.partition_state_machine import (
    PartitionLeaderElectionStrategy,
    PartitionStateMachine,
)
from minikafka.controller.parts import ControllerParts
from minikafka.controller.replica_state_machine import ReplicaStateMachine
from minikafka.controller.zk_store import WatchHandle
from minikafka.protocol.errors import ErrorCode
from minikafka.rules.reassignment import (
    ReplicaAssignment,
    is_reassignment_complete,
    validate_target_replicas,
)
from minikafka.zk.client import ControllerMovedError, ZkNoNodeError

log = logging.getLogger(__name__)

# An error code and message per partition, as AlterPartitionReassignments answers.
ApiError = tuple[ErrorCode, str | None]
NONE: ApiError = (ErrorCode.NONE, None)
# Kafka's default messages of these errors (`Errors.java`).
NO_REASSIGNMENT_IN_PROGRESS: ApiError = (
    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
    "No partition reassignment is in progress.",
)
PARTITION_DOES_NOT_EXIST: ApiError = (
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    "The partition does not exist.",
)


class PartitionReassignmentProcessor:
    def __init__(
        self,
        parts: ControllerParts,
        partition_state_machine: PartitionStateMachine,
        replica_state_machine: ReplicaStateMachine,
        on_isr_change: Callable[[TopicPartition], None],
        resume_deletion_for_topics: Callable[[set[str]], Awaitable[None]],
    ) -> None:
        self._context = parts.context
        self._zk = parts.zk
        self._batch = parts.batch
        self._partition_state_machine = partition_state_machine
        self._replica_state_machine = replica_state_machine
        # Called from the state znode's watch: only enqueues an event.
        self._on_isr_change = on_isr_change
        self._resume_deletion_for_topics = resume_deletion_for_topics
        # Kafka's PartitionReassignmentIsrChangeHandler, one per partition being moved.
        self._isr_watches: dict[TopicPartition, WatchHandle] = {}

    # --- what starts reassignments ----------------------------------------------------------

    async def process_api_reassignment(
        self, reassignments: Mapping[TopicPartition, Sequence[int] | None]
    ) -> dict[TopicPartition, ApiError]:
        """Kafka's `processApiPartitionReassignment`: a target list moves the partition (a
        new target replaces the one it is moving to), None cancels its move."""
        results, to_reassign = self._build_reassignments(reassignments)
        # The latest reassignment, by the API or through ZooKeeper, takes precedence.
        await self._maybe_remove_from_zk_reassignment(lambda tp, _: tp in to_reassign)
        results.update(await self._maybe_trigger_partition_reassignment(to_reassign))
        return results

    async def process_zk_partition_reassignment(self) -> set[TopicPartition]:
        """Kafka's `processZkPartitionReassignment`: start what `/admin/reassign_partitions`
        asks; the partitions that cannot be moved leave the znode. Returns those started.

        Unlike Kafka, the targets are validated as the API's are (Kafka leaves that to the
        tool), so that a hand-written znode naming a dead broker does not hang a partition
        in a reassignment that can never finish."""
        requested = await self._zk.get_partition_reassignment()
        if not requested:
            return set()
        results, to_reassign = self._build_reassignments(requested)
        results.update(await self._maybe_trigger_partition_reassignment(to_reassign))
        failed = {tp: e for tp, e in results.items() if e[0] != ErrorCode.NONE}
        if failed:
            log.warning(
                "Failed reassignment through zk with the following errors: %s",
                ", ".join(
                    f"{tp}: {code.name} {message or ''}" for tp, (code, message) in failed.items()
                ),
            )
            await self._maybe_remove_from_zk_reassignment(lambda tp, _: tp in failed)
        return {tp for tp, e in results.items() if e[0] == ErrorCode.NONE}

    async def initialize(self) -> None:
        """Kafka's `initializePartitionReassignments`, at failover: reassignments written to
        ZooKeeper meanwhile, then the moves the previous controller left unfinished."""
        resumed = await self.process_zk_partition_reassignment()
        await self.maybe_resume_reassignments(lambda tp, _: tp not in resumed)

    async def maybe_resume_reassignments(
        self, should_resume: Callable[[TopicPartition, ReplicaAssignment], bool]
    ) -> None:
        """Kafka's `maybeResumeReassignments`: go on with moves (after a failover, or when
        a target replica's broker is back)."""
        ctx = self._context
        for tp in ctx.sorted_partitions(ctx.partitions_being_reassigned):
            current = ctx.full_replica_assignment(tp)
            if should_resume(tp, current):
                await self.on_partition_reassignment(tp, current)

    async def process_isr_change(self, tp: TopicPartition) -> None:
        """Kafka's `processPartitionReassignmentIsrChange`: a moving partition's leader
        wrote a new ISR; finish the move if every target replica is in it."""
        ctx = self._context
        if tp not in ctx.partitions_being_reassigned:
            return
        reassignment = ctx.full_replica_assignment(tp)
        if await self._is_reassignment_complete(tp, reassignment):
            log.info(
                "Target replicas %s have all caught up with the leader for reassigning "
                "partition %s",
                list(reassignment.target_replicas),
                tp,
            )
            await self.on_partition_reassignment(tp, reassignment)

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        """Kafka's `processListPartitionReassignments`: the named partitions (or all) that
        are moving, with their replicas, adding and removing replicas."""
        ctx = self._context
        wanted = ctx.partitions_being_reassigned if partitions is None else set(partitions)
        out: dict[TopicPartition, ReplicaAssignment] = {}
        for tp in ctx.sorted_partitions(wanted):
            assignment = ctx.full_replica_assignment(tp)
            if assignment.is_being_reassigned:
                out[tp] = assignment
        return out

    def topics_being_reassigned(self) -> set[str]:
        return {tp.topic for tp in self._context.partitions_being_reassigned}

    def unwatch_all(self) -> None:
        """On resignation."""
        for handle in self._isr_watches.values():
            handle.cancel()
        self._isr_watches.clear()

    # --- the algorithm ----------------------------------------------------------------------

    def _build_reassignments(
        self, requested: Mapping[TopicPartition, Sequence[int] | None]
    ) -> tuple[dict[TopicPartition, ApiError], dict[TopicPartition, ReplicaAssignment]]:
        """Kafka's `validateReplicas` and `maybeBuildReassignment` over a request: the
        errors of the refused partitions, and the moves of the others."""
        ctx = self._context
        results: dict[TopicPartition, ApiError] = {}
        to_reassign: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, target in requested.items():
            if target is not None:
                invalid = validate_target_replicas(
                    ctx.full_replica_assignment(tp), target, ctx.live_broker_ids
                )
                if invalid is not None:
                    results[tp] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT, invalid.message)
                    continue
            built = self._maybe_build_reassignment(tp, target)
            if built is None:
                results[tp] = NO_REASSIGNMENT_IN_PROGRESS
            else:
                to_reassign[tp] = built
        return results, to_reassign

    def _maybe_build_reassignment(
        self, tp: TopicPartition, target: Sequence[int] | None
    ) -> ReplicaAssignment | None:
        current = self._context.full_replica_assignment(tp)
        if current.is_being_reassigned:
            return current.reassign_to(current.origin_replicas if target is None else target)
        return None if target is None else current.reassign_to(target)

    async def _maybe_trigger_partition_reassignment(
        self, reassignments: Mapping[TopicPartition, ReplicaAssignment]
    ) -> dict[TopicPartition, ApiError]:
        ctx = self._context
        results: dict[TopicPartition, ApiError] = {}
        for tp, reassignment in reassignments.items():
            if ctx.is_topic_queued_for_deletion(tp.topic):
                log.info("Skipping reassignment of %s since the topic is being deleted", tp)
                results[tp] = PARTITION_DOES_NOT_EXIST
            elif not ctx.partition_replicas(tp):
                results[tp] = PARTITION_DOES_NOT_EXIST
            else:
                try:
                    await self.on_partition_reassignment(tp, reassignment)
                    results[tp] = NONE
                except ControllerMovedError:
                    raise
                except Exception:
                    log.exception("Error completing reassignment of partition %s", tp)
                    results[tp] = (ErrorCode.UNKNOWN_SERVER_ERROR, None)
        return results

    async def on_partition_reassignment(
        self, tp: TopicPartition, reassignment: ReplicaAssignment
    ) -> None:
        """Kafka's `onPartitionReassignment` (the steps in this module's docstring)."""
        ctx = self._context
        await self._update_current_reassignment(tp, reassignment)
        if not await self._is_reassignment_complete(tp, reassignment):
            log.info(
                "reassigning %s: replicas %s, adding %s, removing %s",
                tp,
                list(reassignment.replicas),
                list(reassignment.adding),
                list(reassignment.removing),
            )
            await self._update_leader_epoch_and_send_request(tp, reassignment)
            return
        completed = ReplicaAssignment.of(reassignment.target_replicas)
        ctx.update_full_replica_assignment(tp, completed)
        await self._move_reassigned_partition_leader_if_required(tp, completed)
        await self._stop_removed_replicas(tp, reassignment.removing)
        await self._write_assignment(tp, completed)
        await self._remove_partition_from_reassigning_partitions(tp, completed)
        # The election and the removals changed replicas and ISR: everyone learns them.
        self._batch.send_update_metadata_request(
            ctx.live_or_shutting_down_broker_ids, ctx.epoch, [tp]
        )
        log.info("reassignment of %s completed: replicas %s", tp, list(completed.replicas))
        if tp.topic not in self.topics_being_reassigned():
            await self._resume_deletion_for_topics({tp.topic})

    async def _update_current_reassignment(
        self, tp: TopicPartition, reassignment: ReplicaAssignment
    ) -> None:
        ctx = self._context
        current = ctx.full_replica_assignment(tp)
        if current != reassignment:
            await self._write_assignment(tp, reassignment)
            ctx.update_full_replica_assignment(tp, reassignment)
            # A new target may drop replicas the previous one was adding.
            unneeded = [r for r in current.replicas if r not in reassignment.replicas]
            if unneeded:
                await self._stop_removed_replicas(tp, unneeded)
        if tp not in self._isr_watches:
            self._isr_watches[tp] = await self._zk.watch_partition_state(
                tp, lambda: self._on_isr_change(tp)
            )
        ctx.partitions_being_reassigned.add(tp)

    async def _is_reassignment_complete(
        self, tp: TopicPartition, reassignment: ReplicaAssignment
    ) -> bool:
        """Kafka's `isReassignmentComplete`, on the state znode as it is now."""
        if not reassignment.is_being_reassigned:
            return True
        state = (await self._zk.get_partition_states([tp])).get(tp)
        if state is not None and state.controller_epoch <= self._context.epoch:
            self._context.partition_leadership[tp] = state
        return state is not None and is_reassignment_complete(reassignment, state.isr)

    async def _write_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        """`/brokers/topics/<t>` with this partition's assignment (fenced)."""
        ctx = self._context
        topic_assignment = {**ctx.full_topic_assignment(tp.topic), tp.partition: assignment}
        try:
            await self._zk.set_topic_assignment(
                tp.topic, topic_assignment, ctx.epoch_zk_version, ctx.topic_ids.get(tp.topic)
            )
        except ZkNoNodeError:
            log.warning("cannot record the reassignment of %s: its topic is gone", tp)

    async def _update_leader_epoch(self, tp: TopicPartition) -> LeaderAndIsr | None:
        """Kafka's `updateLeaderEpoch`: the same leader and ISR with leader epoch + 1, so
        that the replicas take the new replica set; None if the state was written by a newer
        controller or is gone."""
        ctx = self._context
        while True:
            state = (await self._zk.get_partition_states([tp])).get(tp)
            if state is None:
                return None
            if state.controller_epoch > ctx.epoch:
                log.error(
                    "aborted the leader epoch update of %s: its state was written by controller "
                    "epoch %d, ours is %d",
                    tp,
                    state.controller_epoch,
                    ctx.epoch,
                )
                return None
            new = LeaderAndIsr(
                state.leader, state.leader_epoch + 1, state.isr, ctx.epoch, state.zk_version
            )
            done, _ = await self._zk.update_partition_states(
                {tp: (new, state.zk_version)}, ctx.epoch_zk_version
            )
            if tp in done:
                ctx.partition_leadership[tp] = done[tp]
                return done[tp]

    async def _update_leader_epoch_and_send_request(
        self, tp: TopicPartition, assignment: ReplicaAssignment
    ) -> None:
        ctx = self._context
        updated = await self._update_leader_epoch(tp)
        if updated is None:
            log.error(
                "Failed to send LeaderAndIsr request with new assignment %s to the replicas of "
                "%s: its leader epoch could not be updated",
                list(assignment.replicas),
                tp,
            )
            return
        self._batch.new_batch()
        self._batch.add_leader_and_isr_request_for_brokers(
            assignment.origin_replicas, tp, updated, assignment.replicas
        )
        # The adding replicas create their logs (is_new), empty, and fetch from the start.
        self._batch.add_leader_and_isr_request_for_brokers(
            assignment.adding, tp, updated, assignment.replicas, is_new=True
        )
        self._batch.send_requests_to_brokers(ctx.epoch)

    async def _move_reassigned_partition_leader_if_required(
        self, tp: TopicPartition, completed: ReplicaAssignment
    ) -> None:
        ctx = self._context
        leadership = ctx.partition_leadership.get(tp)
        leader = -1 if leadership is None else leadership.leader
        if leader in completed.replicas and ctx.is_replica_online(leader):
            # The leader stays: a new leader epoch carries the smaller replica set.
            await self._update_leader_epoch_and_send_request(tp, completed)
            return
        log.info(
            "Leader %d for partition %s being reassigned is not in the new list of replicas "
            "%s, or is dead. Re-electing leader",
            leader,
            tp,
            list(completed.replicas),
        )
        self._batch.new_batch()
        await self._partition_state_machine.elect_leaders(
            [tp], PartitionLeaderElectionStrategy.REASSIGN
        )
        self._batch.send_requests_to_brokers(ctx.epoch)

    async def _stop_removed_replicas(self, tp: TopicPartition, removed: Sequence[int]) -> None:
        """Kafka's `stopRemovedReplicasOfReassignedPartition`: OfflineReplica (out of the
        ISR, the others told), then ReplicaDeletionStarted (StopReplica with delete)."""
        if not removed:
            return
        ctx = self._context
        self._batch.new_batch()
        await self._replica_state_machine.offline_replicas(
            [PartitionAndReplica(tp, r) for r in removed]
        )
        for r in removed:
            self._batch.add_stop_replica_request_for_brokers([r], tp, True)
        self._batch.send_requests_to_brokers(ctx.epoch)

    async def _remove_partition_from_reassigning_partitions(
        self, tp: TopicPartition, completed: ReplicaAssignment
    ) -> None:
        handle = self._isr_watches.pop(tp, None)
        if handle is not None:
            handle.cancel()
        await self._maybe_remove_from_zk_reassignment(
            lambda t, replicas: t == tp and tuple(replicas) == completed.replicas
        )
        self._context.partitions_being_reassigned.discard(tp)

    async def _maybe_remove_from_zk_reassignment(
        self, should_remove: Callable[[TopicPartition, Sequence[int]], bool]
    ) -> None:
        """Kafka's `maybeRemoveFromZkReassignment`: drop partitions from
        `/admin/reassign_partitions`; delete it when none is left."""
        requested = await self._zk.get_partition_reassignment()
        if not requested:
            return
        remaining = {tp: r for tp, r in requested.items() if not should_remove(tp, r)}
        if len(remaining) == len(requested):
            return
        if not remaining:
            log.info(
                "No more partitions need to be reassigned: deleting /admin/reassign_partitions"
            )
        await self._zk.set_or_delete_partition_reassignment(
            remaining, self._context.epoch_zk_version
        )


__all__ = ["PartitionReassignmentProcessor"]
