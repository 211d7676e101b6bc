"""`minikafka acls`: kafka-acls.sh with `--bootstrap-server` (Kafka 2.8's
kafka.admin.AclCommand, its AdminClientService), on librdkafka's admin client
(confluent-kafka) over Kafka's protocol (CreateAcls, DescribeAcls, DeleteAcls).

As Kafka's tool:

- Exactly one of `--add`, `--remove`, `--list`. Resources: `--topic` and `--group`
  (repeatable, `*` for all), `--cluster`, `--transactional-id` (repeatable), as
  `--resource-pattern-type` patterns: literal (the default, for every action), prefixed, and
  for --list and --remove the filters any (the name exactly, either pattern type) and match
  (every ACL that applies to the name). As in Kafka, `--cluster` counts only with the
  literal pattern type (the cluster's one pattern is literal `kafka-cluster`), so --list
  with another type and only --cluster lists every ACL.
- Entries: `--allow-principal` and `--deny-principal` (`Type:name`, repeatable), each with
  its hosts (`--allow-host`, `--deny-host`; `*` unless given), for every `--operation`
  (Kafka's names in any case: Read, Write, Create, Delete, Alter, Describe, ClusterAction,
  DescribeConfigs, AlterConfigs, IdempotentWrite, All; All unless given). `--producer` is
  WRITE, DESCRIBE and CREATE on the topics (WRITE and DESCRIBE on transactional ids,
  IDEMPOTENT_WRITE on the cluster with `--idempotent`); `--consumer` READ and DESCRIBE on
  the topics and READ on the groups; both may be given.
- Kafka's checks of the arguments (AclOptions.checkArgs), of the pattern type when adding,
  of the operations each resource type has (validateOperation), of the principals, with
  Kafka's messages.
- `--add` prints `Adding ACLs for resource ...` before each resource's CreateAcls, then
  the resources' ACLs; `--remove` asks before each filter's DeleteAcls (`Are you sure you
  want to delete all ACLs for resource filter ...? (y/n)` without principals: every ACL of
  the filter goes; `... remove ACLs: ... from resource filter ...? (y/n)` with them), `y`
  (any case) goes on, anything else skips that filter; `--force` does not ask; then the
  resources' ACLs. `--list` prints `Current ACLs for resource ...` blocks (every ACL without
  a resource), with `--principal P` only P's, under `ACLs for principal ...`. The text is
  Kafka's: its ResourcePattern and AccessControlEntry toString, a space before each line
  break.

Where it differs from Kafka's tool: Kafka prints a resource's ACLs, and the resources, in
the order of Scala hash sets of Java enums (it changes from one run to the next); minikafka
sorts them (resources by type, pattern type and name, Kafka's codes; entries by principal,
host, operation and permission type). Kafka lists the valid operations of a resource type
in that hash order too; minikafka in AclEntry.supportedOperations' order, then ALL. An
operation name Kafka does not know (or Any, Unknown) is refused at once (Kafka's tool would
refuse it only as an operation the resource type lacks, or ignore it when no principal is
given); a principal needs a type and a name. `--delegation-token` is refused: librdkafka's
admin client has no such resource type. Kafka's ZooKeeper mode (`--authorizer`,
`--authorizer-properties`, `--zk-tls-config-file`) is not offered: the brokers keep the
ACLs. Argument errors are click's usage errors (status 2); a failure (the broker's error:
SECURITY_DISABLED when it has no authorizer, CLUSTER_AUTHORIZATION_FAILED for a principal
that may not) is one line on stderr, `Error while executing ACL command: <error>: <message>`,
status 1, without Kafka's stack trace (Kafka prints both to stdout); so is an end of input
where --remove waits for an answer (Kafka's tool fails there too).

librdkafka drops the error of a DescribeAcls response (it answers no ACLs), so an empty
listing is checked: without an authorizer (the controller's authorizer.class.name is empty)
it is SECURITY_DISABLED, and without DESCRIBE on the cluster (the principal's authorized
operations, KIP-430) CLUSTER_AUTHORIZATION_FAILED, as Kafka's broker answers them.
"""

from __future__ import annotations

import enum
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final, NoReturn, TypeVar

import click
from click.core import ParameterSource

