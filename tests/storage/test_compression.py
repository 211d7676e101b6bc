"""Compressed record batches (storage/compression.py) and the leader's check of the records
it appends (Kafka's LogValidator: _records_walk.h, check_compressed_batch).

Each codec round-trips through RecordBatchBuilder and decode_records; the other framings a
Kafka client may send (librdkafka's raw snappy, lz4 frames with content size and checksums,
zstd frames without a content size, gzip from Python's gzip module) decode too; broken or
inflating bodies are refused with a message; a leader refuses a batch whose records do not
match its header with INVALID_RECORD and leaves its log unchanged."""

from __future__ import annotations

import gzip
import struct

import crc32c
import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from minikafka.protocol.errors import CorruptRecordError, InvalidRecordError
from minikafka.storage import _record_codec, compression
from minikafka.storage.compression import CompressionError
from minikafka.storage.log_config import LogConfig
from minikafka.storage.record_batch import (
    HEADER_SIZE,
    InvalidBatchError,
    RecordBatchBuilder,
    build_batch,
    decode_all,
    decode_records,
    parse_header,
)

CODECS = [compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD]
maybe_bytes = st.none() | st.binary(max_size=2000)


def with_body(batch: bytes, body: bytes, codec: int, count: int | None = None) -> bytes:
    """`batch`'s header over another records body, attributes and CRC made to match."""
    out = bytearray(batch[:HEADER_SIZE] + body)
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">h", out, 21, codec)
    if count is not None:
        struct.pack_into(">i", out, 23, count - 1)
        struct.pack_into(">i", out, 57, count)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def raw_records(values: list[bytes], deltas: list[int] | None = None) -> bytes:
    buf = bytearray()
    pos = 0
    for i, v in enumerate(values):
        pos = _record_codec.encode_record(
            buf, pos, i if deltas is None else deltas[i], 0, None, v, []
        )
    return bytes(buf[:pos])


@pytest.mark.parametrize("codec", CODECS, ids=compression.CODEC_NAMES.get)
@given(recs=st.lists(st.tuples(maybe_bytes, maybe_bytes), min_size=1, max_size=30))
def test_each_codec_round_trips(codec, recs):
    builder = RecordBatchBuilder(base_offset=100)
    for key, value in recs:
        builder.append(value, key, 5)
    batch = builder.build(codec)
    assert parse_header(batch).attributes & 0x07 == codec
    decoded = decode_records(batch)
    assert [(r.offset, r.key, r.value) for r in decoded] == [
        (100 + i, k, v) for i, (k, v) in enumerate(recs)
    ]


def test_compression_makes_repetitive_batches_smaller():
    values = [b"the same line of text, again and again " * 4] * 200
    plain = build_batch(values)
    for codec in CODECS:
        assert len(build_batch(values, codec=codec)) < len(plain) / 5, codec


@pytest.mark.parametrize(
    ("codec", "compress"),
    [
        (compression.SNAPPY, snappy.compress),  # librdkafka: one raw block, no xerial stream
        (compression.LZ4, lz4.frame.compress),  # content size and checksum stored
        (compression.LZ4, lambda d: lz4.frame.compress(d, block_checksum=True)),
        (compression.GZIP, gzip.compress),
        # A streaming zstd writer does not know the content size in advance (built below).
        (compression.ZSTD, None),
    ],
    ids=["raw-snappy", "lz4-with-size", "lz4-block-checksums", "gzip-module", "zstd-stream"],
)
def test_other_framings_clients_send_decode(codec, compress):
    values = [f"value {i}".encode() * 10 for i in range(50)]
    if codec == compression.ZSTD:
        cobj = zstandard.ZstdCompressor().compressobj()
        body = cobj.compress(raw_records(values)) + cobj.flush()
        assert zstandard.get_frame_parameters(body).content_size == zstandard.CONTENTSIZE_UNKNOWN
    else:
        body = compress(raw_records(values))
    batch = with_body(build_batch(values), body, codec)
    assert [r.value for r in decode_all(batch)] == values


@pytest.mark.parametrize("codec", CODECS, ids=compression.CODEC_NAMES.get)
def test_a_body_that_inflates_past_the_limit_is_refused(codec):
    blob = compression.compress(codec, bytes(100_000))
    assert len(blob) < 10_000
    with pytest.raises(CompressionError, match="decompresses to more than 50000 bytes"):
        compression.decompress(codec, blob, max_size=50_000)
    assert compression.decompress(codec, blob, max_size=100_000) == bytes(100_000)


