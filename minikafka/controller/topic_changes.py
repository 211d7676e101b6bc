"""New topics and partitions added to existing ones: Kafka's `processTopicChange`,
`processPartitionModifications` and `onNewPartitionCreation` (design §8.6).

A topic appears under `/brokers/topics` (CreateTopics), or its assignment gains partitions
(CreatePartitions): the controller learns the assignment and the new partitions get their
first leader and ISR (`partition_state_machine.py`). Each topic's assignment is watched
(Kafka's `PartitionModificationsHandler`) from before it is read, so that no addition is
missed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence

from minikafka.common import TopicPartition, new_kafka_uuid
from minikafka.controller.context import format_partitions
from minikafka.controller.partition_state_machine import PartitionStateMachine
from minikafka.controller.parts import ControllerParts
from minikafka.controller.zk_store import WatchHandle
from minikafka.zk.client import ZkNoNodeError

log = logging.getLogger(__name__)


class TopicChangeProcessor:
    def __init__(
        self,
        parts: ControllerParts,
        partition_state_machine: PartitionStateMachine,
        on_partition_modification: Callable[[str], None],
    ) -> None:
        self._context = parts.context
        self._zk = parts.zk
        self._batch = parts.batch
        self._partition_state_machine = partition_state_machine
        # Called from the watch: only enqueues a PartitionModifications event.
        self._on_partition_modification = on_partition_modification
        # Kafka's partitionModificationsHandlers: one data watch per topic.
        self._partition_modification_watches: dict[str, WatchHandle] = {}

    # --- the per-topic assignment watches -------------------------------------------------------

    async def watch_partition_modifications(self, topics: Iterable[str]) -> None:
        names = sorted(set(topics))
        if not names:
            return
        handles = await self._zk.watch_partition_modifications(
            names, self._on_partition_modification
        )
        for topic, handle in handles.items():
            previous = self._partition_modification_watches.pop(topic, None)
            if previous is not None:
                previous.cancel()
            self._partition_modification_watches[topic] = handle

    def unwatch_partition_modifications(self, topics: Iterable[str]) -> None:
        for topic in topics:
            handle = self._partition_modification_watches.pop(topic, None)
            if handle is not None:
                handle.cancel()

    def unwatch_all_partition_modifications(self) -> None:
        """On resignation: a resigned controller watches no topic."""
        self.unwatch_partition_modifications(list(self._partition_modification_watches))

    # --- events ------------------------------------------------------------------------------------

    async def process_topic_change(self) -> None:
        """Kafka's `processTopicChange`: topics created get their partitions; topics gone
        from ZooKeeper are forgotten."""
        ctx = self._context
        topics = set(await self._zk.get_all_topics())
        new_topics = topics - ctx.all_topics
        for topic in sorted(ctx.all_topics - topics):
            log.info("topic %s disappeared from ZooKeeper", topic)
            ctx.remove_topic(topic)
            self.unwatch_partition_modifications([topic])
        if not new_topics:
            return
        # Watched before their assignments are read, as at failover.
        await self.watch_partition_modifications(new_topics)
        assignments = await self._zk.get_full_assignments(new_topics)
        new_partitions: list[TopicPartition] = []
        for topic, assignment in sorted(assignments.items()):
            ctx.set_assignment(topic, assignment)
            new_partitions += ctx.partitions_for_topic(topic)
        await self.load_topic_ids(assignments)
        log.info(
            "new topics %s: creating partitions %s",
            sorted(assignments),
            format_partitions(new_partitions),
        )
        await self._on_new_partition_creation(new_partitions)

    async def load_topic_ids(self, topics: Iterable[str]) -> None:
        """The topics' ids into the context; a topic written without one (by an older
        tool) gets one, written back with the controller's fence, as Kafka's controller
        does (KIP-516)."""
        ctx = self._context
        for topic, topic_id in sorted((await self._zk.get_topic_ids(topics)).items()):
            if topic_id is None and topic in ctx.partition_assignments:
                topic_id = new_kafka_uuid()
                try:
                    await self._zk.set_topic_assignment(
                        topic, ctx.full_topic_assignment(topic), ctx.epoch_zk_version, topic_id
                    )
                except ZkNoNodeError:
                    continue  # deleted meanwhile: the topic change watch sees to it
                log.info("topic %s had no topic id: gave it %s", topic, topic_id)
            if topic_id is not None:
                ctx.topic_ids[topic] = topic_id

    async def process_partition_modifications(self, topic: str) -> None:
        """Kafka's `processPartitionModifications`: partitions in the topic's assignment that
        the controller does not know yet are new (CreatePartitions wrote them); they take
        the path a new topic's partitions take. Changes to existing partitions' replicas are
        left alone (that would be a reassignment). A topic being deleted gets its
        assignment back without the additions."""
        ctx = self._context
        if topic not in ctx.all_topics:
            log.debug("ignoring a change of unknown topic %s", topic)
            return
        assignment = (await self._zk.get_assignments([topic])).get(topic)
        if assignment is None:
            return  # deleted meanwhile: the topic change watch sees to it
        known = ctx.full_topic_assignment(topic)
        added = {p: replicas for p, replicas in assignment.items() if p not in known}
        if ctx.is_topic_queued_for_deletion(topic):
            if added:
                log.warning(
                    "Skipping adding partitions %s for topic %s since it is currently being "
                    "deleted",
                    ",".join(str(p) for p in sorted(added)),
                    topic,
                )
                # Kafka's restorePartitionReplicaAssignment.
                with contextlib.suppress(ZkNoNodeError):
                    await self._zk.set_topic_assignment(
                        topic, known, ctx.epoch_zk_version, ctx.topic_ids.get(topic)
                    )
            else:
                log.info(
                    "Ignoring partition change of %s during topic deletion as no new partitions "
                    "are added",
                    topic,
                )
            return
        if not added:
            return
        ctx.set_assignment(topic, {**known, **added})
        new_partitions = [TopicPartition(topic, p) for p in sorted(added)]
        log.info(
            "New partitions to be added %s",
            ", ".join(f"{tp} -> {list(added[tp.partition])}" for tp in new_partitions),
        )
        await self._on_new_partition_creation(new_partitions)

    async def _on_new_partition_creation(self, new_partitions: Sequence[TopicPartition]) -> None:
        """Kafka's onNewPartitionCreation: NewPartition -> OnlinePartition (first leader and
        ISR written, LeaderAndIsr to the replicas, UpdateMetadata to every broker)."""
        if new_partitions:
            self._batch.new_batch()
            await self._partition_state_machine.initialize_leader_and_isr(new_partitions)
            self._batch.send_requests_to_brokers(self._context.epoch)


__all__ = ["TopicChangeProcessor"]
