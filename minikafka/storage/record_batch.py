"""Record batch codec: Kafka's magic v2 record batch, header and records.

Header layout (big-endian, 61 bytes, identical to Kafka's magic v2):

    offset  size  field
       0      8   base offset
       8      4   batch length (bytes after this field)
      12      4   partition leader epoch
      16      1   magic (2)
      17      4   CRC-32C of bytes [21, end)
      21      2   attributes
      23      4   last offset delta
      27      8   first timestamp
      35      8   max timestamp
      43      8   producer id
      51      2   producer epoch
      53      4   base sequence
      57      4   record count
      61      …   records

The CRC starts after the CRC field, so a leader stamps base offset and leader epoch
in place without recomputing it. Brokers only ever look at headers (`validate_batch`,
`iter_batches`, and the append paths); the checks themselves run in C (`_batch_scan.c`),
with the rules written here. Records are decoded by clients and tools (`decode_records`).
The records are Kafka's v2 records (varint lengths and deltas; `_record_codec.c` encodes
and decodes them), so a batch any Kafka client builds is one minikafka stores and serves.
Attributes bits 0-2 name the compression codec of the records (`compression.py`: gzip,
snappy, lz4, zstd; the records after the header are then one compressed blob), bit 3
LogAppendTime (every record's timestamp is then the batch's max timestamp).

A leader also checks the records of what it appends, as Kafka's LogValidator does: exactly
`record count` well-formed records with offset deltas 0, 1, 2, ... (INVALID_RECORD
otherwise). Uncompressed batches are walked in C on the append path; compressed ones are
decompressed and walked by `check_compressed_batch`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from enum import Enum
from typing import NamedTuple

import crc32c

from minikafka.storage import _batch_scan, _record_codec, compression
from minikafka.storage._batch_scan import BatchScanError

MAGIC = 2
BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
PRODUCER_ID_OFFSET = 43
RECORD_COUNT_OFFSET = 57
HEADER_SIZE = 61
# base offset + length: the bytes before what "batch length" counts.
LOG_OVERHEAD = 12

NO_PARTITION_LEADER_EPOCH = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1

# Attributes: the compression codec (bits 0-2) and the timestamp type (bit 3).
COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
COMPRESSION_NONE = compression.NONE

_HEADER = struct.Struct(">qiibIhiqqqhii")
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_BASE_OFFSET = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
assert _HEADER.size == HEADER_SIZE


class InvalidBatchReason(Enum):
    TRUNCATED = "truncated: fewer bytes than the header or the batch length needs"
    LENGTH_OUT_OF_BOUNDS = "batch length out of bounds"
    BAD_MAGIC = "unsupported magic byte"
    CRC_MISMATCH = "CRC mismatch"
    RECORD_COUNT_MISMATCH = "record count does not match last offset delta"
    BAD_RECORDS = "records body does not decode"
    OFFSET_OUT_OF_SEQUENCE = "base offset does not follow the previous batch"
    EPOCH_OUT_OF_SEQUENCE = "partition leader epoch goes backwards"
    INVALID_RECORD = "records do not match the batch header"


class InvalidBatchError(Exception):
    """A batch failed validation; `reason` says precisely why, `position` where."""

    def __init__(self, reason: InvalidBatchReason, position: int, detail: str = "") -> None:
        self.reason = reason
        self.position = position
        self.detail = detail
        msg = f"invalid record batch at byte {position}: {reason.value}"
        super().__init__(f"{msg} ({detail})" if detail else msg)


class BatchHeader(NamedTuple):
    # A NamedTuple rather than a dataclass: headers are parsed on every append and fetch,
    # and tuple construction is several times cheaper.
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Unpack a header without validating anything (the caller ensures 61 bytes exist)."""
    return BatchHeader._make(_HEADER.unpack_from(buf, pos))


def peek_offset_and_size(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int]:
    """(base offset, total size in bytes) of the batch at `pos`, from its first 12 bytes."""
    base, length = _OFFSET_AND_LENGTH.unpack_from(buf, pos)
    return base, length + LOG_OVERHEAD


def validate_batch(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    end: int | None = None,
    max_batch_size: int | None = None,
) -> BatchHeader:
    """Validate the batch starting at `pos` (header, length, magic, count, CRC) and return its header.

    `end` bounds the bytes that belong to the caller's buffer. `max_batch_size` rejects
    lengths above it as out of bounds (used by recovery: a garbage length must not make us
    trust a huge span).
    """
    return BatchHeader._make(
        validated_header_fields(buf, pos, len(buf) if end is None else end, max_batch_size)
    )


