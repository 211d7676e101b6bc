"""Kafka's ACL vocabulary: AclOperation, AclPermissionType, ResourceType and PatternType
(org.apache.kafka.common.acl / common.resource, same codes), the names Kafka writes in
ZooKeeper and prints (SecurityUtils.resourceTypeName, operationName, permissionTypeName),
and the operations each resource type supports (AclEntry.supportedOperations), for the
authorized operations a client may ask for in Metadata, DescribeCluster and
DescribeGroups (KIP-430).

Without an authorizer, Kafka answers every operation the resource supports: that is what
`authorized_operations` answers. With one (authorizer.AclAuthorizer), the answer is the
supported operations the authorizer allows. The answer is a bit field, bit n set for the
operation of code n (Kafka's Utils.to32BitField); INT32_MIN says it was not asked for."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Final, Self


class _KafkaEnum(enum.IntEnum):
    """A Kafka enum of the ACL API: code 0 is UNKNOWN, what a newer peer's value reads as."""

    @classmethod
    def from_code(cls, code: int) -> Self:
        """Kafka's fromCode: UNKNOWN for a code this version does not know."""
        try:
            return cls(code)
        except ValueError:
            return cls(0)

    @classmethod
    def from_string(cls, text: str) -> Self:
        """Kafka's fromString (Java's valueOf of the upper-cased text): the constant's name
        in any case, `topic` or `TRANSACTIONAL_ID`; UNKNOWN otherwise."""
        return cls.__members__.get(text.upper(), cls(0))

    @property
    def pascal_name(self) -> str:
        """The name Kafka writes in ZooKeeper and prints (SecurityUtils.toPascalCase):
        `Topic`, `TransactionalId`, `DescribeConfigs`, `Allow`."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def from_pascal_name(cls, text: str) -> Self:
        """SecurityUtils.resourceType/operation/permissionType: the Pascal-case name in any
        case and without underscores (`Read`, `READ`, `describeconfigs`); UNKNOWN
        otherwise."""
        wanted = text.upper()
        for member in cls:
            if member.pascal_name.upper() == wanted:
                return member
        return cls(0)

    def is_unknown(self) -> bool:
        return self.value == 0


class AclOperation(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1  # in a filter: any operation
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


class AclPermissionType(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1  # in a filter: either
    DENY = 2
    ALLOW = 3


class ResourceType(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1  # in a filter: any resource type
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6


class PatternType(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1  # in a filter: LITERAL or PREFIXED, the name matched exactly
    MATCH = 2  # in a filter: every pattern that applies to the name (literal, "*", prefixes)
    LITERAL = 3
    PREFIXED = 4

    @classmethod
    def from_string(cls, text: str) -> Self:
        """Kafka's PatternType.fromString is case-sensitive, unlike the other enums':
        `PREFIXED` but not `Prefixed` (an ExtendedAclChangeEvent carries the upper-case
        name)."""
        return cls.__members__.get(text, cls(0))

    def is_specific(self) -> bool:
        """LITERAL or PREFIXED: a pattern an ACL can be stored under (Kafka's isSpecific)."""
        return self in (PatternType.LITERAL, PatternType.PREFIXED)


# The resource types an ACL can be stored for (AclEntry.ResourceTypes).
CONCRETE_RESOURCE_TYPES: Final = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
    ResourceType.DELEGATION_TOKEN,
)

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
    ResourceType.TRANSACTIONAL_ID: frozenset({AclOperation.DESCRIBE, AclOperation.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({AclOperation.DESCRIBE}),
}

# What a response carries when the request did not ask for authorized operations.
NOT_REQUESTED: Final = -(2**31)


def supported_operations(resource: ResourceType) -> frozenset[AclOperation]:
    """AclEntry.supportedOperations; ValueError for UNKNOWN and ANY, as Kafka's
    IllegalArgumentException ("Not a concrete resource type")."""
    try:
        return SUPPORTED_OPERATIONS[resource]
    except KeyError:
        raise ValueError(f"Not a concrete resource type: {resource.name}") from None


def to_32bit_field(operations: Iterable[AclOperation]) -> int:
    field = 0
    for op in operations:
        field |= 1 << int(op)
    return field


def authorized_operations(resource: ResourceType, requested: bool) -> int:
    """The bit field of what the client may do to a resource of this type without an
    authorizer (every supported operation), or NOT_REQUESTED when it did not ask."""
    if not requested:
        return NOT_REQUESTED
    return to_32bit_field(supported_operations(resource))
