"""`minikafka leader-election`: preferred or unclean leader elections, like
kafka-leader-election.sh (Kafka's LeaderElectionCommand), on librdkafka's AdminClient
(confluent-kafka's `elect_leaders`, KIP-460's ElectLeaders sent to the controller).

Its options, their rules and messages, its output lines and exit code are Kafka's: exit 1
when an option is wrong or any partition could not be elected. One difference: Kafka 2.8's
"Valid replica already elected for partitions" line lists the partitions elected (a bug
Kafka 3.0 fixed); this one lists those whose valid leader needed no election, as Kafka 3.0+.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from minikafka.cli.client_options import bootstrap_server_admin_config_option, require_client
from minikafka.client.librdkafka import WatchedAdmin
from minikafka.common import TopicPartition

if TYPE_CHECKING:
    from confluent_kafka import KafkaError

# Kafka's LeaderElectionCommand gives the admin client 30 s (default.api.timeout.ms) and
# ElectLeaders the same as its timeout (the wait for the elected leaders to show).
TIMEOUT_S = 30.0

# Kafka's exception class for an error code, as the command prints each failure
# (Throwable.toString: the class name, then the message).
_KAFKA_EXCEPTIONS = {
    -1: "org.apache.kafka.common.errors.UnknownServerException",
    3: "org.apache.kafka.common.errors.UnknownTopicOrPartitionException",
    7: "org.apache.kafka.common.errors.TimeoutException",
    17: "org.apache.kafka.common.errors.InvalidTopicException",
    31: "org.apache.kafka.common.errors.ClusterAuthorizationException",
    41: "org.apache.kafka.common.errors.NotControllerException",
    80: "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException",
    83: "org.apache.kafka.common.errors.EligibleLeadersNotAvailableException",
    84: "org.apache.kafka.common.errors.ElectionNotNeededException",
}
# Kafka's Errors' default messages, which the exception carries when the broker sent none.
_KAFKA_MESSAGES = {
    -1: "The server experienced an unexpected error when processing the request.",
    3: "This server does not host this topic-partition.",
    7: "The request timed out.",
    17: "The request attempted to perform an operation on an invalid topic.",
    31: "Cluster authorization failed.",
    41: "This is not the correct controller for this cluster.",
    80: "The preferred leader was not available.",
    83: "Eligible topic partition leaders are not available.",
    84: "Leader election not needed for topic partition.",
}
ELECTION_NOT_NEEDED = 84
CLUSTER_AUTHORIZATION_FAILED = 31
REQUEST_TIMED_OUT = 7

_EXCLUSIVE = ("--topic", "--all-topic-partitions", "--path-to-json-file")


class AdminCommandFailed(Exception):
    """Kafka's AdminCommandFailedException / AdminOperationException: the command fails
    with this message (exit 1)."""


def parse_replica_election_data(text: str) -> set[TopicPartition]:
    """Kafka's `parseReplicaElectionData`: `{"partitions": [{"topic": .., "partition": ..}]}`."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if data is None:
        raise AdminCommandFailed("Replica election data is empty")
    if not isinstance(data, dict) or "partitions" not in data:
        raise AdminCommandFailed('Replica election data is missing "partitions" field')
    partitions: list[TopicPartition] = []
    entries = data["partitions"]
    if not isinstance(entries, list):
        raise AdminCommandFailed('Replica election data\'s "partitions" must be an array')
    for entry in entries:
        if not isinstance(entry, dict):
            raise AdminCommandFailed(f"Replica election data: not a partition: {entry!r}")
        topic, partition = entry.get("topic"), entry.get("partition")
        if (
            not isinstance(topic, str)
            or isinstance(partition, bool)
            or not isinstance(partition, int)
        ):
            raise AdminCommandFailed(
                f"Replica election data: a partition needs a string topic and an integer "
                f"partition: {json.dumps(entry)}"
            )
        partitions.append(TopicPartition(topic, partition))
    duplicates = [tp for tp, n in Counter(partitions).items() if n > 1]
    if duplicates:
        raise AdminCommandFailed(
            "Replica election data contains duplicate partitions: "
            + ",".join(str(tp) for tp in duplicates)
        )
    return set(partitions)


def validate(
    election_type: str | None,
    topic: str | None,
    partition: int | None,
    all_topic_partitions: bool,
    path_to_json_file: str | None,
) -> None:
    """Kafka's `LeaderElectionCommand.validate` (--bootstrap-server has a default here)."""
    if election_type is None:
        raise AdminCommandFailed("Missing required option(s): --election-type")
    given = [topic is not None, all_topic_partitions, path_to_json_file is not None]
    if sum(given) != 1:
        raise AdminCommandFailed(
            "One and only one of the following options is required: " + ", ".join(_EXCLUSIVE)
        )
    if topic is not None and partition is None:
        raise AdminCommandFailed("Missing required option(s): --partition")
    if topic is None and partition is not None:
        raise AdminCommandFailed("Option --partition is only allowed if --topic is used")


def exception_text(code: int, message: str | None) -> str:
    """What Kafka prints for a partition's error: its exception's toString."""
    name = _KAFKA_EXCEPTIONS.get(code, f"org.apache.kafka.common.errors.ApiException(code {code})")
    text = message or _KAFKA_MESSAGES.get(code)
    return f"{name}: {text}" if text else name