from minikafka.cli.client_options import bootstrap_server_option, require_client
from minikafka.client.librdkafka import (
    ClientConfigError,
    WatchedAdmin,
    kafka_error_text,
)
from minikafka.protocol.errors import ErrorCode
from minikafka.security.acls import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    ResourcePattern,
    ResourcePatternFilter,
)
from minikafka.security.operations import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

if TYPE_CHECKING:
    from confluent_kafka import KafkaError
    from confluent_kafka.admin._acl import AclBinding as RdAclBinding
    from confluent_kafka.admin._acl import AclBindingFilter as RdAclBindingFilter

T = TypeVar("T")

# How long one call may take (Kafka's admin client: default.api.timeout.ms).
API_TIMEOUT_S = 60.0

# AclCommand.ClusterResourceFilter: the cluster's one pattern.
CLUSTER_FILTER: Final = ResourcePatternFilter(
    ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL
)

# The operations an ACL can have, by Kafka's names (SecurityUtils.operationName).
OPERATIONS: Final = tuple(
    op for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY)
)
# AclEntry.supportedOperations, in its order (Kafka prints a hash set's order).
_SUPPORTED: Final[dict[ResourceType, tuple[AclOperation, ...]]] = {
    ResourceType.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE),
    ResourceType.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
}

# Kafka's messages (AclCommand).
NO_PRINCIPAL: Final = (
    "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."
)
NO_RESOURCE: Final = (
    "You must provide at least one resource: --topic <topic> or --cluster or --group <group> "
    "or --delegation-token <Delegation Token ID>"
)
ONE_ACTION: Final = "Command must include exactly one action: --list, --add, --remove. "
CONSUMER_RESOURCES: Final = (
    "With --consumer you must specify a --topic and a --group and no --cluster or "
    "--transactional-id option should be specified."
)

# Kafka's DescribeAcls message, and the broker config, for what librdkafka does not
# report of a DescribeAcls (_Admin.refusal).
NO_AUTHORIZER: Final = "No Authorizer is configured on the broker"
AUTHORIZER_CONFIG: Final = "authorizer.class.name"

# Java's String.trim: every character up to U+0020.
_JAVA_TRIMMED: Final = "".join(chr(c) for c in range(0x21))


class AclUsageError(ValueError):
    """Arguments Kafka's tool refuses, with its message."""


class AclCommandError(Exception):
    """A failure worth one line on stderr, not a traceback."""


@dataclass(frozen=True)
class AclArgs:
    """What kafka-acls.sh's options say, as given (the names untrimmed, the principals
    unparsed): the functions below read them as Kafka's AclCommand does."""

    topics: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    cluster: bool = False
    transactional_ids: tuple[str, ...] = ()
    pattern_type: PatternType = PatternType.LITERAL
    allow_principals: tuple[str, ...] = ()
    deny_principals: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    deny_hosts: tuple[str, ...] = ()
    # Empty: --operation not given (All, or the --producer/--consumer operations).
    operations: tuple[AclOperation, ...] = ()
    producer: bool = False
    consumer: bool = False
    idempotent: bool = False
    list_principals: tuple[str, ...] = ()


def _java_trim(text: str) -> str:
    return text.strip(_JAVA_TRIMMED)


def _unique(items: Iterable[T]) -> list[T]:
    return list(dict.fromkeys(items))


def parse_operation(name: str) -> AclOperation:
    """`--operation`'s name as SecurityUtils.operation reads it (trimmed, Kafka's Pascal-case
    name in any case: `Read`, `describeconfigs`, `IDEMPOTENTWRITE`); AclUsageError for one
    that names no operation an ACL can have."""
    op = AclOperation.from_pascal_name(_java_trim(name))
    if op not in OPERATIONS:
        raise AclUsageError(
            f"Unknown operation {name!r}: the operations are "
            f"{', '.join(o.pascal_name for o in OPERATIONS)}"
        )
    return op


def parse_principal(text: str) -> str:
    """A principal option's value (trimmed) as Kafka's `Type:name` text; AclUsageError with
    SecurityUtils.parseKafkaPrincipal's message if it has no type or no name."""
    trimmed = _java_trim(text)
    principal_type, sep, name = trimmed.partition(":")
    if not sep or not principal_type or not name:
        raise AclUsageError(
            f"expected a string in format principalType:principalName but got {trimmed}"
        )
    return f"{principal_type}:{name}"


