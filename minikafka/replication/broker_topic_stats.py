"""Kafka's BrokerTopicMetrics, per topic, as plain counts (the admin endpoint exports them
as Prometheus counters; a rate is the scraper's `rate()` of them).

Where each is counted follows Kafka: produce counts in the replica manager's leader append
(records and bytes that made it into the log), fetch counts in the fetch handler (bytes of
the records each response carries), replication bytes in on the follower's fetcher.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass
class TopicStats:
    messages_in: int = 0  # MessagesInPerSec: records appended by produce requests
    bytes_in: int = 0  # BytesInPerSec: their bytes
    bytes_out: int = 0  # BytesOutPerSec: record bytes sent to consumers
    replication_bytes_in: int = 0  # ReplicationBytesInPerSec: appended by our fetchers
    replication_bytes_out: int = 0  # ReplicationBytesOutPerSec: sent to followers
    # Not Kafka's: of bytes_out, what this broker sent as a follower of the partition
    # (consumers reading their closest replica, KIP-392).
    follower_bytes_out: int = 0
    total_produce_requests: int = 0  # TotalProduceRequestsPerSec (one per partition)
    failed_produce_requests: int = 0  # FailedProduceRequestsPerSec
    # TotalFetchRequestsPerSec / FailedFetchRequestsPerSec: one per partition of a fetch
    # response (an incremental fetch session's response lists only partitions that moved).
    total_fetch_requests: int = 0
    failed_fetch_requests: int = 0


COUNTER_NAMES: tuple[str, ...] = tuple(f.name for f in fields(TopicStats))


class BrokerTopicStats:
    def __init__(self) -> None:
        self.topics: dict[str, TopicStats] = {}

    def topic(self, topic: str) -> TopicStats:
        stats = self.topics.get(topic)
        if stats is None:
            stats = self.topics[topic] = TopicStats()
        return stats

    def remove(self, topic: str) -> None:
        """A deleted topic's counters go with it (Kafka removes its metrics)."""
        self.topics.pop(topic, None)

    def record_produce(self, topic: str, records: int, size: int) -> None:
        s = self.topic(topic)
        s.total_produce_requests += 1
        s.messages_in += records
        s.bytes_in += size

    def record_failed_produce(self, topic: str) -> None:
        s = self.topic(topic)
        s.total_produce_requests += 1
        s.failed_produce_requests += 1

    def record_fetch(
        self, topic: str, size: int, *, failed: bool, to_follower: bool, as_follower: bool = False
    ) -> None:
        """One partition of a fetch response: `to_follower` a replica's fetch, else a
        consumer's, served `as_follower` when this broker does not lead the partition."""
        s = self.topic(topic)
        s.total_fetch_requests += 1
        if failed:
            s.failed_fetch_requests += 1
        elif to_follower:
            s.replication_bytes_out += size
        else:
            s.bytes_out += size
            if as_follower:
                s.follower_bytes_out += size

    def record_replication_in(self, topic: str, size: int) -> None:
        self.topic(topic).replication_bytes_in += size
