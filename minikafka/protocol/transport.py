"""Reading and writing frames on asyncio streams (shared by broker and client)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from minikafka.protocol.framing import SIZE_PREFIX, Chunk, FrameError


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


def write_chunks(writer: asyncio.StreamWriter, chunks: Sequence[Chunk]) -> None:
    for c in chunks:
        if isinstance(c, bytes | bytearray | memoryview):
            writer.write(c)
        else:
            # A file region: read here; the zero-copy sendfile path replaces this.
            writer.write(c.read())
