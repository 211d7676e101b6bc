"""The hand-written Metadata response encoder (protocol/kafka/metadata_response.py) writes
what kio writes for the same response model, byte for byte, for every Metadata version the
broker serves, and kept partition bytes are the partitions' own encoding for every version
of their format."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.protocol.kafka.codec import KafkaRequest, encode_response, response_type
from minikafka.protocol.kafka.metadata_response import (
    encode_metadata_response,
    encode_partitions,
    partitions_format,
)
from minikafka.server.kafka_api.handler import SERVED_VERSIONS
from minikafka.server.kafka_api.model import write
from minikafka.server.kafka_api.models.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

METADATA = 3
VERSIONS = range(SERVED_VERSIONS[METADATA][0], SERVED_VERSIONS[METADATA][1] + 1)


def kio_frame(version: int, correlation_id: int, response: MetadataResponse) -> bytes:
    request = KafkaRequest(
        api_key=METADATA,
        api_version=version,
        correlation_id=correlation_id,
        client_id="c",
        body=None,
        request_header_version=2 if version >= 9 else 1,
        response_header_version=1 if version >= 9 else 0,
    )
    return encode_response(request, write(response_type(METADATA, version), response))


int32 = st.integers(-(2**31), 2**31 - 1)
node_ids = st.lists(st.integers(0, 2**31 - 1), max_size=5).map(tuple)
# Non-ascii text, and long enough (up to 200 bytes) for a two-byte compact length.
texts = st.one_of(st.text(max_size=10), st.text(min_size=100, max_size=200))
partitions = st.builds(
    MetadataResponsePartition,
    error_code=st.sampled_from([0, 5, 9, 3]),
    partition_index=st.integers(0, 2**31 - 1),
    leader_id=int32,
    leader_epoch=int32,
    replica_nodes=node_ids,
    isr_nodes=node_ids,
    offline_replicas=node_ids,
)


def topics(named: bool) -> st.SearchStrategy[MetadataResponseTopic]:
    return st.builds(
        MetadataResponseTopic,
        error_code=st.sampled_from([0, 3, 5, 29, 100]),
        name=texts if named else st.one_of(st.none(), texts),
        partitions=st.lists(partitions, max_size=4).map(tuple),
        is_internal=st.booleans(),
        topic_authorized_operations=int32,
        topic_id=st.one_of(st.none(), st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))),
    )


def responses(named: bool) -> st.SearchStrategy[MetadataResponse]:
    return st.builds(
        MetadataResponse,
        brokers=st.lists(
            st.builds(
                MetadataResponseBroker,
                node_id=st.integers(0, 2**31 - 1),
                host=texts,
                port=st.integers(0, 65535),
                rack=st.one_of(st.none(), texts),
            ),
            max_size=3,
        ).map(tuple),
        topics=st.lists(topics(named), max_size=4).map(tuple),
        controller_id=int32,
        cluster_id=st.one_of(st.none(), texts),
        throttle_time=st.integers(0, 2**31 - 1),
        cluster_authorized_operations=int32,
        error_code=st.sampled_from([0, 31]),
    )


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=60, deadline=None)
@given(data=st.data(), correlation_id=int32)
def test_frames_equal_kio_for_every_version(
    version: int, data: st.DataObject, correlation_id: int
) -> None:
    response = data.draw(responses(named=version < 12))
    assert encode_metadata_response(version, correlation_id, response) == kio_frame(
        version, correlation_id, response
    )


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_kept_partition_bytes_serve_every_version_of_their_format(
    version: int, data: st.DataObject
) -> None:
    response = data.draw(responses(named=True))
    # Kept from the first version of the format, used for this one.
    first = min(v for v in VERSIONS if partitions_format(v) == partitions_format(version))
    kept = {id(t): encode_partitions(first, t.partitions) for t in response.topics}
    assert encode_metadata_response(
        version, 7, response, lambda t: kept[id(t)]
    ) == encode_metadata_response(version, 7, response)


def test_a_topic_without_a_name_before_v12_is_refused() -> None:
    response = MetadataResponse(
        brokers=(), topics=(MetadataResponseTopic(error_code=100, name=None, partitions=()),)
    )
    with pytest.raises(ValueError, match="v11"):
        encode_metadata_response(11, 1, response)
