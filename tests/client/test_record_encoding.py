"""The producer's batch encoding (RecordBatchBuilder on pooled buffers) is byte for byte the
v2 batch a Kafka client builds: the layout computed here by hand from Kafka's record format
(zigzag varints, as Kafka's DefaultRecord writes them)."""

import struct

import crc32c
import pytest

from minikafka.storage.record_batch import (
    RecordBatchBuilder,
    decode_records,
    new_record_buffer,
    validate_batch,
)

HEADER = struct.Struct(">qiibIhiqqqhii")


def varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def field(b: bytes | None) -> bytes:
    return varint(-1) if b is None else varint(len(b)) + b


def reference_record(delta: int, ts_delta: int, key, value, headers) -> bytes:
    body = b"\x00" + varint(ts_delta) + varint(delta) + field(key) + field(value)
    body += varint(len(headers))
    for name, v in headers:
        body += field(name.encode()) + field(v)
    return varint(len(body)) + body


def reference_batch(records, base_offset=0, epoch=-1):
    """[(value, key, timestamp, headers)] -> the batch: 61-byte header, then the v2 records."""
    first_ts = records[0][2]
    body = b"".join(
        reference_record(i, ts - first_ts, key, value, headers)
        for i, (value, key, ts, headers) in enumerate(records)
    )
    max_ts = max(-1, *(r[2] for r in records))
    n = len(records)
    header = bytearray(
        HEADER.pack(
            base_offset, 61 + len(body) - 12, epoch, 2, 0, 0, n - 1, first_ts, max_ts, -1, -1, -1, n
        )
    )
    batch = header + body
    batch[17:21] = crc32c.crc32c(bytes(batch[21:])).to_bytes(4, "big")
    return bytes(batch)


RECORDS = [
    (b"v" * 1000, None, 1_700_000_000_000, []),
    (None, b"key", 1_700_000_000_005, [("h", b"x"), ("trace-id", b"\x00" * 40), ("n", None)]),
    (b"", b"", 1_699_999_999_000, []),  # a timestamp before the first: negative delta
    (b"y" * 70_000, None, 1_700_000_000_001, []),  # a 3-byte varint length
    *[(f"{i}".encode(), None, 1_700_000_000_002, []) for i in range(200)],  # deltas > 63
]


@pytest.mark.parametrize("pooled", [False, True])
def test_builder_bytes_equal_the_reference_layout(pooled):
    buffer = new_record_buffer(1024) if pooled else None
    b = RecordBatchBuilder(base_offset=3, partition_leader_epoch=7, buffer=buffer)
    for value, key, ts, headers in RECORDS:
        b.append(value, key, ts, headers)
    data = b.build()
    assert data == reference_batch(RECORDS, base_offset=3, epoch=7)
    assert b.size_in_bytes == len(data)
    assert validate_batch(data).record_count == len(RECORDS)
    decoded = decode_records(data)
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in decoded] == [
        (3 + i, ts, key, value, headers) for i, (value, key, ts, headers) in enumerate(RECORDS)
    ]


def test_a_reused_buffer_starts_empty_and_a_released_builder_takes_no_records():
    first = RecordBatchBuilder(buffer=new_record_buffer(256))
    first.append(b"old" * 50, None, 5)
    first.build()
    buffer = first.release_buffer()
    with pytest.raises(ValueError, match="released"):
        first.append(b"late", None, 6)
    second = RecordBatchBuilder(buffer=buffer)
    second.append(b"new", b"k", 9, [("h", b"v")])
    data = second.build()
    assert data == reference_batch([(b"new", b"k", 9, [("h", b"v")])])
    assert [(r.value, r.key, r.headers) for r in decode_records(data)] == [
        (b"new", b"k", (("h", b"v"),))
    ]