def check_args(action: str, given: Sequence[str], args: AclArgs) -> None:
    """AclOptions.checkArgs: `action` is "add", "remove" or "list"; `given` the options
    given on the command line (`--producer`, ...). Kafka's order and messages."""
    options = set(given)

    def invalid(used: str, others: Sequence[str]) -> None:
        if used in options:
            for other in others:
                if other in options:
                    raise AclUsageError(
                        f'Option "[{used[2:]}]" can\'t be used with option "[{other[2:]}]"'
                    )

    invalid(
        "--list",
        (
            "--producer",
            "--consumer",
            "--allow-host",
            "--allow-principal",
            "--deny-host",
            "--deny-principal",
        ),
    )
    invalid("--producer", ("--operation", "--deny-principal", "--deny-host"))
    invalid("--consumer", ("--operation", "--deny-principal", "--deny-host"))
    if args.list_principals and action != "list":
        raise AclUsageError("The --principal option is only available if --list is set")
    if args.producer and not args.topics:
        raise AclUsageError("With --producer you must specify a --topic")
    if args.idempotent and not args.producer:
        raise AclUsageError("The --idempotent option is only available if --producer is set")
    if args.consumer and (
        not args.topics
        or not args.groups
        or (not args.producer and (args.cluster or args.transactional_ids))
    ):
        raise AclUsageError(CONSUMER_RESOURCES)


def resource_filters(args: AclArgs, die_if_none: bool = True) -> list[ResourcePatternFilter]:
    """AclCommand.getResourceFilter: the topics, the cluster (literal pattern type only),
    the groups and the transactional ids, each once. AclUsageError if there are none and
    `die_if_none`."""
    pt = args.pattern_type
    filters = [ResourcePatternFilter(ResourceType.TOPIC, _java_trim(t), pt) for t in args.topics]
    if pt is PatternType.LITERAL and (args.cluster or args.idempotent):
        filters.append(CLUSTER_FILTER)
    filters += [ResourcePatternFilter(ResourceType.GROUP, _java_trim(g), pt) for g in args.groups]
    # Kafka does not trim transactional ids.
    filters += [
        ResourcePatternFilter(ResourceType.TRANSACTIONAL_ID, t, pt) for t in args.transactional_ids
    ]
    if not filters and die_if_none:
        raise AclUsageError(NO_RESOURCE)
    return _unique(filters)


def _hosts(hosts: tuple[str, ...], principals: tuple[str, ...]) -> list[str]:
    """AclCommand.getHosts: the hosts given, else `*` if there are principals."""
    if hosts:
        return _unique(_java_trim(h) for h in hosts)
    return [WILDCARD_HOST] if principals else []


def entries(args: AclArgs, operations: Sequence[AclOperation]) -> tuple[AccessControlEntry, ...]:
    """AclCommand.getAcl: an entry for each allowed principal, operation and allowed host,
    then each denied principal, operation and denied host."""
    out: list[AccessControlEntry] = []
    for principals, hosts, permission in (
        (args.allow_principals, args.allow_hosts, AclPermissionType.ALLOW),
        (args.deny_principals, args.deny_hosts, AclPermissionType.DENY),
    ):
        names = _unique(parse_principal(p) for p in principals)
        for principal in names:
            for op in operations:
                for host in _hosts(hosts, principals):
                    out.append(AccessControlEntry(principal, host, op, permission))
    return tuple(_unique(out))


def valid_operations(resource_type: ResourceType) -> tuple[AclOperation, ...]:
    """What validateOperation allows: AclEntry.supportedOperations, and ALL."""
    return (*_SUPPORTED[resource_type], AclOperation.ALL)


