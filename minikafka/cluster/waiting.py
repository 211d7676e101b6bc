"""Waiting in the local cluster: all of it polls a condition against a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable

from minikafka.cluster.errors import ClusterError

POLL_INTERVAL_S = 0.05


def time_left(deadline: float) -> float:
    """Seconds until `deadline` (a `time.monotonic()` time), never negative."""
    return max(0.0, deadline - time.monotonic())


def poll(condition: Callable[[], bool], timeout: float) -> bool:
    """Whether `condition` became true within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_INTERVAL_S)
    return True


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Until `condition` is true; ClusterError naming `what` after `timeout` seconds."""
    if not poll(condition, timeout):
        raise ClusterError(f"timed out after {timeout:.1f}s waiting for {what}")
