"""`minikafka acls`: kafka-acls.sh's options read as Kafka 2.8's AclCommand reads them (the
ACLs and filters they make, its refusals and messages), its output to the character, and
the command over Kafka's protocol with librdkafka against a stand-in broker answering as
Kafka 2.8's (tests/unit/acl_broker.py). Nothing here needs a real broker
(tests/security/test_acls_cli.py runs the command against minikafka's)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result
from confluent_kafka.admin._acl import AclOperation as RdOperation
from confluent_kafka.admin._acl import AclPermissionType as RdPermission
from confluent_kafka.admin._resource import ResourcePatternType as RdPatternType
from confluent_kafka.admin._resource import ResourceType as RdResourceType

from minikafka.cli.acls import (
    CLUSTER_FILTER,
    NO_PRINCIPAL,
    NO_RESOURCE,
    AclArgs,
    AclCommandError,
    AclUsageError,
    adding_text,
    bindings_to_add,
    check_args,
    confirmed,
    current_text,
    delete_all_prompt,
    delete_filters,
    filters_to_remove,
    from_librdkafka_binding,
    list_filters,
    listing,
    parse_operation,
    parse_principal,
    principal_text,
    remove_prompt,
    to_librdkafka_binding,
    to_librdkafka_filter,
    valid_operations,
)
from minikafka.cli.main import cli
from minikafka.client.client_security import set_client_security
from minikafka.security.acls import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    ResourcePattern,
    ResourcePatternFilter,
)
from minikafka.security.operations import (
    SUPPORTED_OPERATIONS,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from tests.unit.acl_broker import WITHOUT_ACL_APIS, AclBroker, acl_broker

TOPIC, GROUP, CLUSTER, TXN = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
)
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
Op = AclOperation


@pytest.fixture(autouse=True)
def no_default_left_behind() -> Iterator[None]:
    yield
    set_client_security({})


def entry(
    principal: str, op: AclOperation, permission: AclPermissionType = ALLOW, host: str = "*"
) -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, permission)


# --- Kafka's text ----------------------------------------------------------------------------

T_PATTERN = ResourcePattern(TOPIC, "t", LITERAL)
T_TEXT = "ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)"
ALICE_READ = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
ALICE_DESCRIBE = "(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)"


def test_adding_and_current_blocks_are_kafkas_println_text() -> None:
    # AclCommand: s"Adding ACLs for resource `$resource`: $Newline ${acls.map("\t" + _)
    # .mkString(Newline)} $Newline"; println adds the last line break.
    one = [entry("User:alice", Op.READ)]
    assert (
        adding_text(T_PATTERN, one) == f"Adding ACLs for resource `{T_TEXT}`: \n \t{ALICE_READ} \n"
    )
    two = [entry("User:alice", Op.READ), entry("User:alice", Op.DESCRIBE)]
    assert current_text(T_PATTERN, two) == (
        f"Current ACLs for resource `{T_TEXT}`: \n \t{ALICE_READ}\n\t{ALICE_DESCRIBE} \n"
    )
    cluster = ResourcePattern(CLUSTER, "kafka-cluster", LITERAL)
    assert current_text(cluster, [entry("User:bob", Op.IDEMPOTENT_WRITE, DENY, "10.0.0.1")]) == (
        "Current ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, "
        "patternType=LITERAL)`: \n \t(principal=User:bob, host=10.0.0.1, "
        "operation=IDEMPOTENT_WRITE, permissionType=DENY) \n"
    )
    assert principal_text("User:alice") == "ACLs for principal `User:alice`"


def test_remove_prompts_are_kafkas() -> None:
    prefixed = ResourcePatternFilter(TOPIC, "logs-", PREFIXED)
    assert delete_all_prompt(prefixed) == (
        "Are you sure you want to delete all ACLs for resource filter "
        "`ResourcePattern(resourceType=TOPIC, name=logs-, patternType=PREFIXED)`? (y/n)"
    )
    assert remove_prompt(T_PATTERN.to_filter(), [entry("User:alice", Op.READ)]) == (
        f"Are you sure you want to remove ACLs: \n \t{ALICE_READ} \n from resource filter "
        f"`{T_TEXT}`? (y/n)"
    )
    matching = ResourcePatternFilter(GROUP, "g", PatternType.MATCH)
    assert "`ResourcePattern(resourceType=GROUP, name=g, patternType=MATCH)`" in (
        delete_all_prompt(matching)
    )


def test_answers_to_the_prompt() -> None:
    # StdIn.readLine().equalsIgnoreCase("y")
    assert confirmed("y\n") and confirmed("Y\n") and confirmed("y")
    assert not confirmed("n\n") and not confirmed("yes\n") and not confirmed(" y\n")
    assert not confirmed("\n")
    with pytest.raises(AclCommandError, match="end of input"):
        confirmed(None)


def test_listing_groups_sorts_and_filters_by_principal() -> None:
    g = ResourcePattern(GROUP, "g", LITERAL)
    prefixed = ResourcePattern(TOPIC, "logs-", PREFIXED)
    bindings = [
        AclBinding(g, entry("User:alice", Op.READ)),
        AclBinding(prefixed, entry("User:bob", Op.WRITE)),
        AclBinding(T_PATTERN, entry("User:alice", Op.DESCRIBE)),
        AclBinding(T_PATTERN, entry("User:alice", Op.READ)),
        AclBinding(T_PATTERN, entry("User:alice", Op.READ)),  # twice: once (Kafka's Set)
    ]
    # Resources by type, pattern type and name; entries by principal, host, operation.
    assert listing(bindings) == [
        current_text(T_PATTERN, [entry("User:alice", Op.READ), entry("User:alice", Op.DESCRIBE)]),
        current_text(prefixed, [entry("User:bob", Op.WRITE)]),
        current_text(g, [entry("User:alice", Op.READ)]),
    ]
    assert listing(bindings, ["User:bob", "User:carol"]) == [
        "ACLs for principal `User:bob`",
        current_text(prefixed, [entry("User:bob", Op.WRITE)]),
        "ACLs for principal `User:carol`",
    ]
    assert listing([]) == []


# --- what the options make -------------------------------------------------------------------


def test_consumer_acls() -> None:
    args = AclArgs(topics=("t",), groups=("g",), consumer=True, allow_principals=("User:alice",))
    assert bindings_to_add(args) == {
        T_PATTERN: (entry("User:alice", Op.READ), entry("User:alice", Op.DESCRIBE)),
        ResourcePattern(GROUP, "g", LITERAL): (entry("User:alice", Op.READ),),
    }


def test_producer_acls_prefixed_with_transactional_ids_and_idempotence() -> None:
    args = AclArgs(
        topics=("logs-",),
        transactional_ids=("tx-",),
        groups=("ignored",),  # --producer takes the topics and transactional ids only
        pattern_type=PREFIXED,
        producer=True,
        idempotent=True,
        allow_principals=("User:bob",),
    )
    assert bindings_to_add(args) == {
        ResourcePattern(TOPIC, "logs-", PREFIXED): tuple(
            entry("User:bob", op) for op in (Op.WRITE, Op.CREATE, Op.DESCRIBE)
        ),
        # The cluster's pattern is always literal.
        ResourcePattern(CLUSTER, "kafka-cluster", LITERAL): (
            entry("User:bob", Op.IDEMPOTENT_WRITE),
        ),
        ResourcePattern(TXN, "tx-", PREFIXED): (
            entry("User:bob", Op.WRITE),
            entry("User:bob", Op.DESCRIBE),
        ),
    }


def test_producer_and_consumer_together_join_a_topics_acls() -> None:
    args = AclArgs(
        topics=("t",), groups=("g",), producer=True, consumer=True, allow_principals=("User:a",)
    )
    assert bindings_to_add(args)[T_PATTERN] == tuple(
        entry("User:a", op) for op in (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE)
    )


def test_principals_hosts_and_operations_multiply() -> None:
    args = AclArgs(
        topics=(" t ", "t"),  # trimmed, as Kafka trims topics: one resource
        allow_principals=("User:alice", " User:bob "),
        allow_hosts=("10.0.0.1", "10.0.0.2"),
        deny_principals=("User:mallory",),  # every host unless --deny-host
        operations=(Op.READ, Op.WRITE),
    )
    (acl,) = bindings_to_add(args).values()
    assert len(acl) == 2 * 2 * 2 + 2
    assert entry("User:bob", Op.WRITE, ALLOW, "10.0.0.2") in acl
    assert entry("User:mallory", Op.READ, DENY, "*") in acl
    assert all(e.host != "*" for e in acl if e.permission_type is ALLOW)
    # No --operation: All; --cluster names kafka-cluster.
    everything = AclArgs(cluster=True, allow_principals=("User:admin",))
    assert bindings_to_add(everything) == {
        ResourcePattern(CLUSTER, "kafka-cluster", LITERAL): (entry("User:admin", Op.ALL),)
    }
    # Transactional ids are not trimmed (Kafka does not trim them).
    tx = AclArgs(transactional_ids=(" tx",), allow_principals=("User:a",), operations=(Op.WRITE,))
    assert list(bindings_to_add(tx)) == [ResourcePattern(TXN, " tx", LITERAL)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            AclArgs(topics=("t",), pattern_type=PatternType.ANY, allow_principals=("User:a",)),
            "A '--resource-pattern-type' value of 'ANY' is not valid when adding acls.",
        ),
        (
            AclArgs(topics=("t",), pattern_type=PatternType.MATCH, allow_principals=("User:a",)),
            "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls.",
        ),
        (AclArgs(topics=("t",)), NO_PRINCIPAL),
        (AclArgs(topics=("t",), allow_hosts=("h",)), NO_PRINCIPAL),
        (AclArgs(allow_principals=("User:a",)), NO_RESOURCE),
        # The cluster is a literal pattern only: as Kafka's tool, no resource is left.
        (AclArgs(cluster=True, pattern_type=PREFIXED, allow_principals=("User:a",)), NO_RESOURCE),
        (
            AclArgs(groups=("g",), operations=(Op.WRITE,), allow_principals=("User:a",)),
            "ResourceType GROUP only supports operations READ,DESCRIBE,DELETE,ALL",
        ),
        (
            AclArgs(topics=("t",), operations=(Op.CLUSTER_ACTION,), allow_principals=("User:a",)),
            "ResourceType TOPIC only supports operations READ,WRITE,CREATE,DESCRIBE,DELETE,ALTER,"
            "DESCRIBE_CONFIGS,ALTER_CONFIGS,ALL",
        ),
        (
            AclArgs(cluster=True, operations=(Op.READ,), deny_principals=("User:a",)),
            "ResourceType CLUSTER only supports operations CREATE,CLUSTER_ACTION,DESCRIBE_CONFIGS,"
            "ALTER_CONFIGS,IDEMPOTENT_WRITE,ALTER,DESCRIBE,ALL",
        ),
        (
            AclArgs(transactional_ids=("x",), operations=(Op.READ,), allow_principals=("User:a",)),
            "ResourceType TRANSACTIONAL_ID only supports operations DESCRIBE,WRITE,ALL",
        ),
        (
            AclArgs(topics=("t",), allow_principals=("alice",)),
            "expected a string in format principalType:principalName but got alice",
        ),
    ],
)
def test_what_kafkas_tool_refuses_when_adding(args: AclArgs, message: str) -> None:
    with pytest.raises(AclUsageError) as e:
        bindings_to_add(args)
    assert str(e.value) == message


def test_the_valid_operations_are_kafkas_supported_operations_and_all() -> None:
    for resource_type, supported in SUPPORTED_OPERATIONS.items():
        valid = valid_operations(resource_type)
        assert set(valid) == supported | {Op.ALL} and len(valid) == len(set(valid))


def test_remove_filters() -> None:
    # No principal: every ACL of each filter goes (whatever --operation says, as Kafka).
    args = AclArgs(topics=("t",), groups=("g",), operations=(Op.READ,))
    removals = filters_to_remove(args)
    assert removals == [
        (T_PATTERN.to_filter(), ()),
        (ResourcePatternFilter(GROUP, "g", LITERAL), ()),
    ]
    assert delete_filters(*removals[0]) == [
        AclBindingFilter(T_PATTERN.to_filter(), AccessControlEntryFilter.ANY)
    ]
    # With principals: one filter per entry, the resource filter as given (MATCH here).
    match = AclArgs(
        topics=("t",),
        pattern_type=PatternType.MATCH,
        allow_principals=("User:alice",),
        operations=(Op.READ,),
    )
    ((pattern_filter, acl),) = filters_to_remove(match)
    assert pattern_filter == ResourcePatternFilter(TOPIC, "t", PatternType.MATCH)
    assert delete_filters(pattern_filter, acl) == [
        AclBindingFilter(
            pattern_filter, AccessControlEntryFilter("User:alice", "*", Op.READ, ALLOW)
        )
    ]
    with pytest.raises(AclUsageError, match="ResourceType GROUP only supports"):
        filters_to_remove(AclArgs(groups=("g",), operations=(Op.WRITE,), deny_principals=("U:x",)))


def test_list_filters() -> None:
    assert list_filters(AclArgs()) == [AclBindingFilter.ANY]
    assert list_filters(AclArgs(topics=("t",), cluster=True)) == [
        AclBindingFilter(T_PATTERN.to_filter(), AccessControlEntryFilter.ANY),
        AclBindingFilter(CLUSTER_FILTER, AccessControlEntryFilter.ANY),
    ]
    # Kafka's quirk: --cluster counts only with literal; nothing left lists every ACL.
    assert list_filters(AclArgs(cluster=True, pattern_type=PatternType.ANY)) == [
        AclBindingFilter.ANY
    ]


@pytest.mark.parametrize(
    ("name", "op"),
    [
        ("Read", Op.READ),
        ("read", Op.READ),
        ("READ", Op.READ),
        (" Write ", Op.WRITE),
        ("DescribeConfigs", Op.DESCRIBE_CONFIGS),
        ("describeconfigs", Op.DESCRIBE_CONFIGS),
        ("IDEMPOTENTWRITE", Op.IDEMPOTENT_WRITE),
        ("ClusterAction", Op.CLUSTER_ACTION),
        ("All", Op.ALL),
    ],
)
def test_operation_names_as_kafka_reads_them(name: str, op: AclOperation) -> None:
    assert parse_operation(name) is op


@pytest.mark.parametrize("name", ["DESCRIBE_CONFIGS", "Any", "Unknown", "Bogus", ""])
def test_operation_names_kafka_does_not_take_for_an_acl(name: str) -> None:
    with pytest.raises(AclUsageError, match="Unknown operation"):
        parse_operation(name)


def test_principals() -> None:
    assert parse_principal("User:alice") == "User:alice"
    assert parse_principal(" User:CN=a,O=b:c ") == "User:CN=a,O=b:c"  # split at the first ':'
    assert parse_principal("User:*") == "User:*"
    for bad in ("alice", "User:", ":alice", ""):
        with pytest.raises(AclUsageError, match="expected a string in format"):
            parse_principal(bad)


def test_check_args_in_kafkas_words() -> None:
    with pytest.raises(AclUsageError) as e:
        check_args("list", ["--list", "--allow-principal"], AclArgs(allow_principals=("U:a",)))
    assert str(e.value) == 'Option "[list]" can\'t be used with option "[allow-principal]"'


# --- librdkafka's types ------------------------------------------------------------------------


def test_librdkafka_bindings_and_filters() -> None:
    cluster = ResourcePattern(CLUSTER, "kafka-cluster", LITERAL)
    rd = to_librdkafka_binding(cluster, entry("User:a", Op.IDEMPOTENT_WRITE, DENY, "h"))
    assert rd.restype is RdResourceType.BROKER and rd.name == "kafka-cluster"
    assert rd.resource_pattern_type is RdPatternType.LITERAL
    assert (rd.principal, rd.host) == ("User:a", "h")
    assert rd.operation is RdOperation.IDEMPOTENT_WRITE and rd.permission_type is RdPermission.DENY
    assert from_librdkafka_binding(rd) == AclBinding(
        cluster, entry("User:a", Op.IDEMPOTENT_WRITE, DENY, "h")
    )
    rd_filter = to_librdkafka_filter(AclBindingFilter.ANY)
    assert rd_filter.restype is RdResourceType.ANY and rd_filter.name is None
    assert rd_filter.resource_pattern_type is RdPatternType.ANY
    assert rd_filter.principal is None and rd_filter.host is None
    assert rd_filter.operation is RdOperation.ANY and rd_filter.permission_type is RdPermission.ANY


# --- the command's arguments -----------------------------------------------------------------


def acls(*args: str, bootstrap: str = "127.0.0.1:1", stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["acls", "--bootstrap-server", bootstrap, *args], input=stdin)


CONSUMER = ["--consumer", "--topic", "t", "--group", "g", "--allow-principal", "User:alice"]

USAGE_ERRORS = [
    (["--topic", "t"], "Command must include exactly one action: --list, --add, --remove."),
    (["--add", "--list", "--topic", "t"], "Command must include exactly one action"),
    (["--list", "--producer"], 'Option "[list]" can\'t be used with option "[producer]"'),
    (
        ["--list", "--topic", "t", "--deny-host", "h"],
        'Option "[list]" can\'t be used with option "[deny-host]"',
    ),
    (
        ["--add", "--producer", "--topic", "t", "--operation", "Read"],
        'Option "[producer]" can\'t be used with option "[operation]"',
    ),
    (
        ["--add", *CONSUMER, "--deny-principal", "User:x"],
        'Option "[consumer]" can\'t be used with option "[deny-principal]"',
    ),
    (
        ["--add", "--topic", "t", "--principal", "User:a"],
        "The --principal option is only available if --list is set",
    ),
    (["--add", "--producer", "--group", "g"], "With --producer you must specify a --topic"),
    (
        ["--add", "--idempotent", "--topic", "t"],
        "The --idempotent option is only available if --producer is set",
    ),
    (
        ["--add", "--consumer", "--topic", "t", "--allow-principal", "User:a"],
        "With --consumer you must specify a --topic and a --group and no --cluster or "
        "--transactional-id option should be specified.",
    ),
    (
        ["--add", *CONSUMER, "--cluster"],
        "With --consumer you must specify a --topic and a --group",
    ),
    (
        ["--add", "--topic", "t", "--resource-pattern-type", "match", "--allow-principal", "U:a"],
        "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls.",
    ),
    (["--add", "--topic", "t"], NO_PRINCIPAL),
    (["--remove", "--allow-principal", "User:a"], NO_RESOURCE),
    (
        ["--add", "--group", "g", "--operation", "Write", "--allow-principal", "User:a"],
        "ResourceType GROUP only supports operations READ,DESCRIBE,DELETE,ALL",
    ),
    (["--add", "--topic", "t", "--allow-principal", "alice"], "expected a string in format"),
    (["--list", "--principal", "alice"], "expected a string in format"),
    (
        ["--add", "--topic", "t", "--operation", "Bogus", "--allow-principal", "User:a"],
        "Unknown operation 'Bogus'",
    ),
    (["--list", "--delegation-token", "x"], "no delegation-token resource type"),
    (["--list", "--resource-pattern-type", "regex"], "'regex' is not one of"),
    (["--list", "--authorizer-properties", "zookeeper.connect=x"], "No such option"),
]


@pytest.mark.parametrize(("args", "message"), USAGE_ERRORS)
def test_argument_errors_are_usage_errors(args: list[str], message: str) -> None:
    result = acls(*args)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.stderr.split())
    assert result.stdout == ""


def test_pattern_type_and_operation_names_in_any_case() -> None:
    # Accepted (then nothing answers at 127.0.0.1:1: status 1, not a usage error).
    result = acls(
        "--add",
        "--topic",
        "t",
        "--resource-pattern-type",
        "PREFIXED",
        "--operation",
        "describeConfigs",
        "--allow-principal",
        "User:a",
    )
    assert result.exit_code == 1, result.output


# --- over Kafka's protocol, against a stand-in broker ----------------------------------------


@pytest.fixture
def broker() -> Iterator[AclBroker]:
    with acl_broker() as b:
        yield b


def _ok(result: Result) -> str:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.stderr == ""
    return result.stdout


G_TEXT = "ResourcePattern(resourceType=GROUP, name=g, patternType=LITERAL)"
CONSUMER_LISTING = (
    f"Current ACLs for resource `{T_TEXT}`: \n \t{ALICE_READ}\n\t{ALICE_DESCRIBE} \n\n"
    f"Current ACLs for resource `{G_TEXT}`: \n \t{ALICE_READ} \n\n"
)


def test_add_list_and_remove(broker: AclBroker) -> None:
    added = _ok(acls("--add", *CONSUMER, bootstrap=broker.bootstrap))
    assert added == (
        f"Adding ACLs for resource `{T_TEXT}`: \n \t{ALICE_READ}\n\t{ALICE_DESCRIBE} \n\n"
        f"Adding ACLs for resource `{G_TEXT}`: \n \t{ALICE_READ} \n\n" + CONSUMER_LISTING
    )
    # One CreateAcls per resource, then a DescribeAcls per resource filter.
    create_t, create_g, describe_t, describe_g = broker.requests
    assert [(c.resource_name, c.operation) for c in create_t.creations] == [("t", 3), ("t", 8)]
    assert [(c.resource_name, c.operation) for c in create_g.creations] == [("g", 3)]
    assert (describe_t.resource_name_filter, describe_g.resource_name_filter) == ("t", "g")
    assert describe_t.principal_filter is None and describe_t.operation == 1  # ANY

    assert _ok(acls("--list", bootstrap=broker.bootstrap)) == CONSUMER_LISTING
    assert _ok(acls("--list", "--topic", "t", bootstrap=broker.bootstrap)) == (
        f"Current ACLs for resource `{T_TEXT}`: \n \t{ALICE_READ}\n\t{ALICE_DESCRIBE} \n\n"
    )

    prefixed = "ResourcePattern(resourceType=TOPIC, name=logs-, patternType=PREFIXED)"
    bob_write = "(principal=User:bob, host=*, operation=WRITE, permissionType=ALLOW)"
    added = _ok(
        acls(
            "--add",
            "--topic",
            "logs-",
            "--resource-pattern-type",
            "prefixed",
            "--allow-principal",
            "User:bob",
            "--operation",
            "Write",
            bootstrap=broker.bootstrap,
        )
    )
    assert added == (
        f"Adding ACLs for resource `{prefixed}`: \n \t{bob_write} \n\n"
        f"Current ACLs for resource `{prefixed}`: \n \t{bob_write} \n\n"
    )
    # match: every ACL that applies to topic logs-x.
    assert _ok(
        acls(
            "--list",
            "--topic",
            "logs-x",
            "--resource-pattern-type",
            "match",
            bootstrap=broker.bootstrap,
        )
    ) == (f"Current ACLs for resource `{prefixed}`: \n \t{bob_write} \n\n")
    assert _ok(acls("--list", "--principal", "User:bob", bootstrap=broker.bootstrap)) == (
        f"ACLs for principal `User:bob`\nCurrent ACLs for resource `{prefixed}`: \n \t{bob_write} \n\n"
    )

    # --remove asks; anything but y keeps the ACLs.
    kept = _ok(acls("--remove", "--topic", "t", bootstrap=broker.bootstrap, stdin="n\n"))
    assert kept == (
        f"Are you sure you want to delete all ACLs for resource filter `{T_TEXT}`? (y/n)\n"
        f"Current ACLs for resource `{T_TEXT}`: \n \t{ALICE_READ}\n\t{ALICE_DESCRIBE} \n\n"
    )
    one = _ok(
        acls(
            "--remove",
            "--topic",
            "t",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Read",
            bootstrap=broker.bootstrap,
            stdin="Y\n",
        )
    )
    assert one == (
        f"Are you sure you want to remove ACLs: \n \t{ALICE_READ} \n from resource filter "
        f"`{T_TEXT}`? (y/n)\n"
        f"Current ACLs for resource `{T_TEXT}`: \n \t{ALICE_DESCRIBE} \n\n"
    )
    # No answer at all: one line, status 1, nothing removed.
    eof = acls("--remove", "--topic", "t", bootstrap=broker.bootstrap, stdin="")
    assert eof.exit_code == 1
    assert eof.stderr == (
        "Error while executing ACL command: no answer to the question above (end of input); "
        "--force removes without asking\n"
    )
    # --force: no question.
    gone = _ok(
        acls(
            "--remove",
            "--force",
            "--topic",
            "t",
            "--group",
            "g",
            "--topic",
            "logs-",
            "--resource-pattern-type",
            "any",
            bootstrap=broker.bootstrap,
        )
    )
    assert gone == ""
    assert broker.acls == []
    assert _ok(acls("--list", bootstrap=broker.bootstrap)) == ""


def test_the_brokers_refusal_of_one_acl_is_one_line(broker: AclBroker) -> None:
    add = ["--add", "--topic", "", "--allow-principal", "User:a", "--operation", "Read"]
    result = acls(*add, bootstrap=broker.bootstrap)
    assert result.exit_code == 1
    assert result.stderr == (
        "Error while executing ACL command: INVALID_REQUEST: Invalid empty resource name\n"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["--list"],
        ["--list", "--topic", "t"],
        ["--add", *CONSUMER],
        ["--remove", "--force", "--topic", "t"],
    ],
)
def test_a_broker_without_an_authorizer(args: list[str]) -> None:
    with acl_broker(authorizer=False) as b:
        result = acls(*args, bootstrap=b.bootstrap)
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "Error while executing ACL command: SECURITY_DISABLED: No Authorizer is configured on the "
        "broker"
    )
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "args", [["--list"], ["--add", *CONSUMER], ["--remove", "--force", "--topic", "t"]]
)
def test_a_principal_without_permission_on_the_cluster(args: list[str]) -> None:
    with acl_broker(allowed=False) as b:
        result = acls(*args, bootstrap=b.bootstrap)
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "Error while executing ACL command: CLUSTER_AUTHORIZATION_FAILED: "
    )
    assert result.stderr.count("\n") == 1


def test_a_broker_without_the_acl_apis() -> None:
    with acl_broker(WITHOUT_ACL_APIS) as b:
        for args in (["--list"], ["--add", *CONSUMER], ["--remove", "--force", "--topic", "t"]):
            result = acls(*args, bootstrap=b.bootstrap)
            assert result.exit_code == 1
            assert result.stderr.startswith(
                "Error while executing ACL command: _UNSUPPORTED_FEATURE: "
            )
            assert "not supported by broker" in result.stderr
            assert result.stderr.count("\n") == 1


def test_no_broker_answers() -> None:
    result = acls("--list")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error while executing ACL command: ")
    assert "127.0.0.1:1" in result.stderr and result.stderr.count("\n") == 1
