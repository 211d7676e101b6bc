"""ACLs and their filters: Kafka's ResourcePattern, AccessControlEntry, AclBinding and the
filters ResourcePatternFilter, AccessControlEntryFilter, AclBindingFilter
(org.apache.kafka.common.resource / common.acl), with Kafka's `matches` semantics, and what
a Kafka 2.8 broker refuses in CreateAcls, DeleteAcls and DescribeAcls requests (KafkaApis,
AclAuthorizer.createAcls, the requests' own validation), with Kafka's error codes and
messages.

A CreateAcls creation, a DeleteAcls filter and a DescribeAcls filter are all carried here
as an `AclBindingFilter`: a creation's fields may be anything a client sends (ANY, MATCH,
UNKNOWN), and only validation turns it into an `AclBinding`, which, as in Kafka, cannot
hold ANY or MATCH.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Final

from minikafka.protocol.errors import ErrorCode
from minikafka.security.operations import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from minikafka.security.principal import WILDCARD_USER, KafkaPrincipal

# A LITERAL pattern of this name applies to every resource of its type
# (ResourcePattern.WILDCARD_RESOURCE).
WILDCARD_RESOURCE: Final = "*"
# The one name a CLUSTER resource has (Resource.CLUSTER_NAME).
CLUSTER_NAME: Final = "kafka-cluster"
# An ACL for this host applies from every host (AclEntry.WildcardHost).
WILDCARD_HOST: Final = "*"
# An ACL for this principal applies to every principal, of any type
# (AclEntry.WildcardPrincipalString).
WILDCARD_PRINCIPAL: Final = str(WILDCARD_USER)


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    """What an ACL is for: a LITERAL name (or the wildcard "*"), or a PREFIXED name that
    covers every resource whose name starts with it. ValueError for ANY or MATCH, as
    Kafka's constructor refuses them; UNKNOWN is allowed (a newer peer's type)."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __post_init__(self) -> None:
        if self.resource_type is ResourceType.ANY:
            raise ValueError("resourceType must not be ANY")
        if self.pattern_type in (PatternType.MATCH, PatternType.ANY):
            raise ValueError(f"patternType must not be {self.pattern_type.name}")

    def is_unknown(self) -> bool:
        return self.resource_type.is_unknown() or self.pattern_type.is_unknown()

    def to_filter(self) -> ResourcePatternFilter:
        return ResourcePatternFilter(self.resource_type, self.name, self.pattern_type)

    def sort_key(self) -> tuple[int, int, str]:
        return (self.resource_type.value, self.pattern_type.value, self.name)

    def __str__(self) -> str:
        return (
            f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
            f"patternType={self.pattern_type.name})"
        )


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    """Who may (ALLOW) or may not (DENY) do what from where. `principal` is the text
    `Type:name` (`User:*` for every principal), `host` an IP address as the broker prints the
    client's (`*` for every host). ValueError for ANY, as Kafka's constructor."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __post_init__(self) -> None:
        if self.operation is AclOperation.ANY:
            raise ValueError("operation must not be ANY")
        if self.permission_type is AclPermissionType.ANY:
            raise ValueError("permissionType must not be ANY")

    def is_unknown(self) -> bool:
        return self.operation.is_unknown() or self.permission_type.is_unknown()

    def to_filter(self) -> AccessControlEntryFilter:
        return AccessControlEntryFilter(
            self.principal, self.host, self.operation, self.permission_type
        )

    def sort_key(self) -> tuple[str, str, int, int]:
        return (self.principal, self.host, self.operation.value, self.permission_type.value)

    def describe(self) -> str:
        """Kafka's AclEntry.toString, as its authorizer logs an ACL."""
        return (
            f"{self.principal} has {self.permission_type.name} permission for operations: "
            f"{self.operation.name} from hosts: {self.host}"
        )

    def __str__(self) -> str:
        return (
            f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
            f"permissionType={self.permission_type.name})"
        )


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    def is_unknown(self) -> bool:
        return self.pattern.is_unknown() or self.entry.is_unknown()

    def to_filter(self) -> AclBindingFilter:
        return AclBindingFilter(self.pattern.to_filter(), self.entry.to_filter())

    def sort_key(self) -> tuple[tuple[int, int, str], tuple[str, str, int, int]]:
        return (self.pattern.sort_key(), self.entry.sort_key())

    def __str__(self) -> str:
        return f"(pattern={self.pattern}, entry={self.entry})"


