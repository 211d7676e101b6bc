"""Kafka's ZooKeeper layout and bytes for ACLs (kafka.zk.ZkData: ZkAclStore, LiteralAclStore,
ExtendedAclStore, ExtendedAclZNode, ResourceZNode, ZkAclChangeStore, LiteralAclChangeStore,
ExtendedAclChangeStore, ExtendedAclChangeEvent; kafka.security.authorizer.AclEntry's JSON),
pure: paths and codecs only (the kazoo adapter that reads and writes them is elsewhere).

    /kafka-acl/Topic/orders                      LITERAL patterns (and the wildcard "*")
    /kafka-acl-extended/prefixed/Topic/orders-   PREFIXED patterns
      => {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
                               "operation":"Read","host":"*"}]}
    /kafka-acl-changes/acl_changes_0000000007    a LITERAL pattern changed: b"TOPIC:orders"
    /kafka-acl-extended-changes/acl_changes_...  a PREFIXED one: {"version":1,
        "resourceType":"TOPIC","name":"orders-","patternType":"PREFIXED"}

Path segments and ACL fields use Kafka's Pascal-case names (`Topic`, `TransactionalId`,
`Allow`, `DescribeConfigs`); change notifications use the Java constant names (`TOPIC`,
`PREFIXED`), which is what Kafka writes there. A change notification is a persistent
sequential znode; listeners purge those older than 15 minutes.

Decoders raise ValueError naming what is wrong; they accept what Kafka reads.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable
from typing import Any, Final

from minikafka.security.acls import AccessControlEntry, ResourcePattern, parse_acl_principal
from minikafka.security.operations import (
    CONCRETE_RESOURCE_TYPES,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

LITERAL_ACL_PATH: Final = "/kafka-acl"
EXTENDED_ACL_PATH: Final = "/kafka-acl-extended"
LITERAL_ACL_CHANGES_PATH: Final = "/kafka-acl-changes"
EXTENDED_ACL_CHANGES_PATH: Final = "/kafka-acl-extended-changes"
ACL_CHANGE_PREFIX: Final = "acl_changes_"
# ZkNodeChangeNotificationListener's changeExpirationMs: notifications older are purged.
ACL_CHANGE_EXPIRATION_MS: Final = 15 * 60 * 1000

ACL_VERSION: Final = 1  # AclEntry.CurrentVersion
ACL_CHANGE_EVENT_VERSION: Final = 1  # ExtendedAclChangeEvent.currentVersion


def _compact_json(obj: object) -> bytes:
    # Jackson's ObjectMapper defaults: no spaces, UTF-8 as is.
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _znode_name(name: str) -> str:
    # A name with a slash (or "." / "..", or empty) would address another znode or none.
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"invalid resource name for an ACL znode path: {name!r}")
    return name


# -- where ACLs live --------------------------------------------------------------------


def acl_store_path(pattern_type: PatternType) -> str:
    """The root of a pattern type's ACLs (ZkAclStore.aclPath): `/kafka-acl` for LITERAL,
    `/kafka-acl-extended/<pattern type, lower case>` for the others (PREFIXED)."""
    if pattern_type is PatternType.LITERAL:
        return LITERAL_ACL_PATH
    if pattern_type is PatternType.PREFIXED:
        return f"{EXTENDED_ACL_PATH}/{pattern_type.name.lower()}"
    raise ValueError(f"Invalid pattern type: {pattern_type.name}")


def resource_type_path(pattern_type: PatternType, resource_type: ResourceType) -> str:
    """The parent of the ACL znodes of one resource type (ZkAclStore.path(resourceType)),
    whose children are the patterns' names."""
    if resource_type not in CONCRETE_RESOURCE_TYPES:
        raise ValueError(f"ACLs are stored for concrete resource types, not {resource_type.name}")
    return f"{acl_store_path(pattern_type)}/{resource_type.pascal_name}"


def acl_path(pattern: ResourcePattern) -> str:
    """The znode holding a pattern's ACLs (ResourceZNode.path), e.g. `/kafka-acl/Topic/orders`
    or `/kafka-acl-extended/prefixed/Group/app-`."""
    return (
        f"{resource_type_path(pattern.pattern_type, pattern.resource_type)}/"
        f"{_znode_name(pattern.name)}"
    )


