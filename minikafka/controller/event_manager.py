"""The controller's one queue and one task: Kafka's `ControllerEventManager` and its
`ControllerEventThread`.

Events are processed one at a time, in the order they were put, on one asyncio task, so that
the controller's state needs no locks: whatever enqueues (watches, timers, responses, API
calls) only enqueues. Once closed, the manager fails every event still queued or put later
(`ControllerEvent.fail`), so that no API call waits for an answer that will not come.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from minikafka.controller.events import ControllerEvent
from minikafka.protocol.errors import NotControllerError

log = logging.getLogger(__name__)

E = TypeVar("E", bound=ControllerEvent)


class ControllerEventManager:
    def __init__(self, process: Callable[[ControllerEvent], Awaitable[None]], name: str) -> None:
        # Kafka's `ControllerEventProcessor.process`: handles one event; errors it lets through
        # are logged and the next event is processed.
        self._process = process
        self._name = name
        self._queue: asyncio.Queue[ControllerEvent] = asyncio.Queue()
        # The queued events in order (asyncio.Queue cannot be looked into).
        self._queued: collections.deque[ControllerEvent] = collections.deque()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def is_started(self) -> bool:
        return self._task is not None

    @property
    def is_closed(self) -> bool:
        return self._closed

    def start(self) -> None:
        """Start the event task (again, after `close`); no-op while it runs."""
        if self._task is not None:
            return
        self._closed = False
        self._task = asyncio.create_task(self._run(), name=self._name)

    def put(self, event: ControllerEvent) -> None:
        """Queue `event` for the event task; once closed, fail it instead."""
        if self._closed:
            event.fail(NotControllerError("controller shut down"))
            return
        self._queue.put_nowait(event)
        self._queued.append(event)

    def queued(self, kind: type[E]) -> list[E]:
        """The events of `kind` waiting behind the one being processed, in order."""
        return [e for e in self._queued if isinstance(e, kind)]

    async def close(self) -> None:
        """Stop the event task (cancelling the event in progress) and fail the queued ones."""
        self._closed = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        while not self._queue.empty():
            self._queue.get_nowait().fail(NotControllerError("controller shut down"))
            self._queue.task_done()
        self._queued.clear()

    async def wait_for_idle(self) -> None:
        """Until every queued event, and those they queued, is processed."""
        await self._queue.join()

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            self._queued.popleft()
            try:
                await self._process(event)
            except Exception:
                log.exception("controller event %s failed", event)
            finally:
                self._queue.task_done()


__all__ = ["ControllerEventManager"]
