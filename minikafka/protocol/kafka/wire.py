"""Writers shared by the hand-written response encoders (fetch_response, produce_response,
metadata_response)."""

from __future__ import annotations

import struct
from typing import Final

_I16: Final = struct.Struct(">h")


def uvarint(value: int) -> bytes:
    """An unsigned varint (Kafka's, as protobuf's): 7 bits a byte, low bits first."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def append_compact_length(buf: bytearray, length: int) -> None:
    """A compact array's, string's or bytes' length (length + 1, as an unsigned varint);
    one byte, appended directly, for the usual short ones."""
    n = length + 1
    if n < 0x80:
        buf.append(n)
    else:
        buf += uvarint(n)


def append_nullable_string(buf: bytearray, value: str | None, flexible: bool) -> None:
    """A nullable string: compact (length + 1, 0 for null) in flexible versions, else an
    int16 length (-1 for null)."""
    if value is None:
        buf += b"\x00" if flexible else b"\xff\xff"
        return
    encoded = value.encode()
    if flexible:
        append_compact_length(buf, len(encoded))
    else:
        buf += _I16.pack(len(encoded))
    buf += encoded