def pattern_from_path(path: str) -> ResourcePattern:
    """The pattern whose ACLs a znode holds: the inverse of `acl_path`. Resource type
    segments are read as Kafka's loadCache reads them (SecurityUtils.resourceType: the
    Pascal-case name, in any case). ValueError for a path outside the ACL stores."""
    for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
        root = acl_store_path(pattern_type) + "/"
        if path.startswith(root):
            type_segment, sep, name = path[len(root) :].partition("/")
            if not sep:
                raise ValueError(f"not an ACL znode (no resource name): {path!r}")
            resource_type = ResourceType.from_pascal_name(type_segment)
            if resource_type not in CONCRETE_RESOURCE_TYPES:
                raise ValueError(f"unknown resource type {type_segment!r} in ACL path {path!r}")
            return ResourcePattern(resource_type, _znode_name(name), pattern_type)
    raise ValueError(f"not an ACL znode: {path!r}")


def acl_paths() -> tuple[str, ...]:
    """The znodes Kafka creates at start (KafkaZkClient.createAclPaths): each store's root,
    a child per concrete resource type under it, and both change roots."""
    paths: list[str] = []
    for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
        paths.append(acl_store_path(pattern_type))
        paths.extend(resource_type_path(pattern_type, rt) for rt in CONCRETE_RESOURCE_TYPES)
    paths.extend(store.path for store in AclChangeStore)
    return tuple(paths)


# -- the ACLs of a pattern ------------------------------------------------------------------


def encode_acls(entries: Iterable[AccessControlEntry]) -> bytes:
    """A pattern's ACLs as its znode holds them (AclEntry.toJsonCompatibleMap), fields in
    Kafka's order. Kafka writes a set in hash order; these are sorted, so that equal sets
    are equal bytes."""
    acls = sorted(frozenset(entries), key=AccessControlEntry.sort_key)
    return _compact_json(
        {
            "version": ACL_VERSION,
            "acls": [
                {
                    "principal": e.principal,
                    "permissionType": e.permission_type.pascal_name,
                    "operation": e.operation.pascal_name,
                    "host": e.host,
                }
                for e in acls
            ],
        }
    )


