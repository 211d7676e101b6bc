"""Describing and changing configs at runtime, as Kafka's DescribeConfigs,
IncrementalAlterConfigs and AlterConfigs do (pure: the Kafka adapter reads and writes ZooKeeper around it).

Topic configs are dynamic: a change is written to `/config/topics/<t>` and every broker
applies it to its logs of the topic without a restart. A topic config's value is its
override if the topic has one (source TOPIC_CONFIG), else the broker's setting it derives
from (its synonym: `log.retention.ms` for `retention.ms`), which is STATIC_BROKER_CONFIG
when server.properties sets it away from Kafka's default and DEFAULT_CONFIG otherwise.
Broker configs are static in minikafka (server.properties only): they can be described,
read-only, but not changed at runtime.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Final, NamedTuple

from minikafka.config.broker import BrokerConfig
from minikafka.protocol.errors import InvalidConfigError, InvalidRequestError


class ResourceType(enum.IntEnum):
    """Kafka's ConfigResource.Type (the ones minikafka answers)."""

    TOPIC = 2
    BROKER = 4


class ConfigSource(enum.IntEnum):
    """Kafka's DescribeConfigsResponse.ConfigSource."""

    TOPIC_CONFIG = 1
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


class ConfigType(enum.IntEnum):
    """Kafka's ConfigDef.Type as DescribeConfigs v3+ reports it."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    LONG = 5
    DOUBLE = 6
    LIST = 7


class AlterOp(enum.IntEnum):
    """Kafka's AlterConfigOp.OpType."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class TopicConfigDef(NamedTuple):
    broker_synonym: str | None  # the broker setting that is the default (Kafka's synonym)
    type: ConfigType
    doc: str
    default: str | None = None  # the default of a config no broker setting stands for


