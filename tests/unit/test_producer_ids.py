"""Producer ids handed out from blocks (server/producer_ids.py): consecutive within a
block, a new block when one runs out, and one block taken at a time however many
InitProducerId requests arrive together."""

from __future__ import annotations

import asyncio

from minikafka.server.producer_ids import ProducerIdManager


def test_ids_come_from_consecutive_blocks_taken_one_at_a_time() -> None:
    taken: list[tuple[int, int]] = []

    async def take_block() -> tuple[int, int]:
        await asyncio.sleep(0)  # let the other requests queue up meanwhile
        start = 0 if not taken else taken[-1][1] + 1
        taken.append((start, start + 2))
        return taken[-1]

    async def main() -> list[int]:
        manager = ProducerIdManager(take_block)
        return list(await asyncio.gather(*[manager.generate() for _ in range(7)]))

    ids = asyncio.run(main())
    assert sorted(ids) == list(range(7))
    assert taken == [(0, 2), (3, 5), (6, 8)]
