"""Per-log (topic-level) configuration, with Kafka's topic config names and defaults."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

from minikafka.protocol.errors import InvalidConfigError
from minikafka.rules.replication_quota import (
    NO_THROTTLED_REPLICAS,
    ThrottledReplicas,
    throttled_replica_list_error,
)
from minikafka.storage import compression

LONG_MAX = 2**63 - 1


def parse_bool(value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise ValueError(f"not a boolean: {value!r}")


def parse_value(type_name: object, raw: str) -> bool | int | float | str:
    """A config value of a field typed `type_name` ("bool", "int", "float" or "str", as
    dataclass fields name them under postponed annotations) from its text."""
    if type_name in (bool, "bool"):
        return parse_bool(raw)
    if type_name in (float, "float"):
        return float(raw)
    if type_name in (str, "str"):
        return raw.strip()
    return int(raw)


_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?(?:-IV\d+)?")


def check_message_format_version(version: str) -> None:
    """message.format.version as Kafka names them (0.10.2, 0.11.0-IV2, 2.8, 2.8-IV1, 3.0):
    InvalidConfigError for what is no version, and for the versions of record formats v0
    and v1 (before 0.11.0), which minikafka neither writes nor serves."""
    m = _VERSION.fullmatch(version.strip())
    if m is None:
        raise InvalidConfigError(
            f"Invalid value {version} for configuration message.format.version: "
            "Version `" + version + "` is not a valid version"
        )
    if (int(m.group(1)), int(m.group(2))) < (0, 11):
        raise InvalidConfigError(
            f"Invalid value {version} for configuration message.format.version: it names "
            "record format v0 or v1; minikafka stores only record format v2, "
            "message.format.version 0.11.0 and later"
        )


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 60 * 60 * 1000
    # Each segment rolls up to this much before segment.ms (a random share, chosen when it
    # is created), so that logs created together do not all roll at once.
    segment_jitter_ms: int = 0
    # The largest offset index of a segment (8-byte entries): a full index rolls it.
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    retention_ms: int = 7 * 24 * 60 * 60 * 1000
    retention_bytes: int = -1
    max_message_bytes: int = 1024 * 1024 + 12  # Kafka's message.max.bytes default (1048588)
    # A segment retention removes is renamed *.deleted and deleted this much later (readers
    # by path, and an operator, have that long).
    file_delete_delay_ms: int = 60_000
    flush_messages: int = LONG_MAX
    # Reserve segment.bytes of disk for each new segment (given back when it rolls).
    preallocate: bool = False
    # Replication throttles (KIP-73): the replicas (partition:broker, or *) whose
    # replication the brokers' leader / follower throttled rates hold back.
    leader_replication_throttled_replicas: str = ""
    follower_replication_throttled_replicas: str = ""
    flush_ms: int = LONG_MAX
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    # Kafka's broker config producer.id.expiration.ms (1 day): an idempotent producer whose
    # last batch is this old is forgotten. Broker-wide, no topic-level name (as in Kafka).
    producer_id_expiration_ms: int = 24 * 60 * 60 * 1000
    # Log compaction (log_cleaner.py): "delete", "compact" or both, comma-separated.
    cleanup_policy: str = "delete"
    delete_retention_ms: int = 24 * 60 * 60 * 1000  # how long tombstones outlive cleaning
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    # KIP-354: no record stays uncompacted longer (a compacted log's segments roll by it,
    # and the cleaner takes a log with older dirty records whatever its dirty ratio).
    max_compaction_lag_ms: int = LONG_MAX
    # CreateTime (the producer's timestamps, checked against message.timestamp.difference.
    # max.ms) or LogAppendTime (the leader stamps each batch with its clock).
    message_timestamp_type: str = "CreateTime"
    message_timestamp_difference_max_ms: int = LONG_MAX
    # producer (batches kept as sent) or the codec a leader recompresses batches in.
    compression_type: str = "producer"
    # The record format: minikafka writes and serves only v2, which every version from
    # 0.11.0 on names (older ones, formats v0 and v1, are refused).
    message_format_version: str = "2.8-IV1"
    # Down-conversion serves old formats to Fetch versions before 4; minikafka serves Fetch
    # v4 on, which all read v2, so none is ever needed, whichever the value.
    message_downconversion_enable: bool = True

    # topic config name -> field; the broker-level names (log.segment.bytes, ...) map onto
    # these in the broker config.
    TOPIC_NAMES: ClassVar[dict[str, str]] = {
        "segment.bytes": "segment_bytes",
        "segment.ms": "segment_ms",
        "segment.jitter.ms": "segment_jitter_ms",
        "segment.index.bytes": "segment_index_bytes",
        "index.interval.bytes": "index_interval_bytes",
        "retention.ms": "retention_ms",
        "retention.bytes": "retention_bytes",
        "max.message.bytes": "max_message_bytes",
        "file.delete.delay.ms": "file_delete_delay_ms",
        "flush.messages": "flush_messages",
        "preallocate": "preallocate",
        "leader.replication.throttled.replicas": "leader_replication_throttled_replicas",
        "follower.replication.throttled.replicas": "follower_replication_throttled_replicas",
        "flush.ms": "flush_ms",
        "min.insync.replicas": "min_insync_replicas",
        "unclean.leader.election.enable": "unclean_leader_election_enable",
        "cleanup.policy": "cleanup_policy",
        "delete.retention.ms": "delete_retention_ms",
        "min.cleanable.dirty.ratio": "min_cleanable_dirty_ratio",
        "min.compaction.lag.ms": "min_compaction_lag_ms",
        "max.compaction.lag.ms": "max_compaction_lag_ms",
        "message.timestamp.type": "message_timestamp_type",
        "message.timestamp.difference.max.ms": "message_timestamp_difference_max_ms",
        "compression.type": "compression_type",
        "message.format.version": "message_format_version",
        "message.downconversion.enable": "message_downconversion_enable",
    }
    TIMESTAMP_TYPES: ClassVar[frozenset[str]] = frozenset({"CreateTime", "LogAppendTime"})
    CLEANUP_POLICIES: ClassVar[frozenset[str]] = frozenset({"delete", "compact"})

    def with_overrides(self, overrides: Mapping[str, str]) -> LogConfig:
        """Apply topic-level overrides (`{"retention.ms": "1000"}`); unknown names are an error."""
        changes: dict[str, Any] = {}
        types = {f.name: f.type for f in fields(self)}
        for name, raw in overrides.items():
            attr = self.TOPIC_NAMES.get(name)
            if attr is None:
                raise InvalidConfigError(f"unknown topic config {name!r}")
            try:
                changes[attr] = parse_value(types[attr], raw)
            except ValueError as e:
                raise InvalidConfigError(f"invalid value for {name}: {raw!r} ({e})") from e
        cfg = replace(self, **changes)
        cfg.validate()
        return cfg

    # From cleanup.policy, once (the produce path asks `compact` on every append):
    # whether the log cleaner keeps only the latest record of each key, and whether
    # retention (retention.ms, retention.bytes) deletes old segments.
    compact: bool = field(init=False, repr=False, compare=False)
    delete: bool = field(init=False, repr=False, compare=False)
    # From message.timestamp.*, once: whether the leader stamps batches with its clock, and
    # the producer's timestamps' largest distance from it (None: not checked).
    log_append_time: bool = field(init=False, repr=False, compare=False)
    timestamp_max_difference: int | None = field(init=False, repr=False, compare=False)
    # From compression.type: the codec a leader writes batches in (None: as sent).
    target_codec: int | None = field(init=False, repr=False, compare=False)
    # From *.replication.throttled.replicas, parsed once (every replica fetch asks them).
    leader_throttled: ThrottledReplicas = field(init=False, repr=False, compare=False)
    follower_throttled: ThrottledReplicas = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        policies = self.cleanup_policies
        object.__setattr__(self, "compact", "compact" in policies)
        object.__setattr__(self, "delete", "delete" in policies)
        log_append_time = self.message_timestamp_type == "LogAppendTime"
        object.__setattr__(self, "log_append_time", log_append_time)
        difference = self.message_timestamp_difference_max_ms
        object.__setattr__(
            self,
            "timestamp_max_difference",
            None if log_append_time or difference >= LONG_MAX else difference,
        )
        object.__setattr__(
            self, "target_codec", compression.TOPIC_COMPRESSION_TYPES.get(self.compression_type)
        )
        for attr, value in (
            ("leader_throttled", self.leader_replication_throttled_replicas),
            ("follower_throttled", self.follower_replication_throttled_replicas),
        ):
            parsed = NO_THROTTLED_REPLICAS
            if value.strip() and throttled_replica_list_error("", value) is None:
                parsed = ThrottledReplicas.parse(value)
            object.__setattr__(self, attr, parsed)

    @property
    def max_segment_ms(self) -> int:
        """When the active segment rolls by time: segment.ms, or max.compaction.lag.ms if a
        compacted log's is shorter (its records must reach a closed, cleanable segment)."""
        if self.compact:
            return min(self.segment_ms, self.max_compaction_lag_ms)
        return self.segment_ms

    @property
    def cleanup_policies(self) -> frozenset[str]:
        return frozenset(p.strip() for p in self.cleanup_policy.split(",") if p.strip())

    def validate(self) -> None:
        policies = self.cleanup_policies
        if not policies or not policies <= self.CLEANUP_POLICIES:
            raise InvalidConfigError(
                f"cleanup.policy {self.cleanup_policy!r}: a list of delete and compact"
            )
        if self.delete_retention_ms < 0:
            raise InvalidConfigError("delete.retention.ms must be >= 0")
        if not 0.0 <= self.min_cleanable_dirty_ratio <= 1.0:
            raise InvalidConfigError("min.cleanable.dirty.ratio must be between 0 and 1")
        if self.min_compaction_lag_ms < 0:
            raise InvalidConfigError("min.compaction.lag.ms must be >= 0")
        if self.max_compaction_lag_ms < 1:
            raise InvalidConfigError(
                f"Invalid value {self.max_compaction_lag_ms} for configuration "
                "max.compaction.lag.ms: Value must be at least 1"
            )
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise InvalidConfigError(
                f"conflict topic config setting min.compaction.lag.ms "
                f"({self.min_compaction_lag_ms}) > max.compaction.lag.ms "
                f"({self.max_compaction_lag_ms})"
            )
        if self.message_timestamp_type not in self.TIMESTAMP_TYPES:
            raise InvalidConfigError(
                f"Invalid value {self.message_timestamp_type} for configuration "
                "message.timestamp.type: String must be one of: CreateTime, LogAppendTime"
            )
        if self.compression_type not in compression.TOPIC_COMPRESSION_TYPES:
            raise InvalidConfigError(
                f"Invalid value {self.compression_type} for configuration compression.type: "
                f"String must be one of: {', '.join(compression.TOPIC_COMPRESSION_TYPES)}"
            )
        check_message_format_version(self.message_format_version)
        if self.message_timestamp_difference_max_ms < 0:
            raise InvalidConfigError("message.timestamp.difference.max.ms must be >= 0")
        if self.segment_bytes < 61 + 14:
            raise InvalidConfigError(f"segment.bytes {self.segment_bytes} is too small")
        if self.segment_ms <= 0:
            raise InvalidConfigError("segment.ms must be positive")
        if self.segment_jitter_ms < 0:
            raise InvalidConfigError("segment.jitter.ms must be >= 0")
        if self.segment_index_bytes < 4:
            raise InvalidConfigError(
                f"Invalid value {self.segment_index_bytes} for configuration "
                "segment.index.bytes: Value must be at least 4"
            )
        if self.index_interval_bytes < 0:
            raise InvalidConfigError("index.interval.bytes must be >= 0")
        for name, value in (
            ("leader.replication.throttled.replicas", self.leader_replication_throttled_replicas),
            (
                "follower.replication.throttled.replicas",
                self.follower_replication_throttled_replicas,
            ),
        ):
            error = throttled_replica_list_error(name, value)
            if error is not None:
                raise InvalidConfigError(error)
        if self.file_delete_delay_ms < 0:
            raise InvalidConfigError("file.delete.delay.ms must be >= 0")
        if self.max_message_bytes <= 0:
            raise InvalidConfigError("max.message.bytes must be positive")
        if self.min_insync_replicas < 1:
            raise InvalidConfigError("min.insync.replicas must be >= 1")
        if self.producer_id_expiration_ms <= 0:
            raise InvalidConfigError(
                f"producer.id.expiration.ms must be a positive number of milliseconds, "
                f"got {self.producer_id_expiration_ms}"
            )
