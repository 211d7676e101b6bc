"""Kafka's v2 records (`_record_codec.c` behind RecordBatchBuilder and decode_records):
round trips of arbitrary records, what a Kafka client may send that minikafka's producer
does not (gzip-compressed records, LogAppendTime, null header values), and bodies that lie,
which decode to BAD_RECORDS rather than to wrong records or a crash."""

from __future__ import annotations

import gzip
import struct

import crc32c
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.storage import _record_codec
from minikafka.storage.record_batch import (
    HEADER_SIZE,
    InvalidBatchError,
    InvalidBatchReason,
    RecordBatchBuilder,
    decode_records,
    validate_batch,
)

maybe_bytes = st.none() | st.binary(max_size=300)
records = st.lists(
    st.tuples(
        maybe_bytes,
        maybe_bytes,
        st.integers(min_value=0, max_value=2**41),
        st.lists(st.tuples(st.text(max_size=20), maybe_bytes), max_size=3),
    ),
    min_size=1,
    max_size=40,
)


@given(records, st.integers(min_value=0, max_value=2**40))
def test_records_round_trip(recs, base_offset):
    b = RecordBatchBuilder(base_offset=base_offset)
    for value, key, ts, headers in recs:
        b.append(value, key, ts, headers)
    data = b.build()
    assert validate_batch(data).record_count == len(recs)
    assert [
        (r.offset, r.value, r.key, r.timestamp, list(r.headers)) for r in decode_records(data)
    ] == [(base_offset + i, v, k, ts, h) for i, (v, k, ts, h) in enumerate(recs)]


def rewrite(batch: bytes, body: bytes, attributes: int) -> bytes:
    """The batch with another records body and attributes, its length and CRC made right
    (as a client that compressed or stamped it would have built it)."""
    data = bytearray(batch[:HEADER_SIZE]) + body
    data[8:12] = (len(data) - 12).to_bytes(4, "big")
    data[21:23] = attributes.to_bytes(2, "big")
    data[17:21] = crc32c.crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def plain(values: list[bytes], first_ts: int = 1000) -> bytes:
    b = RecordBatchBuilder(base_offset=10)
    for i, v in enumerate(values):
        b.append(v, None, first_ts + i)
    return b.build()


def test_gzip_compressed_records_decode():
    batch = plain([b"a" * 100, b"b" * 100])
    compressed = rewrite(batch, gzip.compress(batch[HEADER_SIZE:]), attributes=1)
    validate_batch(compressed)
    assert [(r.offset, r.value) for r in decode_records(compressed)] == [
        (10, b"a" * 100),
        (11, b"b" * 100),
    ]


def test_log_append_time_gives_every_record_the_batch_max_timestamp():
    batch = plain([b"a", b"b"], first_ts=1000)
    stamped = rewrite(batch, batch[HEADER_SIZE:], attributes=0x08)
    assert [r.timestamp for r in decode_records(stamped)] == [1001, 1001]


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda body: body[:-1], "beyond the batch"),
        (lambda body: body + b"\x00", "bytes after the last record"),
        (lambda body: b"\x7f" + body[1:], "beyond the batch"),  # length far too big
        (lambda body: b"\xff" * 6, "bad record length"),  # a varint that never ends
    ],
)
def test_a_body_that_lies_is_bad_records(mangle, message):
    batch = plain([b"x", b"y"])
    bad = rewrite(batch, mangle(batch[HEADER_SIZE:]), attributes=0)
    validate_batch(bad)  # CRC-valid: only decoding finds it
    with pytest.raises(InvalidBatchError, match=message) as e:
        decode_records(bad)
    assert e.value.reason is InvalidBatchReason.BAD_RECORDS


def test_a_count_the_body_does_not_hold_is_bad_records():
    batch = bytearray(plain([b"x", b"y"]))
    struct.pack_into(">i", batch, 57, 3)
    batch[17:21] = crc32c.crc32c(bytes(batch[21:])).to_bytes(4, "big")
    with pytest.raises(InvalidBatchError, match="bad record length at byte 16"):
        decode_records(bytes(batch))


def test_a_header_key_that_is_not_utf8_and_an_unknown_codec_are_bad_records():
    b = bytearray()
    end = _record_codec.encode_record(b, 0, 0, 0, None, b"v", [("k", b"v")])
    body = bytes(b[:end]).replace(b"\x02k", b"\x02\xff")
    with pytest.raises(InvalidBatchError, match="not UTF-8"):
        decode_records(rewrite(plain([b"v"]), body, attributes=0))
    batch = plain([b"v"])
    with pytest.raises(InvalidBatchError, match="cannot decompress unknown codec 5"):
        decode_records(rewrite(batch, batch[HEADER_SIZE:], attributes=5))
    with pytest.raises(InvalidBatchError, match="zstd: "):
        decode_records(rewrite(batch, batch[HEADER_SIZE:], attributes=4))


def test_keys_and_values_must_be_bytes():
    b = RecordBatchBuilder()
    with pytest.raises(TypeError, match="must be bytes or None, not int"):
        b.append(12345)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="header's key must be a str"):
        b.append(b"v", None, 0, [(b"k", b"v")])  # type: ignore[list-item]
