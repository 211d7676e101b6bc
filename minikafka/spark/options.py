"""The Spark source's and sink's options, with spark-sql-kafka's names and meanings, checked
before anything connects (no Spark, no network). `kafka.*` options are the properties of
the source's consumers and the sink's producers, librdkafka's (confluent-kafka), by Kafka's
names; librdkafka checks them (its message for one it refuses).

Spark hands a data source its options with lower-cased keys; every function here reads
them case-insensitively. An option the source or sink does not implement is refused with a
message naming it: a Spark user who passes `fetchOffset.numRetries` learns at once that it
does nothing here, instead of wondering why it has no effect.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from minikafka.client.bootstrap import parse_bootstrap_servers
from minikafka.client.librdkafka import ClientConfigError, check_config
from minikafka.common import TopicPartition

log = logging.getLogger(__name__)

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
_TIMESTAMPS_EXAMPLE = '{"topicA":{"0":1700000000000,"1":1700000000000}}'
_ASSIGN_EXAMPLE = '{"topicA":[0,1],"topicB":[2,4]}'

# spark-sql-kafka options minikafka's source does not implement (refused, not ignored).
_UNSUPPORTED_SOURCE_OPTIONS = {
    # (Spark's offset readers retry their offset requests this many times, this far apart;
    # the driver here retries instead until kafka.default.api.timeout.ms has passed)
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
}
# Spark's warning (KafkaSourceProvider.CUSTOM_GROUP_ID_ERROR_MESSAGE), logged when
# kafka.group.id is set.
CUSTOM_GROUP_ID_WARNING = (
    "Kafka option 'kafka.group.id' has been set on this query, it is not recommended to set "
    "this option. This option is unsafe to use since multiple concurrent queries or sources "
    "using the same group id will interfere with each other as they are part of the same "
    "consumer group. Restarted queries may also suffer interference from the previous run "
    "having the same group id. The user should have only one query per group id."
)
# Spark's default groupIdPrefix: a batch query's, a streaming query's.
BATCH_GROUP_ID_PREFIX = "spark-kafka-relation"
STREAM_GROUP_ID_PREFIX = "spark-kafka-source"
DEFAULT_MAX_TRIGGER_DELAY = "15m"
# Spark's time strings (JavaUtils.timeStringAsMs): a number and a unit, ms if none.
_TIME_UNITS_MS = {
    "us": 0.001,
    "ms": 1,
    "s": 1000,
    "m": 60_000,
    "min": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
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


NoMatchStrategy = Literal["error", "latest"]


@dataclass(frozen=True)
class OffsetSpec:
    """Where a query starts or ends: `earliest`, `latest`, offsets per partition (in which -2
    means earliest and -1 latest) from startingOffsets / endingOffsets; or, from the
    timestamp options, the first offset whose record's timestamp is at or after `timestamp`
    in every partition (`timestamp`), or after a timestamp per partition (`by_timestamp`,
    `offsets` holds the timestamps). A starting timestamp no record reaches is an error or
    the latest offset (`no_match`, startingOffsetsByTimestampStrategy); an ending one is the
    latest offset."""

    kind: Literal["earliest", "latest", "specific", "timestamp", "by_timestamp"]
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    timestamp: int | None = None
    no_match: NoMatchStrategy = "error"


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
    min_offsets_per_trigger: int | None  # streaming queries only
    max_trigger_delay_ms: int  # with min_offsets_per_trigger
    min_partitions: int | None  # split offset ranges into about this many Spark tasks
    max_records_per_partition: int | None  # and so no Spark task reads more offsets
    fail_on_data_loss: bool
    include_headers: bool
    poll_timeout_ms: int
    read_chunk_records: int  # records per Arrow batch at most (kafka.max.poll.records)
    api_timeout_ms: int  # for metadata and offsets (kafka.default.api.timeout.ms)
    consumer_config: Mapping[str, str]  # the executors' librdkafka properties, Kafka's names
    driver_group_id: str  # the group.id of the driver's consumer

    @property
    def driver_consumer_config(self) -> dict[str, str]:
        return {**self.consumer_config, "group.id": self.driver_group_id}


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


def _time_ms(opts: dict[str, str], key: str, name: str, default: str) -> int:
    """Spark's time string (`15m`, `10s`, `500ms`, `500`: milliseconds) in ms."""
    raw = opts.pop(key, default)
    m = re.fullmatch(r"\s*(-?[0-9]+)\s*([a-z]*)\s*", raw.lower())
    if m is None or m.group(2) not in ("", *_TIME_UNITS_MS):
        raise SparkOptionError(
            f"{name}: time must be specified as seconds (s), milliseconds (ms), microseconds "
            f"(us), minutes (m or min), hour (h), or day (d). E.g. 50s, 100ms, or 250us; "
            f"got {raw!r}"
        )
    return int(int(m.group(1)) * _TIME_UNITS_MS[m.group(2) or "ms"])


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


