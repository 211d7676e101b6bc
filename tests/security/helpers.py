"""What the security tests share: SCRAM users and ACLs made as the admin, the cluster's
TLS trust, and Kafka requests sent straight to one broker (librdkafka picks its broker
itself, and drops DescribeAcls' error code)."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kio.schema.describe_acls.v2.request import DescribeAclsRequest
from kio.static.primitive import i8

from minikafka.client.kafka_wire import KafkaConnection
from minikafka.client.wire_security import PLAINTEXT_WIRE, wire_security
from minikafka.cluster import LocalCluster
from tests.cluster.conftest import wait_until

Acl = tuple[str, str, str, str, str, str, str]


def add_user(cluster: LocalCluster, user: str, password: str, iterations: int = 4096) -> None:
    admin = AdminClient(cluster.client_config())
    futures = admin.alter_user_scram_credentials(
        [
            UserScramCredentialUpsertion(
                user, ScramCredentialInfo(mechanism, iterations), password.encode()
            )
            for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)
        ]
    )
    for f in futures.values():
        f.result(30)


def ca(cluster: LocalCluster) -> str:
    return cluster.client_config()["ssl.ca.location"]


def as_user(cluster: LocalCluster, user: str, password: str, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": cluster.bootstrap_servers,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": password,
        "ssl.ca.location": ca(cluster),
        **extra,
    }


def tls_context(cluster: LocalCluster) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=ca(cluster))


def acl(b: AclBinding) -> Acl:
    return (
        b.restype.name,
        b.name,
        b.resource_pattern_type.name,
        b.principal,
        b.host,
        b.operation.name,
        b.permission_type.name,
    )


def admin(cluster: LocalCluster) -> AdminClient:
    return AdminClient(cluster.client_config())


def create(client: AdminClient, *bindings: AclBinding) -> None:
    for f in client.create_acls(list(bindings), request_timeout=30).values():
        f.result(60)


ANY_CODE = i8(1)
DESCRIBE_EVERYTHING = DescribeAclsRequest(
    resource_type_filter=ANY_CODE,
    resource_name_filter=None,
    pattern_type_filter=ANY_CODE,
    principal_filter=None,
    host_filter=None,
    operation=ANY_CODE,
    permission_type=ANY_CODE,
)


def describe_raw(
    cluster: LocalCluster, broker: int, user: str | None = "admin", password: str = ""
) -> Any:
    """DescribeAcls v2 (every ACL) sent to one broker alone, on Kafka's protocol: as `user`
    with the cluster's own security settings (its SASL mechanism, its TLS), or in plaintext
    when `user` is None. (librdkafka's describe_acls drops the response's error code, so
    errors are read here.)"""
    security = PLAINTEXT_WIRE
    if user is not None:
        config = cluster.client_config()
        secret = password or config["sasl.password"]
        security = wire_security({**config, "sasl.username": user, "sasl.password": secret})

    async def run() -> Any:
        host, port = cluster.broker_address(broker)
        connection = KafkaConnection(host, port, client_id="test", security=security)
        try:
            return await connection.call(DESCRIBE_EVERYTHING, 30)
        finally:
            await connection.close()

    return asyncio.run(run())


# Kafka's resource type codes, as librdkafka names them (CLUSTER is its BROKER).
RESOURCE_TYPES = {2: "TOPIC", 3: "GROUP", 4: "BROKER"}


def describe_on(cluster: LocalCluster, broker: int) -> set[Acl]:
    """Every ACL in one broker's cache, as the admin sees it."""
    response = describe_raw(cluster, broker)
    assert int(response.error_code) == 0, response
    return {
        (
            RESOURCE_TYPES[r.resource_type],
            r.resource_name,
            ResourcePatternType(r.pattern_type).name,
            a.principal,
            a.host,
            AclOperation(a.operation).name,
            AclPermissionType(a.permission_type).name,
        )
        for r in response.resources
        for a in r.acls
    }


def every_broker_has(cluster: LocalCluster, expected: set[Acl]) -> None:
    for b in cluster.broker_ids:
        wait_until(lambda b=b: describe_on(cluster, b) == expected, 30, f"broker {b}'s ACLs")


def grant(cluster: LocalCluster, *bindings: AclBinding) -> None:
    """Create ACLs as the admin, and wait until every broker's cache has them (each broker
    learns of them from ZooKeeper's change notifications, a moment apart)."""
    create(admin(cluster), *bindings)
    wanted = {acl(b) for b in bindings}
    for b in cluster.broker_ids:
        wait_until(lambda b=b: wanted <= describe_on(cluster, b), 30, f"broker {b}'s ACLs")