def report(
    election_type: str, results: dict[TopicPartition, tuple[int, str | None] | None]
) -> tuple[list[str], int]:
    """Kafka's output lines for the results (partition -> None, or (code, message)), and
    how many partitions failed."""
    succeeded = sorted(tp for tp, error in results.items() if error is None)
    noop = sorted(
        tp for tp, error in results.items() if error is not None and error[0] == ELECTION_NOT_NEEDED
    )
    failed = {
        tp: error
        for tp, error in sorted(results.items())
        if error is not None and error[0] != ELECTION_NOT_NEEDED
    }
    lines = []
    if succeeded:
        lines.append(
            f"Successfully completed leader election ({election_type}) for partitions "
            + ", ".join(map(str, succeeded))
        )
    if noop:
        lines.append("Valid replica already elected for partitions " + ", ".join(map(str, noop)))
    for tp, (code, message) in failed.items():
        lines.append(
            f"Error completing leader election ({election_type}) for partition: {tp}: "
            + exception_text(code, message)
        )
    return lines, len(failed)


def _partition_error(error: Any) -> tuple[int, str | None] | None:
    """A partition's result from librdkafka (None, or a KafkaException/KafkaError)."""
    if error is None:
        return None
    err: KafkaError = error.args[0] if getattr(error, "args", None) else error
    code = err.code()
    message = err.str()
    # librdkafka gives its own text for an error the broker sent without a message.
    return code, None if not message or message.startswith("Broker: ") else message


def _elect(
    bootstrap_server: str, election_type: str, partitions: set[TopicPartition] | None
) -> dict[TopicPartition, tuple[int, str | None] | None]:
    from confluent_kafka import ElectionType, KafkaException
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    # confluent-kafka's elect_leaders takes no timeouts (its binding refuses both keyword
    # arguments): librdkafka then takes both from socket.timeout.ms.
    admin = WatchedAdmin(
        bootstrap_server,
        AdminCommandFailed,
        TIMEOUT_S,
        {"socket.timeout.ms": int(TIMEOUT_S * 1000)},
    )
    asked = (
        None
        if partitions is None
        else [KafkaTopicPartition(tp.topic, tp.partition) for tp in sorted(partitions)]
    )
    future = admin.client.elect_leaders(ElectionType[election_type], asked)
    try:
        result = admin.wait(future, time.monotonic() + TIMEOUT_S + 10)
    except KafkaException as e:
        code = e.args[0].code() if e.args else None
        if code == CLUSTER_AUTHORIZATION_FAILED:
            click.echo("Not authorized to perform leader election")
            raise AdminCommandFailed("Not authorized to perform leader election") from None
        if code == REQUEST_TIMED_OUT or (e.args and e.args[0].name() == "_TIMED_OUT"):
            click.echo("Timeout waiting for election results")
            raise AdminCommandFailed("Timeout waiting for election results") from None
        click.echo("Error while making request")
        raise AdminCommandFailed(str(e)) from None
    return {
        TopicPartition(tp.topic, tp.partition): _partition_error(error)
        for tp, error in result.items()
    }


@click.command("leader-election")
@bootstrap_server_admin_config_option
@click.option(
    "--election-type",
    type=click.Choice(["PREFERRED", "UNCLEAN"], case_sensitive=False),
    help="Type of election to attempt: preferred (only where the preferred replica does not "
    "lead) or unclean (only where no live broker leads; may elect a replica outside the "
    "ISR, losing the records it lacks). REQUIRED.",
)
@click.option(
    "--topic",
    help="Name of topic for which to perform an election. Not allowed if "
    "--path-to-json-file or --all-topic-partitions is specified.",
)
@click.option(
    "--partition",
    type=int,
    help="Partition id for which to perform an election. REQUIRED if --topic is specified.",
)
@click.option(
    "--all-topic-partitions",
    is_flag=True,
    help="Perform election on all of the eligible topic partitions based on the type of "
    "election. Not allowed if --topic or --path-to-json-file is specified.",
)
@click.option(
    "--path-to-json-file",
    type=click.Path(dir_okay=False),
    help='The JSON file with the partitions to elect leaders for: {"partitions": '
    '[{"topic": "foo", "partition": 1}, {"topic": "foobar", "partition": 2}]}. Not allowed '
    "if --all-topic-partitions or --topic is specified.",
)
def leader_election(
    bootstrap_server: str,
    election_type: str | None,
    topic: str | None,
    partition: int | None,
    all_topic_partitions: bool,
    path_to_json_file: str | None,
) -> None:
    """Elect new leaders for a set of partitions: preferred replicas or unclean replicas,
    like kafka-leader-election.sh."""
    try:
        validate(election_type, topic, partition, all_topic_partitions, path_to_json_file)
        assert election_type is not None
        kind = election_type.upper()
        partitions: set[TopicPartition] | None = None
        if path_to_json_file is not None:
            try:
                text = Path(path_to_json_file).read_text()
            except OSError as e:
                raise AdminCommandFailed(f"{path_to_json_file}: {e.strerror}") from None
            partitions = parse_replica_election_data(text)
        elif topic is not None and partition is not None:
            partitions = {TopicPartition(topic, partition)}
        require_client("leader-election runs")
        results = _elect(bootstrap_server, kind, partitions)
    except AdminCommandFailed as e:
        _fail(str(e))
    lines, failed = report(kind, results)
    for line in lines:
        click.echo(line)
    if failed:
        _fail(f"{failed} replica(s) could not be elected")


def _fail(message: str) -> NoReturn:
    click.echo(f"Error: {message}", err=True)
    sys.exit(1)