def _partition_ints_json(text: str, option: str, example: str) -> dict[TopicPartition, int]:
    """`{"topic":{"0":23,"1":-2}}` -> an integer per partition, or Spark's usage error."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or not data:
            raise ValueError
        out: dict[TopicPartition, int] = {}
        for topic, parts in data.items():
            if not isinstance(parts, dict) or not parts:
                raise ValueError
            for p, value in parts.items():
                if type(value) is not int:
                    raise ValueError
                out[TopicPartition(topic, int(p))] = value
    except ValueError:
        raise SparkOptionError(f"{option}: expected e.g. {example}, got {text}") from None
    return out


def parse_offsets_json(text: str, option: str) -> dict[TopicPartition, int]:
    """Kafka's partition offsets JSON, `{"topic":{"0":23,"1":-2}}` -> offsets by partition."""
    out = _partition_ints_json(text, option, _OFFSETS_EXAMPLE)
    for tp, offset in out.items():
        if offset < EARLIEST:
            raise SparkOptionError(
                f"{option}: offset {offset} for {tp.topic}-{tp.partition} is not an offset "
                "(use -2 for earliest, -1 for latest)"
            )
    return out


def parse_timestamps_json(text: str, option: str) -> dict[TopicPartition, int]:
    """Kafka-style JSON of a timestamp (ms) per partition, `{"topic":{"0":1700000000000}}`."""
    out = _partition_ints_json(text, option, _TIMESTAMPS_EXAMPLE)
    for tp, ts in out.items():
        if ts < 0:
            raise SparkOptionError(
                f"{option}: timestamp {ts} for {tp.topic}-{tp.partition} is negative "
                "(milliseconds since the epoch)"
            )
    return out


def _single_timestamp(raw: str, option: str) -> int:
    text = raw.strip()
    try:
        ts = int(text)
    except ValueError:
        raise SparkOptionError(f"{option}: Expected a single long value, got {text}") from None
    if ts < 0:
        raise SparkOptionError(f"{option}: timestamp {ts} is negative (ms since the epoch)")
    return ts


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


def _offset_spec(
    opts: dict[str, str],
    which: Literal["starting", "ending"],
    default: str,
    no_match: NoMatchStrategy,
) -> OffsetSpec:
    """Spark's precedence (getKafkaOffsetRangeLimit): <which>Timestamp, then
    <which>OffsetsByTimestamp, then <which>Offsets. All three are popped: the ones not used
    are what Spark's docs say they are, overridden."""
    global_ts = opts.pop(f"{which}timestamp", None)
    by_ts = opts.pop(f"{which}offsetsbytimestamp", None)
    raw = opts.pop(f"{which}offsets", default).strip()
    if global_ts is not None:
        name = f"{which}Timestamp"
        return OffsetSpec(
            "timestamp", timestamp=_single_timestamp(global_ts, name), no_match=no_match
        )
    if by_ts is not None:
        name = f"{which}OffsetsByTimestamp"
        return OffsetSpec(
            "by_timestamp", parse_timestamps_json(by_ts.strip(), name), no_match=no_match
        )
    lowered = raw.lower()
    if lowered == "earliest":
        return OffsetSpec("earliest")
    if lowered == "latest":
        return OffsetSpec("latest")
    return OffsetSpec("specific", parse_offsets_json(raw, f"{which}Offsets"))


