"""Zero-copy responses (issue 6): file regions leave with os.sendfile, byte for byte what a
buffered read gives, under backpressure, after their segment is gone, and never as a torn
frame when the file shrank underneath. Real sockets, on uvloop (the broker's loop) and on
asyncio's own loop."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
import uvloop

from minikafka.protocol import transport
from minikafka.protocol.transport import Chunk, RegionTruncatedError, send_chunks
from minikafka.storage.record_batch import build_batch, stamp
from minikafka.storage.segment import LogSegment, SegmentRegion

Runner = Callable[[Coroutine[Any, Any, Any]], Any]
RUNNERS: dict[str, Runner] = {"uvloop": uvloop.run, "asyncio": asyncio.run}


def make_segment(directory: Path, batches: int, record_size: int = 1000) -> LogSegment:
    seg = LogSegment.create(directory, 0, 4096, 0)
    offset = 0
    for i in range(batches):
        b = bytearray(build_batch([os.urandom(record_size)] * 4, timestamp=i))
        stamp(b, 0, offset, 0)
        seg.append(b)
        offset += 4
    return seg


async def serve_once(
    chunks_for: Callable[[], list[Chunk]],
    on_client: Callable[[asyncio.StreamReader], Coroutine[Any, Any, bytes]],
    rcvbuf: int | None = None,
    sndbuf: int | None = None,
) -> tuple[bytes, BaseException | None]:
    """One connection: the server sends `chunks_for()` with send_chunks, then closes; the
    client's reader function returns what it read. Returns (read, server's exception)."""
    server_error: list[BaseException] = []
    sent = asyncio.Event()

    async def on_connection(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        if sndbuf is not None:
            w.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
        try:
            await send_chunks(w, chunks_for())
        except BaseException as e:  # the test inspects it
            server_error.append(e)
            w.transport.abort()
        else:
            w.close()
        sent.set()

    server = await asyncio.start_server(on_connection, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    sock = socket.socket()
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    reader, writer = await asyncio.open_connection(sock=sock, limit=1 << 16)
    try:
        async with asyncio.timeout(30):
            got = await on_client(reader)
            await sent.wait()
    finally:
        writer.close()
        server.close()
    return got, (server_error[0] if server_error else None)


async def read_all(reader: asyncio.StreamReader) -> bytes:
    return await reader.read(-1)


@pytest.mark.parametrize("loop", RUNNERS)
def test_regions_go_out_identical_to_buffered_reads(tmp_path: Path, loop: str) -> None:
    seg = make_segment(tmp_path, 200)
    a = seg.read(0, 100_000)
    b = seg.read(400, 10**9)
    assert a is not None and b is not None
    expected = b"head" + a.read() + b"middle" + b.read() + b"tail"

    async def main() -> tuple[bytes, BaseException | None]:
        return await serve_once(
            lambda: [b"head", a.region(), b"middle", b.region(), b"tail"], read_all
        )

    got, error = RUNNERS[loop](main())
    assert error is None
    assert got == expected


@pytest.mark.parametrize("loop", RUNNERS)
def test_a_slow_reader_gets_every_byte_through_the_wait_for_room(
    tmp_path: Path, loop: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The socket buffer fills long before 8 MB: sendfile stops with EAGAIN and resumes
    when the loop says the socket has room again."""
    seg = make_segment(tmp_path, 2000)
    whole = seg.read(0, 10**9)
    assert whole is not None and whole.size > 8_000_000
    waits = 0
    real_writable = transport._writable

    async def counting_writable(lp: asyncio.AbstractEventLoop, fd: int) -> None:
        nonlocal waits
        waits += 1
        await real_writable(lp, fd)

    monkeypatch.setattr(transport, "_writable", counting_writable)

    async def slow_reader(reader: asyncio.StreamReader) -> bytes:
        out = bytearray()
        while chunk := await reader.read(1 << 16):
            out += chunk
            if len(out) < 2_000_000:
                await asyncio.sleep(0.001)  # a slow consumer, not synchronisation
        return bytes(out)

    async def main() -> tuple[bytes, BaseException | None]:
        return await serve_once(lambda: [b"<", whole.region(), b">"], slow_reader, rcvbuf=1 << 16)

    got, error = RUNNERS[loop](main())
    assert error is None
    assert waits > 0, "the socket never pushed back: the test did not exercise the wait"
    assert got == b"<" + whole.read() + b">"


