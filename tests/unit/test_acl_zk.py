"""Kafka's ZooKeeper layout and bytes for ACLs (minikafka/security/acl_zk.py): paths, the
ACL JSON and the change notifications, with Kafka's own examples (ZkData's comments,
AclEntryTest, LiteralAclStoreTest, ExtendedAclStoreTest)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.security.acl_zk import (
    ACL_CHANGE_PREFIX,
    AclChangeStore,
    acl_path,
    acl_paths,
    acl_store_path,
    change_notification,
    decode_acls,
    encode_acls,
    pattern_from_notification,
    pattern_from_path,
    resource_type_path,
)
from minikafka.security.acls import AccessControlEntry, ResourcePattern
from minikafka.security.operations import (
    CONCRETE_RESOURCE_TYPES,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

Op = AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED


# -- paths ------------------------------------------------------------------------------


def test_paths() -> None:
    assert acl_store_path(LITERAL) == "/kafka-acl"
    assert acl_store_path(PREFIXED) == "/kafka-acl-extended/prefixed"
    assert resource_type_path(LITERAL, TOPIC) == "/kafka-acl/Topic"
    assert resource_type_path(PREFIXED, TOPIC) == "/kafka-acl-extended/prefixed/Topic"
    assert acl_path(ResourcePattern(TOPIC, "orders", LITERAL)) == "/kafka-acl/Topic/orders"
    assert acl_path(ResourcePattern(TOPIC, "*", LITERAL)) == "/kafka-acl/Topic/*"
    assert (
        acl_path(ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", LITERAL))
        == "/kafka-acl/Cluster/kafka-cluster"
    )
    assert (
        acl_path(ResourcePattern(GROUP, "app-", PREFIXED))
        == "/kafka-acl-extended/prefixed/Group/app-"
    )
    assert (
        acl_path(ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx", LITERAL))
        == "/kafka-acl/TransactionalId/tx"
    )
    assert (
        acl_path(ResourcePattern(ResourceType.DELEGATION_TOKEN, "tok", PREFIXED))
        == "/kafka-acl-extended/prefixed/DelegationToken/tok"
    )
    assert AclChangeStore.LITERAL.path == "/kafka-acl-changes"
    assert AclChangeStore.EXTENDED.path == "/kafka-acl-extended-changes"
    assert AclChangeStore.LITERAL.sequence_prefix == "/kafka-acl-changes/acl_changes_"
    assert ACL_CHANGE_PREFIX == "acl_changes_"


def test_paths_created_at_start() -> None:
    paths = acl_paths()
    assert paths[0] == "/kafka-acl"
    assert "/kafka-acl/DelegationToken" in paths
    assert "/kafka-acl-extended/prefixed/TransactionalId" in paths
    assert paths[-2:] == ("/kafka-acl-changes", "/kafka-acl-extended-changes")
    assert len(paths) == 2 * (1 + len(CONCRETE_RESOURCE_TYPES)) + 2


@pytest.mark.parametrize("name", ["", "a/b", ".", ".."])
def test_names_that_cannot_be_znodes(name: str) -> None:
    with pytest.raises(ValueError):
        acl_path(ResourcePattern(TOPIC, name, LITERAL))


def test_paths_of_patterns_acls_are_not_stored_for() -> None:
    with pytest.raises(ValueError):
        acl_path(ResourcePattern(ResourceType.UNKNOWN, "x", LITERAL))
    with pytest.raises(ValueError):
        acl_path(ResourcePattern(TOPIC, "x", PatternType.UNKNOWN))
    with pytest.raises(ValueError):
        AclChangeStore.for_pattern_type(PatternType.UNKNOWN)


def test_pattern_from_path() -> None:
    assert pattern_from_path("/kafka-acl/Topic/orders") == ResourcePattern(TOPIC, "orders", LITERAL)
    assert pattern_from_path("/kafka-acl-extended/prefixed/Group/app-") == ResourcePattern(
        GROUP, "app-", PREFIXED
    )
    # Kafka reads the type segment in any case (SecurityUtils.resourceType).
    assert pattern_from_path("/kafka-acl/TOPIC/x") == ResourcePattern(TOPIC, "x", LITERAL)
    assert pattern_from_path("/kafka-acl/transactionalid/x").resource_type is (
        ResourceType.TRANSACTIONAL_ID
    )


@pytest.mark.parametrize(
    "path",
    [
        "/kafka-acl/Topic",
        "/kafka-acl/Topic/",
        "/kafka-acl/Bogus/x",
        "/kafka-acl/Any/x",
        "/kafka-acl/Topic/a/b",
        "/kafka-acl-extended/literal/Topic/x",
        "/kafka-acl-extended/Topic/x",
        "/brokers/ids/1",
        "/kafka-aclx/Topic/x",
    ],
)
def test_paths_outside_the_stores(path: str) -> None:
    with pytest.raises(ValueError):
        pattern_from_path(path)


# -- the ACLs of a pattern ----------------------------------------------------------------


def test_encode_exact_bytes() -> None:
    entries = [AccessControlEntry("User:alice", "*", Op.READ, ALLOW)]
    assert encode_acls(entries) == (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
        b'"operation":"Read","host":"*"}]}'
    )
    assert encode_acls([]) == b'{"version":1,"acls":[]}'
    two = [
        AccessControlEntry("User:bob", "10.0.0.1", Op.DESCRIBE_CONFIGS, DENY),
        AccessControlEntry("User:alice", "*", Op.IDEMPOTENT_WRITE, ALLOW),
    ]
    # Sorted: equal sets, equal bytes.
    assert encode_acls(two) == encode_acls(reversed(two))
    doc = json.loads(encode_acls(two))
    assert [a["operation"] for a in doc["acls"]] == ["IdempotentWrite", "DescribeConfigs"]
    assert (
        encode_acls([AccessControlEntry("User:żółw", "*", Op.ALL, ALLOW)])
        == (
            '{"version":1,"acls":[{"principal":"User:żółw","permissionType":"Allow",'
            '"operation":"All","host":"*"}]}'
        ).encode()
    )


def test_decode_kafkas_examples() -> None:
    # ZkData's comment on the ACL znodes.
    zkdata = (
        b'{"version": 1, "acls": [ { "host":"host1", "permissionType": "Allow",'
        b'"operation": "Read","principal": "User:alice"}]}'
    )
    assert decode_acls(zkdata) == {AccessControlEntry("User:alice", "host1", Op.READ, ALLOW)}
    # AclEntryTest.AclJson: names in any case.
    acl_json = b"""{"version": 1, "acls": [{"host": "host1","permissionType": "Deny","operation": "READ", "principal": "User:alice"  },
    {  "host":  "*" ,  "permissionType": "Allow",  "operation":  "Read", "principal": "User:bob"  },
    {  "host": "host1",  "permissionType": "Deny",  "operation":   "Read" ,  "principal": "User:bob"}]}"""
    assert decode_acls(acl_json) == {
        AccessControlEntry("User:alice", "host1", Op.READ, DENY),
        AccessControlEntry("User:bob", "*", Op.READ, ALLOW),
        AccessControlEntry("User:bob", "host1", Op.READ, DENY),
    }


def test_decode_what_kafka_accepts() -> None:
    assert decode_acls(b"") == frozenset()
    # A newer broker's operation reads as UNKNOWN, an ACL that matches nothing.
    newer = b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"Teleport","host":"*"}]}'
    (entry,) = decode_acls(newer)
    assert entry.operation is Op.UNKNOWN
    # Fields in any order, extra fields ignored.
    extra = b'{"acls":[{"host":"*","operation":"describeconfigs","permissionType":"ALLOW","principal":"User:CN=a:b","x":1}],"version":1,"y":2}'
    assert decode_acls(extra) == {
        AccessControlEntry("User:CN=a:b", "*", Op.DESCRIBE_CONFIGS, ALLOW)
    }


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b"\xff\xfe",
        b"null",
        b"[]",
        b'{"acls":[]}',
        b'{"version":2,"acls":[]}',
        b'{"version":"1","acls":[]}',
        b'{"version":true,"acls":[]}',
        b'{"version":1}',
        b'{"version":1,"acls":{}}',
        b'{"version":1,"acls":["User:a"]}',
        b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"Read"}]}',
        b'{"version":1,"acls":[{"principal":"alice","permissionType":"Allow","operation":"Read","host":"*"}]}',
        b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"Read","host":5}]}',
        b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Any","operation":"Read","host":"*"}]}',
        b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"Any","host":"*"}]}',
    ],
)
def test_decode_malformed(data: bytes) -> None:
    with pytest.raises(ValueError, match="ACL znode"):
        decode_acls(data)


# -- change notifications ---------------------------------------------------------------


def test_change_notifications_exact() -> None:
    literal = ResourcePattern(TOPIC, "orders", LITERAL)
    assert change_notification(literal) == ("/kafka-acl-changes/acl_changes_", b"TOPIC:orders")
    tx = ResourcePattern(ResourceType.TRANSACTIONAL_ID, "t:1", LITERAL)
    assert change_notification(tx) == ("/kafka-acl-changes/acl_changes_", b"TRANSACTIONAL_ID:t:1")
    prefixed = ResourcePattern(TOPIC, "some-topic", PREFIXED)
    assert change_notification(prefixed) == (
        "/kafka-acl-extended-changes/acl_changes_",
        b'{"version":1,"resourceType":"TOPIC","name":"some-topic","patternType":"PREFIXED"}',
    )
    assert pattern_from_notification(AclChangeStore.LITERAL, b"TOPIC:orders") == literal
    assert pattern_from_notification(AclChangeStore.LITERAL, b"TRANSACTIONAL_ID:t:1") == tx
    assert pattern_from_notification(AclChangeStore.EXTENDED, change_notification(prefixed)[1]) == (
        prefixed
    )


def test_literal_notification_two_part_logic() -> None:
    # LiteralAclStoreTest.shouldDecodeResourceUsingTwoPartLogic.
    name = "PREFIXED:this, including the PREFIXED part, is a valid two part group name"
    data = f"GROUP:{name}".encode()
    assert pattern_from_notification(AclChangeStore.LITERAL, data) == ResourcePattern(
        GROUP, name, LITERAL
    )
    # ResourceType.fromString: any case.
    assert pattern_from_notification(AclChangeStore.LITERAL, b"topic:x").resource_type is TOPIC


def test_extended_notification_as_kafka_reads_it() -> None:
    # Any field order; a missing version is 0 to Jackson.
    data = b'{"name":"n-","patternType":"PREFIXED","resourceType":"group"}'
    assert pattern_from_notification(AclChangeStore.EXTENDED, data) == ResourcePattern(
        GROUP, "n-", PREFIXED
    )


@pytest.mark.parametrize(
    ("store", "data"),
    [
        (AclChangeStore.LITERAL, b"TOPIC"),
        (AclChangeStore.LITERAL, b"TOPIC:"),
        (AclChangeStore.LITERAL, b"Bogus:x"),
        (AclChangeStore.LITERAL, b"TransactionalId:x"),  # fromString wants TRANSACTIONAL_ID
        (AclChangeStore.LITERAL, b"TOPIC:a/b"),
        (AclChangeStore.LITERAL, b"\xffTOPIC:x"),
        (AclChangeStore.EXTENDED, b"TOPIC:x"),
        (AclChangeStore.EXTENDED, b"[]"),
        (
            AclChangeStore.EXTENDED,
            b'{"version":2,"resourceType":"TOPIC","name":"x","patternType":"PREFIXED"}',
        ),
        (
            AclChangeStore.EXTENDED,
            b'{"version":"1","resourceType":"TOPIC","name":"x","patternType":"PREFIXED"}',
        ),
        (
            AclChangeStore.EXTENDED,
            b'{"version":1,"resourceType":"TOPIC","name":"x","patternType":"Prefixed"}',
        ),
        (
            AclChangeStore.EXTENDED,
            b'{"version":1,"resourceType":"TOPIC","name":"x","patternType":"MATCH"}',
        ),
        (
            AclChangeStore.EXTENDED,
            b'{"version":1,"resourceType":"ANY","name":"x","patternType":"PREFIXED"}',
        ),
        (AclChangeStore.EXTENDED, b'{"version":1,"resourceType":"TOPIC","patternType":"PREFIXED"}'),
        (
            AclChangeStore.EXTENDED,
            b'{"version":1,"resourceType":"TOPIC","name":null,"patternType":"PREFIXED"}',
        ),
        (
            AclChangeStore.EXTENDED,
            b'{"version":1,"resourceType":"TOPIC","name":"x","patternType":"PREFIXED","z":0}',
        ),
    ],
)
def test_malformed_notifications(store: AclChangeStore, data: bytes) -> None:
    with pytest.raises(ValueError, match="ACL change notification"):
        pattern_from_notification(store, data)


# -- round trips ------------------------------------------------------------------------

znode_names = st.text(min_size=1, max_size=20).filter(
    lambda n: "/" not in n and n not in (".", "..")
)
specific_patterns = st.builds(
    ResourcePattern,
    st.sampled_from(CONCRETE_RESOURCE_TYPES),
    znode_names,
    st.sampled_from([LITERAL, PREFIXED]),
)
entries = st.builds(
    AccessControlEntry,
    st.builds(
        lambda t, n: f"{t}:{n}",
        st.text(min_size=1, max_size=8).filter(lambda t: ":" not in t),
        st.text(min_size=1, max_size=12),
    ),
    st.text(max_size=12),
    st.sampled_from([op for op in AclOperation if op is not Op.ANY]),
    st.sampled_from([AclPermissionType.UNKNOWN, ALLOW, DENY]),
)


@given(st.frozensets(entries, max_size=6))
def test_acls_round_trip(acls: frozenset[AccessControlEntry]) -> None:
    assert decode_acls(encode_acls(acls)) == acls


@given(specific_patterns)
def test_patterns_round_trip(pattern: ResourcePattern) -> None:
    assert pattern_from_path(acl_path(pattern)) == pattern
    prefix, data = change_notification(pattern)
    store = AclChangeStore.for_pattern_type(pattern.pattern_type)
    assert prefix == f"{store.path}/acl_changes_"
    assert pattern_from_notification(store, data) == pattern
