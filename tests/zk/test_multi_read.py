"""The multiRead request's bytes, both ways (its use against a real ZooKeeper is in
test_client.py)."""

from __future__ import annotations

import pytest
from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.protocol.serialization import int_struct, multiheader_struct, stat_struct, write_buffer

from minikafka.zk.multi_read import MultiRead

STAT = tuple(range(1, 12))


def reply(*parts: bytes) -> bytes:
    return b"".join(parts) + multiheader_struct.pack(-1, True, -1)


def found(data: bytes) -> bytes:
    return multiheader_struct.pack(4, False, 0) + write_buffer(data) + stat_struct.pack(*STAT)


def failed(code: int) -> bytes:
    return multiheader_struct.pack(-1, False, code) + int_struct.pack(code)


def test_request_is_a_getdata_per_path_then_the_end_marker() -> None:
    body = bytes(MultiRead(["/a", "/bc"]).serialize())
    assert body == (
        multiheader_struct.pack(4, False, -1)
        + int_struct.pack(2)
        + b"/a\x00"
        + multiheader_struct.pack(4, False, -1)
        + int_struct.pack(3)
        + b"/bc\x00"
        + multiheader_struct.pack(-1, True, -1)
    )


def test_reply_gives_each_read_its_data_or_its_own_error() -> None:
    got = MultiRead(["/a", "/missing", "/b", "/secret"]).deserialize(
        reply(found(b"x"), failed(NoNodeError.code), found(b""), failed(NoAuthError.code)), 0
    )
    assert got[0][0] == b"x" and tuple(got[0][1]) == STAT  # type: ignore[index]
    assert isinstance(got[1], NoNodeError)
    assert got[2][0] == b""  # type: ignore[index]
    assert isinstance(got[3], NoAuthError)


def test_a_reply_of_another_length_is_refused() -> None:
    # A server that does not know multiRead may answer with no results at all.
    with pytest.raises(ValueError, match="answered 0"):
        MultiRead(["/a"]).deserialize(reply(), 0)
