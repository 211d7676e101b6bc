"""The admin's writes (Kafka's AdminZkClient): creating topics, adding partitions, changing
configs and requesting deletions, each checked against the topics that exist."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from minikafka.common import new_kafka_uuid
from minikafka.protocol.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError
from minikafka.zk import codecs, paths
from minikafka.zk.configs import ConfigZnodes
from minikafka.zk.errors import ZkNodeExistsError
from minikafka.zk.topics import TopicZnodes

__all__ = ["AdminZnodes"]


class AdminZnodes(TopicZnodes, ConfigZnodes):
    """Admin requests, which the controller (topics) or the brokers (configs) pick up."""

    def create_topic(
        self,
        topic: str,
        assignment: Mapping[int, Iterable[int]],
        config: Mapping[str, str] | None = None,
    ) -> str:
        """Kafka's AdminZkClient.createTopicWithAssignment: the config first, then the
        assignment with a new topic id, whose creation the controller watches for. Returns
        the topic id."""
        if self.topic_exists(topic):
            raise TopicAlreadyExistsError(f"Topic '{topic}' already exists.")
        if self._stat(paths.delete_topic(topic)) is not None:
            raise TopicAlreadyExistsError(f"Topic '{topic}' is marked for deletion.")
        self.set_topic_config(topic, config or {})
        topic_id = new_kafka_uuid()
        try:
            self._call(
                f"create topic {topic}",
                self._create_async(
                    paths.topic(topic), codecs.encode_topic_assignment(assignment, topic_id)
                ),
            )
        except ZkNodeExistsError:
            raise TopicAlreadyExistsError(f"Topic '{topic}' already exists.") from None
        return topic_id

    def change_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        """Replace a topic's overrides and tell every broker (Kafka's AdminZkClient
        changeTopicConfig): `/config/topics/<t>` first, then a persistent sequential
        `/config/changes/config_change_<seq>` naming `topics/<t>`, which brokers watch."""
        if not self.topic_exists(topic):
            raise UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.")
        self.set_topic_config(topic, config)
        self._notify_config_change(f"topics/{topic}")

    def change_broker_config(self, entity: str, config: Mapping[str, str]) -> None:
        """Replace a broker's (or, entity `<default>`, every broker's) dynamic configs and
        tell the brokers (Kafka's AdminZkClient changeBrokerConfig): the znode, then a
        notification naming `brokers/<entity>`."""
        self._set_entity_config(paths.broker_config(entity), config)
        self._notify_config_change(f"brokers/{entity}")

    def set_topic_assignment(
        self,
        topic: str,
        assignment: Mapping[int, Iterable[int]],
        expected_version: int,
        topic_id: str | None = None,
    ) -> int:
        """Replace the topic's whole assignment if its znode is still at `expected_version`
        (adding partitions: Kafka's AdminZkClient.createPartitionsWithAssignment); returns
        the new version. ZkBadVersionError if someone wrote it meanwhile, ZkNoNodeError if
        the topic is gone. The controller's data watch on the znode picks the change up."""
        path = paths.topic(topic)
        stat = self._call(
            f"set assignment of {topic}",
            self._kazoo().set_async(
                path,
                codecs.encode_topic_assignment(assignment, topic_id),
                version=expected_version,
            ),
        )
        return int(stat.version)

    def request_topic_deletion(self, topic: str) -> bool:
        """Create `/admin/delete_topics/<t>`; False if deletion was already requested."""
        if not self.topic_exists(topic):
            raise UnknownTopicOrPartitionError(f"Topic '{topic}' does not exist.")
        try:
            self._call(
                f"request deletion of {topic}",
                self._create_async(paths.delete_topic(topic), b""),
            )
            return True
        except ZkNodeExistsError:
            return False
