"""The garbage collector's pauses: when the oldest generation is collected, and a log of
the long pauses (as a JVM's GC log).

CPython's cyclic collector stops every thread of the broker while it runs, and a collection
of the oldest generation walks every object the process tracks: at 30,000 partitions a
broker tracks millions, and each such collection took 0.8-1.9 s. CPython starts one
whenever the objects that survived into that generation since the last one exceed a quarter
of it, which a leader change of thousands of partitions does, again and again: one broker
paused 3.7 s in 20 s of a failover, for collections that freed nothing (the broker's
garbage goes by reference counting; cycles are rare).

So a broker collects the oldest generation on a schedule of its own instead
(`FullCollectionSchedule`: every `FULL_COLLECTION_INTERVAL_S`, or once its memory doubled),
and the younger generations as CPython does. Pauses hide in
profiles (they are charged to whichever line allocated last), so each one that lasts
`LONG_PAUSE_S` or more is logged.
"""

from __future__ import annotations

import gc
import logging
import os
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

LONG_PAUSE_S = 0.1
# How often a broker collects the oldest generation (its cyclic garbage waits that long),
# and sooner if its memory grew by this fraction since the last time.
FULL_COLLECTION_INTERVAL_S = 300.0
# Doubling, not less: a new controller's or a restarted broker's legitimate growth would
# start one in the middle of its work (at 100,000 partitions, a 2-3 s pause).
FULL_COLLECTION_RSS_GROWTH = 1.0
# How often the broker checks its memory against that.
FULL_COLLECTION_CHECK_S = 10.0
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
# A threshold for the oldest generation that is never reached: collections of the younger
# generations never start one.
_NEVER = 2**31 - 1


_deferred = 0  # brokers in this process deferring (tests run several in one)
_saved_threshold = 0


def defer_full_collections() -> None:
    """Stop CPython from collecting the oldest generation by itself, until every caller
    has called `restore_full_collections`."""
    global _deferred, _saved_threshold
    if _deferred == 0:
        first, second, _saved_threshold = gc.get_threshold()
        gc.set_threshold(first, second, _NEVER)
    _deferred += 1


def restore_full_collections() -> None:
    global _deferred
    if _deferred == 0:
        return
    _deferred -= 1
    if _deferred == 0:
        first, second, _ = gc.get_threshold()
        gc.set_threshold(first, second, _saved_threshold)


class FullCollectionSchedule:
    """When a broker collects the oldest generation: `interval_s` after the last time, or
    sooner if the process's resident memory has grown by `growth` (a fraction) since,
    which bounds what cyclic garbage can pile up meanwhile. Decisions only: the broker
    reads the clock and the memory, and collects."""

    def __init__(
        self,
        now: float,
        rss_bytes: int | None,
        interval_s: float = FULL_COLLECTION_INTERVAL_S,
        growth: float = FULL_COLLECTION_RSS_GROWTH,
    ) -> None:
        self.interval_s = interval_s
        self.growth = growth
        self.collected(now, rss_bytes)

    def due(self, now: float, rss_bytes: int | None) -> bool:
        if now - self._last >= self.interval_s:
            return True
        return (
            rss_bytes is not None
            and self._rss is not None
            and rss_bytes >= self._rss * (1 + self.growth)
        )

    def collected(self, now: float, rss_bytes: int | None) -> None:
        self._last = now
        self._rss = rss_bytes


def resident_bytes() -> int | None:
    """This process's resident memory (Linux's /proc/self/statm), None where unknown."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return None


class GcPauseLog:
    """A `gc.callbacks` entry timing each collection; logs the long ones."""

    def __init__(
        self, threshold_s: float = LONG_PAUSE_S, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self.threshold_s = threshold_s
        self._clock = clock
        self._started: float | None = None

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
