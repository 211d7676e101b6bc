"""ACLs on real clusters: CreateAcls, DescribeAcls and DeleteAcls from confluent-kafka's
AdminClient, answered as a Kafka 2.8 broker with `kafka.security.authorizer.AclAuthorizer`
answers them, and stored as Kafka stores them: each pattern's ACLs in its znode
(`/kafka-acl/Topic/orders`, `/kafka-acl-extended/prefixed/Topic/logs-`) in Kafka's JSON,
each change announced under `/kafka-acl-changes` or `/kafka-acl-extended-changes`, and
every broker's cache following (asked straight, one broker at a time, on Kafka's protocol).
A user who is no super user needs ALTER on the cluster to create ACLs; a cluster without an
authorizer answers SECURITY_DISABLED.

The secured cluster is shared by the module and its tests run in order: the ACLs created
first are described, then deleted last."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from minikafka.cluster import LocalCluster
from tests.cluster.conftest import (  # noqa: F401
    ClusterFactory,
    make_cluster,
    pytest_runtest_makereport,
    started_cluster,
    wait_until,
)
from tests.security.helpers import (
    Acl,
    acl,
    add_user,
    admin,
    as_user,
    create,
    describe_raw,
    every_broker_has,
)

pytestmark = pytest.mark.timeout(300)

ALICE_PASSWORD = "alice-acl-secret"

# A literal topic, a prefix of topic names, and the wildcard group (Kafka's "*").
ORDERS = AclBinding(
    ResourceType.TOPIC,
    "orders",
    ResourcePatternType.LITERAL,
    "User:alice",
    "*",
    AclOperation.READ,
    AclPermissionType.ALLOW,
)
LOGS = AclBinding(
    ResourceType.TOPIC,
    "logs-",
    ResourcePatternType.PREFIXED,
    "User:alice",
    "*",
    AclOperation.WRITE,
    AclPermissionType.ALLOW,
)
GROUPS = AclBinding(
    ResourceType.GROUP,
    "*",
    ResourcePatternType.LITERAL,
    "User:bob",
    "10.0.0.1",
    AclOperation.READ,
    AclPermissionType.DENY,
)
ALICE_ALTERS_THE_CLUSTER = AclBinding(
    ResourceType.BROKER,  # librdkafka's name for Kafka's CLUSTER resource type
    "kafka-cluster",
    ResourcePatternType.LITERAL,
    "User:alice",
    "*",
    AclOperation.ALTER,
    AclPermissionType.ALLOW,
)


def binding_filter(
    restype: ResourceType = ResourceType.ANY,
    name: str | None = None,
    pattern_type: ResourcePatternType = ResourcePatternType.ANY,
    principal: str | None = None,
) -> AclBindingFilter:
    return AclBindingFilter(
        restype, name, pattern_type, principal, None, AclOperation.ANY, AclPermissionType.ANY
    )


def error_code(e: BaseException) -> int:
    assert isinstance(e, KafkaException), e
    return int(e.args[0].code())


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with started_cluster(tmp_path_factory.mktemp("acls"), security="sasl_ssl") as c:
        add_user(c, "alice", ALICE_PASSWORD)
        yield c


def describe(client: AdminClient, f: AclBindingFilter) -> set[Acl]:
    return {acl(b) for b in client.describe_acls(f, request_timeout=30).result(60)}


# --- without an authorizer (runs first: the secured cluster is not up yet) ---------------


def test_a_cluster_without_an_authorizer_answers_security_disabled(
    make_cluster: ClusterFactory,  # noqa: F811
) -> None:
    cluster = make_cluster()  # 3 brokers, PLAINTEXT, no authorizer
    client = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for f in client.create_acls([ORDERS], request_timeout=30).values():
        with pytest.raises(KafkaException) as created:
            f.result(60)
        assert error_code(created.value) == KafkaError.SECURITY_DISABLED
    described = describe_raw(cluster, 1, user=None)
    assert (int(described.error_code), described.error_message, described.resources) == (
        KafkaError.SECURITY_DISABLED,
        "No Authorizer is configured on the broker",
        (),
    )
    for f in client.delete_acls([binding_filter()], request_timeout=30).values():
        with pytest.raises(KafkaException) as deleted:
            f.result(60)
        assert error_code(deleted.value) == KafkaError.SECURITY_DISABLED
    assert cluster.zk_client().get_children("/kafka-acl") == []


# --- SASL_SSL, Kafka's ACL authorizer --------------------------------------------------


def test_acls_are_kafkas_znodes_and_their_changes_are_announced(secured: LocalCluster) -> None:
    create(admin(secured), ORDERS, LOGS, GROUPS)
    zk = secured.zk_client()
    assert json.loads(zk.get_data("/kafka-acl/Topic/orders") or b"") == {
        "version": 1,
        "acls": [
            {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}
        ],
    }
    assert json.loads(zk.get_data("/kafka-acl-extended/prefixed/Topic/logs-") or b"") == {
        "version": 1,
        "acls": [
            {
                "principal": "User:alice",
                "permissionType": "Allow",
                "operation": "Write",
                "host": "*",
            }
        ],
    }
    assert json.loads(zk.get_data("/kafka-acl/Group/*") or b"")["acls"] == [
        {"principal": "User:bob", "permissionType": "Deny", "operation": "Read", "host": "10.0.0.1"}
    ]
    # Every store and resource type znode Kafka creates at start.
    assert zk.get_children("/kafka-acl") == [
        "Cluster",
        "DelegationToken",
        "Group",
        "Topic",
        "TransactionalId",
    ]
    assert "Topic" in zk.get_children("/kafka-acl-extended/prefixed")
    literal = [
        zk.get_data(f"/kafka-acl-changes/{n}") for n in zk.get_children("/kafka-acl-changes")
    ]
    assert all(n.startswith("acl_changes_") for n in zk.get_children("/kafka-acl-changes"))
    assert b"TOPIC:orders" in literal and b"GROUP:*" in literal
    extended = [
        json.loads(zk.get_data(f"/kafka-acl-extended-changes/{n}") or b"")
        for n in zk.get_children("/kafka-acl-extended-changes")
    ]
    assert {"version": 1, "resourceType": "TOPIC", "name": "logs-", "patternType": "PREFIXED"} in (
        extended
    )


def test_describe_answers_what_kafka_would(secured: LocalCluster) -> None:
    client = admin(secured)
    assert describe(client, binding_filter()) == {acl(ORDERS), acl(LOGS), acl(GROUPS)}
    # MATCH: the ACLs that apply to a resource (its literal name, "*", its prefixes).
    match = ResourcePatternType.MATCH
    assert describe(client, binding_filter(ResourceType.TOPIC, "logs-2024", match)) == {acl(LOGS)}
    assert describe(client, binding_filter(ResourceType.TOPIC, "orders", match)) == {acl(ORDERS)}
    assert describe(client, binding_filter(ResourceType.GROUP, "app", match)) == {acl(GROUPS)}
    # LITERAL and PREFIXED name a pattern exactly; ANY either.
    literal, prefixed = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
    assert describe(client, binding_filter(ResourceType.TOPIC, "logs-", literal)) == set()
    assert describe(client, binding_filter(ResourceType.TOPIC, "logs-", prefixed)) == {acl(LOGS)}
    assert describe(client, binding_filter(ResourceType.TOPIC, "logs-")) == {acl(LOGS)}
    # By principal, compared as text.
    assert describe(client, binding_filter(principal="User:bob")) == {acl(GROUPS)}
    assert describe(client, binding_filter(principal="User:*")) == set()


def test_every_brokers_cache_follows(secured: LocalCluster) -> None:
    every_broker_has(secured, {acl(ORDERS), acl(LOGS), acl(GROUPS)})


def test_a_user_needs_alter_on_the_cluster_to_manage_acls(secured: LocalCluster) -> None:
    alice = AdminClient(as_user(secured, "alice", ALICE_PASSWORD))
    mine = AclBinding(
        ResourceType.TOPIC,
        "alice-",
        ResourcePatternType.PREFIXED,
        "User:carol",
        "*",
        AclOperation.DESCRIBE,
        AclPermissionType.ALLOW,
    )
    for f in alice.create_acls([mine], request_timeout=30).values():
        with pytest.raises(KafkaException) as refused:
            f.result(60)
        assert error_code(refused.value) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    for b in secured.broker_ids:
        described = describe_raw(secured, b, "alice", ALICE_PASSWORD)
        assert int(described.error_code) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
        assert "Session(User:alice," in described.error_message
        assert described.resources == ()
    assert secured.zk_client().get_data("/kafka-acl-extended/prefixed/Topic/alice-") is None

    create(admin(secured), ALICE_ALTERS_THE_CLUSTER)
    # Whichever broker alice's requests reach must know it.
    every_broker_has(secured, {acl(ORDERS), acl(LOGS), acl(GROUPS), acl(ALICE_ALTERS_THE_CLUSTER)})
    create(alice, mine)
    # ALTER implies DESCRIBE.
    assert describe(alice, binding_filter(principal="User:carol")) == {acl(mine)}


def test_delete_removes_acls_znodes_and_every_brokers_copy(secured: LocalCluster) -> None:
    client = admin(secured)
    futures = client.delete_acls(
        [binding_filter(principal="User:bob"), binding_filter()], request_timeout=30
    )
    deleted = [{acl(b) for b in f.result(60)} for f in futures.values()]
    # Each deleted ACL is reported under the first filter that matched it.
    assert deleted[0] == {acl(GROUPS)}
    assert acl(ORDERS) in deleted[1] and acl(LOGS) in deleted[1]
    assert acl(GROUPS) not in deleted[1]
    zk = secured.zk_client()
    for path in (
        "/kafka-acl/Topic/orders",
        "/kafka-acl-extended/prefixed/Topic/logs-",
        "/kafka-acl/Group/*",
        "/kafka-acl/Cluster/kafka-cluster",
    ):
        assert zk.get_data(path) is None, path
    assert zk.get_children("/kafka-acl/Topic") == []
    every_broker_has(secured, set())
    assert describe(client, binding_filter()) == set()
