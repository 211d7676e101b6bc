"""`minikafka produce`: one record per stdin line, like kafka-console-producer.sh, on
librdkafka (confluent-kafka) over Kafka's protocol.

Every failed record is reported on stderr with its line number, and the exit status is
non-zero if any record failed, so scripts can tell an incomplete load from a complete one.
"""

from __future__ import annotations

import functools
import queue
import sys
import threading
from collections.abc import Iterator
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
from minikafka.cli.signals import handles_sigterm, interrupt_status
from minikafka.client.librdkafka import (
    AllBrokersDown,
    ClientConfigError,
    TopicUnavailableError,
    client_config,
    new_producer,
    wait_for_topic,
)

READER_PROPERTIES = {"parse.key", "key.separator", "ignore.error"}
# Kafka's producer waits this long for a topic's metadata (max.block.ms); librdkafka has no
# such property, so the command does that wait itself.
MAX_BLOCK_MS = "max.block.ms"
DEFAULT_MAX_BLOCK_MS = 60000
FLUSH_ON_INTERRUPT_S = 10.0
POLL_INTERVAL_S = 0.1  # how often delivery reports are served while stdin is quiet


def read_lines(stream: BinaryIO) -> Iterator[bytes | None]:
    """Lines of a blocking stream, read by a daemon thread in large chunks (a thread that
    blocks on a terminal must not keep the process alive after an error or Ctrl-C); None
    whenever POLL_INTERVAL_S passes without one, so the caller can serve delivery reports."""
    chunks: queue.Queue[bytes | BaseException] = queue.Queue(maxsize=16)
    read = getattr(stream, "read1", stream.read)

    def pump() -> None:
        while True:
            try:
                chunk: bytes | BaseException = read(1 << 16)
            except BaseException as e:
                chunk = e
            chunks.put(chunk)
            if not chunk or isinstance(chunk, BaseException):
                return

    threading.Thread(target=pump, name="stdin-reader", daemon=True).start()
    pending = b""
    while True:
        try:
            chunk = chunks.get(timeout=POLL_INTERVAL_S)
        except queue.Empty:
            yield None
            continue
        if isinstance(chunk, BaseException):
            raise chunk
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line[:-1] if line.endswith(b"\r") else line
    if pending:
        yield pending


class _Outcome:
    def __init__(self) -> None:
        self.sent = 0
        self.failed = 0
        self.stopped = False  # at the first line: what was not sent is not known


def _describe(data: bytes | None) -> str:
    return "null" if data is None else f"{len(data)} bytes"


def _produce(
    bootstrap_server: str,
    topic: str,
    props: dict[str, str],
    config: dict[str, Any],
    max_block_ms: int,
    sync: bool,
    stream: BinaryIO,
    outcome: _Outcome,
) -> None:
    parse_key = truthy(props, "parse.key")
    ignore_error = truthy(props, "ignore.error")
    separator = unescape(props.get("key.separator", "\t")).encode()
    down = AllBrokersDown()
    producer = new_producer(client_config(bootstrap_server, {"error_cb": down, **config}))

    def report(line_no: int, key: bytes | None, value: bytes | None, error: object) -> None:
        outcome.failed += 1
        click.echo(
            f"Error when sending message (line {line_no}) to topic {topic} with key: "
            f"{_describe(key)}, value: {_describe(value)} with error: {error}",
            err=True,
        )

    def on_delivery(line_no: int, key: bytes | None, value: bytes, err: Any, msg: Any) -> None:
        if err is not None:
            report(line_no, key, value, f"{err.name()}: {err.str()}")
        else:
            outcome.sent += 1

    auto_create = str(config.get("allow.auto.create.topics", "true")).lower() == "true"
    try:
        lines = read_lines(stream)
        line_no = 0
        for line in lines:
            producer.poll(0)  # delivery reports
            if line is None:
                continue
            if line_no == 0:
                # As Kafka's producer blocks its first send on the topic's metadata (up to
                # max.block.ms): a topic that never comes fails once, not once per line.
                try:
                    wait_for_topic(producer, topic, max_block_ms / 1000, auto_create=auto_create)
                except TopicUnavailableError as e:
                    why = str(e)
                    if e.timed_out:
                        producer.poll(0)  # serves error_cb: were all brokers down, and why?
                        why = down.unreachable(bootstrap_server, max_block_ms) or why
                    # The rest of stdin is not read: a terminal would keep the command waiting.
                    outcome.stopped = True
                    click.echo(f"Error: {why}; stopped at line 1: nothing sent", err=True)
                    return
            line_no += 1
            key: bytes | None = None
            value: bytes = line
            if parse_key:
                k, sep, v = line.partition(separator)
                if sep:
                    key, value = k, v
                elif not ignore_error:
                    report(line_no, None, line, f"No key separator found on line {line_no}")
                    continue
            callback = functools.partial(on_delivery, line_no, key, value)
            while True:
                try:
                    producer.produce(topic, value, key, on_delivery=callback)
                    break
                except BufferError:  # queue.buffering.max.messages reached: wait for room
                    producer.poll(POLL_INTERVAL_S)
            if sync:
                producer.flush()
        while producer.flush(POLL_INTERVAL_S) > 0:
            pass
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM: as Kafka's tool closes its producer, the records read so far
        # are still sent (for a while), and the ones that fail are reported.
        producer.flush(FLUSH_ON_INTERRUPT_S)
        raise