@dataclass(frozen=True, slots=True)
class ResourcePatternFilter:
    """Which patterns a DescribeAcls/DeleteAcls request means. `name` None: any name.
    ANY pattern type: LITERAL or PREFIXED patterns of exactly this name; MATCH: every
    pattern that applies to a resource of this name (the literal name, the wildcard "*",
    every prefix of it)."""

    ANY: ClassVar[ResourcePatternFilter]

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType

    def is_unknown(self) -> bool:
        return self.resource_type.is_unknown() or self.pattern_type.is_unknown()

    def matches(self, pattern: ResourcePattern) -> bool:
        if (
            self.resource_type is not ResourceType.ANY
            and self.resource_type != pattern.resource_type
        ):
            return False
        if (
            self.pattern_type not in (PatternType.ANY, PatternType.MATCH)
            and self.pattern_type != pattern.pattern_type
        ):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        # MATCH
        if pattern.pattern_type is PatternType.LITERAL:
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        if pattern.pattern_type is PatternType.PREFIXED:
            return self.name.startswith(pattern.name)
        raise ValueError(f"Unsupported PatternType: {pattern.pattern_type.name}")

    def find_indefinite_field(self) -> str | None:
        """Kafka's text for the first field that can match more than one pattern; None if
        the filter names one resource pattern (ANY, LITERAL and PREFIXED all pass: ANY
        names at most one pattern of each kind)."""
        if self.resource_type is ResourceType.ANY:
            return "Resource type is ANY."
        if self.resource_type is ResourceType.UNKNOWN:
            return "Resource type is UNKNOWN."
        if self.name is None:
            return "Resource name is NULL."
        if self.pattern_type is PatternType.MATCH:
            return "Resource pattern type is MATCH."
        if self.pattern_type is PatternType.UNKNOWN:
            return "Resource pattern type is UNKNOWN."
        return None

    def matches_at_most_one(self) -> bool:
        return self.find_indefinite_field() is None

    def __str__(self) -> str:
        name = "<any>" if self.name is None else self.name
        return (
            f"ResourcePattern(resourceType={self.resource_type.name}, name={name}, "
            f"patternType={self.pattern_type.name})"
        )


ResourcePatternFilter.ANY = ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY)


@dataclass(frozen=True, slots=True)
class AccessControlEntryFilter:
    """Which entries a request means: None principal or host, ANY operation or permission
    type match anything. Principals and hosts are compared as text: `User:*` matches only
    ACLs for `User:*`, not every user's."""

    ANY: ClassVar[AccessControlEntryFilter]

    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    def is_unknown(self) -> bool:
        return self.operation.is_unknown() or self.permission_type.is_unknown()

    def matches(self, entry: AccessControlEntry) -> bool:
        if self.principal is not None and self.principal != entry.principal:
            return False
        if self.host is not None and self.host != entry.host:
            return False
        if self.operation is not AclOperation.ANY and self.operation != entry.operation:
            return False
        return (
            self.permission_type is AclPermissionType.ANY
            or self.permission_type == entry.permission_type
        )

    def find_indefinite_field(self) -> str | None:
        if self.principal is None:
            return "Principal is NULL"
        if self.host is None:
            return "Host is NULL"
        if self.operation is AclOperation.ANY:
            return "Operation is ANY"
        if self.operation is AclOperation.UNKNOWN:
            return "Operation is UNKNOWN"
        if self.permission_type is AclPermissionType.ANY:
            return "Permission type is ANY"
        if self.permission_type is AclPermissionType.UNKNOWN:
            return "Permission type is UNKNOWN"
        return None

    def matches_at_most_one(self) -> bool:
        return self.find_indefinite_field() is None

    def __str__(self) -> str:
        principal = "<any>" if self.principal is None else self.principal
        host = "<any>" if self.host is None else self.host
        return (
            f"(principal={principal}, host={host}, operation={self.operation.name}, "
            f"permissionType={self.permission_type.name})"
        )


