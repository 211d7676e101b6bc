"""Until a starting broker is ready (registered and told of the cluster), clients' requests
wait; the SASL exchange does not, since the broker that must tell it of the cluster
authenticates on the inter-broker listener first."""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.metadata.v9.request import MetadataRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.kafka.codec import KafkaRequest
from minikafka.security.sasl_server import SaslServerConfig
from minikafka.server.kafka_api.handler import KafkaApiHandler
from minikafka.server.session import SASL_PLAINTEXT, ConnectionSession, ListenerSecurity
from tests.unit.test_kafka_api_handlers import FakeApis
from tests.unit.test_kafka_codec import parse_response


def request(body: Any) -> KafkaRequest:
    return KafkaRequest(
        api_key=body.__api_key__,
        api_version=body.__version__,
        correlation_id=5,
        client_id="c",
        body=body,
        request_header_version=2 if body.__flexible__ else 1,
        response_header_version=1 if body.__flexible__ else 0,
    )


async def test_sasl_is_answered_before_the_broker_is_ready_and_metadata_waits() -> None:
    ready = asyncio.Event()
    handler = KafkaApiHandler(FakeApis(), "INTERNAL", ready)  # type: ignore[arg-type]
    security = ListenerSecurity(protocol=SASL_PLAINTEXT, sasl=SaslServerConfig(("SCRAM-SHA-512",)))
    session = ConnectionSession("INTERNAL", security, "/127.0.0.1")
    chunks = await asyncio.wait_for(
        handler.handle(request(SaslHandshakeRequest(mechanism="SCRAM-SHA-512")), session), 5
    )
    assert chunks is not None
    _, _, response = parse_response(b"".join(bytes(c) for c in chunks), 17, 1)  # type: ignore[arg-type]
    assert response.error_code == ErrorCode.NONE

    metadata = asyncio.ensure_future(
        handler.handle(
            request(
                MetadataRequest(
                    topics=None,
                    allow_auto_topic_creation=False,
                    include_cluster_authorized_operations=False,
                    include_topic_authorized_operations=False,
                )
            )
        )
    )
    await asyncio.sleep(0.05)  # the request had every chance to be answered: it waits
    assert not metadata.done()
    ready.set()
    assert await asyncio.wait_for(metadata, 5) is not None
