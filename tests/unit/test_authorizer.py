"""Kafka 2.8's AclAuthorizer, sans-IO (minikafka/security/authorizer.py), and the ACL types
and request validation it works with (acls.py, operations.py). Many cases are Kafka's own
(AclAuthorizerTest, ResourcePatternFilterTest); two properties compare the authorizer with
a plain reading of Kafka's rules."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.protocol.errors import ErrorCode
from minikafka.security.acls import (
    CLUSTER_NAME,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclError,
    MalformedAclRequestError,
    ResourcePattern,
    ResourcePatternFilter,
    check_acl_filters_request,
    check_create_acls_request,
    validate_acl_creations,
)
from minikafka.security.authorizer import (
    TRACE,
    AclAuthorizer,
    acls_after_create,
    acls_after_delete,
    decision_log_level,
    describe_decision,
    group_by_pattern,
    parse_allow_everyone,
    parse_super_users,
)
from minikafka.security.operations import (
    SUPPORTED_OPERATIONS,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    to_32bit_field,
)
from minikafka.security.principal import KafkaPrincipal

Op = AclOperation
ALLOW = AclPermissionType.ALLOW
DENY = AclPermissionType.DENY
TOPIC = ResourceType.TOPIC
GROUP = ResourceType.GROUP
CLUSTER = ResourceType.CLUSTER
LITERAL = PatternType.LITERAL
PREFIXED = PatternType.PREFIXED

ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")
HOST1 = "192.168.1.1"
HOST2 = "192.168.1.2"

# The operations an ACL can name (AclOperation without UNKNOWN and ANY).
VALID_OPS = [op for op in AclOperation if op not in (Op.UNKNOWN, Op.ANY)]


def ace(
    principal: KafkaPrincipal | str = ALICE,
    host: str = "*",
    op: AclOperation = Op.READ,
    perm: AclPermissionType = ALLOW,
) -> AccessControlEntry:
    return AccessControlEntry(str(principal), host, op, perm)


def lit(name: str, rt: ResourceType = TOPIC) -> ResourcePattern:
    return ResourcePattern(rt, name, LITERAL)


def pre(name: str, rt: ResourceType = TOPIC) -> ResourcePattern:
    return ResourcePattern(rt, name, PREFIXED)


def creation(
    rt: ResourceType = TOPIC,
    name: str | None = "orders",
    pt: PatternType = LITERAL,
    principal: str | None = "User:alice",
    host: str | None = "*",
    op: AclOperation = Op.READ,
    perm: AclPermissionType = ALLOW,
) -> AclBindingFilter:
    return AclBindingFilter(
        ResourcePatternFilter(rt, name, pt), AccessControlEntryFilter(principal, host, op, perm)
    )


# -- enums ------------------------------------------------------------------------------


def test_enums_carry_kafkas_codes_and_names() -> None:
    assert [(t.name, t.value) for t in ResourceType] == [
        ("UNKNOWN", 0),
        ("ANY", 1),
        ("TOPIC", 2),
        ("GROUP", 3),
        ("CLUSTER", 4),
        ("TRANSACTIONAL_ID", 5),
        ("DELEGATION_TOKEN", 6),
    ]
    assert [(t.name, t.value) for t in AclPermissionType] == [
        ("UNKNOWN", 0),
        ("ANY", 1),
        ("DENY", 2),
        ("ALLOW", 3),
    ]
    assert [(t.name, t.value) for t in PatternType] == [
        ("UNKNOWN", 0),
        ("ANY", 1),
        ("MATCH", 2),
        ("LITERAL", 3),
        ("PREFIXED", 4),
    ]
    assert ResourceType.TRANSACTIONAL_ID.pascal_name == "TransactionalId"
    assert ResourceType.DELEGATION_TOKEN.pascal_name == "DelegationToken"
    assert Op.DESCRIBE_CONFIGS.pascal_name == "DescribeConfigs"
    assert Op.IDEMPOTENT_WRITE.pascal_name == "IdempotentWrite"
    assert ALLOW.pascal_name == "Allow"
    assert ResourceType.from_code(99) is ResourceType.UNKNOWN
    assert Op.from_code(12) is Op.IDEMPOTENT_WRITE


def test_parsing_names_as_kafka() -> None:
    # Java's fromString: the constant's name in any case.
    assert ResourceType.from_string("topic") is TOPIC
    assert ResourceType.from_string("transactional_id") is ResourceType.TRANSACTIONAL_ID
    assert ResourceType.from_string("TransactionalId") is ResourceType.UNKNOWN
    assert Op.from_string("Read") is Op.READ
    assert AclPermissionType.from_string("deny") is DENY
    # PatternType.fromString is case-sensitive.
    assert PatternType.from_string("PREFIXED") is PREFIXED
    assert PatternType.from_string("Prefixed") is PatternType.UNKNOWN
    # SecurityUtils: the Pascal-case name in any case, no underscores.
    assert ResourceType.from_pascal_name("TransactionalId") is ResourceType.TRANSACTIONAL_ID
    assert ResourceType.from_pascal_name("TOPIC") is TOPIC
    assert Op.from_pascal_name("describeconfigs") is Op.DESCRIBE_CONFIGS
    assert Op.from_pascal_name("DESCRIBE_CONFIGS") is Op.UNKNOWN
    assert AclPermissionType.from_pascal_name("Allow") is ALLOW
    assert Op.from_pascal_name("Frobnicate") is Op.UNKNOWN


# -- configuration ----------------------------------------------------------------------


def test_super_users_config() -> None:
    assert parse_super_users("User:a; User:b;") == {
        KafkaPrincipal.user("a"),
        KafkaPrincipal.user("b"),
    }
    assert parse_super_users("") == frozenset()
    assert parse_super_users(None) == frozenset()
    assert parse_super_users("User:CN=x,O=y") == {KafkaPrincipal("User", "CN=x,O=y")}
    with pytest.raises(ValueError):
        parse_super_users("User:a;;User:b")
    with pytest.raises(ValueError):
        parse_super_users("alice")
    auth = AclAuthorizer.from_config(
        {"super.users": "User:admin", "allow.everyone.if.no.acl.found": "TRUE"}
    )
    assert auth.super_users == {KafkaPrincipal.user("admin")}
    assert auth.allow_everyone_if_no_acl_found
    assert not AclAuthorizer.from_config({}).allow_everyone_if_no_acl_found
    assert parse_allow_everyone("false") is False
    with pytest.raises(ValueError):
        parse_allow_everyone("yes")


# -- decisions --------------------------------------------------------------------------


def test_super_users_may_do_anything() -> None:
    auth = AclAuthorizer(super_users={"User:superuser1", "User:superuser2"})
    auth.update(lit("foo"), [ace("User:*", "*", Op.ALL, DENY)])
    for su in ("superuser1", "superuser2"):
        assert auth.authorize(KafkaPrincipal.user(su), "192.0.4.4", Op.READ, TOPIC, "foo")
    assert not auth.authorize(ALICE, "192.0.4.4", Op.READ, TOPIC, "foo")
    # A super user even with no ACLs at all and allow.everyone false.
    assert AclAuthorizer(super_users={"User:root"}).authorize(
        KafkaPrincipal.user("root"), HOST1, Op.ALTER, CLUSTER, CLUSTER_NAME
    )


def test_kafkas_topic_acl_case() -> None:
    # AclAuthorizerTest.testTopicAcl.
    rob, batman = KafkaPrincipal.user("rob"), KafkaPrincipal.user("batman")
    auth = AclAuthorizer()
    auth.update(
        lit("foo"),
        [
            ace(ALICE, HOST1, Op.READ, ALLOW),
            ace(ALICE, HOST2, Op.READ, ALLOW),
            ace(ALICE, HOST1, Op.READ, DENY),
            ace(ALICE, HOST1, Op.WRITE, ALLOW),
            ace(ALICE, "*", Op.DESCRIBE, ALLOW),
            ace(rob, "*", Op.READ, ALLOW),
            ace(batman, "*", Op.WRITE, ALLOW),
        ],
    )

    def may(who: KafkaPrincipal, host: str, op: AclOperation) -> bool:
        return auth.authorize(who, host, op, TOPIC, "foo")

    assert may(ALICE, HOST2, Op.READ)
    assert not may(ALICE, HOST1, Op.READ)  # the DENY wins
    assert may(ALICE, HOST1, Op.WRITE)
    assert not may(ALICE, HOST2, Op.WRITE)  # host mismatch
    assert may(ALICE, HOST1, Op.DESCRIBE) and may(ALICE, HOST2, Op.DESCRIBE)
    assert not may(ALICE, HOST1, Op.ALTER) and not may(ALICE, HOST2, Op.ALTER)
    assert may(rob, HOST1, Op.DESCRIBE) and may(batman, HOST1, Op.DESCRIBE)  # implied
    assert may(rob, HOST1, Op.READ) and may(batman, HOST1, Op.WRITE)
    assert not may(rob, HOST1, Op.WRITE)


def test_deny_takes_precedence() -> None:
    auth = AclAuthorizer()
    auth.update(
        lit("foo"), [ace("User:*", "*", Op.ALL, ALLOW), ace(ALICE, "192.168.2.1", Op.ALL, DENY)]
    )
    assert not auth.authorize(ALICE, "192.168.2.1", Op.READ, TOPIC, "foo")
    assert auth.authorize(ALICE, "192.168.2.2", Op.READ, TOPIC, "foo")
    assert auth.authorize(BOB, "192.168.2.1", Op.READ, TOPIC, "foo")
    # A DENY on a prefix or the wildcard also beats a literal ALLOW.
    auth.update(lit("bar"), [ace(BOB, "*", Op.WRITE, ALLOW)])
    auth.update(pre("ba"), [ace("User:*", "*", Op.WRITE, DENY)])
    assert not auth.authorize(BOB, HOST1, Op.WRITE, TOPIC, "bar")


def test_wildcard_principal_and_host() -> None:
    auth = AclAuthorizer()
    auth.update(lit("foo"), [ace("User:*", "*", Op.ALL, ALLOW)])
    assert auth.authorize(KafkaPrincipal.user("random"), "192.0.4.4", Op.READ, TOPIC, "foo")
    # User:* is every principal, whatever its type (Kafka compares the ACL's principal
    # with AclEntry.WildcardPrincipal, not the types).
    assert auth.authorize(KafkaPrincipal("Group", "x"), "192.0.4.4", Op.READ, TOPIC, "foo")
    # Hosts compare as text: an ACL for a host name matches no client address.
    auth.update(lit("bar"), [ace(ALICE, "localhost", Op.READ, ALLOW)])
    assert not auth.authorize(ALICE, "127.0.0.1", Op.READ, TOPIC, "bar")


@pytest.mark.parametrize(
    ("parent", "implied"),
    [
        (Op.ALL, set(VALID_OPS)),
        (Op.READ, {Op.DESCRIBE}),
        (Op.WRITE, {Op.DESCRIBE}),
        (Op.DELETE, {Op.DESCRIBE}),
        (Op.ALTER, {Op.DESCRIBE}),
        (Op.ALTER_CONFIGS, {Op.DESCRIBE_CONFIGS}),
        (Op.CREATE, set()),
        (Op.DESCRIBE, set()),
        (Op.IDEMPOTENT_WRITE, set()),
    ],
)
def test_implications_of_allow(parent: AclOperation, implied: set[AclOperation]) -> None:
    # AclAuthorizerTest.testAclInheritance, on the cluster.
    auth = AclAuthorizer()
    auth.update(lit(CLUSTER_NAME, CLUSTER), [ace(ALICE, "*", parent, ALLOW)])
    for op in VALID_OPS:
        expected = op in implied or op == parent
        assert auth.authorize(ALICE, HOST1, op, CLUSTER, CLUSTER_NAME) == expected, op


@pytest.mark.parametrize("parent", [Op.ALL, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.READ])
def test_implications_of_deny(parent: AclOperation) -> None:
    # A DENY implies nothing but itself (ALL: everything).
    auth = AclAuthorizer()
    auth.update(
        lit(CLUSTER_NAME, CLUSTER), [ace(ALICE, "*", parent, DENY), ace(ALICE, "*", Op.ALL, ALLOW)]
    )
    for op in VALID_OPS:
        denied = parent is Op.ALL or op == parent
        assert auth.authorize(ALICE, HOST1, op, CLUSTER, CLUSTER_NAME) != denied, op


def test_literal_wildcard_covers_every_name_of_its_type() -> None:
    auth = AclAuthorizer()
    assert not auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "foo")
    auth.update(lit("*"), [ace(ALICE, HOST1, Op.READ, ALLOW)])
    assert auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "foo")
    assert auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "created-later")
    assert not auth.authorize(ALICE, HOST1, Op.READ, GROUP, "foo")
    # AclAuthorizerTest.testWildCardAcls: a DENY on the wildcard beats a literal ALLOW.
    auth.update(lit("foo"), [ace(ALICE, HOST1, Op.WRITE, ALLOW)])
    assert auth.authorize(ALICE, HOST1, Op.WRITE, TOPIC, "foo")
    auth.update(lit("*"), [ace(ALICE, HOST1, Op.READ, ALLOW), ace(ALICE, HOST1, Op.WRITE, DENY)])
    assert not auth.authorize(ALICE, HOST1, Op.WRITE, TOPIC, "foo")
    # An empty name is covered too (AclAuthorizerTest.testAuthorizeWithEmptyResourceName).
    g = AclAuthorizer()
    assert not g.authorize(ALICE, HOST1, Op.READ, GROUP, "")
    g.update(lit("*", GROUP), [ace(ALICE, "*", Op.READ, ALLOW)])
    assert g.authorize(ALICE, HOST1, Op.READ, GROUP, "")


def test_prefixed_patterns_cover_names_starting_with_them() -> None:
    auth = AclAuthorizer()
    auth.update(pre("orders-"), [ace(ALICE, "*", Op.READ, ALLOW)])
    assert auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "orders-eu")
    assert auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "orders-")
    assert auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "orders-created-later")
    assert not auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "orders")
    assert not auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "xorders-eu")
    assert not auth.authorize(ALICE, HOST1, Op.READ, GROUP, "orders-eu")
    # AclAuthorizerTest.testSingleCharacterResourceAcls.
    auth.update(lit("f"), [ace(ALICE, "*", Op.READ, ALLOW)])
    assert auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "f")
    assert not auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "foo")
    auth.update(pre("_"), [ace(ALICE, "*", Op.READ, ALLOW)])
    assert auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "_foo")
    assert auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "_")
    assert not auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "foo_")
    # Removing the pattern removes what it allowed.
    auth.remove(pre("orders-"))
    assert not auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "orders-eu")


def test_prefixed_among_many() -> None:
    # AclAuthorizerTest.testAuthorizeWithPrefixedResource: DENYs on neighbouring names.
    auth = AclAuthorizer()
    deny = [ace(ALICE, "*", Op.READ, DENY)]
    for p in [
        lit("a_other"),
        pre("a_other"),
        pre("foo-1234"),
        pre("foo-5678-zzz"),
        pre("fooo-1"),
        pre("fo-1"),
        pre("fop-1"),
        pre("fon-"),
        pre("z_other"),
        lit("z_other"),
    ]:
        auth.update(p, deny)
    auth.update(pre("foo"), [ace(ALICE, "*", Op.READ, ALLOW)])
    assert auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "foo-abcd")
    assert not auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "foo-1234-x")


def test_allow_everyone_if_no_acl_found() -> None:
    closed, open_ = AclAuthorizer(), AclAuthorizer(allow_everyone_if_no_acl_found=True)
    assert not closed.authorize(ALICE, HOST1, Op.READ, TOPIC, "foo")
    assert open_.authorize(ALICE, HOST1, Op.READ, TOPIC, "foo")
    # ACLs on other resources leave this one with none.
    open_.update(lit("bar"), [ace(BOB, "*", Op.READ, ALLOW)])
    assert open_.authorize(ALICE, HOST1, Op.READ, TOPIC, "foo")
    # An ACL for someone else on this resource: ACLs were found, and none allows alice.
    open_.update(lit("foo"), [ace(BOB, "*", Op.READ, ALLOW)])
    assert not open_.authorize(ALICE, HOST1, Op.READ, TOPIC, "foo")
    assert open_.authorize(BOB, HOST1, Op.READ, TOPIC, "foo")
    # ...also when found through the wildcard or a prefix.
    open_.update(lit("*", GROUP), [ace(BOB, "*", Op.READ, ALLOW)])
    assert not open_.authorize(ALICE, HOST1, Op.READ, GROUP, "g")
    open_.update(pre("tx-", ResourceType.TRANSACTIONAL_ID), [ace(BOB, "*", Op.WRITE, ALLOW)])
    assert not open_.authorize(ALICE, HOST1, Op.WRITE, ResourceType.TRANSACTIONAL_ID, "tx-1")
    assert open_.authorize(ALICE, HOST1, Op.WRITE, ResourceType.TRANSACTIONAL_ID, "other")


def test_decisions_say_why() -> None:
    auth = AclAuthorizer(super_users={"User:root"})
    auth.update(lit("foo"), [ace(ALICE, "*", Op.WRITE, ALLOW)])
    auth.update(pre("fo"), [ace(BOB, "*", Op.ALL, DENY)])
    d = auth.authorize_with_reason(ALICE, HOST1, Op.DESCRIBE, TOPIC, "foo")
    assert d.allowed and d.acl == AclBinding(lit("foo"), ace(ALICE, "*", Op.WRITE, ALLOW))
    assert (
        "is ALLOW based on acl = User:alice has ALLOW permission for operations: WRITE" in d.reason
    )
    d = auth.authorize_with_reason(BOB, HOST1, Op.READ, TOPIC, "foo")
    assert not d.allowed and d.acl is not None and d.acl.pattern == pre("fo")
    d = auth.authorize_with_reason(ALICE, HOST1, Op.READ, TOPIC, "foo")
    assert not d.allowed and d.acl is None
    d = auth.authorize_with_reason(ALICE, HOST1, Op.READ, TOPIC, "nothing")
    assert not d.allowed and d.reason.startswith("No acl found for resource")
    d = auth.authorize_with_reason(KafkaPrincipal.user("root"), HOST1, Op.READ, TOPIC, "foo")
    assert d.allowed and "super user" in d.reason


def test_authorizer_log_line_and_level() -> None:
    line = describe_decision(ALICE, "127.0.0.1", Op.READ, TOPIC, "foo", False, "Fetch")
    assert line == (
        "Principal = User:alice is Denied Operation = Read from host = 127.0.0.1 on resource = "
        "Topic:LITERAL:foo for request = Fetch with resourceRefCount = 1"
    )
    line = describe_decision(
        BOB,
        "10.0.0.1",
        Op.DESCRIBE_CONFIGS,
        ResourceType.TRANSACTIONAL_ID,
        "t",
        True,
        "Metadata",
        3,
    )
    assert line == (
        "Principal = User:bob is Allowed Operation = DescribeConfigs from host = 10.0.0.1 on "
        "resource = TransactionalId:LITERAL:t for request = Metadata with resourceRefCount = 3"
    )
    assert decision_log_level(True) == logging.DEBUG
    assert decision_log_level(False) == logging.INFO
    assert decision_log_level(True, log_if_allowed=False) == TRACE
    assert decision_log_level(False, log_if_denied=False) == TRACE


def test_authorized_operations() -> None:
    auth = AclAuthorizer(super_users={"User:root"})
    auth.update(
        lit("foo"), [ace(ALICE, "*", Op.READ, ALLOW), ace(ALICE, "*", Op.ALTER_CONFIGS, ALLOW)]
    )
    auth.update(lit("*"), [ace(ALICE, "*", Op.DESCRIBE_CONFIGS, DENY)])
    assert auth.authorized_operations(ALICE, HOST1, TOPIC, "foo") == {
        Op.READ,
        Op.DESCRIBE,
        Op.ALTER_CONFIGS,
    }
    assert auth.authorized_operations(BOB, HOST1, TOPIC, "foo") == set()
    root = KafkaPrincipal.user("root")
    assert auth.authorized_operations(root, HOST1, GROUP, "g") == SUPPORTED_OPERATIONS[GROUP]
    open_ = AclAuthorizer(allow_everyone_if_no_acl_found=True)
    ops = open_.authorized_operations(ALICE, HOST1, CLUSTER, CLUSTER_NAME)
    assert to_32bit_field(ops) == 8096  # Kafka's figure with no authorizer
    auth.update(lit(CLUSTER_NAME, CLUSTER), [ace(ALICE, "*", Op.ALL, ALLOW)])
    assert auth.authorized_operations(ALICE, HOST1, CLUSTER, CLUSTER_NAME) == set(
        SUPPORTED_OPERATIONS[CLUSTER]
    )
    with pytest.raises(ValueError):
        auth.authorized_operations(ALICE, HOST1, ResourceType.ANY, "x")


# -- the cache --------------------------------------------------------------------------


def test_cache_update_and_remove() -> None:
    auth = AclAuthorizer()
    auth.update(pre("a"), [ace()])
    auth.update(pre("b"), [ace()])
    assert len(auth) == 2 and pre("a") in auth
    assert auth.get(pre("a")) == {ace()}
    auth.update(pre("a"), [])
    assert pre("a") not in auth and auth.get(pre("a")) == frozenset()
    assert not auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "abc")
    assert auth.authorize(ALICE, HOST1, Op.READ, TOPIC, "bcd")
    auth.remove(pre("b"))
    auth.remove(pre("b"))  # already gone
    assert len(auth) == 0 and auth.patterns() == []
    with pytest.raises(ValueError):
        auth.update(lit("x"), [ace("alice")])
    with pytest.raises(ValueError):
        ResourcePattern(ResourceType.ANY, "x", LITERAL)
    with pytest.raises(ValueError):
        ResourcePattern(TOPIC, "x", PatternType.MATCH)
    with pytest.raises(ValueError):
        AccessControlEntry("User:a", "*", Op.ANY, ALLOW)
    with pytest.raises(ValueError):
        AccessControlEntry("User:a", "*", Op.READ, AclPermissionType.ANY)


# -- filters ----------------------------------------------------------------------------

N, S = "Name", "Name-something"
AnyType, AnyPattern, Match = ResourceType.ANY, PatternType.ANY, PatternType.MATCH


@pytest.mark.parametrize(
    ("f", "pattern", "expected"),
    [
        # Kafka's ResourcePatternFilterTest.
        ((TOPIC, N, LITERAL), (GROUP, N, LITERAL), False),
        ((TOPIC, "Different", PREFIXED), (TOPIC, N, PREFIXED), False),
        ((TOPIC, "NAME", LITERAL), (TOPIC, N, LITERAL), False),
        ((TOPIC, N, LITERAL), (TOPIC, N, PREFIXED), False),
        ((AnyType, N, PREFIXED), (TOPIC, N, PREFIXED), True),
        ((TOPIC, None, PREFIXED), (TOPIC, N, PREFIXED), True),
        ((TOPIC, None, AnyPattern), (TOPIC, N, PREFIXED), True),
        ((TOPIC, None, Match), (TOPIC, N, PREFIXED), True),
        ((TOPIC, N, LITERAL), (TOPIC, N, LITERAL), True),
        ((TOPIC, N, AnyPattern), (TOPIC, N, LITERAL), True),
        ((TOPIC, N, Match), (TOPIC, N, LITERAL), True),
        ((TOPIC, S, Match), (TOPIC, N, LITERAL), False),
        ((TOPIC, "*", LITERAL), (TOPIC, "*", LITERAL), True),
        ((TOPIC, N, LITERAL), (TOPIC, "*", LITERAL), False),
        ((TOPIC, "*", LITERAL), (TOPIC, N, LITERAL), False),
        ((TOPIC, N, AnyPattern), (TOPIC, "*", LITERAL), False),
        ((TOPIC, N, Match), (TOPIC, "*", LITERAL), True),
        ((TOPIC, N, PREFIXED), (TOPIC, N, PREFIXED), True),
        ((TOPIC, N, PREFIXED), (TOPIC, S, PREFIXED), False),
        ((TOPIC, S, PREFIXED), (TOPIC, N, PREFIXED), False),
        ((TOPIC, S, AnyPattern), (TOPIC, N, PREFIXED), False),
        ((TOPIC, S, Match), (TOPIC, N, PREFIXED), True),
    ],
)
def test_resource_pattern_filter_matches(
    f: tuple[ResourceType, str | None, PatternType],
    pattern: tuple[ResourceType, str, PatternType],
    expected: bool,
) -> None:
    assert ResourcePatternFilter(*f).matches(ResourcePattern(*pattern)) is expected


def test_entry_filter_matches() -> None:
    entry = ace(ALICE, HOST1, Op.READ, ALLOW)
    assert AccessControlEntryFilter.ANY.matches(entry)
    assert AccessControlEntryFilter("User:alice", None, Op.ANY, AclPermissionType.ANY).matches(
        entry
    )
    assert not AccessControlEntryFilter("User:*", None, Op.ANY, AclPermissionType.ANY).matches(
        entry
    )
    assert not AccessControlEntryFilter(None, "*", Op.ANY, AclPermissionType.ANY).matches(entry)
    assert not AccessControlEntryFilter(None, None, Op.ALL, AclPermissionType.ANY).matches(entry)
    assert not AccessControlEntryFilter(None, None, Op.ANY, DENY).matches(entry)
    assert entry.to_filter().matches(entry) and entry.to_filter().matches_at_most_one()


def test_find_indefinite_field() -> None:
    assert creation().find_indefinite_field() is None
    assert creation(rt=ResourceType.ANY).find_indefinite_field() == "Resource type is ANY."
    assert creation(rt=ResourceType.UNKNOWN).find_indefinite_field() == "Resource type is UNKNOWN."
    assert creation(name=None).find_indefinite_field() == "Resource name is NULL."
    assert creation(pt=Match).find_indefinite_field() == "Resource pattern type is MATCH."
    assert creation(pt=PatternType.UNKNOWN).find_indefinite_field() == (
        "Resource pattern type is UNKNOWN."
    )
    assert creation(principal=None).find_indefinite_field() == "Principal is NULL"
    assert creation(host=None).find_indefinite_field() == "Host is NULL"
    assert creation(op=Op.ANY).find_indefinite_field() == "Operation is ANY"
    assert creation(op=Op.UNKNOWN).find_indefinite_field() == "Operation is UNKNOWN"
    assert creation(perm=AclPermissionType.ANY).find_indefinite_field() == "Permission type is ANY"
    assert creation(perm=AclPermissionType.UNKNOWN).find_indefinite_field() == (
        "Permission type is UNKNOWN"
    )
    # ANY pattern type names at most one pattern of each kind: not indefinite.
    assert creation(pt=AnyPattern).find_indefinite_field() is None
    assert AclBindingFilter.ANY.find_indefinite_field() == "Resource type is ANY."


def _kafkas_acls_filter_case() -> tuple[AclAuthorizer, list[AclBinding]]:
    # AclAuthorizerTest.testAclsFilter.
    r1, r2, prefixed = lit("foo-1"), lit("bar-1"), pre("bar-")
    acl1 = AclBinding(r1, ace(ALICE, "*", Op.READ, ALLOW))
    acl2 = AclBinding(r1, ace(ALICE, "192.168.0.1", Op.WRITE, ALLOW))
    acl3 = AclBinding(r2, ace(ALICE, "*", Op.DESCRIBE, ALLOW))
    acl4 = AclBinding(prefixed, ace("User:*", "*", Op.READ, ALLOW))
    auth = AclAuthorizer()
    for group, indexes in group_by_pattern([acl1, acl2, acl3, acl4]).items():
        entries = [[acl1, acl2, acl3, acl4][i].entry for i in indexes]
        auth.update(group, acls_after_create(auth.get(group), entries))
    return auth, [acl1, acl2, acl3, acl4]


def test_describe_filters() -> None:
    auth, (acl1, acl2, acl3, acl4) = _kafkas_acls_filter_case()
    assert set(auth.acls(AclBindingFilter.ANY)) == {acl1, acl2, acl3, acl4}
    assert set(
        auth.acls(AclBindingFilter(lit("foo-1").to_filter(), AccessControlEntryFilter.ANY))
    ) == {
        acl1,
        acl2,
    }
    assert auth.acls(AclBindingFilter(pre("bar-").to_filter(), AccessControlEntryFilter.ANY)) == [
        acl4
    ]
    matching = AclBindingFilter(
        ResourcePatternFilter(ResourceType.ANY, "bar-1", Match), AccessControlEntryFilter.ANY
    )
    assert set(auth.acls(matching)) == {acl3, acl4}
    by_any = AclBindingFilter(
        ResourcePatternFilter(TOPIC, "bar-", AnyPattern), AccessControlEntryFilter.ANY
    )
    assert auth.acls(by_any) == [acl4]


def test_delete_filters() -> None:
    auth, (acl1, acl2, acl3, acl4) = _kafkas_acls_filter_case()
    filters = [
        AclBindingFilter(
            ResourcePatternFilter(ResourceType.ANY, "bar-1", Match), AccessControlEntryFilter.ANY
        ),
        acl1.to_filter(),
        AclBindingFilter(acl3.pattern.to_filter(), AccessControlEntryFilter.ANY),
        AclBindingFilter(
            ResourcePatternFilter(TOPIC, "baz", AnyPattern), AccessControlEntryFilter.ANY
        ),
    ]
    candidates = auth.delete_candidates(filters)
    # The cached patterns some filter matches, and the ones filter 3 names (not cached).
    assert set(candidates) == {lit("foo-1"), lit("bar-1"), pre("bar-"), lit("baz"), pre("baz")}
    per_filter: dict[int, set[AclBinding]] = {i: set() for i in range(len(filters))}
    for pattern in candidates:
        remaining, deleted = acls_after_delete(pattern, auth.get(pattern), filters)
        for binding, i in deleted.items():
            per_filter[i].add(binding)
        auth.update(pattern, remaining)
    # Each binding is reported under the first filter that matches it: acl3 under 0, not 2.
    assert per_filter == {0: {acl3, acl4}, 1: {acl1}, 2: set(), 3: set()}
    assert auth.acls() == [acl2]


# -- CreateAcls validation --------------------------------------------------------------


def test_create_validation_per_creation() -> None:
    results = validate_acl_creations(
        [
            creation(),
            creation(rt=CLUSTER, name="my-cluster"),
            creation(rt=CLUSTER, name=CLUSTER_NAME, op=Op.READ),  # Kafka 2.8 accepts it
            creation(name=""),
            creation(name="*", pt=PREFIXED),  # a prefix like any other
            creation(host="not-an-address"),
        ]
    )
    assert results == [
        AclBinding(lit("orders"), ace()),
        AclError(
            ErrorCode.INVALID_REQUEST,
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        AclBinding(lit(CLUSTER_NAME, CLUSTER), ace()),
        AclError(ErrorCode.INVALID_REQUEST, "Invalid empty resource name"),
        AclBinding(pre("*"), ace()),
        AclBinding(lit("orders"), ace(host="not-an-address")),
    ]


def test_create_validation_fails_a_whole_pattern_for_a_bad_principal() -> None:
    results = validate_acl_creations(
        [
            creation(name="a"),
            creation(name="a", principal="alice", op=Op.WRITE),
            creation(name="b"),
            creation(name="c/d"),
            creation(name="a", pt=PREFIXED),
        ]
    )
    unknown = AclError(ErrorCode.UNKNOWN_SERVER_ERROR, None)
    assert results == [
        unknown,
        unknown,
        AclBinding(lit("b"), ace()),
        unknown,
        AclBinding(pre("a"), ace()),
    ]


@pytest.mark.parametrize(
    "bad",
    [
        creation(rt=ResourceType.ANY),
        creation(pt=AnyPattern),
        creation(pt=Match),
        creation(op=Op.ANY),
        creation(perm=AclPermissionType.ANY),
    ],
)
def test_create_validation_fails_the_request_for_a_filter_value(bad: AclBindingFilter) -> None:
    results = validate_acl_creations([creation(), bad])
    assert results == [AclError(ErrorCode.UNKNOWN_SERVER_ERROR, None)] * 2


def test_create_validation_unknown_and_request_checks() -> None:
    assert validate_acl_creations([creation(op=Op.UNKNOWN)]) == [
        AclError(ErrorCode.INVALID_REQUEST, "Failed to create ACL")
    ]
    check_create_acls_request([creation(), creation(pt=PREFIXED)], version=1)
    with pytest.raises(MalformedAclRequestError, match="unknown elements"):
        check_create_acls_request([creation(rt=ResourceType.UNKNOWN)], version=1)
    with pytest.raises(MalformedAclRequestError, match="Version 0"):
        check_create_acls_request([creation(pt=PREFIXED)], version=0)


def test_filter_request_checks() -> None:
    any_filter = AclBindingFilter(
        ResourcePatternFilter(TOPIC, "t", AnyPattern), AccessControlEntryFilter.ANY
    )
    (v0,) = check_acl_filters_request([any_filter], version=0)
    assert v0.pattern_filter.pattern_type is LITERAL
    assert check_acl_filters_request([any_filter], version=1) == [any_filter]
    with pytest.raises(MalformedAclRequestError, match="only LITERAL and ANY"):
        check_acl_filters_request([creation(pt=Match)], version=0)
    with pytest.raises(MalformedAclRequestError, match="UNKNOWN"):
        check_acl_filters_request([creation(perm=AclPermissionType.UNKNOWN)], version=1)
    with pytest.raises(MalformedAclRequestError, match="DescribeAclsRequest"):
        check_acl_filters_request([creation(op=Op.UNKNOWN)], 2, api="DescribeAcls")


# -- properties -------------------------------------------------------------------------

PRINCIPALS = ["User:alice", "User:bob", "User:*"]
HOSTS = ["*", "10.0.0.1", "10.0.0.2"]
REQUEST_PRINCIPALS = [ALICE, BOB, KafkaPrincipal.user("root")]
REQUEST_HOSTS = ["10.0.0.1", "10.0.0.2"]
RESOURCE_TYPES = [TOPIC, GROUP]
ACL_OPS = [*VALID_OPS, Op.UNKNOWN]

names = st.text(alphabet="ab*", min_size=0, max_size=3)
entries = st.builds(
    AccessControlEntry,
    st.sampled_from(PRINCIPALS),
    st.sampled_from(HOSTS),
    st.sampled_from(ACL_OPS),
    st.sampled_from([ALLOW, DENY, AclPermissionType.UNKNOWN]),
)
patterns = st.builds(
    ResourcePattern,
    st.sampled_from(RESOURCE_TYPES),
    st.text(alphabet="ab*", min_size=1, max_size=3),
    st.sampled_from([LITERAL, PREFIXED]),
)
acl_sets = st.dictionaries(patterns, st.frozensets(entries, min_size=1, max_size=4), max_size=8)
requests = st.tuples(
    st.sampled_from(REQUEST_PRINCIPALS),
    st.sampled_from(REQUEST_HOSTS),
    st.sampled_from(VALID_OPS),
    st.sampled_from(RESOURCE_TYPES),
    names,
)


def reference_authorize(
    acls: dict[ResourcePattern, frozenset[AccessControlEntry]],
    super_users: set[KafkaPrincipal],
    allow_everyone: bool,
    principal: KafkaPrincipal,
    host: str,
    op: AclOperation,
    rtype: ResourceType,
    name: str,
) -> bool:
    """Kafka's rules, read plainly, over every ACL."""
    if principal in super_users:
        return True

    def applies(p: ResourcePattern) -> bool:
        if p.resource_type != rtype:
            return False
        if p.pattern_type is LITERAL:
            return p.name in (name, "*")
        return name.startswith(p.name)

    found = [e for p, es in acls.items() if applies(p) for e in es]
    if not found:
        return allow_everyone

    def mine(e: AccessControlEntry) -> bool:
        return e.principal in (str(principal), "User:*") and e.host in (host, "*")

    if any(e.permission_type is DENY and mine(e) and e.operation in (op, Op.ALL) for e in found):
        return False
    allowing = {op}
    if op is Op.DESCRIBE:
        allowing |= {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER}
    if op is Op.DESCRIBE_CONFIGS:
        allowing |= {Op.ALTER_CONFIGS}
    return any(
        e.permission_type is ALLOW
        and mine(e)
        and (e.operation in allowing or e.operation is Op.ALL)
        for e in found
    )


