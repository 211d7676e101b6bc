"""Topics in ZooKeeper: `/brokers/topics/<t>` (the assignment, the topic id), its
partitions, the deletion markers (`/admin/delete_topics/<t>`), and the controller's fenced
writes of them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from minikafka.rules.reassignment import ReplicaAssignment
from minikafka.zk import codecs, paths
from minikafka.zk.errors import ZkError, ZkNoNodeError, ZkNotEmptyError
from minikafka.zk.multi import Op
from minikafka.zk.session import ZkSession

__all__ = ["TopicZNode", "TopicZnodes"]


class TopicZNode(NamedTuple):
    """`/brokers/topics/<t>` as read: the assignment, the znode's version, the topic id."""

    assignment: dict[int, tuple[int, ...]]
    version: int
    topic_id: str | None
    # Partitions a reassignment is moving (KIP-455): adding partitions waits for them.
    reassigning: tuple[int, ...] = ()


class TopicZnodes(ZkSession):
    """Reading topics and assignments; the controller's writes and deletions of them."""

    # --- topics ------------------------------------------------------------------------

    def topic_exists(self, topic: str) -> bool:
        return self._stat(paths.topic(topic)) is not None

    def get_all_topics(self) -> list[str]:
        return sorted(self._children(paths.topics()))

    def get_assignment(self, topic: str) -> dict[int, tuple[int, ...]] | None:
        got = self._get(paths.topic(topic))
        return None if got is None else codecs.decode_topic_assignment(topic, got[0])

    def get_assignment_and_version(self, topic: str) -> TopicZNode | None:
        """The assignment with the znode's version (for a conditional `set_topic_assignment`)
        and the topic id; None if the topic does not exist."""
        got = self._get(paths.topic(topic))
        if got is None:
            return None
        data, stat = got
        full = codecs.decode_topic_full_assignment(topic, data)
        return TopicZNode(
            {p: a.replicas for p, a in full.items()},
            int(stat.version),
            codecs.decode_topic_id(topic, data),
            tuple(p for p, a in full.items() if a.is_being_reassigned),
        )

    def get_topic_ids(self, topics: Iterable[str]) -> dict[str, str | None]:
        """The topic ids of the topics that exist (None: written without one)."""
        got = self._get_many({t: paths.topic(t) for t in topics})
        return {t: codecs.decode_topic_id(t, data) for t, (data, _) in got.items()}

    def set_topic_assignment_as_controller(
        self,
        topic: str,
        assignment: Mapping[int, Iterable[int] | ReplicaAssignment],
        controller_epoch_zk_version: int,
        topic_id: str | None = None,
    ) -> None:
        """The controller's fenced overwrite of a topic's assignment (Kafka's
        setTopicAssignment with the controller epoch's zk version): it restores the
        assignment of a topic being deleted that someone added partitions to, and gives a
        topic written without an id its id, and records reassignments (KIP-455)."""
        op = Op("set", paths.topic(topic), codecs.encode_topic_assignment(assignment, topic_id))
        self._multi([op], controller_epoch_zk_version, f"restore assignment of {topic}")

    def get_assignments(self, topics: Iterable[str]) -> dict[str, dict[int, tuple[int, ...]]]:
        """Assignments of the topics that exist (one pipelined round trip)."""
        got = self._get_many({t: paths.topic(t) for t in topics})
        return {t: codecs.decode_topic_assignment(t, data) for t, (data, _) in got.items()}

    def get_full_assignments(
        self, topics: Iterable[str]
    ) -> dict[str, dict[int, ReplicaAssignment]]:
        """Assignments with their reassignment state (KIP-455's adding and removing
        replicas), of the topics that exist."""
        got = self._get_many({t: paths.topic(t) for t in topics})
        return {t: codecs.decode_topic_full_assignment(t, data) for t, (data, _) in got.items()}

    def get_partition_ids(self, topic: str) -> list[int]:
        """Partitions that have a `partitions/<p>` znode (created by the controller)."""
        return sorted(self._int_children(paths.partitions(topic), missing_ok=True))

    # --- deletion ----------------------------------------------------------------------

    def get_topic_deletions(self) -> list[str]:
        return sorted(self._children(paths.delete_topics()))

    def delete_topic_deletion_requests(
        self, topics: Iterable[str], controller_epoch_zk_version: int
    ) -> None:
        """Drop deletion requests (e.g. for topics that do not exist), fenced."""
        ops = [Op("delete", paths.delete_topic(t)) for t in topics]
        self._fenced_delete_existing(ops, controller_epoch_zk_version)

    def delete_topic_znodes(self, topic: str, controller_epoch_zk_version: int) -> None:
        """Remove a deleted topic's znodes, fenced: `/brokers/topics/<t>` with its
        partitions, `/config/topics/<t>`, and last `/admin/delete_topics/<t>`.

        One multi when it fits, else (a topic of thousands of partitions would exceed
        jute.maxbuffer) several, children before parents and the deletion request last: a
        controller that fails over midway finds the request and the rest of the tree, and
        deletes them again (Kafka deletes these znodes one by one)."""
        for _ in range(5):
            ops: list[Op] = []
            for root in (paths.topic(topic), paths.topic_config(topic), paths.delete_topic(topic)):
                ops += [Op("delete", p) for p in self._subtree_leaves_first(root)]
            if not ops:
                return
            try:
                for chunk in self._chunks(ops):
                    self._multi(chunk, controller_epoch_zk_version, f"delete topic {topic}")
                return
            except (ZkNoNodeError, ZkNotEmptyError):
                continue  # the tree changed while we listed it: list again
        raise ZkError(f"delete topic {topic}: its znodes kept changing; giving up")