def validated_header_fields(
    buf: bytes | bytearray | memoryview,
    pos: int,
    limit: int,
    max_batch_size: int | None = None,
) -> tuple[int, ...]:
    """`validate_batch` without building a BatchHeader: the header's fields as a plain tuple
    in BatchHeader's order. The checks run in C (`_batch_scan.c`), as do the append paths'."""
    try:
        return _batch_scan.header_fields(
            buf, pos, limit, -1 if max_batch_size is None else max_batch_size
        )
    except BatchScanError as e:
        raise invalid_batch_error(e) from None


def invalid_batch_error(e: BatchScanError) -> InvalidBatchError:
    """The InvalidBatchError for a failed check of the C scanner (its kind is a reason's name)."""
    kind, position, detail = e.args
    return InvalidBatchError(InvalidBatchReason[kind], position, detail)


def iter_batches(
    buf: bytes | bytearray | memoryview, max_batch_size: int | None = None
) -> Iterator[tuple[int, BatchHeader]]:
    """Validate and yield (position, header) for every batch in `buf`.

    Raises InvalidBatchError at the first bad batch (a trailing partial batch included).
    """
    pos = 0
    n = len(buf)
    while pos < n:
        h = validate_batch(buf, pos, n, max_batch_size)
        yield pos, h
        pos += h.batch_length + LOG_OVERHEAD


_MAX_TIMESTAMP_OFFSET = 35
_INT16 = struct.Struct(">h")
_INT64 = struct.Struct(">q")


def set_log_append_time(buf: bytearray, pos: int, timestamp: int) -> None:
    """Make the (validated) batch at `pos` a LogAppendTime batch of `timestamp`: the
    timestamp type bit, the max timestamp (which every record then has), and the CRC
    computed again, since both lie inside it (Kafka's setMaxTimestamp)."""
    (attributes,) = _INT16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_MASK)
    _INT64.pack_into(buf, pos + _MAX_TIMESTAMP_OFFSET, timestamp)
    (length,) = _INT32.unpack_from(buf, pos + LENGTH_OFFSET)
    end = pos + LOG_OVERHEAD + length
    _UINT32.pack_into(
        buf, pos + CRC_OFFSET, crc32c.crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET : end])
    )


def stamp(buf: bytearray, pos: int, base_offset: int, partition_leader_epoch: int) -> None:
    """Set base offset and leader epoch in place; both lie outside the CRC's span."""
    _BASE_OFFSET.pack_into(buf, pos + BASE_OFFSET_OFFSET, base_offset)
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, partition_leader_epoch)


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def new_record_buffer(capacity: int = 1 << 16) -> bytearray:
    """A buffer that a batch is encoded into, `capacity` bytes preallocated. The builder
    writes at its own position and copies the batch out, so a buffer is reusable: a pool
    of them is Kafka's BufferPool of batch buffers."""
    return bytearray(max(capacity, HEADER_SIZE))


_EMPTY_HEADERS: tuple[()] = ()