def build(
    acls: dict[ResourcePattern, frozenset[AccessControlEntry]], allow_everyone: bool
) -> AclAuthorizer:
    auth = AclAuthorizer(super_users={"User:root"}, allow_everyone_if_no_acl_found=allow_everyone)
    for pattern, es in acls.items():
        auth.update(pattern, es)
    return auth


@settings(max_examples=300, deadline=None)
@given(acl_sets, st.lists(patterns, max_size=3), st.booleans(), st.data())
def test_authorize_matches_the_plain_rules(
    acls: dict[ResourcePattern, frozenset[AccessControlEntry]],
    removed: list[ResourcePattern],
    allow_everyone: bool,
    data: st.DataObject,
) -> None:
    # Ask about the names the ACLs are for, and names a character longer, as often as
    # about random ones.
    near = [p.name + extra for p in acls for extra in ("", "a")]
    request_names = st.one_of(names, st.sampled_from(near)) if near else names
    reqs = data.draw(
        st.lists(
            st.tuples(
                st.sampled_from(REQUEST_PRINCIPALS),
                st.sampled_from(REQUEST_HOSTS),
                st.sampled_from(VALID_OPS),
                st.sampled_from(RESOURCE_TYPES),
                request_names,
            ),
            min_size=1,
            max_size=10,
        )
    )
    auth = build(acls, allow_everyone)
    for pattern in removed:
        auth.remove(pattern)
        acls.pop(pattern, None)
    supers = {KafkaPrincipal.user("root")}
    for principal, host, op, rtype, name in reqs:
        expected = reference_authorize(
            acls, supers, allow_everyone, principal, host, op, rtype, name
        )
        assert auth.authorize(principal, host, op, rtype, name) == expected
    principal, host, _, rtype, name = reqs[0]
    assert auth.authorized_operations(principal, host, rtype, name) == {
        op
        for op in SUPPORTED_OPERATIONS[rtype]
        if reference_authorize(acls, supers, allow_everyone, principal, host, op, rtype, name)
    }
    assert set(auth.acls()) == {AclBinding(p, e) for p, es in acls.items() for e in es}