def filters_to_acls(args: AclArgs) -> dict[ResourcePatternFilter, tuple[AccessControlEntry, ...]]:
    """AclCommand.getResourceFilterToAcls: each resource filter's entries, from the options,
    or from --producer and --consumer (their entries joined on a resource both name); then
    validateOperation. An empty tuple: no principal given."""
    result: dict[ResourcePatternFilter, tuple[AccessControlEntry, ...]] = {}
    if not args.producer and not args.consumer:
        acl = entries(args, args.operations or (AclOperation.ALL,))
        for f in resource_filters(args):
            result[f] = acl
    if args.producer:
        filters = resource_filters(args)
        topic_acls = entries(args, (AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE))
        transactional_acls = entries(args, (AclOperation.WRITE, AclOperation.DESCRIBE))
        for f in filters:
            if f.resource_type is ResourceType.TOPIC:
                result[f] = topic_acls
            elif f.resource_type is ResourceType.TRANSACTIONAL_ID:
                result[f] = transactional_acls
        if args.idempotent:
            result[CLUSTER_FILTER] = entries(args, (AclOperation.IDEMPOTENT_WRITE,))
    if args.consumer:
        filters = resource_filters(args)
        consumer: dict[ResourcePatternFilter, tuple[AccessControlEntry, ...]] = {}
        for f in filters:
            if f.resource_type is ResourceType.TOPIC:
                consumer[f] = entries(args, (AclOperation.READ, AclOperation.DESCRIBE))
            elif f.resource_type is ResourceType.GROUP:
                consumer[f] = entries(args, (AclOperation.READ,))
        for f, acl in consumer.items():
            result[f] = tuple(_unique((*acl, *result.get(f, ()))))
    _validate_operations(result)
    return result


def _validate_operations(
    filter_to_acls: Mapping[ResourcePatternFilter, Sequence[AccessControlEntry]],
) -> None:
    """AclCommand.validateOperation, with its message."""
    for f, acl in filter_to_acls.items():
        valid = valid_operations(f.resource_type)
        if any(e.operation not in valid for e in acl):
            raise AclUsageError(
                f"ResourceType {f.resource_type.name} only supports operations "
                f"{','.join(op.name for op in valid)}"
            )


def _entry_sort_key(entry: AccessControlEntry) -> tuple[str, str, int, int]:
    return entry.sort_key()


def _filter_sort_key(f: ResourcePatternFilter) -> tuple[int, int, str]:
    return (f.resource_type.value, f.pattern_type.value, f.name or "")


def bindings_to_add(args: AclArgs) -> dict[ResourcePattern, tuple[AccessControlEntry, ...]]:
    """AclCommand.getResourceToAcls: the ACLs --add creates, by resource (sorted, as printed).
    AclUsageError, as Kafka's tool, for a pattern type that is a filter's (any, match) or a
    resource without principals."""
    pt = args.pattern_type
    if not pt.is_specific():
        raise AclUsageError(
            f"A '--resource-pattern-type' value of '{pt.name}' is not valid when adding acls."
        )
    resource_to_acls = {
        ResourcePattern(f.resource_type, f.name or "", f.pattern_type): acl
        for f, acl in filters_to_acls(args).items()
    }
    if any(not acl for acl in resource_to_acls.values()):
        raise AclUsageError(NO_PRINCIPAL)
    return {
        pattern: tuple(sorted(resource_to_acls[pattern], key=_entry_sort_key))
        for pattern in sorted(resource_to_acls, key=ResourcePattern.sort_key)
    }


def filters_to_remove(
    args: AclArgs,
) -> list[tuple[ResourcePatternFilter, tuple[AccessControlEntry, ...]]]:
    """What --remove asks about, filter by filter (sorted): the entries to remove, or none:
    every ACL of the filter."""
    return [
        (f, tuple(sorted(acl, key=_entry_sort_key)))
        for f, acl in sorted(filters_to_acls(args).items(), key=lambda kv: _filter_sort_key(kv[0]))
    ]


def delete_filters(
    pattern_filter: ResourcePatternFilter, acl: Sequence[AccessControlEntry]
) -> list[AclBindingFilter]:
    """AdminClientService.removeAcls: one filter for every ACL of the resource filter, or
    one per entry given."""
    if not acl:
        return [AclBindingFilter(pattern_filter, AccessControlEntryFilter.ANY)]
    return [AclBindingFilter(pattern_filter, e.to_filter()) for e in acl]


def list_filters(args: AclArgs) -> list[AclBindingFilter]:
    """AdminClientService.getAcls: a DescribeAcls per resource filter, or one for every ACL
    when no resource is given."""
    filters = resource_filters(args, die_if_none=False)
    if not filters:
        return [AclBindingFilter.ANY]
    return [AclBindingFilter(f, AccessControlEntryFilter.ANY) for f in filters]


