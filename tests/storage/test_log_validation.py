"""What a leader does to the batches it appends, as Kafka's LogValidator: checks of single
records, each refused record named by its index in its batch (KIP-467);
`message.timestamp.type` (LogAppendTime: the leader stamps each batch);
`message.timestamp.difference.max.ms` (CreateTime records too far from the leader's clock are
refused); `compression.type` (batches recompressed in the topic's codec)."""

from __future__ import annotations

import struct

import pytest

from minikafka.clock import ManualClock
from minikafka.protocol.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidConfigError,
    RecordValidationError,
)
from minikafka.storage import compression
from minikafka.storage.log_config import LogConfig
from minikafka.storage.record_batch import (
    TIMESTAMP_TYPE_MASK,
    InvalidBatchError,
    RecordBatchBuilder,
    decode_all,
    parse_header,
    set_log_append_time,
    validate_batch,
)


def timestamped(timestamps: list[int], keys: bool = True, codec: int = 0) -> bytes:
    b = RecordBatchBuilder()
    for i, ts in enumerate(timestamps):
        b.append(b"v%d" % i, b"k%d" % i if keys else None, ts)
    return b.build(codec)


@pytest.mark.parametrize("codec", [compression.NONE, compression.ZSTD])
def test_log_append_time_stamps_each_batch_with_the_leaders_clock(open_log, clock, codec):
    lg = open_log(LogConfig(message_timestamp_type="LogAppendTime"))
    now = clock.now_ms()
    info = lg.append_as_leader(timestamped([1000, 2000, 1500], codec=codec), leader_epoch=0)
    assert info.max_timestamp == now
    data = lg.read(0, 10**6).read()
    h = validate_batch(data)  # the CRC was computed again
    assert h.attributes & TIMESTAMP_TYPE_MASK and h.max_timestamp == now
    assert [r.timestamp for r in decode_all(data)] == [now] * 3


def test_log_append_time_does_not_make_a_damaged_batch_whole(open_log):
    lg = open_log(LogConfig(message_timestamp_type="LogAppendTime"))
    damaged = bytearray(timestamped([1000, 2000]))
    damaged[-1] ^= 1
    with pytest.raises(Exception, match="CRC"):
        lg.append_as_leader(damaged, leader_epoch=0)
    assert lg.log_end_offset == 0


def test_create_time_keeps_the_producers_timestamps(open_log):
    lg = open_log()
    lg.append_as_leader(timestamped([1000, 2000]), leader_epoch=0)
    data = lg.read(0, 10**6).read()
    assert not parse_header(data).attributes & TIMESTAMP_TYPE_MASK
    assert [r.timestamp for r in decode_all(data)] == [1000, 2000]


def test_records_too_far_from_the_leaders_clock_are_named_and_the_batch_refused(open_log, clock):
    lg = open_log(LogConfig(message_timestamp_difference_max_ms=60_000))
    now = clock.now_ms()
    batch = timestamped([now, now - 3_600_000, now + 59_000, now + 61_000])
    with pytest.raises(RecordValidationError) as refused:
        lg.append_as_leader(batch, leader_epoch=0)
    e = refused.value
    assert e.code == ErrorCode.INVALID_TIMESTAMP
    assert e.message == "One or more records have been rejected due to invalid timestamp"
    window = f"[{now - 60_000}, {now + 60_000}]"
    assert e.record_errors == (
        (
            1,
            f"Timestamp {now - 3_600_000} of message with offset 1 is out of range. "
            f"The timestamp should be within {window}",
        ),
        (
            3,
            f"Timestamp {now + 61_000} of message with offset 3 is out of range. "
            f"The timestamp should be within {window}",
        ),
    )
    assert lg.log_end_offset == 0
    # Within the window: appended.
    lg.append_as_leader(timestamped([now - 60_000, now + 60_000]), leader_epoch=0)
    assert lg.log_end_offset == 2
    # With LogAppendTime the producer's timestamps do not matter (Kafka checks CreateTime).
    lg.config = LogConfig(
        message_timestamp_type="LogAppendTime", message_timestamp_difference_max_ms=60_000
    )
    lg.append_as_leader(timestamped([now - 3_600_000]), leader_epoch=0)
    assert lg.log_end_offset == 3


