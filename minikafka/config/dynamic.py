"""Describing and changing configs at runtime, as Kafka's DescribeConfigs,
IncrementalAlterConfigs and AlterConfigs do (pure: the Kafka adapter reads and writes ZooKeeper around it).

Topic configs are dynamic: a change is written to `/config/topics/<t>` and every broker
applies it to its logs of the topic without a restart. A topic config's value is its
override if the topic has one (source TOPIC_CONFIG), else the broker setting it derives
from (its synonym: `log.retention.ms` for `retention.ms`).

A broker setting's value comes from the first of four layers that has it (KIP-226): the
broker's own dynamic config (`/config/brokers/<id>`, DYNAMIC_BROKER_CONFIG), the cluster's
dynamic default (`/config/brokers/<default>`, DYNAMIC_DEFAULT_BROKER_CONFIG),
server.properties when it sets it away from Kafka's default (STATIC_BROKER_CONFIG), and
Kafka's default (DEFAULT_CONFIG). Only the settings Kafka marks dynamic can be changed at
runtime (DYNAMIC_BROKER_CONFIGS); the others are read-only.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Final, NamedTuple

from minikafka.config.broker import BrokerConfig
from minikafka.config.docs import BROKER_CONFIG_DOCS
from minikafka.protocol.errors import InvalidConfigError, InvalidRequestError

log = logging.getLogger(__name__)


class ResourceType(enum.IntEnum):
    """Kafka's ConfigResource.Type (the ones minikafka answers)."""

    TOPIC = 2
    BROKER = 4