def list_principals(args: AclArgs) -> list[str]:
    return _unique(parse_principal(p) for p in args.list_principals)


# ---------------------------------------------------------------------------------------
# Kafka's text (AclCommand's println, ResourcePattern's and AccessControlEntry's toString).
# Each block ends " \n"; the tool's println adds the line break that makes a blank line.

NEWLINE: Final = "\n"


def _entry_lines(acl: Iterable[AccessControlEntry]) -> str:
    return NEWLINE.join(f"\t{e}" for e in acl)


def adding_text(pattern: ResourcePattern, acl: Sequence[AccessControlEntry]) -> str:
    return f"Adding ACLs for resource `{pattern}`: {NEWLINE} {_entry_lines(acl)} {NEWLINE}"


def current_text(pattern: ResourcePattern, acl: Sequence[AccessControlEntry]) -> str:
    return f"Current ACLs for resource `{pattern}`: {NEWLINE} {_entry_lines(acl)} {NEWLINE}"


def principal_text(principal: str) -> str:
    return f"ACLs for principal `{principal}`"


def delete_all_prompt(pattern_filter: ResourcePatternFilter) -> str:
    return f"Are you sure you want to delete all ACLs for resource filter `{pattern_filter}`? (y/n)"


def remove_prompt(pattern_filter: ResourcePatternFilter, acl: Sequence[AccessControlEntry]) -> str:
    return (
        f"Are you sure you want to remove ACLs: {NEWLINE} {_entry_lines(acl)} {NEWLINE} from "
        f"resource filter `{pattern_filter}`? (y/n)"
    )


def group_bindings(
    bindings: Iterable[AclBinding],
) -> dict[ResourcePattern, tuple[AccessControlEntry, ...]]:
    """AdminClientService.getAcls' map: each resource's entries, each once; sorted."""
    by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for b in bindings:
        by_pattern.setdefault(b.pattern, set()).add(b.entry)
    return {
        pattern: tuple(sorted(by_pattern[pattern], key=_entry_sort_key))
        for pattern in sorted(by_pattern, key=ResourcePattern.sort_key)
    }


def listing(bindings: Iterable[AclBinding], principals: Sequence[str] = ()) -> list[str]:
    """What AdminClientService.listAcls prints (each item one println): every resource's
    ACLs, or under each principal of `--principal` that principal's."""
    resource_to_acls = group_bindings(bindings)
    if not principals:
        return [current_text(p, acl) for p, acl in resource_to_acls.items()]
    out: list[str] = []
    for principal in principals:
        out.append(principal_text(principal))
        for pattern, acl in resource_to_acls.items():
            mine = [e for e in acl if e.principal == principal]
            if mine:
                out.append(current_text(pattern, mine))
    return out


def confirmed(answer: str | None) -> bool:
    """AclCommand.confirmAction: the line read is `y` in any case. None: end of input."""
    if answer is None:
        raise AclCommandError(
            "no answer to the question above (end of input); --force removes without asking"
        )
    return answer.rstrip("\r\n").lower() == "y"


# ---------------------------------------------------------------------------------------
# librdkafka's ACL types. Kafka's codes are librdkafka's (CLUSTER is its BROKER, 4).


def to_librdkafka_binding(pattern: ResourcePattern, entry: AccessControlEntry) -> RdAclBinding:
    from confluent_kafka.admin._acl import AclBinding as RdBinding
    from confluent_kafka.admin._acl import AclOperation as RdOperation
    from confluent_kafka.admin._acl import AclPermissionType as RdPermission
    from confluent_kafka.admin._resource import ResourcePatternType as RdPatternType
    from confluent_kafka.admin._resource import ResourceType as RdResourceType

    return RdBinding(
        RdResourceType(pattern.resource_type.value),
        pattern.name,
        RdPatternType(pattern.pattern_type.value),
        entry.principal,
        entry.host,
        RdOperation(entry.operation.value),
        RdPermission(entry.permission_type.value),
    )


