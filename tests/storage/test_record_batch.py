import pytest

from minikafka.storage.record_batch import (
    CRC_OFFSET,
    HEADER_SIZE,
    InvalidBatchError,
    InvalidBatchReason,
    Record,
    RecordBatchBuilder,
    build_batch,
    decode_all,
    decode_records,
    iter_batches,
    parse_header,
    stamp,
    validate_batch,
)


def make(values=(b"a", b"bb", None), **kw):
    return build_batch(list(values), **kw)


def test_round_trip_records_with_keys_headers_and_timestamps():
    b = RecordBatchBuilder(base_offset=7, partition_leader_epoch=3)
    b.append(b"v0", key=b"k0", timestamp=1000, headers=[("h", b"x")])
    b.append(None, key=None, timestamp=1005)
    b.append(b"", key=b"", timestamp=999)
    data = b.build()
    h = validate_batch(data)
    assert (h.base_offset, h.partition_leader_epoch, h.record_count) == (7, 3, 3)
    assert (h.first_timestamp, h.max_timestamp, h.last_offset) == (1000, 1005, 9)
    assert decode_records(data) == [
        Record(7, 1000, b"k0", b"v0", (("h", b"x"),)),
        Record(8, 1005, None, None, ()),
        Record(9, 999, b"", b"", ()),
    ]


def test_header_is_61_bytes_and_length_counts_bytes_after_length_field():
    data = make()
    h = parse_header(data)
    assert HEADER_SIZE == 61
    assert h.batch_length == len(data) - 12
    assert h.size_in_bytes == len(data)


def test_stamping_offset_and_epoch_keeps_crc_valid():
    data = bytearray(make())
    stamp(data, 0, 123456789, 42)
    h = validate_batch(data)
    assert (h.base_offset, h.partition_leader_epoch) == (123456789, 42)
    assert [r.offset for r in decode_records(data)] == [123456789, 123456790, 123456791]


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda d: d.__setitem__(16, 1), InvalidBatchReason.BAD_MAGIC),
        (lambda d: d.__setitem__(len(d) - 1, d[-1] ^ 0xFF), InvalidBatchReason.CRC_MISMATCH),
        (lambda d: d.__setitem__(CRC_OFFSET, d[CRC_OFFSET] ^ 1), InvalidBatchReason.CRC_MISMATCH),
        (
            lambda d: d.__setitem__(slice(8, 12), (10).to_bytes(4, "big")),
            InvalidBatchReason.LENGTH_OUT_OF_BOUNDS,
        ),
        (
            lambda d: d.__setitem__(slice(8, 12), (10**6).to_bytes(4, "big")),
            InvalidBatchReason.TRUNCATED,
        ),
        (
            lambda d: d.__setitem__(slice(57, 61), (5).to_bytes(4, "big")),
            InvalidBatchReason.RECORD_COUNT_MISMATCH,
        ),
        (lambda d: d.__delitem__(slice(40, None)), InvalidBatchReason.TRUNCATED),
    ],
)
def test_validation_names_the_precise_reason(mutate, reason):
    data = bytearray(make())
    mutate(data)
    with pytest.raises(InvalidBatchError) as ei:
        validate_batch(data)
    assert ei.value.reason is reason
    assert reason.value in str(ei.value)


def test_max_batch_size_bounds_length():
    data = make()
    with pytest.raises(InvalidBatchError) as ei:
        validate_batch(data, max_batch_size=len(data) - 1)
    assert ei.value.reason is InvalidBatchReason.LENGTH_OUT_OF_BOUNDS


def test_iter_batches_stops_at_trailing_partial_batch():
    a, b = make(base_offset=0), make(base_offset=3)
    buf = a + b + b[:20]
    it = iter_batches(buf)
    assert [p for p, _ in (next(it), next(it))] == [0, len(a)]
    with pytest.raises(InvalidBatchError) as ei:
        next(it)
    assert ei.value.reason is InvalidBatchReason.TRUNCATED
    assert ei.value.position == len(a) + len(b)


def test_decode_all_over_several_batches():
    buf = make([b"1", b"2"], base_offset=0) + make([b"3"], base_offset=2)
    assert [r.value for r in decode_all(buf)] == [b"1", b"2", b"3"]


def test_decode_rejects_body_that_disagrees_with_header():
    # A CRC-valid batch whose body is not what the header promises (built by a buggy client).
    b = RecordBatchBuilder()
    b.append(b"x")
    data = bytearray(b.build())
    data += b"\x01"  # extra msgpack int after the record
    data[8:12] = (len(data) - 12).to_bytes(4, "big")
    import crc32c

    data[17:21] = crc32c.crc32c(bytes(data[21:])).to_bytes(4, "big")
    validate_batch(data)
    with pytest.raises(InvalidBatchError) as ei:
        decode_records(data)
    assert ei.value.reason is InvalidBatchReason.BAD_RECORDS


def test_empty_builder_refuses_to_build():
    with pytest.raises(ValueError):
        RecordBatchBuilder().build()
