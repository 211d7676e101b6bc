"""What producer, consumer and admin client share: bootstrap servers, the metadata cache,
one connection per broker (reconnected on demand), and Kafka's max in-flight limit.

Metadata is refreshed from any reachable broker: the known ones first (those already
connected first of all), then the bootstrap list, as Kafka's `leastLoadedNode` would pick.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from minikafka.client.bootstrap import DEFAULT_BOOTSTRAP as DEFAULT_BOOTSTRAP
from minikafka.client.bootstrap import Address as Address
from minikafka.client.bootstrap import parse_bootstrap_servers as parse_bootstrap_servers
from minikafka.client.connection import BrokerConnection, NetworkError
from minikafka.client.errors import IllegalStateError, KafkaTimeoutError
from minikafka.client.metadata import ClusterMetadata, TopicMetadata
from minikafka.protocol.errors import (
    BrokerNotAvailableError,
    ErrorCode,
    KafkaError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from minikafka.protocol.messages import MetadataRequest, MetadataResponse

log = logging.getLogger(__name__)

# Errors after which the client's idea of who leads what is probably wrong (Kafka's
# InvalidMetadataException family, plus timeouts: the broker may be gone).
INVALID_METADATA_CODES = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.BROKER_NOT_AVAILABLE,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.NOT_CONTROLLER,
    }
)


def now_ms() -> float:
    """Monotonic milliseconds: for deadlines and backoffs, never for record timestamps."""
    return time.monotonic() * 1000.0


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def is_invalid_metadata(error: BaseException) -> bool:
    return isinstance(error, KafkaError) and error.code in INVALID_METADATA_CODES


_METADATA_ERRORS = {
    ErrorCode.INVALID_REPLICATION_FACTOR: "INVALID_REPLICATION_FACTOR: the brokers could not "
    "auto-create it, as default.replication.factor is larger than available brokers",
    ErrorCode.INVALID_TOPIC_EXCEPTION: "INVALID_TOPIC_EXCEPTION: not a legal topic name",
}


def _retrieve_exception(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


class ClusterClient:
    """Connections and metadata for one client instance (Kafka's NetworkClient + Metadata)."""

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] = DEFAULT_BOOTSTRAP,
        *,
        client_id: str = "minikafka",
        request_timeout_ms: int = 30000,
        retry_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300000,
        max_in_flight_requests_per_connection: int = 5,
        socket_connection_setup_timeout_ms: int = 10000,
        allow_auto_topic_creation: bool = False,
    ) -> None:
        if max_in_flight_requests_per_connection < 1:
            raise ValueError("max.in.flight.requests.per.connection must be at least 1")
        self.bootstrap = parse_bootstrap_servers(bootstrap_servers)
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.metadata_max_age_ms = metadata_max_age_ms
        # Metadata requests ask brokers to auto-create the topics they name (producers and
        # consumers with allow.auto.create.topics; never admin clients).
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self._max_in_flight = max_in_flight_requests_per_connection
        self._connect_timeout_s = socket_connection_setup_timeout_ms / 1000.0
        self._metadata = ClusterMetadata()
        # Topics this client cares about; None: all (admin). Refreshes ask only for these.
        self._topics: set[str] | None = set()
        self._last_refresh_ms: float | None = None
        self._last_attempt_ms: float | None = None
        self._refresh: asyncio.Task[ClusterMetadata] | None = None
        self._refresh_topics: frozenset[str] | None = None
        self._background: asyncio.Task[None] | None = None
        self._listeners: list[Callable[[], None]] = []
        self._connections: dict[Address, BrokerConnection] = {}
        self._connecting: dict[Address, asyncio.Lock] = {}
        self._slots: dict[Address, asyncio.Semaphore] = {}
        self._closed = False

    # --- metadata -----------------------------------------------------------------------

    @property
    def metadata(self) -> ClusterMetadata:
        return self._metadata

    @property
    def topics(self) -> set[str] | None:
        return self._topics

    def add_topics(self, topics: Iterable[str]) -> bool:
        """Track more topics in refreshes; True if any was new."""
        if self._topics is None:
            return False
        before = len(self._topics)
        self._topics.update(topics)
        return len(self._topics) != before

    def track_all_topics(self) -> None:
        self._topics = None

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Called after every background refresh attempt, successful or not."""
        self._listeners.append(callback)

    def metadata_is_stale(self) -> bool:
        return (
            self._last_refresh_ms is None
            or now_ms() - self._last_refresh_ms >= self.metadata_max_age_ms
        )

    def request_update(self) -> None:
        """Refresh in the background, at most once per retry.backoff.ms (Kafka's
        `metadata.requestUpdate()`); listeners hear when the attempt is over."""
        if self._closed or (self._background is not None and not self._background.done()):
            return
        self._background = asyncio.get_running_loop().create_task(self._background_refresh())

    async def _background_refresh(self) -> None:
        try:
            if self._last_attempt_ms is not None:
                wait = self._last_attempt_ms + self.retry_backoff_ms - now_ms()
                if wait > 0:
                    await asyncio.sleep(wait / 1000.0)
            await self.refresh_metadata()
        except KafkaError as e:
            log.info("metadata refresh failed: %s", e)
        finally:
            for callback in list(self._listeners):
                callback()

    async def refresh_metadata(
        self, topics: Collection[str] | None = None, *, all_topics: bool = False
    ) -> ClusterMetadata:
        """Fetch metadata now and return the new snapshot.

        `topics` None: the tracked topics (all, after `track_all_topics`); `all_topics`: all.
        A caller whose topics an in-flight refresh already covers shares that refresh.
        Raises NetworkError when no broker answers.
        """
        if self._closed:
            raise IllegalStateError("client is closed")
        wanted: frozenset[str] | None
        if all_topics:
            wanted = None
        elif topics is not None:
            wanted = frozenset(topics)
        else:
            wanted = None if self._topics is None else frozenset(self._topics)
        running = self._refresh
        if running is not None and not running.done():
            covered = self._refresh_topics is None or (
                wanted is not None and wanted <= self._refresh_topics
            )
            if covered:
                return await asyncio.shield(running)
        task = asyncio.get_running_loop().create_task(self._do_refresh(wanted))
        task.add_done_callback(_retrieve_exception)  # a caller may have stopped waiting
        self._refresh, self._refresh_topics = task, wanted
        return await asyncio.shield(task)

    async def _do_refresh(self, topics: frozenset[str] | None) -> ClusterMetadata:
        self._last_attempt_ms = now_ms()
        request = MetadataRequest(
            None if topics is None else sorted(topics), self.allow_auto_topic_creation
        )
        errors: list[str] = []
        for addr in self._metadata_candidates():
            try:
                response: MetadataResponse = await self._send_to_address(addr, request)
            except KafkaError as e:
                if e.retriable:
                    errors.append(f"{addr[0]}:{addr[1]}: {e}")
                    continue
                raise
            self._metadata = self._metadata.with_response(response, topics)
            self._last_refresh_ms = now_ms()
            return self._metadata
        raise NetworkError("no broker answered a metadata request (" + "; ".join(errors) + ")")

    def _metadata_candidates(self) -> list[Address]:
        known = [(b.host, b.port) for b in self._metadata.brokers.values()]
        random.shuffle(known)
        # Connected brokers first (no handshake), then the others, then the bootstrap list.
        known.sort(key=lambda a: not self._is_connected(a))
        out: list[Address] = []
        for addr in [*known, *self.bootstrap]:
            if addr not in out:
                out.append(addr)
        return out

    async def wait_for_topic(self, topic: str, timeout_ms: float) -> TopicMetadata:
        """Metadata of a topic with its partitions, refreshing every retry.backoff.ms until it
        appears (it may be being created). Raises KafkaTimeoutError after `timeout_ms`, or the
        topic's error if it is not a transient one (e.g. an invalid name)."""
        self.add_topics([topic])
        deadline = now_ms() + timeout_ms
        last_error: BaseException | None = None
        while True:
            t = self._metadata.topics.get(topic)
            if t is not None and t.error_code == ErrorCode.NONE and t.partitions:
                return t
            if t is not None and t.error_code not in (
                ErrorCode.NONE,
                ErrorCode.LEADER_NOT_AVAILABLE,
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ):
                err = error_for_code(t.error_code)
                if not err.retriable:
                    # Metadata carries no message: say which topic, and what the code means
                    # for it (e.g. an auto-creation the brokers refused).
                    raise error_for_code(
                        t.error_code, f"Topic {topic}: {_METADATA_ERRORS.get(err.code, err)}"
                    )
            remaining = deadline - now_ms()
            if remaining <= 0:
                detail = f" (last error: {last_error})" if last_error is not None else ""
                raise KafkaTimeoutError(
                    f"Topic {topic} not present in metadata after {round(timeout_ms)} ms.{detail}"
                )
            if self._last_attempt_ms is not None:
                backoff = self._last_attempt_ms + self.retry_backoff_ms - now_ms()
                if backoff > 0:
                    await asyncio.sleep(min(backoff, remaining) / 1000.0)
            try:
                async with asyncio.timeout(max(remaining, 1) / 1000.0):
                    refreshed = await self.refresh_metadata()
            except TimeoutError:
                continue
            except KafkaError as e:
                if not e.retriable:
                    raise
                last_error = e
                continue
            if topic in refreshed.unknown_topics:
                # Brokers answer this only for a topic ZooKeeper does not have that they did
                # not create (one being created is LEADER_NOT_AVAILABLE): no point waiting.
                why = (
                    "the brokers' auto.create.topics.enable is false"
                    if self.allow_auto_topic_creation
                    else "this client does not auto-create topics"
                )
                raise UnknownTopicOrPartitionError(
                    f"Topic {topic} does not exist ({why}); create it first, e.g. "
                    f"`minikafka topics --create --topic {topic}`."
                )

    # --- connections --------------------------------------------------------------------

    def address_of(self, node_id: int) -> Address:
        node = self._metadata.broker(node_id)
        if node is None:
            raise BrokerNotAvailableError(f"broker {node_id} is not in the cluster metadata")
        return (node.host, node.port)

    def _is_connected(self, addr: Address) -> bool:
        conn = self._connections.get(addr)
        return conn is not None and conn.connected

    async def _connection(self, addr: Address) -> BrokerConnection:
        if self._closed:
            raise IllegalStateError("client is closed")
        conn = self._connections.get(addr)
        if conn is not None and conn.connected:
            return conn
        lock = self._connecting.setdefault(addr, asyncio.Lock())
        async with lock:
            conn = self._connections.get(addr)
            if conn is not None and conn.connected:
                return conn
            if conn is not None:
                await conn.close()  # reap the dead connection's reader task
            conn = BrokerConnection(
                addr[0],
                addr[1],
                client_id=self.client_id,
                connect_timeout_s=self._connect_timeout_s,
            )
            await conn.connect()
            if not self.is_open():  # closed while we connected
                await conn.close()
                raise IllegalStateError("client is closed")
            self._connections[addr] = conn
            return conn

    async def _send_to_address(
        self,
        addr: Address,
        request: Any,
        *,
        timeout_ms: float | None = None,
        expect_response: bool = True,
    ) -> Any:
        conn = await self._connection(addr)
        slots = self._slots.setdefault(addr, asyncio.Semaphore(self._max_in_flight))
        timeout = (self.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000.0
        async with slots:
            return await conn.send(request, timeout, expect_response=expect_response)

    async def send(
        self,
        node_id: int,
        request: Any,
        *,
        timeout_ms: float | None = None,
        expect_response: bool = True,
    ) -> Any:
        """Send to one broker and await its response (None when `expect_response` is False).

        Raises the request-level KafkaError, NetworkError on connection loss, and
        RequestTimedOutError after `timeout_ms` (default request.timeout.ms).
        """
        return await self._send_to_address(
            self.address_of(node_id),
            request,
            timeout_ms=timeout_ms,
            expect_response=expect_response,
        )

    def is_open(self) -> bool:
        return not self._closed

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for task in (self._background, self._refresh):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        conns = list(self._connections.values())
        self._connections.clear()
        for conn in conns:
            await conn.close()