@pytest.mark.parametrize("codec", CODECS, ids=compression.CODEC_NAMES.get)
def test_truncated_or_garbage_bodies_are_refused(codec):
    blob = compression.compress(codec, bytes(range(256)) * 100)
    for cut in (1, len(blob) // 2, len(blob) - 1):
        with pytest.raises(CompressionError):
            compression.decompress(codec, blob[:cut])
    with pytest.raises(CompressionError):
        compression.decompress(codec, b"\x00\x01 not compressed at all \xff" * 3)


def test_codec_names_are_kafkas():
    assert [compression.codec_id(n) for n in ("none", "gzip", "snappy", "lz4", "zstd")] == [
        0,
        1,
        2,
        3,
        4,
    ]
    with pytest.raises(ValueError, match=r"compression\.type must be one of"):
        compression.codec_id("brotli")


# --- the leader's check of records ---------------------------------------------------------


@pytest.mark.parametrize("codec", [compression.NONE, *CODECS], ids=compression.CODEC_NAMES.get)
def test_a_leader_appends_compressed_batches_as_sent(open_log, codec):
    lg = open_log()
    sent = build_batch([b"a", b"b", b"c"], codec=codec)
    lg.append_as_leader(build_batch([b"first"]), 0)
    info = lg.append_as_leader(sent, 0)
    assert (info.first_offset, info.last_offset) == (1, 3)
    stored = lg.read(0, 10**6).read()
    first_size = len(build_batch([b"first"]))
    # Stored byte for byte, but for the base offset and the leader epoch the leader stamps
    # (outside the CRC).
    assert stored[first_size + 8 : first_size + 12] == sent[8:12]
    assert stored[first_size + 16 :] == sent[16:]
    assert [(r.offset, r.value) for r in decode_all(stored)] == [
        (0, b"first"),
        (1, b"a"),
        (2, b"b"),
        (3, b"c"),
    ]


def bad_record_batches(codec: int) -> dict[str, bytes]:
    """CRC-valid batches whose records do not match their header."""
    good = build_batch([b"x", b"y"])
    enc = (lambda b: b) if codec == compression.NONE else (lambda b: compression.compress(codec, b))
    return {
        "fewer records than the batch's record count": with_body(
            good, enc(raw_records([b"x", b"y"])), codec, count=3
        ),
        "more records than the batch's record count": with_body(
            good, enc(raw_records([b"x", b"y", b"z"])), codec, count=2
        ),
        "record offsets are not incremental": with_body(
            good, enc(raw_records([b"x", b"y"], deltas=[0, 5])), codec
        ),
        "invalid record length": with_body(good, enc(b"\x7f" + raw_records([b"x"])), codec, 1),
    }


@pytest.mark.parametrize("codec", [compression.NONE, *CODECS], ids=compression.CODEC_NAMES.get)
def test_a_leader_refuses_records_that_do_not_match_the_header(open_log, codec):
    lg = open_log()
    lg.append_as_leader(build_batch([b"kept"]), 0)
    before = lg.read(0, 10**6).read()
    for problem, batch in bad_record_batches(codec).items():
        with pytest.raises(InvalidRecordError, match=problem):
            lg.append_as_leader(batch, 0)
        # Behind a good batch in the same request: the request is refused whole.
        with pytest.raises(InvalidRecordError, match=problem):
            lg.append_as_leader(build_batch([b"ok"]) + batch, 0)
    assert lg.log_end_offset == 1
    assert lg.read(0, 10**6).read() == before


def test_a_leader_refuses_undecodable_or_unknown_compression(open_log):
    lg = open_log(LogConfig(segment_bytes=1 << 20, max_message_bytes=1 << 20))
    good = build_batch([b"x"])
    body = good[HEADER_SIZE:]
    with pytest.raises(InvalidRecordError, match="zstd"):
        lg.append_as_leader(with_body(good, body, compression.ZSTD), 0)
    with pytest.raises(InvalidRecordError, match="unknown codec 6"):
        lg.append_as_leader(with_body(good, body, 6), 0)
    bomb = compression.compress(compression.ZSTD, bytes(compression.MAX_DECOMPRESSED_BYTES + 1))
    with pytest.raises(InvalidRecordError, match="decompresses to more than"):
        lg.append_as_leader(with_body(good, bomb, compression.ZSTD), 0)
    assert lg.log_end_offset == 0


def test_a_corrupt_crc_is_still_corrupt_message_not_invalid_record(open_log):
    lg = open_log()
    bad = bytearray(bad_record_batches(compression.NONE)["record offsets are not incremental"])
    bad[-1] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC"):
        lg.append_as_leader(bytes(bad), 0)


def test_followers_take_what_the_leader_stored(open_log):
    # A follower copies the leader's batches: it checks CRCs and offsets, not records again.
    lg = open_log()
    lg.append_as_follower(build_batch([b"a", b"b"], codec=compression.LZ4))
    assert [r.value for r in decode_all(lg.read(0, 10**6).read())] == [b"a", b"b"]


def test_a_decoded_bad_batch_says_why():
    batch = bad_record_batches(compression.SNAPPY)["fewer records than the batch's record count"]
    with pytest.raises(InvalidBatchError, match="bad record length"):
        decode_records(batch)
