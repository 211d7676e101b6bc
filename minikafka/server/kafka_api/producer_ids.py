"""InitProducerId: idempotent producers' ids (transactions are not served)."""

from __future__ import annotations

from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.security.operations import AclOperation, ResourceType
from minikafka.server.authorization import CLUSTER_NAME
from minikafka.server.broker_services import BrokerServices
from minikafka.server.kafka_api.models.producer_ids import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from minikafka.server.kafka_api.registry import ApiFamily, RequestContext, api

INIT_PRODUCER_ID = 22


class ProducerIdApis(ApiFamily):
    def __init__(self, apis: BrokerServices) -> None:
        self.apis = apis

    @api(INIT_PRODUCER_ID, "InitProducerId", versions=(0, 4))
    async def init_producer_id(
        self, req: InitProducerIdRequest, ctx: RequestContext
    ) -> InitProducerIdResponse:
        """Idempotent producers get a new producer id, epoch 0 (a given producer id and
        epoch, v3+, are not bumped: Kafka hands a producer without a transactional id a new
        id the same way)."""
        if req.transactional_id is not None:
            return _refused(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        # Kafka 2.8 (KIP-679): IDEMPOTENT_WRITE on the cluster (its denial logged only at
        # TRACE), or else WRITE on at least one topic, any topic (authorizeByResourceType).
        authorizer = self.apis.authorizer
        if not (
            authorizer.authorize(
                ctx.session,
                AclOperation.IDEMPOTENT_WRITE,
                ResourceType.CLUSTER,
                CLUSTER_NAME,
                request="InitProducerId",
                log_if_denied=False,
            )
            or authorizer.authorize_by_resource_type(
                ctx.session, AclOperation.WRITE, ResourceType.TOPIC, request="InitProducerId"
            )
        ):
            return _refused(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        try:
            producer_id = await self.apis.init_producer_id()
        except KafkaError as e:
            return _refused(e.code)
        return InitProducerIdResponse(
            error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0
        )


def _refused(code: int) -> InitProducerIdResponse:
    return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)