class RecordBatchBuilder:
    """Accumulates records into one batch; `build()` adds the header and CRC.

    Records are encoded (v2, in C) as they arrive, after room for the header, into one
    buffer (`buffer`, or a new one: see `new_record_buffer`), so appending costs one C call
    per record and building one CRC pass and one copy. `release_buffer()` hands the buffer
    back for reuse once the batch is built.
    """

    __slots__ = (
        "_buf",
        "_count",
        "_first_ts",
        "_max_ts",
        "_size",
        "base_offset",
        "base_sequence",
        "partition_leader_epoch",
        "producer_epoch",
        "producer_id",
    )

    def __init__(
        self,
        base_offset: int = 0,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        *,
        buffer: bytearray | None = None,
    ) -> None:
        self.base_offset = base_offset
        self.partition_leader_epoch = partition_leader_epoch
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self._buf: bytearray | None = new_record_buffer(0) if buffer is None else buffer
        self._size = HEADER_SIZE  # bytes of the batch so far: the records start after it
        self._count = 0
        self._first_ts = NO_TIMESTAMP
        self._max_ts = NO_TIMESTAMP

    def __len__(self) -> int:
        return self._count

    @property
    def size_in_bytes(self) -> int:
        """Bytes the built batch will have (header included)."""
        return self._size

    def _buffer(self) -> bytearray:
        if self._buf is None:
            raise ValueError("the builder's buffer was released")
        return self._buf

    def append(
        self,
        value: bytes | None,
        key: bytes | None = None,
        timestamp: int = 0,
        headers: Sequence[tuple[str, bytes | None]] = (),
    ) -> int:
        """Add a record; returns its offset delta within the batch."""
        delta = self._count
        if delta == 0:
            self._first_ts = timestamp
        self._size = _record_codec.encode_record(
            self._buffer(),
            self._size,
            delta,
            timestamp - self._first_ts,
            key,
            value,
            headers or _EMPTY_HEADERS,
        )
        self._count = delta + 1
        if timestamp > self._max_ts:
            self._max_ts = timestamp
        return delta

    def build(self, codec: int = COMPRESSION_NONE) -> bytes:
        """The batch, its records compressed with `codec` (a `compression` id) if not none."""
        if self._count == 0:
            raise ValueError("a record batch holds at least one record")
        buf = self._buffer()
        size = self._size
        if codec != COMPRESSION_NONE:
            with memoryview(buf) as view:
                compressed = compression.compress(codec, view[HEADER_SIZE:size])
            size = HEADER_SIZE + len(compressed)
            buf = bytearray(size)
            buf[HEADER_SIZE:] = compressed
        _HEADER.pack_into(
            buf,
            0,
            self.base_offset,
            size - LOG_OVERHEAD,
            self.partition_leader_epoch,
            MAGIC,
            0,
            codec,  # attributes: the codec, CreateTime, not transactional
            self._count - 1,
            self._first_ts,
            self._max_ts,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self._count,
        )
        with memoryview(buf) as view:
            crc = crc32c.crc32c(view[ATTRIBUTES_OFFSET:size])
            _UINT32.pack_into(buf, CRC_OFFSET, crc)
            return bytes(view[:size])

    def release_buffer(self) -> bytearray:
        """Detach the buffer for reuse; the builder takes no more records."""
        buf = self._buffer()
        self._buf = None
        return buf


def build_batch(
    values: Iterable[bytes | None],
    *,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    timestamp: int = 0,
    keys: Iterable[bytes | None] | None = None,
    codec: int = COMPRESSION_NONE,
) -> bytes:
    """Convenience: one batch from a list of values (all with the same timestamp)."""
    builder = RecordBatchBuilder(base_offset, partition_leader_epoch)
    key_list = list(keys) if keys is not None else None
    for i, value in enumerate(values):
        builder.append(value, key_list[i] if key_list is not None else None, timestamp)
    return builder.build(codec)


def decode_records(batch: bytes | bytearray | memoryview, pos: int = 0) -> list[Record]:
    """Decode the records of the (already validated) batch at `pos`.

    Raises InvalidBatchError(BAD_RECORDS) if the body is not the records the header promises
    (or is compressed with a codec this cannot decode).
    """
    h = parse_header(batch, pos)
    try:
        body = records_body(batch, pos, h)
        log_append_time = h.max_timestamp if h.attributes & TIMESTAMP_TYPE_MASK else NO_TIMESTAMP
        fields = _record_codec.decode_records(
            body, h.base_offset, h.first_timestamp, log_append_time, h.record_count
        )
    except ValueError as e:  # CompressionError and RecordDecodeError are ValueErrors
        raise InvalidBatchError(InvalidBatchReason.BAD_RECORDS, pos, str(e)) from e
    return [Record._make(f) for f in fields]


def records_body(
    batch: bytes | bytearray | memoryview, pos: int, h: BatchHeader
) -> bytes | memoryview:
    """The records of the batch at `pos`, decompressed (CompressionError if they do not)."""
    body = memoryview(batch)[pos + HEADER_SIZE : pos + h.batch_length + LOG_OVERHEAD]
    codec = h.attributes & COMPRESSION_CODEC_MASK
    return body if codec == COMPRESSION_NONE else compression.decompress(codec, body)


def check_compressed_batch(buf: bytes | bytearray | memoryview, pos: int) -> None:
    """The leader's check of a compressed batch's records (the append path calls it after
    the header and CRC checks): they decompress, and are exactly `record count` well-formed
    records with incremental offset deltas. Raises BatchScanError("INVALID_RECORD", ...), as
    the C walk of uncompressed batches does."""
    h = parse_header(buf, pos)
    try:
        _record_codec.check_records(records_body(buf, pos, h), h.record_count)
    except ValueError as e:
        raise BatchScanError("INVALID_RECORD", pos, str(e)) from None


def decode_all(buf: bytes | bytearray | memoryview) -> list[Record]:
    """Validate every batch in `buf` and decode all their records, in order."""
    out: list[Record] = []
    for pos, _ in iter_batches(buf):
        out.extend(decode_records(buf, pos))
    return out
