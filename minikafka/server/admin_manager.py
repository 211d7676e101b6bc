"""Topic and config administration, as Kafka's `ZkAdminManager`: creating and deleting
topics, adding partitions, describing and changing configs.

Each request is checked here and written to ZooKeeper through `AdminZkStore`; the
controller's watches carry it out (it elects the new partitions' leaders, deletes the
topic's replicas), and the answer waits, as Kafka's DelayedCreatePartitions and
DelayedDeleteTopics do, until this broker's metadata shows the change or the request's
timeout passes (then REQUEST_TIMED_OUT, though the change still happens). Kafka's API
handlers (server/kafka_api/topics.py, configs.py) and the broker's own internal topics
(`__consumer_offsets`, auto-created topics) call it.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol

from minikafka.config.broker import BrokerConfig
from minikafka.config.dynamic import (
    AlterableConfig,
    BrokerConfigLayers,
    DescribedConfig,
    ResourceType,
    altered_broker_configs,
    altered_topic_overrides,
    broker_entity,
    describe_broker,
    describe_broker_default,
    describe_topic,
    replaced_broker_configs,
    replaced_topic_overrides,
)
from minikafka.controller.assignment import (
    AdminOperationError,
    assign_replicas_to_brokers,
    new_partitions_assignment,
    validate_manual_assignment,
)
from minikafka.protocol.errors import (
    ErrorCode,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    KafkaError,
    ReassignmentInProgressError,
    RequestTimedOutError,
    TopicDeletionDisabledError,
    UnknownTopicOrPartitionError,
)
from minikafka.server.admin_zk_store import AdminZkStore
from minikafka.zk.client import ZkBadVersionError, ZkError, ZkNoNodeError

__all__ = [
    "AdminManager",
    "ControllerView",
    "MetadataView",
    "NewPartitions",
    "NewTopic",
    "TopicResult",
    "validate_topic_name",
]

log = logging.getLogger(__name__)

# CreatePartitions re-reads and re-validates a topic whose assignment changed between its
# read and its conditional write (another admin), at most this many times.
CREATE_PARTITIONS_ATTEMPTS: Final = 5

# Kafka's AdminZkClient.getBrokerMetadatas, for kafka-topics.sh's --zookeeper users.
MIXED_RACKS_ENFORCED: Final = (
    "Not all brokers have rack information. Add --disable-rack-aware in command line to make "
    "replica assignment without rack information."
)

_LEGAL_TOPIC: Final = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


def validate_topic_name(name: str) -> None:
    """Kafka's Topic.validate."""
    if name in (".", ".."):
        raise InvalidTopicError(f"Topic name cannot be '{name}'")
    if not _LEGAL_TOPIC.match(name):
        raise InvalidTopicError(
            f"Topic name '{name}' is illegal: it must be 1-249 characters of "
            "ASCII alphanumerics, '.', '_' and '-'"
        )


def _is_legal_topic_name(name: str) -> bool:
    return bool(_LEGAL_TOPIC.match(name)) and name not in (".", "..")


@dataclass(frozen=True)
class NewTopic:
    """A topic to create: a partition count and replication factor (-1: the broker's
    defaults), or a manual assignment (partition -> broker ids)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: Mapping[int, list[int]] | None = None
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NewPartitions:
    """Partitions to add to a topic: its new total, and optionally where the added ones go
    (one broker list per added partition)."""

    name: str
    count: int
    assignments: list[list[int]] | None = None


@dataclass(frozen=True)
class TopicResult:
    name: str
    error_code: int
    error_message: str | None = None


class MetadataView(Protocol):
    """What the admin manager waits on: this broker's metadata cache."""

    def all_partitions_have_leaders(self, topic: str, partitions: int) -> bool: ...

    def contains_topic(self, topic: str) -> bool: ...

    async def wait_for_change(self, timeout_s: float) -> bool:
        """Until the metadata changes or `timeout_s` passes (whether it changed)."""
        ...


class ControllerView(Protocol):
    """What the admin manager asks the controller (when this broker runs the active one)."""

    @property
    def is_active(self) -> bool: ...

    def is_topic_queued_for_deletion(self, topic: str) -> bool: ...


