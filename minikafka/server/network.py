"""The broker's TCP front end: frames in, handler calls, frames out.

A connection's requests are handled one at a time, in the order they arrived, each answered
before the next is read (Kafka mutes a connection while one of its requests is in
progress): a client may pipeline, and no request overtakes an earlier one. A frame that
cannot be trusted (oversized, cut short, undecodable header) closes that connection only; a
bad body or an unknown API gets an error response. Nothing a client sends can stop the
server.

Two protocols share a listener, told apart by a connection's first frame: Apache Kafka's
(any Kafka client; `kafka_handler`) and minikafka's msgpack RPC (brokers among themselves,
and the project's own client library). An RPC frame is [meta size][msgpack [header, body]]:
its first four bytes are a size no larger than the frame and its fifth is msgpack's
2-element array (0x92). A Kafka frame starts with its api key and version, then the
correlation id: it would pass only as a Produce request (api key 0, whose version then
reads as a tiny size) with a negative correlation id, and no Kafka client opens a
connection with a Produce request, nor numbers requests below zero.

A listener's security (session.py) comes first: TLS wraps the connection on SSL and
SASL_SSL listeners; on SASL listeners a client authenticates with Kafka's SaslHandshake and
SaslAuthenticate before anything else, brokers included (they then switch to the RPC).
The RPC is served only on the inter-broker listener, to a principal allowed to act as a
broker: anyone else's RPC frame is logged and the connection closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from minikafka.protocol.errors import KafkaError
from minikafka.protocol.kafka.codec import (
    API_VERSIONS_KEY,
    KafkaRequest,
    MalformedRequest,
    ServedVersions,
    UnsupportedVersion,
    codecs_loaded,
    load_codecs,
    request_api,
    unsupported_api_versions_response,
)
from minikafka.protocol.kafka.codec import decode_request as decode_kafka_request
from minikafka.protocol.transport import (
    DEFAULT_MAX_FRAME_BYTES,
    Chunk,
    FrameError,
    RegionTruncatedError,
    read_frame,
    send_chunks,
)
from minikafka.rpc.framing import (
    RequestDecodeError,
    RequestHeader,
    decode_request,
    encode_response,
)
from minikafka.rpc.messages import FetchRequest
from minikafka.security.acls import MalformedAclRequestError
from minikafka.security.sasl_server import SASL_AUTHENTICATE, SASL_HANDSHAKE, IllegalSaslState
from minikafka.security.tls import peer_principal_name
from minikafka.server.session import CloseConnection, ConnectionSession, ListenerSecurity

log = logging.getLogger(__name__)

# (header, request) -> response body; raising a KafkaError answers with that error.
Handler = Callable[[RequestHeader, Any], Awaitable[Any]]


class NoResponse:
    """Returned by a handler for requests Kafka does not answer (produce with acks=0)."""


NO_RESPONSE = NoResponse()


class KafkaHandler(Protocol):
    """What serves Kafka's protocol on a listener (server/kafka_api/handler.py)."""

    versions: dict[int, tuple[int, int]]  # api key -> (min, max): what ApiVersions says

    def serves(self, api_key: int) -> bool: ...

    async def handle(
        self, request: KafkaRequest, session: ConnectionSession
    ) -> list[Chunk] | None: ...


_MSGPACK_FIXARRAY_2 = 0x92
_META_SIZE = struct.Struct(">I")
_SIZE = struct.Struct(">i")
# ApiVersions, SaslHandshake, SaslAuthenticate: what a broker sends before switching to the RPC.
_HANDSHAKE_APIS = frozenset({API_VERSIONS_KEY, SASL_HANDSHAKE, SASL_AUTHENTICATE})


def is_minikafka_rpc(frame: bytes | bytearray | memoryview) -> bool:
    """Whether a connection's first frame is minikafka's msgpack RPC (see the docstring)."""
    if len(frame) < 5:
        return False
    (meta_size,) = _META_SIZE.unpack_from(frame, 0)
    return meta_size <= len(frame) - 4 and frame[4] == _MSGPACK_FIXARRAY_2


