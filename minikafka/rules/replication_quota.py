"""Replication throttles (KIP-73), as Kafka's ReplicationQuotaManager: sans-IO.

A broker has two quotas, the leader's (`leader.replication.throttled.rate`: the bytes it
sends to followers of throttled replicas) and the follower's
(`follower.replication.throttled.rate`: the bytes it fetches for them). Which replicas are
throttled is a topic config, `leader.replication.throttled.replicas` /
`follower.replication.throttled.replicas`: `partition:broker` pairs or `*`.

The rate is Kafka's SimpleRate over a SampledStat: `replication.quota.window.num` windows
of `replication.quota.window.size.seconds` each; the rate is the bytes the retained windows
hold over the time since the oldest one began (at least one window). The quota is exceeded
while that rate is above the bound; a throttled replica that is not in sync then gets (or
asks for) nothing, until the windows' bytes thin out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from minikafka.clock import Clock
from minikafka.common import TopicPartition

# Kafka's ReplicationQuotaManagerConfig.QuotaBytesPerSecondDefault: no throttle.
UNLIMITED_RATE: Final = 2**63 - 1
DEFAULT_WINDOW_NUM: Final = 11
DEFAULT_WINDOW_SIZE_SECONDS: Final = 1

ALL_REPLICAS: Final = "*"

_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")


def throttled_replica_list_error(name: str, value: str) -> str | None:
    """Kafka's ThrottledReplicaListValidator: `*`, or `partition:broker` pairs separated by
    commas (empty items allowed); the message of the ConfigException otherwise."""
    items = [v.strip() for v in value.split(",")]
    if all(_REPLICA.fullmatch(v) for v in items) or "".join(items).strip() == ALL_REPLICAS:
        return None
    return (
        f"Invalid value {value} for configuration {name}: {name} must be the literal '*' or a "
        "list of replicas in the following format: [partitionId]:[brokerId],"
        "[partitionId]:[brokerId],..."
    )


@dataclass(frozen=True, slots=True)
class ThrottledReplicas:
    """A parsed throttled replica list: every replica (`*`) or these (partition, broker)s."""

    all: bool = False
    replicas: frozenset[tuple[int, int]] = frozenset()

    @classmethod
    def parse(cls, value: str) -> ThrottledReplicas:
        """A value throttled_replica_list_error accepts."""
        items = [v.strip() for v in value.split(",") if v.strip()]
        if items == [ALL_REPLICAS]:
            return cls(all=True)
        pairs = (item.split(":") for item in items)
        return cls(replicas=frozenset((int(p), int(b)) for p, b in pairs))

    def throttles(self, partition: int, broker_id: int) -> bool:
        """Whether the replica of `partition` on `broker_id` is throttled (Kafka's
        isThrottled on that broker: it keeps the partitions listed with its own id)."""
        return self.all or (partition, broker_id) in self.replicas

    def __bool__(self) -> bool:
        return self.all or bool(self.replicas)


NO_THROTTLED_REPLICAS: Final = ThrottledReplicas()


class _Sample:
    __slots__ = ("start_ms", "value")

    def __init__(self, start_ms: int) -> None:
        self.start_ms = start_ms
        self.value = 0.0


class SampledRate:
    """Kafka's SimpleRate on a SampledStat (WindowedSum): `samples` windows of `window_ms`;
    a record goes to the current window, a new one starting when it is a window old (the
    oldest reused once there are `samples`). Windows `samples * window_ms` old hold nothing.
    The rate (per second) is the windows' sum over max(now - oldest window's start,
    window_ms)."""

    def __init__(self, samples: int, window_ms: int) -> None:
        if samples < 1 or window_ms < 1:
            raise ValueError("a rate needs at least one window of at least 1 ms")
        self.samples = samples
        self.window_ms = window_ms
        self._windows: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        if not self._windows:
            self._windows.append(_Sample(now_ms))
            self._current = 0
        sample = self._windows[self._current]
        if now_ms - sample.start_ms >= self.window_ms:
            self._current = (self._current + 1) % self.samples
            if self._current >= len(self._windows):
                self._windows.append(_Sample(now_ms))
            else:
                self._windows[self._current] = _Sample(now_ms)
            sample = self._windows[self._current]
        sample.value += value

    def _purge(self, now_ms: int) -> None:
        expire = self.samples * self.window_ms
        for w in self._windows:
            if now_ms - w.start_ms >= expire:
                w.start_ms, w.value = now_ms, 0.0

    def measure(self, now_ms: int) -> float:
        """Per second, as of `now_ms`."""
        self._purge(now_ms)
        total = sum(w.value for w in self._windows)
        oldest = min((w.start_ms for w in self._windows), default=now_ms)
        elapsed_ms = max(now_ms - oldest, self.window_ms)
        return total * 1000.0 / elapsed_ms


class ReplicationQuotaManager:
    """One side's replication quota (leader or follower): the rate of throttled bytes and
    its bound. Which replicas are throttled comes from the topic configs (their parsed
    ThrottledReplicas), held by the logs."""

    def __init__(
        self,
        clock: Clock,
        *,
        window_num: int = DEFAULT_WINDOW_NUM,
        window_size_seconds: int = DEFAULT_WINDOW_SIZE_SECONDS,
        bound: int = UNLIMITED_RATE,
    ) -> None:
        self._clock = clock
        self.rate = SampledRate(window_num, window_size_seconds * 1000)
        self.bound = bound

    def update_quota(self, bound: int) -> None:
        self.bound = bound

    def record(self, size: int) -> None:
        self.rate.record(size, self._clock.now_ms())

    def is_quota_exceeded(self) -> bool:
        """Kafka's Sensor.checkQuotas: the rate is above the bound."""
        if self.bound >= UNLIMITED_RATE:
            return False
        return self.rate.measure(self._clock.now_ms()) > self.bound

    def byte_rate(self) -> float:
        """The `byte-rate` metric (kafka.server:type=LeaderReplication / FollowerReplication)."""
        return self.rate.measure(self._clock.now_ms())


def should_throttle(
    quota: ReplicationQuotaManager,
    throttled: ThrottledReplicas,
    tp: TopicPartition,
    broker_id: int,
    in_sync: bool,
) -> bool:
    """Kafka's shouldLeaderThrottle / shouldFollowerThrottle: a throttled replica that is not
    in sync, while the quota is exceeded (a replica in sync is never held back)."""
    return (
        not in_sync and throttled.throttles(tp.partition, broker_id) and quota.is_quota_exceeded()
    )