@pytest.mark.parametrize("loop", RUNNERS)
def test_a_region_outlives_its_segment(tmp_path: Path, loop: str) -> None:
    """Retention may delete a segment between building a response and sending it."""
    seg = make_segment(tmp_path, 50)
    s = seg.read(0, 10**9)
    assert s is not None
    expected = s.read()
    region = s.region()
    seg.close()
    seg.delete()
    assert not list(tmp_path.glob("*.log"))

    async def main() -> tuple[bytes, BaseException | None]:
        return await serve_once(lambda: [region], read_all)

    got, error = RUNNERS[loop](main())
    assert error is None and got == expected


@pytest.mark.parametrize("loop", RUNNERS)
def test_a_file_shrunk_under_a_response_aborts_the_connection(tmp_path: Path, loop: str) -> None:
    """Truncation after the response was built: the frame cannot be finished. The sender
    raises and the connection is dropped: the reader gets a short stream it detects, never
    a frame padded with other bytes."""
    seg = make_segment(tmp_path, 50)
    s = seg.read(0, 10**9)
    assert s is not None
    regions: list[SegmentRegion] = []

    def chunks() -> list[Chunk]:
        region = s.region()
        regions.append(region)
        seg.truncate_to(40)  # cut after the region was taken
        return [b"x" * 10, region]

    async def main() -> tuple[bytes, BaseException | None]:
        return await serve_once(chunks, read_all)

    got, error = RUNNERS[loop](main())
    assert isinstance(error, RegionTruncatedError)
    assert len(got) < 10 + s.size
    assert regions[0]._fd == -1, "the region's descriptor must be closed after the attempt"


@pytest.mark.parametrize("loop", RUNNERS)
def test_bytes_queued_in_the_transport_leave_before_the_region(tmp_path: Path, loop: str) -> None:
    """A frame's head can sit in the transport's buffer (the socket was full): the region
    must wait for it, or its bytes would overtake the head on the wire."""
    seg = make_segment(tmp_path, 100)
    s = seg.read(0, 10**9)
    assert s is not None
    head = os.urandom(4_000_000)

    async def slow_reader(reader: asyncio.StreamReader) -> bytes:
        out = bytearray()
        while chunk := await reader.read(1 << 16):
            out += chunk
            await asyncio.sleep(0.0005)  # a slow consumer keeps the head queued
        return bytes(out)

    async def main() -> tuple[bytes, BaseException | None]:
        return await serve_once(
            lambda: [head, s.region(), b"end"], slow_reader, rcvbuf=1 << 16, sndbuf=1 << 16
        )

    got, error = RUNNERS[loop](main())
    assert error is None
    assert got == head + s.read() + b"end"


@pytest.mark.parametrize("loop", RUNNERS)
def test_small_regions_leave_in_the_frames_one_write_and_large_ones_with_sendfile(
    tmp_path: Path, loop: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long poll's few kilobytes are copied into the frame's write; a bulk read is sent
    from the page cache with sendfile."""
    seg = make_segment(tmp_path, 200)
    small = seg.read(0, transport.COPY_REGION_MAX_BYTES)
    large = seg.read(400, 10**9)
    assert small is not None and large is not None
    assert 0 < small.size <= transport.COPY_REGION_MAX_BYTES < large.size
    sent_from: list[int] = []
    real_sendfile = os.sendfile

    def counting_sendfile(out_fd: int, in_fd: int, offset: int | None, count: int) -> int:
        sent_from.append(count)
        return real_sendfile(out_fd, in_fd, offset, count)

    monkeypatch.setattr(transport.os, "sendfile", counting_sendfile)

    def run(chunks: Callable[[], list[Chunk]]) -> bytes:
        got, error = RUNNERS[loop](serve_once(chunks, read_all))
        assert error is None
        return got

    assert run(lambda: [b"head", small.region(), b"tail"]) == b"head" + small.read() + b"tail"
    assert sent_from == []
    assert run(lambda: [b"head", large.region(), b"tail"]) == b"head" + large.read() + b"tail"
    assert sent_from and sent_from[0] == large.size


@pytest.mark.parametrize("loop", RUNNERS)
def test_a_small_region_of_a_shrunk_file_aborts_the_connection_too(
    tmp_path: Path, loop: str
) -> None:
    seg = make_segment(tmp_path, 50)
    s = seg.read(0, transport.COPY_REGION_MAX_BYTES)
    assert s is not None and s.size <= transport.COPY_REGION_MAX_BYTES
    regions: list[SegmentRegion] = []

    def chunks() -> list[Chunk]:
        region = s.region()
        regions.append(region)
        seg.truncate_to(4)  # the region's batches after the first are gone
        return [b"x" * 10, region]

    got, error = RUNNERS[loop](serve_once(chunks, read_all))
    assert isinstance(error, RegionTruncatedError)
    assert len(got) < 10 + s.size
    assert regions[0]._fd == -1
