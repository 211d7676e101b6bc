"""A one-node stand-in Kafka broker on loopback for the CLI's tests: it reads Kafka frames,
answers ApiVersions with what it serves, and hands every other request to its subclass's
`answer` (under one lock). The subclasses (scram_broker.py, acl_broker.py) answer as Kafka
2.8 does, so a command can be tested through librdkafka on Kafka's protocol."""

from __future__ import annotations

import datetime
import socket
import struct
import threading
from typing import Any

from kio.schema.api_versions.v3 import response as versions_response
from kio.schema.errors import ErrorCode
from kio.static.primitive import i16, i32Timedelta

from minikafka.protocol.kafka.codec import KafkaRequest, decode_request, encode_response

NO_TIME = i32Timedelta.parse(datetime.timedelta(0))
_SIZE = struct.Struct(">i")


class StandInBroker:
    def __init__(self, served: dict[int, tuple[int, int]]) -> None:
        self.served = served
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._server.getsockname()[1]
        self.bootstrap = f"127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._server.close()

    def answer(self, request: KafkaRequest) -> Any:
        raise NotImplementedError

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                head = _read(conn, 4)
                if head is None:
                    return
                frame = _read(conn, _SIZE.unpack(head)[0])
                if frame is None:
                    return
                request = decode_request(frame, self.served)
                with self._lock:
                    body = self._api_versions() if request.api_key == 18 else self.answer(request)
                conn.sendall(encode_response(request, body))

    def _api_versions(self) -> Any:
        return versions_response.ApiVersionsResponse(
            error_code=ErrorCode.none,
            api_keys=tuple(
                versions_response.ApiVersion(
                    api_key=i16(k), min_version=i16(lo), max_version=i16(hi)
                )
                for k, (lo, hi) in sorted(self.served.items())
            ),
            throttle_time=NO_TIME,
        )


def _read(conn: socket.socket, n: int) -> bytes | None:
    out = bytearray()
    while len(out) < n:
        try:
            chunk = conn.recv(n - len(out))
        except OSError:
            return None
        if not chunk:
            return None
        out += chunk
    return bytes(out)
