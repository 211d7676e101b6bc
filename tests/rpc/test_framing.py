import dataclasses
import struct

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.protocol.errors import ErrorCode, InvalidRequestError, NotLeaderOrFollowerError
from minikafka.protocol.transport import FrameError
from minikafka.rpc import messages as m
from minikafka.rpc.framing import (
    RequestDecodeError,
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from minikafka.storage.record_batch import build_batch


def wire(chunks) -> bytes:
    """Frame bytes after the 4-byte size field, as the receiver sees them."""
    data = b"".join(bytes(c) for c in chunks)
    (size,) = struct.unpack(">I", data[:4])
    assert size == len(data) - 4
    return data[4:]


def roundtrip_request(req):
    header = RequestHeader(int(m.API_KEY_OF_REQUEST[type(req)]), 0, 42, "test")
    h, body = decode_request(wire(encode_request(header, req)))
    assert h == header
    return body


def normalise(obj):
    """memoryview records -> bytes, for comparison."""
    if dataclasses.is_dataclass(obj):
        return {f.name: normalise(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, list | tuple):
        return [normalise(x) for x in obj]
    if isinstance(obj, dict):
        return {k: normalise(v) for k, v in obj.items()}
    if isinstance(obj, memoryview | bytearray):
        return bytes(obj)
    return obj


BATCH = build_batch([b"x", b"y"])

SAMPLES = [
    m.FetchRequest(
        2, 500, 1, 10_000, [m.FetchTopic("t", [m.FetchPartition(0, 17, 4096, 3, 5)])], 99
    ),
    m.ListOffsetsRequest(
        -1, [m.ListOffsetsTopic("t", [m.ListOffsetsPartition(0, m.LATEST_TIMESTAMP)])]
    ),
    m.OffsetForLeaderEpochRequest(
        1, [m.OffsetForLeaderTopic("t", [m.OffsetForLeaderPartition(0, 4, 2)])]
    ),
    m.LeaderAndIsrRequest(
        1,
        5,
        77,
        [m.LeaderAndIsrPartitionState("t", 0, 5, 1, 3, [1, 2], 9, [1, 2, 3], True)],
        [m.BrokerNode(1, "127.0.0.1", 9092, None)],
    ),
    m.UpdateMetadataRequest(
        1,
        5,
        77,
        [m.UpdateMetadataPartitionState("t", 0, 5, 1, 3, [1], 9, [1, 2], [2])],
        [m.BrokerNode(1, "h", 1, "rack-a")],
        ["gone"],
    ),
    m.StopReplicaRequest(1, 5, 77, [m.StopReplicaPartition("t", 0, True, 3)]),
    m.ControlledShutdownRequest(2, 88),
]


def test_every_api_key_has_a_sample():
    assert {m.API_KEY_OF_REQUEST[type(s)] for s in SAMPLES} == set(m.API_TYPES)


@pytest.mark.parametrize("req", SAMPLES, ids=lambda r: type(r).__name__)
def test_request_round_trip(req):
    assert normalise(roundtrip_request(req)) == normalise(req)


def test_decoded_messages_are_the_dataclasses_their_constructors_make():
    """Decoding sets a message's fields without its constructor: it must still be a frozen
    dataclass equal to one its constructor makes, and a nested list of
    integers must come back as a list."""
    state = m.LeaderAndIsrPartitionState("t", 3, 2, 1, 7, [1, 2], 4, [1, 2, 3], True, [3], [])
    req = m.LeaderAndIsrRequest(1, 2, 3, [state], [m.BrokerNode(1, "h", 9092)])
    back = roundtrip_request(req)
    assert back == req and type(back) is m.LeaderAndIsrRequest
    got = back.partition_states[0]
    assert got == state and vars(got) == vars(state)
    assert type(got.isr) is list and got.isr == [1, 2]
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.leader = 2  # type: ignore[misc]


def test_records_travel_outside_msgpack_as_zero_copy_views():
    resp = m.FetchResponse(
        0, [m.FetchTopicResponse("t", [m.FetchPartitionResponse(0, 0, 2, 0, 2, BATCH)])]
    )
    chunks = encode_response(1, resp)
    assert BATCH in [bytes(c) for c in chunks[1:]]  # a data-section chunk, not packed
    body = decode_response(wire(chunks), m.FetchResponse).body
    rec = body.topics[0].partitions[0].records
    assert isinstance(rec, memoryview) and bytes(rec) == BATCH


def test_fetch_response_round_trip_with_records():
    resp = m.FetchResponse(
        0,
        [
            m.FetchTopicResponse(
                "t",
                [
                    m.FetchPartitionResponse(0, 0, 10, 0, 12, BATCH),
                    m.FetchPartitionResponse(
                        1, int(ErrorCode.NOT_LEADER_OR_FOLLOWER), -1, -1, -1, None
                    ),
                ],
            )
        ],
    )
    got = decode_response(wire(encode_response(9, resp)), m.FetchResponse)
    assert got.correlation_id == 9 and got.error is None
    assert normalise(got.body) == normalise(resp)


def test_request_level_error_response_carries_code_and_message():
    got = decode_response(
        wire(encode_response(3, None, NotLeaderOrFollowerError("moved"))), m.FetchResponse
    )
    assert got.body is None
    assert isinstance(got.error, NotLeaderOrFollowerError) and got.error.message == "moved"


@given(st.lists(st.binary(max_size=50) | st.none(), max_size=5), st.integers(0, 2**31 - 1))
def test_fetch_response_round_trip_property(payloads, session_id):
    resp = m.FetchResponse(
        0,
        [
            m.FetchTopicResponse(
                "t", [m.FetchPartitionResponse(i, 0, 0, 0, 0, p) for i, p in enumerate(payloads)]
            )
        ],
        session_id,
    )
    got = decode_response(wire(encode_response(1, resp)), m.FetchResponse).body
    assert got.session_id == session_id
    # An empty records field comes back empty, a missing one as None.
    assert [None if p.records is None else bytes(p.records) for p in got.topics[0].partitions] == (
        payloads
    )


def test_a_records_reference_outside_the_data_section_is_a_frame_error():
    meta = [[9, 0, None], [0, [["t", [[0, 0, 0, 0, 0, [0, 100]]]]], 0]]
    with pytest.raises(FrameError, match="outside the data section"):
        decode_response(meta_frame(meta, b"abc"), m.FetchResponse)


def meta_frame(meta, data=b""):
    packed = msgpack.packb(meta, use_bin_type=True)
    return struct.pack(">I", len(packed)) + packed + data


@pytest.mark.parametrize(
    "frame",
    [
        b"",
        b"\x00\x00",
        struct.pack(">I", 1000) + b"abc",  # meta longer than frame
        struct.pack(">I", 3) + b"\xc1\xc1\xc1",  # not msgpack
        meta_frame({"a": 1}),
        meta_frame([[1, 0], None]),  # header too short
        meta_frame([["x", 0, 1, None], None]),
    ],
)
def test_undecodable_frames_raise_frame_error(frame):
    with pytest.raises(FrameError):
        decode_request(frame)


@pytest.mark.parametrize(
    ("meta", "data", "fragment"),
    [
        ([[9999, 0, 5, None], []], b"", "unknown api key 9999"),
        ([[1, 0, 5, None], ["-1", 500, 1, 100, []]], b"", "expected an integer"),
        ([[1, 0, 5, None], [True, 500, 1, 100, []]], b"", "expected an integer"),  # bool is no int
        ([[1, 0, 5, None], [-1, 500, 1, 100, [[b"t", []]]]], b"", "expected str"),  # nested message
        ([[1, 0, 5, None], [-1]], b"", "lacks"),
        ([[6, 0, 5, None], [1, 5, 77, [], [], [1, 2]]], b"", "expected str"),  # list of str
        # A list of integers (a partition state's ISR) with a string or a bool among them.
        (
            [[4, 0, 5, None], [1, 1, 1, [["t", 0, 1, 1, 1, [1, "2"], 0, [1, 2]]], []]],
            b"",
            "expected an integer",
        ),
        (
            [[4, 0, 5, None], [1, 1, 1, [["t", 0, 1, 1, 1, [1, True], 0, [1, 2]]], []]],
            b"",
            "expected an integer",
        ),
        (
            [[4, 0, 5, None], [1, 1, 1, [["t", 0, 1, 1, 1, 2, 0, [1, 2]]], []]],
            b"",
            "expected an array",
        ),
    ],
)
def test_bad_bodies_raise_request_decode_error_with_header(meta, data, fragment):
    with pytest.raises(RequestDecodeError) as ei:
        decode_request(meta_frame(meta, data))
    assert ei.value.header.correlation_id == 5
    assert isinstance(ei.value.error, InvalidRequestError)
    assert fragment in str(ei.value.error)
