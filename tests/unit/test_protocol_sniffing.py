"""A listener tells the two protocols apart by a connection's first frame
(server/network.py, `is_minikafka_rpc`): every minikafka RPC request is recognised, and no
Kafka request a client can send (any API, any version, any non-negative correlation id)
is taken for one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from minikafka.protocol.kafka.codec import request_type
from minikafka.rpc import messages as m
from minikafka.rpc.framing import RequestHeader, encode_request
from minikafka.server.kafka_api.handler import SERVED_VERSIONS
from minikafka.server.network import is_minikafka_rpc
from tests.kafka_protocol.wire import request_frame
from tests.unit.test_kafka_codec import sample

# One request of each RPC API.
RPC_REQUESTS = [
    m.ControlledShutdownRequest(1, 1),
    m.FetchRequest(1, 500, 1, 1 << 20, [m.FetchTopic("t", [m.FetchPartition(0, 0, 1 << 20)])]),
    m.ListOffsetsRequest(-1, [m.ListOffsetsTopic("t", [m.ListOffsetsPartition(0, -1)])]),
    m.OffsetForLeaderEpochRequest(
        1, [m.OffsetForLeaderTopic("t", [m.OffsetForLeaderPartition(0, 4, 2)])]
    ),
    m.LeaderAndIsrRequest(
        1,
        5,
        77,
        [m.LeaderAndIsrPartitionState("t", 0, 5, 1, 3, [1, 2], 9, [1, 2, 3])],
        [m.BrokerNode(1, "127.0.0.1", 9092)],
    ),
    m.UpdateMetadataRequest(
        1,
        5,
        77,
        [m.UpdateMetadataPartitionState("t", 0, 5, 1, 3, [1], 9, [1, 2], [2])],
        [m.BrokerNode(1, "h", 1, "rack-a")],
    ),
    m.StopReplicaRequest(1, 5, 77, [m.StopReplicaPartition("t", 0, True, 3)]),
]
KAFKA_VERSIONS = [(k, v) for k, (lo, hi) in SERVED_VERSIONS.items() for v in range(lo, hi + 1)]


def frame_body(chunks: list[object]) -> bytes:
    """A frame's bytes after its size field (what the server reads first)."""
    data = b"".join(bytes(c) for c in chunks)  # type: ignore[call-overload]
    return data[4:]


@given(
    request=st.sampled_from(RPC_REQUESTS),
    correlation_id=st.integers(min_value=-(2**31), max_value=2**31 - 1),
    client_id=st.none() | st.text(max_size=300),
)
def test_every_rpc_request_is_recognised(request, correlation_id, client_id):
    key = m.API_KEY_OF_REQUEST[type(request)]
    chunks = encode_request(RequestHeader(int(key), 0, correlation_id, client_id), request)
    assert is_minikafka_rpc(frame_body(chunks))


@given(
    api=st.sampled_from(KAFKA_VERSIONS),
    correlation_id=st.integers(min_value=0, max_value=2**31 - 1),
    client_id=st.none() | st.text(max_size=300),
)
def test_no_kafka_request_is_taken_for_rpc(api, correlation_id, client_id):
    frame = request_frame(sample(request_type(*api)), correlation_id, client_id)
    assert not is_minikafka_rpc(frame[4:])


def test_short_frames_are_kafkas_to_refuse():
    assert not is_minikafka_rpc(b"")
    assert not is_minikafka_rpc(b"\x00\x00\x00\x01")


def test_the_samples_cover_every_rpc_api() -> None:
    assert {m.API_KEY_OF_REQUEST[type(r)] for r in RPC_REQUESTS} == set(m.API_TYPES)