@click.command("produce")
@bootstrap_server_option
@click.option("--topic", required=True, help="The topic to produce to.")
@click.option(
    "--acks",
    type=click.Choice(["all", "-1", "0", "1"]),
    default="1",
    show_default=True,
    help="Acknowledgements the leader waits for before answering.",
)
@click.option("--batch-size", type=click.IntRange(min=1), default=16384, show_default=True)
@click.option("--linger-ms", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--request-timeout-ms", type=click.IntRange(min=1), default=30000, show_default=True)
@click.option(
    "--message-send-max-retries",
    "retries",
    type=click.IntRange(min=0),
    default=2147483647,
    show_default=True,
)
@click.option("--retry-backoff-ms", type=click.IntRange(min=0), default=100, show_default=True)
@click.option("--sync", is_flag=True, help="Wait for each record's acknowledgement in turn.")
@click.option(
    "--property",
    "properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="Line reader settings: parse.key=true, key.separator=<sep> (tab), ignore.error=true.",
)
@click.option(
    "--producer-property",
    "producer_properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="Any producer property by its Kafka name, as librdkafka takes it (e.g. "
    "delivery.timeout.ms=5000, enable.idempotence=true), and max.block.ms: how long the "
    "first record waits for the topic's metadata (default 60000).",
)
@handles_sigterm
def produce(
    bootstrap_server: str,
    topic: str,
    acks: str,
    batch_size: int,
    linger_ms: int,
    request_timeout_ms: int,
    retries: int,
    retry_backoff_ms: int,
    sync: bool,
    properties: tuple[str, ...],
    producer_properties: tuple[str, ...],
) -> None:
    """Send each line of stdin as a record (like kafka-console-producer.sh)."""
    require_client("minikafka produce runs")
    props = parse_key_values(properties, "--property")
    refuse_unknown(props, READER_PROPERTIES, "--property")
    config: dict[str, Any] = {
        "acks": acks,
        "batch.size": batch_size,
        "linger.ms": linger_ms,
        "request.timeout.ms": request_timeout_ms,
        "retries": retries,
        "retry.backoff.ms": retry_backoff_ms,
        # Kafka's default (librdkafka's is 300 s), kept at least linger.ms +
        # request.timeout.ms as Kafka requires, when only those two are raised.
        "delivery.timeout.ms": max(120000, linger_ms + request_timeout_ms),
    }
    config.update(parse_key_values(producer_properties, "--producer-property"))
    max_block_ms = _max_block_ms(config.pop(MAX_BLOCK_MS, DEFAULT_MAX_BLOCK_MS))
    outcome = _Outcome()
    try:
        _produce(
            bootstrap_server,
            topic,
            props,
            config,
            max_block_ms,
            sync,
            sys.stdin.buffer,
            outcome,
        )
    except ClientConfigError as e:
        raise click.BadParameter(str(e), param_hint="--producer-property") from None
    except KeyboardInterrupt as e:
        sys.exit(interrupt_status(e, on_ctrl_c=130))
    if outcome.stopped:
        sys.exit(1)
    if outcome.failed:
        click.echo(
            f"{outcome.failed} of {outcome.failed + outcome.sent} records were not sent",
            err=True,
        )
        sys.exit(1)


def _max_block_ms(value: object) -> int:
    try:
        ms = int(str(value))
    except ValueError:
        ms = -1
    if ms < 0:
        raise click.BadParameter(
            f"{MAX_BLOCK_MS} must be a non-negative integer, not {value!r}",
            param_hint="--producer-property",
        )
    return ms
