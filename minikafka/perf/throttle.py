"""Kafka's ThroughputThrottler (org.apache.kafka.tools.ThroughputThrottler), without the
sleeping: the caller asks whether to throttle and how long to sleep, so a test can drive it
with a fake clock.

Sending record `i` at time `now`, the sender is ahead when `i / (now - start)` exceeds the
target. Each time it is ahead, 1/target seconds of sleep is owed; the debt is slept off once
it reaches 2 ms (finer sleeps are not precise), then forgiven, as Kafka does.
"""

from __future__ import annotations

MIN_SLEEP_S = 0.002


class ThroughputThrottler:
    def __init__(self, target_per_second: float, start: float) -> None:
        """`target_per_second` < 0: no throttling. 0 (Kafka: stop until woken) is refused."""
        if target_per_second == 0:
            raise ValueError("throughput must be positive, or negative (-1) for no throttling")
        self.target_per_second = target_per_second
        self.start = start
        self._sleep_per_record_s = 1.0 / target_per_second if target_per_second > 0 else 0.0
        self._sleep_deficit_s = 0.0

    @property
    def enabled(self) -> bool:
        return self.target_per_second > 0

    def should_throttle(self, amount_so_far: int, now: float) -> bool:
        if not self.enabled:
            return False
        elapsed = now - self.start
        return elapsed > 0 and amount_so_far / elapsed > self.target_per_second

    def sleep_time(self) -> float:
        """Call when `should_throttle` said yes: the seconds to sleep now (0: not yet)."""
        self._sleep_deficit_s += self._sleep_per_record_s
        if self._sleep_deficit_s < MIN_SLEEP_S:
            return 0.0
        owed, self._sleep_deficit_s = self._sleep_deficit_s, 0.0
        return owed
