"""`minikafka log-dirs --describe`: kafka-log-dirs.sh (Kafka 2.8's LogDirsCommand), each
broker's log dirs and the replicas in them (size in bytes, offset lag, future or not), over
Kafka's DescribeLogDirs.

The output is Kafka's: "Querying brokers for log directories information", "Received log
directory information from brokers 1,2,3", then one JSON line, `{"version":1,"brokers":
[{"broker":1,"logDirs":[{"logDir":"/data/1","error":null,"partitions":[{"partition":"t-0",
"size":123,"offsetLag":0,"isFuture":false}]}]}]}`. `--topic-list` keeps the replicas of
those topics (every one when empty), `--broker-list` asks those brokers (every broker of the
cluster when not given). Where it differs: brokers are listed in ascending id order (Kafka's
follow a hash map's, which for small ids is the same), and a broker that does not answer
is one line on stderr (status 1) rather than a stack trace.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any, Final, NoReturn

import click

from minikafka.cli.client_options import bootstrap_server_option, require_client
from minikafka.client.log_dirs import (
    LogDirInfo,
    LogDirsError,
    broker_addresses,
    describe_log_dirs,
    java_exception_name,
)
from minikafka.protocol.errors import KafkaError

# Kafka's admin client's request.timeout.ms, each broker's answer.
REQUEST_TIMEOUT_S: Final = 30.0


def log_dirs_json(by_broker: dict[int, list[LogDirInfo]], topics: set[str]) -> str:
    """Kafka's formatAsJson, key order and all, compact as Kafka's Json.encodeAsString."""
    document: dict[str, Any] = {
        "version": 1,
        "brokers": [
            {
                "broker": broker,
                "logDirs": [
                    {
                        "logDir": d.path,
                        "error": java_exception_name(d.error_code),
                        "partitions": [
                            {
                                "partition": f"{tp.topic}-{tp.partition}",
                                "size": r.size,
                                "offsetLag": r.offset_lag,
                                "isFuture": r.is_future,
                            }
                            for tp, r in d.replicas.items()
                            if not topics or tp.topic in topics
                        ],
                    }
                    for d in dirs
                ],
            }
            for broker, dirs in sorted(by_broker.items())
        ],
    }
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


def parse_broker_list(text: str) -> list[int]:
    """Kafka's `--broker-list 1,2,3` (empty items skipped)."""
    try:
        return [int(b) for b in text.split(",") if b]
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not a list of broker ids (e.g. 1,2,3)", param_hint="--broker-list"
        ) from None


@click.command("log-dirs")
@bootstrap_server_option
@click.option(
    "--describe",
    is_flag=True,
    help="Describe the specified log directories on the specified brokers (required).",
)
@click.option(
    "--topic-list",
    default="",
    metavar="T1,T2",
    help="The topics whose replicas to show (default: every topic).",
)
@click.option(
    "--broker-list",
    default=None,
    metavar="0,1,2",
    help="The brokers to ask (default: every broker of the cluster).",
)
def log_dirs(
    bootstrap_server: str, describe: bool, topic_list: str, broker_list: str | None
) -> None:
    """Query brokers' log directories: each replica's size on disk (like kafka-log-dirs.sh).

    \b
    minikafka log-dirs --describe --bootstrap-server localhost:9092 --topic-list orders
    """
    if not describe:
        raise click.UsageError('Missing required argument "[describe]"')
    topics = {t for t in topic_list.split(",") if t}
    asked = parse_broker_list(broker_list) if broker_list is not None else None
    require_client("minikafka log-dirs runs its admin client")
    try:
        addresses = broker_addresses(bootstrap_server, REQUEST_TIMEOUT_S)
    except LogDirsError as e:
        _fail(str(e))
    brokers = asked if asked is not None else sorted(addresses)
    click.echo("Querying brokers for log directories information")
    try:
        by_broker = asyncio.run(describe_log_dirs(addresses, brokers, REQUEST_TIMEOUT_S))
    except KafkaError as e:
        _fail(str(e))
    click.echo(f"Received log directory information from brokers {','.join(map(str, brokers))}")
    click.echo(log_dirs_json(by_broker, topics))


def _fail(message: str) -> NoReturn:
    click.echo(f"Error: {message}", err=True)
    sys.exit(1)
