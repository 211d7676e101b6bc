"""The connections and metadata of a client of minikafka's own RPC (the replica views):
bootstrap servers, the metadata cache, one connection per broker (reconnected on demand),
and Kafka's max in-flight limit.

Metadata is refreshed from any reachable broker: the known ones first (those already
connected first of all), then the bootstrap list, as Kafka's `leastLoadedNode` would pick.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Collection, Sequence
from typing import Any

from minikafka.client.bootstrap import DEFAULT_BOOTSTRAP as DEFAULT_BOOTSTRAP
from minikafka.client.bootstrap import Address as Address
from minikafka.client.bootstrap import parse_bootstrap_servers as parse_bootstrap_servers
from minikafka.client.errors import IllegalStateError
from minikafka.client.metadata import ClusterMetadata
from minikafka.protocol.errors import (
    BrokerNotAvailableError,
    KafkaError,
)
from minikafka.rpc.connection import BrokerConnection, NetworkError
from minikafka.rpc.messages import MetadataRequest, MetadataResponse

log = logging.getLogger(__name__)


def now_ms() -> float:
    """Monotonic milliseconds: for deadlines and backoffs, never for record timestamps."""
    return time.monotonic() * 1000.0


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
        max_in_flight_requests_per_connection: int = 5,
        socket_connection_setup_timeout_ms: int = 10000,
    ) -> None:
        if max_in_flight_requests_per_connection < 1:
            raise ValueError("max.in.flight.requests.per.connection must be at least 1")
        self.bootstrap = parse_bootstrap_servers(bootstrap_servers)
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self._max_in_flight = max_in_flight_requests_per_connection
        self._connect_timeout_s = socket_connection_setup_timeout_ms / 1000.0
        self._metadata = ClusterMetadata()
        self._refresh: asyncio.Task[ClusterMetadata] | None = None
        self._refresh_topics: frozenset[str] | None = None
        self._connections: dict[Address, BrokerConnection] = {}
        self._connecting: dict[Address, asyncio.Lock] = {}
        self._slots: dict[Address, asyncio.Semaphore] = {}
        self._closed = False

    # --- metadata -----------------------------------------------------------------------

    @property
    def metadata(self) -> ClusterMetadata:
        return self._metadata

    async def refresh_metadata(
        self, topics: Collection[str] | None = None, *, all_topics: bool = False
    ) -> ClusterMetadata:
        """Fetch metadata now and return the new snapshot: of `topics`, or of all topics
        (`all_topics`, or no `topics`). A caller whose topics an in-flight refresh already covers shares that refresh.
        Raises NetworkError when no broker answers.
        """
        if self._closed:
            raise IllegalStateError("client is closed")
        wanted = None if all_topics or topics is None else frozenset(topics)
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
        request = MetadataRequest(None if topics is None else sorted(topics), False)
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
        task = self._refresh
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        conns = list(self._connections.values())
        self._connections.clear()
        for conn in conns:
            await conn.close()
