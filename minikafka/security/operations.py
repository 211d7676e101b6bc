"""Kafka's ACL operations (AclOperation) and the ones each resource type supports
(AclEntry.supportedOperations), for the authorized operations a client may ask for in
Metadata, DescribeCluster and DescribeGroups (KIP-430).

Without an authorizer, Kafka answers every operation the resource supports: that is what
minikafka answers, having none yet. The answer is a bit field, bit n set for the operation
of code n (Kafka's Utils.to32BitField); INT32_MIN says it was not asked for."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Final


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class ResourceType(enum.Enum):
    TOPIC = "topic"
    GROUP = "group"
    CLUSTER = "cluster"


SUPPORTED_OPERATIONS: Final[dict[ResourceType, frozenset[AclOperation]]] = {
    ResourceType.TOPIC: frozenset(
        {
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.CREATE,
            AclOperation.DESCRIBE,
            AclOperation.DELETE,
            AclOperation.ALTER,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
        }
    ),
    ResourceType.GROUP: frozenset({AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE}),
    ResourceType.CLUSTER: frozenset(
        {
            AclOperation.CREATE,
            AclOperation.CLUSTER_ACTION,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
            AclOperation.IDEMPOTENT_WRITE,
            AclOperation.ALTER,
            AclOperation.DESCRIBE,
        }
    ),
}

# What a response carries when the request did not ask for authorized operations.
NOT_REQUESTED: Final = -(2**31)


def to_32bit_field(operations: Iterable[AclOperation]) -> int:
    field = 0
    for op in operations:
        field |= 1 << int(op)
    return field


def authorized_operations(resource: ResourceType, requested: bool) -> int:
    """The bit field of what the client may do to a resource of this type, or
    NOT_REQUESTED when it did not ask."""
    if not requested:
        return NOT_REQUESTED
    return to_32bit_field(SUPPORTED_OPERATIONS[resource])
