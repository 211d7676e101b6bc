"""Delayed operations (Kafka's purgatory) without polling.

A waiting produce or fetch request registers its condition under the keys it watches and
sleeps: the partitions it touches (Kafka's TopicPartitionOperationKey), or, for an
incremental fetch, its fetch session (`FetchSessionKey`: the session's own partition index
tells which of its partitions moved). Whatever moves a partition (an append, a HW change, a
leadership change) calls `notify(tp)`; whatever concerns a session's waiting fetch calls
`check_and_complete(key)`. The conditions watching a moved key are checked once the code
that notified has finished its step (one loop callback for all the keys moved in that step,
as Kafka's checkAndComplete runs after the state change), and only a request whose
condition holds is woken. A request that is not done yet stays asleep: waking every watcher
to re-check for itself cost each a coroutine switch and a new timer per append. Expiry is
the waiter's own deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Iterable
from typing import NamedTuple

from minikafka.common import TopicPartition

# Kafka's DelayedOperationKey: what a waiting request watches.
DelayedOperationKey = Hashable


class FetchSessionKey(NamedTuple):
    """The key an incremental fetch parked on fetch session `session_id` waits under. A
    NamedTuple, as TopicPartition is (hashed in C); one field, so it equals no partition."""

    session_id: int


class _Waiter:
    __slots__ = ("condition", "future")

    def __init__(self, condition: Callable[[], bool], future: asyncio.Future[bool]) -> None:
        self.condition = condition
        self.future = future


def _expire(future: asyncio.Future[bool]) -> None:
    if not future.done():
        future.set_result(False)


class Purgatory:
    def __init__(self) -> None:
        self._watchers: dict[DelayedOperationKey, set[_Waiter]] = {}
        self._moved: set[DelayedOperationKey] = set()  # notified, watched, not checked yet
        self._check_scheduled = False
        # Also told of every partition notification: the fetch session cache (its sessions
        # read a partition again only after it moved, and the incremental fetches parked on
        # them are checked under their FetchSessionKey).
        self.on_notify: Callable[[TopicPartition], None] | None = None

    def notify(self, tp: TopicPartition) -> None:
        """Partition `tp` moved."""
        if self.on_notify is not None:
            self.on_notify(tp)
        self.check_and_complete(tp)

    def check_and_complete(self, key: DelayedOperationKey) -> None:
        """Kafka's checkAndComplete: the requests watching `key` are checked once the
        current step is done."""
        waiters = self._watchers.get(key)
        if not waiters:
            return
        self._moved.add(key)
        if not self._check_scheduled:
            self._check_scheduled = True
            next(iter(waiters)).future.get_loop().call_soon(self._check_moved)

    def notify_all(self) -> None:
        for key in list(self._watchers):
            if isinstance(key, TopicPartition):
                self.notify(key)
            else:
                self.check_and_complete(key)

    def watched(self, key: DelayedOperationKey) -> int:
        """How many requests wait under `key` (Kafka's per-key watcher count)."""
        return len(self._watchers.get(key, ()))

    def _check_moved(self) -> None:
        self._check_scheduled = False
        moved, self._moved = self._moved, set()
        checked: set[_Waiter] = set()
        for key in moved:
            for w in list(self._watchers.get(key, ())):
                if w in checked or w.future.done():
                    continue
                checked.add(w)
                try:
                    satisfied = w.condition()
                except Exception as e:  # the waiter raises it, as if it had checked itself
                    w.future.set_exception(e)
                    continue
                if satisfied:
                    w.future.set_result(True)

    async def wait_until(
        self,
        keys: Iterable[DelayedOperationKey],
        condition: Callable[[], bool],
        timeout_s: float,
    ) -> bool:
        """Wait until `condition()` holds, checking it whenever one of `keys` is notified.

        Returns whether it held before the deadline. The condition is checked once up front,
        so an already-satisfied request never sleeps, and once more at the deadline.
        """
        if condition():
            return True
        keys = list(keys)
        loop = asyncio.get_running_loop()
        waiter = _Waiter(condition, loop.create_future())
        for k in keys:
            self._watchers.setdefault(k, set()).add(waiter)
        timer = loop.call_later(max(0.0, timeout_s), _expire, waiter.future)
        try:
            if await waiter.future:
                return True
        finally:
            timer.cancel()
            for k in keys:
                w = self._watchers.get(k)
                if w is not None:
                    w.discard(waiter)
                    if not w:
                        del self._watchers[k]
        return condition()
