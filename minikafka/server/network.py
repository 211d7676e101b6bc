"""The broker's TCP front end: frames in, handler calls, frames out.

Requests on one connection are handled concurrently (pipelining) but answered in the order
they arrived, as Kafka guarantees. A frame that cannot be trusted (oversized, cut short,
undecodable header) closes that connection only; a bad body or an unknown API gets an error
response. Nothing a client sends can stop the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from minikafka.protocol.errors import KafkaError
from minikafka.protocol.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    Chunk,
    FrameError,
    RequestDecodeError,
    RequestHeader,
    decode_request,
    encode_response,
)
from minikafka.protocol.transport import RegionTruncatedError, read_frame, send_chunks

log = logging.getLogger(__name__)

# (header, request) -> response body; raising a KafkaError answers with that error.
Handler = Callable[[RequestHeader, Any], Awaitable[Any]]


class _NoResponse:
    """Returned by a handler for requests Kafka does not answer (produce with acks=0)."""


NO_RESPONSE = _NoResponse()


class SocketServer:
    def __init__(
        self,
        handler: Handler,
        host: str,
        port: int,
        *,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        max_in_flight_per_connection: int = 100,
    ) -> None:
        self._handler = handler
        self._host = host
        self._port = port
        self._max_frame = max_frame_bytes
        self._max_in_flight = max_in_flight_per_connection
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Future[list[Chunk]]] = set()

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._on_connection, self._host, self._port, reuse_address=True, limit=1 << 20
        )

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for h in list(self._handlers):
            h.cancel()
        # Closing the sockets ends each connection's read loop normally; cancelling the
        # connection tasks instead makes asyncio's stream callback log a CancelledError.
        for w in list(self._writers):
            w.transport.abort()
        if self._connections:
            _, stuck = await asyncio.wait(list(self._connections), timeout=2)
            for t in stuck:
                t.cancel()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        self._writers.add(writer)
        peer = writer.get_extra_info("peername")
        # Responses leave in request order: each request appends a future here.
        pending: asyncio.Queue[asyncio.Future[list[Chunk]]] = asyncio.Queue(self._max_in_flight)
        sender = asyncio.create_task(self._send_in_order(pending, writer))
        try:
            while True:
                frame = await read_frame(reader, self._max_frame)
                if frame is None:
                    break
                try:
                    header, request = decode_request(frame)
                except RequestDecodeError as e:
                    log.info("bad request from %s: %s", peer, e.error)
                    done: asyncio.Future[list[Chunk]] = asyncio.get_running_loop().create_future()
                    done.set_result(encode_response(e.header.correlation_id, None, e.error))
                    await pending.put(done)
                    continue
                handling = asyncio.ensure_future(self._handle(header, request))
                self._handlers.add(handling)
                handling.add_done_callback(self._handlers.discard)
                await pending.put(handling)
        except FrameError as e:
            log.warning("closing connection from %s: %s", peer, e)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            # The peer is gone: responses have nowhere to go. Requests already read still run
            # to completion (an acks=0 produce must be appended), their answers dropped.
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            self._connections.discard(task)
            self._writers.discard(writer)

    async def _handle(self, header: RequestHeader, request: Any) -> list[Chunk]:
        try:
            body = await self._handler(header, request)
        except KafkaError as e:
            return encode_response(header.correlation_id, None, e)
        except Exception as e:
            log.exception("handler failed for api key %d", header.api_key)
            return encode_response(
                header.correlation_id, None, KafkaError(f"{type(e).__name__}: {e}")
            )
        if body is NO_RESPONSE:
            return []
        return encode_response(header.correlation_id, body)

    async def _send_in_order(
        self,
        pending: asyncio.Queue[asyncio.Future[list[Chunk]]],
        writer: asyncio.StreamWriter,
    ) -> None:
        try:
            while True:
                fut = await pending.get()
                chunks = await asyncio.shield(fut)  # our cancellation must not cancel it
                await send_chunks(writer, chunks)
        except RegionTruncatedError as e:
            # Part of a frame is out and the rest is gone: the stream cannot be resynced.
            log.warning("closing connection: %s", e)
            writer.transport.abort()
        except (ConnectionError, asyncio.CancelledError):
            pass
