"""The hand-written Fetch response encoder (protocol/kafka/fetch_response.py) writes what
kio writes for the same values, byte for byte, for every Fetch version the broker serves;
file regions pass through as chunks (to be sent with sendfile) and are not read."""

from __future__ import annotations

import os
import tempfile
import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.protocol.kafka.fetch_response import (
    FetchPartitionData,
    FetchTopicData,
    encode_fetch_response,
)
from minikafka.server.kafka_api.handler import SERVED_VERSIONS
from tests.unit.test_kafka_codec import kio_response_frame, parse_response

FETCH = 1
VERSIONS = range(SERVED_VERSIONS[FETCH][0], SERVED_VERSIONS[FETCH][1] + 1)


def kio_frame(version: int, correlation_id: int, error: int, session: int, topics: Any) -> bytes:
    values = {
        "throttle_time": 0,
        "error_code": error,
        "session_id": session,
        "responses": [
            {
                "topic": t.name,
                "topic_id": t.topic_id,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": p.error_code,
                        "high_watermark": p.high_watermark,
                        "last_stable_offset": p.high_watermark,
                        "log_start_offset": p.log_start_offset,
                        "aborted_transactions": [],
                        "preferred_read_replica": p.preferred_read_replica,
                        "records": None if p.records is None else bytes(p.records),
                    }
                    for p in t.partitions
                ],
            }
            for t in topics
        ],
    }
    return kio_response_frame(FETCH, version, correlation_id, values)


partitions = st.builds(
    FetchPartitionData,
    partition_index=st.integers(0, 2**31 - 1),
    error_code=st.sampled_from([0, 1, 3, 6, 100]),
    high_watermark=st.integers(-1, 2**63 - 1),
    log_start_offset=st.integers(-1, 2**63 - 1),
    records=st.one_of(st.none(), st.binary(max_size=300)),
    preferred_read_replica=st.integers(-1, 2**31 - 1),
)
topics = st.lists(
    st.builds(
        FetchTopicData,
        name=st.text(min_size=1, max_size=20),
        topic_id=st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1)),
        partitions=st.lists(partitions, max_size=4),
    ),
    max_size=4,
)


@settings(max_examples=60)
@given(
    version=st.sampled_from(list(VERSIONS)),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
    error=st.sampled_from([0, 70]),
    session=st.integers(0, 2**31 - 1),
    topics=topics,
)
def test_byte_for_byte_kios_frame(
    version: int, correlation_id: int, error: int, session: int, topics: list[FetchTopicData]
) -> None:
    ours = b"".join(
        bytes(c) for c in encode_fetch_response(version, correlation_id, error, session, topics)
    )
    assert ours == kio_frame(version, correlation_id, error, session, topics)


class Region:
    """A FileRegion over a temporary file, recording whether it was read or closed."""

    def __init__(self, data: bytes) -> None:
        f = tempfile.TemporaryFile()  # noqa: SIM115 (the region owns it: close() closes it)
        f.write(b"junk" + data)
        f.flush()
        self._file = f
        self.size = len(data)
        self.position = 4
        self.read_called = False
        self.closed = False

    def fileno(self) -> int:
        return self._file.fileno()

    def read(self) -> bytes:
        self.read_called = True
        return os.pread(self.fileno(), self.size, self.position)

    def close(self) -> None:
        self.closed = True
        self._file.close()


def test_file_regions_are_chunks_of_their_own_and_not_read() -> None:
    batch = b"\x01" * 100
    region = Region(batch)
    empty = Region(b"")
    topic = FetchTopicData(
        "t",
        uuid.uuid4(),
        [
            FetchPartitionData(0, 0, 10, 0, region),  # type: ignore[arg-type]
            FetchPartitionData(1, 0, 0, 0, empty),  # type: ignore[arg-type]
        ],
    )
    for version in VERSIONS:
        region.read_called = False
        chunks = encode_fetch_response(version, 7, 0, 0, [topic])
        assert sum(1 for c in chunks if c is region) == 1
        assert not region.read_called and empty.closed
        frame = b"".join(batch if c is region else bytes(c) for c in chunks)  # type: ignore[arg-type]
        correlation_id, _, response = parse_response(frame, FETCH, version)
        assert correlation_id == 7
        assert response.responses[0].partitions[0].records == batch
        assert response.responses[0].partitions[1].records == b""
        empty = Region(b"")
        topic = FetchTopicData(
            "t",
            topic.topic_id,
            [topic.partitions[0], FetchPartitionData(1, 0, 0, 0, empty)],  # type: ignore[arg-type]
        )
    region.close()
