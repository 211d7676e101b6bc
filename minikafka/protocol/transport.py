"""Size-prefixed frames on asyncio streams, shared by both protocols a listener serves:
Apache Kafka's and minikafka's RPC (minikafka/rpc/) both put a frame's size in its first
four bytes, and both send record batches from segment files as file regions."""

from __future__ import annotations

import asyncio
import contextlib
import os
import struct
from collections.abc import Sequence
from typing import Protocol

SIZE_PREFIX = struct.Struct(">I")
DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024  # socket.request.max.bytes


class FileRegion(Protocol):
    """Bytes that live in a file: the transport may send them without reading them in
    (os.sendfile from `fileno()` at `position`). The region owns its descriptor: whoever
    sends or reads it closes it."""

    @property
    def size(self) -> int: ...

    @property
    def position(self) -> int: ...

    def fileno(self) -> int: ...

    def read(self) -> bytes: ...

    def close(self) -> None: ...


Chunk = bytes | bytearray | memoryview | FileRegion


class FrameError(Exception):
    """The stream cannot be trusted any more (oversized or undecodable frame): close it."""


async def read_frame(reader: asyncio.StreamReader, max_bytes: int) -> bytes | None:
    """The next frame's body (after the size field), or None on a clean end of stream.

    Raises FrameError for an oversized frame and asyncio.IncompleteReadError for a stream cut
    in the middle of a frame.
    """
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise
    (size,) = SIZE_PREFIX.unpack(head)
    if size > max_bytes:
        raise FrameError(f"frame of {size} bytes is larger than the maximum {max_bytes}")
    return await reader.readexactly(size)


class RegionTruncatedError(ConnectionError):
    """A file region's bytes were gone when the frame went out (the segment was truncated
    after the response was built): the frame cannot be completed, the connection must go."""


# Regions up to this size are copied into the frame's one write (a writev with the frame's
# other bytes) instead of going out with sendfile: a sendfile costs a write of the bytes
# before it, a wait for them to leave, a dup of the descriptor and the sendfile itself,
# several system calls where copying a few pages from the page cache costs less. Replicas'
# and consumers' long polls under a steady load mostly carry such small reads; catching up
# and bulk reads carry large ones, which stay zero-copy.
COPY_REGION_MAX_BYTES = 64 * 1024


async def send_chunks(writer: asyncio.StreamWriter, chunks: Sequence[Chunk]) -> None:
    """Write a frame and wait until the transport can take more. Large file regions go from
    the page cache to the socket with os.sendfile (no copy through Python), as Kafka's
    FileRecords.writeTo does; small ones are copied in, so that a frame of bytes and small
    regions leaves in one write. Every region is closed when this returns or raises."""
    try:
        buffers: list[bytes | bytearray | memoryview] = []
        for c in chunks:
            if isinstance(c, bytes | bytearray | memoryview):
                buffers.append(c)
            elif c.size <= COPY_REGION_MAX_BYTES:
                buffers.append(_copy_region(c))
            else:
                if buffers:
                    writer.writelines(buffers)
                    buffers = []
                await _sendfile(writer, c)
        if buffers:
            writer.writelines(buffers)
        await writer.drain()
    finally:
        for c in chunks:
            if not isinstance(c, bytes | bytearray | memoryview):
                c.close()


def _copy_region(region: FileRegion) -> bytes:
    try:
        return region.read()
    except EOFError as e:  # the file shrank: the frame cannot be completed
        raise RegionTruncatedError(str(e)) from None


async def _sendfile(writer: asyncio.StreamWriter, region: FileRegion) -> None:
    sock = writer.get_extra_info("socket")
    # Not a socket transport, or a TLS one (the bytes must pass through the encryption; the
    # raw socket would take them in the clear): copy.
    if sock is None or writer.get_extra_info("ssl_object") is not None:
        writer.write(region.read())
        return
    # Bytes already handed to the transport must reach the socket first.
    await _drain_completely(writer)
    if writer.transport.is_closing():
        raise ConnectionResetError("connection closed while a response was being sent")
    # A descriptor of our own for the socket: the transport may close its own while we wait,
    # and its number could then name another connection. Waiting for room uses it too, since
    # the loop refuses a writer callback on the transport's descriptor.
    fd = os.dup(sock.fileno())
    loop = asyncio.get_running_loop()
    try:
        offset, remaining = region.position, region.size
        while remaining > 0:
            try:
                sent = os.sendfile(fd, region.fileno(), offset, remaining)
            except BlockingIOError:
                await _writable(loop, fd)
                if writer.transport.is_closing():
                    raise ConnectionResetError("connection closed during sendfile") from None
                continue
            if sent == 0:
                raise RegionTruncatedError(
                    f"file region ended {remaining} bytes early at position {offset}"
                )
            offset += sent
            remaining -= sent
    finally:
        os.close(fd)


async def _drain_completely(writer: asyncio.StreamWriter) -> None:
    transport = writer.transport
    if transport.get_write_buffer_size() == 0:
        return
    low, high = transport.get_write_buffer_limits()
    transport.set_write_buffer_limits(high=0, low=0)  # drain() now waits for an empty buffer
    try:
        await writer.drain()
    finally:
        with contextlib.suppress(Exception):
            transport.set_write_buffer_limits(high=high, low=low)


async def _writable(loop: asyncio.AbstractEventLoop, fd: int) -> None:
    ready = loop.create_future()

    def on_writable() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_writer(fd, on_writable)
    try:
        await ready
    finally:
        loop.remove_writer(fd)
