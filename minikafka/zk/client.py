"""`ZkClient`: Kafka's `KafkaZkClient` (ZooKeeper era) as a thin synchronous adapter over kazoo.

Every method blocks for a few ZooKeeper round trips; the broker calls them from a worker
thread (`asyncio.to_thread`). Each request waits at most `request_timeout_ms` for its reply
and then raises `ZkConnectionError`, so a broker cut off from ZooKeeper cannot pin its
worker threads forever (a timed-out write may still have been applied, as with any
connection loss). kazoo exceptions never escape: callers see the `Zk*Error` classes below.

Fencing (design §8.1, §8.8): every controller write is one multi that starts with a
version check on `/controller_epoch`; a failed check raises `ControllerMovedError` and
nothing is applied.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    RolledBackError,
    RuntimeInconsistency,
    SessionExpiredError,
    ZookeeperStoppedError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from minikafka.common import LeaderAndIsr, TopicPartition, new_kafka_uuid
from minikafka.protocol.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError
from minikafka.zk import codecs, paths
from minikafka.zk.codecs import BrokerInfo

log = logging.getLogger(__name__)

K = TypeVar("K")

__all__ = [
    "BrokerInfo",
    "ControllerMovedError",
    "Watch",
    "ZkBadVersionError",
    "ZkClient",
    "ZkConnectionError",
    "ZkError",
    "ZkNoNodeError",
    "ZkNodeExistsError",
    "ZkNotEmptyError",
    "ZkRequestTooLargeError",
    "ZkState",
    "expire_session",
    "parse_connect_string",
]


# --- errors ------------------------------------------------------------------------------


class ZkError(Exception):
    """Any ZooKeeper failure."""


class ZkConnectionError(ZkError):
    """Not connected, connection lost, session expired or no reply in time.

    Retriable; the outcome of a write that raised it is unknown."""


class ZkNoNodeError(ZkError):
    pass


class ZkNodeExistsError(ZkError):
    pass


class ZkNotEmptyError(ZkError):
    pass


class ZkBadVersionError(ZkError):
    """A conditional write found another version of the znode (someone else wrote it)."""


class ControllerMovedError(ZkError):
    """The `/controller_epoch` version check of a fenced write failed: another controller
    has been elected since (Kafka's ControllerMovedException). Nothing was written."""


_CONNECTION_ERRORS = (
    ConnectionLoss,
    SessionExpiredError,
    ConnectionClosedError,
    OperationTimeoutError,
    ZookeeperStoppedError,
    KazooTimeoutError,
)


def _translate(exc: BaseException, what: str) -> ZkError:
    if isinstance(exc, NoNodeError):
        return ZkNoNodeError(f"{what}: no such znode")
    if isinstance(exc, NodeExistsError):
        return ZkNodeExistsError(f"{what}: znode already exists")
    if isinstance(exc, BadVersionError):
        return ZkBadVersionError(f"{what}: znode version changed")
    if isinstance(exc, NotEmptyError):
        return ZkNotEmptyError(f"{what}: znode has children")
    if isinstance(exc, _CONNECTION_ERRORS):
        return ZkConnectionError(f"{what}: {type(exc).__name__} {exc}".rstrip())
    return ZkError(f"{what}: {type(exc).__name__} {exc}".rstrip())


@contextlib.contextmanager
def _kazoo_errors(what: str) -> Iterator[None]:
    try:
        yield
    except (KazooException, KazooTimeoutError) as e:
        raise _translate(e, what) from e


# --- connection --------------------------------------------------------------------------


class TopicZNode(NamedTuple):
    """`/brokers/topics/<t>` as read: the assignment, the znode's version, the topic id."""

    assignment: dict[int, tuple[int, ...]]
    version: int
    topic_id: str | None


class ZkState(StrEnum):
    """Connection states as kazoo reports them. LOST means the session is gone (its ephemeral
    znodes are deleted); the CONNECTED that follows is a new session, on which a broker must
    register again and re-run the controller election."""

    CONNECTED = "CONNECTED"
    SUSPENDED = "SUSPENDED"
    LOST = "LOST"


def parse_connect_string(connect: str) -> tuple[str, str]:
    """`h1:2181,h2:2181/chroot` -> (`h1:2181,h2:2181`, `/chroot`); no chroot -> ''."""
    hosts, slash, chroot = connect.strip().partition("/")
    if not hosts:
        raise ValueError(f"zookeeper.connect has no host: {connect!r}")
    chroot = ("/" + chroot).rstrip("/") if slash else ""
    if "//" in chroot:
        raise ValueError(f"zookeeper.connect has an invalid chroot: {connect!r}")
    return hosts, chroot


# ZooKeeper's jute.maxbuffer default (1 MiB - 1): a server drops the connection of a client
# whose request is larger, which the client sees as ConnectionLoss, retried forever.
JUTE_MAX_BUFFER = 0xFFFFF
# Writes that need not be atomic (deleting a topic's znodes, processed notifications) go in
# multis of at most this size, well below the limit.
MULTI_CHUNK_BYTES = 256 * 1024
MULTI_CHUNK_OPS = 2000
# Per operation of a multi, on top of its path and data: multi header, lengths, version or
# flags, and for a create the ACL (world:anyone), rounded up.
_OP_OVERHEAD_BYTES = 64


class ZkRequestTooLargeError(ZkError):
    """A multi bigger than ZooKeeper accepts (jute.maxbuffer); nothing was sent."""


@dataclass(frozen=True, slots=True)
class _Op:
    """One operation of a multi, kept so a failure can name its znode."""

    kind: str  # "create" | "set" | "delete" | "check"
    path: str
    data: bytes = b""
    version: int = -1
    ephemeral: bool = False

    def size(self, chroot: str = "") -> int:
        """Upper bound of its bytes in a multi request (kazoo prefixes the chroot)."""
        return _OP_OVERHEAD_BYTES + len(chroot) + len(self.path.encode()) + len(self.data)

    def add_to(self, txn: Any) -> None:
        if self.kind == "create":
            txn.create(self.path, self.data, ephemeral=self.ephemeral)
        elif self.kind == "set":
            txn.set_data(self.path, self.data, version=self.version)
        elif self.kind == "delete":
            txn.delete(self.path, version=self.version)
        else:
            txn.check(self.path, self.version)


class Watch:
    """Handle of a watch set with `ZkClient.watch_*`; `cancel()` stops callbacks."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.cancelled = False

    def cancel(self) -> None:
        # kazoo's recipes stop re-arming when their function returns False, which ours do
        # from the next event on; ZooKeeper watches cannot be removed server-side here.
        self.cancelled = True


class ZkClient:
    """Kafka's ZooKeeper reads and writes, by Kafka's names (see design §3 for the layout)."""

    def __init__(
        self,
        connect: str,
        session_timeout_ms: int = 18000,
        connection_timeout_ms: int | None = None,
        request_timeout_ms: int | None = None,
    ) -> None:
        self.connect = connect
        self.hosts, self.chroot = parse_connect_string(connect)
        self.session_timeout_ms = session_timeout_ms
        # Kafka: zookeeper.connection.timeout.ms defaults to the session timeout.
        self.connection_timeout_ms = connection_timeout_ms or session_timeout_ms
        # Requests queued while disconnected are sent on reconnection or failed when the
        # session expires; by a session timeout one of those has normally happened.
        self.request_timeout_ms = request_timeout_ms or session_timeout_ms
        self._zk: Any = None
        self._listeners: list[Callable[[ZkState], None]] = []

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Connect (creating the chroot first, as Kafka does) or raise ZkConnectionError."""
        if self._zk is not None:
            return
        if self.chroot:
            self._create_chroot()
        zk = self._new_kazoo(self.hosts + self.chroot)
        zk.add_listener(self._on_state)
        self._zk = zk  # before connecting: listeners may ask for session_id on CONNECTED
        try:
            self._start_kazoo(zk)
        except ZkConnectionError:
            self._zk = None
            raise

    def close(self) -> None:
        """Close the session: its ephemeral znodes (broker registration, /controller) vanish."""
        zk, self._zk = self._zk, None
        if zk is None:
            return
        with contextlib.suppress(Exception):
            zk.stop()
        with contextlib.suppress(Exception):
            zk.close()

    def __enter__(self) -> ZkClient:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connected(self) -> bool:
        return self._zk is not None and bool(self._zk.connected)

    @property
    def session_id(self) -> int | None:
        """The current session's id (changes after LOST); None when not connected."""
        if self._zk is None or self._zk.client_id is None:
            return None
        return int(self._zk.client_id[0])

    @property
    def session_credentials(self) -> tuple[int, bytes] | None:
        """(session id, password): lets a test expire this session with `expire_session`."""
        if self._zk is None or self._zk.client_id is None:
            return None
        sid, password = self._zk.client_id
        return int(sid), bytes(password)

    def add_connection_listener(self, cb: Callable[[ZkState], None]) -> None:
        """`cb(state)` on every transition, on kazoo's connection thread: it must not block
        or call ZooKeeper (hand over with LoopBridge)."""
        self._listeners.append(cb)

    def ensure_persistent_paths(self) -> None:
        """Create Kafka's persistent top-level znodes if missing (ZkData.PersistentZkPaths)."""
        for path in paths.persistent_paths():
            with _kazoo_errors(f"create {path}"):
                self._wait(self._kazoo().ensure_path_async(path))

    # --- raw reads (tools, tests) ------------------------------------------------------

    def exists(self, path: str) -> bool:
        return self._stat(path) is not None

    def get_data(self, path: str) -> bytes | None:
        got = self._get(path)
        return None if got is None else got[0]

    def get_children(self, path: str) -> list[str]:
        """Sorted child names; [] if the znode does not exist."""
        return sorted(self._children(path, missing_ok=True))

    def stat(self, path: str) -> Any:
        """The znode's kazoo ZnodeStat (version, cversion, mtime, ...); None if missing."""
        return self._stat(path)

    def set_data(self, path: str, data: bytes, version: int = -1) -> int:
        """Overwrite a znode (conditionally when `version` >= 0); returns its new version."""
        stat = self._call(f"set {path}", self._kazoo().set_async(path, data, version))
        return int(stat.version)

    # --- cluster id --------------------------------------------------------------------

    def get_or_create_cluster_id(self, proposed: str) -> str:
        """The cluster's id from `/cluster/id`; the first broker creates it with `proposed`
        (Kafka's getOrGenerateClusterId). Two first brokers race on one create; both read
        the winner's id."""
        got = self._get(paths.CLUSTER_ID)
        if got is None:
            try:
                self._call(
                    f"create {paths.CLUSTER_ID}",
                    self._kazoo().create_async(
                        paths.CLUSTER_ID, codecs.encode_cluster_id(proposed), makepath=True
                    ),
                )
                return proposed
            except ZkNodeExistsError:
                got = self._get(paths.CLUSTER_ID)
                if got is None:
                    raise ZkError(f"{paths.CLUSTER_ID} vanished right after existing") from None
        return codecs.decode_cluster_id(got[0])

    # --- producer ids --------------------------------------------------------------------

    def allocate_producer_id_block(self, broker_id: int, block_size: int) -> tuple[int, int]:
        """Take the next block of producer ids, [start, end] (Kafka's ZkProducerIdManager):
        `/latest_producer_id_block` names the last block taken; the next one follows it,
        claimed by a conditional write on the znode's version (a broker that lost the race
        reads again)."""
        while True:
            got = self._get(paths.LATEST_PRODUCER_ID_BLOCK)
            start = 0 if got is None else codecs.decode_producer_id_block(got[0])[1] + 1
            end = start + block_size - 1
            data = codecs.encode_producer_id_block(broker_id, start, end)
            try:
                if got is None:
                    self._call(
                        f"create {paths.LATEST_PRODUCER_ID_BLOCK}",
                        self._kazoo().create_async(paths.LATEST_PRODUCER_ID_BLOCK, data),
                    )
                else:
                    self.set_data(paths.LATEST_PRODUCER_ID_BLOCK, data, int(got[1].version))
                return start, end
            except (ZkNodeExistsError, ZkBadVersionError):
                continue  # another broker took a block first

    # --- brokers -----------------------------------------------------------------------

    def register_broker(self, info: BrokerInfo, wait_for_previous_session_ms: int = 0) -> int:
        """Create the ephemeral `/brokers/ids/<id>`; returns the broker epoch (its czxid).

        Like Kafka's checkedEphemeralCreate: a znode that already exists counts as ours if
        our current session owns it (a retry after a lost reply). One owned by another
        session (typically our previous process, whose session has not expired yet) is
        waited for up to `wait_for_previous_session_ms`, then ZkNodeExistsError.
        """
        path = paths.broker(info.id)
        data = codecs.encode_broker_info(info)
        now = time.monotonic()
        wait_deadline = now + wait_for_previous_session_ms / 1000
        retry_deadline = now + self.connection_timeout_ms / 1000
        while True:
            try:
                _, stat = self._call(
                    f"register broker at {path}",
                    self._kazoo().create_async(path, data, ephemeral=True, include_data=True),
                )
                return int(stat.czxid)
            except ZkNodeExistsError:
                stat = self._stat(path)
                if stat is None:
                    continue  # the old registration vanished in between: create again
                owner = int(stat.ephemeralOwner)
                if owner == self.session_id:
                    return int(stat.czxid)
                if time.monotonic() >= wait_deadline:
                    raise ZkNodeExistsError(
                        f"broker {info.id} is already registered at {path} by another "
                        f"ZooKeeper session (0x{owner:x}, ours is 0x{self.session_id or 0:x}): "
                        "another broker has this broker.id, or our previous session has "
                        "not expired yet"
                    ) from None
                self._await_deletion(path, wait_deadline)
            except ZkConnectionError:
                # The create may have been applied: the retry finds the znode and the
                # ownership check above decides.
                if time.monotonic() >= retry_deadline:
                    raise
                time.sleep(0.1)

    def get_broker(self, broker_id: int) -> BrokerInfo | None:
        got = self._get(paths.broker(broker_id))
        if got is None:
            return None
        data, stat = got
        return codecs.decode_broker_info(broker_id, data, epoch=int(stat.czxid))

    def get_broker_ids(self) -> list[int]:
        return sorted(self._int_children(paths.broker_ids()))

    def get_all_brokers(self) -> dict[int, BrokerInfo]:
        """Live brokers by id, each with its epoch (czxid)."""
        ids = self.get_broker_ids()
        got = self._get_many({i: paths.broker(i) for i in ids})
        return {
            i: codecs.decode_broker_info(i, data, epoch=int(stat.czxid))
            for i, (data, stat) in got.items()
        }

    # --- topics ------------------------------------------------------------------------

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
                self._kazoo().create_async(
                    paths.topic(topic), codecs.encode_topic_assignment(assignment, topic_id)
                ),
            )
        except ZkNodeExistsError:
            raise TopicAlreadyExistsError(f"Topic '{topic}' already exists.") from None
        return topic_id

    def set_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        """Create or overwrite `/config/topics/<t>` (Kafka's setOrCreateEntityConfigs)."""
        self._set_entity_config(paths.topic_config(topic), config)

    def _set_entity_config(self, path: str, config: Mapping[str, str]) -> None:
        data = codecs.encode_topic_config(config)
        try:
            self._call(f"set {path}", self._kazoo().set_async(path, data))
        except ZkNoNodeError:
            try:
                self._call(f"create {path}", self._kazoo().create_async(path, data))
            except ZkNodeExistsError:
                self._call(f"set {path}", self._kazoo().set_async(path, data))

    def _notify_config_change(self, entity_path: str) -> None:
        self._call(
            f"notify the config change of {entity_path}",
            self._kazoo().create_async(
                paths.config_change_prefix(),
                codecs.encode_config_change_notification(entity_path),
                sequence=True,
            ),
        )

    def change_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        """Replace a topic's overrides and tell every broker (Kafka's AdminZkClient
        changeTopicConfig): `/config/topics/<t>` first, then a persistent sequential
        `/config/changes/config_change_<seq>` naming `topics/<t>`, which brokers watch."""
        if not self.topic_exists(topic):
            raise UnknownTopicOrPartitionError(f"The topic '{topic}' does not exist.")
        self.set_topic_config(topic, config)
        self._notify_config_change(f"topics/{topic}")

    def get_broker_config(self, entity: str) -> dict[str, str]:
        """`/config/brokers/<entity>` (a broker id, or `<default>`): its dynamic configs."""
        path = paths.broker_config(entity)
        got = self._get(path)
        return {} if got is None else codecs.decode_entity_config(f"broker config {path}", got[0])

    def change_broker_config(self, entity: str, config: Mapping[str, str]) -> None:
        """Replace a broker's (or, entity `<default>`, every broker's) dynamic configs and
        tell the brokers (Kafka's AdminZkClient changeBrokerConfig): the znode, then a
        notification naming `brokers/<entity>`."""
        self._set_entity_config(paths.broker_config(entity), config)
        self._notify_config_change(f"brokers/{entity}")

    def get_config_change_notifications(self) -> dict[str, tuple[str | None, int]]:
        """Notification name -> (changed entity's path, or None if unreadable; creation
        time in ms), oldest first."""
        names = sorted(
            n
            for n in self._children(paths.config_changes(), missing_ok=True)
            if n.startswith(paths.CONFIG_CHANGE_PREFIX)
        )
        got = self._get_many({n: paths.config_change(n) for n in names})
        out: dict[str, tuple[str | None, int]] = {}
        for name in names:
            if name not in got:
                continue  # purged meanwhile
            data, stat = got[name]
            try:
                entity: str | None = codecs.decode_config_change_notification(data)
            except ValueError as e:
                log.warning("ignoring config change notification %s: %s", name, e)
                entity = None
            out[name] = (entity, int(stat.ctime))
        return out

    def delete_config_change_notifications(self, names: Iterable[str]) -> None:
        """Purge old notifications (Kafka's purgeObsoleteNotifications); gone ones are fine."""
        for name in names:
            with contextlib.suppress(ZkNoNodeError):
                self._call(f"delete {name}", self._kazoo().delete_async(paths.config_change(name)))

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
        return TopicZNode(
            codecs.decode_topic_assignment(topic, data),
            int(stat.version),
            codecs.decode_topic_id(topic, data),
        )

    def get_topic_ids(self, topics: Iterable[str]) -> dict[str, str | None]:
        """The topic ids of the topics that exist (None: written without one)."""
        got = self._get_many({t: paths.topic(t) for t in topics})
        return {t: codecs.decode_topic_id(t, data) for t, (data, _) in got.items()}

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

    def set_topic_assignment_as_controller(
        self,
        topic: str,
        assignment: Mapping[int, Iterable[int]],
        controller_epoch_zk_version: int,
        topic_id: str | None = None,
    ) -> None:
        """The controller's fenced overwrite of a topic's assignment (Kafka's
        setTopicAssignment with the controller epoch's zk version): it restores the
        assignment of a topic being deleted that someone added partitions to, and gives a
        topic written without an id its id."""
        op = _Op("set", paths.topic(topic), codecs.encode_topic_assignment(assignment, topic_id))
        self._multi([op], controller_epoch_zk_version, f"restore assignment of {topic}")

    def get_assignments(self, topics: Iterable[str]) -> dict[str, dict[int, tuple[int, ...]]]:
        """Assignments of the topics that exist (one pipelined round trip)."""
        got = self._get_many({t: paths.topic(t) for t in topics})
        return {t: codecs.decode_topic_assignment(t, data) for t, (data, _) in got.items()}

    def get_topic_config(self, topic: str) -> dict[str, str]:
        """Topic-level overrides; {} when there are none."""
        got = self._get(paths.topic_config(topic))
        return {} if got is None else codecs.decode_topic_config(topic, got[0])

    def get_topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
        """`get_topic_config` of each topic, in one pipelined round trip."""
        topics = list(topics)
        got = self._get_many({t: paths.topic_config(t) for t in topics})
        return {t: codecs.decode_topic_config(t, got[t][0]) if t in got else {} for t in topics}

    def get_partition_ids(self, topic: str) -> list[int]:
        """Partitions that have a `partitions/<p>` znode (created by the controller)."""
        return sorted(self._int_children(paths.partitions(topic), missing_ok=True))

    def request_topic_deletion(self, topic: str) -> bool:
        """Create `/admin/delete_topics/<t>`; False if deletion was already requested."""
        if not self.topic_exists(topic):
            raise UnknownTopicOrPartitionError(f"Topic '{topic}' does not exist.")
        try:
            self._call(
                f"request deletion of {topic}",
                self._kazoo().create_async(paths.delete_topic(topic), b""),
            )
            return True
        except ZkNodeExistsError:
            return False

    def get_topic_deletions(self) -> list[str]:
        return sorted(self._children(paths.delete_topics()))

    def delete_topic_deletion_requests(
        self, topics: Iterable[str], controller_epoch_zk_version: int
    ) -> None:
        """Drop deletion requests (e.g. for topics that do not exist), fenced."""
        ops = [_Op("delete", paths.delete_topic(t)) for t in topics]
        self._fenced_delete_existing(ops, controller_epoch_zk_version)

    def delete_topic_znodes(self, topic: str, controller_epoch_zk_version: int) -> None:
        """Remove a deleted topic's znodes, fenced: `/brokers/topics/<t>` with its
        partitions, `/config/topics/<t>`, and last `/admin/delete_topics/<t>`.

        One multi when it fits, else (a topic of thousands of partitions would exceed
        jute.maxbuffer) several, children before parents and the deletion request last: a
        controller that fails over midway finds the request and the rest of the tree, and
        deletes them again (Kafka deletes these znodes one by one)."""
        for _ in range(5):
            ops: list[_Op] = []
            for root in (paths.topic(topic), paths.topic_config(topic), paths.delete_topic(topic)):
                ops += [_Op("delete", p) for p in self._subtree_leaves_first(root)]
            if not ops:
                return
            try:
                for chunk in self._chunks(ops):
                    self._multi(chunk, controller_epoch_zk_version, f"delete topic {topic}")
                return
            except (ZkNoNodeError, ZkNotEmptyError):
                continue  # the tree changed while we listed it: list again
        raise ZkError(f"delete topic {topic}: its znodes kept changing; giving up")

    # --- partition state -----------------------------------------------------------------

    def get_partition_state(self, tp: TopicPartition) -> LeaderAndIsr | None:
        """The state znode as LeaderAndIsr with zk_version = the znode's version."""
        got = self._get(paths.partition_state(tp.topic, tp.partition))
        if got is None:
            return None
        data, stat = got
        return codecs.decode_partition_state(tp, data, zk_version=int(stat.version))

    def get_partition_states(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, LeaderAndIsr]:
        """States of the partitions that have one (one pipelined round trip)."""
        got = self._get_many({tp: paths.partition_state(tp.topic, tp.partition) for tp in tps})
        return {
            tp: codecs.decode_partition_state(tp, data, zk_version=int(stat.version))
            for tp, (data, stat) in got.items()
        }

    def create_partition_states(
        self, states: Mapping[TopicPartition, LeaderAndIsr], controller_epoch_zk_version: int
    ) -> dict[TopicPartition, LeaderAndIsr]:
        """The controller's first write of new partitions' state znodes (with their missing
        `partitions` parents), all or nothing in one fenced multi. Returns the states with
        zk_version 0; ZkNodeExistsError if one exists, ZkNoNodeError if a topic does not.

        One multi must stay below jute.maxbuffer (about 4,000 partitions of a short topic
        name): the controller creates large topics in chunks (ZkRequestTooLargeError, with
        nothing written, otherwise)."""
        ops: list[_Op] = []
        # Which `partitions` and `partitions/<p>` znodes exist: one listing per topic, all
        # pipelined (not one request per partition).
        topics = sorted({tp.topic for tp in states})
        listed = self._children_many({t: paths.partitions(t) for t in topics})
        for t in topics:
            if t not in listed:
                ops.append(_Op("create", paths.partitions(t)))
        existing = {tp for tp in states if str(tp.partition) in listed.get(tp.topic, ())}
        for tp in sorted(states, key=lambda x: (x.topic, x.partition)):
            if tp not in existing:
                ops.append(_Op("create", paths.partition(tp.topic, tp.partition)))
            ops.append(
                _Op(
                    "create",
                    paths.partition_state(tp.topic, tp.partition),
                    codecs.encode_partition_state(states[tp]),
                )
            )
        if ops:
            self._multi(ops, controller_epoch_zk_version, "create partition states")
        return {
            tp: LeaderAndIsr(s.leader, s.leader_epoch, tuple(s.isr), s.controller_epoch, 0)
            for tp, s in states.items()
        }

    def update_partition_state_as_controller(
        self,
        tp: TopicPartition,
        new: LeaderAndIsr,
        expected_zk_version: int,
        controller_epoch_zk_version: int,
    ) -> LeaderAndIsr:
        """Fenced conditional write of a state znode (elections, ISR removal on failure).
        Returns `new` with its new zk_version; ZkBadVersionError if the znode moved on."""
        done, conflicts = self.update_partition_states_as_controller(
            {tp: (new, expected_zk_version)}, controller_epoch_zk_version
        )
        if tp in conflicts:
            raise ZkBadVersionError(
                f"partition state of {tp}: expected zk version {expected_zk_version}, "
                "the znode has another (re-read it and retry)"
            )
        return done[tp]

    def update_partition_states_as_controller(
        self,
        updates: Mapping[TopicPartition, tuple[LeaderAndIsr, int]],
        controller_epoch_zk_version: int,
    ) -> tuple[dict[TopicPartition, LeaderAndIsr], list[TopicPartition]]:
        """Batch form (Kafka's updateLeaderAndIsr): each write conditional on its expected zk
        version, all fenced. Returns (updated states, partitions whose zk version did not
        match); raises ControllerMovedError if our epoch is stale (Kafka fails the whole
        batch).

        The writes go in multis of many partitions, pipelined (thousands of single-write
        requests cost far more, in kazoo, than the same writes in a few multis); a multi
        fails as a whole when one version does not match, and its partitions are then
        written one multi each, to find which."""
        ops = {
            tp: _Op(
                "set",
                paths.partition_state(tp.topic, tp.partition),
                codecs.encode_partition_state(new),
                expected,
            )
            for tp, (new, expected) in updates.items()
        }
        tp_of = {op.path: tp for tp, op in ops.items()}
        pending = [
            self._multi_async(chunk, controller_epoch_zk_version)
            for chunk in self._chunks(list(ops.values()))
        ]
        done: dict[TopicPartition, LeaderAndIsr] = {}
        one_by_one: list[TopicPartition] = []
        for all_ops, result in pending:
            chunk_tps = [tp_of[op.path] for op in all_ops[1:]]  # [0] is the fence check
            try:
                stats = self._finish_multi(all_ops, result, "update partition states")
            except (ZkBadVersionError, ZkNoNodeError):
                one_by_one += chunk_tps
                continue
            for tp, stat in zip(chunk_tps, stats, strict=True):
                done[tp] = self._written_state(updates[tp][0], stat)
        if not one_by_one:
            return done, []
        single = {
            tp: self._multi_async([ops[tp]], controller_epoch_zk_version) for tp in one_by_one
        }
        conflicts: list[TopicPartition] = []
        moved = False
        for tp, (all_ops, result) in single.items():
            try:
                stats = self._finish_multi(all_ops, result, f"update partition state of {tp}")
            except ControllerMovedError:
                moved = True
                continue
            except ZkBadVersionError:
                conflicts.append(tp)
                continue
            done[tp] = self._written_state(updates[tp][0], stats[0])
        if moved:
            raise ControllerMovedError(
                f"controller epoch znode is no longer at version {controller_epoch_zk_version}"
            )
        return done, conflicts

    @staticmethod
    def _written_state(new: LeaderAndIsr, stat: Any) -> LeaderAndIsr:
        return LeaderAndIsr(
            new.leader, new.leader_epoch, tuple(new.isr), new.controller_epoch, int(stat.version)
        )

    def update_partition_state_as_leader(
        self, tp: TopicPartition, new: LeaderAndIsr, expected_zk_version: int
    ) -> int | None:
        """A leader's own ISR change (design §8.5), conditional on its cached zk version.

        Returns the znode's new version, or None if someone else wrote it meanwhile (keep
        the old ISR and wait for the controller). If the znode already holds exactly `new`
        (our earlier attempt succeeded but its reply was lost), that is success too.
        """
        path = paths.partition_state(tp.topic, tp.partition)
        try:
            stat = self._call(
                f"update ISR of {tp}",
                self._kazoo().set_async(
                    path, codecs.encode_partition_state(new), version=expected_zk_version
                ),
            )
            return int(stat.version)
        except ZkBadVersionError:
            current = self.get_partition_state(tp)
        except ZkNoNodeError:
            log.warning("cannot update ISR of %s: %s does not exist", tp, path)
            return None
        if current is not None and (
            current.leader,
            current.leader_epoch,
            tuple(current.isr),
            current.controller_epoch,
        ) == (new.leader, new.leader_epoch, tuple(new.isr), new.controller_epoch):
            return current.zk_version
        log.info(
            "cached zkVersion %d not equal to that in zookeeper (%s), skip updating ISR of %s",
            expected_zk_version,
            None if current is None else current.zk_version,
            tp,
        )
        return None

    # --- controller --------------------------------------------------------------------

    def get_controller_id(self) -> int | None:
        got = self._get(paths.controller())
        return None if got is None else codecs.decode_controller(got[0])

    def get_controller_epoch(self) -> tuple[int, int] | None:
        """(controller epoch, `/controller_epoch` zk version) or None before any election."""
        got = self._get(paths.controller_epoch())
        if got is None:
            return None
        data, stat = got
        return codecs.decode_controller_epoch(data), int(stat.version)

    def try_elect_controller(self, broker_id: int) -> tuple[int, int] | None:
        """Kafka's registerControllerAndIncrementControllerEpoch (design §8.1).

        Returns (new controller epoch, its zk version), which must fence every later
        controller write, or None if another broker is controller.
        """
        epoch_path, ctrl_path = paths.controller_epoch(), paths.controller()
        with contextlib.suppress(ZkNodeExistsError):
            self._call(
                f"create {epoch_path}",
                self._kazoo().create_async(epoch_path, codecs.encode_controller_epoch(0)),
            )
        if self._stat(ctrl_path) is not None:
            return self._our_controllership(broker_id, None)
        got = self.get_controller_epoch()
        if got is None:  # deleted behind our back: nobody does that, but do not crash
            raise ZkError(f"{epoch_path} vanished during the controller election")
        epoch, version = got
        ops = [
            _Op("create", ctrl_path, codecs.encode_controller(broker_id), ephemeral=True),
            _Op("set", epoch_path, codecs.encode_controller_epoch(epoch + 1), version),
        ]
        try:
            results = self._multi(ops, None, f"elect broker {broker_id} controller")
        except (ZkNodeExistsError, ZkBadVersionError):
            # Lost a race, or our own earlier attempt won but its reply was lost.
            return self._our_controllership(broker_id, epoch + 1)
        return epoch + 1, int(results[1].version)

    def _our_controllership(
        self, broker_id: int, expected_epoch: int | None
    ) -> tuple[int, int] | None:
        got = self._get(paths.controller())
        epoch = self.get_controller_epoch()
        if got is None or epoch is None:
            return None
        data, stat = got
        ours = (
            codecs.decode_controller(data) == broker_id
            and int(stat.ephemeralOwner) == self.session_id
            and (expected_epoch is None or epoch[0] == expected_epoch)
        )
        return epoch if ours else None

    def delete_controller(self, controller_epoch_zk_version: int) -> None:
        """Resign: delete `/controller` (fenced), so that every broker re-runs the election."""
        with contextlib.suppress(ZkNoNodeError):
            self._multi(
                [_Op("delete", paths.controller())],
                controller_epoch_zk_version,
                "resign controller",
            )

    # --- ISR change notifications ------------------------------------------------------

    def create_isr_change_notification(self, tps: Iterable[TopicPartition]) -> str:
        """Persistent sequential `/isr_change_notification/isr_change_<seq>`; returns its name."""
        created = self._call(
            "create ISR change notification",
            self._kazoo().create_async(
                paths.isr_change_notification_prefix(),
                codecs.encode_isr_change_notification(tps),
                sequence=True,
            ),
        )
        return str(created).rsplit("/", 1)[-1]

    def get_isr_change_notifications(self) -> list[str]:
        """Child names, oldest first (the sequence number sorts them)."""
        names = self._children(paths.isr_change_notifications())
        return sorted(n for n in names if n.startswith(paths.ISR_CHANGE_PREFIX))

    def read_isr_change_notification(self, name: str) -> list[TopicPartition]:
        got = self._get(paths.isr_change_notification(name))
        return [] if got is None else codecs.decode_isr_change_notification(got[0])

    def delete_isr_change_notifications(
        self, names: Iterable[str], controller_epoch_zk_version: int
    ) -> None:
        """Delete processed notifications (fenced); already deleted ones are fine."""
        ops = [_Op("delete", paths.isr_change_notification(n)) for n in names]
        self._fenced_delete_existing(ops, controller_epoch_zk_version)

    # --- preferred replica election --------------------------------------------------------

    def create_preferred_replica_election(self, tps: Iterable[TopicPartition]) -> None:
        """Admin request; ZkNodeExistsError while a previous one is still in progress."""
        path = paths.preferred_replica_election()
        self._call(
            f"create {path}",
            self._kazoo().create_async(
                path, codecs.encode_preferred_replica_election(tps), makepath=True
            ),
        )

    def get_preferred_replica_election(self) -> list[TopicPartition] | None:
        got = self._get(paths.preferred_replica_election())
        return None if got is None else codecs.decode_preferred_replica_election(got[0])

    def delete_preferred_replica_election(self, controller_epoch_zk_version: int) -> None:
        ops = [_Op("delete", paths.preferred_replica_election())]
        self._fenced_delete_existing(ops, controller_epoch_zk_version)

    # --- watches -----------------------------------------------------------------------

    def watch_children(self, path: str, cb: Callable[[list[str]], None]) -> Watch:
        """`cb(children)` now (in this thread) and after every change (on kazoo's thread),
        re-armed across reconnections and new sessions. The znode must exist."""
        handle = Watch(path)
        fired = threading.Event()

        def on_children(children: list[str]) -> bool | None:
            if handle.cancelled:
                return False
            fired.set()
            try:
                cb(sorted(children))
            except Exception:
                log.exception("children watch callback for %s failed", path)
            return None

        with _kazoo_errors(f"watch children of {path}"):
            ChildrenWatch(self._kazoo(), path, on_children)
        if not fired.is_set() and self._stat(path) is None:
            raise ZkNoNodeError(f"watch children of {path}: no such znode")
        return handle

    def watch_data(
        self, path: str, cb: Callable[[bytes | None], None], *, until_deleted: bool = False
    ) -> Watch:
        """`cb(data)` now and after every change, creation (data) or deletion (None).

        `until_deleted`: the watch ends with the znode: after the call for its deletion (or
        the first call, if it does not exist), nothing more, even if it is created again."""
        handle = Watch(path)

        def on_data(data: bytes | None, stat: Any) -> bool | None:
            if handle.cancelled:
                return False
            try:
                cb(None if stat is None else (data or b""))
            except Exception:
                log.exception("data watch callback for %s failed", path)
            if until_deleted and stat is None:
                handle.cancel()
                return False
            return None

        with _kazoo_errors(f"watch {path}"):
            DataWatch(self._kazoo(), path, on_data)
        return handle

    def watch_exists(self, path: str, cb: Callable[[bool], None]) -> Watch:
        """`cb(exists)` now and after every creation, deletion or data change."""
        return self.watch_data(path, lambda data: cb(data is not None))

    # --- internals ---------------------------------------------------------------------

    def _kazoo(self) -> Any:
        if self._zk is None:
            raise ZkConnectionError("ZkClient is not started (or already closed)")
        return self._zk

    def _new_kazoo(self, hosts: str) -> Any:
        return KazooClient(
            hosts=hosts,
            timeout=self.session_timeout_ms / 1000,
            # Reconnect quickly after a ZooKeeper restart (kazoo's default backs off to 60 s).
            connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
        )

    def _start_kazoo(self, zk: Any) -> None:
        try:
            zk.start(timeout=self.connection_timeout_ms / 1000)
        except (KazooTimeoutError, KazooException) as e:
            with contextlib.suppress(Exception):
                zk.stop()
                zk.close()
            raise ZkConnectionError(
                f"cannot connect to ZooKeeper at {self.hosts} within "
                f"{self.connection_timeout_ms} ms"
            ) from e

    def _create_chroot(self) -> None:
        zk = self._new_kazoo(self.hosts)
        self._start_kazoo(zk)
        try:
            with _kazoo_errors(f"create chroot {self.chroot}"):
                zk.ensure_path(self.chroot)
        finally:
            zk.stop()
            zk.close()

    def _on_state(self, state: str) -> None:
        mapped = {
            KazooState.CONNECTED: ZkState.CONNECTED,
            KazooState.SUSPENDED: ZkState.SUSPENDED,
            KazooState.LOST: ZkState.LOST,
        }.get(state)
        if mapped is None or self._zk is None:
            return  # after close(): its LOST is ours, not news for the listeners
        log.info("ZooKeeper connection %s", mapped.value)
        for cb in list(self._listeners):
            try:
                cb(mapped)
            except Exception:
                log.exception("ZooKeeper connection listener failed")

    def _wait(self, async_result: Any) -> Any:
        try:
            return async_result.get(timeout=self.request_timeout_ms / 1000)
        except KazooTimeoutError as e:
            raise ZkConnectionError(
                f"no reply from ZooKeeper within {self.request_timeout_ms} ms"
            ) from e

    def _call(self, what: str, async_result: Any) -> Any:
        with _kazoo_errors(what):
            return self._wait(async_result)

    def _get(self, path: str) -> tuple[bytes, Any] | None:
        try:
            data, stat = self._call(f"read {path}", self._kazoo().get_async(path))
        except ZkNoNodeError:
            return None
        return bytes(data or b""), stat

    def _stat(self, path: str) -> Any:
        return self._call(f"stat {path}", self._kazoo().exists_async(path))

    def _children(self, path: str, missing_ok: bool = False) -> list[str]:
        try:
            return list(self._call(f"list {path}", self._kazoo().get_children_async(path)))
        except ZkNoNodeError:
            if missing_ok:
                return []
            raise

    def _int_children(self, path: str, missing_ok: bool = False) -> list[int]:
        out = []
        for name in self._children(path, missing_ok):
            if name.isdigit():
                out.append(int(name))
            else:
                log.warning("ignoring unexpected znode %s/%s", path, name)
        return out

    def _get_many(self, keyed_paths: Mapping[K, str]) -> dict[K, tuple[bytes, Any]]:
        # Pipelined: all requests are sent before the first reply is awaited.
        zk = self._kazoo()
        pending = {k: (p, zk.get_async(p)) for k, p in keyed_paths.items()}
        out: dict[K, tuple[bytes, Any]] = {}
        for k, (p, result) in pending.items():
            try:
                data, stat = self._call(f"read {p}", result)
            except ZkNoNodeError:
                continue
            out[k] = (bytes(data or b""), stat)
        return out

    def _children_many(self, keyed_paths: Mapping[K, str]) -> dict[K, set[str]]:
        """Child names of each znode that exists (pipelined)."""
        zk = self._kazoo()
        pending = {k: (p, zk.get_children_async(p)) for k, p in keyed_paths.items()}
        out: dict[K, set[str]] = {}
        for k, (p, result) in pending.items():
            try:
                out[k] = set(self._call(f"list {p}", result))
            except ZkNoNodeError:
                continue
        return out

    def _exists_many(self, keyed_paths: Mapping[K, str]) -> set[K]:
        zk = self._kazoo()
        pending = {k: (p, zk.exists_async(p)) for k, p in keyed_paths.items()}
        return {k for k, (p, r) in pending.items() if self._call(f"stat {p}", r) is not None}

    def _subtree_leaves_first(self, root: str) -> list[str]:
        """Every znode under `root` (itself included), deepest level first, so that deleting
        them in this order never deletes a parent before its children. One pipelined round
        trip per level (a topic's tree: 4 levels, however many partitions)."""
        zk = self._kazoo()
        levels: list[list[str]] = []
        level = [root]
        while level:
            pending = [(p, zk.get_children_async(p)) for p in level]
            present: list[str] = []
            below: list[str] = []
            for p, result in pending:
                try:
                    children = self._call(f"list {p}", result)
                except ZkNoNodeError:
                    continue
                present.append(p)
                below += [f"{p}/{c}" for c in sorted(children)]
            levels.append(present)
            level = below
        return [p for lvl in reversed(levels) for p in lvl]

    def _chunks(self, ops: list[_Op]) -> list[list[_Op]]:
        """`ops` in order, cut into multis of at most MULTI_CHUNK_OPS operations and about
        MULTI_CHUNK_BYTES (for writes that need not be atomic as a whole)."""
        chunks: list[list[_Op]] = []
        current: list[_Op] = []
        size = 0
        for op in ops:
            op_size = op.size(self.chroot)
            if current and (len(current) >= MULTI_CHUNK_OPS or size + op_size > MULTI_CHUNK_BYTES):
                chunks.append(current)
                current, size = [], 0
            current.append(op)
            size += op_size
        if current:
            chunks.append(current)
        return chunks

    def _multi_async(self, ops: list[_Op], fence_version: int | None) -> tuple[list[_Op], Any]:
        if fence_version is not None:
            ops = [_Op("check", paths.controller_epoch(), version=fence_version), *ops]
        size = sum(op.size(self.chroot) for op in ops)
        if size > JUTE_MAX_BUFFER:
            # ZooKeeper would drop the connection (ConnectionLoss, forever on retry).
            raise ZkRequestTooLargeError(
                f"a multi of {len(ops)} operations (about {size} bytes) is larger than "
                f"ZooKeeper's jute.maxbuffer ({JUTE_MAX_BUFFER} bytes); split it"
            )
        txn = self._kazoo().transaction()
        for op in ops:
            op.add_to(txn)
        with _kazoo_errors("multi"):
            return ops, txn.commit_async()

    def _finish_multi(self, ops: list[_Op], async_result: Any, what: str) -> list[Any]:
        """Results of the multi's own ops (without the fence check), or the first real error:
        ZooKeeper reports the others as rolled back or not attempted."""
        results = self._call(what, async_result)
        fenced = bool(ops) and ops[0].kind == "check" and ops[0].path == paths.controller_epoch()
        for i, (op, result) in enumerate(zip(ops, results, strict=False)):
            if not isinstance(result, Exception) or isinstance(
                result, (RolledBackError, RuntimeInconsistency)
            ):
                continue
            if fenced and i == 0:
                raise ControllerMovedError(
                    f"{what}: {paths.controller_epoch()} is no longer at version {op.version}; "
                    "another controller has been elected"
                )
            raise _translate(result, f"{what}: {op.kind} {op.path}")
        if any(isinstance(r, Exception) for r in results):
            raise ZkError(f"{what}: multi failed: {results!r}")
        return list(results[1:] if fenced else results)

    def _multi(self, ops: list[_Op], fence_version: int | None, what: str) -> list[Any]:
        all_ops, result = self._multi_async(ops, fence_version)
        return self._finish_multi(all_ops, result, what)

    def _fenced_delete_existing(self, ops: list[_Op], controller_epoch_zk_version: int) -> None:
        """Delete in fenced multis (one unless there are thousands), leaving out znodes
        someone already deleted."""
        for chunk in self._chunks(ops):
            remaining = chunk
            while remaining:
                try:
                    self._multi(remaining, controller_epoch_zk_version, "delete")
                    break
                except ZkNoNodeError:
                    present = self._exists_many({op.path: op.path for op in remaining})
                    if len(present) == len(remaining):
                        raise
                    remaining = [op for op in remaining if op.path in present]

    def _await_deletion(self, path: str, deadline: float) -> None:
        gone = threading.Event()

        def on_event(_event: Any) -> None:
            gone.set()

        with _kazoo_errors(f"watch {path}"):
            stat = self._wait(self._kazoo().exists_async(path, watch=on_event))
        if stat is not None:
            gone.wait(max(0.0, deadline - time.monotonic()))


def expire_session(connect: str, credentials: tuple[int, bytes], timeout_s: float = 10.0) -> None:
    """Expire another client's session, for fault tests: attach to it with its id and
    password, then close it. The original client's next reconnection finds it expired."""
    hosts, _ = parse_connect_string(connect)
    zk = KazooClient(hosts=hosts, client_id=credentials)
    try:
        with _kazoo_errors(f"attach to session 0x{credentials[0]:x}"):
            zk.start(timeout=timeout_s)
    finally:
        with contextlib.suppress(Exception):
            zk.stop()
            zk.close()
