"""`minikafka consume`: print records, like kafka-console-consumer.sh with its default
message formatter and `print.*` properties, on librdkafka (confluent-kafka) over Kafka's
protocol. Partitions are assigned, not subscribed: there are no consumer groups yet."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, BinaryIO

import click

from minikafka.cli.client_options import (
    bootstrap_server_option,
    parse_key_values,
    refuse_unknown,
    require_client,
    truthy,
    unescape,
)
from minikafka.client.librdkafka import (
    ClientConfigError,
    TopicUnavailableError,
    client_config,
    consume_ready,
    new_consumer,
    position,
    wait_for_topic,
)

FORMATTER_PROPERTIES = {
    "print.timestamp",
    "print.partition",
    "print.offset",
    "print.headers",
    "print.key",
    "print.value",
    "key.separator",
    "line.separator",
    "headers.separator",
    "null.literal",
}
# librdkafka's timestamp types, as Kafka's formatter names them.
TIMESTAMP_TYPES = {0: "NO_TIMESTAMP", 1: "CreateTime", 2: "LogAppendTime"}
MAX_RECORDS_PER_READ = 500  # Kafka's max.poll.records
METADATA_TIMEOUT_MS = 60000  # Kafka's default.api.timeout.ms, for the topic's metadata


@dataclass(frozen=True, slots=True)
class Record:
    """What the formatter prints of one record."""

    timestamp_type: int
    timestamp: int
    partition: int
    offset: int
    headers: list[tuple[str, bytes | None]] | None
    key: bytes | None
    value: bytes | None

    @classmethod
    def of(cls, msg: Any) -> Record:
        partition, offset = position(msg)
        ts_type, ts = msg.timestamp()
        return cls(ts_type, ts, partition, offset, msg.headers(), msg.key(), msg.value())


class MessageFormatter:
    """Kafka's DefaultMessageFormatter: optional `CreateTime:<ts>`, `Partition:<p>`,
    `Offset:<o>`, headers and key, separated by key.separator, then the value and
    line.separator."""

    def __init__(self, props: dict[str, str]) -> None:
        self.print_timestamp = truthy(props, "print.timestamp")
        self.print_partition = truthy(props, "print.partition")
        self.print_offset = truthy(props, "print.offset")
        self.print_headers = truthy(props, "print.headers")
        self.print_key = truthy(props, "print.key")
        self.print_value = truthy(props, "print.value", default=True)
        self.key_separator = unescape(props.get("key.separator", "\t")).encode()
        self.line_separator = unescape(props.get("line.separator", "\n")).encode()
        self.headers_separator = unescape(props.get("headers.separator", ",")).encode()
        self.null_literal = props.get("null.literal", "null").encode()

    def format(self, r: Record) -> bytes:
        columns: list[bytes] = []
        if self.print_timestamp:
            kind = TIMESTAMP_TYPES.get(r.timestamp_type, "NO_TIMESTAMP")
            columns.append(
                b"NO_TIMESTAMP" if kind == "NO_TIMESTAMP" else f"{kind}:{r.timestamp}".encode()
            )
        if self.print_partition:
            columns.append(f"Partition:{r.partition}".encode())
        if self.print_offset:
            columns.append(f"Offset:{r.offset}".encode())
        if self.print_headers:
            if r.headers:
                columns.append(
                    self.headers_separator.join(
                        k.encode() + b":" + (self.null_literal if v is None else v)
                        for k, v in r.headers
                    )
                )
            else:
                columns.append(b"NO_HEADERS")
        if self.print_key:
            columns.append(self.null_literal if r.key is None else r.key)
        if self.print_value:
            columns.append(self.null_literal if r.value is None else r.value)
        return self.key_separator.join(columns) + self.line_separator


def parse_offset(text: str) -> int | str:
    if text in ("earliest", "latest"):
        return text
    if text.isdigit():
        return int(text)
    raise click.BadParameter(
        f"The provided offset value '{text}' is incorrect. Valid values are 'earliest', "
        "'latest', or a non-negative long.",
        param_hint="--offset",
    )


class ConsumeError(Exception):
    """What ends the command with status 1 (Kafka's "Error processing message")."""


def _consume(
    bootstrap_server: str,
    topic: str,
    from_beginning: bool,
    partition: int | None,
    offset: int | str | None,
    max_messages: int | None,
    timeout_ms: int | None,
    formatter: MessageFormatter,
    props: dict[str, str],
    out: BinaryIO,
    counter: list[int],
) -> None:
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, TopicPartition

    reset = "earliest" if from_beginning else "latest"
    config = {
        "auto.offset.reset": reset,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        # Kafka's consumer default: consuming from a topic that does not exist creates it
        # when the brokers auto-create topics.
        "allow.auto.create.topics": True,
        **props,
    }
    consumer = new_consumer(client_config(bootstrap_server, config))
    try:
        auto_create = str(config["allow.auto.create.topics"]).lower() == "true"
        try:
            meta = wait_for_topic(
                consumer, topic, METADATA_TIMEOUT_MS / 1000, auto_create=auto_create
            )
        except TopicUnavailableError as e:
            raise ConsumeError(str(e)) from None
        if partition is None:
            start = OFFSET_BEGINNING if from_beginning else OFFSET_END
            consumer.assign([TopicPartition(topic, p, start) for p in sorted(meta.partitions)])
        else:
            if partition not in meta.partitions:
                raise click.BadParameter(
                    f"topic {topic} has no partition {partition} (it has {len(meta.partitions)})",
                    param_hint="--partition",
                )
            if offset is None:
                offset = reset
            if offset == "earliest":
                at = OFFSET_BEGINNING
            elif offset == "latest":
                at = OFFSET_END
            else:
                assert isinstance(offset, int)
                at = offset
            consumer.assign([TopicPartition(topic, partition, at)])
        wait_s = 1.0 if timeout_ms is None else timeout_ms / 1000
        while max_messages is None or counter[0] < max_messages:
            messages = consume_ready(consumer, MAX_RECORDS_PER_READ, wait_s)
            if not messages:
                if timeout_ms is not None:
                    return  # nothing for timeout.ms: done
                continue
            records = []
            for msg in messages:
                err = msg.error()
                if err is None:
                    records.append(Record.of(msg))
                elif err.fatal():
                    raise ConsumeError(f"{err.name()}: {err.str()}")
                # Anything else (a broker down, a leader moving) librdkafka retries.
            if max_messages is not None:
                records = records[: max_messages - counter[0]]
            out.write(b"".join(formatter.format(r) for r in records))
            out.flush()
            counter[0] += len(records)
    finally:
        consumer.close()


@click.command("consume")
@bootstrap_server_option
@click.option("--topic", required=True, help="The topic to consume.")
@click.option(
    "--from-beginning",
    is_flag=True,
    help="Start at the earliest offset rather than the latest.",
)
@click.option("--partition", type=click.IntRange(min=0), help="Consume only this partition.")
@click.option(
    "--offset",
    metavar="OFFSET|earliest|latest",
    help="With --partition: where to start (default latest, or earliest with --from-beginning).",
)
@click.option("--max-messages", type=click.IntRange(min=1), help="Exit after this many records.")
@click.option(
    "--timeout-ms",
    type=click.IntRange(min=0),
    help="Exit when no record arrives for this long.",
)
@click.option(
    "--property",
    "properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="Formatter settings: print.key, print.offset, print.partition, print.timestamp, "
    "print.headers, print.value (true/false), key.separator, line.separator, "
    "headers.separator, null.literal.",
)
@click.option(
    "--consumer-property",
    "consumer_properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="Any consumer property by its Kafka name, as librdkafka takes it, e.g. "
    "fetch.wait.max.ms=100.",
)
def consume(
    bootstrap_server: str,
    topic: str,
    from_beginning: bool,
    partition: int | None,
    offset: str | None,
    max_messages: int | None,
    timeout_ms: int | None,
    properties: tuple[str, ...],
    consumer_properties: tuple[str, ...],
) -> None:
    """Print records of a topic, one per line (like kafka-console-consumer.sh)."""
    require_client("minikafka consume runs")
    if offset is not None and partition is None:
        raise click.UsageError("The partition is required when offset is specified.")
    if offset is not None and from_beginning:
        raise click.UsageError("Options from-beginning and offset cannot be specified together.")
    start = None if offset is None else parse_offset(offset)
    props = parse_key_values(properties, "--property")
    refuse_unknown(props, FORMATTER_PROPERTIES, "--property")
    formatter = MessageFormatter(props)
    config = parse_key_values(consumer_properties, "--consumer-property")
    counter = [0]
    status = 0
    try:
        _consume(
            bootstrap_server,
            topic,
            from_beginning,
            partition,
            start,
            max_messages,
            timeout_ms,
            formatter,
            config,
            sys.stdout.buffer,
            counter,
        )
    except ClientConfigError as e:
        raise click.BadParameter(str(e), param_hint="--consumer-property") from None
    except ConsumeError as e:
        click.echo(f"Error processing message, terminating consumer process: {e}", err=True)
        status = 1
    except BrokenPipeError:
        status = 0  # the reader went away (| head): a normal way to stop
    except KeyboardInterrupt:
        status = 0
    click.echo(f"Processed a total of {counter[0]} messages", err=True)
    sys.exit(status)
