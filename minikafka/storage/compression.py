"""The compression codecs of Kafka's record batches (attributes bits 0-2).

A compressed batch's records (everything after the 61-byte header) are one compressed
blob, in the framing Kafka's clients use:

- gzip (1): a gzip member (zlib with the gzip wrapper).
- snappy (2): Java clients write xerial's snappy-java stream (an 8-byte magic, two
  version ints, then blocks of [int32 length][raw snappy]); librdkafka writes one raw snappy
  block. Both are read; xerial's stream is written, as Kafka's own producer does.
- lz4 (3): the LZ4 frame format, 64 KiB independent blocks without content size (what
  Kafka's KafkaLZ4BlockOutputStream writes).
- zstd (4): a zstd frame.

Brokers store batches as sent (Kafka's topic default compression.type=producer), and
decompress them to check the records (LogValidator); a topic whose compression.type names
a codec has a leader recompress every batch in another one (`Log`). Decompression
stops at `max_size` bytes, so a small batch that inflates without bound (a decompression
bomb) is refused instead of exhausting the broker's memory.
"""

from __future__ import annotations

import struct
import zlib
from typing import Final

import lz4.frame
import snappy
import zstandard

NONE: Final = 0
GZIP: Final = 1
SNAPPY: Final = 2
LZ4: Final = 3
ZSTD: Final = 4
CODEC_NAMES: Final = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
CODEC_IDS: Final = {name: codec for codec, name in CODEC_NAMES.items()}

# Far above any batch a client sends (max.message.bytes defaults to 1 MiB compressed),
# far below what would hurt a broker.
MAX_DECOMPRESSED_BYTES: Final = 256 * 1024 * 1024

_XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = struct.Struct(">8sii")
_XERIAL_BLOCK: Final = 32 * 1024  # snappy-java's default block size
_INT32: Final = struct.Struct(">i")
_LZ4_BLOCK_64KB: Final = 4  # lz4.frame's BLOCKSIZE_MAX64KB


class CompressionError(ValueError):
    """The bytes are not valid for their codec, or inflate beyond the limit."""


# A topic's compression.type: "producer" keeps each batch's codec (None), the others name
# the one a leader writes ("uncompressed" is no compression).
TOPIC_COMPRESSION_TYPES: Final[dict[str, int | None]] = {
    "producer": None,
    "uncompressed": NONE,
    "gzip": GZIP,
    "snappy": SNAPPY,
    "lz4": LZ4,
    "zstd": ZSTD,
}


def codec_name(codec: int) -> str:
    return CODEC_NAMES.get(codec, f"unknown codec {codec}")


def codec_id(name: str) -> int:
    """The attributes id of a compression.type name (none, gzip, snappy, lz4, zstd)."""
    try:
        return CODEC_IDS[name]
    except KeyError:
        raise ValueError(
            f"compression.type must be one of {', '.join(CODEC_IDS)}, not {name!r}"
        ) from None


def compress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    if codec == GZIP:
        c = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
        return c.compress(data) + c.flush()
    if codec == SNAPPY:
        return _xerial_compress(data)
    if codec == LZ4:
        out: bytes = lz4.frame.compress(
            data,
            block_size=_LZ4_BLOCK_64KB,
            block_linked=False,
            content_checksum=False,
            store_size=False,
        )
        return out
    if codec == ZSTD:
        return zstandard.ZstdCompressor(level=3).compress(data)
    raise ValueError(f"cannot compress with {codec_name(codec)}")


def decompress(
    codec: int, data: bytes | bytearray | memoryview, max_size: int = MAX_DECOMPRESSED_BYTES
) -> bytes:
    """The decompressed bytes; CompressionError if they do not decode or exceed max_size."""
    try:
        if codec == GZIP:
            d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            out = d.decompress(data, max_size + 1)
            if not d.eof:
                raise CompressionError(_too_large(max_size) if len(out) > max_size else "truncated")
        elif codec == SNAPPY:
            out = _snappy_decompress(bytes(data), max_size)
        elif codec == LZ4:
            ld = lz4.frame.LZ4FrameDecompressor()
            out = ld.decompress(data, max_size + 1)
            if not ld.eof:
                raise CompressionError(_too_large(max_size) if len(out) > max_size else "truncated")
        elif codec == ZSTD:
            out = _zstd_decompress(data, max_size)
        else:
            raise CompressionError(f"cannot decompress {codec_name(codec)}")
    except CompressionError:
        raise
    except Exception as e:  # each library has its own error types; all mean "bad bytes"
        raise CompressionError(f"{codec_name(codec)}: {e}") from e
    if len(out) > max_size:
        raise CompressionError(_too_large(max_size))
    return out


def _too_large(max_size: int) -> str:
    return f"decompresses to more than {max_size} bytes"


def _xerial_compress(data: bytes | bytearray | memoryview) -> bytes:
    parts = [_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1)]
    view = memoryview(data)
    for start in range(0, len(view), _XERIAL_BLOCK):
        block: bytes = snappy.compress(bytes(view[start : start + _XERIAL_BLOCK]))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_decompress(data: bytes, max_size: int) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return _raw_snappy(data, max_size, max_size)
    if len(data) < _XERIAL_HEADER.size:
        raise CompressionError("snappy: truncated xerial header")
    pos = _XERIAL_HEADER.size
    out: list[bytes] = []
    total = 0
    while pos < len(data):
        if len(data) - pos < 4:
            raise CompressionError("snappy: truncated xerial block length")
        (n,) = _INT32.unpack_from(data, pos)
        pos += 4
        if n < 0 or n > len(data) - pos:
            raise CompressionError(f"snappy: xerial block of {n} bytes past the end")
        block = _raw_snappy(data[pos : pos + n], max_size - total, max_size)
        total += len(block)
        out.append(block)
        pos += n
    return b"".join(out)


def _raw_snappy(block: bytes, room: int, max_size: int) -> bytes:
    # A raw snappy block starts with its uncompressed length (a varint): check it against the
    # room left before allocating.
    length = shift = 0
    for i, b in enumerate(block[:5]):
        length |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
        if i == 4:
            raise CompressionError("snappy: bad length preamble")
    else:
        raise CompressionError("snappy: empty block")
    if length > room:
        raise CompressionError(_too_large(max_size))
    out: bytes = snappy.uncompress(block)
    return out


def _zstd_decompress(data: bytes | bytearray | memoryview, max_size: int) -> bytes:
    reader = zstandard.ZstdDecompressor().stream_reader(bytes(data), read_across_frames=True)
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = reader.read(min(1 << 20, max_size + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if total > max_size:
            raise CompressionError(_too_large(max_size))
    # The stream reader returns what a truncated frame holds without an error; a frame that
    # states its content size (as zstd's one-shot compressors write it) is checked here, and
    # the records check that follows every decompression catches the rest.
    expected = zstandard.get_frame_parameters(bytes(data[:18])).content_size
    if expected != zstandard.CONTENTSIZE_UNKNOWN and total < expected:
        raise CompressionError(f"zstd: truncated frame ({total} of {expected} bytes)")
    return b"".join(chunks)
