"""The pure parts of ElectLeaders' answer (server/kafka_api/elections.py) and of
`minikafka leader-election` (Kafka's LeaderElectionCommand): option rules, the JSON file,
the output lines."""

from __future__ import annotations

import pytest

from minikafka.cli.leader_election import (
    AdminCommandFailed,
    exception_text,
    parse_replica_election_data,
    report,
    validate,
)
from minikafka.common import TopicPartition
from minikafka.controller.events import ApiError
from minikafka.protocol.errors import ErrorCode
from minikafka.server.kafka_api.elections import election_results, requested_partitions
from minikafka.server.kafka_api.models.elections import ElectLeadersRequest, TopicPartitions

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def _listed(
    results: dict[TopicPartition, ApiError], all_partitions: bool
) -> list[tuple[str, int, int]]:
    return [
        (r.topic, p.partition_id, p.error_code)
        for r in election_results(results, all_partitions)
        for p in r.partition_result
    ]


def test_results_by_topic_and_not_needed_left_out_when_all_partitions_were_asked() -> None:
    results = {
        B0: ApiError(ErrorCode.NONE),
        A1: ApiError(ErrorCode.ELECTION_NOT_NEEDED, "not needed"),
        A0: ApiError(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "down"),
    }
    assert _listed(results, False) == [
        ("a", 0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE),
        ("a", 1, ErrorCode.ELECTION_NOT_NEEDED),
        ("b", 0, ErrorCode.NONE),
    ]
    assert _listed(results, True) == [
        ("a", 0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE),
        ("b", 0, ErrorCode.NONE),
    ]


def test_requested_partitions_null_means_all_and_duplicates_count_once() -> None:
    assert requested_partitions(ElectLeadersRequest(topic_partitions=None)) is None
    asked = ElectLeadersRequest(
        topic_partitions=(
            TopicPartitions(topic="a", partitions=(0, 1, 0)),
            TopicPartitions(topic="a", partitions=(1,)),
        )
    )
    assert requested_partitions(asked) == {A0, A1}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((None, None, None, True, None), "Missing required option(s): --election-type"),
        (
            ("PREFERRED", None, None, False, None),
            "One and only one of the following options is required: --topic, "
            "--all-topic-partitions, --path-to-json-file",
        ),
        (
            ("PREFERRED", "t", 0, False, "f.json"),
            "One and only one of the following options is required: --topic, "
            "--all-topic-partitions, --path-to-json-file",
        ),
        (("PREFERRED", "t", None, False, None), "Missing required option(s): --partition"),
        (
            ("PREFERRED", None, 0, False, "f.json"),
            "Option --partition is only allowed if --topic is used",
        ),
    ],
)
def test_option_rules(
    args: tuple[str | None, str | None, int | None, bool, str | None], message: str
) -> None:
    with pytest.raises(AdminCommandFailed) as failed:
        validate(*args)
    assert str(failed.value) == message


def test_valid_option_sets() -> None:
    validate("UNCLEAN", "t", 3, False, None)
    validate("PREFERRED", None, None, True, None)
    validate("PREFERRED", None, None, False, "f.json")


def test_json_file() -> None:
    text = '{"partitions": [{"topic": "a", "partition": 0}, {"topic": "b", "partition": 0}]}'
    assert parse_replica_election_data(text) == {A0, B0}
    with pytest.raises(AdminCommandFailed, match="duplicate partitions: a-0"):
        parse_replica_election_data(
            '{"partitions": [{"topic": "a", "partition": 0}, {"topic": "a", "partition": 0}]}'
        )
    with pytest.raises(AdminCommandFailed, match='missing "partitions" field'):
        parse_replica_election_data('{"topics": []}')
    with pytest.raises(AdminCommandFailed, match="Replica election data is empty"):
        parse_replica_election_data("not json")
    with pytest.raises(AdminCommandFailed, match="integer partition"):
        parse_replica_election_data('{"partitions": [{"topic": "a", "partition": "0"}]}')


def test_report_lines_as_kafka_prints_them() -> None:
    lines, failed = report(
        "PREFERRED",
        {
            A1: None,
            A0: None,
            B0: (ErrorCode.ELECTION_NOT_NEEDED, None),
            TopicPartition("c", 2): (ErrorCode.NOT_CONTROLLER, None),
        },
    )
    assert failed == 1
    assert lines == [
        "Successfully completed leader election (PREFERRED) for partitions a-0, a-1",
        "Valid replica already elected for partitions b-0",
        "Error completing leader election (PREFERRED) for partition: c-2: "
        "org.apache.kafka.common.errors.NotControllerException: "
        "This is not the correct controller for this cluster.",
    ]
    assert report("UNCLEAN", {}) == ([], 0)


def test_exception_text_prefers_the_brokers_message() -> None:
    assert exception_text(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "none live") == (
        "org.apache.kafka.common.errors.EligibleLeadersNotAvailableException: none live"
    )
    assert exception_text(ErrorCode.REQUEST_TIMED_OUT, None) == (
        "org.apache.kafka.common.errors.TimeoutException: The request timed out."
    )
