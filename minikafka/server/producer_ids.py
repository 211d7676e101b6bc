"""Producer ids for idempotent producers (InitProducerId), Kafka's ProducerIdManager: each
broker takes blocks of ids from ZooKeeper (`/latest_producer_id_block`, conditional writes,
so no two brokers ever hold the same block) and hands them out one by one; a restarted
broker takes a new block, so an id is never given twice."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Final

# Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE.
PRODUCER_ID_BLOCK_SIZE: Final = 1000


class ProducerIdManager:
    def __init__(self, take_block: Callable[[], Awaitable[tuple[int, int]]]) -> None:
        self._take_block = take_block  # the next free [start, end] block
        self._next = 0
        self._end = -1
        self._lock = asyncio.Lock()  # one block taken at a time

    async def generate(self) -> int:
        async with self._lock:
            if self._next > self._end:
                self._next, self._end = await self._take_block()
            producer_id = self._next
            self._next += 1
            return producer_id
