"""The ZooKeeper operations the controller needs, as an async interface.

`ControllerZkStore` is what `KafkaController` talks to; `KazooControllerZkStore` implements
it over the blocking `ZkClient` (each call in a worker thread, watches handed to the event
loop with `LoopBridge`), and unit tests pass an in-memory fake. Every write takes the
`/controller_epoch` zk version that fences it (design §8.1): a deposed controller's write
raises `ControllerMovedError` and changes nothing.

Watch semantics: a callback runs on the event loop for every change after the watch was
set (never for the state at registration: the controller reads that itself, after setting
the watch, so nothing is missed). It carries no data; the controller's handler re-reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Protocol, TypeVar

from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.rules.reassignment import ReplicaAssignment
from minikafka.zk import paths
from minikafka.zk.bridge import LoopBridge
from minikafka.zk.client import Watch, ZkClient, ZkNoNodeError
from minikafka.zk.codecs import BrokerInfo

T = TypeVar("T")

__all__ = ["ControllerZkStore", "KazooControllerZkStore", "WatchHandle"]


class WatchHandle(Protocol):
    def cancel(self) -> None:
        """Stop calling the callback."""
        ...


class ControllerZkStore(Protocol):
    """Kafka's `KafkaZkClient` as the controller uses it; paths and JSON as in design §3."""

    # --- election (§8.1) -------------------------------------------------------------------

    async def get_controller_id(self) -> int | None: ...

    async def try_elect_controller(self, broker_id: int) -> tuple[int, int] | None:
        """(epoch, `/controller_epoch` zk version) if `broker_id` is (now) the controller
        under this session, else None."""
        ...

    async def delete_controller(self, controller_epoch_zk_version: int) -> None:
        """Resign (fenced): every broker's `/controller` watch re-runs the election."""
        ...

    # --- brokers, topics -----------------------------------------------------------------

    async def get_all_brokers(self) -> dict[int, BrokerInfo]:
        """Registered brokers with their epochs (the registration znode's czxid)."""
        ...

    async def get_all_topics(self) -> list[str]: ...

    async def get_assignments(
        self, topics: Iterable[str]
    ) -> dict[str, dict[int, tuple[int, ...]]]: ...

    async def get_full_assignments(
        self, topics: Iterable[str]
    ) -> dict[str, dict[int, ReplicaAssignment]]:
        """Assignments with their reassignments' adding and removing replicas."""
        ...

    async def get_topic_ids(self, topics: Iterable[str]) -> dict[str, str | None]:
        """Topic ids of the topics that exist (None: the znode has none)."""
        ...

    async def get_topic_config(self, topic: str) -> dict[str, str]: ...

    async def set_topic_assignment(
        self,
        topic: str,
        assignment: Mapping[int, ReplicaAssignment],
        controller_epoch_zk_version: int,
        topic_id: str | None,
    ) -> None:
        """Overwrite `/brokers/topics/<t>` (fenced); ZkNoNodeError if gone."""
        ...

    # --- partition state ---------------------------------------------------------------------

    async def get_partition_states(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, LeaderAndIsr]:
        """States of the partitions that have one; zk_version = the znode's version."""
        ...

    async def create_partition_states(
        self, states: Mapping[TopicPartition, LeaderAndIsr], controller_epoch_zk_version: int
    ) -> dict[TopicPartition, LeaderAndIsr]:
        """All-or-nothing; ZkNodeExistsError if one exists, ZkNoNodeError if a topic is gone."""
        ...

    async def update_partition_states(
        self,
        updates: Mapping[TopicPartition, tuple[LeaderAndIsr, int]],
        controller_epoch_zk_version: int,
    ) -> tuple[dict[TopicPartition, LeaderAndIsr], list[TopicPartition]]:
        """Conditional on each expected zk version: (written states with their new zk version,
        partitions whose version did not match)."""
        ...

    # --- ISR change notifications (§8.5) ---------------------------------------------------

    async def get_isr_change_notifications(self) -> list[str]: ...

    async def read_isr_change_notifications(self, names: Iterable[str]) -> list[TopicPartition]:
        """The partitions named by these notifications (missing ones are skipped)."""
        ...

    async def delete_isr_change_notifications(
        self, names: Iterable[str], controller_epoch_zk_version: int
    ) -> None: ...

    # --- preferred replica election ------------------------------------------------------------

    async def get_preferred_replica_election(self) -> list[TopicPartition] | None: ...

    async def delete_preferred_replica_election(self, controller_epoch_zk_version: int) -> None: ...

    # --- partition reassignment through ZooKeeper ------------------------------------------

    async def get_partition_reassignment(self) -> dict[TopicPartition, tuple[int, ...]] | None:
        """`/admin/reassign_partitions`, None if absent."""
        ...

    async def set_or_delete_partition_reassignment(
        self,
        reassignment: Mapping[TopicPartition, Sequence[int]],
        controller_epoch_zk_version: int,
    ) -> None:
        """Rewrite `/admin/reassign_partitions` with what is left (fenced); delete it if
        nothing is."""
        ...

    # --- topic deletion ------------------------------------------------------------------------

    async def get_topic_deletions(self) -> list[str]: ...

    async def delete_topic_deletion_requests(
        self, topics: Iterable[str], controller_epoch_zk_version: int
    ) -> None: ...

    async def delete_topic_znodes(self, topic: str, controller_epoch_zk_version: int) -> None:
        """`/brokers/topics/<t>` with its partitions, `/config/topics/<t>` and
        `/admin/delete_topics/<t>`, in one fenced multi."""
        ...

    # --- watches -----------------------------------------------------------------------------

    async def watch_controller(self, cb: Callable[[bool], None]) -> WatchHandle:
        """`cb(exists)` when `/controller` is created, changed or deleted."""
        ...

    async def watch_broker_ids(self, cb: Callable[[], None]) -> WatchHandle: ...

    async def watch_topics(self, cb: Callable[[], None]) -> WatchHandle: ...

    async def watch_topic_deletions(self, cb: Callable[[], None]) -> WatchHandle: ...

    async def watch_isr_change_notifications(self, cb: Callable[[], None]) -> WatchHandle: ...

    async def watch_preferred_replica_election(self, cb: Callable[[], None]) -> WatchHandle:
        """`cb()` when `/admin/preferred_replica_election` is created."""
        ...

    async def watch_partition_reassignment(self, cb: Callable[[], None]) -> WatchHandle:
        """`cb()` when `/admin/reassign_partitions` is created (Kafka's
        PartitionReassignmentHandler)."""
        ...

    async def watch_partition_state(
        self, tp: TopicPartition, cb: Callable[[], None]
    ) -> WatchHandle:
        """`cb()` when the partition's state znode changes (Kafka's
        PartitionReassignmentIsrChangeHandler: a leader wrote a new ISR)."""
        ...

    async def watch_partition_modifications(
        self, topics: Iterable[str], cb: Callable[[str], None]
    ) -> dict[str, WatchHandle]:
        """Kafka's PartitionModificationsHandler, one per topic: `cb(topic)` when the data of
        `/brokers/topics/<topic>` (its assignment) changes. A watch ends when its znode is
        deleted (the controller watches a re-created topic anew)."""
        ...


