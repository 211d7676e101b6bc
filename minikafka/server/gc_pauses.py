"""The garbage collector's long pauses, logged (as a JVM's GC log).

CPython's cyclic collector stops every thread of the broker while it runs, and a collection
of the oldest generation walks every object the process tracks: at tens of thousands of
partitions, millions. Those pauses hide in profiles (they are charged to whichever line
allocated last), so a broker logs each one that lasts `LONG_PAUSE_S` or more.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

LONG_PAUSE_S = 0.1


class GcPauseLog:
    """A `gc.callbacks` entry timing each collection; logs the long ones and counts them."""

    def __init__(
        self, threshold_s: float = LONG_PAUSE_S, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self.threshold_s = threshold_s
        self._clock = clock
        self._started: float | None = None
        self.long_pauses = 0
        self.longest_s = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = self._clock()
            return
        if self._started is None:
            return
        elapsed = self._clock() - self._started
        self._started = None
        if elapsed < self.threshold_s:
            return
        self.long_pauses += 1
        self.longest_s = max(self.longest_s, elapsed)
        log.info(
            "garbage collection of generation %d paused the broker for %.2fs (%d objects freed)",
            info.get("generation", -1),
            elapsed,
            info.get("collected", 0),
        )

    def install(self) -> None:
        if self not in gc.callbacks:
            gc.callbacks.append(self)

    def uninstall(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)
