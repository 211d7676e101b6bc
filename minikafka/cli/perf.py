"""`minikafka perf produce|consume|e2e`: Kafka's perf tools (kafka-producer-perf-test,
kafka-consumer-perf-test, EndToEndLatency) with their output lines on stdout, exactly; the
settings and the cluster shape go to stderr as one header line. The measuring is in
`minikafka/perf/`."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import click
import uvloop

from minikafka.cli.client_options import bootstrap_server_option, parse_key_values
from minikafka.cli.signals import interrupt_status, sigterm_as_interrupt
from minikafka.perf.consume import (
    CONSUMER_DETAILED_HEADER,
    CONSUMER_HEADER,
    DEFAULT_TIMEOUT_MS,
    PERF_CONSUMER_DEFAULTS,
    ConsumerProgress,
    run_consumer_perf,
)
from minikafka.perf.end_to_end import (
    FETCH_WAIT_MAX_MS,
    EndToEndError,
    e2e_consumer_config,
    run_end_to_end_latency,
)
from minikafka.perf.histogram import MissingDependencyError, require_hdrhistogram
from minikafka.perf.produce import require_librdkafka, run_producer_perf
from minikafka.perf.shape import TopicShape
from minikafka.protocol.errors import KafkaError

T = TypeVar("T")


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run on uvloop (as the brokers do); turn the usual failures into one-line errors."""
    try:
        with sigterm_as_interrupt(), asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(coro)
    except ValueError as e:  # ClientConfigError too: a property librdkafka refuses
        raise click.UsageError(str(e)) from None
    except (KafkaError, EndToEndError) as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(1)
    except Exception as e:
        message = _librdkafka_error(e)  # the topic does not exist, ...
        if message is None:
            raise
        click.echo(f"Error: {message}", err=True)
        sys.exit(1)
    except KeyboardInterrupt as e:
        sys.exit(interrupt_status(e, on_ctrl_c=130))


def _librdkafka_error(e: BaseException) -> str | None:
    """librdkafka's error as one line, or None for any other exception."""
    try:
        from confluent_kafka import KafkaException
    except ImportError:
        return None
    if not isinstance(e, KafkaException):
        return None
    error = e.args[0]
    return f"{error.name()}: {error.str()}"


def _require(*packages: Callable[[], None]) -> None:
    """Each `require_*` check, as a one-line error naming the pip command."""
    try:
        for require in packages:
            require()
    except MissingDependencyError as e:
        raise click.ClickException(str(e)) from None


def _client_props(
    items: tuple[str, ...], option: str, bootstrap_server: str
) -> tuple[dict[str, str], str]:
    """Properties from a repeatable k=v option, and the bootstrap servers (a
    `bootstrap.servers` property wins over --bootstrap-server, as Kafka's tools take it).
    An item without `=` is a usage error naming `option`; librdkafka checks the names and
    values when the client is made."""
    props = parse_key_values(items, option)
    return props, props.pop("bootstrap.servers", bootstrap_server)


def _acks_text(acks: object) -> str:
    return "all" if str(acks).strip().lower() in ("all", "-1") else str(acks).strip()


# librdkafka's defaults for what the header line shows (its CONFIGURATION.md).
_RDKAFKA_PRODUCER_DEFAULTS = {"acks": "all", "batch.size": "1000000", "linger.ms": "5"}


def _rdkafka_producer_settings(config: dict[str, str]) -> str:
    merged = {**_RDKAFKA_PRODUCER_DEFAULTS, **config}
    return (
        f"acks={_acks_text(merged['acks'])}, batch.size={merged['batch.size']}, "
        f"linger.ms={merged['linger.ms']} (librdkafka)"
    )


def _header(tool: str, shape: TopicShape, settings: str) -> None:
    click.echo(f"perf {tool}: {shape.describe()}; {settings}", err=True)


