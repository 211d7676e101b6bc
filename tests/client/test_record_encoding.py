"""The producer's batch encoding (RecordBatchBuilder on pooled buffers) is byte for byte the
v2 batch the broker validates: the layout computed here by hand, the way it was first built."""

import struct

import crc32c
import msgpack
import pytest

from minikafka.storage.record_batch import (
    RecordBatchBuilder,
    decode_records,
    new_record_buffer,
    validate_batch,
)

HEADER = struct.Struct(">qiibIhiqqqhii")


def reference_batch(records, base_offset=0, epoch=-1):
    """[(value, key, timestamp, headers)] -> the batch: 61-byte header, then one msgpack
    array per record: [offset delta, timestamp delta, key, value, [[name, value], ...]]."""
    first_ts = records[0][2]
    body = b"".join(
        msgpack.packb(
            [i, ts - first_ts, key, value, [[n, v] for n, v in headers]], use_bin_type=True
        )
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
    (None, b"key", 1_700_000_000_005, [("h", b"x"), ("trace-id", b"\x00" * 40)]),
    (b"", b"", 1_699_999_999_000, []),  # a timestamp before the first: negative delta
    (b"y" * 70_000, None, 1_700_000_000_001, []),  # bin32 length
    *[(f"{i}".encode(), None, 1_700_000_000_002, []) for i in range(200)],  # deltas > 127
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


def test_a_reused_buffer_starts_empty_and_a_released_builder_takes_no_records():
    first = RecordBatchBuilder(buffer=new_record_buffer(256))
    first.append(b"old", None, 5)
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
