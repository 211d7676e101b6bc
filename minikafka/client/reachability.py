"""Which brokers answer now: an ApiVersions request to each, in parallel, with a short
timeout. A broker killed a moment ago stays registered (and in the metadata and the ISRs)
until its ZooKeeper session expires; a paused one even accepts connections. Only a request
tells them apart from a live broker, and that is what writes with acks=all wait on."""

from __future__ import annotations

import io
import socket
import struct
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import cache

PROBE_TIMEOUT_S = 1.0


@cache
def _api_versions_frame() -> bytes:
    # Imported here: kio's schemas take a noticeable part of a second to import, which every
    # `minikafka` command would pay at start for a probe only `topics --describe` sends.
    from kio.schema.api_versions.v0.request import ApiVersionsRequest
    from kio.schema.request_header.v1.header import RequestHeader
    from kio.serial import entity_writer
    from kio.static.primitive import i16, i32

    request = ApiVersionsRequest()
    header = RequestHeader(
        request_api_key=i16(request.__api_key__),
        request_api_version=i16(request.__version__),
        correlation_id=i32(1),
        client_id="minikafka-probe",
    )
    out = io.BytesIO()
    entity_writer(RequestHeader)(out, header)
    entity_writer(ApiVersionsRequest)(out, request)
    payload = out.getvalue()
    return struct.pack(">i", len(payload)) + payload


def answers(
    host: str, port: int, timeout_s: float = PROBE_TIMEOUT_S, frame: bytes | None = None
) -> bool:
    """Whether the broker at host:port answers an ApiVersions request (`frame`, made here
    if not given) within `timeout_s`."""
    if frame is None:
        frame = _api_versions_frame()
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            sock.sendall(frame)
            return len(sock.recv(8)) > 0
    except OSError:
        return False


def unanswering(
    addresses: Mapping[int, tuple[str, int]], timeout_s: float = PROBE_TIMEOUT_S
) -> set[int]:
    """The brokers (id -> host, port) that do not answer within `timeout_s`."""
    if not addresses:
        return set()
    # Made (kio imported) here, before the threads: kio's modules imported for the first time
    # in several threads at once can fail with importlib's _DeadlockError.
    frame = _api_versions_frame()
    with ThreadPoolExecutor(max_workers=min(16, len(addresses))) as pool:
        got = dict(
            zip(
                addresses,
                pool.map(lambda a: answers(a[0], a[1], timeout_s, frame), addresses.values()),
                strict=True,
            )
        )
    return {b for b, ok in got.items() if not ok}