def to_librdkafka_filter(f: AclBindingFilter) -> RdAclBindingFilter:
    from confluent_kafka.admin._acl import AclBindingFilter as RdFilter
    from confluent_kafka.admin._acl import AclOperation as RdOperation
    from confluent_kafka.admin._acl import AclPermissionType as RdPermission
    from confluent_kafka.admin._resource import ResourcePatternType as RdPatternType
    from confluent_kafka.admin._resource import ResourceType as RdResourceType

    p, e = f.pattern_filter, f.entry_filter
    # None: any name, principal, host (confluent-kafka's hints say str).
    return RdFilter(
        RdResourceType(p.resource_type.value),
        p.name,  # type: ignore[arg-type]
        RdPatternType(p.pattern_type.value),
        e.principal,  # type: ignore[arg-type]
        e.host,  # type: ignore[arg-type]
        RdOperation(e.operation.value),
        RdPermission(e.permission_type.value),
    )


def _code(value: enum.Enum | str | int) -> int:
    """The code of a librdkafka enum (its values are Kafka's codes)."""
    return int(value.value if isinstance(value, enum.Enum) else value)


def from_librdkafka_binding(b: RdAclBinding) -> AclBinding:
    return AclBinding(
        ResourcePattern(
            ResourceType.from_code(_code(b.restype)),
            b.name,
            PatternType.from_code(_code(b.resource_pattern_type)),
        ),
        AccessControlEntry(
            b.principal,
            b.host,
            AclOperation.from_code(_code(b.operation)),
            AclPermissionType.from_code(_code(b.permission_type)),
        ),
    )


class _Admin(WatchedAdmin):
    def __init__(self, bootstrap_server: str) -> None:
        super().__init__(bootstrap_server, AclCommandError, API_TIMEOUT_S)

    def create(self, pattern: ResourcePattern, acl: Sequence[AccessControlEntry]) -> None:
        """One CreateAcls of a resource's entries; the first entry's error, if any."""
        bindings = [to_librdkafka_binding(pattern, e) for e in acl]
        deadline = time.monotonic() + API_TIMEOUT_S
        futures = self.client.create_acls(bindings, request_timeout=API_TIMEOUT_S)
        for b in bindings:
            self.wait(futures[b], deadline)

    def describe(self, filters: Sequence[AclBindingFilter]) -> list[AclBinding]:
        """The ACLs of every filter, one DescribeAcls each."""
        deadline = time.monotonic() + API_TIMEOUT_S
        out: list[AclBinding] = []
        for f in filters:
            future = self.client.describe_acls(
                to_librdkafka_filter(f), request_timeout=API_TIMEOUT_S
            )
            out += [from_librdkafka_binding(b) for b in self.wait(future, deadline)]
        return out

    def refusal(self) -> str | None:
        """Whether an empty DescribeAcls answer was a refusal. librdkafka drops the error a
        DescribeAcls response carries (rd_kafka_DescribeAclsResponse_parse reads it and
        answers no ACLs), so an empty answer is checked against what else the cluster says:
        its controller's authorizer.class.name (DescribeConfigs; empty: no authorizer, the
        broker's SECURITY_DISABLED) and the principal's operations on the cluster (KIP-430,
        DescribeCluster; without DESCRIBE, the broker's CLUSTER_AUTHORIZATION_FAILED). The
        error's text as Kafka's broker would have sent it, or None: no refusal, or the
        cluster cannot tell (then the answer is taken as it is)."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin._acl import AclOperation as RdOperation
        from confluent_kafka.admin._config import ConfigResource
        from confluent_kafka.admin._resource import ResourceType as RdResourceType

        deadline = time.monotonic() + API_TIMEOUT_S
        try:
            cluster = self.wait(
                self.client.describe_cluster(
                    include_authorized_operations=True, request_timeout=API_TIMEOUT_S
                ),
                deadline,
            )
        except KafkaException:
            return None
        # The controller: where librdkafka sends DescribeAcls.
        broker = cluster.controller
        if broker is None and cluster.nodes:
            broker = cluster.nodes[0]
        entry = None
        if broker is not None:
            resource = ConfigResource(RdResourceType.BROKER, str(broker.id))
            try:
                futures = self.client.describe_configs([resource], request_timeout=API_TIMEOUT_S)
                entry = self.wait(futures[resource], deadline).get(AUTHORIZER_CONFIG)
            except KafkaException:
                pass  # not allowed to read it: there is an authorizer
        if entry is not None and not (entry.value or "").strip():
            return kafka_error_text(KafkaError(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER))
        # None: the broker said no operation (confluent-kafka makes an empty list None;
        # Kafka's brokers answer the operations when asked since 2.3, KIP-430).
        if RdOperation.DESCRIBE not in (cluster.authorized_operations or ()):
            return kafka_error_text(
                KafkaError(
                    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                    "listing ACLs needs DESCRIBE on the cluster, which this principal lacks",
                )
            )
        return None

    def delete(self, filters: Sequence[AclBindingFilter]) -> None:
        """One DeleteAcls of the filters; the first filter's error, if any."""
        rd_filters = _unique(to_librdkafka_filter(f) for f in filters)
        deadline = time.monotonic() + API_TIMEOUT_S
        futures = self.client.delete_acls(rd_filters, request_timeout=API_TIMEOUT_S)
        for f in rd_filters:
            self.wait(futures[f], deadline)


