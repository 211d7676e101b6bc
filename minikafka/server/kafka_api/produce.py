"""Produce: record batches in, as the client sent them (validated, stored as sent).

The response is written by hand (protocol/kafka/produce_response.py): kio's writer is too
slow for every produce."""

from __future__ import annotations

from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.protocol.kafka.produce_response import (
    ProducePartitionData,
    ProduceTopicData,
    encode_produce_response,
)
from minikafka.rpc.messages import ProducePartitionResponse
from minikafka.security.operations import AclOperation, ResourceType
from minikafka.server.broker_services import BrokerServices
from minikafka.server.kafka_api.models.produce import ProduceRequest, TopicProduceData
from minikafka.server.kafka_api.registry import ApiFamily, EncodedResponse, RequestContext, api
from minikafka.server.kafka_api.topic_ids import ZERO_UUID, topic_named, topic_uuid
from minikafka.server.session import CloseConnection

PRODUCE = 0


class ProduceApis(ApiFamily):
    def __init__(self, apis: BrokerServices) -> None:
        self.apis = apis

    @api(PRODUCE, "Produce", versions=(3, 13))
    async def produce(self, req: ProduceRequest, ctx: RequestContext) -> EncodedResponse | None:
        """None when no response is sent (acks=0)."""
        topics = await self._produce(ctx, req)
        if req.acks == 0:
            _close_on_error(ctx, topics)
            return None
        return EncodedResponse(
            [encode_produce_response(ctx.api_version, ctx.correlation_id, topics)]
        )

    async def _produce(self, ctx: RequestContext, req: ProduceRequest) -> list[ProduceTopicData]:
        version = ctx.api_version
        if req.transactional_id is not None:
            # No transactions here: Kafka answers a broker without them the same way.
            return _produce_error(req, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        cache = self.apis.cache
        # v13 names topics by id (KIP-516); an id no topic has is UNKNOWN_TOPIC_ID.
        named: list[tuple[str, TopicProduceData]] = []
        unknown: list[TopicProduceData] = []
        for t in req.topic_data:
            name = t.name if version < 13 else topic_named(cache, t.topic_id)
            if name is None:
                unknown.append(t)
            else:
                named.append((name, t))
        # WRITE on each topic, decided once per topic (Kafka's filterByAuthorized). Since
        # KIP-679 (Kafka 2.8) an idempotent producer's batches need nothing more: its
        # IDEMPOTENT_WRITE on the cluster (or WRITE on some topic) is checked when it gets
        # its producer id (InitProducerId). A topic the principal may not write is answered
        # TOPIC_AUTHORIZATION_FAILED whether it exists or not.
        writable = self.apis.authorizer.filter_authorized(
            ctx.session,
            AclOperation.WRITE,
            ResourceType.TOPIC,
            (name for name, _ in named),
            request="Produce",
        )
        denied = [t for name, t in named if name not in writable]
        named = [(name, t) for name, t in named if name in writable]
        # A partition named twice is appended once (its last records), and answered twice.
        entries = {
            TopicPartition(name, p.index): p.records for name, t in named for p in t.partition_data
        }
        results: dict[TopicPartition, ProducePartitionResponse] = {}
        # Every topic refused: nothing is appended (Kafka does not call the replica manager).
        if entries or not denied:
            try:
                results = await self.apis.produce(req.acks, req.timeout, entries)
            except KafkaError as e:
                if not denied:
                    return _produce_error(req, e.code)
                # The refused topics keep their own answer (Kafka merges both).
                results = {
                    tp: ProducePartitionResponse(tp.partition, int(e.code)) for tp in entries
                }
        return [
            ProduceTopicData(
                name,
                topic_uuid(cache, name),
                [
                    ProducePartitionData(
                        r.partition,
                        r.error_code,
                        r.base_offset,
                        r.log_start_offset,
                        r.error_message,
                        [(e.batch_index, e.message) for e in r.record_errors],
                        r.log_append_time,
                    )
                    for r in (results[TopicPartition(name, p.index)] for p in t.partition_data)
                ],
            )
            for name, t in named
        ] + [
            *(_produce_topic_error(t, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for t in denied),
            *(_produce_topic_error(t, ErrorCode.UNKNOWN_TOPIC_ID) for t in unknown),
        ]


def _produce_error(req: ProduceRequest, code: int) -> list[ProduceTopicData]:
    return [_produce_topic_error(t, code) for t in req.topic_data]


def _close_on_error(ctx: RequestContext, topics: list[ProduceTopicData]) -> None:
    """With acks=0 the producer reads no answer: Kafka closes the connection on any
    partition's error instead, so the client notices and refreshes its metadata."""
    failed = [
        f"{t.name}-{p.index}: {ErrorCode(p.error_code).name}"
        for t in topics
        for p in t.partitions
        if p.error_code != ErrorCode.NONE
    ]
    if failed:
        raise CloseConnection(
            f"error during produce request with correlation id {ctx.correlation_id} with "
            f"ack=0; topic and partition to exceptions: {', '.join(failed)}"
        )


def _produce_topic_error(t: TopicProduceData, code: int) -> ProduceTopicData:
    """Every partition of a request's produce topic (any version) answered `code`."""
    return ProduceTopicData(
        t.name,
        t.topic_id or ZERO_UUID,
        [ProducePartitionData(p.index, int(code)) for p in t.partition_data],
    )