class SocketServer:
    def __init__(
        self,
        handler: Handler,
        host: str,
        port: int,
        *,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        kafka_handler: KafkaHandler | None = None,
        listener: str = "PLAINTEXT",
        security: ListenerSecurity | None = None,
        on_fetch_connection_closed: Callable[[int], None] | None = None,
    ) -> None:
        self._handler = handler
        # Told a follower's broker id when a connection that carried its replica fetches
        # closes (replica.lag.disconnected.max.ms).
        self._on_fetch_connection_closed = on_fetch_connection_closed
        self._stopping = False
        self._kafka = kafka_handler
        self.listener = listener
        self.security = security or ListenerSecurity()
        self._host = host
        self._port = port
        self._max_frame = max_frame_bytes
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        # Kafka request versions whose codecs a worker thread is loading (codec.py).
        self._loading_codecs: dict[tuple[int, int], asyncio.Future[None]] = {}

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._on_connection,
            self._host,
            self._port,
            reuse_address=True,
            limit=1 << 20,
            ssl=self.security.ssl_context,
            ssl_handshake_timeout=10.0 if self.security.ssl_context is not None else None,
        )

    async def stop(self) -> None:
        # The connections this closes are no follower's loss.
        self._stopping = True
        if self._server is not None:
            self._server.close()
        # Closing the sockets ends each idle connection's read; cancelling the connection
        # tasks ends the requests still in progress (a long poll, a produce waiting for its
        # ISR), whose answers have nowhere to go.
        for w in list(self._writers):
            w.transport.abort()
        for t in list(self._connections):
            t.cancel()
        if self._connections:
            await asyncio.wait(list(self._connections), timeout=2)
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
        try:
            session = self._session(writer, peer)
            if session is None:
                return
            frame = await read_frame(reader, self._frame_limit(session))
            if frame is not None:
                if self._kafka is not None and not is_minikafka_rpc(frame):
                    await self._serve_kafka(self._kafka, frame, reader, writer, peer, session)
                elif self._rpc_allowed(session, peer):
                    await self._serve_rpc(frame, reader, writer, peer)
        except FrameError as e:
            log.warning("closing connection from %s: %s", peer, e)
        except RegionTruncatedError as e:
            # Part of a frame is out and the rest is gone: the stream cannot be resynced.
            log.warning("closing connection from %s: %s", peer, e)
            writer.transport.abort()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except asyncio.CancelledError:
            # stop(): this task is the connection's whole life, and asyncio's stream
            # callback would log a cancelled one as an error.
            writer.transport.abort()
        finally:
            # A request that was being handled when the peer left ran to completion (an
            # acks=0 produce must be appended); its answer had nowhere to go.
            writer.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await writer.wait_closed()
            self._connections.discard(task)
            self._writers.discard(writer)

    def _session(self, writer: asyncio.StreamWriter, peer: object) -> ConnectionSession | None:
        """The connection's session, its principal from the TLS client certificate if any;
        None (the connection is closed) when no ssl.principal.mapping.rules rule maps it."""
        client_host = f"/{peer[0]}" if isinstance(peer, tuple) and peer else ""
        session = ConnectionSession(self.listener, self.security, client_host)
        ssl_object = writer.get_extra_info("ssl_object")
        if ssl_object is not None and not self.security.uses_sasl:
            dn = peer_principal_name(ssl_object)
            try:
                session.principal = self.security.ssl_principal(dn)
            except ValueError as e:
                log.warning("closing TLS connection from %s: %s", peer, e)
                return None
        return session

    def _frame_limit(self, session: ConnectionSession) -> int:
        """Until a client has authenticated, its frames are bounded by
        sasl.server.max.receive.size, as Kafka bounds them: an unauthenticated peer cannot
        make the broker buffer a 100 MB request."""
        if session.authenticated:
            return self._max_frame
        return min(self._max_frame, self.security.sasl_max_receive_size)

    def _rpc_allowed(self, session: ConnectionSession, peer: object) -> bool:
        if not session.authenticated:
            log.warning(
                "closing connection from %s on listener %s: minikafka RPC before SASL "
                "authentication",
                peer,
                self.listener,
            )
            return False
        if not self.security.serves_rpc:
            log.warning(
                "closing connection from %s (%s): minikafka RPC on listener %s, which is not "
                "the inter-broker listener",
                peer,
                session.principal,
                self.listener,
            )
            return False
        if not self.security.rpc_allowed(session.principal, session.host):
            log.warning(
                "closing connection from %s: principal %s is not authorized to send broker "
                "requests (CLUSTER_ACTION on the cluster)",
                peer,
                session.principal,
            )
            return False
        return True

    # One connection's requests are handled one at a time, in the order they arrived, and
    # each is answered before the next is read, as Kafka mutes a channel from a request's
    # receipt to its response's send: a client may pipeline (send without waiting), but a
    # request never overtakes an earlier one, in its effects or its answer. An OffsetCommit
    # cannot overwrite a later one, nor a produce land before an earlier one.

    async def _serve_rpc(
        self,
        frame: bytes | None,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        peer: object,
    ) -> None:
        follower = -1  # the broker whose replica fetches this connection carries
        try:
            while frame is not None:
                try:
                    header, request = decode_request(frame)
                except RequestDecodeError as e:
                    log.info("bad request from %s: %s", peer, e.error)
                    chunks = encode_response(e.header.correlation_id, None, e.error)
                else:
                    if isinstance(request, FetchRequest) and request.replica_id >= 0:
                        follower = request.replica_id
                    chunks = await self._handle(header, request)
                if chunks:
                    await send_chunks(writer, chunks)
                frame = await read_frame(reader, self._max_frame)
        finally:
            if (
                follower >= 0
                and self._on_fetch_connection_closed is not None
                and not self._stopping
            ):
                self._on_fetch_connection_closed(follower)

    async def _serve_kafka(
        self,
        kafka: KafkaHandler,
        frame: bytes | None,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        peer: object,
        session: ConnectionSession,
    ) -> None:
        """A Kafka client's connection from its first frame on. As Kafka does: an
        ApiVersions request newer than ours is answered with our ranges (KIP-511); any other
        request the broker cannot read, or an API it does not serve, closes the connection.
        A broker that has authenticated switches to the RPC with its next frame."""
        chunks: list[Chunk]
        sasl = session.sasl
        only_handshakes = True  # no request but ApiVersions and SASL's served yet
        while frame is not None:
            if only_handshakes and session.authenticated and is_minikafka_rpc(frame):
                if self._rpc_allowed(session, peer):
                    await self._serve_rpc(frame, reader, writer, peer)
                return
            if sasl is not None and sasl.raw_tokens and not sasl.authenticated:
                # After a v0 SaslHandshake: a bare token, answered bare.
                result = sasl.authenticate(bytes(frame))
                if result.failed:
                    log.info(
                        "authentication failed from %s: %s",
                        peer,
                        result.reason or result.error_message,
                    )
                    await asyncio.sleep(self.security.failed_authentication_delay_ms / 1000)
                    return
                if result.completed:
                    session.sasl_completed()
                await send_chunks(writer, [_SIZE.pack(len(result.auth_bytes)), result.auth_bytes])
                frame = await read_frame(reader, self._frame_limit(session))
                continue
            api = request_api(frame)
            if sasl is not None and not sasl.authenticated:
                try:
                    sasl.check_request(api[0] if api is not None else -1)
                except IllegalSaslState as e:
                    log.info("closing Kafka connection from %s: %s", peer, e)
                    return
            if api is not None and api[0] not in _HANDSHAKE_APIS:
                only_handshakes = False
            if api is not None and not codecs_loaded(*api, kafka.versions):
                await self._load_codecs(api, kafka.versions)
            try:
                request = decode_kafka_request(frame, kafka.versions)
                if not kafka.serves(request.api_key):
                    raise UnsupportedVersion(
                        request.api_key, request.api_version, request.correlation_id
                    )
            except UnsupportedVersion as e:
                if e.api_key != API_VERSIONS_KEY:
                    log.info("closing Kafka connection from %s: %s", peer, e)
                    return
                # A SASL exchange stays where it was: the client retries with a version we
                # serve (Kafka's SaslServerAuthenticator does the same).
                chunks = [unsupported_api_versions_response(e.correlation_id, kafka.versions)]
            except MalformedRequest as e:
                log.info("closing Kafka connection from %s: %s", peer, e)
                return
            else:
                try:
                    chunks = await kafka.handle(request, session) or []
                    if sasl is not None and request.api_key == API_VERSIONS_KEY:
                        sasl.api_versions_answered()
                except MalformedAclRequestError as e:
                    # A request Kafka's own parsing refuses (an ACL filter of UNKNOWN type):
                    # closed unanswered, as a malformed frame is.
                    log.info("closing Kafka connection from %s: malformed request: %s", peer, e)
                    return
                except CloseConnection as e:
                    log.info("closing Kafka connection from %s: %s", peer, e)
                    return
                except Exception:
                    # Kafka has no request-level error frame: a request that fails outside
                    # its per-partition errors ends the connection (the client reconnects
                    # and retries).
                    log.exception(
                        "Kafka api key %d v%d failed", request.api_key, request.api_version
                    )
                    writer.transport.abort()
                    return
            if chunks:
                await send_chunks(writer, chunks)
            if session.close_after_ms is not None:
                # A failed authentication: the answer is out; the connection ends after
                # connection.failed.authentication.delay.ms, which slows password guessing.
                await asyncio.sleep(session.close_after_ms / 1000)
                return
            frame = await read_frame(reader, self._frame_limit(session))

    async def _load_codecs(self, api: tuple[int, int], served: ServedVersions) -> None:
        """Load a Kafka request version's codecs in a worker thread, once for all the
        connections that meet it meanwhile: the event loop keeps serving the others."""
        loading = self._loading_codecs.get(api)
        if loading is None:
            loading = asyncio.ensure_future(asyncio.to_thread(load_codecs, *api, served))
            self._loading_codecs[api] = loading
            loading.add_done_callback(lambda _: self._loading_codecs.pop(api, None))
        # A failure to load is met again, and answered, by decode_request.
        with contextlib.suppress(Exception):
            await asyncio.shield(loading)

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
