"""Kafka wire codec: frames built with kio's own writers decode, responses parse back."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import io
import struct
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import KioIndexError
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v4.request import ApiVersionsRequest as ApiVersionsRequestV4
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest as MetadataRequestV12
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    is_optional,
)
from kio.serial.readers import tz_aware_from_i64
from kio.static.primitive import (
    Records,
    TZAware,
    i16,
    i32,
    i32Timedelta,
    i64,
    i64Timedelta,
)

from minikafka.protocol.kafka import codec
from minikafka.protocol.kafka.codec import (
    KafkaRequest,
    MalformedRequest,
    UnsupportedVersion,
    decode_request,
    encode_response,
    request_type,
    response_type,
    unsupported_api_versions_response,
)
from minikafka.server.kafka_api.handler import SERVED_VERSIONS
from tests.kio_build import build


def decode(frame: bytes | bytearray | memoryview) -> KafkaRequest:
    """decode_request with the versions the broker serves."""
    return decode_request(frame, SERVED_VERSIONS)


ALL_VERSIONS = [
    (key, version)
    for key, (low, high) in sorted(SERVED_VERSIONS.items())
    for version in range(low, high + 1)
]
FLEXIBLE_VERSIONS = [kv for kv in ALL_VERSIONS if request_type(*kv).__flexible__]

# Captured from confluent-kafka 2.16.1 (librdkafka 2.16.0): a Producer's first request to a
# local socket (ApiVersions v3), its retry after the KIP-511 answer (ApiVersions v0), and
# the Metadata v12 request it sends once ApiVersions is answered. Without the size prefix.
RDKAFKA_API_VERSIONS_V3 = bytes.fromhex(
    "0012000300000001000f72646b61666b612d666978747572650017636f6e666c75656e742d6b61666b61"
    "2d707974686f6e16322e31362e312d72646b61666b612d322e31362e3000"
)
RDKAFKA_API_VERSIONS_V0 = bytes.fromhex("0012000000000002000f72646b61666b612d66697874757265")
RDKAFKA_METADATA_V12 = bytes.fromhex("0003000c00000003000f72646b61666b612d666978747572650001000000")


# -- building real frames with kio ---------------------------------------------------------


def _sample_primitive(kind: type) -> Any:
    """A non-default value of a kio primitive type, so that tagged fields get written too."""
    if issubclass(kind, Records):
        return b"\x00record-batch-bytes\xff"
    if issubclass(kind, bytes):
        return b"\x01\x02"
    if issubclass(kind, ErrorCode):
        return ErrorCode.unknown_topic_or_partition
    if issubclass(kind, bool):
        return True
    if issubclass(kind, str):
        return "orders-é"
    if issubclass(kind, int):
        return kind(7)
    if issubclass(kind, float):
        return 1.5
    if issubclass(kind, i32Timedelta):
        return i32Timedelta.parse(datetime.timedelta(milliseconds=1500))
    if issubclass(kind, i64Timedelta):
        return i64Timedelta.parse(datetime.timedelta(milliseconds=1500))
    if issubclass(kind, TZAware):
        return tz_aware_from_i64(i64(1_700_000_000_123))
    if issubclass(kind, uuid.UUID):
        return uuid.UUID(int=0x1234)
    raise AssertionError(f"no sample for {kind}")


def sample(entity_type: type) -> Any:
    """An entity with every field set (arrays of one element, nested structs filled)."""
    values = {}
    for field in dataclasses.fields(entity_type):
        kind = classify_field(field)
        if isinstance(kind, EntityField):
            values[field.name] = sample(kind.type_)
        elif isinstance(kind, EntityTupleField):
            values[field.name] = (sample(kind.type_),)
        elif isinstance(kind, PrimitiveTupleField):
            values[field.name] = (_sample_primitive(kind.type_),)
        else:
            values[field.name] = _sample_primitive(kind.type_)
    return entity_type(**values)


def _serialise(entity: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return out.getvalue()


def request_frame(
    body: Any, correlation_id: int = 42, client_id: str | None = "test-client"
) -> bytes:
    """Request header (the version kio's schema names) and body, without the size prefix."""
    header_type = body.__header_schema__
    header = header_type(
        request_api_key=i16(body.__api_key__),
        request_api_version=i16(body.__version__),
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    return _serialise(header) + _serialise(body)


def kio_response_frame(
    api_key: int, api_version: int, correlation_id: int, values: dict[str, Any]
) -> bytes:
    """The response frame kio writes for `values` (by kio's field names): what the hand-
    written encoders are checked against."""
    response = response_type(api_key, api_version)
    header_version = int(response.__header_schema__.__version__)
    request = KafkaRequest(
        api_key=api_key,
        api_version=api_version,
        correlation_id=correlation_id,
        client_id="c",
        body=None,
        request_header_version=header_version + 1,
        response_header_version=header_version,
    )
    return encode_response(request, build(response, values))


def parse_response(frame: bytes, api_key: int, api_version: int) -> tuple[int, int, Any]:
    """(correlation id, response header version, body) of a size-prefixed response frame."""
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    (correlation_id,) = struct.unpack_from(">i", frame, 4)
    expected = response_type(api_key, api_version)
    header_version = expected.__header_schema__.__version__
    offset = 8
    if header_version == 1:
        assert frame[offset] == 0  # empty tagged fields
        offset += 1
    body, used = entity_reader(expected)(frame, offset)
    assert offset + used == len(frame)
    return correlation_id, header_version, body


# A schema from the future: the same entity with one more tagged field at every level, so
# kio's writer produces what a newer client would send, with tags this broker does not know.
FUTURE_TAG = 4242


@functools.cache
def future_type(entity_type: type) -> type:
    specs: list[tuple[str, Any, Any]] = []
    for field in dataclasses.fields(entity_type):
        kind = classify_field(field)
        field_type = field.type
        if isinstance(kind, EntityField):
            field_type = future_type(kind.type_)
        elif isinstance(kind, EntityTupleField):
            field_type = tuple[future_type(kind.type_), ...]  # type: ignore[misc]
        if field_type is not field.type and is_optional(field):
            field_type = field_type | None
        options: dict[str, Any] = {"metadata": field.metadata}
        if field.default is not dataclasses.MISSING:
            options["default"] = field.default
        specs.append((field.name, field_type, dataclasses.field(**options)))
    specs.append(
        (
            "note_from_the_future",
            str,
            dataclasses.field(metadata={"kafka_type": "string", "tag": FUTURE_TAG}, default=""),
        )
    )
    namespace = {
        name: getattr(entity_type, name)
        for name in ("__type__", "__version__", "__flexible__", "__api_key__")
        if hasattr(entity_type, name)
    }
    return dataclasses.make_dataclass(
        entity_type.__name__,  # kio special-cases the name RequestHeader
        specs,
        namespace=namespace,
        frozen=True,
        slots=True,
        kw_only=True,
    )


def to_future(entity: Any) -> Any:
    def convert(value: Any) -> Any:
        if dataclasses.is_dataclass(value):
            return to_future(value)
        if isinstance(value, tuple):
            return tuple(convert(item) for item in value)
        return value

    values = {f.name: convert(getattr(entity, f.name)) for f in dataclasses.fields(entity)}
    return future_type(type(entity))(**values, note_from_the_future="unknown to kio 0.6.5")


def future_request_frame(body: Any, correlation_id: int = 42) -> bytes:
    """Like request_frame, with an unknown tagged field in the header and in every struct."""
    header = RequestHeaderV2(
        request_api_key=i16(body.__api_key__),
        request_api_version=i16(body.__version__),
        correlation_id=i32(correlation_id),
        client_id="future-client",
    )
    return _serialise(to_future(header)) + _serialise(to_future(body))


# -- the table -----------------------------------------------------------------------------


@pytest.mark.parametrize(("api_key", "api_version"), ALL_VERSIONS)
def test_every_supported_version_has_kio_schemas(api_key: int, api_version: int) -> None:
    request = request_type(api_key, api_version)
    response = response_type(api_key, api_version)
    assert (request.__api_key__, request.__version__) == (api_key, api_version)
    assert (response.__api_key__, response.__version__) == (api_key, api_version)
    assert request_type(api_key, api_version) is request  # cached, no import per request


def test_minimums_are_kafka_4s() -> None:
    # Kafka 4.x refuses older versions of these (KIP-896); kio has no schemas for them.
    assert SERVED_VERSIONS[0][0] == 3  # Produce
    assert SERVED_VERSIONS[1][0] == 4  # Fetch
    assert SERVED_VERSIONS[2][0] == 1  # ListOffsets
    assert SERVED_VERSIONS[19][0] == 2  # CreateTopics
    assert SERVED_VERSIONS[20][0] == 1  # DeleteTopics
    assert SERVED_VERSIONS[23][0] == 2  # OffsetForLeaderEpoch
    assert SERVED_VERSIONS[32][0] == 1  # DescribeConfigs
    for api_key in (0, 1, 2, 19, 20, 23, 32):
        with pytest.raises(KioIndexError):
            request_type(api_key, SERVED_VERSIONS[api_key][0] - 1)


# -- round trips ---------------------------------------------------------------------------


@pytest.mark.parametrize(("api_key", "api_version"), ALL_VERSIONS)
def test_request_and_response_round_trip(api_key: int, api_version: int) -> None:
    body = sample(request_type(api_key, api_version))
    flexible = body.__flexible__
    frame = request_frame(body, correlation_id=7, client_id="test-client")

    request = decode(frame)

    assert request == KafkaRequest(
        api_key=api_key,
        api_version=api_version,
        correlation_id=7,
        client_id="test-client",
        body=body,
        request_header_version=2 if flexible else 1,
        response_header_version=1 if flexible and api_key != 18 else 0,
    )
    # codec.py reads structs itself: it must agree with kio's own reader.
    body_offset = len(frame) - len(_serialise(body))
    assert entity_reader(type(body))(frame, body_offset) == (body, len(frame) - body_offset)

    response_body = sample(response_type(api_key, api_version))
    frame = encode_response(request, response_body)
    correlation_id, header_version, parsed = parse_response(frame, api_key, api_version)
    assert correlation_id == 7
    assert header_version == request.response_header_version
    assert parsed == response_body


@pytest.mark.parametrize("frame_type", [bytes, bytearray, memoryview])
def test_decode_accepts_any_bytes_like_frame(frame_type: type) -> None:
    body = sample(request_type(0, 9))
    request = decode(frame_type(request_frame(body)))
    assert request.body == body


def test_null_client_id_decodes_as_none() -> None:
    request = decode(request_frame(sample(request_type(3, 12)), client_id=None))
    assert request.client_id is None


def test_api_versions_response_uses_header_v0_even_when_flexible() -> None:
    request = decode(request_frame(sample(request_type(18, 3))))
    assert (request.request_header_version, request.response_header_version) == (2, 0)
    frame = encode_response(request, sample(response_type(18, 3)))
    # v0 header: the body's error code follows the correlation id directly.
    assert frame[8:10] == struct.pack(">h", ErrorCode.unknown_topic_or_partition)


def test_large_records_blob_comes_back_whole() -> None:
    blob = bytes(range(256)) * 4096  # 1 MiB
    body = sample(request_type(0, 9))
    topic = body.topic_data[0]
    partition = dataclasses.replace(topic.partition_data[0], records=blob)
    body = dataclasses.replace(
        body, topic_data=(dataclasses.replace(topic, partition_data=(partition,)),)
    )
    request = decode(request_frame(body))
    assert request.body.topic_data[0].partition_data[0].records == blob


def test_response_records_may_be_a_memoryview() -> None:
    # The broker hands out slices of segment data without copying them into bytes first.
    blob = b"batch-bytes" * 1000
    request = decode(request_frame(sample(request_type(1, 12))))
    response = sample(response_type(1, 12))
    topic = response.responses[0]

    def with_records(records: Any) -> Any:
        partition = dataclasses.replace(topic.partitions[0], records=records)
        return dataclasses.replace(
            response, responses=(dataclasses.replace(topic, partitions=(partition,)),)
        )

    assert encode_response(request, with_records(memoryview(blob))) == encode_response(
        request, with_records(blob)
    )


def test_encode_response_refuses_a_body_of_another_version() -> None:
    request = decode(request_frame(sample(request_type(3, 12))))
    with pytest.raises(TypeError):
        encode_response(request, sample(response_type(3, 11)))


# -- unsupported versions ------------------------------------------------------------------


def test_api_versions_newer_than_supported_gets_the_kip_511_answer() -> None:
    frame = request_frame(
        ApiVersionsRequestV4(client_software_name="future", client_software_version="9.9"),
        correlation_id=1234,
    )
    with pytest.raises(UnsupportedVersion) as raised:
        decode(frame)
    assert (raised.value.api_key, raised.value.api_version) == (18, 4)
    assert raised.value.correlation_id == 1234

    answer = unsupported_api_versions_response(raised.value.correlation_id, SERVED_VERSIONS)
    (size, correlation_id) = struct.unpack_from(">ii", answer)
    assert (size, correlation_id) == (len(answer) - 4, 1234)
    body, used = entity_reader(ApiVersionsResponseV0)(answer, 8)  # header v0: no tags
    assert 8 + used == len(answer)
    assert body.error_code == ErrorCode.unsupported_version == 35
    ranges = {v.api_key: (v.min_version, v.max_version) for v in body.api_keys}
    assert ranges == SERVED_VERSIONS
    assert ranges[18] == (0, 3)


def test_version_below_the_minimum_is_unsupported() -> None:
    frame = request_frame(sample(request_type(0, 3)))
    frame = frame[:2] + struct.pack(">h", 2) + frame[4:]  # Produce v2: Kafka 4.x refuses it
    with pytest.raises(UnsupportedVersion) as raised:
        decode(frame)
    assert (raised.value.api_key, raised.value.api_version) == (0, 2)


@pytest.mark.parametrize("api_key", [8, 9999, -1])  # known to kio but not served; unknown
def test_unknown_api_key_is_unsupported_and_only_the_fixed_header_is_read(api_key: int) -> None:
    frame = struct.pack(">hhi", api_key, 0, 99) + b"\xff\xff\xff garbage, not a header"
    with pytest.raises(UnsupportedVersion) as raised:
        decode(frame)
    assert (raised.value.api_key, raised.value.api_version) == (api_key, 0)
    assert raised.value.correlation_id == 99


def test_the_table_is_editable_at_run_time(monkeypatch: pytest.MonkeyPatch) -> None:
    frame = request_frame(sample(request_type(18, 3)))
    monkeypatch.setitem(SERVED_VERSIONS, 18, (0, 2))
    with pytest.raises(UnsupportedVersion):
        decode(frame)


def test_version_kio_has_no_schema_for_is_unsupported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SERVED_VERSIONS, 0, (0, 9))
    frame = struct.pack(">hhi", 0, 1, 5) + b"\x00\x00"
    with pytest.raises(UnsupportedVersion) as raised:
        decode(frame)
    assert raised.value.correlation_id == 5


# -- unknown tagged fields -----------------------------------------------------------------


def test_kio_native_reader_still_rejects_unknown_tags() -> None:
    # Why codec.py carries its tolerant reader: when this fails, kio skips them itself.
    body = to_future(sample(request_type(3, 12)))
    with pytest.raises(KeyError):
        entity_reader(request_type(3, 12))(_serialise(body), 0)


@pytest.mark.parametrize(("api_key", "api_version"), FLEXIBLE_VERSIONS)
def test_unknown_tagged_fields_are_skipped_at_every_level(api_key: int, api_version: int) -> None:
    body = sample(request_type(api_key, api_version))
    request = decode(future_request_frame(body, correlation_id=11))
    assert request.body == body
    assert (request.correlation_id, request.client_id) == (11, "future-client")


def test_unknown_tag_in_the_header_only_is_skipped() -> None:
    body = sample(request_type(1, 12))
    header = RequestHeaderV2(
        request_api_key=i16(1), request_api_version=i16(12), correlation_id=i32(3), client_id="c"
    )
    request = decode(_serialise(to_future(header)) + _serialise(body))
    assert (request.correlation_id, request.client_id, request.body) == (3, "c", body)


def test_unknown_tag_deep_in_a_produce_request_keeps_the_records() -> None:
    body = sample(request_type(0, 9))
    request = decode(future_request_frame(body))
    records = request.body.topic_data[0].partition_data[0].records
    assert records == body.topic_data[0].partition_data[0].records


@pytest.mark.parametrize("cursor", [None, "sample"])
def test_nullable_struct_with_unknown_tags(
    monkeypatch: pytest.MonkeyPatch, cursor: str | None
) -> None:
    # DescribeTopicPartitions (75) is not served yet, but its request carries the only
    # nullable struct (KIP-893) in a request kio knows: the tolerant reader must handle it.
    monkeypatch.setitem(SERVED_VERSIONS, 75, (0, 0))
    body = sample(request_type(75, 0))
    if cursor is None:
        body = dataclasses.replace(body, cursor=None)
    request = decode(future_request_frame(body))
    assert request.body == body


def test_unknown_tag_with_a_lying_length_is_malformed() -> None:
    body = MetadataRequestV12(
        topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    frame = request_frame(body)
    assert frame[-1] == 0  # the body's empty tagged fields section, rewritten below

    def with_unknown_tag(length: int) -> bytes:
        # one tagged field: tag 4242 (varint 0x92 0x21), its length, 3 bytes of value
        return frame[:-1] + b"\x01\x92\x21" + bytes([length]) + b"abc"

    assert decode(with_unknown_tag(3)).body == body
    for length in (4, 50):
        with pytest.raises(MalformedRequest):
            decode(with_unknown_tag(length))


def test_known_tag_whose_value_disagrees_with_its_length_is_malformed() -> None:
    body = dataclasses.replace(sample(request_type(1, 12)), cluster_id=None)
    frame = request_frame(body)
    assert frame[-1] == 0  # the body's empty tagged fields section, rewritten below

    def with_cluster_id_tag(length: int, value: bytes) -> bytes:
        return frame[:-1] + b"\x01\x00" + bytes([length]) + value  # tag 0: ClusterId

    request = decode(with_cluster_id_tag(3, b"\x03ab"))  # compact string "ab"
    assert request.body == dataclasses.replace(body, cluster_id="ab")
    with pytest.raises(MalformedRequest):
        decode(with_cluster_id_tag(5, b"\x03ab\x00\x00"))
    with pytest.raises(MalformedRequest):
        decode(with_cluster_id_tag(2, b"\x03ab"))


# -- malformed frames ----------------------------------------------------------------------


TRUNCATION_CASES = {
    "librdkafka ApiVersions v3": RDKAFKA_API_VERSIONS_V3,
    "librdkafka Metadata v12": RDKAFKA_METADATA_V12,
    "Produce v9": request_frame(sample(request_type(0, 9))),
    "Produce v8": request_frame(sample(request_type(0, 8))),
    "Fetch v12 with unknown tags": future_request_frame(sample(request_type(1, 12))),
    "Metadata v4": request_frame(sample(request_type(3, 4))),
}


@pytest.mark.parametrize("name", sorted(TRUNCATION_CASES))
def test_every_truncation_is_malformed(name: str) -> None:
    frame = TRUNCATION_CASES[name]
    decode(frame)  # whole, it decodes
    for cut in range(len(frame)):
        with pytest.raises(MalformedRequest):
            decode(frame[:cut])


def test_frame_shorter_than_the_fixed_header_is_malformed_without_ids() -> None:
    with pytest.raises(MalformedRequest) as raised:
        decode(b"\x00\x12\x00\x03\x00\x00")
    assert raised.value.api_key is None and raised.value.correlation_id is None


def test_bytes_left_over_after_the_body_are_ignored_as_kafka_does() -> None:
    # librdkafka 2.16's all-topics Metadata v12 request, as it sent it (three bytes after the
    # body's end), then the ApiVersions fixture with one more byte.
    metadata = bytes.fromhex("0003000c00000003000772646b61666b610000000000010000")
    request = decode(metadata)
    assert (request.api_key, request.api_version, request.correlation_id) == (3, 12, 3)
    assert request.body.topics is None  # type: ignore[attr-defined]
    assert decode(RDKAFKA_API_VERSIONS_V3 + b"\x00").correlation_id == 1


def test_invalid_utf8_is_malformed() -> None:
    in_client_id = bytearray(RDKAFKA_API_VERSIONS_V3)
    in_client_id[10] = 0xFF  # first byte of "rdkafka-fixture"
    in_body = bytearray(RDKAFKA_API_VERSIONS_V3)
    in_body[-3] = 0xC3  # last string's last character: a lone UTF-8 lead byte
    for frame in (in_client_id, in_body):
        with pytest.raises(MalformedRequest):
            decode(bytes(frame))


def test_garbage_lengths_are_malformed() -> None:
    header = struct.pack(">hhi", 3, 4, 1) + b"\xff\xff"  # Metadata v4, null client id
    cases = [
        header + b"\x7f\xff\xff\xff",  # 2^31-1 topics in a 4-byte frame
        header + b"\x00\x00\x00\x01\x80\x00",  # topic name of length -32768
        header + b"\x00\x00\x00\x01\x7f\xff",  # topic name longer than the frame
    ]
    for frame in cases:
        with pytest.raises(MalformedRequest):
            decode(frame)
    # Kafka reads any negative client id length as null; kio refuses all but -1.
    with pytest.raises(MalformedRequest):
        decode(struct.pack(">hhi", 3, 4, 1) + b"\xff\xfe" + b"\xff\xff\xff\xff\x00")
    assert decode(header + b"\xff\xff\xff\xff\x00").body.topics is None


def test_huge_array_counts_are_malformed_not_a_crash() -> None:
    # kio's native reader allocates the count it reads first: 2^32 aborted the process.
    huge_compact_count = b"\x81\x80\x80\x80\x10"  # uvarint 2^32 + 1
    cases = [
        # Metadata v12: topics (structs)
        struct.pack(">hhi", 3, 12, 1) + b"\xff\xff\x00" + huge_compact_count + b"\x00\x00\x00",
        # DeleteTopics v5: topic_names (strings)
        struct.pack(">hhi", 20, 5, 1) + b"\xff\xff\x00" + huge_compact_count + b"\x00" * 8,
        # DeleteTopics v3: 2^31 - 1 topic names in a legacy array
        struct.pack(">hhi", 20, 3, 1) + b"\xff\xff" + b"\x7f\xff\xff\xff" + b"\x00" * 8,
        # found by the fuzz test below: IncrementalAlterConfigs v1
        bytes.fromhex(
            "002c000100000001000163 00a592fe8d4886698af0d1edf484689aa1944e734d21817196238cc5faf9"
            "2940a202fe".replace(" ", "")
        ),
    ]
    for frame in cases:
        with pytest.raises(MalformedRequest):
            decode(frame)


# -- fuzzing -------------------------------------------------------------------------------


def _decode_or_refuse(frame: bytes) -> None:
    try:
        request = decode(frame)
    except (MalformedRequest, UnsupportedVersion):
        return
    assert isinstance(request, KafkaRequest)


@pytest.mark.parametrize("api_key", sorted(SERVED_VERSIONS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_bytes_after_a_valid_header(api_key: int, data: st.DataObject) -> None:
    low, high = SERVED_VERSIONS[api_key]
    version = data.draw(st.integers(low - 1, high + 1))
    header = struct.pack(">hhi", api_key, version, 1) + b"\x00\x01c"
    if low <= version <= high and request_type(api_key, version).__flexible__:
        header += b"\x00"
    _decode_or_refuse(header + data.draw(st.binary(max_size=120)))


@pytest.mark.parametrize("api_key", sorted(SERVED_VERSIONS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_real_requests(api_key: int, data: st.DataObject) -> None:
    low, high = SERVED_VERSIONS[api_key]
    version = data.draw(st.integers(low, high))
    body = sample(request_type(api_key, version))
    frame = bytearray(
        future_request_frame(body)
        if body.__flexible__ and data.draw(st.booleans())
        else request_frame(body)
    )
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(4, len(frame) - 1))  # keep the api key and version
        frame[position] = data.draw(st.integers(0, 255))
    _decode_or_refuse(bytes(frame))


# -- a real client -------------------------------------------------------------------------


def test_librdkafka_api_versions_v3_request_decodes() -> None:
    request = decode(RDKAFKA_API_VERSIONS_V3)
    assert (request.api_key, request.api_version, request.correlation_id) == (18, 3, 1)
    assert request.client_id == "rdkafka-fixture"
    assert request.body.client_software_name == "confluent-kafka-python"
    assert request.body.client_software_version == "2.16.1-rdkafka-2.16.0"
    assert (request.request_header_version, request.response_header_version) == (2, 0)


def test_librdkafka_retry_after_the_kip_511_answer_decodes() -> None:
    request = decode(RDKAFKA_API_VERSIONS_V0)
    assert (request.api_key, request.api_version, request.correlation_id) == (18, 0, 2)
    assert request.client_id == "rdkafka-fixture"
    assert request.request_header_version == 1


def test_librdkafka_metadata_v12_request_decodes() -> None:
    request = decode(RDKAFKA_METADATA_V12)
    assert (request.api_key, request.api_version, request.correlation_id) == (3, 12, 3)
    assert request.body.topics == ()  # librdkafka's bootstrap asks for brokers, no topics
    assert request.body.allow_auto_topic_creation is False


def test_kio_reads_the_librdkafka_requests_the_same() -> None:
    for frame in (RDKAFKA_API_VERSIONS_V3, RDKAFKA_API_VERSIONS_V0, RDKAFKA_METADATA_V12):
        request = decode(frame)
        offset = len(frame) - len(_serialise(request.body))
        assert entity_reader(type(request.body))(frame, offset) == (
            request.body,
            len(frame) - offset,
        )


def test_v1_header_is_used_for_non_flexible_versions() -> None:
    frame = request_frame(sample(request_type(3, 8)))
    header, used = entity_reader(RequestHeaderV1)(frame, 0)
    assert header.request_api_version == 8
    assert decode(frame).request_header_version == 1
    assert used == 2 + 2 + 4 + 2 + len("test-client")


def test_loading_a_versions_codecs_marks_it_loaded_and_other_versions_need_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(codec, "_loaded", set())
    low, high = SERVED_VERSIONS[3]  # Metadata
    assert not codec.codecs_loaded(3, high, SERVED_VERSIONS)
    codec.load_codecs(3, high, SERVED_VERSIONS)
    assert codec.codecs_loaded(3, high, SERVED_VERSIONS)
    assert not codec.codecs_loaded(3, low, SERVED_VERSIONS)
    # Nothing to load for what the broker does not serve: decode_request refuses it.
    assert codec.codecs_loaded(3, high + 1, SERVED_VERSIONS)
    assert codec.codecs_loaded(9999, 0, SERVED_VERSIONS)
    assert codec.request_api(struct.pack(">hhi", 3, high, 1)) == (3, high)
    assert codec.request_api(b"\x00\x03\x00") is None
