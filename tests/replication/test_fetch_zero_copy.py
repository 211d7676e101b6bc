"""Fetch responses sent with sendfile straight from segment files (issue 6): what a client
receives over TCP is byte for byte the buffered read of the same range, whole batches only,
split at batch boundaries under max_bytes, and never across a segment boundary."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import cast

from minikafka.protocol.errors import ErrorCode
from minikafka.rpc.messages import (
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
)
from minikafka.storage.record_batch import LOG_OVERHEAD, iter_batches
from tests.replication.conftest import Broker, leader_and_isr, produce, send, state


def fetch(offset: int, max_bytes: int) -> FetchRequest:
    return FetchRequest(
        -1, 0, 1, max_bytes, [FetchTopic("t", [FetchPartition(0, offset, max_bytes)])]
    )


async def test_fetched_bytes_equal_buffered_reads_across_segments(
    brokers: Callable[..., Broker],
) -> None:
    leader = brokers(1, log_segment_bytes=16 * 1024)
    await leader.start()
    await leader_and_isr(leader, state(1, 0, [1], [1]), [leader.node])
    rng = random.Random(6)
    for i in range(120):  # batches of 1 to 12 records of 10 to 600 bytes: uneven sizes
        values = [rng.randbytes(rng.randint(10, 600)) for _ in range(rng.randint(1, 12))]
        resp = await produce(leader, values, acks=1)
        assert resp.error_code == ErrorCode.NONE, i
    log = leader.log
    assert len(log.segments) > 3, "the data must span several segments"
    hw = log.high_watermark
    assert hw == log.log_end_offset

    boundaries = {s.base_offset for s in log.segments}
    for offset in range(0, hw, 7):
        for max_bytes in (1, 700, 5_000, 1 << 20):
            got: FetchResponse = await send(leader, fetch(offset, max_bytes))
            p = got.topics[0].partitions[0]
            assert p.error_code == ErrorCode.NONE
            data = bytes(cast(memoryview, p.records))
            expected = log.read(offset, max_bytes, max_offset=hw).read()
            assert data == expected, (offset, max_bytes)
            # Whole, valid batches only; the first holds `offset`.
            batches = list(iter_batches(data))
            assert batches and batches[0][1].base_offset <= offset <= batches[0][1].last_offset
            assert sum(h.batch_length + LOG_OVERHEAD for _, h in batches) == len(data)
            # Split at batch boundaries: within max_bytes unless one batch alone is larger.
            assert len(data) <= max_bytes or len(batches) == 1
            # One segment per response: no batch starts a later segment than the first's.
            first, last = batches[0][1].base_offset, batches[-1][1].last_offset
            assert not any(first < b <= last for b in boundaries), (offset, max_bytes)
    await leader.stop()