# Every topic config minikafka has (storage/log_config.py's TOPIC_NAMES), with Kafka's
# synonyms, types and (shortened) documentation.
TOPIC_CONFIGS: Final[dict[str, TopicConfigDef]] = {
    "segment.bytes": TopicConfigDef(
        "log.segment.bytes", ConfigType.INT, "The size at which a new log segment is rolled."
    ),
    "segment.ms": TopicConfigDef(
        "log.roll.ms", ConfigType.LONG, "The age at which the active segment is rolled."
    ),
    "segment.jitter.ms": TopicConfigDef(
        "log.roll.jitter.ms",
        ConfigType.LONG,
        "Each segment rolls up to this much (a random share) before segment.ms, so that "
        "partitions do not all roll at once.",
    ),
    "segment.index.bytes": TopicConfigDef(
        "log.index.size.max.bytes",
        ConfigType.INT,
        "The largest offset index of a segment (8 bytes an entry); a segment whose index is "
        "full rolls.",
    ),
    "index.interval.bytes": TopicConfigDef(
        "log.index.interval.bytes",
        ConfigType.INT,
        "How many bytes of batches between two offset index entries.",
    ),
    "retention.ms": TopicConfigDef(
        "log.retention.ms",
        ConfigType.LONG,
        "How long a closed segment is kept (by its newest timestamp); -1: no limit.",
    ),
    "retention.bytes": TopicConfigDef(
        "log.retention.bytes",
        ConfigType.LONG,
        "The size a partition's log may reach before old segments are deleted; -1: no limit.",
    ),
    "max.message.bytes": TopicConfigDef(
        "message.max.bytes", ConfigType.INT, "The largest record batch the partition accepts."
    ),
    "file.delete.delay.ms": TopicConfigDef(
        "log.segment.delete.delay.ms",
        ConfigType.LONG,
        "How long a segment retention removed stays on disk, renamed *.deleted, before its "
        "files are deleted.",
    ),
    "preallocate": TopicConfigDef(
        "log.preallocate",
        ConfigType.BOOLEAN,
        "Whether each new segment reserves segment.bytes of disk when it is created (its "
        "unused part given back when it rolls).",
    ),
    "leader.replication.throttled.replicas": TopicConfigDef(
        None,
        ConfigType.LIST,
        "Replicas whose leader-side replication is throttled (partition:broker, or *); "
        "minikafka does not throttle replication: only the empty list is accepted.",
        "",
    ),
    "follower.replication.throttled.replicas": TopicConfigDef(
        None,
        ConfigType.LIST,
        "Replicas whose follower-side replication is throttled (partition:broker, or *); "
        "minikafka does not throttle replication: only the empty list is accepted.",
        "",
    ),
    "flush.messages": TopicConfigDef(
        "log.flush.interval.messages",
        ConfigType.LONG,
        "fsync the log after this many records.",
    ),
    "flush.ms": TopicConfigDef(
        "log.flush.interval.ms", ConfigType.LONG, "fsync the log at least this often."
    ),
    "min.insync.replicas": TopicConfigDef(
        "min.insync.replicas",
        ConfigType.INT,
        "The fewest in-sync replicas an acks=all produce needs.",
    ),
    "unclean.leader.election.enable": TopicConfigDef(
        "unclean.leader.election.enable",
        ConfigType.BOOLEAN,
        "Whether a replica outside the ISR may become leader (losing data) when no ISR "
        "member is alive.",
    ),
    "cleanup.policy": TopicConfigDef(
        "log.cleanup.policy",
        ConfigType.LIST,
        "delete (retention deletes old segments), compact (the log cleaner keeps the latest "
        "record of each key) or both.",
    ),
    "delete.retention.ms": TopicConfigDef(
        "log.cleaner.delete.retention.ms",
        ConfigType.LONG,
        "How long a tombstone (a record with a null value) is kept once its segment is "
        "that old, for compacted topics.",
    ),
    "min.cleanable.dirty.ratio": TopicConfigDef(
        "log.cleaner.min.cleanable.ratio",
        ConfigType.DOUBLE,
        "The share of the cleanable log not yet cleaned above which the cleaner cleans it.",
    ),
    "min.compaction.lag.ms": TopicConfigDef(
        "log.cleaner.min.compaction.lag.ms",
        ConfigType.LONG,
        "How old a segment's newest record must be before the cleaner compacts it.",
    ),
    "compression.type": TopicConfigDef(
        "compression.type",
        ConfigType.STRING,
        "producer (batches are kept as the producer compressed them), uncompressed, gzip, "
        "snappy, lz4 or zstd (the leader recompresses every batch in that codec).",
    ),
    "max.compaction.lag.ms": TopicConfigDef(
        "log.cleaner.max.compaction.lag.ms",
        ConfigType.LONG,
        "The longest a record stays uncompacted: a compacted log's segments roll by it, and "
        "the cleaner cleans a log with older dirty records whatever its dirty ratio.",
    ),
    "message.format.version": TopicConfigDef(
        "log.message.format.version",
        ConfigType.STRING,
        "The record format version: every value from 0.11.0 on is record format v2, the one "
        "minikafka stores; older ones (formats v0 and v1) are refused.",
    ),
    "message.downconversion.enable": TopicConfigDef(
        "log.message.downconversion.enable",
        ConfigType.BOOLEAN,
        "Whether Fetch requests too old for record format v2 are served converted; "
        "minikafka serves Fetch v4 on, which all read v2, so no fetch needs converting.",
    ),
    "message.timestamp.type": TopicConfigDef(
        "log.message.timestamp.type",
        ConfigType.STRING,
        "CreateTime (records keep the producer's timestamps) or LogAppendTime (the leader "
        "stamps each batch with its clock when it appends it).",
    ),
    "message.timestamp.difference.max.ms": TopicConfigDef(
        "log.message.timestamp.difference.max.ms",
        ConfigType.LONG,
        "With CreateTime, the largest difference allowed between a record's timestamp and "
        "the leader's clock; a batch with a record farther off is refused (INVALID_TIMESTAMP).",
    ),
}


@dataclass(frozen=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True)
class DescribedConfig:
    name: str
    value: str | None
    read_only: bool
    source: ConfigSource
    type: ConfigType
    doc: str | None
    synonyms: tuple[ConfigSynonym, ...]


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def _broker_values(broker: BrokerConfig) -> dict[str, tuple[str | None, ConfigSource]]:
    """Every broker setting by Kafka's name: its value and whether server.properties set
    it away from the default."""
    defaults = BrokerConfig()
    out: dict[str, tuple[str | None, ConfigSource]] = {}
    for f in fields(broker):
        value = getattr(broker, f.name)
        source = (
            ConfigSource.DEFAULT_CONFIG
            if value == getattr(defaults, f.name)
            else ConfigSource.STATIC_BROKER_CONFIG
        )
        out[BrokerConfig.property_name(f.name)] = (_text(value), source)
    return out


