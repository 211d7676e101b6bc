#!/usr/bin/env python3
"""Health check of a minikafka broker container (installed as `minikafka-healthcheck`).

Reads the server.properties the entrypoint wrote, sends Kafka's Metadata request (no
topics) to this broker's own inter-broker listener (over TLS and SASL as the broker connects
to the others there: its keystore for an SSL listener that asks for certificates, its
inter-broker credentials on a SASL one), and exits 0 only if the broker lists
itself among the live brokers: then it serves requests, is registered in ZooKeeper, and the
controller has sent it UpdateMetadata. A broker that is up but cut off from ZooKeeper or
the controller, or still recovering its logs, is reported unhealthy, with the reason on
stdout (shown by `docker inspect --format '{{json .State.Health}}' CONTAINER`); a starting
broker holds Kafka requests until it has registered and heard from the controller, so
until then the answer does not come in time.

Usage: minikafka-healthcheck [SERVER_PROPERTIES]  (default: $SERVER_PROPERTIES, then
/etc/minikafka/server.properties)
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from minikafka.client.kafka_wire import KafkaConnection, metadata_request
from minikafka.client.wire_security import PLAINTEXT_WIRE, SaslCredentials, WireSecurity
from minikafka.config.broker import BrokerConfig
from minikafka.server.listener_security import inter_broker_connections

DEFAULT_CONFIG = "/etc/minikafka/server.properties"
TIMEOUT_S = 3.0


def local_address(config: BrokerConfig) -> tuple[str, int]:
    """Where to reach this broker from inside its container: the inter-broker listener's
    bind address, or loopback when it binds every interface."""
    listeners = config.resolved_listeners()
    ep = next(e for e in listeners.bind if e.listener == listeners.inter_broker)
    return (ep.host if ep.host not in ("", "0.0.0.0", "::") else "127.0.0.1"), ep.port


async def check(
    host: str,
    port: int,
    broker_id: int,
    timeout_s: float = TIMEOUT_S,
    security: WireSecurity = PLAINTEXT_WIRE,
) -> str | None:
    """None if healthy, else why not."""
    conn = KafkaConnection(
        host,
        port,
        client_id="healthcheck",
        connect_timeout_s=timeout_s,
        security=security,
    )
    try:
        response = await conn.call(metadata_request([]), timeout_s)
    except Exception as e:
        return f"no Metadata response from {host}:{port}: {e}"
    finally:
        await conn.close()
    live = sorted(b.node_id for b in response.brokers)
    if broker_id not in live:
        return (
            f"broker {broker_id} answers on {host}:{port} but is not among the live "
            f"brokers it knows {live} (not registered, or no UpdateMetadata from a controller)"
        )
    return None


def inter_broker_security(config: BrokerConfig) -> WireSecurity:
    """How this broker connects to the others' inter-broker listener: its TLS context (its
    own certificate where the listener asks for one) and its SASL credentials."""
    settings = config.security()
    context = inter_broker_connections(settings).ssl_context
    sasl = None
    if settings.inter_broker_mechanism is not None:
        assert settings.inter_broker_credentials is not None
        username, password = settings.inter_broker_credentials
        sasl = SaslCredentials(settings.inter_broker_mechanism, username, password)
    return WireSecurity(context, sasl)


def main(argv: list[str]) -> int:
    path = Path(argv[1] if len(argv) > 1 else os.environ.get("SERVER_PROPERTIES", DEFAULT_CONFIG))
    try:
        config = BrokerConfig.load(path)
    except Exception as e:
        print(f"cannot read the broker's config {path}: {e}")
        return 1
    host, port = local_address(config)
    try:
        security = inter_broker_security(config)
    except Exception as e:
        print(f"cannot set up the inter-broker listener's security: {e}")
        return 1
    problem = asyncio.run(check(host, port, config.broker_id, security=security))
    if problem is not None:
        print(problem)
        return 1
    print(f"broker {config.broker_id} is live on {host}:{port}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