class AdminManager:
    def __init__(
        self,
        store: AdminZkStore,
        metadata: MetadataView,
        controller: ControllerView | None,
        config: Callable[[], BrokerConfig],
        config_layers: Callable[[], BrokerConfigLayers],
    ) -> None:
        self.store = store
        self.metadata = metadata
        self.controller = controller
        # Getters: the broker puts new settings in force while running (dynamic configs).
        self._config = config
        self._config_layers = config_layers

    @property
    def config(self) -> BrokerConfig:
        return self._config()

    # --- topics --------------------------------------------------------------------------

    async def create_topics(
        self, topics: list[NewTopic], timeout_ms: int, validate_only: bool
    ) -> list[TopicResult]:
        """Kafka's createTopics: each topic's result, in the request's order."""
        results: dict[str, TopicResult] = {}
        created: dict[str, int] = {}
        seen: set[str] = set()
        for t in topics:
            if t.name in seen:
                results[t.name] = TopicResult(
                    t.name, int(ErrorCode.INVALID_REQUEST), "Duplicate topic in request."
                )
                continue
            seen.add(t.name)
            try:
                partitions = await self._create_topic(t, validate_only=validate_only)
                results[t.name] = TopicResult(t.name, int(ErrorCode.NONE))
                if not validate_only:
                    created[t.name] = partitions
            except AdminOperationError as e:
                log.error("Error processing create topic request %s: %s", t.name, e.message)
                results[t.name] = TopicResult(t.name, int(e.code))
            except KafkaError as e:
                results[t.name] = TopicResult(t.name, int(e.code), e.message)
        await self._await_leaders(
            created,
            timeout_ms,
            results,
            lambda name, n: (
                f"topic {name} was created but not all {n} partitions have "
                f"leaders after {timeout_ms} ms"
            ),
        )
        return [results[t.name] for t in topics if t.name in results]

    async def create_topic(self, t: NewTopic) -> int:
        """Create a topic as CreateTopics does (the broker's own internal topics); its
        partition count."""
        return await self._create_topic(t, validate_only=False)

    async def topic_exists(self, name: str) -> bool:
        return await self.store.topic_exists(name)

    async def _create_topic(self, t: NewTopic, *, validate_only: bool) -> int:
        validate_topic_name(t.name)
        config = self.config
        # Kafka's createTopics takes the live brokers from its metadata cache; the same
        # registrations, read here from ZooKeeper, with their racks.
        racks = await self.store.get_broker_racks()
        live = list(racks)
        config.log_config().with_overrides(t.configs).validate()
        if t.assignments:
            if t.num_partitions != -1 or t.replication_factor != -1:
                raise InvalidRequestError(
                    "Both numPartitions or replicationFactor and replicasAssignments were set."
                )
            assignment = {p: tuple(r) for p, r in t.assignments.items()}
            validate_manual_assignment(assignment, live)
        else:
            partitions = config.num_partitions if t.num_partitions == -1 else t.num_partitions
            rf = (
                config.default_replication_factor
                if t.replication_factor == -1
                else t.replication_factor
            )
            if partitions <= 0:
                raise InvalidPartitionsError("Number of partitions must be larger than 0.")
            if rf <= 0:
                raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
            if rf > len(live):
                raise InvalidReplicationFactorError(
                    f"Replication factor: {rf} larger than available brokers: {len(live)}."
                )
            assignment = assign_replicas_to_brokers(racks, partitions, rf)
        if not validate_only:
            await self.store.create_topic(t.name, assignment, dict(t.configs))
            log.info("created topic %s with assignment %s", t.name, assignment)
        return len(assignment)

    async def delete_topics(self, names: list[str], timeout_ms: int) -> list[TopicResult]:
        """Kafka's deleteTopics: `/admin/delete_topics/<t>` for each; the answer waits until
        the topics are gone from this broker's metadata."""
        results: dict[str, TopicResult] = {}
        requested: list[str] = []
        for name in names:
            try:
                if not self.config.delete_topic_enable:
                    raise TopicDeletionDisabledError(
                        "Topic deletion is disabled (delete.topic.enable=false)."
                    )
                # A name no topic can have names none that exists (and no znode path).
                if not _is_legal_topic_name(name) or not await self.store.topic_exists(name):
                    raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
                await self.store.request_topic_deletion(name)
                requested.append(name)
                results[name] = TopicResult(name, int(ErrorCode.NONE))
            except KafkaError as e:
                results[name] = TopicResult(name, int(e.code), e.message)
        if requested and timeout_ms > 0:
            done = await self._wait_for_metadata(
                lambda: not any(self.metadata.contains_topic(n) for n in requested), timeout_ms
            )
            if not done:
                for name in requested:
                    if self.metadata.contains_topic(name):
                        err = RequestTimedOutError(
                            f"deletion of {name} was requested but has not completed "
                            f"after {timeout_ms} ms"
                        )
                        results[name] = TopicResult(name, int(err.code), err.message)
        return [results[n] for n in names if n in results]

    async def create_partitions(
        self, topics: list[NewPartitions], timeout_ms: int, validate_only: bool
    ) -> list[TopicResult]:
        """Kafka's handleCreatePartitionsRequest + ZkAdminManager.createPartitions: the new
        partitions go into the topic's assignment znode (a conditional write of the whole
        assignment); the controller's watch on it creates them. One result per topic."""
        names = list(dict.fromkeys(t.name for t in topics))
        controller = self.controller
        if controller is None or not controller.is_active:
            return [TopicResult(n, int(ErrorCode.NOT_CONTROLLER)) for n in names]
        # Kafka's getBrokerMetadatas(RackAwareMode.Enforced), once for the whole request:
        # a cluster where only some brokers have a rack fails every topic of it, even one
        # with its own assignment (the exception leaves ZkAdminManager.createPartitions,
        # and KafkaApis answers UNKNOWN_SERVER_ERROR for each topic).
        racks = await self.store.get_broker_racks()
        if any(r is None for r in racks.values()) and any(r is not None for r in racks.values()):
            log.error("Error creating partitions of %s: %s", ", ".join(names), MIXED_RACKS_ENFORCED)
            return [TopicResult(n, int(ErrorCode.UNKNOWN_SERVER_ERROR)) for n in names]
        counts: dict[str, int] = {}
        for t in topics:
            counts[t.name] = counts.get(t.name, 0) + 1
        results: dict[str, TopicResult] = {}
        changed: dict[str, int] = {}
        for t in topics:
            if t.name in results:
                continue
            if counts[t.name] > 1:
                results[t.name] = TopicResult(
                    t.name, int(ErrorCode.INVALID_REQUEST), "Duplicate topic in request."
                )
                continue
            if controller.is_topic_queued_for_deletion(t.name):
                err: KafkaError = InvalidTopicError("The topic is queued for deletion.")
                results[t.name] = TopicResult(t.name, int(err.code), err.message)
                continue
            try:
                await self._create_partitions(t, racks, validate_only=validate_only)
            except KafkaError as e:
                results[t.name] = TopicResult(t.name, int(e.code), e.message)
                continue
            results[t.name] = TopicResult(t.name, int(ErrorCode.NONE))
            if not validate_only:
                changed[t.name] = t.count
        await self._await_leaders(
            changed,
            timeout_ms,
            results,
            lambda name, n: (
                f"partitions were added to topic {name} but not all {n} "
                f"partitions have leaders after {timeout_ms} ms"
            ),
        )
        return [results[n] for n in names]

    async def _create_partitions(
        self, t: NewPartitions, racks: Mapping[int, str | None], *, validate_only: bool
    ) -> None:
        if not _is_legal_topic_name(t.name):
            raise UnknownTopicOrPartitionError(f"The topic '{t.name}' does not exist.")
        for _ in range(CREATE_PARTITIONS_ATTEMPTS):
            got = await self.store.get_assignment_and_version(t.name)
            if got is None:
                raise UnknownTopicOrPartitionError(f"The topic '{t.name}' does not exist.")
            existing, version, topic_id, reassigning = got
            if reassigning:
                # Kafka's ZkAdminManager.createPartitions: the new assignment would be
                # written over the moving partitions' adding and removing replicas.
                raise ReassignmentInProgressError(
                    f"A partition reassignment is in progress for the topic {t.name}."
                )
            added = new_partitions_assignment(
                t.name, existing, list(racks), t.count, t.assignments, racks=racks
            )
            if validate_only:
                return
            try:
                await self.store.set_topic_assignment(
                    t.name, {**existing, **added}, version, topic_id
                )
            except ZkBadVersionError:
                log.info("assignment of topic %s changed while adding partitions; again", t.name)
                continue
            except ZkNoNodeError:
                raise UnknownTopicOrPartitionError(
                    f"The topic '{t.name}' does not exist."
                ) from None
            log.info(
                "Creating %d partitions for '%s' with the following replica assignment: %s",
                len(added),
                t.name,
                added,
            )
            return
        raise KafkaError(
            f"the assignment of topic {t.name} kept changing while partitions were added to it"
        )

    async def _await_leaders(
        self,
        partitions: dict[str, int],
        timeout_ms: int,
        results: dict[str, TopicResult],
        timed_out: Callable[[str, int], str],
    ) -> None:
        """Kafka's DelayedCreatePartitions: answer once every partition of `partitions`
        (topic -> count) has a leader in this broker's metadata, or mark the topics still
        without REQUEST_TIMED_OUT (the change is made all the same)."""
        if not partitions or timeout_ms <= 0:
            return

        def led(name: str, n: int) -> bool:
            return self.metadata.all_partitions_have_leaders(name, n)

        if await self._wait_for_metadata(
            lambda: all(led(name, n) for name, n in partitions.items()), timeout_ms
        ):
            return
        for name, n in partitions.items():
            if not led(name, n):
                err = RequestTimedOutError(timed_out(name, n))
                results[name] = TopicResult(name, int(err.code), err.message)

    async def _wait_for_metadata(self, condition: Callable[[], bool], timeout_ms: int) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        while not condition():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            await self.metadata.wait_for_change(remaining)
        return True

    # --- configs -------------------------------------------------------------------------

    async def describe_configs(
        self,
        resource_type: int,
        name: str,
        keys: list[str] | None,
        include_synonyms: bool,
    ) -> list[DescribedConfig]:
        """One resource's configs; KafkaError with Kafka's code for what cannot be described."""
        layers = self._config_layers()
        if resource_type == ResourceType.TOPIC:
            validate_topic_name(name)
            try:
                if not await self.store.topic_exists(name):
                    raise UnknownTopicOrPartitionError(f"Topic {name} does not exist.")
                overrides = await self.store.get_topic_config(name)
            except ZkError as e:
                raise KafkaError(f"cannot read topic {name}'s config: {e}") from e
            return describe_topic(layers, overrides, keys, include_synonyms)
        if resource_type == ResourceType.BROKER:
            if not name:
                return describe_broker_default(layers, keys, include_synonyms)
            self._check_own_broker_id(name, " or empty string,")
            return describe_broker(layers, keys, include_synonyms)
        raise InvalidRequestError(f"Unsupported resource type: {resource_type}")

    def _check_own_broker_id(self, name: str, alternative: str = ",") -> None:
        broker_id = self.config.broker_id
        if name != str(broker_id):
            raise InvalidRequestError(
                f"Unexpected broker id, expected {broker_id}{alternative} but received {name}"
            )

    async def incremental_alter_configs(
        self,
        resource_type: int,
        name: str,
        changes: list[AlterableConfig],
        validate_only: bool,
    ) -> None:
        """Change a topic's overrides or a broker's dynamic configs (SET, DELETE, APPEND,
        SUBTRACT) and tell every broker, or only check the change; KafkaError with Kafka's
        code when it cannot be made."""
        if resource_type == ResourceType.BROKER:
            await self._change_broker_config(
                name,
                validate_only,
                lambda entity, current: altered_broker_configs(
                    self._config_layers(), entity, current, changes
                ),
            )
            return
        await self._change_topic_config(
            resource_type,
            name,
            validate_only,
            lambda current: altered_topic_overrides(self.config, current, changes),
        )

    async def alter_configs(
        self,
        resource_type: int,
        name: str,
        configs: Iterable[tuple[str, str | None]],
        validate_only: bool,
    ) -> None:
        """AlterConfigs (the non-incremental API): the topic's overrides, or the broker
        entity's dynamic configs, become exactly `configs`, or the change is only checked."""
        configs = list(configs)
        if resource_type == ResourceType.BROKER:
            await self._change_broker_config(
                name,
                validate_only,
                lambda entity, _current: replaced_broker_configs(
                    self._config_layers(), entity, configs
                ),
            )
            return
        await self._change_topic_config(
            resource_type,
            name,
            validate_only,
            lambda _current: replaced_topic_overrides(self.config, configs),
        )

    async def _change_broker_config(
        self,
        name: str,
        validate_only: bool,
        configs_after: Callable[[str, dict[str, str]], dict[str, str]],
    ) -> None:
        """Write a broker entity's dynamic configs (`/config/brokers/<id>`, or `<default>` for
        the resource named "") with a change notification every broker reads; only this
        broker's own id or the default can be changed through it, as in Kafka."""
        if name:
            self._check_own_broker_id(name)
        entity = broker_entity(name)
        try:
            current = await self.store.get_broker_config(entity)
            new = configs_after(entity, current)
            if validate_only or new == current:
                return
            await self.store.change_broker_config(entity, new)
        except ZkError as e:
            raise KafkaError(f"cannot change the broker config {entity}: {e}") from e
        log.info("broker config %s: %s -> %s", entity, current, new)

    async def _change_topic_config(
        self,
        resource_type: int,
        name: str,
        validate_only: bool,
        overrides_after: Callable[[dict[str, str]], dict[str, str]],
    ) -> None:
        """Write the topic's overrides `overrides_after` makes of its current ones (checked
        there) to `/config/topics/<t>` with a change notification for every broker."""
        if resource_type != ResourceType.TOPIC:
            raise InvalidRequestError(
                "AlterConfigs is only supported for topics and brokers, but resource type is "
                f"{resource_type}"
            )
        validate_topic_name(name)
        try:
            if not await self.store.topic_exists(name):
                raise UnknownTopicOrPartitionError(f"Topic {name} does not exist.")
            current = await self.store.get_topic_config(name)
            new = overrides_after(current)
            if validate_only or new == current:
                return
            await self.store.change_topic_config(name, new)
        except ZkError as e:
            raise KafkaError(f"cannot change topic {name}'s config: {e}") from e
        log.info("topic %s: config overrides %s -> %s", name, current, new)
