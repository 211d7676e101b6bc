"""`minikafka consume`: print records, like kafka-console-consumer.sh with its default
message formatter and `print.*` properties."""

from __future__ import annotations

import asyncio
import sys
from typing import Any, BinaryIO

import click

from minikafka.cli.client_options import (
    bootstrap_server_option,
    client_kwargs,
    parse_key_values,
    refuse_unknown,
    truthy,
    unescape,
)
from minikafka.client.consumer import Consumer, ConsumerRecord
from minikafka.common import TopicPartition
from minikafka.protocol.errors import KafkaError

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

    def format(self, r: ConsumerRecord) -> bytes:
        columns: list[bytes] = []
        if self.print_timestamp:
            columns.append(f"CreateTime:{r.timestamp}".encode())
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


async def _consume(
    bootstrap_server: str,
    topic: str,
    from_beginning: bool,
    partition: int | None,
    offset: int | str | None,
    max_messages: int | None,
    timeout_ms: int | None,
    formatter: MessageFormatter,
    config: dict[str, Any],
    out: BinaryIO,
    counter: list[int],
) -> None:
    config.setdefault("auto_offset_reset", "earliest" if from_beginning else "latest")
    async with Consumer(bootstrap_server, **config) as consumer:
        if partition is None:
            await consumer.assign_topic(topic, timeout_ms)
        else:
            partitions = await consumer.partitions_for(topic, timeout_ms)
            if partition not in partitions:
                raise click.BadParameter(
                    f"topic {topic} has no partition {partition} (it has {len(partitions)})",
                    param_hint="--partition",
                )
            tp = TopicPartition(topic, partition)
            consumer.assign([tp])
            if offset is None:
                offset = "earliest" if from_beginning else "latest"
            if offset == "earliest":
                consumer.seek_to_beginning(tp)
            elif offset == "latest":
                consumer.seek_to_end(tp)
            else:
                assert isinstance(offset, int)
                consumer.seek(tp, offset)
        while max_messages is None or counter[0] < max_messages:
            records = await consumer.poll(1000 if timeout_ms is None else timeout_ms)
            if not records:
                if timeout_ms is not None:
                    return  # nothing for timeout.ms: done
                continue
            if max_messages is not None:
                records = records[: max_messages - counter[0]]
            out.write(b"".join(formatter.format(r) for r in records))
            out.flush()
            counter[0] += len(records)


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
    help="Any consumer config by its Kafka name, e.g. fetch.max.wait.ms=100.",
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
    if offset is not None and partition is None:
        raise click.UsageError("The partition is required when offset is specified.")
    if offset is not None and from_beginning:
        raise click.UsageError("Options from-beginning and offset cannot be specified together.")
    start = None if offset is None else parse_offset(offset)
    props = parse_key_values(properties, "--property")
    refuse_unknown(props, FORMATTER_PROPERTIES, "--property")
    formatter = MessageFormatter(props)
    config = client_kwargs(
        Consumer,
        parse_key_values(consumer_properties, "--consumer-property"),
        "--consumer-property",
    )
    counter = [0]
    status = 0
    try:
        asyncio.run(
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
        )
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    except KafkaError as e:
        click.echo(f"Error processing message, terminating consumer process: {e}", err=True)
        status = 1
    except BrokenPipeError:
        status = 0  # the reader went away (| head): a normal way to stop
    except KeyboardInterrupt:
        status = 0
    click.echo(f"Processed a total of {counter[0]} messages", err=True)
    sys.exit(status)
