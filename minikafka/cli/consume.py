"""`minikafka consume`: print records, like kafka-console-consumer.sh with its default
message formatter and `print.*` properties, on librdkafka (confluent-kafka) over Kafka's
protocol.

Without `--group` the consumer assigns itself the topic's partitions (or the one given) and
commits nothing. With `--group G` it subscribes to the topic as a member of consumer group G
(the brokers' group coordinator splits the partitions among G's members) and commits as it
goes, at least once: a record's offset is stored only once the record has been written to
stdout (enable.auto.offset.store=false), librdkafka commits the stored offsets every
auto.commit.interval.ms and at close, so the next `consume --group G` goes on where this one
stopped. Where a partition without a committed offset starts is auto.offset.reset: earliest
with `--from-beginning`, else latest (as kafka-console-consumer.sh)."""

from __future__ import annotations

import contextlib
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
from minikafka.cli.signals import handles_sigterm, interrupt_status, interrupts_deferred
from minikafka.client.librdkafka import (
    AllBrokersDown,
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
    group: str | None = None,
) -> None:
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaException, TopicPartition

    reset = "earliest" if from_beginning else "latest"
    config: dict[str, object] = {
        "auto.offset.reset": reset,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        # Kafka's consumer default: consuming from a topic that does not exist creates it
        # when the brokers auto-create topics.
        "allow.auto.create.topics": True,
    }
    if group is not None:
        # A member of the group: librdkafka commits the offsets this command stores (those
        # of records already written) every auto.commit.interval.ms, and at close.
        config.update(
            {"group.id": group, "enable.auto.commit": True, "client.id": "console-consumer"}
        )
    config.update(props)
    if group is not None:
        config["enable.auto.offset.store"] = False  # stored only once written: at least once
    down = AllBrokersDown()
    consumer = new_consumer(client_config(bootstrap_server, {"error_cb": down, **config}))
    try:
        auto_create = str(config["allow.auto.create.topics"]).lower() == "true"
        # --timeout-ms bounds the whole wait, the metadata's included (Kafka's consumer
        # fetches it inside the poll that --timeout-ms bounds).
        wait_ms = METADATA_TIMEOUT_MS if timeout_ms is None else timeout_ms
        try:
            meta = wait_for_topic(consumer, topic, wait_ms / 1000, auto_create=auto_create)
        except TopicUnavailableError as e:
            if e.timed_out:
                consumer.poll(0)  # serves error_cb: were all brokers down, and why?
                unreachable = down.unreachable(bootstrap_server, wait_ms)
                if unreachable is not None:
                    raise ConsumeError(unreachable) from None
            raise ConsumeError(str(e)) from None
        if group is not None:
            # The group's committed offsets say where each partition starts (else
            # auto.offset.reset).
            consumer.subscribe([topic])
        elif partition is None:
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
            kept = []
            for msg in messages:
                err = msg.error()
                if err is None:
                    kept.append(msg)
                elif err.fatal():
                    raise ConsumeError(f"{err.name()}: {err.str()}")
                # Anything else (a broker down, a leader moving) librdkafka retries.
            if max_messages is not None:
                kept = kept[: max_messages - counter[0]]
            # Printed, counted and stored together: a Ctrl-C or SIGTERM between them would
            # leave printed records out of the total (or of the group's next commit).
            with interrupts_deferred():
                out.write(b"".join(formatter.format(Record.of(msg)) for msg in kept))
                counter[0] += len(kept)
                out.flush()
                if group is not None:
                    # Written: each partition's last record is stored (its offset + 1) for
                    # the next commit. A partition revoked meanwhile refuses it; its new owner
                    # reads these records again (at least once).
                    last = {msg.partition(): msg for msg in kept}
                    for msg in last.values():
                        with contextlib.suppress(KafkaException):
                            consumer.store_offsets(message=msg)
    finally:
        consumer.close()  # in a group: commits the stored offsets, then leaves


@click.command("consume")
@bootstrap_server_option
@click.option("--topic", required=True, help="The topic to consume.")
@click.option(
    "--from-beginning",
    is_flag=True,
    help="Start at the earliest offset rather than the latest (with --group: in the "
    "partitions the group has no committed offset for).",
)
@click.option(
    "--group",
    help="Consume as a member of this consumer group (subscribe, and commit the offsets of "
    "the records printed) instead of assigning the partitions.",
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
@handles_sigterm
def consume(
    bootstrap_server: str,
    topic: str,
    from_beginning: bool,
    group: str | None,
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
    if group is not None:
        # As kafka-console-consumer.sh: every group id given must be the same one.
        given = {group, config.get("group.id", group)}
        if len(given) > 1:
            raise click.UsageError(
                "The group ids provided in different places (directly using '--group' or via "
                "'--consumer-property') do not match. Detected group ids: "
                + ", ".join(f"'{g}'" for g in (group, config["group.id"]))
            )
        if partition is not None:
            raise click.UsageError("Options group and partition cannot be specified together.")
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
            group,
        )
    except ClientConfigError as e:
        raise click.BadParameter(str(e), param_hint="--consumer-property") from None
    except ConsumeError as e:
        click.echo(f"Error processing message, terminating consumer process: {e}", err=True)
        status = 1
    except BrokenPipeError:
        status = 0  # the reader went away (| head): a normal way to stop
    except KeyboardInterrupt as e:
        # The consumer is closed (in a group: committed and left) before this.
        status = interrupt_status(e, on_ctrl_c=0)
    click.echo(f"Processed a total of {counter[0]} messages", err=True)
    sys.exit(status)
