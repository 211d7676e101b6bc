"""The hand-written Produce response encoder (protocol/kafka/produce_response.py) writes what
kio writes for the same values, byte for byte, for every Produce version the broker serves
(the kio entity built with what minikafka always sends: no log append time, no throttling;
record errors as KIP-467 has them)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.protocol.kafka.produce_response import (
    ProducePartitionData,
    ProduceTopicData,
    encode_produce_response,
)
from minikafka.server.kafka_api.handler import SERVED_VERSIONS
from tests.unit.test_kafka_codec import kio_response_frame, parse_response

PRODUCE = 0
VERSIONS = range(SERVED_VERSIONS[PRODUCE][0], SERVED_VERSIONS[PRODUCE][1] + 1)


def kio_frame(version: int, correlation_id: int, topics: list[ProduceTopicData]) -> bytes:
    values = {
        "throttle_time": 0,
        "responses": [
            {
                "name": t.name,
                "topic_id": t.topic_id,
                "partition_responses": [
                    {
                        "index": p.index,
                        "error_code": p.error_code,
                        "base_offset": p.base_offset,
                        "log_append_time": p.log_append_time,
                        "log_start_offset": p.log_start_offset,
                        "record_errors": [
                            {"batch_index": i, "batch_index_error_message": why}
                            for i, why in p.record_errors
                        ],
                        "error_message": p.error_message,
                    }
                    for p in t.partitions
                ],
            }
            for t in topics
        ],
    }
    return kio_response_frame(PRODUCE, version, correlation_id, values)


offsets = st.integers(-(2**63), 2**63 - 1)
partitions = st.builds(
    ProducePartitionData,
    index=st.integers(0, 2**31 - 1),
    error_code=st.sampled_from([0, 1, 3, 6, 87, 100]),
    base_offset=offsets,
    log_start_offset=offsets,
    # Non-ascii text, and long enough (up to 200 bytes) for a two-byte compact length.
    error_message=st.one_of(st.none(), st.text(max_size=10), st.text(min_size=100, max_size=200)),
    log_append_time=st.one_of(st.just(-1), st.integers(0, 2**41)),
    record_errors=st.lists(
        st.tuples(st.integers(0, 2**31 - 1), st.one_of(st.none(), st.text(max_size=130))),
        max_size=3,
    ),
)
topics = st.lists(
    st.builds(
        ProduceTopicData,
        name=st.text(min_size=1, max_size=20),
        topic_id=st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1)),
        partitions=st.lists(partitions, max_size=4),
    ),
    max_size=4,
)


@settings(max_examples=150)
@given(
    version=st.sampled_from(list(VERSIONS)),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
    topics=topics,
)
def test_byte_for_byte_kios_frame(
    version: int, correlation_id: int, topics: list[ProduceTopicData]
) -> None:
    ours = encode_produce_response(version, correlation_id, topics)
    assert ours == kio_frame(version, correlation_id, topics)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_version_parses_with_kio(version: int) -> None:
    topic_id = uuid.uuid4()
    topic = ProduceTopicData(
        "t\u00e9",
        topic_id,
        [
            ProducePartitionData(0, 0, 42, 7),
            ProducePartitionData(1, 6, error_message="not leader \u2014 retry"),
        ],
    )
    frame = encode_produce_response(version, 7, [topic])
    assert frame == kio_frame(version, 7, [topic])
    correlation_id, header_version, response = parse_response(frame, PRODUCE, version)
    assert correlation_id == 7
    assert header_version == (1 if version >= 9 else 0)
    (parsed,) = response.responses
    if version >= 13:
        assert parsed.topic_id == topic_id
    else:
        assert parsed.name == "t\u00e9"
    first, second = parsed.partition_responses
    assert (first.index, first.error_code, first.base_offset) == (0, 0, 42)
    assert first.log_append_time is None
    assert (second.index, second.error_code, second.base_offset) == (1, 6, -1)
    if version >= 5:
        assert first.log_start_offset == 7
    if version >= 8:
        assert first.error_message is None and first.record_errors == ()
        assert second.error_message == "not leader \u2014 retry"


def test_many_topics_and_partitions_take_multi_byte_lengths() -> None:
    # 127 items: a compact array's length (count + 1) no longer fits in one varint byte.
    big = ProduceTopicData(
        "x" * 200, uuid.uuid4(), [ProducePartitionData(i, 0, i) for i in range(127)]
    )
    small = ProduceTopicData("y", uuid.uuid4(), [ProducePartitionData(0, 0, 0)])
    topics = [big] + [small] * 126
    for version in VERSIONS:
        assert encode_produce_response(version, 1, topics) == kio_frame(version, 1, topics)


@pytest.mark.parametrize("version", [-1, 0, 1, 2, 14, 100])
def test_versions_outside_3_to_13_are_refused(version: int) -> None:
    with pytest.raises(ValueError):
        encode_produce_response(version, 1, [])
