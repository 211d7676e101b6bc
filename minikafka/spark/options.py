"""The Spark source's and sink's options, with spark-sql-kafka's names and meanings, checked
before anything connects (no Spark, no network). `kafka.*` options are the properties of
the source's consumers and the sink's producers, librdkafka's (confluent-kafka), by Kafka's
names; librdkafka checks them (its message for one it refuses).

Spark hands a data source its options with lower-cased keys; every function here reads
them case-insensitively. An option the source or sink does not implement is refused with a
message naming it: a Spark user who passes `minPartitions` learns at once that it does
nothing here, instead of wondering why it has no effect.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from minikafka.client.bootstrap import parse_bootstrap_servers
from minikafka.client.librdkafka import ClientConfigError, check_config
from minikafka.common import TopicPartition

# Kafka's (and Spark's) markers in offsets JSON.
EARLIEST = -2
LATEST = -1

DEFAULT_POLL_TIMEOUT_MS = 120_000  # Spark's kafkaConsumer.pollTimeoutMs (spark.network.timeout)
# The source reads in large chunks (one Arrow batch each) unless kafka.max.poll.records says
# otherwise: Kafka's consumer default of 500 would make many small batches.
DEFAULT_READ_CHUNK_RECORDS = 10_000
# How long the sink's first record to a topic waits for its metadata (Kafka's max.block.ms).
DEFAULT_MAX_BLOCK_MS = 60_000
# How long the source waits for metadata and offsets (Kafka's default.api.timeout.ms).
DEFAULT_API_TIMEOUT_MS = 60_000

_OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_ASSIGN_EXAMPLE = '{"topicA":[0,1],"topicB":[2,4]}'

# spark-sql-kafka options minikafka's source does not implement (refused, not ignored).
_UNSUPPORTED_SOURCE_OPTIONS = {
    "startingtimestamp": "startingTimestamp",
    "startingoffsetsbytimestamp": "startingOffsetsByTimestamp",
    "startingoffsetsbytimestampstrategy": "startingOffsetsByTimestampStrategy",
    "endingtimestamp": "endingTimestamp",
    "endingoffsetsbytimestamp": "endingOffsetsByTimestamp",
    "minoffsetspertrigger": "minOffsetsPerTrigger",
    "maxtriggerdelay": "maxTriggerDelay",
    "minpartitions": "minPartitions",
    "maxrecordsperpartition": "maxRecordsPerPartition",
    "groupidprefix": "groupIdPrefix",
    "fetchoffset.numretries": "fetchOffset.numRetries",
    "fetchoffset.retryintervalms": "fetchOffset.retryIntervalMs",
}
# Kafka consumer/producer settings Spark itself owns; its messages, nearly word for word.
_SPARK_OWNED_CONSUMER = {
    "auto.offset.reset": "Kafka option 'auto.offset.reset' is not supported. Instead set the "
    "source option 'startingOffsets' to 'earliest' or 'latest' to specify where to start.",
    "enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported: the source "
    "does not commit offsets; Spark's checkpoint tracks them.",
    "key.deserializer": "Kafka option 'key.deserializer' is not supported, as keys are "
    "returned as bytes (cast the key column to a string or parse it with DataFrame operations).",
    "value.deserializer": "Kafka option 'value.deserializer' is not supported, as values are "
    "returned as bytes (cast the value column to a string or parse it with DataFrame "
    "operations).",
    "group.id": "Kafka option 'group.id' is not supported: the source assigns partitions "
    "itself and needs no consumer group.",
}
_SPARK_OWNED_PRODUCER = {
    "key.serializer": "Kafka option 'key.serializer' is not supported, as keys are written as "
    "bytes (a string key column is written as its UTF-8 bytes).",
    "value.serializer": "Kafka option 'value.serializer' is not supported, as values are "
    "written as bytes (a string value column is written as its UTF-8 bytes).",
}
# Properties of Kafka's Java clients that librdkafka does not have, with what to use instead:
# refused with that hint, where librdkafka would only say it has no such property. (The
# source itself honours max.poll.records and default.api.timeout.ms, the sink max.block.ms.)
_NOT_IN_LIBRDKAFKA = {
    "fetch.max.wait.ms": "librdkafka calls it fetch.wait.max.ms",
    "receive.buffer.bytes": "librdkafka calls it socket.receive.buffer.bytes",
    "send.buffer.bytes": "librdkafka calls it socket.send.buffer.bytes",
    "max.request.size": "librdkafka's nearest is message.max.bytes",
    "buffer.memory": "librdkafka's nearest is queue.buffering.max.kbytes (in KiB)",
    "partitioner.class": "librdkafka's is partitioner (murmur2_random, Kafka's hash of the key, "
    "by default here)",
    "compression.gzip.level": "librdkafka's is compression.level",
    "compression.lz4.level": "librdkafka's is compression.level",
    "compression.zstd.level": "librdkafka's is compression.level",
    "interceptor.classes": "librdkafka cannot load Java classes",
    "metric.reporters": "librdkafka cannot load Java classes",
}
KAFKA_ACKS = ("all", "-1", "0", "1")


class SparkOptionError(ValueError):
    """An option that is missing, malformed, contradictory or not supported; the message
    names it."""


@dataclass(frozen=True)
class OffsetSpec:
    """startingOffsets / endingOffsets: `earliest`, `latest`, or offsets per partition (in
    which -2 means earliest and -1 latest)."""

    kind: Literal["earliest", "latest", "specific"]
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Subscribe:
    topics: tuple[str, ...]

    def matches(self, topic: str) -> bool:
        return topic in self.topics


@dataclass(frozen=True)
class SubscribePattern:
    pattern: str

    def matches(self, topic: str) -> bool:
        # Java's Pattern.matcher(topic).matches(): the whole name must match.
        return re.fullmatch(self.pattern, topic) is not None


@dataclass(frozen=True)
class Assign:
    partitions: tuple[TopicPartition, ...]

    def matches(self, topic: str) -> bool:
        return any(tp.topic == topic for tp in self.partitions)


Subscription = Subscribe | SubscribePattern | Assign


def select_partitions(
    subscription: Subscription, topics: Mapping[str, list[int]]
) -> list[TopicPartition]:
    """The partitions a subscription reads, given every topic's partitions, sorted. For
    `assign`, a partition the cluster does not have is an error naming it."""
    if isinstance(subscription, Assign):
        missing = [
            tp for tp in subscription.partitions if tp.partition not in topics.get(tp.topic, ())
        ]
        if missing:
            names = ", ".join(f"{tp.topic}-{tp.partition}" for tp in missing)
            raise SparkOptionError(
                f"assign: {names} not found in the cluster (unknown topic or partition)"
            )
        return sorted(subscription.partitions)
    return sorted(
        TopicPartition(topic, p)
        for topic, partitions in topics.items()
        if subscription.matches(topic)
        for p in partitions
    )


@dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec | None  # batch queries only
    max_offsets_per_trigger: int | None  # streaming queries only
    fail_on_data_loss: bool
    include_headers: bool
    poll_timeout_ms: int
    read_chunk_records: int  # records per Arrow batch at most (kafka.max.poll.records)
    api_timeout_ms: int  # for metadata and offsets (kafka.default.api.timeout.ms)
    consumer_config: Mapping[str, str]  # librdkafka properties by Kafka's names


@dataclass(frozen=True)
class SinkOptions:
    bootstrap_servers: str
    topic: str | None  # overrides the topic column
    max_block_ms: int  # how long a topic's metadata is waited for (kafka.max.block.ms)
    producer_config: Mapping[str, str]  # librdkafka properties by Kafka's names


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in options.items()}


def _bootstrap(opts: dict[str, str]) -> str:
    servers = opts.pop("kafka.bootstrap.servers", None)
    if servers is None or not servers.strip():
        raise SparkOptionError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring the "
            "minikafka brokers (host:port[,host:port])"
        )
    try:
        parse_bootstrap_servers(servers)
    except ValueError as e:
        raise SparkOptionError(f"kafka.bootstrap.servers: {e}") from None
    return servers


def _bool(opts: dict[str, str], key: str, name: str, default: bool) -> bool:
    raw = opts.pop(key, None)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise SparkOptionError(f"{name} must be true or false, not {raw!r}")
    return value == "true"


def _positive_int(opts: dict[str, str], key: str, name: str) -> int | None:
    raw = opts.pop(key, None)
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise SparkOptionError(f"{name} must be a positive integer, not {raw!r}") from None
    if value <= 0:
        raise SparkOptionError(f"{name} must be a positive integer, not {raw!r}")
    return value


def _kafka_props(opts: dict[str, str]) -> dict[str, str]:
    """Pop the `kafka.`-prefixed options (the client's own properties)."""
    props = {k[len("kafka.") :]: opts.pop(k) for k in list(opts) if k.startswith("kafka.")}
    return props


def _check_client_props(
    kind: Literal["producer", "consumer"], props: dict[str, str], spark_owned: Mapping[str, str]
) -> None:
    """Spark's refusals, then the Kafka names librdkafka lacks, then librdkafka's own check."""
    for name, message in spark_owned.items():
        if name in props:
            raise SparkOptionError(message)
    for name in sorted(props):
        if name in _NOT_IN_LIBRDKAFKA:
            raise SparkOptionError(
                f"kafka.{name} is a property of Kafka's Java clients, which the minikafka "
                f"source and sink do not use (they run on librdkafka): "
                f"{_NOT_IN_LIBRDKAFKA[name]}"
            )
    try:
        check_config(kind, props)
    except ClientConfigError as e:
        raise SparkOptionError(f"kafka.* options: librdkafka's {e}") from None


def _non_negative_int(opts: dict[str, str], key: str, name: str) -> int | None:
    raw = opts.pop(key, None)
    if raw is None:
        return None
    if not raw.strip().isdigit():
        raise SparkOptionError(f"{name} must be a non-negative integer, not {raw!r}")
    return int(raw.strip())


def _refuse_leftovers(opts: dict[str, str], what: str, supported: list[str]) -> None:
    for key in sorted(opts):
        if key in _UNSUPPORTED_SOURCE_OPTIONS:
            raise SparkOptionError(
                f"option {_UNSUPPORTED_SOURCE_OPTIONS[key]!r} is not supported by the "
                f"minikafka {what}"
            )
        if key == "path":
            raise SparkOptionError(
                f"the minikafka {what} takes no path: name the topics with options instead"
            )
        raise SparkOptionError(
            f"unknown option {key!r} for the minikafka {what} "
            f"(supported: {', '.join(supported)}, and kafka.* client properties)"
        )


def parse_offsets_json(text: str, option: str) -> dict[TopicPartition, int]:
    """Kafka's partition offsets JSON, `{"topic":{"0":23,"1":-2}}` -> offsets by partition."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or not data:
            raise ValueError
        out: dict[TopicPartition, int] = {}
        for topic, parts in data.items():
            if not isinstance(parts, dict) or not parts:
                raise ValueError
            for p, offset in parts.items():
                if type(offset) is not int:
                    raise ValueError
                out[TopicPartition(topic, int(p))] = offset
    except ValueError:
        raise SparkOptionError(f"{option}: expected e.g. {_OFFSETS_EXAMPLE}, got {text}") from None
    for tp, offset in out.items():
        if offset < EARLIEST:
            raise SparkOptionError(
                f"{option}: offset {offset} for {tp.topic}-{tp.partition} is not an offset "
                "(use -2 for earliest, -1 for latest)"
            )
    return out


def parse_assign_json(text: str) -> tuple[TopicPartition, ...]:
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or not data:
            raise ValueError
        out: list[TopicPartition] = []
        for topic, parts in data.items():
            if not isinstance(parts, list) or not parts:
                raise ValueError
            for p in parts:
                if type(p) is not int or p < 0:
                    raise ValueError
                out.append(TopicPartition(topic, p))
    except ValueError:
        raise SparkOptionError(f"assign: expected e.g. {_ASSIGN_EXAMPLE}, got {text}") from None
    return tuple(dict.fromkeys(out))


def _subscription(opts: dict[str, str]) -> Subscription:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
    if len(given) != 1:
        names = {"subscribe": "subscribe", "subscribepattern": "subscribePattern"}
        which = ", ".join(names.get(k, k) for k in given) or "none"
        raise SparkOptionError(
            "Exactly one of the options 'subscribe', 'subscribePattern' or 'assign' must be "
            f"specified for the minikafka source (given: {which})"
        )
    key = given[0]
    raw = opts.pop(key)
    if key == "subscribe":
        topics = tuple(dict.fromkeys(t.strip() for t in raw.split(",") if t.strip()))
        if not topics:
            raise SparkOptionError(f"subscribe: no topic to subscribe to in {raw!r}")
        return Subscribe(topics)
    if key == "subscribepattern":
        if not raw.strip():
            raise SparkOptionError("subscribePattern: the pattern is empty")
        try:
            re.compile(raw)
        except re.error as e:
            raise SparkOptionError(f"subscribePattern: {raw!r} is not a pattern: {e}") from None
        return SubscribePattern(raw)
    return Assign(parse_assign_json(raw))


def _offset_spec(opts: dict[str, str], key: str, name: str, default: str) -> OffsetSpec:
    raw = opts.pop(key, default).strip()
    lowered = raw.lower()
    if lowered == "earliest":
        return OffsetSpec("earliest")
    if lowered == "latest":
        return OffsetSpec("latest")
    return OffsetSpec("specific", parse_offsets_json(raw, name))


def _check_specific_covers(spec: OffsetSpec, subscription: Subscription, name: str) -> None:
    if spec.kind != "specific":
        return
    if isinstance(subscription, Assign):
        extra = set(spec.offsets) - set(subscription.partitions)
    else:
        extra = {tp for tp in spec.offsets if not subscription.matches(tp.topic)}
    if extra:
        names = ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(extra))
        raise SparkOptionError(f"{name} names partitions the query does not read: {names}")


_SOURCE_OPTIONS = [
    "kafka.bootstrap.servers",
    "subscribe",
    "subscribePattern",
    "assign",
    "startingOffsets",
    "endingOffsets",
    "maxOffsetsPerTrigger",
    "failOnDataLoss",
    "includeHeaders",
    "kafkaConsumer.pollTimeoutMs",
]


def parse_source_options(options: Mapping[str, str], *, streaming: bool | None) -> SourceOptions:
    """Check the read options; `streaming` None checks what batch and streaming share (the
    schema is asked for before Spark says which kind of query it plans)."""
    opts = _lower(options)
    bootstrap = _bootstrap(opts)
    subscription = _subscription(opts)
    starting = _offset_spec(
        opts, "startingoffsets", "startingOffsets", "latest" if streaming else "earliest"
    )
    has_ending = "endingoffsets" in opts
    ending = _offset_spec(opts, "endingoffsets", "endingOffsets", "latest")
    max_per_trigger = _positive_int(opts, "maxoffsetspertrigger", "maxOffsetsPerTrigger")
    fail_on_data_loss = _bool(opts, "failondataloss", "failOnDataLoss", True)
    include_headers = _bool(opts, "includeheaders", "includeHeaders", False)
    poll_timeout = _positive_int(opts, "kafkaconsumer.polltimeoutms", "kafkaConsumer.pollTimeoutMs")
    props = _kafka_props(opts)
    _refuse_leftovers(opts, "source", _SOURCE_OPTIONS)
    # Kafka's consumer settings librdkafka lacks, which the source honours itself: what one
    # read returns at most (the source's chunk size), how long offsets may take.
    chunk = _positive_int(props, "max.poll.records", "kafka.max.poll.records")
    api_timeout = _positive_int(props, "default.api.timeout.ms", "kafka.default.api.timeout.ms")
    # Kafka's default, which Spark's source reads with (librdkafka's is read_committed): the
    # latest offsets are the high watermarks.
    props.setdefault("isolation.level", "read_uncommitted")
    _check_client_props("consumer", props, _SPARK_OWNED_CONSUMER)

    _check_specific_covers(starting, subscription, "startingOffsets")
    _check_specific_covers(ending, subscription, "endingOffsets")
    if streaming is True:
        if has_ending:
            raise SparkOptionError("endingOffsets is not valid in streaming queries")
    elif streaming is False:
        if max_per_trigger is not None:
            raise SparkOptionError(
                "maxOffsetsPerTrigger applies to streaming queries only (a batch query reads "
                "from startingOffsets to endingOffsets)"
            )
        if starting.kind == "latest":
            raise SparkOptionError(
                "startingOffsets can't be latest for batch queries (there would be nothing "
                "to read); use earliest or specific offsets"
            )
        if ending.kind == "earliest":
            raise SparkOptionError("endingOffsets can't be earliest for batch queries")
        for tp, offset in starting.offsets.items():
            if offset == LATEST:
                raise SparkOptionError(
                    f"startingOffsets for {tp.topic}-{tp.partition} can't be latest (-1) for "
                    "batch queries"
                )
        for tp, offset in ending.offsets.items():
            if offset == EARLIEST:
                raise SparkOptionError(
                    f"endingOffsets for {tp.topic}-{tp.partition} can't be earliest (-2) for "
                    "batch queries"
                )
    return SourceOptions(
        bootstrap_servers=bootstrap,
        subscription=subscription,
        starting=starting,
        ending=ending if streaming is False else None,
        max_offsets_per_trigger=max_per_trigger,
        fail_on_data_loss=fail_on_data_loss,
        include_headers=include_headers,
        poll_timeout_ms=poll_timeout or DEFAULT_POLL_TIMEOUT_MS,
        read_chunk_records=chunk or DEFAULT_READ_CHUNK_RECORDS,
        api_timeout_ms=api_timeout or DEFAULT_API_TIMEOUT_MS,
        consumer_config=props,
    )


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    opts = _lower(options)
    bootstrap = _bootstrap(opts)
    topic = opts.pop("topic", None)
    if topic is not None and not topic.strip():
        raise SparkOptionError("topic: the topic name is empty")
    opts.pop("checkpointlocation", None)  # Spark's own (the streaming query's checkpoint)
    props = _kafka_props(opts)
    _refuse_leftovers(opts, "sink", ["kafka.bootstrap.servers", "topic"])
    # Kafka's max.block.ms: how long a send waits for the topic's metadata; the sink waits.
    max_block_ms = _non_negative_int(props, "max.block.ms", "kafka.max.block.ms")
    acks_name = "request.required.acks" if "request.required.acks" in props else "acks"
    acks = props.setdefault(acks_name, "all")  # Spark's Kafka sink writes with acks=all
    if acks.strip().lower() not in KAFKA_ACKS:
        # librdkafka would take 2..1000, which Kafka's brokers refuse (INVALID_REQUIRED_ACKS)
        raise SparkOptionError(f"kafka.{acks_name} must be all, -1, 0 or 1, not {acks!r}")
    props[acks_name] = acks.strip().lower()
    # Kafka's producer defaults where librdkafka's differ: keyed records go to the partition
    # Kafka's Java producer (and Spark's Kafka sink) would pick, and a record is given up
    # after 2 minutes, not 5 (delivery.timeout.ms is librdkafka's message.timeout.ms).
    props.setdefault("partitioner", "murmur2_random")
    if "message.timeout.ms" not in props:
        props.setdefault("delivery.timeout.ms", "120000")
    _check_client_props("producer", props, _SPARK_OWNED_PRODUCER)
    return SinkOptions(
        bootstrap,
        topic.strip() if topic else None,
        DEFAULT_MAX_BLOCK_MS if max_block_ms is None else max_block_ms,
        props,
    )
