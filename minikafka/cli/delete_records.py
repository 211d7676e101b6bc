"""`minikafka delete-records`: kafka-delete-records.sh (Kafka 2.8's DeleteRecordsCommand),
on librdkafka's admin client (confluent-kafka) over Kafka's DeleteRecords.

`--offset-json-file` is Kafka's JSON, `{"partitions": [{"topic": "t", "partition": 0,
"offset": 3}], "version": 1}` (version 1 unless given; offset -1: the high watermark). The
output is Kafka's: "Executing records delete operation", "Records delete operation
completed:", then a line per partition, `partition: t-0<TAB>low_watermark: 3`, or
`partition: t-0<TAB>error: <the Java exception Kafka's tool prints>`. Where it differs:
partitions are printed in the file's order (Kafka's follow a hash map's), a failed
partition makes the status 1, and a bad file is one line on stderr (status 1) rather than
a stack trace.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Final, NoReturn

import click

from minikafka.cli.client_options import bootstrap_server_option, require_client
from minikafka.client.librdkafka import ClientConfigError, WatchedAdmin, kafka_error_text
from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode

# DeleteRecordsCommand.EarliestVersion: the file's version when it names none.
EARLIEST_VERSION: Final = 1
# Kafka's admin client's default.api.timeout.ms, which its deleteRecords waits for.
API_TIMEOUT_S: Final = 60.0
# How long the leader may wait for the followers' log starts (Kafka's admin client sends
# its request.timeout.ms, 30 s).
OPERATION_TIMEOUT_S: Final = 30.0

# What Kafka's tool prints for the errors a partition may get: the Java exception and the
# default message of the error (Errors.java).
_JAVA_ERRORS: Final = {
    ErrorCode.OFFSET_OUT_OF_RANGE: (
        "OffsetOutOfRangeException",
        "The requested offset is not within the range of offsets maintained by the server.",
    ),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: (
        "UnknownTopicOrPartitionException",
        "This server does not host this topic-partition.",
    ),
    ErrorCode.NOT_LEADER_OR_FOLLOWER: (
        "NotLeaderOrFollowerException",
        "For requests intended only for the leader, this error indicates that the broker is "
        "not the current leader. For requests intended for any replica, this error indicates "
        "that the broker is not a replica of the topic partition.",
    ),
    ErrorCode.REQUEST_TIMED_OUT: ("TimeoutException", "The request timed out."),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: (
        "TopicAuthorizationException",
        "Topic authorization failed.",
    ),
    ErrorCode.POLICY_VIOLATION: (
        "PolicyViolationException",
        "Request parameters do not satisfy the configured policy.",
    ),
    ErrorCode.INVALID_TOPIC_EXCEPTION: (
        "InvalidTopicException",
        "The request attempted to perform an operation on an invalid topic.",
    ),
    ErrorCode.KAFKA_STORAGE_ERROR: (
        "KafkaStorageException",
        "Disk error when trying to access log file on the disk.",
    ),
}


class DeleteRecordsError(Exception):
    """A failure worth one line on stderr, not a traceback."""


def parse_offset_json(text: str) -> list[tuple[TopicPartition, int]]:
    """Kafka's parseOffsetJsonStringWithoutDedup: the partitions and offsets, in order."""
    try:
        js = json.loads(text)
    except json.JSONDecodeError:
        raise DeleteRecordsError("The input string is not a valid JSON") from None
    if not isinstance(js, dict):
        raise DeleteRecordsError("The input string is not a JSON object")
    version = js.get("version", EARLIEST_VERSION)
    if version != 1:
        raise DeleteRecordsError(f"Not supported version field value {version}")
    partitions = js.get("partitions")
    if not isinstance(partitions, list):
        raise DeleteRecordsError("Missing partitions field")
    out: list[tuple[TopicPartition, int]] = []
    for p in partitions:
        try:
            topic, partition, offset = p["topic"], p["partition"], p["offset"]
        except (KeyError, TypeError):
            raise DeleteRecordsError(
                f"each partition needs topic, partition and offset: {json.dumps(p)}"
            ) from None
        if (
            not isinstance(topic, str)
            or not _is_int(partition)
            or not _is_int(offset)
            or partition < 0
        ):
            raise DeleteRecordsError(f"not a topic, a partition and an offset: {json.dumps(p)}")
        out.append((TopicPartition(topic, partition), offset))
    duplicates = sorted({tp for tp, _ in out if sum(1 for t, _ in out if t == tp) > 1})
    if duplicates:
        raise DeleteRecordsError(
            "Offset json file contains duplicate topic partitions: "
            + ",".join(f"{tp.topic}-{tp.partition}" for tp in duplicates)
        )
    return out


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def error_text(code: int, librdkafka_text: str) -> str:
    """What Kafka's tool prints after `error: ` (the ExecutionException's message)."""
    try:
        java = _JAVA_ERRORS.get(ErrorCode(code))
    except ValueError:
        java = None
    if java is None:
        return librdkafka_text
    exception, message = java
    return f"org.apache.kafka.common.errors.{exception}: {message}"