def _producer_options(fn: Any) -> Any:
    return click.option(
        "--producer-property",
        "--producer-props",
        "producer_properties",
        multiple=True,
        metavar="KEY=VALUE",
        help="A producer config by its Kafka name (repeatable): batch.size, linger.ms, "
        "compression.type, max.in.flight.requests.per.connection, request.timeout.ms, ... "
        "bootstrap.servers overrides --bootstrap-server.",
    )(fn)


_ACKS = click.Choice(["all", "-1", "0", "1"])


@click.group("perf")
def perf() -> None:
    """Measure throughput and latency, printed as Kafka's perf tools print them."""


@perf.command("produce")
@bootstrap_server_option
@click.option("--topic", required=True, help="The topic to produce to (it must exist).")
@click.option("--num-records", type=click.IntRange(min=1), required=True)
@click.option("--record-size", type=click.IntRange(min=0), required=True, help="Bytes.")
@click.option(
    "--throughput",
    type=int,
    required=True,
    help="Throttle to about this many records/sec; -1 (any negative): no throttling.",
)
@click.option(
    "--acks",
    type=_ACKS,
    default=None,
    help="Shorthand for --producer-property acks=...  [default: librdkafka's, all]",
)
@_producer_options
@click.option(
    "--reporting-interval",
    type=click.IntRange(min=1),
    default=5000,
    show_default=True,
    help="Milliseconds between progress lines (Kafka's is fixed at 5000).",
)
def perf_produce(
    bootstrap_server: str,
    topic: str,
    num_records: int,
    record_size: int,
    throughput: int,
    acks: str | None,
    producer_properties: tuple[str, ...],
    reporting_interval: int,
) -> None:
    """Producer throughput and send-to-ack latency (like kafka-producer-perf-test.sh).

    Prints a line every 5 s (`X records sent, Y records/sec (Z MB/sec), A ms avg latency, M ms
    max latency.`) and a final line with the 50th, 95th, 99th and 99.9th percentiles."""
    option = "--producer-property"
    if throughput == 0:
        raise click.BadParameter(
            "must be positive, or -1 for no throttling", param_hint="--throughput"
        )
    config, bootstrap = _client_props(producer_properties, option, bootstrap_server)
    if acks is not None:
        if "acks" in config and _acks_text(config["acks"]) != _acks_text(acks):
            raise click.UsageError(f"--acks {acks} and {option} acks={config['acks']} disagree")
        config["acks"] = acks
    _require(require_hdrhistogram, require_librdkafka)
    settings = (
        f"{num_records} records x {record_size} bytes, throughput {throughput}, "
        + _rdkafka_producer_settings(config)
    )
    result = _run(
        run_producer_perf(
            bootstrap,
            topic,
            num_records,
            record_size,
            throughput=throughput,
            producer_config=config,
            reporting_interval_s=reporting_interval / 1000.0,
            on_ready=lambda shape: _header("produce", shape, settings),
            on_progress=click.echo,
        )
    )
    click.echo(result.line())
    if result.failed:
        click.echo(
            f"Error: {result.failed} of {num_records} records failed; first: {result.first_error}",
            err=True,
        )
        sys.exit(1)


