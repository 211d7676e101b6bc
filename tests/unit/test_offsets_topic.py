"""The __consumer_offsets record codec: Kafka's bytes, every version Kafka wrote, bad input.

Golden vectors are written out field by field from Kafka's schemas
(group-coordinator/src/main/resources/common/message/*.json); the Java hash values were
printed by OpenJDK 17's String.hashCode.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.consumer_protocol_subscription.v0.data import (
    ConsumerProtocolSubscription as SubscriptionV0,
)
from kio.schema.consumer_protocol_subscription.v1.data import (
    ConsumerProtocolSubscription as SubscriptionV1,
)
from kio.schema.consumer_protocol_subscription.v1.data import TopicPartition as OwnedV1
from kio.schema.consumer_protocol_subscription.v3.data import (
    ConsumerProtocolSubscription as SubscriptionV3,
)
from kio.schema.consumer_protocol_subscription.v3.data import TopicPartition as OwnedV3
from kio.schema.types import TopicName
from kio.serial import entity_writer
from kio.static.primitive import i32
from kio.static.protocol import Entity

from minikafka.coordinator.group.offsets_topic import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    OffsetsRecordError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
    subscribed_topics,
)
from minikafka.rules.consumer_offsets import OFFSETS_TOPIC, java_string_hash, partition_for

# -- hand encoding of Kafka's primitives, for the vectors ---------------------------------


def hexb(*fields: str) -> bytes:
    """Bytes from hex, one argument per field."""
    return bytes.fromhex("".join(fields))


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32b(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def s(v: str | None) -> bytes:
    """Classic string: int16 length, -1 for null."""
    if v is None:
        return i16(-1)
    data = v.encode()
    return i16(len(data)) + data


def b(v: bytes) -> bytes:
    """Classic bytes: int32 length."""
    return i32b(len(v)) + v


def uv(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def cs(v: str | None) -> bytes:
    """Compact string: unsigned varint length+1, 0 for null."""
    if v is None:
        return b"\x00"
    data = v.encode()
    return uv(len(data) + 1) + data


def cb(v: bytes) -> bytes:
    return uv(len(v) + 1) + v


NO_TAGS = b"\x00"


# -- golden vectors ------------------------------------------------------------------------


def test_topic_name() -> None:
    assert OFFSETS_TOPIC == "__consumer_offsets"


def test_offset_commit_key_golden() -> None:
    key = OffsetCommitKey(group="g", topic="t", partition=0)
    expected = hexb("0001", "0001", "67", "0001", "74", "00000000")
    assert encode_offset_commit_key(key) == expected
    assert decode_key(expected) == key


def test_offset_commit_key_golden_utf8_and_negative_partition() -> None:
    # String lengths count UTF-8 bytes: "ü" and "ó" are two each.
    key = OffsetCommitKey(group="grüppe", topic="tópico", partition=-2)
    expected = hexb(
        "0001",  # record type 1
        "0007",
        "67 72 c3bc 70 70 65",  # "grüppe"
        "0007",
        "74 c3b3 70 69 63 6f",  # "tópico"
        "fffffffe",  # partition -2
    )
    assert encode_offset_commit_key(key) == expected
    assert decode_key(expected) == key


def test_group_metadata_key_golden() -> None:
    key = GroupMetadataKey(group="g")
    expected = hexb("0002", "0001", "67")
    assert encode_group_metadata_key(key) == expected
    assert decode_key(expected) == key


def test_offset_commit_value_golden_v3() -> None:
    value = OffsetCommitValue(offset=5, leader_epoch=2, metadata="", commit_timestamp=1000)
    expected = hexb(
        "0003",  # version 3: Kafka's default
        "0000000000000005",  # offset
        "00000002",  # leaderEpoch
        "0000",  # metadata ""
        "00000000000003e8",  # commitTimestamp
    )
    assert encode_offset_commit_value(value) == expected
    assert decode_offset_commit_value(expected) == value


def test_offset_commit_value_golden_v3_no_leader_epoch() -> None:
    value = OffsetCommitValue(offset=0, leader_epoch=-1, metadata="m", commit_timestamp=-1)
    expected = hexb("0003", "0000000000000000", "ffffffff", "0001", "6d", "ffffffffffffffff")
    assert encode_offset_commit_value(value) == expected


def test_offset_commit_value_golden_v1_with_expire_timestamp() -> None:
    # Kafka writes v1, the only version with expireTimestamp, and v1 has no leaderEpoch:
    # the epoch is dropped, as GroupCoordinatorRecordHelpers.newOffsetCommitRecord drops it.
    value = OffsetCommitValue(
        offset=7, leader_epoch=3, metadata="m", commit_timestamp=1000, expire_timestamp=2000
    )
    expected = hexb(
        "0001",  # version 1
        "0000000000000007",  # offset
        "0001",  # metadata "m": length
        "6d",
        "00000000000003e8",  # commitTimestamp
        "00000000000007d0",  # expireTimestamp
    )
    assert encode_offset_commit_value(value) == expected
    assert decode_offset_commit_value(expected) == dataclasses.replace(value, leader_epoch=-1)


MEMBER = MemberMetadataValue(
    member_id="m1",
    group_instance_id=None,
    client_id="c",
    client_host="/127.0.0.1",
    rebalance_timeout_ms=300000,
    session_timeout_ms=10000,
    subscription=b"\x00\x00",
    assignment=b"\x01",
)
GROUP = GroupMetadataValue(
    protocol_type="consumer",
    generation=1,
    protocol="range",
    leader="m1",
    current_state_timestamp=1234,
    members=(MEMBER,),
)


def test_group_metadata_value_golden_v3() -> None:
    expected = hexb(
        "0003",  # version 3: Kafka's default
        "0008 636f6e73756d6572",  # protocolType "consumer"
        "00000001",  # generation 1
        "0005 72616e6765",  # protocol "range"
        "0002 6d31",  # leader "m1"
        "00000000000004d2",  # currentStateTimestamp 1234
        "00000001",  # members: 1
        "0002 6d31",  # memberId "m1"
        "ffff",  # groupInstanceId null
        "0001 63",  # clientId "c"
        "000a 2f3132372e302e302e31",  # clientHost "/127.0.0.1"
        "000493e0",  # rebalanceTimeout 300000
        "00002710",  # sessionTimeout 10000
        "00000002 0000",  # subscription
        "00000001 01",  # assignment
    )
    assert encode_group_metadata_value(GROUP) == expected
    assert decode_group_metadata_value(expected) == GROUP


def test_group_metadata_value_golden_empty_group() -> None:
    # What GroupCoordinatorRecordHelpers.newEmptyGroupMetadataRecord writes.
    empty = GroupMetadataValue(
        protocol_type="",
        generation=0,
        protocol=None,
        leader=None,
        current_state_timestamp=-1,
        members=(),
    )
    expected = hexb(
        "0003",  # version
        "0000",  # protocolType ""
        "00000000",  # generation
        "ffff",  # protocol null
        "ffff",  # leader null
        "ffffffffffffffff",  # currentStateTimestamp -1
        "00000000",  # no members
    )
    assert encode_group_metadata_value(empty) == expected
    assert decode_group_metadata_value(expected) == empty


def test_group_metadata_value_golden_v4_flexible() -> None:
    expected = (
        bytes.fromhex("0004")
        + cs("consumer")
        + i32b(1)
        + cs("range")
        + cs("m1")
        + i64(1234)
        + uv(2)  # compact array: 1 member
        + cs("m1")
        + cs(None)
        + cs("c")
        + cs("/127.0.0.1")
        + i32b(300000)
        + i32b(10000)
        + cb(b"\x00\x00")
        + cb(b"\x01")
        + NO_TAGS  # member's tagged fields
        + NO_TAGS  # value's tagged fields
    )
    assert encode_group_metadata_value(GROUP, version=4) == expected
    assert decode_group_metadata_value(expected) == GROUP


# -- older versions, built by hand ---------------------------------------------------------


def test_decode_offset_commit_key_v0() -> None:
    data = i16(0) + s("group") + s("topic") + i32b(42)
    assert decode_key(data) == OffsetCommitKey("group", "topic", 42)


def test_decode_offset_commit_value_v0() -> None:
    data = i16(0) + i64(100) + s("meta") + i64(1_600_000_000_000)
    assert decode_offset_commit_value(data) == OffsetCommitValue(
        offset=100,
        leader_epoch=-1,
        metadata="meta",
        commit_timestamp=1_600_000_000_000,
        expire_timestamp=-1,
    )


def test_decode_offset_commit_value_v1() -> None:
    data = i16(1) + i64(100) + s("") + i64(10) + i64(20)
    assert decode_offset_commit_value(data) == OffsetCommitValue(100, -1, "", 10, 20)


def test_decode_offset_commit_value_v2() -> None:
    data = i16(2) + i64(100) + s("x") + i64(10)
    assert decode_offset_commit_value(data) == OffsetCommitValue(100, -1, "x", 10, -1)


def test_decode_offset_commit_value_v4_skips_unknown_tagged_fields() -> None:
    data = (
        i16(4)
        + i64(9)
        + i32b(4)
        + cs("meta")
        + i64(77)
        + uv(2)  # two tagged fields, unknown here
        + uv(0)
        + uv(3)
        + b"abc"
        + uv(200)  # a two-byte varint tag
        + uv(0)
    )
    assert decode_offset_commit_value(data) == OffsetCommitValue(9, 4, "meta", 77, -1)


def test_decode_group_metadata_value_v0() -> None:
    data = (
        i16(0)
        + s("consumer")
        + i32b(3)
        + s("range")
        + s("m1")
        + i32b(2)
        + s("m1")
        + s("c1")
        + s("/h1")
        + i32b(10000)  # sessionTimeout (no rebalanceTimeout in v0)
        + b(b"sub1")
        + b(b"asg1")
        + s("m2")
        + s("c2")
        + s("/h2")
        + i32b(30000)
        + b(b"")
        + b(b"")
    )
    value = decode_group_metadata_value(data)
    assert value == GroupMetadataValue(
        protocol_type="consumer",
        generation=3,
        protocol="range",
        leader="m1",
        current_state_timestamp=-1,
        members=(
            MemberMetadataValue("m1", None, "c1", "/h1", 10000, 10000, b"sub1", b"asg1"),
            MemberMetadataValue("m2", None, "c2", "/h2", 30000, 30000, b"", b""),
        ),
    )


def test_decode_group_metadata_value_v1() -> None:
    data = (
        i16(1)
        + s("consumer")
        + i32b(1)
        + s(None)
        + s(None)
        + i32b(1)
        + s("m")
        + s("c")
        + s("/h")
        + i32b(60000)  # rebalanceTimeout
        + i32b(10000)
        + b(b"s")
        + b(b"a")
    )
    assert decode_group_metadata_value(data) == GroupMetadataValue(
        "consumer",
        1,
        None,
        None,
        -1,
        (MemberMetadataValue("m", None, "c", "/h", 60000, 10000, b"s", b"a"),),
    )


def test_decode_group_metadata_value_v2() -> None:
    data = i16(2) + s("") + i32b(0) + s(None) + s(None) + i64(555) + i32b(0)
    assert decode_group_metadata_value(data) == GroupMetadataValue("", 0, None, None, 555, ())


def test_decode_group_metadata_value_v3_static_member() -> None:
    data = (
        i16(3)
        + s("consumer")
        + i32b(8)
        + s("sticky")
        + s("m")
        + i64(1)
        + i32b(1)
        + s("m")
        + s("instance-1")
        + s("c")
        + s("/h")
        + i32b(1)
        + i32b(2)
        + b(b"")
        + b(b"")
    )
    value = decode_group_metadata_value(data)
    assert value.members[0].group_instance_id == "instance-1"


def test_decode_group_metadata_value_v4_skips_unknown_tagged_fields() -> None:
    data = (
        i16(4)
        + cs("consumer")
        + i32b(1)
        + cs("range")
        + cs("m1")
        + i64(1234)
        + uv(2)
        + cs("m1")
        + cs(None)
        + cs("c")
        + cs("/127.0.0.1")
        + i32b(300000)
        + i32b(10000)
        + cb(b"\x00\x00")
        + cb(b"\x01")
        + uv(1)  # member: one unknown tagged field
        + uv(7)
        + uv(2)
        + b"zz"
        + uv(1)  # value: one unknown tagged field
        + uv(0)
        + uv(0)
    )
    assert decode_group_metadata_value(data) == GROUP


def test_v0_rebalance_timeout_defaults_to_session_timeout_when_encoding_v0() -> None:
    value = decode_group_metadata_value(encode_group_metadata_value(GROUP, version=0))
    assert value.members[0].rebalance_timeout_ms == MEMBER.session_timeout_ms
    assert value.current_state_timestamp == -1


def test_trailing_bytes_are_ignored_as_kafka_does() -> None:
    assert decode_offset_commit_value(
        encode_offset_commit_value(OffsetCommitValue(1, 2, "m", 3)) + b"more"
    ) == OffsetCommitValue(1, 2, "m", 3)
    assert decode_group_metadata_value(encode_group_metadata_value(GROUP) + b"\x00") == GROUP
    assert decode_group_metadata_value(encode_group_metadata_value(GROUP, version=4) + b"\xff") == (
        GROUP
    )
    assert decode_key(encode_group_metadata_key(GroupMetadataKey("g")) + b"x") == (
        GroupMetadataKey("g")
    )


@pytest.mark.parametrize("record_type", [3, 4, 5, 8, 15, 16, 0x7FFF, -1, -32768])
def test_decode_key_other_record_types_are_none(record_type: int) -> None:
    # Newer Kafka's consumer-group and share-group records, or anything else: skipped.
    assert decode_key(i16(record_type) + s("g") + s("member")) is None
    assert decode_key(i16(record_type)) is None


def test_decode_key_accepts_buffer_types() -> None:
    data = encode_offset_commit_key(OffsetCommitKey("g", "t", 1))
    assert decode_key(bytearray(data)) == decode_key(memoryview(data)) == decode_key(data)


# -- malformed input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        i16(1),  # key without fields
        i16(1) + s("g") + s("t") + b"\x00\x00\x00",  # partition cut short
        i16(1) + s(None) + s("t") + i32b(0),  # null group
        i16(2) + s(None),
        i16(2) + i16(5) + b"ab",  # string longer than the data
        i16(2) + i16(2) + b"\xff\xfe",  # not UTF-8
    ],
)
def test_decode_key_malformed(data: bytes) -> None:
    with pytest.raises(OffsetsRecordError):
        decode_key(data)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        i16(5) + i64(1) + s("") + i64(1),  # unknown version
        i16(-1) + i64(1) + s("") + i64(1),
        i16(3) + i64(1) + i32b(0) + s(None) + i64(1),  # null metadata
        i16(3) + i64(1) + i32b(0) + s(""),  # no commitTimestamp
        i16(4) + i64(1) + i32b(0) + cs("") + i64(1),  # no tagged-field section
        i16(4) + i64(1) + i32b(0) + cs(None) + i64(1) + NO_TAGS,  # null metadata, compact
        i16(4) + i64(1) + i32b(0) + cs("") + i64(1) + uv(1) + uv(0) + uv(5) + b"ab",
        i16(4) + i64(1) + i32b(0) + b"\xff\xff\xff\xff\xff\x01",  # varint over 5 bytes
        i16(4) + i64(1) + i32b(0) + b"\xff\xff\xff\xff\x7f",  # varint over 32 bits
        i16(4) + i64(1) + i32b(0) + uv(0x8001) + b"x" * 0x8000 + i64(1) + NO_TAGS,
    ],
)
def test_decode_offset_commit_value_malformed(data: bytes) -> None:
    with pytest.raises(OffsetsRecordError):
        decode_offset_commit_value(data)


@pytest.mark.parametrize(
    "data",
    [
        i16(3) + s(None) + i32b(0) + s(None) + s(None) + i64(-1) + i32b(0),  # null protocolType
        i16(3) + s("") + i32b(0) + s(None) + s(None) + i64(-1) + i32b(-1),  # null members
        i16(3) + s("") + i32b(0) + s(None) + s(None) + i64(-1) + i32b(0x7FFFFFFF),  # huge count
        i16(4) + cs("") + i32b(0) + cs(None) + cs(None) + i64(-1) + uv(0xFFFFFFFF),
        i16(4) + cs("") + i32b(0) + cs(None) + cs(None) + i64(-1) + uv(0),  # null compact array
        i16(3)
        + s("")
        + i32b(0)
        + s(None)
        + s(None)
        + i64(-1)
        + i32b(1)
        + s("m")
        + s(None)
        + s("c")
        + s("h")
        + i32b(1)
        + i32b(1)
        + i32b(-1)  # null subscription
        + b(b""),
        i16(3)
        + s("")
        + i32b(0)
        + s(None)
        + s(None)
        + i64(-1)
        + i32b(1)
        + s("m")
        + s(None)
        + s("c")
        + s("h")
        + i32b(1)
        + i32b(1)
        + i32b(1000)  # subscription longer than the data
        + b"x",
    ],
)
def test_decode_group_metadata_value_malformed(data: bytes) -> None:
    with pytest.raises(OffsetsRecordError):
        decode_group_metadata_value(data)


def test_every_strict_prefix_is_refused() -> None:
    for data, decode in [
        (encode_group_metadata_value(GROUP), decode_group_metadata_value),
        (encode_group_metadata_value(GROUP, version=4), decode_group_metadata_value),
        (encode_group_metadata_value(GROUP, version=0), decode_group_metadata_value),
        (encode_offset_commit_value(OffsetCommitValue(1, 2, "m", 3)), decode_offset_commit_value),
        (
            encode_offset_commit_value(OffsetCommitValue(1, 2, "m", 3), version=4),
            decode_offset_commit_value,
        ),
        (encode_offset_commit_key(OffsetCommitKey("g", "t", 0)), decode_key),
        (encode_group_metadata_key(GroupMetadataKey("g")), decode_key),
    ]:
        for end in range(len(data)):
            with pytest.raises(OffsetsRecordError):
                decode(data[:end])


@given(st.binary(max_size=300))
def test_arbitrary_bytes_raise_only_offsets_record_error(data: bytes) -> None:
    for decode in (
        decode_key,
        decode_offset_commit_value,
        decode_group_metadata_value,
        subscribed_topics,
    ):
        with contextlib.suppress(OffsetsRecordError):
            decode(data)


@given(st.sampled_from(range(5)), st.binary(max_size=200))
def test_versioned_garbage_raises_only_offsets_record_error(version: int, body: bytes) -> None:
    # A valid version prefix gets the fuzzing past the version check, into the fields.
    for decode in (decode_offset_commit_value, decode_group_metadata_value, decode_key):
        with contextlib.suppress(OffsetsRecordError):
            decode(i16(version) + body)


def test_encoding_refuses_out_of_range_values() -> None:
    with pytest.raises(OffsetsRecordError):
        encode_offset_commit_key(OffsetCommitKey("g", "t", 1 << 31))
    with pytest.raises(OffsetsRecordError):
        encode_offset_commit_key(OffsetCommitKey("g" * 0x8000, "t", 0))
    with pytest.raises(OffsetsRecordError):
        encode_group_metadata_key(GroupMetadataKey("\ud800"))  # lone surrogate: no UTF-8
    with pytest.raises(OffsetsRecordError):
        encode_offset_commit_value(OffsetCommitValue(1 << 63, -1, "", 0))
    with pytest.raises(OffsetsRecordError):
        encode_offset_commit_value(OffsetCommitValue(0, -1, "", 0), version=5)
    with pytest.raises(OffsetsRecordError):
        encode_group_metadata_value(dataclasses.replace(GROUP, generation=-(1 << 31) - 1))
    with pytest.raises(OffsetsRecordError):
        encode_group_metadata_value(GROUP, version=-1)
    # The longest string Kafka allows still goes.
    encode_group_metadata_key(GroupMetadataKey("g" * 0x7FFF))


# -- round trips ------------------------------------------------------------------------------

texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
int32s = st.integers(-(1 << 31), (1 << 31) - 1)
int64s = st.integers(-(1 << 63), (1 << 63) - 1)

offset_commit_keys = st.builds(OffsetCommitKey, texts, texts, int32s)
offset_commit_values = st.builds(
    OffsetCommitValue,
    offset=int64s,
    leader_epoch=int32s,
    metadata=texts,
    commit_timestamp=int64s,
    expire_timestamp=st.one_of(st.just(-1), int64s),
)
members = st.builds(
    MemberMetadataValue,
    member_id=texts,
    group_instance_id=st.none() | texts,
    client_id=texts,
    client_host=texts,
    rebalance_timeout_ms=int32s,
    session_timeout_ms=int32s,
    subscription=st.binary(max_size=40),
    assignment=st.binary(max_size=40),
)
group_values = st.builds(
    GroupMetadataValue,
    protocol_type=texts,
    generation=int32s,
    protocol=st.none() | texts,
    leader=st.none() | texts,
    current_state_timestamp=int64s,
    members=st.lists(members, max_size=4).map(tuple),
)


@given(offset_commit_keys)
def test_offset_commit_key_round_trip(key: OffsetCommitKey) -> None:
    assert decode_key(encode_offset_commit_key(key)) == key


@given(texts)
def test_group_metadata_key_round_trip(group: str) -> None:
    assert decode_key(encode_group_metadata_key(GroupMetadataKey(group))) == GroupMetadataKey(group)


@given(offset_commit_values)
def test_offset_commit_value_round_trip(value: OffsetCommitValue) -> None:
    data = encode_offset_commit_value(value)
    if value.expire_timestamp == -1:
        assert data[:2] == i16(3)
        assert decode_offset_commit_value(data) == value
    else:  # v1: the leader epoch is lost, as in Kafka
        assert data[:2] == i16(1)
        assert decode_offset_commit_value(data) == dataclasses.replace(value, leader_epoch=-1)


@given(offset_commit_values, st.sampled_from(range(5)))
def test_offset_commit_value_round_trip_every_version(
    value: OffsetCommitValue, version: int
) -> None:
    expected = dataclasses.replace(
        value,
        leader_epoch=value.leader_epoch if version >= 3 else -1,
        expire_timestamp=value.expire_timestamp if version == 1 else -1,
    )
    data = encode_offset_commit_value(value, version=version)
    assert data[:2] == i16(version)
    assert decode_offset_commit_value(data) == expected


@given(group_values)
def test_group_metadata_value_round_trip(value: GroupMetadataValue) -> None:
    data = encode_group_metadata_value(value)
    assert data[:2] == i16(3)
    assert decode_group_metadata_value(data) == value


@given(group_values, st.sampled_from(range(5)))
def test_group_metadata_value_round_trip_every_version(
    value: GroupMetadataValue, version: int
) -> None:
    expected = dataclasses.replace(
        value,
        current_state_timestamp=value.current_state_timestamp if version >= 2 else -1,
        members=tuple(
            dataclasses.replace(
                m,
                group_instance_id=m.group_instance_id if version >= 3 else None,
                rebalance_timeout_ms=(
                    m.rebalance_timeout_ms if version >= 1 else m.session_timeout_ms
                ),
            )
            for m in value.members
        ),
    )
    data = encode_group_metadata_value(value, version=version)
    assert data[:2] == i16(version)
    assert decode_group_metadata_value(data) == expected


# -- Java's hash and the coordinator's partition ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "java_hash"),
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),
        # Three strings whose hashCode is Integer.MIN_VALUE.
        ("polygenelubricants", -(1 << 31)),
        ("GydZG_", -(1 << 31)),
        ("DESIGNING WORKHOUSES", -(1 << 31)),
        ("my-group", -1906497762),
        ("console-consumer-12345", 158455506),
        # Outside the BMP: U+1F600 is two UTF-16 units, \ud83d\ude00.
        ("\U0001f600", 1772899),
        ("géo-\U0001f600-x", 378949902),
        ("\ud83d", 55357),  # a lone surrogate is a Java char too
    ],
)
def test_java_string_hash(text: str, java_hash: int) -> None:
    assert java_string_hash(text) == java_hash


@pytest.mark.parametrize(
    ("group", "partitions", "expected"),
    [
        ("my-group", 50, 12),
        ("a", 50, 47),
        ("hello", 50, 22),
        ("\U0001f600", 50, 49),
        ("console-consumer-12345", 7, 6),
        # Utils.abs(Integer.MIN_VALUE) is 0, not Math.abs's Integer.MIN_VALUE.
        ("polygenelubricants", 50, 0),
        ("polygenelubricants", 7, 0),
        ("GydZG_", 3, 0),
    ],
)
def test_partition_for(group: str, partitions: int, expected: int) -> None:
    assert partition_for(group, partitions) == expected


@given(st.text(max_size=30), st.integers(1, 1000))
def test_partition_for_is_in_range(group: str, partitions: int) -> None:
    assert -(1 << 31) <= java_string_hash(group) < (1 << 31)
    assert 0 <= partition_for(group, partitions) < partitions


def test_partition_for_refuses_no_partitions() -> None:
    with pytest.raises(ValueError):
        partition_for("g", 0)


# -- consumer-protocol subscriptions --------------------------------------------------------


def test_subscribed_topics_hand_encoded_v0() -> None:
    data = i16(0) + i32b(2) + s("foo") + s("bar") + i32b(-1)
    assert subscribed_topics(data) == {"foo", "bar"}


def test_subscribed_topics_hand_encoded_v1_with_owned_partitions() -> None:
    data = (
        i16(1)
        + i32b(1)
        + s("foo")
        + b(b"userdata")
        + i32b(1)  # ownedPartitions
        + s("foo")
        + i32b(2)
        + i32b(0)
        + i32b(1)
    )
    assert subscribed_topics(data) == {"foo"}


def test_subscribed_topics_future_version_reads_the_v0_prefix() -> None:
    # Kafka's coordinator parses any version as v0, the prefix of every version.
    data = i16(9) + i32b(1) + s("t") + i32b(-1) + b"fields of version 9"
    assert subscribed_topics(data) == {"t"}


def test_subscribed_topics_no_topics_and_duplicates() -> None:
    assert subscribed_topics(i16(0) + i32b(0) + i32b(-1)) == set()
    assert subscribed_topics(i16(0) + i32b(2) + s("t") + s("t") + i32b(0)) == {"t"}


def _kio(entity: Entity, version: int) -> bytes:
    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return i16(version) + out.getvalue()


def test_subscribed_topics_of_kio_encoded_subscriptions() -> None:
    v0 = SubscriptionV0(topics=("a", "b"), user_data=b"ud")
    assert subscribed_topics(_kio(v0, 0)) == {"a", "b"}
    v1 = SubscriptionV1(
        topics=("x",),
        user_data=None,
        owned_partitions=(OwnedV1(topic=TopicName("x"), partitions=(i32(0),)),),
    )
    assert subscribed_topics(_kio(v1, 1)) == {"x"}
    v3 = SubscriptionV3(
        topics=("orders", "payments"),
        user_data=None,
        owned_partitions=(OwnedV3(topic=TopicName("orders"), partitions=(i32(1), i32(2))),),
        generation_id=i32(5),
        rack_id="rack-a",
    )
    assert subscribed_topics(_kio(v3, 3)) == {"orders", "payments"}


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        i16(0),  # no topics array
        i16(0) + i32b(-1) + i32b(-1),  # null topics
        i16(0) + i32b(0x7FFFFFFF),  # a count no data can hold: refused, not allocated
        i16(0) + i32b(1) + s(None) + i32b(-1),  # null topic
        i16(0) + i32b(1) + s("t"),  # no userData
        i16(0) + i32b(1) + s("t") + i32b(5) + b"ab",  # userData cut short
        i16(0) + i32b(1) + i16(1) + b"\xff" + i32b(-1),  # topic not UTF-8
    ],
)
def test_subscribed_topics_malformed(data: bytes) -> None:
    with pytest.raises(OffsetsRecordError):
        subscribed_topics(data)