def delete_records(
    bootstrap_server: str, offsets: list[tuple[TopicPartition, int]]
) -> list[tuple[TopicPartition, int | None, str | None]]:
    """Each partition with its low watermark, or the error text."""
    from confluent_kafka import KafkaException
    from confluent_kafka import TopicPartition as RdTopicPartition

    admin = WatchedAdmin(bootstrap_server, DeleteRecordsError, API_TIMEOUT_S)
    futures = admin.client.delete_records(
        [RdTopicPartition(tp.topic, tp.partition, offset) for tp, offset in offsets],
        request_timeout=API_TIMEOUT_S,
        operation_timeout=OPERATION_TIMEOUT_S,
    )
    by_tp = {(k.topic, k.partition): f for k, f in futures.items()}
    deadline = time.monotonic() + API_TIMEOUT_S
    results: list[tuple[TopicPartition, int | None, str | None]] = []
    for tp, _ in offsets:
        try:
            deleted: Any = admin.wait(by_tp[(tp.topic, tp.partition)], deadline)
        except KafkaException as e:
            err = e.args[0]
            results.append((tp, None, error_text(err.code(), kafka_error_text(err))))
            continue
        results.append((tp, deleted.low_watermark, None))
    return results


@click.command("delete-records")
@bootstrap_server_option
@click.option(
    "--offset-json-file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    metavar="FILE",
    help='The offset per partition, as Kafka\'s: {"partitions": [{"topic": "foo", '
    '"partition": 1, "offset": 1}], "version": 1} (offset -1: the high watermark).',
)
def delete_records_command(bootstrap_server: str, offset_json_file: Path) -> None:
    """Delete the records of partitions below an offset (like kafka-delete-records.sh):
    their log start offset moves up to it on every replica.

    \b
    minikafka delete-records --bootstrap-server localhost:9092 --offset-json-file offsets.json
    """
    try:
        offsets = parse_offset_json(offset_json_file.read_text(encoding="utf-8"))
    except (DeleteRecordsError, OSError, UnicodeDecodeError) as e:
        _fail(str(e))
    require_client("minikafka delete-records runs its admin client")
    click.echo("Executing records delete operation")
    try:
        results = delete_records(bootstrap_server, offsets) if offsets else []
    except (DeleteRecordsError, ClientConfigError) as e:
        _fail(str(e))
    click.echo("Records delete operation completed:")
    for tp, low, error in results:
        if error is None:
            click.echo(f"partition: {tp.topic}-{tp.partition}\tlow_watermark: {low}")
        else:
            click.echo(f"partition: {tp.topic}-{tp.partition}\terror: {error}")
    if any(error is not None for _, _, error in results):
        sys.exit(1)


def _fail(message: str) -> NoReturn:
    click.echo(f"Error: {message}", err=True)
    sys.exit(1)
