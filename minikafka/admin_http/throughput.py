"""Throughput for the dashboard's charts: per-topic rates over the last minutes.

Each broker turns its own BrokerTopicMetrics counters into per-second rates once a second
(`RateSampler`, a few dictionary reads per topic: it runs whether or not anyone looks). The
broker serving the page collects the other brokers' rows since the last it has and adds
them up by second (`ClusterThroughput`). Pure code: the caller brings the time and the
counters.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

# The counters charted, as rates per second.
RATE_NAMES: tuple[str, ...] = (
    "messages_in",
    "bytes_in",
    "bytes_out",
    "replication_bytes_in",
    "replication_bytes_out",
    "follower_bytes_out",
)

# Seconds of history kept and charted.
WINDOW_S = 300

# One second of one broker: topic → rates in RATE_NAMES order.
Row = tuple[int, dict[str, list[float]]]


class RateSampler:
    """One broker's per-second rates of its counters."""

    def __init__(self, window_s: int = WINDOW_S) -> None:
        self._window_s = window_s
        self._rows: deque[Row] = deque(maxlen=window_s)
        self._last: tuple[float, dict[str, tuple[int, ...]]] | None = None

    def sample(self, now_s: float, counters: Mapping[str, Iterable[int]]) -> None:
        """Counters (topic → values in RATE_NAMES order) read at `now_s` (the sampler
        reads them just after each whole second; a row is stamped with the second it ends)."""
        current = {t: tuple(v) for t, v in counters.items()}
        last = self._last
        if last is not None and int(now_s) <= int(last[0]):
            return  # the same second again: the next sample covers it
        self._last = (now_s, current)
        if last is None:
            return
        then, before = last
        # The whole seconds this interval ended in: one when sampled on time, more when
        # the loop was late. Each gets an equal share, so that the rates add up to counts.
        seconds = range(int(then) + 1, int(now_s) + 1)
        rates: dict[str, list[float]] = {}
        for topic, values in current.items():
            # A topic's counters appear with its first record here: they were 0 before.
            prev = before.get(topic) or (0,) * len(values)
            # A counter that went down was reset (its topic deleted and created again).
            rates[topic] = [max(0, v - p) / len(seconds) for v, p in zip(values, prev, strict=True)]
        for second in seconds[-self._window_s :]:
            self._rows.append((second, rates))

    def rows_after(self, second: int) -> list[Row]:
        return [r for r in self._rows if r[0] > second]


class ClusterThroughput:
    """The cluster's rates by second: the sum over the brokers that sent their rows."""

    def __init__(self, window_s: int = WINDOW_S) -> None:
        self.window_s = window_s
        self._by_broker: dict[int, dict[int, dict[str, list[float]]]] = {}

    def last_second(self, broker_id: int) -> int:
        rows = self._by_broker.get(broker_id)
        return max(rows) if rows else 0

    def add(self, broker_id: int, rows: Iterable[Row]) -> None:
        mine = self._by_broker.setdefault(broker_id, {})
        for second, rates in rows:
            mine[second] = rates

    def prune(self, now_s: int) -> None:
        oldest = now_s - self.window_s
        for rows in self._by_broker.values():
            for second in [s for s in rows if s <= oldest]:
                del rows[second]

    def series(self, now_s: int, after_s: int | None = None) -> dict[str, Any]:
        """Per-topic and total rates for each second in (max(after_s, now_s - window),
        now_s]; None where no broker sent that second."""
        start = now_s - self.window_s + 1
        if after_s is not None:
            start = max(start, after_s + 1)
        seconds = list(range(start, now_s + 1))
        index = {s: i for i, s in enumerate(seconds)}
        topics: dict[str, dict[str, list[float | None]]] = {}
        total: dict[str, list[float | None]] = {n: [None] * len(seconds) for n in RATE_NAMES}
        for rows in self._by_broker.values():
            for second, rates in rows.items():
                i = index.get(second)
                if i is None:
                    continue
                for name in RATE_NAMES:
                    if total[name][i] is None:
                        total[name][i] = 0.0
                for topic, values in rates.items():
                    per_topic = topics.get(topic)
                    if per_topic is None:
                        per_topic = topics[topic] = {n: [None] * len(seconds) for n in RATE_NAMES}
                    for name, v in zip(RATE_NAMES, values, strict=True):
                        per_topic[name][i] = (per_topic[name][i] or 0.0) + v
                        total[name][i] = (total[name][i] or 0.0) + v
        return {
            "interval_s": 1,
            "window_s": self.window_s,
            "start_s": start,
            "end_s": now_s,
            "rates": list(RATE_NAMES),
            "topics": {t: _rounded(v) for t, v in sorted(topics.items())},
            "total": _rounded(total),
        }


def _rounded(series: dict[str, list[float | None]]) -> dict[str, list[float | None]]:
    return {n: [None if v is None else round(v, 1) for v in vs] for n, vs in series.items()}