@perf.command("consume")
@bootstrap_server_option
@click.option("--topic", required=True, help="The topic to read (every partition, from the start).")
@click.option("--messages", type=click.IntRange(min=1), required=True, help="Records to read.")
@click.option(
    "--timeout",
    "timeout_ms",
    type=click.IntRange(min=0),
    default=DEFAULT_TIMEOUT_MS,
    show_default=True,
    help="Stop when no record has come for this many milliseconds.",
)
@click.option(
    "--show-detailed-stats",
    is_flag=True,
    help="A row per reporting interval instead of one summary row.",
)
@click.option(
    "--reporting-interval",
    type=click.IntRange(min=1),
    default=5000,
    show_default=True,
    help="Milliseconds between --show-detailed-stats rows.",
)
@click.option("--hide-header", is_flag=True, help="Do not print the CSV header.")
@click.option(
    "--consumer-property",
    "consumer_properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="A consumer config by its Kafka name (repeatable), e.g. max.partition.fetch.bytes.",
)
def perf_consume(
    bootstrap_server: str,
    topic: str,
    messages: int,
    timeout_ms: int,
    show_detailed_stats: bool,
    reporting_interval: int,
    hide_header: bool,
    consumer_properties: tuple[str, ...],
) -> None:
    """Consumer throughput (like kafka-consumer-perf-test.sh): Kafka's CSV header and row."""
    option = "--consumer-property"
    _require(require_librdkafka)
    config, bootstrap = _client_props(consumer_properties, option, bootstrap_server)
    backoff = {**PERF_CONSUMER_DEFAULTS, **config}["fetch.queue.backoff.ms"]
    settings = (
        f"{messages} messages, timeout {timeout_ms} ms, fetch.queue.backoff.ms={backoff} "
        "(librdkafka)"
    )

    def ready(shape: TopicShape) -> None:
        _header("consume", shape, settings)
        if not hide_header:
            click.echo(CONSUMER_DETAILED_HEADER if show_detailed_stats else CONSUMER_HEADER)

    def progress(row: ConsumerProgress) -> None:
        if show_detailed_stats:
            click.echo(row.line())

    result = _run(
        run_consumer_perf(
            bootstrap,
            topic,
            messages,
            timeout_ms=timeout_ms,
            consumer_config=config,
            reporting_interval_ms=reporting_interval,
            on_ready=ready,
            on_progress=progress,
        )
    )
    if (warning := result.warning()) is not None:
        click.echo(warning)
    if not show_detailed_stats:
        click.echo(result.line())


@perf.command("e2e")
@bootstrap_server_option
@click.option("--topic", required=True, help="The topic to use (it must exist).")
@click.option("--num-records", type=click.IntRange(min=1), required=True)
@click.option("--record-size", type=click.IntRange(min=0), required=True, help="Bytes.")
@click.option(
    "--acks",
    type=click.Choice(["all", "-1", "1"]),
    default="all",
    show_default=True,
    help="The producer's acks (latency testing needs an acknowledgement: 1 or all).",
)
@_producer_options
@click.option(
    "--consumer-property",
    "consumer_properties",
    multiple=True,
    metavar="KEY=VALUE",
    help="A consumer property by its Kafka name, as librdkafka takes it (repeatable); "
    f"fetch.wait.max.ms is {FETCH_WAIT_MAX_MS} unless set.",
)
def perf_e2e(
    bootstrap_server: str,
    topic: str,
    num_records: int,
    record_size: int,
    acks: str,
    producer_properties: tuple[str, ...],
    consumer_properties: tuple[str, ...],
) -> None:
    """End-to-end latency (like Kafka's EndToEndLatency): produce one record, wait for its
    ack, poll until a consumer at the end receives it; N times. Prints `i<TAB>ms` every 1000
    records, then `Avg latency: X ms` and `Percentiles: 50th = A, 99th = B, 99.9th = C`."""
    popt, copt = "--producer-property", "--consumer-property"
    pconfig, bootstrap = _client_props(producer_properties, popt, bootstrap_server)
    cconfig, _ = _client_props(consumer_properties, copt, bootstrap)
    for name in ("acks", "linger.ms"):
        if name in pconfig:
            raise click.UsageError(
                f"e2e sets {name} itself (linger.ms=0; acks with --acks): "
                f"{popt} {name} is not taken"
            )
    _require(require_hdrhistogram, require_librdkafka)
    fetch_wait = e2e_consumer_config(cconfig)["fetch.wait.max.ms"]
    settings = (
        f"{num_records} records x {record_size} bytes, acks={_acks_text(acks)}, linger.ms=0, "
        f"fetch.wait.max.ms={fetch_wait} (librdkafka)"
    )
    result = _run(
        run_end_to_end_latency(
            bootstrap,
            topic,
            num_records,
            record_size,
            acks=acks,
            producer_config=pconfig,
            consumer_config=cconfig,
            on_ready=lambda shape: _header("e2e", shape, settings),
            on_progress=click.echo,
        )
    )
    for line in result.lines():
        click.echo(line)
