"""Apache Kafka's protocol on the client listeners: a decoded request to its handler.

Each API family (a module of this package) declares the APIs and versions it serves next
to their handlers (registry.py); SERVED_VERSIONS, gathered from those declarations, is
what ApiVersions advertises and what the codec decodes, so a client never sends a request
nothing answers. A request for another API is a client bug: the connection is closed, as
Kafka does.
"""

from __future__ import annotations

import asyncio
from typing import Final

from minikafka.protocol.kafka.codec import KafkaRequest, encode_response, response_type
from minikafka.protocol.kafka.fetch_response import Chunk
from minikafka.security.sasl_server import API_VERSIONS, SASL_AUTHENTICATE, SASL_HANDSHAKE
from minikafka.server.broker_services import BrokerServices
from minikafka.server.kafka_api.acls import AclApis
from minikafka.server.kafka_api.cluster import ClusterApis
from minikafka.server.kafka_api.configs import ConfigApis
from minikafka.server.kafka_api.delete_records import DeleteRecordsApis
from minikafka.server.kafka_api.elections import ElectionApis
from minikafka.server.kafka_api.fetch import FetchApis
from minikafka.server.kafka_api.group_offsets import GroupOffsetApis
from minikafka.server.kafka_api.groups import GroupApis
from minikafka.server.kafka_api.list_offsets import ListOffsetsApis
from minikafka.server.kafka_api.log_dirs import LogDirApis
from minikafka.server.kafka_api.metadata import MetadataApis
from minikafka.server.kafka_api.model import read, write
from minikafka.server.kafka_api.produce import ProduceApis
from minikafka.server.kafka_api.producer_ids import ProducerIdApis
from minikafka.server.kafka_api.reassignments import ReassignmentApis
from minikafka.server.kafka_api.registry import (
    ApiFamily,
    EncodedResponse,
    RequestContext,
    Route,
    routes,
    served_versions,
)
from minikafka.server.kafka_api.sasl import SaslApis
from minikafka.server.kafka_api.scram import ScramApis
from minikafka.server.kafka_api.topics import TopicApis
from minikafka.server.session import ConnectionSession

FAMILIES: Final[tuple[type[ApiFamily], ...]] = (
    ClusterApis,
    MetadataApis,
    ProduceApis,
    FetchApis,
    ListOffsetsApis,
    TopicApis,
    ConfigApis,
    GroupApis,
    GroupOffsetApis,
    ProducerIdApis,
    SaslApis,
    ScramApis,
    AclApis,
    ElectionApis,
    ReassignmentApis,
    DeleteRecordsApis,
    LogDirApis,
)

# api key -> (min, max): every API the broker serves on its client listeners. The minimum
# versions are Kafka 4.x's (KIP-896 made Kafka 2.1's protocol the baseline): Produce < 3,
# Fetch < 4, ListOffsets < 1, CreateTopics < 2, DeleteTopics < 1, OffsetForLeaderEpoch < 2
# and DescribeConfigs < 1 are refused, and kio has no schemas for them either. Metadata,
# CreatePartitions, InitProducerId, IncrementalAlterConfigs, DescribeCluster and ApiVersions
# keep their v0. OffsetCommit and OffsetFetch stop before v10, which names topics by id.
SERVED_VERSIONS: Final = served_versions(FAMILIES)


# Answered while the broker starts: a broker authenticating to this one on the inter-broker
# listener (to send the UpdateMetadata that makes this one ready) must not wait for it.
_ANSWERED_BEFORE_READY: Final = frozenset({API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE})


class KafkaApiHandler:
    """One per listener (Metadata answers with the addresses of the listener asked)."""

    versions: dict[int, tuple[int, int]] = SERVED_VERSIONS

    def __init__(
        self, apis: BrokerServices, listener: str, ready: asyncio.Event | None = None
    ) -> None:
        self.listener = listener
        # As Kafka's socket server (startProcessingRequests): clients' requests wait until
        # the broker has started (registered, and told of the cluster by the controller).
        # Before that its metadata is empty, and a client told "no brokers" may start over
        # from its bootstrap list (librdkafka's re-bootstrap), stalling its producer.
        self._ready = ready
        families: list[ApiFamily] = [
            ClusterApis(apis, SERVED_VERSIONS),
            MetadataApis(apis),
            ProduceApis(apis),
            FetchApis(apis),
            ListOffsetsApis(apis),
            TopicApis(apis),
            ConfigApis(apis),
            GroupApis(apis),
            GroupOffsetApis(apis),
            ProducerIdApis(apis),
            SaslApis(),
            ScramApis(apis),
            AclApis(apis),
            ElectionApis(apis),
            ReassignmentApis(apis),
            DeleteRecordsApis(apis),
            LogDirApis(apis),
        ]
        assert [type(f) for f in families] == list(FAMILIES)
        self._routes: dict[int, Route] = {
            route.spec.key: route for family in families for route in routes(family)
        }

    def serves(self, api_key: int) -> bool:
        return api_key in self._routes

    async def handle(
        self, request: KafkaRequest, session: ConnectionSession | None = None
    ) -> list[Chunk] | None:
        """The response frame as chunks, or None when Kafka sends none (produce with
        acks=0)."""
        if (
            self._ready is not None
            and not self._ready.is_set()
            and request.api_key not in _ANSWERED_BEFORE_READY
        ):
            await self._ready.wait()
        route = self._routes[request.api_key]
        ctx = RequestContext(
            api_version=request.api_version,
            correlation_id=request.correlation_id,
            client_id=request.client_id or "",
            client_host=session.client_host if session is not None else "",
            listener=self.listener,
            session=session,
        )
        result = await route.handler(read(route.request_model, request.body), ctx)
        if result is None:
            return None
        if isinstance(result, EncodedResponse):
            return result.chunks
        body = write(response_type(request.api_key, request.api_version), result)
        return [encode_response(request, body)]
