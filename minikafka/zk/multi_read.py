"""ZooKeeper's multiRead (3.6+, ZOOKEEPER-3364) as a kazoo request: many getData in one
request and one reply.

kazoo sends each request on its own, one per turn of its connection thread, and wakes that
thread with a byte per request: about 5,000 reads a second, 20 s for the state znodes of
100,000 partitions when a new controller loads them. A multiRead of a thousand paths costs
one turn. Unlike a multi of writes it is not atomic: each read succeeds or fails on its own
(a missing znode is a NoNodeError in its place, the others are read).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import (
    GetData,
    MultiHeader,
    ZnodeStat,
    int_struct,
    multiheader_struct,
    read_buffer,
    stat_struct,
)

__all__ = ["MULTI_READ_PATHS", "MultiRead"]

# Paths per multiRead: a state znode's reply (data, stat, header) is about 200 bytes, so the
# replies stay far below jute.maxbuffer (1 MiB), as do the requests (a path each).
MULTI_READ_PATHS = 1000


class MultiRead:
    """kazoo request: getData of each path; the reply is, per path in order, `(data, stat)`
    or the kazoo exception its read failed with."""

    type = 22  # ZooDefs.OpCode.multiRead

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = list(paths)

    def __repr__(self) -> str:
        return f"MultiRead({len(self.paths)} paths)"

    def serialize(self) -> bytearray:
        b = bytearray()
        for path in self.paths:
            b += MultiHeader(GetData.type, False, -1).serialize()
            b += GetData(path, False).serialize()
        b += multiheader_struct.pack(-1, True, -1)
        return b

    def deserialize(self, buf: bytes, offset: int) -> list[tuple[bytes, Any] | Exception]:
        out: list[tuple[bytes, Any] | Exception] = []
        while True:
            header, offset = MultiHeader.deserialize(buf, offset)
            if header.done:
                break
            if header.type == GetData.type:
                data, offset = read_buffer(buf, offset)
                stat = ZnodeStat._make(stat_struct.unpack_from(buf, offset))
                offset += stat_struct.size
                out.append((data, stat))
            elif header.type == -1:
                err = int_struct.unpack_from(buf, offset)[0]
                offset += int_struct.size
                out.append(EXCEPTIONS[err]())
            else:
                raise ValueError(f"unexpected result type {header.type} in a multiRead reply")
        if len(out) != len(self.paths):
            raise ValueError(f"multiRead of {len(self.paths)} paths answered {len(out)}")
        return out