class _RegisteringFilter:
    """Drops the call a kazoo watch recipe makes for the initial state.

    `ZkClient.watch_*` calls back synchronously, in the registering thread, with the state it
    read when setting the watch; later calls come from kazoo's threads. Only the former is
    dropped, so a change racing with registration is still delivered.
    """

    def __init__(self) -> None:
        self._registering_thread: int | None = None

    @contextlib.contextmanager
    def registering(self) -> Iterator[None]:
        self._registering_thread = threading.get_ident()
        try:
            yield
        finally:
            self._registering_thread = None

    def is_initial_call(self) -> bool:
        return self._registering_thread == threading.get_ident()


class KazooControllerZkStore:
    """`ControllerZkStore` over `ZkClient` (blocking calls in worker threads)."""

    def __init__(self, zk: ZkClient, loop: asyncio.AbstractEventLoop) -> None:
        self.zk = zk
        self._bridge = LoopBridge(loop)

    async def _run(self, fn: Callable[..., T], *args: object) -> T:
        return await asyncio.to_thread(fn, *args)

    # --- election ------------------------------------------------------------------------

    async def get_controller_id(self) -> int | None:
        return await self._run(self.zk.get_controller_id)

    async def try_elect_controller(self, broker_id: int) -> tuple[int, int] | None:
        return await self._run(self.zk.try_elect_controller, broker_id)

    async def delete_controller(self, controller_epoch_zk_version: int) -> None:
        await self._run(self.zk.delete_controller, controller_epoch_zk_version)

    # --- brokers, topics ---------------------------------------------------------------------

    async def get_all_brokers(self) -> dict[int, BrokerInfo]:
        return await self._run(self.zk.get_all_brokers)

    async def get_all_topics(self) -> list[str]:
        return await self._run(self.zk.get_all_topics)

    async def get_assignments(self, topics: Iterable[str]) -> dict[str, dict[int, tuple[int, ...]]]:
        return await self._run(self.zk.get_assignments, list(topics))

    async def get_full_assignments(
        self, topics: Iterable[str]
    ) -> dict[str, dict[int, ReplicaAssignment]]:
        return await self._run(self.zk.get_full_assignments, list(topics))

    async def get_topic_ids(self, topics: Iterable[str]) -> dict[str, str | None]:
        return await self._run(self.zk.get_topic_ids, list(topics))

    async def get_topic_config(self, topic: str) -> dict[str, str]:
        return await self._run(self.zk.get_topic_config, topic)

    async def set_topic_assignment(
        self,
        topic: str,
        assignment: Mapping[int, ReplicaAssignment],
        controller_epoch_zk_version: int,
        topic_id: str | None,
    ) -> None:
        await self._run(
            self.zk.set_topic_assignment_as_controller,
            topic,
            dict(assignment),
            controller_epoch_zk_version,
            topic_id,
        )

    # --- partition state ---------------------------------------------------------------------

    async def get_partition_states(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, LeaderAndIsr]:
        tps = list(tps)
        if not tps:
            return {}
        return await self._run(self.zk.get_partition_states, tps)

    async def create_partition_states(
        self, states: Mapping[TopicPartition, LeaderAndIsr], controller_epoch_zk_version: int
    ) -> dict[TopicPartition, LeaderAndIsr]:
        return await self._run(
            self.zk.create_partition_states, dict(states), controller_epoch_zk_version
        )

    async def update_partition_states(
        self,
        updates: Mapping[TopicPartition, tuple[LeaderAndIsr, int]],
        controller_epoch_zk_version: int,
    ) -> tuple[dict[TopicPartition, LeaderAndIsr], list[TopicPartition]]:
        return await self._run(
            self.zk.update_partition_states_as_controller,
            dict(updates),
            controller_epoch_zk_version,
        )

    # --- ISR change notifications ------------------------------------------------------------

    async def get_isr_change_notifications(self) -> list[str]:
        return await self._run(self.zk.get_isr_change_notifications)

    async def read_isr_change_notifications(self, names: Iterable[str]) -> list[TopicPartition]:
        def read(names: list[str]) -> list[TopicPartition]:
            return [tp for name in names for tp in self.zk.read_isr_change_notification(name)]

        return await self._run(read, list(names))

    async def delete_isr_change_notifications(
        self, names: Iterable[str], controller_epoch_zk_version: int
    ) -> None:
        await self._run(
            self.zk.delete_isr_change_notifications, list(names), controller_epoch_zk_version
        )

    # --- preferred replica election -------------------------------------------------------------

    async def get_preferred_replica_election(self) -> list[TopicPartition] | None:
        return await self._run(self.zk.get_preferred_replica_election)

    async def delete_preferred_replica_election(self, controller_epoch_zk_version: int) -> None:
        await self._run(self.zk.delete_preferred_replica_election, controller_epoch_zk_version)

    # --- partition reassignment through ZooKeeper ------------------------------------------

    async def get_partition_reassignment(self) -> dict[TopicPartition, tuple[int, ...]] | None:
        return await self._run(self.zk.get_partition_reassignment)

    async def set_or_delete_partition_reassignment(
        self,
        reassignment: Mapping[TopicPartition, Sequence[int]],
        controller_epoch_zk_version: int,
    ) -> None:
        await self._run(
            self.zk.set_or_delete_partition_reassignment,
            dict(reassignment),
            controller_epoch_zk_version,
        )

    # --- topic deletion ------------------------------------------------------------------------

    async def get_topic_deletions(self) -> list[str]:
        return await self._run(self.zk.get_topic_deletions)

    async def delete_topic_deletion_requests(
        self, topics: Iterable[str], controller_epoch_zk_version: int
    ) -> None:
        await self._run(
            self.zk.delete_topic_deletion_requests, list(topics), controller_epoch_zk_version
        )

    async def delete_topic_znodes(self, topic: str, controller_epoch_zk_version: int) -> None:
        await self._run(self.zk.delete_topic_znodes, topic, controller_epoch_zk_version)

    # --- watches -----------------------------------------------------------------------------

    async def watch_controller(self, cb: Callable[[bool], None]) -> WatchHandle:
        initial = _RegisteringFilter()
        on_loop = self._bridge.wrap(cb)

        def on_data(data: bytes | None) -> None:
            if not initial.is_initial_call():
                on_loop(data is not None)

        def register() -> Watch:
            with initial.registering():
                return self.zk.watch_data(paths.controller(), on_data)

        return await self._run(register)

    async def watch_preferred_replica_election(self, cb: Callable[[], None]) -> WatchHandle:
        # Only creation matters (Kafka's PreferredReplicaElectionHandler.handleCreation); the
        # controller deletes the znode itself when done.
        return await self._watch_data(paths.preferred_replica_election(), cb, creation_only=True)

    async def watch_partition_reassignment(self, cb: Callable[[], None]) -> WatchHandle:
        # Only creation: the controller rewrites the znode as partitions finish moving, and
        # must not start the rest over each time.
        return await self._watch_data(paths.reassign_partitions(), cb, creation_only=True)

    async def watch_partition_state(
        self, tp: TopicPartition, cb: Callable[[], None]
    ) -> WatchHandle:
        path = paths.partition_state(tp.topic, tp.partition)
        return await self._watch_data(path, cb, creation_only=False)

    async def _watch_data(
        self, path: str, cb: Callable[[], None], *, creation_only: bool
    ) -> WatchHandle:
        """`cb()` on changes of `path` after registration: with `creation_only`, when it
        comes to exist; else on every write and deletion as well."""
        initial = _RegisteringFilter()
        on_loop = self._bridge.wrap(cb)
        existed = [False]

        def on_data(data: bytes | None) -> None:
            created = data is not None and not existed[0]
            existed[0] = data is not None
            if initial.is_initial_call():
                return
            if created or not creation_only:
                on_loop()

        def register() -> Watch:
            with initial.registering():
                return self.zk.watch_data(path, on_data)

        return await self._run(register)

    async def watch_partition_modifications(
        self, topics: Iterable[str], cb: Callable[[str], None]
    ) -> dict[str, WatchHandle]:
        on_loop = self._bridge.wrap(cb)

        def register(topic: str) -> Watch:
            initial = _RegisteringFilter()

            def on_data(data: bytes | None) -> None:
                # Only data changes (Kafka's handleDataChange): the topic's deletion is the
                # `/brokers/topics` children watch's business, and ends this watch.
                if data is not None and not initial.is_initial_call():
                    on_loop(topic)

            with initial.registering():
                return self.zk.watch_data(paths.topic(topic), on_data, until_deleted=True)

        def register_all(names: list[str]) -> dict[str, WatchHandle]:
            # Each registration is one read (kazoo's DataWatch sets the watch with it): about
            # 0.6 ms a topic, 3 s for 5,000 topics at failover (more threads do not help).
            handles: dict[str, WatchHandle] = {}
            try:
                for topic in names:
                    handles[topic] = register(topic)
            except BaseException:
                for handle in handles.values():
                    handle.cancel()
                raise
            return handles

        return await self._run(register_all, list(dict.fromkeys(topics)))

    async def watch_broker_ids(self, cb: Callable[[], None]) -> WatchHandle:
        return await self._watch_children(paths.broker_ids(), cb)

    async def watch_topics(self, cb: Callable[[], None]) -> WatchHandle:
        return await self._watch_children(paths.topics(), cb)

    async def watch_topic_deletions(self, cb: Callable[[], None]) -> WatchHandle:
        return await self._watch_children(paths.delete_topics(), cb)

    async def watch_isr_change_notifications(self, cb: Callable[[], None]) -> WatchHandle:
        return await self._watch_children(paths.isr_change_notifications(), cb)

    async def _watch_children(self, path: str, cb: Callable[[], None]) -> WatchHandle:
        initial = _RegisteringFilter()
        on_loop = self._bridge.wrap(cb)

        def on_children(_children: list[str]) -> None:
            if not initial.is_initial_call():
                on_loop()

        def register() -> Watch:
            with initial.registering():
                try:
                    return self.zk.watch_children(path, on_children)
                except ZkNoNodeError:
                    # The broker creates Kafka's persistent paths at startup; be safe anyway.
                    self.zk.ensure_persistent_paths()
                    return self.zk.watch_children(path, on_children)

        return await self._run(register)
