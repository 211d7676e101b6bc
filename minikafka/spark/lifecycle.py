"""Running streaming queries until the user stops them, and stopping them cleanly.

PySpark's own Ctrl-C handler cancels every job and raises KeyboardInterrupt wherever the
main thread is, usually inside a py4j call that is waiting for the JVM: py4j then fails
with "reentrant call" and a Py4JNetworkError, and a run ends in dozens of lines of
tracebacks. Here SIGINT and SIGTERM only ask to stop; the main thread sees that between two
short waits on the queries, stops them, then the session.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

WAIT_S = 1  # seconds each wait on a query lasts: how soon a stop request is seen
BATCH_WAIT_S = 30.0  # how long a stop waits for the batch under way to end


@contextmanager
def _stop_requests() -> Iterator[threading.Event]:
    """Within: SIGINT and SIGTERM set the event (and are remembered) instead of raising."""
    requested = threading.Event()
    received: list[int] = []

    def ask(sig: int, _frame: FrameType | None) -> None:
        received.append(sig)
        requested.set()

    previous = {sig: signal.signal(sig, ask) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield requested
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_until_stopped(spark: SparkSession, *queries: StreamingQuery) -> bool:
    """Wait while any of `queries` runs; on Ctrl-C or SIGTERM stop them all, then `spark`.
    True if stopped by a signal, False if the queries ended by themselves (an
    availableNow trigger); a query's failure is raised (StreamingQueryException)."""
    with _stop_requests() as requested:
        while not requested.is_set() and any(q.isActive for q in queries):
            for q in queries:
                if q.isActive:
                    q.awaitTermination(WAIT_S)  # raises the query's error, if it failed
                    break
        if requested.is_set():
            # Between two batches: stop() cancels a batch under way, and Spark logs each of
            # its cancelled tasks as an error.
            deadline = time.monotonic() + BATCH_WAIT_S
            while time.monotonic() < deadline and any(
                q.isActive and q.status.get("isTriggerActive") for q in queries
            ):
                time.sleep(0.1)
        for q in queries:
            q.stop()
        spark.stop()
        return requested.is_set()