AccessControlEntryFilter.ANY = AccessControlEntryFilter(
    None, None, AclOperation.ANY, AclPermissionType.ANY
)


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    ANY: ClassVar[AclBindingFilter]

    pattern_filter: ResourcePatternFilter
    entry_filter: AccessControlEntryFilter

    @classmethod
    def from_codes(
        cls,
        resource_type: int,
        name: str | None,
        pattern_type: int,
        principal: str | None,
        host: str | None,
        operation: int,
        permission_type: int,
    ) -> AclBindingFilter:
        """A filter from the fields of a DescribeAcls or DeleteAcls request, as Kafka's
        fromCode reads them: a code this broker does not know reads as UNKNOWN."""
        return cls(
            ResourcePatternFilter(
                ResourceType.from_code(resource_type), name, PatternType.from_code(pattern_type)
            ),
            AccessControlEntryFilter(
                principal,
                host,
                AclOperation.from_code(operation),
                AclPermissionType.from_code(permission_type),
            ),
        )

    def is_unknown(self) -> bool:
        return self.pattern_filter.is_unknown() or self.entry_filter.is_unknown()

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(binding.pattern) and self.entry_filter.matches(
            binding.entry
        )

    def find_indefinite_field(self) -> str | None:
        """Why this cannot be an ACL to create, in Kafka's words (KafkaAdminClient.createAcls
        refuses such a binding with INVALID_REQUEST and this message before sending it)."""
        return (
            self.pattern_filter.find_indefinite_field() or self.entry_filter.find_indefinite_field()
        )

    def matches_at_most_one(self) -> bool:
        return self.pattern_filter.matches_at_most_one() and self.entry_filter.matches_at_most_one()

    def __str__(self) -> str:
        return f"(patternFilter={self.pattern_filter}, entryFilter={self.entry_filter})"


AclBindingFilter.ANY = AclBindingFilter(ResourcePatternFilter.ANY, AccessControlEntryFilter.ANY)


def parse_acl_principal(text: str) -> KafkaPrincipal:
    """An ACL's principal text as the authorizer reads it (SecurityUtils.parseKafkaPrincipal
    via KafkaPrincipal.parse); ValueError if it is not `Type:name`."""
    return KafkaPrincipal.parse(text)


# ---------------------------------------------------------------------------------------
# What a Kafka 2.8 broker refuses.


@dataclass(frozen=True, slots=True)
class AclError:
    """An error as a CreateAcls/DeleteAcls/DescribeAcls response carries it (Kafka's
    ApiError): the code, and the message, None where Kafka sends none (UNKNOWN_SERVER_ERROR
    never carries one, so as not to leak internals)."""

    error_code: ErrorCode
    message: str | None


class MalformedAclRequestError(ValueError):
    """A request Kafka fails to parse (the request class's own validation throws inside
    RequestContext.parseRequest): the broker answers nothing and closes the connection."""


def _has_unknown(f: AclBindingFilter) -> bool:
    return (
        f.pattern_filter.pattern_type.is_unknown()
        or f.pattern_filter.resource_type.is_unknown()
        or f.entry_filter.permission_type.is_unknown()
        or f.entry_filter.operation.is_unknown()
    )


def check_create_acls_request(creations: Sequence[AclBindingFilter], version: int) -> None:
    """CreateAclsRequest.validate: version 0 knows only LITERAL patterns, and no field may
    be UNKNOWN (a code this broker does not know). MalformedAclRequestError otherwise."""
    if version == 0 and any(
        c.pattern_filter.pattern_type is not PatternType.LITERAL for c in creations
    ):
        raise MalformedAclRequestError("Version 0 only supports literal resource pattern types")
    if any(_has_unknown(c) for c in creations):
        raise MalformedAclRequestError("CreatableAcls contain unknown elements")


def check_acl_filters_request(
    filters: Sequence[AclBindingFilter], version: int, api: str = "DeleteAcls"
) -> list[AclBindingFilter]:
    """DeleteAclsRequest/DescribeAclsRequest.normalizeAndValidate: version 0 knew only
    literal patterns, so ANY reads as LITERAL there and anything else but LITERAL is
    refused; no field may be UNKNOWN. Returns the filters as the broker then reads them;
    MalformedAclRequestError for a request Kafka fails to parse."""
    out: list[AclBindingFilter] = []
    for f in filters:
        pattern_type = f.pattern_filter.pattern_type
        if version == 0:
            if pattern_type is PatternType.ANY:
                f = AclBindingFilter(
                    ResourcePatternFilter(
                        f.pattern_filter.resource_type, f.pattern_filter.name, PatternType.LITERAL
                    ),
                    f.entry_filter,
                )
            elif pattern_type is not PatternType.LITERAL:
                raise MalformedAclRequestError(
                    f"Version 0 does not support pattern type {pattern_type.name} "
                    "(only LITERAL and ANY are supported)"
                    if api == "DeleteAcls"
                    else "Version 0 only supports literal resource pattern types"
                )
        if _has_unknown(f):
            raise MalformedAclRequestError(
                "Filters contain UNKNOWN elements"
                if api == "DeleteAcls"
                else "DescribeAclsRequest contains UNKNOWN elements"
            )
        out.append(f)
    return out


