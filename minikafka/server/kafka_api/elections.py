"""ElectLeaders (KIP-460): preferred and unclean leader elections an admin asks for.

As Kafka's ZooKeeper-era brokers: the admin client sends it to the controller; any other
broker answers NOT_CONTROLLER for each partition (the top-level error stays NONE, as
Kafka's). The controller runs the elections on its event task
(`KafkaController.elect_leaders`), then the answer waits, at most the request's timeout,
until each elected leader shows in this broker's own metadata cache: the controller's
UpdateMetadata has reached it (Kafka's DelayedElectLeader, which watches the same cache).
A partition whose leader has not shown by then is REQUEST_TIMED_OUT; its election stands.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping

from minikafka.common import TopicPartition
from minikafka.controller.events import ApiError
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.rules.election import ElectionType
from minikafka.security.operations import AclOperation
from minikafka.server.broker_services import BrokerServices
from minikafka.server.kafka_api.models.elections import (
    ElectLeadersRequest,
    ElectLeadersResponse,
    PartitionResult,
    ReplicaElectionResult,
)
from minikafka.server.kafka_api.registry import ApiFamily, RequestContext, api

log = logging.getLogger(__name__)

ELECT_LEADERS = 43

_NONE = ApiError(ErrorCode.NONE)


def requested_partitions(req: ElectLeadersRequest) -> frozenset[TopicPartition] | None:
    """The partitions named (a partition named twice counts once, as Kafka's set); None: all."""
    if req.topic_partitions is None:
        return None
    return frozenset(TopicPartition(t.topic, p) for t in req.topic_partitions for p in t.partitions)


def election_results(
    results: Mapping[TopicPartition, ApiError], all_partitions: bool
) -> tuple[ReplicaElectionResult, ...]:
    """The response's results, by topic. Asked for all partitions, those whose leader was
    already valid (ELECTION_NOT_NEEDED) are left out, as Kafka's handleElectReplicaLeader
    does: only elections made or failed are listed."""
    by_topic: dict[str, list[PartitionResult]] = {}
    for tp in sorted(results):
        error = results[tp]
        if all_partitions and error.code == ErrorCode.ELECTION_NOT_NEEDED:
            continue
        by_topic.setdefault(tp.topic, []).append(
            PartitionResult(
                partition_id=tp.partition, error_code=error.code, error_message=error.message
            )
        )
    return tuple(
        ReplicaElectionResult(topic=topic, partition_result=tuple(partitions))
        for topic, partitions in by_topic.items()
    )


def _each(partitions: Iterable[TopicPartition], error: ApiError) -> dict[TopicPartition, ApiError]:
    return dict.fromkeys(partitions, error)


class ElectionApis(ApiFamily):
    def __init__(self, apis: BrokerServices) -> None:
        self.apis = apis

    @api(ELECT_LEADERS, "ElectLeaders", versions=(0, 2))
    async def elect_leaders(
        self, req: ElectLeadersRequest, ctx: RequestContext
    ) -> ElectLeadersResponse:
        deadline = time.monotonic() + max(req.timeout, 0) / 1000
        asked = requested_partitions(req)
        if not self.apis.authorizer.authorize_cluster(
            ctx.session, AclOperation.ALTER, request="ElectLeaders"
        ):
            # Asked for all partitions: none is listed (Kafka's answer), the top-level
            # error (v1+) says why.
            refused = ApiError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
            return ElectLeadersResponse(
                error_code=refused.code,
                replica_election_results=election_results(_each(asked or (), refused), False),
            )
        try:
            election_type = ElectionType(req.election_type if ctx.api_version >= 1 else 0)
        except ValueError:
            # Kafka's ElectionType.valueOf throws IllegalArgumentException: the request's
            # error response, UNKNOWN_SERVER_ERROR without a message for every partition
            # named and at the top.
            invalid = ApiError(ErrorCode.UNKNOWN_SERVER_ERROR)
            return ElectLeadersResponse(
                error_code=invalid.code,
                replica_election_results=election_results(_each(asked or (), invalid), False),
            )
        partitions = (
            asked
            if asked is not None
            else frozenset(
                TopicPartition(st.topic, st.partition)
                for st in self.apis.cache.all_partition_states()
            )
        )
        results = await self._elect(partitions, election_type, deadline)
        return ElectLeadersResponse(
            error_code=ErrorCode.NONE,
            replica_election_results=election_results(results, asked is None),
        )

    async def _elect(
        self,
        partitions: frozenset[TopicPartition],
        election_type: ElectionType,
        deadline: float,
    ) -> dict[TopicPartition, ApiError]:
        controller = self.apis.controller
        if not partitions:
            return {}
        if controller is None or not controller.is_active:
            return _each(partitions, ApiError(ErrorCode.NOT_CONTROLLER))
        try:
            outcome = await controller.elect_leaders(partitions, election_type)
        except KafkaError as e:
            # NOT_CONTROLLER: the controller moved, or resigned, before or while electing.
            return _each(partitions, ApiError(e.code))
        except Exception:
            log.exception("ElectLeaders (%s) failed", election_type.name)
            return _each(partitions, ApiError(ErrorCode.UNKNOWN_SERVER_ERROR))
        results: dict[TopicPartition, ApiError] = {}
        expected: dict[TopicPartition, int] = {}
        for tp, result in outcome.items():
            if isinstance(result, ApiError):
                results[tp] = result
            else:
                expected[tp] = result
        await self._await_leaders(expected, deadline)
        for tp, leader in expected.items():
            results[tp] = (
                _NONE if self._leads(tp, leader) else ApiError(ErrorCode.REQUEST_TIMED_OUT)
            )
        return results

    def _leads(self, tp: TopicPartition, leader: int) -> bool:
        state = self.apis.cache.partition_state(tp)
        return state is not None and state.leader == leader

    async def _await_leaders(self, expected: Mapping[TopicPartition, int], deadline: float) -> None:
        """Until this broker's metadata cache shows every elected leader, or the deadline."""
        waiting = dict(expected)
        while True:
            waiting = {tp: leader for tp, leader in waiting.items() if not self._leads(tp, leader)}
            remaining = deadline - time.monotonic()
            if not waiting or remaining <= 0:
                return
            await self.apis.cache.wait_for_change(remaining)
