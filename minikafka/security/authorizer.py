"""Kafka's AclAuthorizer (kafka.security.authorizer.AclAuthorizer, Kafka 2.8), sans-IO: the
ACL cache and the decisions made from it, and the pure halves of CreateAcls and
DeleteAcls. The ZooKeeper adapter (elsewhere) loads the cache, keeps it current from
the change notifications (`update`/`remove`), and does the conditional writes that the
planning helpers compute.

The decision for a principal, a client host, an operation and a resource (authorizeAction):

1. a super user (`super.users`) may do anything;
2. the ACLs that apply are those of the LITERAL pattern of the resource's name, of the
   LITERAL wildcard "*", and of every PREFIXED pattern the name starts with;
3. none at all (for any principal): `allow.everyone.if.no.acl.found` decides;
4. a DENY for the principal (or `User:*`, which is any principal of any type), the host
   (or "*") and the operation (or ALL) denies;
5. else an ALLOW for the principal, the host and the operation (or ALL, or one that
   implies it: READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies
   DESCRIBE_CONFIGS) allows;
6. else denied. A DENY implies nothing: DENY READ leaves DESCRIBE to the ALLOWs.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

from minikafka.security.acls import (
    WILDCARD_HOST,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclError,
    ResourcePattern,
    ResourcePatternFilter,
    parse_acl_principal,
)
from minikafka.security.operations import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    supported_operations,
)
from minikafka.security.principal import WILDCARD_USER, KafkaPrincipal

SUPER_USERS_CONFIG: Final = "super.users"
ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG: Final = "allow.everyone.if.no.acl.found"
# The logger Kafka writes its decisions to (log4j's kafka.authorizer.logger).
AUTHORIZER_LOGGER: Final = "kafka.authorizer.logger"
# log4j's TRACE, below logging.DEBUG: decisions nobody asked to see logged.
TRACE: Final = 5

# The operations whose ALLOW allows the one asked for (AclAuthorizer.authorizeAction's
# allowOps; AclOperation's javadoc): allowing a change implies allowing to look.
_IMPLIED_BY: Final[Mapping[AclOperation, tuple[AclOperation, ...]]] = {
    AclOperation.DESCRIBE: (
        AclOperation.DESCRIBE,
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DELETE,
        AclOperation.ALTER,
    ),
    AclOperation.DESCRIBE_CONFIGS: (AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
}


def allowing_operations(operation: AclOperation) -> tuple[AclOperation, ...]:
    """The operations an ALLOW ACL may name to allow `operation` (besides ALL)."""
    return _IMPLIED_BY.get(operation, (operation,))


def parse_super_users(value: str | None) -> frozenset[KafkaPrincipal]:
    """Kafka's `super.users`: principals separated by semicolons, each trimmed
    (`User:alice;User:bob`). Java's split drops trailing empty parts, so a trailing ";"
    is harmless; an empty part in the middle, or a part that is not `Type:name`, is a
    ValueError (Kafka fails to configure the authorizer)."""
    if not value:
        return frozenset()
    parts = value.split(";")
    while parts and parts[-1] == "":
        parts.pop()
    return frozenset(KafkaPrincipal.parse(p.strip()) for p in parts)


def parse_allow_everyone(value: str | None) -> bool:
    """`allow.everyone.if.no.acl.found` as Scala's toBoolean reads it: `true`/`false` in
    any case, untrimmed; unset is false; anything else a ValueError."""
    if value is None:
        return False
    if value.lower() == "true":
        return True
    if value.lower() == "false":
        return False
    raise ValueError(f"{ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG}: not a boolean: {value!r}")


class _Acl(NamedTuple):
    """A cached ACL with its principal parsed once (Kafka's AclEntry.kafkaPrincipal)."""

    pattern: ResourcePattern
    entry: AccessControlEntry
    principal: KafkaPrincipal


@dataclass(frozen=True, slots=True)
class AuthorizationDecision:
    """An authorization result with why (Kafka's ALLOWED/DENIED and the debug lines of its
    authorizer logger): `acl` is the ACL that decided, if one did."""

    allowed: bool
    reason: str
    acl: AclBinding | None = None


class AclAuthorizer:
    """The ACL cache (`dict[ResourcePattern, frozenset[AccessControlEntry]]`, Kafka's
    aclCache) and the decisions made from it. Not thread-safe: one event loop owns it."""

    def __init__(
        self,
        super_users: Iterable[str | KafkaPrincipal] = (),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self.super_users: frozenset[KafkaPrincipal] = frozenset(
            u if isinstance(u, KafkaPrincipal) else KafkaPrincipal.parse(u) for u in super_users
        )
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._cache: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        # (resource type, name) -> ACLs, for the LITERAL and the PREFIXED patterns.
        self._literal: dict[tuple[ResourceType, str], tuple[_Acl, ...]] = {}
        self._prefixed: dict[tuple[ResourceType, str], tuple[_Acl, ...]] = {}
        # The lengths of the PREFIXED names of each resource type: a name's prefixes of
        # only these lengths are looked up, not every ACL scanned (Kafka: a sorted map).
        self._prefix_lengths: dict[ResourceType, Counter[int]] = {}

    @classmethod
    def from_config(cls, configs: Mapping[str, str]) -> AclAuthorizer:
        """Configured as Kafka's AclAuthorizer.configure: `super.users` and
        `allow.everyone.if.no.acl.found`."""
        return cls(
            parse_super_users(configs.get(SUPER_USERS_CONFIG)),
            parse_allow_everyone(configs.get(ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG)),
        )

    # -- the cache ------------------------------------------------------------------------

    def update(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> None:
        """The ACLs of a pattern are now `entries` (read from its znode after a change
        notification, or just written): Kafka's updateCache. None removes the pattern.
        ValueError for a pattern that is not LITERAL or PREFIXED, or an entry whose
        principal is not `Type:name` (Kafka could not have read it either)."""
        if not pattern.pattern_type.is_specific():
            raise ValueError(f"ACLs are stored for LITERAL or PREFIXED patterns, not {pattern}")
        acls = frozenset(entries)
        if not acls:
            self.remove(pattern)
            return
        parsed = tuple(_Acl(pattern, e, parse_acl_principal(e.principal)) for e in acls)
        self.remove(pattern)
        self._cache[pattern] = acls
        key = (pattern.resource_type, pattern.name)
        if pattern.pattern_type is PatternType.LITERAL:
            self._literal[key] = parsed
        else:
            self._prefixed[key] = parsed
            self._prefix_lengths.setdefault(pattern.resource_type, Counter())[
                len(pattern.name)
            ] += 1

    def remove(self, pattern: ResourcePattern) -> None:
        """The pattern has no ACLs any more (its znode is gone)."""
        if self._cache.pop(pattern, None) is None:
            return
        key = (pattern.resource_type, pattern.name)
        if pattern.pattern_type is PatternType.LITERAL:
            del self._literal[key]
        else:
            del self._prefixed[key]
            lengths = self._prefix_lengths[pattern.resource_type]
            lengths[len(pattern.name)] -= 1
            if lengths[len(pattern.name)] == 0:
                del lengths[len(pattern.name)]

    def get(self, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
        """The cached ACLs of exactly this pattern (empty if none)."""
        return self._cache.get(pattern, frozenset())

    def patterns(self) -> list[ResourcePattern]:
        return list(self._cache)

    def __len__(self) -> int:
        return len(self._cache)

    def __contains__(self, pattern: object) -> bool:
        return pattern in self._cache

    def acls(self, acl_filter: AclBindingFilter = AclBindingFilter.ANY) -> list[AclBinding]:
        """The cached ACL bindings the filter matches (DescribeAcls), in a stable order."""
        out = [
            binding
            for pattern, entries in self._cache.items()
            if acl_filter.pattern_filter.matches(pattern)
            for binding in (AclBinding(pattern, e) for e in entries)
            if acl_filter.entry_filter.matches(binding.entry)
        ]
        out.sort(key=AclBinding.sort_key)
        return out

    # -- decisions ------------------------------------------------------------------------

    def _matching_acls(self, resource_type: ResourceType, name: str) -> list[_Acl]:
        """Kafka's matchingAcls: the prefixed, then the wildcard, then the literal ACLs."""
        out: list[_Acl] = []
        lengths = self._prefix_lengths.get(resource_type)
        if lengths:
            for length in lengths:
                # Kafka's range scan from the name down to its first character leaves out
                # a PREFIXED "" (never stored: ZooKeeper cannot name a znode "") unless
                # the name itself is "".
                if length <= len(name) and (length > 0 or not name):
                    out.extend(self._prefixed.get((resource_type, name[:length]), ()))
        out.extend(self._literal.get((resource_type, WILDCARD_RESOURCE), ()))
        out.extend(self._literal.get((resource_type, name), ()))
        return out

    @staticmethod
    def _find(
        acls: Sequence[_Acl],
        permission: AclPermissionType,
        principal: KafkaPrincipal,
        host: str,
        operations: tuple[AclOperation, ...],
    ) -> _Acl | None:
        # Kafka's matchingAclExists, for each of `operations` in turn.
        for op in operations:
            for acl in acls:
                e = acl.entry
                if (
                    e.permission_type is permission
                    and (acl.principal == principal or acl.principal == WILDCARD_USER)
                    and (e.operation is op or e.operation is AclOperation.ALL)
                    and (e.host == host or e.host == WILDCARD_HOST)
                ):
                    return acl
        return None

    def _decide(
        self,
        acls: Sequence[_Acl],
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource: str,
    ) -> AuthorizationDecision:
        if not acls:
            allowed = self.allow_everyone_if_no_acl_found
            return AuthorizationDecision(
                allowed,
                f"No acl found for resource {resource}, authorized = {str(allowed).lower()}",
            )

        def because(acl: _Acl, op: AclOperation) -> AuthorizationDecision:
            e = acl.entry
            return AuthorizationDecision(
                e.permission_type is AclPermissionType.ALLOW,
                f"operation = {op.name} on resource = {resource} from host = {host} is "
                f"{e.permission_type.name} based on acl = {e.describe()}",
                AclBinding(acl.pattern, e),
            )

        deny = self._find(acls, AclPermissionType.DENY, principal, host, (operation,))
        if deny is not None:
            return because(deny, operation)
        for op in allowing_operations(operation):
            allow = self._find(acls, AclPermissionType.ALLOW, principal, host, (op,))
            if allow is not None:
                return because(allow, op)
        return AuthorizationDecision(
            False, f"no acl allows operation = {operation.name} on resource = {resource}"
        )

    def is_super_user(self, principal: KafkaPrincipal) -> bool:
        return principal in self.super_users

    def authorize_with_reason(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
    ) -> AuthorizationDecision:
        """The decision for a LITERAL resource (what a request names) and why. `host` is
        the client's IP address as Kafka prints it (InetAddress.getHostAddress: `127.0.0.1`,
        `0:0:0:0:0:0:0:1`), compared as text with each ACL's host."""
        resource = str(ResourcePattern(resource_type, resource_name, PatternType.LITERAL))
        if self.is_super_user(principal):
            return AuthorizationDecision(
                True,
                f"principal = {principal} is a super user, allowing operation without checking acls.",
            )
        acls = self._matching_acls(resource_type, resource_name)
        return self._decide(acls, principal, host, operation, resource)

    def authorize(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: str,
    ) -> bool:
        """Kafka's AclAuthorizer.authorizeAction: may `principal`, connected from `host`,
        do `operation` to the resource? (See the module's docstring for the rules.)"""
        return self.authorize_with_reason(
            principal, host, operation, resource_type, resource_name
        ).allowed

    def authorized_operations(
        self,
        principal: KafkaPrincipal,
        host: str,
        resource_type: ResourceType,
        resource_name: str,
    ) -> set[AclOperation]:
        """KIP-430: the operations the resource type supports that `principal` may do to
        this resource (AuthHelper.authorizedOperations); to_32bit_field makes the answer."""
        supported = supported_operations(resource_type)
        if self.is_super_user(principal):
            return set(supported)
        acls = self._matching_acls(resource_type, resource_name)
        resource = str(ResourcePattern(resource_type, resource_name, PatternType.LITERAL))
        return {op for op in supported if self._decide(acls, principal, host, op, resource).allowed}

    def authorize_by_resource_type(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        """Kafka's AclAuthorizer.authorizeByResourceType (KIP-679): may `principal` do
        `operation` to at least one resource of the type? InitProducerId asks it for WRITE
        on any topic. Unlike `authorize`, only the operation itself (or ALL) counts, no
        implied one; a DENY of the LITERAL "*" denies at once; then
        `allow.everyone.if.no.acl.found` allows whatever the ACLs; then an ALLOW of a
        PREFIXED name allows unless a DENY of a prefix of it (or of itself) covers it, and an
        ALLOW of a LITERAL name (or "*") unless a DENY of that name or of a prefix of it
        does. ValueError for ANY and UNKNOWN (Kafka's authorizeByResourceTypeCheckArgs)."""
        if resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            raise ValueError(f"authorizeByResourceType needs a concrete type, not {resource_type}")
        if operation in (AclOperation.ANY, AclOperation.UNKNOWN):
            raise ValueError(f"authorizeByResourceType needs an operation, not {operation}")
        if self.is_super_user(principal):
            return True

        def names(
            index: Mapping[tuple[ResourceType, str], tuple[_Acl, ...]],
            permission: AclPermissionType,
        ) -> set[str]:
            # Kafka's matchingResources: the names with an ACL of the permission for the
            # principal (or User:*), the host (or *) and the operation (or ALL).
            return {
                name
                for (rtype, name), acls in index.items()
                if rtype is resource_type
                and any(
                    a.entry.permission_type is permission
                    and (a.principal == principal or a.principal == WILDCARD_USER)
                    and (a.entry.host == host or a.entry.host == WILDCARD_HOST)
                    and (a.entry.operation is operation or a.entry.operation is AclOperation.ALL)
                    for a in acls
                )
            }

        deny_literals = names(self._literal, AclPermissionType.DENY)
        if WILDCARD_RESOURCE in deny_literals:
            return False
        if self.allow_everyone_if_no_acl_found:
            return True
        deny_prefixes = names(self._prefixed, AclPermissionType.DENY)

        def dominated(name: str) -> bool:
            # Kafka's hasDominantPrefixedDeny: a PREFIXED DENY for the name or a prefix of it.
            return any(name[:n] in deny_prefixes for n in range(1, len(name) + 1))

        allow_prefixes = names(self._prefixed, AclPermissionType.ALLOW)
        allow_literals = names(self._literal, AclPermissionType.ALLOW)
        return any(not dominated(p) for p in allow_prefixes) or any(
            n == WILDCARD_RESOURCE or (n not in deny_literals and not dominated(n))
            for n in allow_literals
        )

    # -- CreateAcls and DeleteAcls, planned ------------------------------------------------

    def delete_candidates(self, filters: Sequence[AclBindingFilter]) -> list[ResourcePattern]:
        """The patterns a DeleteAcls request may change (AclAuthorizer.deleteAcls): every
        cached pattern, and the patterns a filter names exactly (LITERAL, PREFIXED, or both
        for ANY) even if not cached yet (created on another broker, the notification not
        yet here: the adapter reads those from ZooKeeper), kept if some filter matches."""
        candidates: dict[ResourcePattern, None] = dict.fromkeys(self._cache)
        for f in filters:
            if f.pattern_filter.matches_at_most_one():
                for pattern in patterns_named_by(f.pattern_filter):
                    candidates.setdefault(pattern)
        return sorted(
            (p for p in candidates if any(f.pattern_filter.matches(p) for f in filters)),
            key=ResourcePattern.sort_key,
        )


def patterns_named_by(pattern_filter: ResourcePatternFilter) -> list[ResourcePattern]:
    """The patterns a filter that matches at most one pattern names (filterToResources)."""
    name = pattern_filter.name
    rtype = pattern_filter.resource_type
    if name is None or not pattern_filter.matches_at_most_one():
        raise ValueError(f"Cannot determine matching resources for patternType {pattern_filter}")
    if pattern_filter.pattern_type is PatternType.ANY:
        return [
            ResourcePattern(rtype, name, PatternType.LITERAL),
            ResourcePattern(rtype, name, PatternType.PREFIXED),
        ]
    return [ResourcePattern(rtype, name, pattern_filter.pattern_type)]


def group_by_pattern(
    bindings: Sequence[AclBinding | AclError],
) -> dict[ResourcePattern, list[int]]:
    """The indexes of a CreateAcls request's valid bindings, by pattern: Kafka updates each
    pattern's znode once, and a failure fails every creation on that pattern."""
    groups: dict[ResourcePattern, list[int]] = {}
    for i, b in enumerate(bindings):
        if isinstance(b, AclBinding):
            groups.setdefault(b.pattern, []).append(i)
    return groups


def acls_after_create(
    current: frozenset[AccessControlEntry], entries: Iterable[AccessControlEntry]
) -> frozenset[AccessControlEntry]:
    """The ACLs of a pattern once a CreateAcls request's entries for it are added: a set,
    so creating an ACL that exists changes nothing (and needs no change notification)."""
    return current | frozenset(entries)


def acls_after_delete(
    pattern: ResourcePattern,
    current: frozenset[AccessControlEntry],
    filters: Sequence[AclBindingFilter],
) -> tuple[frozenset[AccessControlEntry], dict[AclBinding, int]]:
    """The ACLs of a pattern once a DeleteAcls request's filters are applied, and each
    deleted binding with the index of the filter it is reported under: the first filter,
    in request order, whose pattern filter and entry filter both match it (Kafka reports a
    binding under one filter only, even if later ones match it too)."""
    matching = [(i, f) for i, f in enumerate(filters) if f.pattern_filter.matches(pattern)]
    deleted: dict[AclBinding, int] = {}
    for entry in sorted(current, key=AccessControlEntry.sort_key):
        for i, f in matching:
            if f.entry_filter.matches(entry):
                deleted[AclBinding(pattern, entry)] = i
                break
    remaining = current - frozenset(b.entry for b in deleted)
    return remaining, deleted


def decision_log_level(
    allowed: bool, log_if_allowed: bool = True, log_if_denied: bool = True
) -> int:
    """The level Kafka logs a decision at (AclAuthorizer.logAuditMessage): an access granted
    at DEBUG, a denied request for a resource at INFO; a check made only to list what is
    allowed (authorized operations, filtering topics for a regex) at TRACE."""
    if allowed:
        return logging.DEBUG if log_if_allowed else TRACE
    return logging.INFO if log_if_denied else TRACE


def describe_decision(
    principal: KafkaPrincipal,
    host: str,
    operation: AclOperation,
    resource_type: ResourceType,
    resource_name: str,
    allowed: bool,
    request: str,
    resource_ref_count: int = 1,
    pattern_type: PatternType = PatternType.LITERAL,
) -> str:
    """Kafka's authorizer log line (AclAuthorizer.logAuditMessage), e.g.
    `Principal = User:alice is Denied Operation = Read from host = 127.0.0.1 on resource =
    Topic:LITERAL:foo for request = Fetch with resourceRefCount = 1`. `request` is the API's
    name as Kafka spells it (ApiKeys' name: `Produce`, `Fetch`, `Metadata`)."""
    resource = f"{resource_type.pascal_name}:{pattern_type.name}:{resource_name}"
    return (
        f"Principal = {principal} is {'Allowed' if allowed else 'Denied'} "
        f"Operation = {operation.pascal_name} from host = {host} on resource = {resource} "
        f"for request = {request} with resourceRefCount = {resource_ref_count}"
    )