def spec_name(spec: OffsetSpec, which: Literal["starting", "ending"]) -> str:
    if spec.kind == "timestamp":
        return f"{which}Timestamp"
    if spec.kind == "by_timestamp":
        return f"{which}OffsetsByTimestamp"
    return f"{which}Offsets"


def _check_offset_limits(starting: OffsetSpec, ending: OffsetSpec) -> None:
    """Spark's checkOffsetLimitValidity: specific start and end offsets (or timestamps) name
    the same partitions, and no start is after its end (-2 / -1 aside)."""
    if starting.kind != ending.kind or starting.kind not in ("specific", "by_timestamp"):
        return
    what = "offsets" if starting.kind == "specific" else "timestamps"
    if set(starting.offsets) != set(ending.offsets):

        def names(spec: OffsetSpec) -> str:
            return ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(spec.offsets))

        raise SparkOptionError(
            f"The starting and ending {what} must name the same partitions: starting "
            f"{names(starting)}; ending {names(ending)}"
        )
    for tp, start in starting.offsets.items():
        end = ending.offsets[tp]
        if start > end and start >= 0 and end >= 0:
            raise SparkOptionError(
                f"The starting {what[:-1]} {start} of {tp.topic}-{tp.partition} is greater "
                f"than its ending {what[:-1]} {end}"
            )


def _check_specific_covers(spec: OffsetSpec, subscription: Subscription, name: str) -> None:
    if spec.kind not in ("specific", "by_timestamp"):
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
    "startingTimestamp",
    "startingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy",
    "endingTimestamp",
    "endingOffsetsByTimestamp",
    "maxOffsetsPerTrigger",
    "minOffsetsPerTrigger",
    "maxTriggerDelay",
    "minPartitions",
    "maxRecordsPerPartition",
    "groupIdPrefix",
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
    no_match = _no_match_strategy(opts)
    has_ending = {
        "endingoffsets": "endingOffsets",
        "endingoffsetsbytimestamp": "endingOffsetsByTimestamp",
        "endingtimestamp": "endingTimestamp",
    }
    ending_given = [name for key, name in has_ending.items() if key in opts]
    starting = _offset_spec(opts, "starting", "latest" if streaming else "earliest", no_match)
    ending = _offset_spec(opts, "ending", "latest", no_match)
    max_per_trigger = _positive_int(opts, "maxoffsetspertrigger", "maxOffsetsPerTrigger")
    min_per_trigger = _positive_int(opts, "minoffsetspertrigger", "minOffsetsPerTrigger")
    delay_given = "maxtriggerdelay" in opts
    max_trigger_delay_ms = _time_ms(
        opts, "maxtriggerdelay", "maxTriggerDelay", DEFAULT_MAX_TRIGGER_DELAY
    )
    min_partitions = _split_option(opts, "minpartitions", "minPartitions")
    max_records_per_partition = _split_option(
        opts, "maxrecordsperpartition", "maxRecordsPerPartition"
    )
    group_id_prefix = opts.pop("groupidprefix", None)
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
    driver_group_id = _group_ids(props, group_id_prefix, streaming)
    _check_client_props("consumer", props, _SPARK_OWNED_CONSUMER)

    _check_specific_covers(starting, subscription, spec_name(starting, "starting"))
    _check_specific_covers(ending, subscription, spec_name(ending, "ending"))
    if (
        min_per_trigger is not None
        and max_per_trigger is not None
        and min_per_trigger > max_per_trigger
    ):
        raise SparkOptionError(
            f"The value of minOffsetPerTrigger({min_per_trigger}) is higher than the "
            f"maxOffsetsPerTrigger({max_per_trigger})."
        )
    if delay_given and min_per_trigger is None:
        # (Spark ignores it then; refused here rather than accepted to no effect)
        raise SparkOptionError(
            "maxTriggerDelay applies only with minOffsetsPerTrigger (how long a trigger may "
            "be skipped waiting for that many new offsets)"
        )
    if streaming is True:
        if ending_given:
            verb = "is" if len(ending_given) == 1 else "are"
            raise SparkOptionError(
                f"{', '.join(ending_given)} {verb} not valid in streaming queries (a stream "
                "has no end)"
            )
    elif streaming is False:
        for name, value in (
            ("maxOffsetsPerTrigger", max_per_trigger),
            ("minOffsetsPerTrigger", min_per_trigger),
        ):
            if value is not None:
                raise SparkOptionError(
                    f"{name} applies to streaming queries only (a batch query reads from "
                    "startingOffsets to endingOffsets)"
                )
        if starting.kind == "latest":
            raise SparkOptionError(
                "startingOffsets can't be latest for batch queries (there would be nothing "
                "to read); use earliest or specific offsets"
            )
        if ending.kind == "earliest":
            raise SparkOptionError("endingOffsets can't be earliest for batch queries")
        if starting.kind == "specific":
            for tp, offset in starting.offsets.items():
                if offset == LATEST:
                    raise SparkOptionError(
                        f"startingOffsets for {tp.topic}-{tp.partition} can't be latest (-1) "
                        "for batch queries"
                    )
        if ending.kind == "specific":
            for tp, offset in ending.offsets.items():
                if offset == EARLIEST:
                    raise SparkOptionError(
                        f"endingOffsets for {tp.topic}-{tp.partition} can't be earliest (-2) "
                        "for batch queries"
                    )
        _check_offset_limits(starting, ending)
    return SourceOptions(
        bootstrap_servers=bootstrap,
        subscription=subscription,
        starting=starting,
        ending=ending if streaming is False else None,
        max_offsets_per_trigger=max_per_trigger,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=max_trigger_delay_ms,
        min_partitions=min_partitions,
        max_records_per_partition=max_records_per_partition,
        fail_on_data_loss=fail_on_data_loss,
        include_headers=include_headers,
        poll_timeout_ms=poll_timeout or DEFAULT_POLL_TIMEOUT_MS,
        read_chunk_records=chunk or DEFAULT_READ_CHUNK_RECORDS,
        api_timeout_ms=api_timeout or DEFAULT_API_TIMEOUT_MS,
        consumer_config=props,
        driver_group_id=driver_group_id,
    )