def _string_field(obj: dict[str, Any], key: str, what: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{what}: {key!r} must be a string, got {value!r}")
    return value


def decode_acls(data: bytes) -> frozenset[AccessControlEntry]:
    """A pattern's ACLs from its znode (AclEntry.fromBytes). Empty data is no ACLs, as in
    Kafka. Operation and permission names are read as Kafka reads them (any case); a name
    this version does not know reads as UNKNOWN, an ACL that then matches nothing (a
    newer broker's). ValueError for anything else, where Kafka would fail the load, and
    for data that is not JSON, which Kafka reads as no ACLs at all."""
    if not data:
        return frozenset()
    what = "ACL znode"
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{what}: not JSON: {e}") from e
    if not isinstance(doc, dict):
        raise ValueError(f"{what}: expected a JSON object, got {type(doc).__name__}")
    version = doc.get("version")
    if type(version) is not int or version != ACL_VERSION:
        raise ValueError(f"{what}: unsupported version {version!r} (expected {ACL_VERSION})")
    acls = doc.get("acls")
    if not isinstance(acls, list):
        raise ValueError(f"{what}: 'acls' must be a list, got {acls!r}")
    out: set[AccessControlEntry] = set()
    for item in acls:
        if not isinstance(item, dict):
            raise ValueError(f"{what}: an ACL must be a JSON object, got {item!r}")
        principal = _string_field(item, "principal", what)
        try:
            parse_acl_principal(principal)
        except ValueError as e:
            raise ValueError(f"{what}: {e}") from e
        permission = AclPermissionType.from_pascal_name(_string_field(item, "permissionType", what))
        operation = AclOperation.from_pascal_name(_string_field(item, "operation", what))
        host = _string_field(item, "host", what)
        try:
            out.add(AccessControlEntry(principal, host, operation, permission))
        except ValueError as e:
            raise ValueError(f"{what}: {e}") from e
    return frozenset(out)


# -- change notifications ---------------------------------------------------------------


class AclChangeStore(enum.Enum):
    """Where a pattern's change is announced (ZkAclChangeStore): LITERAL patterns in the
    pre-2.0 store with the legacy text, the others as an ExtendedAclChangeEvent."""

    LITERAL = LITERAL_ACL_CHANGES_PATH
    EXTENDED = EXTENDED_ACL_CHANGES_PATH

    @property
    def path(self) -> str:
        return self.value

    @property
    def sequence_prefix(self) -> str:
        """What a notification is created at, sequentially (ZkAclChangeStore.createPath)."""
        return f"{self.value}/{ACL_CHANGE_PREFIX}"

    @classmethod
    def for_pattern_type(cls, pattern_type: PatternType) -> AclChangeStore:
        if pattern_type is PatternType.LITERAL:
            return cls.LITERAL
        if pattern_type is PatternType.PREFIXED:
            return cls.EXTENDED
        raise ValueError(f"Invalid pattern type: {pattern_type.name}")


def change_notification(pattern: ResourcePattern) -> tuple[str, bytes]:
    """The sequential znode to create after changing a pattern's ACLs, as (the path prefix
    to create sequentially, its data) (ZkAclChangeStore.createChangeNode):
    `("/kafka-acl-changes/acl_changes_", b"TOPIC:orders")`, or for PREFIXED
    `("/kafka-acl-extended-changes/acl_changes_", b'{"version":1,"resourceType":"TOPIC",
    "name":"orders-","patternType":"PREFIXED"}')`."""
    store = AclChangeStore.for_pattern_type(pattern.pattern_type)
    if store is AclChangeStore.LITERAL:
        # LiteralAclChangeStore: ResourceType.toString (the constant's name), ":", the name.
        data = f"{pattern.resource_type.name}:{pattern.name}".encode()
    else:
        data = _compact_json(
            {
                "version": ACL_CHANGE_EVENT_VERSION,
                "resourceType": pattern.resource_type.name,
                "name": pattern.name,
                "patternType": pattern.pattern_type.name,
            }
        )
    return store.sequence_prefix, data


_CHANGE_EVENT_FIELDS: Final = frozenset({"version", "resourceType", "name", "patternType"})


def _notified_pattern(
    resource_type: ResourceType, name: str, pattern_type: PatternType
) -> ResourcePattern:
    # Kafka would build an UNKNOWN pattern and find no znode for it: a no-op. Refused here,
    # so that the adapter logs what it skips.
    if resource_type not in CONCRETE_RESOURCE_TYPES:
        raise ValueError(
            f"ACL change notification for an unknown resource type: {resource_type.name}"
        )
    if not pattern_type.is_specific():
        raise ValueError(f"ACL change notification for pattern type {pattern_type.name}")
    try:
        return ResourcePattern(resource_type, _znode_name(name), pattern_type)
    except ValueError as e:
        raise ValueError(f"ACL change notification: {e}") from e


def pattern_from_notification(store: AclChangeStore, data: bytes) -> ResourcePattern:
    """The pattern a change notification names (the change stores' decode): its ACLs are
    then read again from its znode. The legacy text splits at the first ":" (a name may
    hold more) and reads the resource type in any case (ResourceType.fromString); the event
    is strict JSON as Jackson maps it (every field a string but the version, no other
    field; a version above 1 refused; the pattern type upper-case, PatternType.fromString).
    ValueError for anything else."""
    what = "ACL change notification"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{what}: not UTF-8: {e}") from e
    if store is AclChangeStore.LITERAL:
        type_text, sep, name = text.partition(":")
        if not sep:
            raise ValueError(
                f"{what}: expected a string in format ResourceType:ResourceName but got {text!r}"
            )
        return _notified_pattern(ResourceType.from_string(type_text), name, PatternType.LITERAL)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{what}: Failed to parse ACL change event: {e}") from e
    if not isinstance(doc, dict):
        raise ValueError(f"{what}: expected a JSON object, got {type(doc).__name__}")
    unknown = set(doc) - _CHANGE_EVENT_FIELDS
    if unknown:
        raise ValueError(f"{what}: unknown fields {sorted(unknown)}")
    version = doc.get("version", 0)
    if type(version) is not int:
        raise ValueError(f"{what}: 'version' must be an integer, got {version!r}")
    if version > ACL_CHANGE_EVENT_VERSION:
        raise ValueError(f"{what}: Acl change event received for unsupported version: {version}")
    return _notified_pattern(
        ResourceType.from_string(_string_field(doc, "resourceType", what)),
        _string_field(doc, "name", what),
        PatternType.from_string(_string_field(doc, "patternType", what)),
    )
