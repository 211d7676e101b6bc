"""`minikafka pipeline`: the click-count demo of a Spark job on minikafka (generate events,
run the Structured Streaming job, or both at once). Needs the `spark` extra; its clients
are librdkafka's (confluent-kafka), over Kafka's protocol."""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import click

from minikafka.cli.client_options import bootstrap_server_option
from minikafka.cli.output_dirs import default_output_dir
from minikafka.cli.signals import handles_sigterm, interrupt_status
from minikafka.client.librdkafka import MissingClientError, read_to_end, require_librdkafka

if TYPE_CHECKING:
    from minikafka.spark.pipeline import Click

READ_TIMEOUT_S = 60.0  # for reading the counts topic back (Kafka's default.api.timeout.ms)


def _pipeline() -> ModuleType:
    try:
        require_librdkafka("minikafka pipeline runs")
    except MissingClientError as e:
        raise click.ClickException(str(e)) from None
    try:
        from minikafka.spark import pipeline
    except ImportError as e:
        raise click.ClickException(
            f"the Spark pipeline needs the spark extra ({e}): pip install -e '.[spark]'"
        ) from None
    return pipeline


@click.group()
def pipeline() -> None:
    """The click-count pipeline: JSON click events -> a Spark job counting clicks per page per
    10-second window (watermark 10 s) -> topic page-counts and Parquet.

    \b
    minikafka pipeline demo                  # all of it on a small synthetic event set
    minikafka pipeline run &                 # the streaming job, until stopped
    minikafka pipeline generate --rate 50    # live clicks, until Ctrl-C
    minikafka consume --topic page-counts --from-beginning --property print.key=true
    """


@pipeline.command()
@bootstrap_server_option
@click.option("--events", type=int, default=0, help="How many (0: until Ctrl-C).")
@click.option("--rate", type=float, default=20.0, show_default=True, help="Events per second.")
@click.option("--clicks-topic", default="clicks", show_default=True)
@handles_sigterm
def generate(bootstrap_server: str, events: int, rate: float, clicks_topic: str) -> None:
    """Produce click events with the current time as event time (acks=all, key: the user)."""
    p = _pipeline()
    p.ensure_topics(bootstrap_server, {clicks_topic: 3})

    def live() -> Iterator[Click]:
        i = 0
        while events == 0 or i < events:
            (click_,) = p.make_clicks(1, int(time.time() * 1000), 0, seed=i)
            yield click_
            i += 1

    click.echo(
        f"producing {events or 'endless'} click events to {clicks_topic} at {rate:g}/s"
        + ("" if events else " (Ctrl-C stops)")
    )

    def progress(acknowledged: int) -> None:
        click.echo(f"{acknowledged} click events acknowledged")

    try:
        sent = p.generate(bootstrap_server, clicks_topic, live(), rate, progress)
    except KeyboardInterrupt as e:
        click.echo("stopped", err=True)
        sys.exit(interrupt_status(e, on_ctrl_c=0))
    click.echo(f"{sent} click events produced to {clicks_topic}")


def _dirs(work_dir: Path) -> tuple[Path, Path]:
    return work_dir / "page-counts.parquet", work_dir / "checkpoints"


def _work_dir(work_dir: Path | None) -> Path:
    """--work-dir, else <data dir>/pipeline (minikafka/cli/output_dirs.py); said either way."""
    what = "pipeline output (Parquet, checkpoints)"
    if work_dir is None:
        work_dir, where = default_output_dir("pipeline", what, "--work-dir")
        click.echo(where)
    else:
        click.echo(f"{what} goes to {work_dir}")
    return work_dir


def _spark_confs(
    _ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
) -> dict[str, str]:
    """--conf KEY=VALUE, as spark-submit's: split at the first '='."""
    confs: dict[str, str] = {}
    for value in values:
        key, eq, setting = value.partition("=")
        if not eq or not key.strip():
            raise click.BadParameter(
                f"{value!r}: a Spark setting is KEY=VALUE, e.g. spark.executor.cores=1"
            )
        confs[key.strip()] = setting
    return confs


def spark_options(f: Callable[..., None]) -> Callable[..., None]:
    """--master and --conf, as spark-submit's, for the commands that run the Spark job."""
    f = click.option(
        "--conf",
        "spark_conf",
        multiple=True,
        metavar="KEY=VALUE",
        callback=_spark_confs,
        help="A Spark setting for the job's session (repeatable), e.g. "
        "--conf spark.executor.memory=1g.",
    )(f)
    return click.option(
        "--master",
        envvar="SPARK_MASTER",
        default=None,
        metavar="URL",
        help="The Spark master to run the job on, e.g. spark://host:7077 (its workers need "
        "this Python with minikafka at the same path). Default: $SPARK_MASTER; else, run by "
        "spark-submit (spark-submit --master URL .../minikafka-app.py pipeline run ...), "
        "spark-submit's master and settings; else local Spark in this process (local[2]).",
    )(f)