def _no_match_strategy(opts: dict[str, str]) -> NoMatchStrategy:
    raw = opts.pop("startingoffsetsbytimestampstrategy", "error")
    value = raw.strip().lower()
    if value == "error":
        return "error"
    if value == "latest":
        return "latest"
    raise SparkOptionError(
        f"startingOffsetsByTimestampStrategy must be error or latest, not {raw!r}"
    )


def _split_option(opts: dict[str, str], key: str, name: str) -> int | None:
    """minPartitions or maxRecordsPerPartition, with Spark's message for one not above 0."""
    raw = opts.pop(key, None)
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise SparkOptionError(f"{name} must be an integer, not {raw!r}") from None
    if value <= 0:
        raise SparkOptionError(f"{name} must be positive")
    return value


def _group_ids(props: dict[str, str], prefix: str | None, streaming: bool | None) -> str:
    """Spark's consumer group ids: the executors' consumers use kafka.group.id if given
    (with Spark's warning), else `<groupIdPrefix>-<uuid>-executor`, unique to the query;
    the driver's, kafka.group.id or `<groupIdPrefix>-<uuid>-driver`. Sets the executors'
    in `props`; returns the driver's. The source assigns partitions itself and commits
    nothing, so the group id is what its consumers tell the brokers (FindCoordinator) and
    no more; a shared one still names the same group."""
    if "group.id" in props:
        log.warning(CUSTOM_GROUP_ID_WARNING)
        if prefix is not None:
            log.warning(
                "Option groupIdPrefix will be ignored as option kafka.group.id has been set."
            )
        return props["group.id"]
    if prefix is not None and not prefix.strip():
        raise SparkOptionError("groupIdPrefix: the prefix is empty")
    if prefix is None:
        prefix = STREAM_GROUP_ID_PREFIX if streaming else BATCH_GROUP_ID_PREFIX
    unique = f"{prefix}-{uuid.uuid4()}"
    props["group.id"] = f"{unique}-executor"
    return f"{unique}-driver"


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
