"""A Kafka-protocol connection for the few requests no librdkafka call can send: kio's
request entities written to a broker's client listener as any Kafka client frames them,
the answers read back as kio's response entities. One request at a time; a connection
that failed or timed out is closed (a late answer must not be taken for the next one's)
and opened again by the next request.

The tools' Kafka clients are librdkafka's (`librdkafka.py`); this is for what librdkafka
does not expose, such as a Fetch as Kafka's debugging consumer (replica id -2), or a
Metadata request to one broker of one's choosing (librdkafka asks whichever it likes).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from minikafka.client.client_security import client_security
from minikafka.client.wire_security import WireSecurity, wire_security
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.kafka.client_codec import exchange, parse_response, request_frame
from minikafka.security.sasl_client import sasl_client_authenticate

__all__ = ["KafkaConnection", "NetworkError", "metadata_request", "parse_response", "request_frame"]


class NetworkError(KafkaError):
    """The connection could not be made, failed, or closed (Kafka's NETWORK_EXCEPTION);
    retriable."""

    code = ErrorCode.NETWORK_EXCEPTION
    retriable = True


def metadata_request(topics: Sequence[str] | None) -> Any:
    """Kafka's Metadata request (v13, the latest brokers serve) for `topics`, every topic
    when None; it never auto-creates a topic (what Kafka's admin client sends)."""
    from kio.schema.metadata.v13.request import MetadataRequest, MetadataRequestTopic
    from kio.schema.types import TopicName

    return MetadataRequest(
        topics=None
        if topics is None
        else tuple(MetadataRequestTopic(topic_id=None, name=TopicName(t)) for t in topics),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )


class KafkaConnection:
    """One broker's client listener at `host:port`, with `security` (by default the
    process's client settings, client_security.py, as its librdkafka clients have them):
    TLS, then SASL, on every new connection."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str,
        connect_timeout_s: float = 10.0,
        security: WireSecurity | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self._connect_timeout_s = connect_timeout_s
        self._security = wire_security(client_security()) if security is None else security
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lock = asyncio.Lock()
        self._correlation_id = 0

    async def call(self, request: Any, timeout_s: float) -> Any:
        """Send `request` (a kio request entity) and return the broker's response entity.
        NetworkError when the connection fails or `timeout_s` passes first."""
        async with self._lock:
            try:
                return await asyncio.wait_for(self._call(request), timeout_s)
            except TimeoutError:
                await self._drop()
                raise NetworkError(
                    f"broker at {self.host}:{self.port} did not answer within "
                    f"{round(timeout_s * 1000)} ms"
                ) from None
            except (OSError, asyncio.IncompleteReadError) as e:
                await self._drop()
                raise NetworkError(f"broker at {self.host}:{self.port}: {e}") from None
            except KafkaError:
                await self._drop()  # a refused authentication: the broker closes it too
                raise
            except asyncio.CancelledError:
                self._abort()  # mid-request: its answer may still come
                raise

    async def _call(self, request: Any) -> Any:
        if self._streams is None:
            self._streams = await asyncio.wait_for(self._connect(), self._connect_timeout_s)
        return await self._exchange(request)

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        security = self._security
        context = security.ssl_context
        streams = await asyncio.open_connection(
            self.host,
            self.port,
            ssl=context,
            # The name for SNI, and checked when the context checks names.
            server_hostname=self.host if context is not None else None,
        )
        if security.sasl is not None:
            self._streams = streams
            sasl = security.sasl
            try:
                await sasl_client_authenticate(
                    sasl.mechanism, sasl.username, sasl.password, self._exchange
                )
            except BaseException:
                self._abort()
                raise
        return streams

    async def _exchange(self, request: Any) -> Any:
        assert self._streams is not None
        reader, writer = self._streams
        self._correlation_id += 1
        return await exchange(reader, writer, request, self._correlation_id, self.client_id)

    def _abort(self) -> None:
        streams, self._streams = self._streams, None
        if streams is not None:
            streams[1].close()

    async def _drop(self) -> None:
        streams = self._streams
        self._abort()
        if streams is not None:
            with contextlib.suppress(OSError):
                await streams[1].wait_closed()

    async def close(self) -> None:
        async with self._lock:
            await self._drop()
