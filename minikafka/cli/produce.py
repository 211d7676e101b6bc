"""`minikafka produce`: one record per stdin line, like kafka-console-producer.sh.

Every failed record is reported on stderr with its line number, and the exit status is
non-zero if any record failed, so scripts can tell an incomplete load from a complete one.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import threading
from collections.abc import AsyncIterator
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
from minikafka.client.accumulator import RecordMetadata
from minikafka.client.errors import KafkaTimeoutError
from minikafka.client.producer import Producer
from minikafka.protocol.errors import KafkaError, UnknownTopicOrPartitionError

READER_PROPERTIES = {"parse.key", "key.separator", "ignore.error"}


async def read_lines(stream: BinaryIO) -> AsyncIterator[bytes]:
    """Lines of a blocking stream, read by a daemon thread in large chunks (a thread that
    blocks on a terminal must not keep the process alive after an error or Ctrl-C)."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes | BaseException] = asyncio.Queue(maxsize=16)
    read = getattr(stream, "read1", stream.read)

    def pump() -> None:
        while True:
            try:
                chunk: bytes | BaseException = read(1 << 16)
            except BaseException as e:
                chunk = e
            try:
                asyncio.run_coroutine_threadsafe(chunks.put(chunk), loop).result()
            except RuntimeError:
                return  # the loop is gone
            if not chunk or isinstance(chunk, BaseException):
                return

    threading.Thread(target=pump, name="stdin-reader", daemon=True).start()
    pending = b""
    while True:
        chunk = await chunks.get()
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


# A send that fails with these before queuing its record failed on the topic's metadata.
_NO_METADATA = (KafkaTimeoutError, UnknownTopicOrPartitionError)


class _Outcome:
    def __init__(self) -> None:
        self.sent = 0
        self.failed = 0


def _describe(data: bytes | None) -> str:
    return "null" if data is None else f"{len(data)} bytes"


async def _produce(
    bootstrap_server: str,
    topic: str,
    props: dict[str, str],
    config: dict[str, Any],
    sync: bool,
    stream: BinaryIO,
    outcome: _Outcome,
) -> None:
    parse_key = truthy(props, "parse.key")
    ignore_error = truthy(props, "ignore.error")
    separator = unescape(props.get("key.separator", "\t")).encode()

    def report(line_no: int, key: bytes | None, value: bytes | None, error: object) -> None:
        outcome.failed += 1
        click.echo(
            f"Error when sending message (line {line_no}) to topic {topic} with key: "
            f"{_describe(key)}, value: {_describe(value)} with error: {error}",
            err=True,
        )

    def on_done(
        line_no: int, key: bytes | None, value: bytes | None, fut: asyncio.Future[RecordMetadata]
    ) -> None:
        if fut.cancelled():
            report(line_no, key, value, "cancelled")
        elif (error := fut.exception()) is not None:
            report(line_no, key, value, error)
        else:
            outcome.sent += 1

    async with Producer(bootstrap_server, **config) as producer:
        line_no = 0
        lines = read_lines(stream)
        async for line in lines:
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
            fut = await producer.send(topic, value, key=key)
            if fut.done() and isinstance(fut.exception(), _NO_METADATA):
                # Refused before it was queued because the topic's metadata never came (no
                # broker answers, or no such topic): every later line would wait max.block.ms
                # for the same answer. Say it once and count what is left unsent.
                unsent = 1
                async for _ in lines:
                    unsent += 1
                outcome.failed += unsent
                click.echo(
                    f"Error: {fut.exception()}; stopped at line {line_no}: "
                    f"{unsent} record{'s' if unsent > 1 else ''} from there on not sent",
                    err=True,
                )
                break
            fut.add_done_callback(functools.partial(on_done, line_no, key, value))
            if sync:
                await asyncio.wait([fut])
        await producer.flush()


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
@click.option("--batch-size", type=click.IntRange(min=0), default=16384, show_default=True)
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
    help="Any producer config by its Kafka name, e.g. delivery.timeout.ms=5000.",
)
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
    props = parse_key_values(properties, "--property")
    refuse_unknown(props, READER_PROPERTIES, "--property")
    config: dict[str, Any] = {
        "acks": acks,
        "batch_size": batch_size,
        "linger_ms": linger_ms,
        "request_timeout_ms": request_timeout_ms,
        "retries": retries,
        "retry_backoff_ms": retry_backoff_ms,
    }
    config.update(
        client_kwargs(
            Producer,
            parse_key_values(producer_properties, "--producer-property"),
            "--producer-property",
        )
    )
    # Keep Kafka's rule delivery.timeout.ms >= linger.ms + request.timeout.ms satisfiable when
    # only the latter two are raised on the command line.
    floor = config["linger_ms"] + config["request_timeout_ms"]
    config.setdefault("delivery_timeout_ms", max(120000, floor))
    outcome = _Outcome()
    try:
        asyncio.run(
            _produce(bootstrap_server, topic, props, config, sync, sys.stdin.buffer, outcome)
        )
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    except KafkaError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    if outcome.failed:
        click.echo(
            f"{outcome.failed} of {outcome.failed + outcome.sent} records were not sent",
            err=True,
        )
        sys.exit(1)
