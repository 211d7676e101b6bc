"""One TCP connection to a broker: pipelined requests matched to responses by order and
correlation id.

Like Kafka's clients, the socket has TCP_NODELAY (no Nagle delay for a request's tail), and
a request goes to the transport in one call: with uvloop, each `write()` is a send syscall
of its own (a segment, and a wakeup of the broker, per chunk), `writelines()` one writev.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import socket
import ssl
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from minikafka.protocol.errors import ErrorCode, KafkaError, RequestTimedOutError
from minikafka.protocol.transport import DEFAULT_MAX_FRAME_BYTES, Chunk, FrameError, read_frame
from minikafka.rpc.framing import (
    RequestHeader,
    api_key_for,
    decode_response,
    encode_request,
    response_type_for,
)

log = logging.getLogger(__name__)

T = TypeVar("T")


def set_tcp_nodelay(writer: asyncio.StreamWriter) -> None:
    """Disable Nagle's algorithm, as Kafka's clients do (asyncio and uvloop already do so
    for TCP transports; this makes it explicit and independent of the loop)."""
    sock = writer.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def write_chunks(writer: asyncio.StreamWriter, chunks: Sequence[Chunk]) -> None:
    """Write a frame through the transport, copying file regions in (the client's path:
    its requests carry bytes; the broker sends responses with `send_chunks`)."""
    for c in chunks:
        if isinstance(c, bytes | bytearray | memoryview):
            writer.write(c)
        else:
            try:
                writer.write(c.read())
            finally:
                c.close()


def write_request(writer: asyncio.StreamWriter, chunks: Sequence[Chunk]) -> None:
    """Hand a whole request to the transport at once (one writev with uvloop)."""
    buffers: list[bytes | bytearray | memoryview] = []
    for c in chunks:
        if not isinstance(c, bytes | bytearray | memoryview):
            write_chunks(writer, chunks)  # file regions: requests never carry any
            return
        buffers.append(c)
    writer.writelines(buffers)


@dataclass(frozen=True)
class ConnectionSecurity:
    """How a broker connects to another's inter-broker listener: TLS (SSL, SASL_SSL) and a
    SASL exchange (SASL_*) before the first RPC frame. Made by the broker from its
    security settings (server/inter_broker_security.py); empty for PLAINTEXT."""

    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)
    # Runs Kafka's SaslHandshake and SaslAuthenticate on the fresh connection; raises a
    # KafkaError when the peer refuses.
    authenticate: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]] | None = (
        field(default=None, repr=False)
    )


PLAINTEXT_CONNECTIONS = ConnectionSecurity()


class NetworkError(KafkaError):
    """The connection failed or closed; retriable (Kafka's NETWORK_EXCEPTION)."""

    code = ErrorCode.NETWORK_EXCEPTION
    retriable = True


class BrokerConnection:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str = "minikafka",
        connect_timeout_s: float = 10.0,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        security: ConnectionSecurity = PLAINTEXT_CONNECTIONS,
    ) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self._security = security
        self._connect_timeout = connect_timeout_s
        self._max_frame = max_frame_bytes
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._read_task: asyncio.Task[None] | None = None
        self._correlation = itertools.count(1)
        self._in_flight: OrderedDict[int, tuple[asyncio.Future[Any], type]] = OrderedDict()
        self._closed_error: KafkaError | None = None

    def __repr__(self) -> str:
        return f"BrokerConnection({self.host}:{self.port})"

    @property
    def connected(self) -> bool:
        return self._writer is not None and self._closed_error is None

    async def connect(self) -> None:
        security = self._security
        try:
            async with asyncio.timeout(self._connect_timeout):
                self._reader, self._writer = await asyncio.open_connection(
                    self.host,
                    self.port,
                    limit=1 << 20,
                    ssl=security.ssl_context,
                    server_hostname=self.host if security.ssl_context is not None else None,
                )
                set_tcp_nodelay(self._writer)
                if security.authenticate is not None:
                    await security.authenticate(self._reader, self._writer)
        except (OSError, TimeoutError, ssl.SSLError) as e:
            if self._writer is not None:
                self._writer.transport.abort()
            self._reader = self._writer = None
            raise NetworkError(f"cannot connect to {self.host}:{self.port}: {e}") from e
        except KafkaError:
            if self._writer is not None:
                self._writer.transport.abort()
            self._reader = self._writer = None
            raise
        self._closed_error = None
        self._read_task = asyncio.create_task(self._read_loop())

    async def send(
        self, request: Any, timeout_s: float = 30.0, *, expect_response: bool = True
    ) -> Any:
        """Send a request and await its typed response body.

        Raises the KafkaError of a request-level failure, NetworkError if the connection
        breaks, RequestTimedOutError after `timeout_s` (the connection is then closed, since
        a late response would be out of step).
        """
        if not self.connected:
            raise self._closed_error or NetworkError(f"not connected to {self.host}:{self.port}")
        assert self._writer is not None
        correlation_id = next(self._correlation)
        header = RequestHeader(int(api_key_for(request)), 0, correlation_id, self.client_id)
        fut: asyncio.Future[Any] | None = None
        if expect_response:
            fut = asyncio.get_running_loop().create_future()
            self._in_flight[correlation_id] = (fut, response_type_for(request))
        try:
            write_request(self._writer, encode_request(header, request))
            # Returns at once unless the transport holds more than its high-water mark
            # (then: until the broker has read enough), so requests pipeline.
            await self._writer.drain()
        except (ConnectionError, RuntimeError) as e:
            self._fail_all(NetworkError(f"send to {self.host}:{self.port} failed: {e}"))
            raise NetworkError(str(e)) from e
        if fut is None:
            return None
        # A plain timer: cheaper than asyncio.timeout(), on every replica fetch's path.
        timer = asyncio.get_running_loop().call_later(timeout_s, self._time_out, timeout_s)
        try:
            return await fut
        except RequestTimedOutError as e:
            if e is self._closed_error:  # ours, not a broker's REQUEST_TIMED_OUT answer
                await self.close()
            raise
        finally:
            timer.cancel()

    def _time_out(self, timeout_s: float) -> None:
        """A request went unanswered: every request in flight fails (a late response would
        be out of step) and the connection closes."""
        self._fail_all(
            RequestTimedOutError(f"no response from {self.host}:{self.port} in {timeout_s}s")
        )

    async def _read_loop(self) -> None:
        assert self._reader is not None
        error: KafkaError = NetworkError(f"connection to {self.host}:{self.port} closed")
        try:
            while True:
                frame = await read_frame(self._reader, self._max_frame)
                if frame is None:
                    break
                if not self._in_flight:
                    raise FrameError("response without a request")
                correlation_id, (fut, response_type) = self._in_flight.popitem(last=False)
                resp = decode_response(frame, response_type)
                if resp.correlation_id != correlation_id:
                    raise FrameError(
                        f"response {resp.correlation_id} out of order, expected {correlation_id}"
                    )
                if not fut.done():
                    if resp.error is not None:
                        fut.set_exception(resp.error)
                    else:
                        fut.set_result(resp.body)
        except (FrameError, asyncio.IncompleteReadError, ConnectionError) as e:
            error = NetworkError(f"connection to {self.host}:{self.port} failed: {e}")
        except asyncio.CancelledError:
            pass
        self._fail_all(error)

    def _fail_all(self, error: KafkaError) -> None:
        self._closed_error = error
        while self._in_flight:
            _, (fut, _) = self._in_flight.popitem(last=False)
            if not fut.done():
                fut.set_exception(error)
                # Whoever still awaits it gets the error; a sender that already gave up
                # (timed out, failed to write) will not, and that is no leak to log.
                fut.exception()
        if self._writer is not None:
            self._writer.close()

    async def close(self) -> None:
        self._fail_all(NetworkError(f"connection to {self.host}:{self.port} closed by client"))
        if self._read_task is not None and self._read_task is not asyncio.current_task():
            self._read_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._read_task
        if self._writer is not None:
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()
