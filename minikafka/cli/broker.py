"""`minikafka broker`: run one broker process in the foreground (Kafka's kafka-server-start)."""

from __future__ import annotations

import asyncio
import gc
import io
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import uvloop

from minikafka.cli.client_options import parse_key_values
from minikafka.config.broker import BrokerConfig
from minikafka.config.zk_client import KAFKA_OPTS_ENV, load_zk_client_auth
from minikafka.protocol.errors import KafkaError
from minikafka.zk.client import ZkClientAuth

if TYPE_CHECKING:
    from minikafka.server.admin_endpoint import AdminEndpoint, BrokerView

log = logging.getLogger(__name__)


def dump_tasks() -> None:
    """SIGUSR1: log every asyncio task's stack (what a stuck broker is waiting for), down
    the chain of coroutines each awaits (a task's own stack shows only its outermost)."""
    out = io.StringIO()
    for task in asyncio.all_tasks():
        out.write(f"--- {task!r}\n")
        coro: Any = task.get_coro()
        while coro is not None:
            frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
            if frame is not None:
                code = frame.f_code
                out.write(f"  {code.co_filename}:{frame.f_lineno} in {code.co_name}\n")
            coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    # The replica fetchers' state: which partitions each fetches, in which phase.
    from minikafka.replication.fetch_session import FetchSession
    from minikafka.replication.fetcher import ReplicaFetcher

    for obj in gc.get_objects():
        if isinstance(obj, ReplicaFetcher):
            out.write(f"=== {obj!r}: {obj.state_summary()}\n")
        elif isinstance(obj, FetchSession):
            held = {
                str(tp): (cp.fetch_offset, tp in obj.dirty, tp in obj.idle)
                for tp, cp in obj.partitions.items()
            }
            out.write(f"=== {obj!r}: (fetch offset, dirty, idle) {held}\n")
    log.warning("asyncio tasks:\n%s", out.getvalue())


def admin_endpoint(broker: BrokerView, host: str, port: int) -> AdminEndpoint:
    """The broker's admin endpoint: the broker makes it with this when `admin.listeners` is
    set, and only then is it imported (aiohttp's server side and prometheus_client add to
    every broker's start-up)."""
    from minikafka.admin_http.server import AdminHttpServer

    return AdminHttpServer(broker, host, port)


async def run_broker(config: BrokerConfig, zk_auth: ZkClientAuth | None = None) -> None:
    # Imported here so that `minikafka` subcommands that are not the broker start fast.
    from minikafka.server.broker import KafkaServer

    server = KafkaServer(config, admin_endpoint=admin_endpoint, zk_auth=zk_auth)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, dump_tasks)
    try:
        await server.startup()
    except BaseException:
        log.exception("broker %d failed to start", config.broker_id)
        await server.shutdown()
        raise
    await stop.wait()
    await server.shutdown()


@click.command()
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="server.properties (Kafka property names).",
)
@click.option("--override", "overrides", multiple=True, help="key=value, wins over the file.")
def broker(config_path: Path | None, overrides: tuple[str, ...]) -> None:
    """Run a broker until SIGTERM / Ctrl-C (then a controlled shutdown and a clean close)."""
    # A broker logs its lifecycle at INFO unless -v asked for more.
    root = logging.getLogger()
    if root.level > logging.INFO or root.level == logging.NOTSET:
        root.setLevel(logging.INFO)
    for noisy in ("kazoo", "kazoo.client", "kazoo.protocol.connection"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        config = BrokerConfig.load(config_path, parse_key_values(overrides, "--override"))
        # SASL to ZooKeeper, as Kafka's: the JAAS file named in $KAFKA_OPTS.
        zk_auth = load_zk_client_auth(
            config.zookeeper_set_acl,
            os.environ.get(KAFKA_OPTS_ENV, ""),
            dict(config.zookeeper_tls_props),
        )
    except KafkaError as e:
        raise click.ClickException(str(e)) from e
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(run_broker(config, zk_auth))
    except Exception as e:  # startup failed; the traceback is in the log above
        click.echo(f"broker {config.broker_id} failed: {e}", err=True)
        sys.exit(1)
    # The clean close is done: every log synced, the clean-shutdown marker written, the
    # ZooKeeper session closed. Leave without tearing the interpreter down, as a JVM
    # exits: freeing a broker's millions of objects one by one took seconds at 30,000
    # partitions after its last log line.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
