"""Delayed operations (Kafka's purgatory) without polling.

A waiting produce or fetch request registers interest in the partitions it touches and
sleeps. Whatever moves a partition (an append, a HW change, a leadership change) calls
`notify(tp)`, which wakes exactly the requests watching it; they re-check their condition
and either complete or watch again. Expiry is the waiter's own deadline.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Iterable

from minikafka.common import TopicPartition


class Purgatory:
    def __init__(self) -> None:
        self._watchers: defaultdict[TopicPartition, set[asyncio.Future[None]]] = defaultdict(set)
        # Also told of every notification: the fetch session cache (its sessions read a
        # partition again only after it moved, and parked incremental fetches wake).
        self.on_notify: Callable[[TopicPartition], None] | None = None

    def notify(self, tp: TopicPartition) -> None:
        if self.on_notify is not None:
            self.on_notify(tp)
        waiters = self._watchers.pop(tp, None)
        if waiters:
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    def notify_all(self) -> None:
        for tp in list(self._watchers):
            self.notify(tp)

    def watched(self) -> int:
        return sum(len(w) for w in self._watchers.values())

    async def wait_until(
        self,
        keys: Iterable[TopicPartition],
        condition: Callable[[], bool],
        timeout_s: float,
    ) -> bool:
        """Wait until `condition()` holds, re-checking it whenever one of `keys` is notified.

        Returns whether it held before the deadline. The condition is checked once up front,
        so an already-satisfied request never sleeps.
        """
        if condition():
            return True
        keys = list(keys)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return condition()
            fut: asyncio.Future[None] = loop.create_future()
            for k in keys:
                self._watchers[k].add(fut)
            try:
                async with asyncio.timeout(remaining):
                    await fut
            except TimeoutError:
                pass
            finally:
                for k in keys:
                    w = self._watchers.get(k)
                    if w is not None:
                        w.discard(fut)
                        if not w:
                            del self._watchers[k]
            if condition():
                return True