def test_a_compacted_topics_keyless_record_is_a_key_error_before_a_timestamp_one(
    open_log, clock: ManualClock
):
    lg = open_log(LogConfig(cleanup_policy="compact", message_timestamp_difference_max_ms=1000))
    far = clock.now_ms() - 10_000
    with pytest.raises(RecordValidationError) as refused:
        lg.append_as_leader(timestamped([far, far], keys=False), leader_epoch=0)
    assert [why.split(" ")[0] for _, why in refused.value.record_errors] == ["Compacted"] * 2
    # No record's timestamp at fault: INVALID_RECORD, Kafka's plain message.
    assert refused.value.code == ErrorCode.INVALID_RECORD


def test_a_producer_may_not_send_log_append_time(open_log):
    lg = open_log()
    batch = bytearray(timestamped([1000, 2000]))
    # The producer's batch with the LogAppendTime bit set (and its CRC made to match).
    set_log_append_time(batch, 0, 2000)
    with pytest.raises(RecordValidationError) as refused:
        lg.append_as_leader(batch, leader_epoch=0)
    assert refused.value.code == ErrorCode.INVALID_TIMESTAMP
    assert [i for i, _ in refused.value.record_errors] == [0, 1]
    assert all("should not set timestamp type" in why for _, why in refused.value.record_errors)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"message.timestamp.type": "BrokerTime"}, "String must be one of: CreateTime"),
        ({"message.timestamp.difference.max.ms": "-1"}, "must be >= 0"),
    ],
)
def test_bad_timestamp_configs_are_refused(overrides, message):
    with pytest.raises(InvalidConfigError, match=message):
        LogConfig().with_overrides(overrides)


def test_set_log_append_time_leaves_a_batch_valid():
    batch = bytearray(timestamped([5, 7]))
    set_log_append_time(batch, 0, 99)
    h = validate_batch(batch)
    assert (h.attributes & TIMESTAMP_TYPE_MASK, h.max_timestamp, h.first_timestamp) == (8, 99, 5)
    struct.pack_into(">q", batch, 35, 98)  # changed behind the CRC's back
    with pytest.raises(InvalidBatchError):
        validate_batch(batch)


# --- compression.type ---------------------------------------------------------------------


def rich_batch(codec: int) -> bytes:
    """An idempotent producer's batch with keys, headers and several timestamps."""
    b = RecordBatchBuilder(producer_id=42, producer_epoch=3, base_sequence=7)
    b.append(b"a" * 300, b"k1", 1000, [("h", b"1")])
    b.append(None, b"k2", 900)  # a tombstone, an earlier timestamp
    b.append(b"c" * 300, None, 1100, [("x", None)])
    return b.build(codec)


@pytest.mark.parametrize(
    ("topic", "sent", "stored"),
    [
        ("zstd", compression.GZIP, compression.ZSTD),
        ("uncompressed", compression.LZ4, compression.NONE),
        ("gzip", compression.NONE, compression.GZIP),
        ("snappy", compression.SNAPPY, compression.SNAPPY),  # already right: kept as sent
        ("producer", compression.LZ4, compression.LZ4),
    ],
)
def test_a_topics_compression_type_is_the_codec_its_batches_are_stored_in(
    open_log, topic, sent, stored
):
    lg = open_log(LogConfig(compression_type=topic))
    original = rich_batch(sent)
    info = lg.append_as_leader(original, leader_epoch=4)
    assert (info.first_offset, info.last_offset) == (0, 2)
    data = lg.read(0, 10**6).read()
    h = validate_batch(data)
    assert h.attributes & 0x07 == stored
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (42, 3, 7)
    assert (h.partition_leader_epoch, h.first_timestamp, h.max_timestamp) == (4, 1000, 1100)
    assert decode_all(data) == decode_all(original)


def test_a_damaged_batch_is_not_recompressed_into_a_whole_one(open_log):
    lg = open_log(LogConfig(compression_type="zstd"))
    damaged = bytearray(rich_batch(compression.GZIP))
    damaged[-3] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        lg.append_as_leader(damaged, leader_epoch=0)
    assert lg.log_end_offset == 0


def test_recompressed_batches_are_stamped_with_log_append_time_too(open_log, clock):
    lg = open_log(LogConfig(compression_type="lz4", message_timestamp_type="LogAppendTime"))
    lg.append_as_leader(rich_batch(compression.NONE), leader_epoch=0)
    h = validate_batch(lg.read(0, 10**6).read())
    assert h.attributes == compression.LZ4 | TIMESTAMP_TYPE_MASK
    assert h.max_timestamp == clock.now_ms()


def test_an_unknown_compression_type_is_refused():
    with pytest.raises(InvalidConfigError, match=r"compression\.type: String must be one of"):
        LogConfig().with_overrides({"compression.type": "brotli"})
