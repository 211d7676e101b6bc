"""A raw Kafka-protocol connection for tests: requests built with kio, sent over a socket as
any Kafka client would, responses read back with kio. For what no well-behaved client
sends (bad CRCs, unknown API versions, garbage frames)."""

from __future__ import annotations

import socket
import struct
from typing import Any

from kio.serial import entity_reader

from minikafka.client import kafka_wire
from minikafka.protocol.kafka.codec import response_type


def request_frame(body: Any, correlation_id: int = 1, client_id: str | None = "raw") -> bytes:
    """The size-prefixed frame of a kio request entity (header of the version its schema
    names)."""
    return kafka_wire.request_frame(body, correlation_id, client_id)


class KafkaWire:
    def __init__(self, host: str, port: int, timeout: float = 15.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> KafkaWire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes | None:
        """The next response frame after its size, or None when the broker closed."""
        head = self._read_exactly(4)
        if head is None:
            return None
        (size,) = struct.unpack(">i", head)
        return self._read_exactly(size)

    def _read_exactly(self, n: int) -> bytes | None:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def call(self, body: Any, correlation_id: int = 1) -> Any:
        """Send a request and return the response entity (its correlation id checked)."""
        self.send_raw(request_frame(body, correlation_id))
        return self.read_response(body, correlation_id)

    def pipeline(self, bodies: list[Any], first_correlation_id: int = 1) -> list[Any]:
        """Send every request in one write, numbered from `first_correlation_id`, without
        waiting for any answer, then read the answers: each must carry the correlation id
        of the request sent in its place."""
        ids = range(first_correlation_id, first_correlation_id + len(bodies))
        self.send_raw(b"".join(request_frame(b, i) for b, i in zip(bodies, ids, strict=True)))
        return [self.read_response(b, i) for b, i in zip(bodies, ids, strict=True)]

    def read_response(self, body: Any, correlation_id: int) -> Any:
        """The next response, read as the answer to request `body` numbered
        `correlation_id`."""
        frame = self.read_frame()
        assert frame is not None, "the broker closed the connection"
        (got,) = struct.unpack_from(">i", frame)
        assert got == correlation_id, f"answer {got} came where {correlation_id}'s was due"
        rtype = response_type(body.__api_key__, body.__version__)
        offset = 4 + (1 if rtype.__header_schema__.__version__ >= 1 else 0)
        value, used = entity_reader(rtype)(memoryview(frame), offset)
        assert offset + used == len(frame)
        return value

    def closed_by_broker(self) -> bool:
        """Whether the broker closed the connection (reads nothing more)."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