WORK_DIR_DEFAULT = (
    "Default: DATA_DIR/pipeline, DATA_DIR being the local cluster's (`minikafka cluster "
    "up`'s), else $XDG_DATA_HOME/minikafka/other-clusters/pipeline."
)


@pipeline.command()
@bootstrap_server_option
@click.option("--clicks-topic", default="clicks", show_default=True)
@click.option("--counts-topic", default="page-counts", show_default=True)
@click.option(
    "--work-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help=f"Parquet output and the queries' checkpoints. {WORK_DIR_DEFAULT}",
)
@click.option("--available-now", is_flag=True, help="Process what is there, then stop.")
@spark_options
def run(
    bootstrap_server: str,
    clicks_topic: str,
    counts_topic: str,
    work_dir: Path | None,
    available_now: bool,
    master: str | None,
    spark_conf: dict[str, str],
) -> None:
    """Run the streaming job (until Ctrl-C, or with --available-now until caught up)."""
    p = _pipeline()
    parquet, checkpoints = _dirs(_work_dir(work_dir))
    p.ensure_topics(bootstrap_server, {clicks_topic: 3, counts_topic: 1})
    spark = p.spark_session(master=master, conf=spark_conf)
    queries = p.start_pipeline(
        spark,
        bootstrap_server,
        clicks_topic=clicks_topic,
        counts_topic=counts_topic,
        parquet_dir=parquet,
        checkpoint_dir=checkpoints,
        available_now=available_now,
    )
    click.echo(
        f"counting clicks of {clicks_topic} into {counts_topic} and {parquet} "
        f"(Spark master {spark.sparkContext.master})"
    )
    from minikafka.spark.lifecycle import run_until_stopped

    if run_until_stopped(spark, *queries):
        click.echo("stopped: the queries and Spark; the checkpoints keep where they were")


@pipeline.command()
@bootstrap_server_option
@click.option("--events", type=int, default=300, show_default=True)
@click.option(
    "--work-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Parquet output and checkpoints (in a subdirectory named after the run). "
    f"{WORK_DIR_DEFAULT}",
)
@spark_options
def demo(
    bootstrap_server: str,
    events: int,
    work_dir: Path | None,
    master: str | None,
    spark_conf: dict[str, str],
) -> None:
    """Produce EVENTS clicks spread over EVENTS x 0.3 s of event time, run the job once over
    them (Trigger.AvailableNow) and print the window counts it wrote to page-counts."""
    p = _pipeline()
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    parquet, checkpoints = _dirs(_work_dir(work_dir) / stamp)
    clicks_topic, counts_topic = f"clicks-{stamp}", f"page-counts-{stamp}"
    p.ensure_topics(bootstrap_server, {clicks_topic: 3, counts_topic: 1})
    start = int(time.time() * 1000) - events * 300
    clicks = p.make_clicks(events, start - start % 10_000 + 1, 300)
    p.generate(bootstrap_server, clicks_topic, clicks)
    click.echo(f"{events} click events produced to {clicks_topic}; running the job ...")
    spark = p.spark_session(master=master, conf=spark_conf)
    click.echo(f"Spark master {spark.sparkContext.master}")
    queries = p.start_pipeline(
        spark,
        bootstrap_server,
        clicks_topic=clicks_topic,
        counts_topic=counts_topic,
        parquet_dir=parquet,
        checkpoint_dir=checkpoints,
        available_now=True,
    )
    from minikafka.spark.lifecycle import run_until_stopped

    if run_until_stopped(spark, *queries):  # the job stops by itself once caught up
        click.echo("stopped before the job was done", err=True)
        sys.exit(130)
    rows = read_counts(bootstrap_server, counts_topic)
    for row in sorted(rows, key=lambda r: (r["window_start"], r["page"])):
        click.echo(f"{row['window_start']}  {row['page']:<10} {row['clicks']:>4}")
    click.echo(
        f"{len(rows)} window counts in {counts_topic} and {parquet}; watch them with: "
        f"minikafka consume --topic {counts_topic} --from-beginning"
    )


def read_counts(bootstrap: str, topic: str) -> list[dict[str, object]]:
    """Every window count in the counts topic (up to its high watermarks as of the call)."""
    return [json.loads(r.value() or b"{}") for r in read_to_end(bootstrap, topic, READ_TIMEOUT_S)]
