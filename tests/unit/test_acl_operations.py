"""KIP-430's authorized operations without an authorizer: every operation the resource
type supports, as Kafka's bit field (bit n for the operation of code n)."""

from __future__ import annotations

from minikafka.security.operations import (
    NOT_REQUESTED,
    AclOperation,
    ResourceType,
    authorized_operations,
)


def bits(field: int) -> set[AclOperation]:
    return {op for op in AclOperation if field & (1 << int(op))}


def test_every_operation_a_resource_supports_and_only_those() -> None:
    assert bits(authorized_operations(ResourceType.TOPIC, True)) == {
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    }
    assert bits(authorized_operations(ResourceType.GROUP, True)) == {
        AclOperation.READ,
        AclOperation.DELETE,
        AclOperation.DESCRIBE,
    }
    cluster = bits(authorized_operations(ResourceType.CLUSTER, True))
    assert AclOperation.IDEMPOTENT_WRITE in cluster and AclOperation.READ not in cluster
    # Kafka's figures for the same, as its brokers answer them without an authorizer.
    assert authorized_operations(ResourceType.TOPIC, True) == 3576
    assert authorized_operations(ResourceType.GROUP, True) == 328
    assert authorized_operations(ResourceType.CLUSTER, True) == 8096


def test_not_asked_is_int32_min() -> None:
    for resource in ResourceType:
        assert authorized_operations(resource, False) == NOT_REQUESTED == -(2**31)
