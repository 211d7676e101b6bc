"""AlterPartitionReassignments and ListPartitionReassignments (KIP-455): moving replicas
between brokers. Sent to the controller, which runs the move (controller/reassignment.py);
another broker answers NOT_CONTROLLER, and the admin client finds the controller in
Metadata and tries again, as with Kafka.
"""

from __future__ import annotations

from collections.abc import Iterable

from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode, NotControllerError
from minikafka.security.operations import AclOperation
from minikafka.server.broker_services import BrokerServices
from minikafka.server.kafka_api.models.reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    OngoingPartitionReassignment,
    OngoingTopicReassignment,
    ReassignablePartitionResponse,
    ReassignableTopicResponse,
)
from minikafka.server.kafka_api.registry import ApiFamily, RequestContext, api

ALTER_PARTITION_REASSIGNMENTS = 45
LIST_PARTITION_REASSIGNMENTS = 46

# Kafka's default messages (Errors.java).
NOT_CONTROLLER_MESSAGE = "This is not the correct controller for this cluster."
CLUSTER_AUTHORIZATION_FAILED_MESSAGE = "Cluster authorization failed."


def _by_topic(
    results: dict[TopicPartition, tuple[ErrorCode, str | None]],
) -> tuple[ReassignableTopicResponse, ...]:
    topics: dict[str, list[ReassignablePartitionResponse]] = {}
    for tp, (code, message) in results.items():
        topics.setdefault(tp.topic, []).append(
            ReassignablePartitionResponse(
                partition_index=tp.partition, error_code=int(code), error_message=message
            )
        )
    return tuple(
        ReassignableTopicResponse(name=name, partitions=tuple(parts))
        for name, parts in topics.items()
    )


class ReassignmentApis(ApiFamily):
    def __init__(self, apis: BrokerServices) -> None:
        self.apis = apis

    @api(ALTER_PARTITION_REASSIGNMENTS, "AlterPartitionReassignments", versions=(0, 0))
    async def alter_partition_reassignments(
        self, req: AlterPartitionReassignmentsRequest, ctx: RequestContext
    ) -> AlterPartitionReassignmentsResponse:
        requested: dict[TopicPartition, tuple[int, ...] | None] = {
            TopicPartition(t.name, p.partition_index): (
                None if p.replicas is None else tuple(p.replicas)
            )
            for t in req.topics
            for p in t.partitions
        }
        if not self.apis.authorizer.authorize_cluster(
            ctx.session, AclOperation.ALTER, request="AlterPartitionReassignments"
        ):
            # Kafka's error response: the error at the top and for every partition.
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            return AlterPartitionReassignmentsResponse(
                error_code=code,
                error_message=CLUSTER_AUTHORIZATION_FAILED_MESSAGE,
                responses=_by_topic(
                    dict.fromkeys(requested, (code, CLUSTER_AUTHORIZATION_FAILED_MESSAGE))
                ),
            )
        controller = self.apis.controller
        try:
            if controller is None or not controller.is_active:
                raise NotControllerError(NOT_CONTROLLER_MESSAGE)
            results = await controller.alter_partition_reassignments(requested)
        except NotControllerError:
            return AlterPartitionReassignmentsResponse(
                error_code=ErrorCode.NOT_CONTROLLER,
                error_message=NOT_CONTROLLER_MESSAGE,
                responses=(),
            )
        return AlterPartitionReassignmentsResponse(
            error_code=ErrorCode.NONE, error_message=None, responses=_by_topic(results)
        )

    @api(LIST_PARTITION_REASSIGNMENTS, "ListPartitionReassignments", versions=(0, 0))
    async def list_partition_reassignments(
        self, req: ListPartitionReassignmentsRequest, ctx: RequestContext
    ) -> ListPartitionReassignmentsResponse:
        partitions: list[TopicPartition] | None = (
            None
            if req.topics is None
            else [TopicPartition(t.name, p) for t in req.topics for p in t.partition_indexes]
        )
        if not self.apis.authorizer.authorize_cluster(
            ctx.session, AclOperation.DESCRIBE, request="ListPartitionReassignments"
        ):
            return _list_error(
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                CLUSTER_AUTHORIZATION_FAILED_MESSAGE,
                partitions or (),
            )
        controller = self.apis.controller
        try:
            if controller is None or not controller.is_active:
                raise NotControllerError(NOT_CONTROLLER_MESSAGE)
            ongoing = await controller.list_partition_reassignments(partitions)
        except NotControllerError:
            return _list_error(ErrorCode.NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE, ())
        topics: dict[str, list[OngoingPartitionReassignment]] = {}
        for tp, assignment in ongoing.items():
            topics.setdefault(tp.topic, []).append(
                OngoingPartitionReassignment(
                    partition_index=tp.partition,
                    replicas=assignment.replicas,
                    adding_replicas=assignment.adding,
                    removing_replicas=assignment.removing,
                )
            )
        return ListPartitionReassignmentsResponse(
            error_code=ErrorCode.NONE,
            error_message=None,
            topics=tuple(
                OngoingTopicReassignment(name=name, partitions=tuple(parts))
                for name, parts in topics.items()
            ),
        )


def _list_error(
    code: ErrorCode, message: str, partitions: Iterable[TopicPartition]
) -> ListPartitionReassignmentsResponse:
    """Kafka's ListPartitionReassignmentsRequest.getErrorResponse: the error at the top,
    the partitions asked for listed without replicas."""
    topics: dict[str, list[OngoingPartitionReassignment]] = {}
    for tp in partitions:
        topics.setdefault(tp.topic, []).append(
            OngoingPartitionReassignment(partition_index=tp.partition)
        )
    return ListPartitionReassignmentsResponse(
        error_code=code,
        error_message=message,
        topics=tuple(
            OngoingTopicReassignment(name=name, partitions=tuple(parts))
            for name, parts in topics.items()
        ),
    )
