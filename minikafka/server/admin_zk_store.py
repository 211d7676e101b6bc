"""The ZooKeeper operations the admin manager needs, as an async interface.

`AdminZkStore` is what `AdminManager` talks to; `KazooAdminZkStore` implements it over the
blocking `ZkClient` (each call in a worker thread), and unit tests pass an in-memory fake
(tests/unit/test_admin_manager.py). Paths and JSON are Kafka's (design §3): a topic is
created by writing its config and then its assignment, which the controller watches;
deleted by `/admin/delete_topics/<t>`; given partitions by a conditional write of its whole
assignment; configs change with a `/config/changes` notification every broker watches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Protocol

from minikafka.zk.client import TopicZNode, ZkClient

__all__ = ["AdminZkStore", "KazooAdminZkStore"]


class AdminZkStore(Protocol):
    """Kafka's `AdminZkClient` as the admin manager uses it. Errors: ZkError (ZooKeeper
    unreachable), ZkBadVersionError and ZkNoNodeError for conditional writes, Kafka's
    errors (TopicAlreadyExistsError...) where the znodes say so."""

    async def get_broker_racks(self) -> dict[int, str | None]:
        """The registered brokers (`/brokers/ids`), each with its `broker.rack` or None."""
        ...

    async def topic_exists(self, topic: str) -> bool: ...

    async def create_topic(
        self, topic: str, assignment: Mapping[int, Iterable[int]], config: Mapping[str, str]
    ) -> str:
        """The config, then the assignment with a new topic id (returned);
        TopicAlreadyExistsError if it exists or is being deleted."""
        ...

    async def request_topic_deletion(self, topic: str) -> bool:
        """`/admin/delete_topics/<t>`; False if already requested."""
        ...

    async def get_assignment_and_version(self, topic: str) -> TopicZNode | None: ...

    async def set_topic_assignment(
        self,
        topic: str,
        assignment: Mapping[int, Iterable[int]],
        expected_version: int,
        topic_id: str | None,
    ) -> int:
        """Replace the whole assignment if the znode is still at `expected_version`."""
        ...

    async def get_topic_config(self, topic: str) -> dict[str, str]: ...

    async def change_topic_config(self, topic: str, config: Mapping[str, str]) -> None: ...

    async def get_broker_config(self, entity: str) -> dict[str, str]: ...

    async def change_broker_config(self, entity: str, config: Mapping[str, str]) -> None: ...

    async def get_user_config(self, user: str) -> dict[str, str]: ...

    async def get_user_configs(self) -> dict[str, dict[str, str]]: ...

    async def set_user_config(self, user: str, config: Mapping[str, str]) -> None: ...


class KazooAdminZkStore:
    """AdminZkStore over the broker's ZkClient, each call in a worker thread."""

    def __init__(self, zk: ZkClient) -> None:
        self._zk = zk

    async def get_broker_racks(self) -> dict[int, str | None]:
        brokers = await asyncio.to_thread(self._zk.get_all_brokers)
        return {i: info.rack for i, info in sorted(brokers.items())}

    async def topic_exists(self, topic: str) -> bool:
        return await asyncio.to_thread(self._zk.topic_exists, topic)

    async def create_topic(
        self, topic: str, assignment: Mapping[int, Iterable[int]], config: Mapping[str, str]
    ) -> str:
        return await asyncio.to_thread(self._zk.create_topic, topic, assignment, config)

    async def request_topic_deletion(self, topic: str) -> bool:
        return await asyncio.to_thread(self._zk.request_topic_deletion, topic)

    async def get_assignment_and_version(self, topic: str) -> TopicZNode | None:
        return await asyncio.to_thread(self._zk.get_assignment_and_version, topic)

    async def set_topic_assignment(
        self,
        topic: str,
        assignment: Mapping[int, Iterable[int]],
        expected_version: int,
        topic_id: str | None,
    ) -> int:
        return await asyncio.to_thread(
            self._zk.set_topic_assignment, topic, assignment, expected_version, topic_id
        )

    async def get_topic_config(self, topic: str) -> dict[str, str]:
        return await asyncio.to_thread(self._zk.get_topic_config, topic)

    async def change_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        await asyncio.to_thread(self._zk.change_topic_config, topic, config)

    async def get_broker_config(self, entity: str) -> dict[str, str]:
        return await asyncio.to_thread(self._zk.get_broker_config, entity)

    async def change_broker_config(self, entity: str, config: Mapping[str, str]) -> None:
        await asyncio.to_thread(self._zk.change_broker_config, entity, config)

    async def get_user_config(self, user: str) -> dict[str, str]:
        return await asyncio.to_thread(self._zk.get_user_config, user)

    async def get_user_configs(self) -> dict[str, dict[str, str]]:
        return await asyncio.to_thread(self._zk.get_user_configs)

    async def set_user_config(self, user: str, config: Mapping[str, str]) -> None:
        await asyncio.to_thread(self._zk.set_user_config, user, config)
