"""Topic and broker config changes applied without a restart (Kafka's DynamicConfigManager
and its ZkNodeChangeNotificationListener).

Whoever changes a topic's config writes `/config/topics/<t>`, then a persistent sequential
`/config/changes/config_change_<seq>` naming `topics/<t>`; a broker's dynamic configs,
`/config/brokers/<id>` (or `<default>` for every broker), then a notification naming
`brokers/<id>` (`brokers/<default>`). Every broker watches `/config/changes`: for each
notification newer than the last it processed, it reads the topic's overrides again and
gives its logs of the topic the new config (the next append, roll, flush or retention pass
uses it), or reads its dynamic broker configs again and applies them. Notifications older
than 15 minutes are deleted by whichever broker sees them, as Kafka does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Final, NamedTuple

from minikafka.zk import change_notifications, paths
from minikafka.zk.bridge import LoopBridge
from minikafka.zk.change_notifications import scan_notifications
from minikafka.zk.client import Watch, ZkClient, ZkError

log = logging.getLogger(__name__)

# Kafka's ConfigChangeNotificationExpirationMs (DynamicConfigManager's changeExpirationMs).
CHANGE_EXPIRATION_MS: Final = 15 * 60 * 1000
TOPIC_ENTITY_PREFIX: Final = "topics/"
BROKER_ENTITY_PREFIX: Final = "brokers/"
USER_ENTITY_PREFIX: Final = "users/"


def notification_sequence(name: str) -> int:
    """The sequence number ZooKeeper appended to `config_change_`."""
    return change_notifications.notification_sequence(name, paths.CONFIG_CHANGE_PREFIX)


class ConfigChangePlan(NamedTuple):
    topics: list[str]  # whose config to read again, in notification order
    brokers: list[str]  # broker entities (ids, `<default>`) whose config changed
    users: list[str]  # users whose config (SCRAM credentials) changed, as sanitized
    last_sequence: int  # the newest notification processed
    purge: list[str]  # notifications old enough to delete


def plan_config_changes(
    notifications: Mapping[str, tuple[str | None, int]],
    last_sequence: int,
    now_ms: int,
    expiration_ms: int = CHANGE_EXPIRATION_MS,
) -> ConfigChangePlan:
    """What to do about `/config/changes`' children (name -> (entity path, ctime ms))."""
    scan = scan_notifications(
        notifications, paths.CONFIG_CHANGE_PREFIX, last_sequence, now_ms, expiration_ms
    )
    topics: dict[str, None] = {}
    brokers: dict[str, None] = {}
    users: dict[str, None] = {}
    for _, entity in scan.new:
        if entity is not None and entity.startswith(TOPIC_ENTITY_PREFIX):
            topics[entity[len(TOPIC_ENTITY_PREFIX) :]] = None
        elif entity is not None and entity.startswith(BROKER_ENTITY_PREFIX):
            brokers[entity[len(BROKER_ENTITY_PREFIX) :]] = None
        elif entity is not None and entity.startswith(USER_ENTITY_PREFIX):
            users[entity[len(USER_ENTITY_PREFIX) :]] = None
        elif entity is not None:
            log.info("ignoring a config change of %s (no such config in minikafka)", entity)
    return ConfigChangePlan(
        list(topics), list(brokers), list(users), scan.last_sequence, scan.purge
    )


class ConfigChangeListener:
    """Watches `/config/changes` and hands the changed topics to `apply_topics` and the
    changed broker entities to `apply_brokers`, one batch at a time on the event loop."""

    def __init__(
        self,
        zk: ZkClient,
        apply_topics: Callable[[list[str]], Awaitable[None]],
        apply_brokers: Callable[[list[str]], Awaitable[None]],
        apply_users: Callable[[list[str]], Awaitable[None]] | None = None,
        wall_clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.zk = zk
        self.apply_topics = apply_topics
        self.apply_brokers = apply_brokers
        self.apply_users = apply_users
        self.wall_clock_ms = wall_clock_ms  # ZooKeeper's ctimes are wall-clock times
        self.last_sequence = -1
        self._watch: Watch | None = None
        self._wanted = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self, bridge: LoopBridge) -> None:
        self._task = asyncio.create_task(self._run(), name="config-changes")
        self._watch = await asyncio.to_thread(
            self.zk.watch_children, paths.config_changes(), bridge.wrap(self._on_children)
        )

    def _on_children(self, children: list[str]) -> None:
        self._wanted.set()

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            await self._wanted.wait()
            self._wanted.clear()
            try:
                await self._process()
            except ZkError as e:
                # The watch fires again when the session is back; until then, try later.
                log.warning("cannot read config change notifications: %s", e)
                await asyncio.sleep(1)
                self._wanted.set()

    async def _process(self) -> None:
        notifications = await asyncio.to_thread(self.zk.get_config_change_notifications)
        plan = plan_config_changes(notifications, self.last_sequence, self.wall_clock_ms())
        if plan.brokers:
            await self.apply_brokers(plan.brokers)
        if plan.users and self.apply_users is not None:
            await self.apply_users(plan.users)
        if plan.topics:
            log.info("config changes of topics %s: applying them", plan.topics)
            await self.apply_topics(plan.topics)
        self.last_sequence = plan.last_sequence
        if plan.purge:
            await asyncio.to_thread(self.zk.delete_config_change_notifications, plan.purge)
