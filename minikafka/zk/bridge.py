"""Hand callbacks from kazoo's threads to an asyncio loop.

kazoo runs watch and connection-state callbacks on its own threads, where touching
asyncio objects is unsafe. Wrapping them with `LoopBridge.wrap` makes every call schedule
the real callback on the loop with `call_soon_threadsafe` (design §8.2: watch callbacks
only enqueue; the controller's event loop acts).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import ParamSpec

log = logging.getLogger(__name__)

P = ParamSpec("P")


class LoopBridge:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def call(self, fn: Callable[..., object], *args: object) -> None:
        """Schedule `fn(*args)` on the loop from any thread; a no-op once the loop is closed."""
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:
            # Raised by a closed loop: the process is shutting down, nobody is listening.
            log.debug("event loop closed; dropped callback %r", fn)

    def wrap(self, fn: Callable[P, object]) -> Callable[P, None]:
        """A callable that, called from any thread, runs `fn` with the same arguments on the loop."""

        def scheduled(*args: P.args, **kwargs: P.kwargs) -> None:
            if kwargs:
                self.call(lambda: fn(*args, **kwargs))
            else:
                self.call(fn, *args)

        return scheduled
