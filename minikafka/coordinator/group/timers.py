"""Deadlines for the group coordinator, on an injected clock (sans-IO).

Kafka's coordinator keeps its heartbeat, join and sync timeouts in delayed-operation
purgatories driven by a timing wheel. Here one heap of (deadline, key) does: scheduling a
key again replaces its deadline (a heartbeat pushes its member's expiry back), and the
adapter calls `expire(now)` when the earliest deadline has passed.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable


class Timers:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Hashable]] = []
        # key -> (deadline, sequence, action); a heap entry is live only if its sequence
        # is the key's current one (replaced and cancelled entries are skipped lazily).
        self._live: dict[Hashable, tuple[int, int, Callable[[], None]]] = {}
        self._seq = itertools.count()

    def schedule(self, key: Hashable, deadline_ms: int, action: Callable[[], None]) -> None:
        seq = next(self._seq)
        self._live[key] = (deadline_ms, seq, action)
        heapq.heappush(self._heap, (deadline_ms, seq, key))

    def cancel(self, key: Hashable) -> None:
        self._live.pop(key, None)

    def deadline(self, key: Hashable) -> int | None:
        entry = self._live.get(key)
        return None if entry is None else entry[0]

    def next_deadline(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def expire(self, now_ms: int) -> int:
        """Run every action whose deadline is at or before now (in deadline order); an
        action may schedule more. Returns how many ran."""
        ran = 0
        while True:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now_ms:
                return ran
            _, _, key = heapq.heappop(self._heap)
            _, _, action = self._live.pop(key)
            action()
            ran += 1

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap:
            _, seq, key = heap[0]
            live = self._live.get(key)
            if live is not None and live[1] == seq:
                return
            heapq.heappop(heap)

    def __len__(self) -> int:
        return len(self._live)