@settings(max_examples=300, deadline=None)
@given(
    acl_sets,
    st.booleans(),
    requests,
    patterns,
    st.sampled_from(["*", "req"]),
    st.sampled_from(["*", "req"]),
    st.booleans(),
)
def test_adding_a_deny_never_allows(
    acls: dict[ResourcePattern, frozenset[AccessControlEntry]],
    allow_everyone: bool,
    req: tuple[KafkaPrincipal, str, AclOperation, ResourceType, str],
    pattern: ResourcePattern,
    deny_principal: str,
    deny_host: str,
    deny_all: bool,
) -> None:
    principal, host, op, rtype, name = req
    auth = build(acls, allow_everyone)
    before = auth.authorize(principal, host, op, rtype, name)
    deny = AccessControlEntry(
        "User:*" if deny_principal == "*" else str(principal),
        "*" if deny_host == "*" else host,
        Op.ALL if deny_all else op,
        DENY,
    )
    auth.update(pattern, acls_after_create(auth.get(pattern), [deny]))
    after = auth.authorize(principal, host, op, rtype, name)
    assert not after or before
    applies = pattern.resource_type == rtype and (
        pattern.name in (name, "*")
        if pattern.pattern_type is LITERAL
        else name.startswith(pattern.name)
    )
    if applies and principal != KafkaPrincipal.user("root"):
        assert not after
