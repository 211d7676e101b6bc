"""Latency histograms: HdrHistogram (the `hdrhistogram` package). A dependency of minikafka,
but not in the broker image (Debian does not package it and the image runs no perf tool):
an install without it gets one line saying what to install.

Values are recorded in microseconds with 3 significant digits, from 1 µs to one hour; the
count, sum and maximum are kept exactly beside the histogram.

Recording is on the measured path (one call per acknowledged record in `perf produce`), and
the package's `record_value` is pure Python (~3 µs): values are appended to an array and
handed to the histogram in bulk, one `record_value(value, count)` per distinct value, when a
percentile is asked for or the buffer fills.
"""

from __future__ import annotations

from array import array
from collections import Counter
from typing import Any

INSTALL_HINT = "pip install hdrhistogram"
LOWEST_US = 1
HIGHEST_US = 3_600_000_000  # one hour
SIGNIFICANT_DIGITS = 3
PENDING_LIMIT = 1 << 20  # values buffered before a bulk record (8 MiB)


class MissingDependencyError(RuntimeError):
    """The `hdrhistogram` package is not installed."""


def _hdr_histogram_class() -> Any:
    try:
        from hdrh.histogram import HdrHistogram  # type: ignore[import-untyped]
    except ImportError:
        raise MissingDependencyError(
            f"latency percentiles need the hdrhistogram package: {INSTALL_HINT}"
        ) from None
    return HdrHistogram


def require_hdrhistogram() -> None:
    """Raise MissingDependencyError (one line, with the pip command) if it is missing."""
    _hdr_histogram_class()


class LatencyHistogram:
    """Latencies in microseconds; percentiles in whole milliseconds, as Kafka prints them."""

    def __init__(self) -> None:
        self._hdr = _hdr_histogram_class()(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)
        self._pending: array[int] = array("q")
        self.count = 0
        self.total_us = 0
        self.max_us = 0

    def record_us(self, latency_us: int) -> None:
        if latency_us < 0:
            latency_us = 0
        self._pending.append(latency_us)
        self.count += 1
        self.total_us += latency_us
        if latency_us > self.max_us:
            self.max_us = latency_us
        if len(self._pending) >= PENDING_LIMIT:
            self._flush()

    def _flush(self) -> None:
        for value, n in Counter(self._pending).items():
            self._hdr.record_value(min(max(value, LOWEST_US), HIGHEST_US), n)
        self._pending = array("q")

    def record_seconds(self, latency_s: float) -> None:
        self.record_us(round(latency_s * 1_000_000))

    @property
    def mean_ms(self) -> float:
        return self.total_us / self.count / 1000.0 if self.count else 0.0

    @property
    def max_ms(self) -> float:
        return self.max_us / 1000.0

    def percentile_us(self, percentile: float) -> int:
        """The value at `percentile` (0-100); never above the exact maximum (the histogram
        answers with the top of a bucket); 0 when empty."""
        if not self.count:
            return 0
        self._flush()
        return min(int(self._hdr.get_value_at_percentile(percentile)), self.max_us)

    def percentile_ms(self, percentile: float) -> int:
        """Whole milliseconds, truncated, like Kafka's int latencies."""
        return self.percentile_us(percentile) // 1000
