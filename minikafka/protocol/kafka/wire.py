"""Writers shared by the hand-written response encoders (fetch_response, produce_response)."""

from __future__ import annotations


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