def describe_topic(
    broker: BrokerConfig,
    overrides: Mapping[str, str],
    keys: Iterable[str] | None,
    include_synonyms: bool,
) -> list[DescribedConfig]:
    """The topic's configs (all of them, or the ones in `keys` that exist: Kafka leaves
    unknown names out), each with its value and where it comes from."""
    brokers = _broker_values(broker)
    defaults = _broker_values(BrokerConfig())
    wanted = list(TOPIC_CONFIGS) if keys is None else [k for k in keys if k in TOPIC_CONFIGS]
    out: list[DescribedConfig] = []
    for name in dict.fromkeys(wanted):
        d = TOPIC_CONFIGS[name]
        if d.broker_synonym is None:
            broker_value, broker_source = d.default, ConfigSource.DEFAULT_CONFIG
        else:
            broker_value, broker_source = brokers[d.broker_synonym]
        synonyms: list[ConfigSynonym] = []
        value: str | None
        if name in overrides:
            value, source = overrides[name], ConfigSource.TOPIC_CONFIG
            synonyms.append(ConfigSynonym(name, value, source))
        else:
            value, source = broker_value, broker_source
        if d.broker_synonym is not None:
            if broker_source is ConfigSource.STATIC_BROKER_CONFIG:
                synonyms.append(ConfigSynonym(d.broker_synonym, broker_value, broker_source))
            synonyms.append(
                ConfigSynonym(
                    d.broker_synonym, defaults[d.broker_synonym][0], ConfigSource.DEFAULT_CONFIG
                )
            )
        out.append(
            DescribedConfig(
                name,
                value,
                False,
                source,
                d.type,
                d.doc,
                tuple(synonyms) if include_synonyms else (),
            )
        )
    return out


def describe_broker(broker: BrokerConfig, keys: Iterable[str] | None) -> list[DescribedConfig]:
    """The broker's settings, read-only (no dynamic broker configs in minikafka)."""
    values = _broker_values(broker)
    wanted = sorted(values) if keys is None else [k for k in keys if k in values]
    return [
        DescribedConfig(name, *values[name][:1], True, values[name][1], ConfigType.STRING, None, ())
        for name in dict.fromkeys(wanted)
    ]


class AlterableConfig(NamedTuple):
    name: str
    op: int
    value: str | None


def altered_topic_overrides(
    broker: BrokerConfig, current: Mapping[str, str], changes: Sequence[AlterableConfig]
) -> dict[str, str]:
    """The topic's overrides after an IncrementalAlterConfigs (SET, DELETE), checked as a
    whole against the broker's defaults; InvalidConfigError or InvalidRequestError with
    Kafka's messages otherwise."""
    names = [c.name for c in changes]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InvalidRequestError(f"Error due to duplicate config keys: {', '.join(duplicated)}")
    new = dict(current)
    for c in changes:
        if c.name not in TOPIC_CONFIGS:
            raise InvalidConfigError(f"Unknown topic config name: {c.name}")
        try:
            op = AlterOp(c.op)
        except ValueError:
            raise InvalidRequestError(f"Unknown config operation {c.op} for {c.name}") from None
        if op is AlterOp.SET:
            if c.value is None:
                raise InvalidRequestError(f"Null value not supported for: {c.name}")
            new[c.name] = c.value
        elif op is AlterOp.DELETE:
            new.pop(c.name, None)
        elif TOPIC_CONFIGS[c.name].type is not ConfigType.LIST:
            raise InvalidConfigError(
                f"Config value {op.name.lower()} is not allowed for config key: {c.name}"
                " (it is not a list)"
            )
        else:
            # Kafka's list ops: on the current value (the override, else the broker's).
            if c.value is None:
                raise InvalidRequestError(f"Null value not supported for: {c.name}")
            d = TOPIC_CONFIGS[c.name]
            default = (
                d.default
                if d.broker_synonym is None
                else _broker_values(broker)[d.broker_synonym][0]
            )
            current_value = new.get(c.name, default or "")
            items = [v.strip() for v in current_value.split(",") if v.strip()]
            given = [v.strip() for v in c.value.split(",") if v.strip()]
            if op is AlterOp.APPEND:
                items += [v for v in given if v not in items]
            else:
                items = [v for v in items if v not in given]
            new[c.name] = ",".join(items)
    broker.log_config().with_overrides(new)
    return new


def replaced_topic_overrides(
    broker: BrokerConfig, configs: Sequence[tuple[str, str | None]]
) -> dict[str, str]:
    """The topic's overrides after an AlterConfigs (the non-incremental API): exactly the
    configs given, every other one back to its default, checked as a whole; Kafka's
    errors otherwise."""
    names = [name for name, _ in configs]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InvalidRequestError(f"Error due to duplicate config keys: {', '.join(duplicated)}")
    new: dict[str, str] = {}
    for name, value in configs:
        if name not in TOPIC_CONFIGS:
            raise InvalidConfigError(f"Unknown topic config name: {name}")
        if value is None:
            raise InvalidRequestError(f"Null value not supported for topic configs: {name}")
        new[name] = value
    broker.log_config().with_overrides(new)
    return new
