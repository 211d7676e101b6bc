"""ElectLeaders' answer (server/kafka_api/elections.py: its shape, its wait for the elected
leaders in the metadata cache, with fakes) and the pure parts of
`minikafka leader-election` (Kafka's LeaderElectionCommand): option rules, the JSON file,
the output lines."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

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
from minikafka.rules.election import ElectionType
from minikafka.server.authorization import RequestAuthorizer
from minikafka.server.kafka_api.elections import (
    ElectionApis,
    election_results,
    requested_partitions,
)
from minikafka.server.kafka_api.models.elections import (
    ElectLeadersRequest,
    ElectLeadersResponse,
    TopicPartitions,
)
from minikafka.server.kafka_api.registry import RequestContext

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


# --- the handler's wait for the elected leaders (Kafka's DelayedElectLeader) ------------------


class _State:
    def __init__(self, leader: int) -> None:
        self.leader = leader


class _Cache:
    """A metadata cache whose partitions' leaders the test sets; `update` wakes waiters."""

    def __init__(self) -> None:
        self.leaders: dict[TopicPartition, int] = {A0: 2, A1: 2}
        self._changed = asyncio.Event()

    def partition_state(self, tp: TopicPartition) -> _State | None:
        return _State(self.leaders[tp]) if tp in self.leaders else None

    def all_partition_states(self) -> list[Any]:
        return []

    def update(self, tp: TopicPartition, leader: int) -> None:
        self.leaders[tp] = leader
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_for_change(self, timeout_s: float) -> bool:
        try:
            async with asyncio.timeout(timeout_s):
                await self._changed.wait()
            return True
        except TimeoutError:
            return False


class _Controller:
    is_active = True

    async def elect_leaders(
        self, partitions: Iterable[TopicPartition], election_type: ElectionType
    ) -> dict[TopicPartition, int | ApiError]:
        return dict.fromkeys(partitions, 1)  # broker 1 elected everywhere


class _Services:
    def __init__(self, controller: object) -> None:
        self.cache = _Cache()
        self.controller = controller
        self.authorizer = RequestAuthorizer(None)


def _ask(timeout_ms: int) -> ElectLeadersRequest:
    return ElectLeadersRequest(
        election_type=0,
        topic_partitions=(TopicPartitions(topic="a", partitions=(0, 1)),),
        timeout=timeout_ms,
    )


def _codes(response: ElectLeadersResponse) -> dict[int, int]:
    return {
        p.partition_id: p.error_code
        for r in response.replica_election_results
        for p in r.partition_result
    }


CTX = RequestContext(
    api_version=2, correlation_id=1, client_id="", client_host="", listener="PLAINTEXT"
)


async def test_answered_once_the_elected_leaders_show_in_the_metadata_cache() -> None:
    services = _Services(_Controller())
    apis = ElectionApis(services)  # type: ignore[arg-type]
    answer = asyncio.create_task(apis.elect_leaders(_ask(60_000), CTX))
    services.cache.update(A0, 1)
    await asyncio.sleep(0)
    assert not answer.done()  # a-1's leader has not shown yet
    services.cache.update(A1, 1)
    assert _codes(await answer) == {0: ErrorCode.NONE, 1: ErrorCode.NONE}


async def test_leaders_not_shown_within_the_timeout_are_request_timed_out() -> None:
    services = _Services(_Controller())
    services.cache.update(A0, 1)
    response = await ElectionApis(services).elect_leaders(_ask(50), CTX)  # type: ignore[arg-type]
    assert _codes(response) == {0: ErrorCode.NONE, 1: ErrorCode.REQUEST_TIMED_OUT}


async def test_a_broker_that_is_not_the_controller_answers_not_controller() -> None:
    class NotController(_Controller):
        is_active = False

    response = await ElectionApis(_Services(NotController())).elect_leaders(_ask(50), CTX)  # type: ignore[arg-type]
    assert response.error_code == ErrorCode.NONE
    assert _codes(response) == {0: ErrorCode.NOT_CONTROLLER, 1: ErrorCode.NOT_CONTROLLER}