def _creation_binding(c: AclBindingFilter) -> AclBinding:
    # CreateAclsRequest.aclBinding: Kafka's constructors throw on ANY/MATCH, and the
    # request's strings are never null on the wire.
    p, e = c.pattern_filter, c.entry_filter
    if p.name is None or e.principal is None or e.host is None:
        raise ValueError("null field in an ACL creation")
    return AclBinding(
        ResourcePattern(p.resource_type, p.name, p.pattern_type),
        AccessControlEntry(e.principal, e.host, e.operation, e.permission_type),
    )


def _znode_name_ok(name: str) -> bool:
    # The pattern's name is a znode name (/kafka-acl/<Type>/<name>): ZooKeeper refuses
    # "." and "..", and a "/" would address another znode.
    return bool(name) and "/" not in name and name not in (".", "..")


# Kafka's messages (KafkaApis.handleCreateAcls, AclAuthorizer.createAcls).
CLUSTER_NAME_MESSAGE: Final = f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
EMPTY_NAME_MESSAGE: Final = "Invalid empty resource name"
FAILED_TO_CREATE_MESSAGE: Final = "Failed to create ACL"


def validate_acl_creations(creations: Sequence[AclBindingFilter]) -> list[AclBinding | AclError]:
    """What a Kafka 2.8 broker makes of each creation of a parsed CreateAcls request (after
    `check_create_acls_request` and the cluster ALTER authorization): the binding to
    store, or the error for that creation. In Kafka's order:

    - a creation with an ANY resource type, ANY or MATCH pattern type, ANY operation or
      ANY permission type makes Kafka's handler throw building the bindings: every
      creation of the request fails with UNKNOWN_SERVER_ERROR (no message);
    - a CLUSTER pattern not named `kafka-cluster`, an empty name: INVALID_REQUEST with
      Kafka's message (KafkaApis);
    - an UNKNOWN field (only reachable without the request check): INVALID_REQUEST,
      "Failed to create ACL" (AclAuthorizer's validateAclBinding);
    - a principal that is not `Type:name`, a name ZooKeeper cannot take as a znode: Kafka
      fails while updating that resource pattern's znode, so every creation of the request
      on the same pattern fails with UNKNOWN_SERVER_ERROR (no message).

    Kafka 2.8 refuses nothing else: any operation on any resource type (READ on the
    cluster), any host text, a PREFIXED pattern named "*" (a prefix like any other)."""
    try:
        bindings = [_creation_binding(c) for c in creations]
    except ValueError:
        return [AclError(ErrorCode.UNKNOWN_SERVER_ERROR, None) for _ in creations]
    results: list[AclBinding | AclError] = []
    for b in bindings:
        if b.pattern.resource_type is ResourceType.CLUSTER and b.pattern.name != CLUSTER_NAME:
            results.append(AclError(ErrorCode.INVALID_REQUEST, CLUSTER_NAME_MESSAGE))
        elif not b.pattern.name:
            results.append(AclError(ErrorCode.INVALID_REQUEST, EMPTY_NAME_MESSAGE))
        elif b.is_unknown():
            results.append(AclError(ErrorCode.INVALID_REQUEST, FAILED_TO_CREATE_MESSAGE))
        else:
            results.append(b)
    failed_patterns: set[ResourcePattern] = set()
    for r in results:
        if isinstance(r, AclBinding):
            if not _znode_name_ok(r.pattern.name):
                failed_patterns.add(r.pattern)
            else:
                try:
                    parse_acl_principal(r.entry.principal)
                except ValueError:
                    failed_patterns.add(r.pattern)
    return [
        AclError(ErrorCode.UNKNOWN_SERVER_ERROR, None)
        if isinstance(r, AclBinding) and r.pattern in failed_patterns
        else r
        for r in results
    ]