class ConfigSource(enum.IntEnum):
    """Kafka's DescribeConfigsResponse.ConfigSource."""

    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
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
    CLASS = 8
    PASSWORD = 9


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
        "Replicas whose leader-side replication is throttled, by the broker's "
        "leader.replication.throttled.rate: partition:broker pairs separated by commas, or * "
        "(every replica of the topic).",
        "",
    ),
    "follower.replication.throttled.replicas": TopicConfigDef(
        None,
        ConfigType.LIST,
        "Replicas whose follower-side replication is throttled, by the broker's "
        "follower.replication.throttled.rate: partition:broker pairs separated by commas, or * "
        "(every replica of the topic).",
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


# The `/config/brokers/<entity>` of the cluster-wide dynamic default (Kafka's
# ConfigEntityName.Default); a broker's own is its id.
DEFAULT_BROKER_ENTITY: Final = "<default>"

# Kafka's DynamicBrokerConfig.AllDynamicConfigs, the part minikafka has: every broker
# default of a topic config but the record format version (DynamicLogConfig), the log
# cleaner's backoff, and the replica fetcher count.
DYNAMIC_BROKER_CONFIGS: Final[frozenset[str]] = frozenset(
    {
        d.broker_synonym
        for d in TOPIC_CONFIGS.values()
        if d.broker_synonym is not None and d.broker_synonym != "log.message.format.version"
    }
    | {"log.cleaner.backoff.ms", "num.replica.fetchers"}
    | {"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
)

# Kafka's PerBrokerConfigs among them: a broker's own, refused at the cluster default. Kafka
# accepts the throttled rates at `<default>` but never applies them (its BrokerConfigHandler
# reads them from the broker's own entity only); minikafka refuses them there instead.
PER_BROKER_CONFIGS: Final[frozenset[str]] = frozenset(
    {"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
)

# Dynamic broker configs of Kafka that minikafka does not have: refused, saying why.
MISSING_DYNAMIC_BROKER_CONFIGS: Final[dict[str, str]] = {
    "replica.alter.log.dirs.io.max.bytes.per.second": "minikafka does not move replicas "
    "between log directories",
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
    # A secret: described without its value (nor any synonym's), as Kafka's PASSWORD configs.
    sensitive: bool = False


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def _broker_values(broker: BrokerConfig) -> dict[str, str | None]:
    """Every broker setting by Kafka's name, as text (secrets too: describing leaves their
    values out, SENSITIVE_BROKER_CONFIGS). The ssl.* and listener.name.* properties
    (security_props) are not described: several hold secrets (passwords, keys, JAAS
    configs), which Kafka answers as sensitive, with no value."""
    return {
        BrokerConfig.property_name(f.name): _text(getattr(broker, f.name))
        for f in fields(broker)
        if f.name not in ("security_props", "zookeeper_tls_props")
    }


_DEFAULT_VALUES: Final = _broker_values(BrokerConfig())

# Broker settings that hold a secret. Kafka describes its PASSWORD-typed configs as
# sensitive, with a null value and null synonym values (ConfigHelper): whether and where one
# is set shows, never what it is.
SENSITIVE_BROKER_CONFIGS: Final = frozenset({"admin.listeners.token"})


def _broker_type(name: str) -> ConfigType:
    if name in SENSITIVE_BROKER_CONFIGS:
        return ConfigType.PASSWORD
    if name == "replica.selector.class":
        return ConfigType.CLASS  # Kafka's type for it (a Java class name)
    for d in TOPIC_CONFIGS.values():
        if d.broker_synonym == name:
            return d.type
    if name in PER_BROKER_CONFIGS:
        return ConfigType.LONG  # Kafka's throttled rates are LONGs
    value = getattr(BrokerConfig(), name.replace(".", "_"))
    if isinstance(value, bool):
        return ConfigType.BOOLEAN
    if isinstance(value, int):
        return ConfigType.LONG if name.endswith(".ms") else ConfigType.INT
    if isinstance(value, float):
        return ConfigType.DOUBLE
    if isinstance(value, tuple):
        return ConfigType.LIST
    return ConfigType.STRING


def _broker_doc(name: str) -> str:
    """The documentation of the broker setting `name`: a topic config's default is
    documented by the topic config, every other setting in BROKER_CONFIG_DOCS."""
    for d in TOPIC_CONFIGS.values():
        if d.broker_synonym == name:
            return f"The default of the topic config that derives from it: {d.doc}"
    return BROKER_CONFIG_DOCS[name]


@dataclass(frozen=True)
class BrokerConfigLayers:
    """A broker's settings in their layers: server.properties under the cluster's dynamic
    default (`/config/brokers/<default>`) under the broker's own (`/config/brokers/<id>`)."""

    static: BrokerConfig
    cluster_default: Mapping[str, str] = field(default_factory=dict)
    per_broker: Mapping[str, str] = field(default_factory=dict)

    def effective(self) -> BrokerConfig:
        """The settings in force. A stored value that is not dynamic or does not apply (written
        by hand, or by another version) is logged and left out, as Kafka's broker does."""
        merged = {
            k: v
            for layer in (self.cluster_default, self.per_broker)
            for k, v in layer.items()
            if k in DYNAMIC_BROKER_CONFIGS
            and not (layer is self.cluster_default and k in PER_BROKER_CONFIGS)
        }
        try:
            return self.static.with_dynamic(merged)
        except InvalidConfigError:
            pass
        cfg = self.static
        for name, value in merged.items():
            try:
                cfg = cfg.with_dynamic({name: value})
            except InvalidConfigError as e:
                log.error("dynamic broker config %s=%r not applied: %s", name, value, e)
        return cfg

    def levels(self, name: str) -> list[ConfigSynonym]:
        """The broker setting `name` at every layer that has it, the one in force first."""
        out: list[ConfigSynonym] = []
        for layer, source in (
            (self.per_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
            (self.cluster_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ):
            if name in layer and name in DYNAMIC_BROKER_CONFIGS:
                out.append(ConfigSynonym(name, layer[name], source))
        static = _broker_values(self.static)[name]
        if static != _DEFAULT_VALUES[name]:
            out.append(ConfigSynonym(name, static, ConfigSource.STATIC_BROKER_CONFIG))
        out.append(ConfigSynonym(name, _DEFAULT_VALUES[name], ConfigSource.DEFAULT_CONFIG))
        if name in SENSITIVE_BROKER_CONFIGS:
            return [ConfigSynonym(y.name, None, y.source) for y in out]
        return out


def describe_topic(
    layers: BrokerConfigLayers,
    overrides: Mapping[str, str],
    keys: Iterable[str] | None,
    include_synonyms: bool,
) -> list[DescribedConfig]:
    """The topic's configs (all of them, or the ones in `keys` that exist: Kafka leaves
    unknown names out), each with its value and where it comes from."""
    wanted = list(TOPIC_CONFIGS) if keys is None else [k for k in keys if k in TOPIC_CONFIGS]
    out: list[DescribedConfig] = []
    for name in dict.fromkeys(wanted):
        d = TOPIC_CONFIGS[name]
        synonyms: list[ConfigSynonym] = []
        if name in overrides:
            synonyms.append(ConfigSynonym(name, overrides[name], ConfigSource.TOPIC_CONFIG))
        if d.broker_synonym is None:
            first = synonyms[0] if synonyms else None
            value, source = (
                (first.value, first.source) if first else (d.default, ConfigSource.DEFAULT_CONFIG)
            )
        else:
            synonyms += layers.levels(d.broker_synonym)
            value, source = synonyms[0].value, synonyms[0].source
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


def describe_broker(
    layers: BrokerConfigLayers, keys: Iterable[str] | None, include_synonyms: bool
) -> list[DescribedConfig]:
    """The broker's settings in force, each with the layer it comes from; read-only but for
    the dynamic ones."""
    values = _broker_values(layers.effective())
    wanted = sorted(values) if keys is None else [k for k in keys if k in values]
    out: list[DescribedConfig] = []
    for name in dict.fromkeys(wanted):
        levels = layers.levels(name)
        sensitive = name in SENSITIVE_BROKER_CONFIGS
        out.append(
            DescribedConfig(
                name,
                None if sensitive else values[name],
                name not in DYNAMIC_BROKER_CONFIGS,
                levels[0].source,
                _broker_type(name),
                _broker_doc(name),
                tuple(levels) if include_synonyms else (),
                sensitive,
            )
        )
    return out


def describe_broker_default(
    layers: BrokerConfigLayers, keys: Iterable[str] | None, include_synonyms: bool
) -> list[DescribedConfig]:
    """The cluster's dynamic defaults (the broker resource named ""): only the ones set, as
    Kafka answers."""
    present = {k: v for k, v in layers.cluster_default.items() if k in DYNAMIC_BROKER_CONFIGS}
    wanted = sorted(present) if keys is None else [k for k in keys if k in present]
    out: list[DescribedConfig] = []
    for name in dict.fromkeys(wanted):
        synonym = ConfigSynonym(name, present[name], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        out.append(
            DescribedConfig(
                name,
                present[name],
                False,
                synonym.source,
                _broker_type(name),
                _broker_doc(name),
                (synonym,) if include_synonyms else (),
            )
        )
    return out


class AlterableConfig(NamedTuple):
    name: str
    op: int
    value: str | None


def _check_no_duplicates(names: Sequence[str]) -> None:
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InvalidRequestError(f"Error due to duplicate config keys: {', '.join(duplicated)}")


def _apply_ops(
    current: Mapping[str, str],
    changes: Sequence[AlterableConfig],
    is_list: Callable[[str], bool],
    value_in_force: Callable[[str], str | None],
) -> dict[str, str]:
    """IncrementalAlterConfigs' operations on an entity's stored configs; the list ones
    (APPEND, SUBTRACT) work on the value in force when the entity has none of its own."""
    new = dict(current)
    for c in changes:
        try:
            op = AlterOp(c.op)
        except ValueError:
            raise InvalidRequestError(f"Unknown config operation {c.op} for {c.name}") from None
        if op is not AlterOp.DELETE and c.value is None:
            raise InvalidRequestError(f"Null value not supported for: {c.name}")
        if op is AlterOp.SET:
            new[c.name] = c.value or ""
        elif op is AlterOp.DELETE:
            new.pop(c.name, None)
        elif not is_list(c.name):
            raise InvalidConfigError(
                f"Config value {op.name.lower()} is not allowed for config key: {c.name}"
                " (it is not a list)"
            )
        else:
            current_value = new.get(c.name, value_in_force(c.name) or "")
            items = [v.strip() for v in current_value.split(",") if v.strip()]
            given = [v.strip() for v in (c.value or "").split(",") if v.strip()]
            if op is AlterOp.APPEND:
                items += [v for v in given if v not in items]
            else:
                items = [v for v in items if v not in given]
            new[c.name] = ",".join(items)
    return new


def _topic_value_in_force(broker: BrokerConfig, name: str) -> str | None:
    d = TOPIC_CONFIGS[name]
    return d.default if d.broker_synonym is None else _broker_values(broker)[d.broker_synonym]


def altered_topic_overrides(
    broker: BrokerConfig, current: Mapping[str, str], changes: Sequence[AlterableConfig]
) -> dict[str, str]:
    """The topic's overrides after an IncrementalAlterConfigs, checked as a whole against
    the broker's defaults (`broker`: the settings in force); InvalidConfigError or
    InvalidRequestError with Kafka's messages otherwise."""
    _check_no_duplicates([c.name for c in changes])
    for c in changes:
        if c.name not in TOPIC_CONFIGS:
            raise InvalidConfigError(f"Unknown topic config name: {c.name}")
    new = _apply_ops(
        current,
        changes,
        lambda name: TOPIC_CONFIGS[name].type is ConfigType.LIST,
        lambda name: _topic_value_in_force(broker, name),
    )
    broker.log_config().with_overrides(new)
    return new


def replaced_topic_overrides(
    broker: BrokerConfig, configs: Sequence[tuple[str, str | None]]
) -> dict[str, str]:
    """The topic's overrides after an AlterConfigs (the non-incremental API): exactly the
    configs given, every other one back to its default, checked as a whole; Kafka's
    errors otherwise."""
    _check_no_duplicates([name for name, _ in configs])
    new: dict[str, str] = {}
    for name, value in configs:
        if name not in TOPIC_CONFIGS:
            raise InvalidConfigError(f"Unknown topic config name: {name}")
        if value is None:
            raise InvalidRequestError(f"Null value not supported for topic configs: {name}")
        new[name] = value
    broker.log_config().with_overrides(new)
    return new


def broker_entity(resource_name: str) -> str:
    """The `/config/brokers/<entity>` a BROKER resource names: "" is the cluster default."""
    return resource_name or DEFAULT_BROKER_ENTITY


def _checked_broker_configs(
    layers: BrokerConfigLayers, entity: str, new: dict[str, str]
) -> dict[str, str]:
    """`new` as the entity's dynamic configs, if every name is dynamic and the settings in
    force with them validate; else Kafka's INVALID_REQUEST, worded as Kafka's."""
    resource = (
        f"ConfigResource(type=BROKER, name='{'' if entity == DEFAULT_BROKER_ENTITY else entity}')"
    )
    known = _DEFAULT_VALUES.keys() | {"log.dir"}
    problems: list[str] = []
    unknown = sorted(n for n in new if n not in known and n not in MISSING_DYNAMIC_BROKER_CONFIGS)
    if unknown:
        problems.append(f"Unknown broker configs: {', '.join(unknown)}")
    missing = sorted(n for n in new if n in MISSING_DYNAMIC_BROKER_CONFIGS)
    for name in missing:
        problems.append(f"{name} cannot be set: {MISSING_DYNAMIC_BROKER_CONFIGS[name]}")
    static = sorted(n for n in new if n in known and n not in DYNAMIC_BROKER_CONFIGS)
    if static:
        problems.append(
            f"Cannot update these configs dynamically: {', '.join(static)} (set them in "
            "server.properties and restart the broker)"
        )
    per_broker = sorted(n for n in new if n in PER_BROKER_CONFIGS)
    if per_broker and entity == DEFAULT_BROKER_ENTITY:
        problems.append(
            "Cannot update these configs at default cluster level, broker id must be "
            f"specified: {', '.join(per_broker)}"
        )
    if not problems:
        after = (
            BrokerConfigLayers(layers.static, new, layers.per_broker)
            if entity == DEFAULT_BROKER_ENTITY
            else BrokerConfigLayers(layers.static, layers.cluster_default, new)
        )
        try:
            layers.static.with_dynamic({**after.cluster_default, **after.per_broker})
        except InvalidConfigError as e:
            problems.append(str(e))
    if problems:
        raise InvalidRequestError(
            f"Invalid config value for resource {resource}: " + "; ".join(problems)
        )
    return new


def altered_broker_configs(
    layers: BrokerConfigLayers,
    entity: str,
    current: Mapping[str, str],
    changes: Sequence[AlterableConfig],
) -> dict[str, str]:
    """A broker entity's dynamic configs (`/config/brokers/<entity>`) after an
    IncrementalAlterConfigs, checked; Kafka's errors otherwise."""
    _check_no_duplicates([c.name for c in changes])
    in_force = _broker_values(layers.effective())
    new = _apply_ops(
        current,
        changes,
        lambda name: name in _DEFAULT_VALUES and _broker_type(name) is ConfigType.LIST,
        in_force.get,
    )
    return _checked_broker_configs(layers, entity, new)


def replaced_broker_configs(
    layers: BrokerConfigLayers, entity: str, configs: Sequence[tuple[str, str | None]]
) -> dict[str, str]:
    """A broker entity's dynamic configs after an AlterConfigs: exactly the ones given."""
    _check_no_duplicates([name for name, _ in configs])
    nulls = [name for name, value in configs if value is None]
    if nulls:
        raise InvalidRequestError(f"Null value not supported for : {','.join(nulls)}")
    return _checked_broker_configs(layers, entity, {n: v or "" for n, v in configs})
