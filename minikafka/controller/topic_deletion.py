"""Topic deletion: Kafka's `TopicDeletionManager`.

An admin's DeleteTopics writes `/admin/delete_topics/<topic>`; the controller queues the
topic, tells every broker to forget it (UpdateMetadata), and sends each replica
StopReplica(delete_partition=True). When every replica has confirmed, the topic's znodes go
and the controller forgets it. A replica on a dead broker, or one whose deletion failed,
makes the topic ineligible: it waits until the broker is back, and is then asked again.

The deletion progress (queued, started, ineligible topics; replica deletion states) lives in
the `ControllerContext`, as in Kafka 2.4+: the rest of the controller skips topics being
deleted, and UpdateMetadata leaves them out.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Protocol

from minikafka.common import TopicPartition
from minikafka.controller.context import (
    PartitionAndReplica,
    ReplicaDeletionState,
    format_partitions,
)
from minikafka.controller.events import TopicDeletionStopReplicaResponseReceived
from minikafka.controller.parts import ControllerParts
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.rpc.messages import StopReplicaResponse

log = logging.getLogger(__name__)


class DeletionClient(Protocol):
    """What topic deletion asks of the rest of the controller (Kafka's `DeletionClient`)."""

    def mute_partition_modifications(self, topic: str) -> None:
        """Stop watching the topic's assignment: a deleted topic's partitions are not new."""
        ...

    def send_metadata_update(self, deleted_topics: Iterable[str]) -> None:
        """UpdateMetadata to every broker, which drops `deleted_topics` from its metadata."""
        ...


class TopicDeletionManager:
    def __init__(self, parts: ControllerParts, client: DeletionClient) -> None:
        self._current_config = parts.current_config
        self._context = parts.context
        self._zk = parts.zk
        self._batch = parts.batch
        self._client = client

    @property
    def is_delete_topic_enabled(self) -> bool:
        return self._current_config().delete_topic_enable

    async def initialize(self) -> None:
        """Kafka's `fetchTopicDeletionsInProgress` + `TopicDeletionManager.init`: at
        failover, queue the deletions requested meanwhile (or drop them if disabled)."""
        ctx = self._context
        requested = set(await self._zk.get_topic_deletions())
        if not self.is_delete_topic_enabled:
            if requested:
                log.info(
                    "delete.topic.enable is false: dropping deletion requests %s", sorted(requested)
                )
                await self._zk.delete_topic_deletion_requests(
                    sorted(requested), ctx.epoch_zk_version
                )
            return
        ctx.topics_to_be_deleted |= requested
        # Deletion needs every replica to confirm; one on a dead broker holds it up.
        ctx.topics_ineligible_for_deletion |= {
            topic
            for topic in requested
            if any(not ctx.is_replica_online(r.replica) for r in ctx.replicas_for_topic(topic))
        }
        self._wait_for_reassignments(requested)

    async def process_topic_deletion(self) -> None:
        """Kafka's `processTopicDeletion`: the children of `/admin/delete_topics` changed."""
        ctx = self._context
        requested = set(await self._zk.get_topic_deletions())
        non_existent = requested - ctx.all_topics
        if non_existent:
            log.info("dropping deletion requests of unknown topics %s", sorted(non_existent))
            await self._zk.delete_topic_deletion_requests(
                sorted(non_existent), ctx.epoch_zk_version
            )
        requested -= non_existent
        if not requested:
            return
        if not self.is_delete_topic_enabled:
            log.info(
                "delete.topic.enable is false: dropping deletion requests %s", sorted(requested)
            )
            await self._zk.delete_topic_deletion_requests(sorted(requested), ctx.epoch_zk_version)
            return
        new = requested - ctx.topics_to_be_deleted
        if new:
            log.info("topics queued for deletion: %s", sorted(new))
            ctx.topics_to_be_deleted |= new
            self._wait_for_reassignments(new)
            await self.resume_deletions()

    def _wait_for_reassignments(self, topics: Iterable[str]) -> None:
        """A topic with partitions being moved is deleted once the moves finish (Kafka marks
        it ineligible, "topic reassignment in progress"; the reassignment resumes it)."""
        ctx = self._context
        moving = {tp.topic for tp in ctx.partitions_being_reassigned} & set(topics)
        if moving:
            log.info("deletion of topics %s waits for their reassignments", sorted(moving))
            ctx.topics_ineligible_for_deletion |= moving

    async def resume_deletion_for_topics(self, topics: Iterable[str]) -> None:
        """Kafka's `resumeDeletionForTopics`: the brokers the topics waited for are back."""
        self._context.topics_ineligible_for_deletion -= set(topics)
        await self.resume_deletions()

    async def resume_deletions(self) -> None:
        """Kafka's `resumeDeletions`: finish, retry or start the deletions that can progress."""
        ctx = self._context
        if not self.is_delete_topic_enabled:
            return
        retry: set[str] = set()
        eligible: set[str] = set()
        for topic in sorted(ctx.topics_to_be_deleted):
            if ctx.are_all_replicas_in_state(topic, ReplicaDeletionState.SUCCESSFUL):
                await self._complete_delete_topic(topic)
                continue
            if not ctx.is_any_replica_in_state(
                topic, ReplicaDeletionState.STARTED
            ) and ctx.is_any_replica_in_state(topic, ReplicaDeletionState.INELIGIBLE):
                retry.add(topic)
            if ctx.is_topic_eligible_for_deletion(topic):
                eligible.add(topic)
        for topic in retry:
            # Failed replicas become plain offline replicas again: asked anew once the topic
            # is eligible (its brokers are back).
            for r in ctx.replicas_for_topic(topic):
                if ctx.replica_deletion_states.get(r) is ReplicaDeletionState.INELIGIBLE:
                    del ctx.replica_deletion_states[r]
        if eligible:
            await self._on_topic_deletion(eligible)

    async def _on_topic_deletion(self, topics: set[str]) -> None:
        ctx = self._context
        started = topics - ctx.topics_with_deletion_started
        if started:
            log.info("deleting topics %s", sorted(started))
            ctx.topics_with_deletion_started |= started
        # Brokers drop the topics from their metadata now (Kafka: leader -2 for their partitions).
        self._client.send_metadata_update(topics)
        self._batch.new_batch()
        for topic in sorted(topics):
            # Kafka's startReplicaDeletion.
            waiting_for_dead_broker = False
            for r in ctx.replicas_for_topic(topic):
                if ctx.replica_deletion_states.get(r) is ReplicaDeletionState.SUCCESSFUL:
                    continue
                if ctx.is_replica_online(r.replica):
                    ctx.replica_deletion_states[r] = ReplicaDeletionState.STARTED
                    self._batch.add_stop_replica_request_for_brokers([r.replica], r.tp, True)
                else:
                    ctx.replica_deletion_states[r] = ReplicaDeletionState.INELIGIBLE
                    waiting_for_dead_broker = True
            if waiting_for_dead_broker:
                log.info("deletion of topic %s waits for replicas on dead brokers", topic)
                ctx.topics_ineligible_for_deletion.add(topic)
        self._batch.send_requests_to_brokers(ctx.epoch)

    async def process_stop_replica_response(
        self, event: TopicDeletionStopReplicaResponseReceived
    ) -> None:
        """Kafka's `processTopicDeletionStopReplicaResponseReceived`: the replicas that
        deleted their partition are done, those that failed make their topic wait."""
        ctx = self._context
        if event.controller_epoch != ctx.epoch:
            return  # answers a request of an earlier controllership
        response = event.response
        errors: dict[TopicPartition, int]
        if isinstance(response, StopReplicaResponse) and response.error_code == ErrorCode.NONE:
            errors = {
                TopicPartition(e.topic, e.partition): e.error_code
                for e in response.partition_errors
            }
        else:
            # The whole request failed.
            if isinstance(response, StopReplicaResponse):
                code = response.error_code
            elif isinstance(response, KafkaError):
                code = int(response.code)
            else:
                code = int(ErrorCode.UNKNOWN_SERVER_ERROR)
            errors = dict.fromkeys(event.partitions, code)
        succeeded: list[PartitionAndReplica] = []
        failed: list[PartitionAndReplica] = []
        for tp in event.partitions:
            r = PartitionAndReplica(tp, event.broker_id)
            if ctx.replica_deletion_states.get(r) is not ReplicaDeletionState.STARTED:
                continue
            (failed if errors.get(tp, ErrorCode.NONE) != ErrorCode.NONE else succeeded).append(r)
        for r in succeeded:
            ctx.replica_deletion_states[r] = ReplicaDeletionState.SUCCESSFUL
        if failed:
            log.warning(
                "broker %d failed to delete %s",
                event.broker_id,
                format_partitions(r.tp for r in failed),
            )
            await self.fail_replica_deletion(failed)
        elif succeeded:
            await self.resume_deletions()

    async def fail_replica_deletion(self, replicas: Sequence[PartitionAndReplica]) -> None:
        """Kafka's `failReplicaDeletion`: the topic waits until the broker comes back."""
        ctx = self._context
        topics: set[str] = set()
        for r in replicas:
            if not ctx.is_topic_queued_for_deletion(r.tp.topic):
                continue
            if ctx.replica_deletion_states.get(r) is not ReplicaDeletionState.SUCCESSFUL:
                ctx.replica_deletion_states[r] = ReplicaDeletionState.INELIGIBLE
                topics.add(r.tp.topic)
        if topics:
            ctx.topics_ineligible_for_deletion |= topics
            await self.resume_deletions()

    async def _complete_delete_topic(self, topic: str) -> None:
        """Kafka's `completeDeleteTopic`: every replica confirmed; the topic's znodes go."""
        ctx = self._context
        await self._zk.delete_topic_znodes(topic, ctx.epoch_zk_version)
        ctx.remove_topic(topic)
        self._client.mute_partition_modifications(topic)
        log.info("topic %s deleted", topic)
        self._client.send_metadata_update([topic])


__all__ = ["DeletionClient", "TopicDeletionManager"]
