"""protocol/kafka/client_codec.exchange, the one request/response exchange on Kafka's protocol
behind the tools' KafkaConnection and a broker's SASL login to another: an answer carrying
another request's correlation id puts the connection out of step, and each caller says so
in its own terms (the tools: NETWORK_EXCEPTION, the connection dropped; the broker's
login: SASL_AUTHENTICATION_FAILED)."""

from __future__ import annotations

import asyncio
import io
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.schema.sasl_handshake.v1.response import SaslHandshakeResponse
from kio.serial import entity_writer

from minikafka.client.kafka_wire import KafkaConnection, NetworkError
from minikafka.client.wire_security import PLAINTEXT_WIRE
from minikafka.protocol.kafka.client_codec import CorrelationMismatchError, exchange
from minikafka.security.sasl_client import AuthenticationFailedError
from minikafka.server.listener_security import sasl_client_authenticate

WRONG_ID = 7


def handshake_answer(correlation_id: int) -> bytes:
    """A SaslHandshake v1 response frame (header v0) offering SCRAM-SHA-512."""
    out = io.BytesIO()
    response = SaslHandshakeResponse(error_code=ErrorCode.none, mechanisms=("SCRAM-SHA-512",))
    entity_writer(SaslHandshakeResponse)(out, response)
    body = struct.pack(">i", correlation_id) + out.getvalue()
    return struct.pack(">i", len(body)) + body


@dataclass
class OutOfStepPeer:
    host: str
    port: int
    connections: int = 0


@pytest.fixture
async def out_of_step() -> AsyncIterator[OutOfStepPeer]:
    """A peer that answers each request with a well-formed SaslHandshake response numbered
    WRONG_ID, whatever the request's number; it counts the connections made to it."""
    peer = OutOfStepPeer("127.0.0.1", 0)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer.connections += 1
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                await reader.readexactly(size)
                writer.write(handshake_answer(WRONG_ID))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(serve, peer.host, 0)
    peer.port = server.sockets[0].getsockname()[1]
    async with server:
        yield peer


async def test_exchange_returns_the_answer_to_its_request() -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        (size,) = struct.unpack(">i", await reader.readexactly(4))
        (correlation_id,) = struct.unpack_from(">i", await reader.readexactly(size), 4)
        writer.write(handshake_answer(correlation_id))
        await writer.drain()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    async with server:
        reader, writer = await asyncio.open_connection(*server.sockets[0].getsockname()[:2])
        answer = await exchange(
            reader, writer, SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 3, "test"
        )
        writer.close()
    assert answer.mechanisms == ("SCRAM-SHA-512",)


async def test_an_answer_to_another_request_is_a_correlation_mismatch(
    out_of_step: OutOfStepPeer,
) -> None:
    reader, writer = await asyncio.open_connection(out_of_step.host, out_of_step.port)
    with pytest.raises(CorrelationMismatchError, match="answer 7 came where 3's was due") as e:
        await exchange(reader, writer, SaslHandshakeRequest(mechanism="PLAIN"), 3, "test")
    writer.close()
    assert (e.value.got, e.value.expected) == (WRONG_ID, 3)


async def test_the_tools_connection_drops_an_out_of_step_connection(
    out_of_step: OutOfStepPeer,
) -> None:
    connection = KafkaConnection(
        out_of_step.host, out_of_step.port, client_id="test", security=PLAINTEXT_WIRE
    )
    try:
        with pytest.raises(NetworkError, match="answer 7 came where 1's was due"):
            await connection.call(SaslHandshakeRequest(mechanism="PLAIN"), 5)
        # Dropped: the next request goes over a new connection (its numbers run on).
        with pytest.raises(NetworkError, match="answer 7 came where 2's was due"):
            await connection.call(SaslHandshakeRequest(mechanism="PLAIN"), 5)
        assert out_of_step.connections == 2
    finally:
        await connection.close()


async def test_a_brokers_sasl_login_out_of_step_fails_authentication(
    out_of_step: OutOfStepPeer,
) -> None:
    reader, writer = await asyncio.open_connection(out_of_step.host, out_of_step.port)
    with pytest.raises(AuthenticationFailedError, match=r"SASL answer out of step \(7 != 1\)"):
        await sasl_client_authenticate("SCRAM-SHA-512", "broker", "secret", reader, writer)
    writer.close()