def _error(e: Exception) -> KafkaError:
    from confluent_kafka import KafkaError

    error = e.args[0] if e.args else None
    if isinstance(error, KafkaError):
        return error
    return KafkaError(KafkaError._FAIL, str(e))


# ---------------------------------------------------------------------------------------
# The command

_OPERATION_NAMES: Final = ", ".join(op.pascal_name for op in OPERATIONS)


def _read_answer() -> str | None:
    line = sys.stdin.readline()
    return line if line else None


def _list(admin: _Admin, args: AclArgs) -> None:
    bindings = admin.describe(list_filters(args))
    if not bindings and (refusal := admin.refusal()) is not None:
        raise AclCommandError(refusal)
    for text in listing(bindings, list_principals(args)):
        click.echo(text)


@click.command("acls")
@bootstrap_server_option
@click.option("--add", is_flag=True, help="Indicates you are trying to add ACLs.")
@click.option("--remove", is_flag=True, help="Indicates you are trying to remove ACLs.")
@click.option(
    "--list",
    "list_",
    is_flag=True,
    help="List ACLs for the specified resource, use --topic <topic> or --group <group> or "
    "--cluster to specify a resource (every ACL without one).",
)
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="TOPIC",
    help="Topic to which ACLs should be added or removed (repeatable). A value of * indicates "
    "ACL should apply to all topics.",
)
@click.option(
    "--group",
    "groups",
    multiple=True,
    metavar="GROUP",
    help="Consumer group to which the ACLs should be added or removed (repeatable). A value "
    "of * indicates the ACLs should apply to all groups.",
)
@click.option("--cluster", is_flag=True, help="Add/Remove cluster ACLs.")
@click.option(
    "--transactional-id",
    "transactional_ids",
    multiple=True,
    metavar="ID",
    help="The transactional id to which ACLs should be added or removed (repeatable). A value "
    "of * indicates the ACLs should apply to all transactional ids.",
)
@click.option(
    "--delegation-token",
    "delegation_tokens",
    multiple=True,
    metavar="ID",
    help="Refused: librdkafka's admin client has no delegation-token resource type.",
)
@click.option(
    "--resource-pattern-type",
    type=click.Choice(["literal", "prefixed", "any", "match"], case_sensitive=False),
    default="literal",
    show_default=True,
    help="The type of the resource pattern or pattern filter. When adding acls, a specific "
    "pattern type: literal or prefixed. When listing or removing, a specific type lists or "
    "removes the acls of those patterns; any matches either type but the resource name "
    "exactly, match every acl that affects the resource(s) (careful with --remove).",
)
@click.option(
    "--allow-principal",
    "allow_principals",
    multiple=True,
    metavar="TYPE:NAME",
    help="Principal to allow, in principalType:name format (repeatable); User:* is every user.",
)
@click.option(
    "--deny-principal",
    "deny_principals",
    multiple=True,
    metavar="TYPE:NAME",
    help="Principal to deny, in principalType:name format (repeatable). Deny rules take "
    "precedence over allow rules.",
)
@click.option(
    "--principal",
    "principals",
    multiple=True,
    metavar="TYPE:NAME",
    help="With --list: list only the ACLs of this principal (repeatable).",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="HOST",
    help="Host from which the --allow-principal principals have access (repeatable; * "
    "unless given: every host).",
)
@click.option(
    "--deny-host",
    "deny_hosts",
    multiple=True,
    metavar="HOST",
    help="Host from which the --deny-principal principals are denied access (repeatable; * "
    "unless given: every host).",
)
@click.option(
    "--operation",
    "operations",
    multiple=True,
    metavar="OPERATION",
    help=f"Operation that is being allowed or denied (repeatable; All unless given): "
    f"{_OPERATION_NAMES}.",
)
@click.option(
    "--producer",
    is_flag=True,
    help="Convenience option for the producer role: WRITE, DESCRIBE and CREATE on the topics "
    "(WRITE and DESCRIBE on the transactional ids).",
)
@click.option(
    "--idempotent",
    is_flag=True,
    help="With --producer: IDEMPOTENT_WRITE on the cluster too.",
)
@click.option(
    "--consumer",
    is_flag=True,
    help="Convenience option for the consumer role: READ and DESCRIBE on the topics, READ on "
    "the group (--group needed).",
)
@click.option("--force", is_flag=True, help="Assume Yes to all queries and do not prompt.")
@click.pass_context
def acls(
    ctx: click.Context,
    bootstrap_server: str,
    add: bool,
    remove: bool,
    list_: bool,
    topics: tuple[str, ...],
    groups: tuple[str, ...],
    cluster: bool,
    transactional_ids: tuple[str, ...],
    delegation_tokens: tuple[str, ...],
    resource_pattern_type: str,
    allow_principals: tuple[str, ...],
    deny_principals: tuple[str, ...],
    principals: tuple[str, ...],
    allow_hosts: tuple[str, ...],
    deny_hosts: tuple[str, ...],
    operations: tuple[str, ...],
    producer: bool,
    idempotent: bool,
    consumer: bool,
    force: bool,
) -> None:
    """Add, remove and list ACLs (like kafka-acls.sh --bootstrap-server), on librdkafka's
    admin client.

    \b
    minikafka acls --add --allow-principal User:alice --consumer --topic t --group g
    minikafka acls --add --allow-principal User:bob --producer --topic logs- \\
        --resource-pattern-type prefixed
    minikafka acls --list --topic t
    minikafka acls --remove --force --topic t
    """
    require_client("minikafka acls runs its admin client")
    actions = [name for name, on in (("add", add), ("remove", remove), ("list", list_)) if on]
    if len(actions) != 1:
        raise click.UsageError(ONE_ACTION)
    (action,) = actions
    if delegation_tokens:
        raise click.UsageError(
            "--delegation-token: librdkafka's admin client (confluent-kafka), which minikafka "
            "acls runs on, has no delegation-token resource type"
        )
    given = [
        p.opts[0]
        for p in ctx.command.params
        if p.name is not None and ctx.get_parameter_source(p.name) is ParameterSource.COMMANDLINE
    ]
    try:
        args = AclArgs(
            topics=topics,
            groups=groups,
            cluster=cluster,
            transactional_ids=transactional_ids,
            pattern_type=PatternType[resource_pattern_type.upper()],
            allow_principals=allow_principals,
            deny_principals=deny_principals,
            allow_hosts=allow_hosts,
            deny_hosts=deny_hosts,
            producer=producer,
            consumer=consumer,
            idempotent=idempotent,
            list_principals=principals,
        )
        check_args(action, given, args)
        args = replace(args, operations=tuple(_unique(parse_operation(o) for o in operations)))
        to_add = bindings_to_add(args) if action == "add" else {}
        to_remove = filters_to_remove(args) if action == "remove" else []
        list_principals(args)  # checked before anything connects
    except AclUsageError as e:
        raise click.UsageError(str(e)) from None

    from confluent_kafka import KafkaException

    try:
        admin = _Admin(bootstrap_server)
        for pattern, acl in to_add.items():
            click.echo(adding_text(pattern, acl))
            admin.create(pattern, acl)
        for pattern_filter, acl in to_remove:
            if not force:
                click.echo(
                    remove_prompt(pattern_filter, acl) if acl else delete_all_prompt(pattern_filter)
                )
                if not confirmed(_read_answer()):
                    continue
            admin.delete(delete_filters(pattern_filter, acl))
        _list(admin, args)
    except KafkaException as e:
        _fail(kafka_error_text(_error(e)))
    except (AclCommandError, ClientConfigError) as e:
        _fail(str(e))


def _fail(message: str) -> NoReturn:
    click.echo(f"Error while executing ACL command: {message}", err=True)
    sys.exit(1)
