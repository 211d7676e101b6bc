"""The ACL znodes on a real ZooKeeper (zk/acls.py): Kafka's store znodes, conditional writes
that report a lost race instead of failing, sequential change notifications; and two
brokers' ACL stores (server/acl_store.py) writing the same pattern at once, each keeping
the other's ACLs, as Kafka's updateResourceAcls does."""

from __future__ import annotations

from minikafka.security.acl_zk import AclChangeStore, acl_paths, encode_acls
from minikafka.security.acls import AccessControlEntry, AclBinding, ResourcePattern
from minikafka.security.authorizer import AclAuthorizer
from minikafka.security.operations import AclOperation, AclPermissionType, PatternType, ResourceType
from minikafka.server.acl_store import AclStore
from minikafka.zk.client import ZkClient
from tests.zk.conftest import ZkClientFactory

PATH = "/kafka-acl/Topic/orders"


def entry(principal: str = "User:alice") -> AccessControlEntry:
    return AccessControlEntry(principal, "*", AclOperation.READ, AclPermissionType.ALLOW)


def test_kafkas_acl_znodes_are_created_once(zk_client: ZkClient) -> None:
    zk_client.create_acl_paths(acl_paths())
    zk_client.create_acl_paths(acl_paths())  # again: nothing to do
    for path in acl_paths():
        assert zk_client.exists(path), path
    assert zk_client.get_children("/kafka-acl-extended") == ["prefixed"]


def test_conditional_writes_report_a_lost_race(zk_client: ZkClient) -> None:
    zk_client.create_acl_paths(acl_paths())
    data = encode_acls({entry()})
    assert zk_client.set_acl_znode(PATH, data, 0) is None  # no znode yet
    assert zk_client.create_acl_znode(PATH, data)
    assert not zk_client.create_acl_znode(PATH, data)  # someone was first
    assert zk_client.set_acl_znode(PATH, data, 1) is None  # someone else's version
    assert zk_client.set_acl_znode(PATH, data, 0) == 1
    assert zk_client.get_acl_znodes_at([PATH, "/kafka-acl/Topic/none"]) == {PATH: (data, 1)}
    # A delete expecting no znode (Kafka's UnknownVersion) loses to one that exists.
    assert not zk_client.delete_acl_znode(PATH, None)
    assert not zk_client.delete_acl_znode(PATH, 0)
    assert zk_client.delete_acl_znode(PATH, 1)
    assert zk_client.delete_acl_znode(PATH, 1)  # gone already: done
    assert zk_client.delete_acl_znode(PATH, None)


def test_every_acl_znode_is_read_with_its_version(zk_client: ZkClient) -> None:
    zk_client.create_acl_paths(acl_paths())
    a, b = encode_acls({entry()}), encode_acls({entry("User:bob")})
    zk_client.create_acl_znode(PATH, a)
    zk_client.create_acl_znode("/kafka-acl-extended/prefixed/Group/app-", b)
    zk_client.set_acl_znode(PATH, a, 0)
    assert zk_client.get_acl_znodes(["/kafka-acl", "/kafka-acl-extended/prefixed"]) == {
        PATH: (a, 1),
        "/kafka-acl-extended/prefixed/Group/app-": (b, 0),
    }


def test_change_notifications_are_sequential_listed_and_purged(zk_client: ZkClient) -> None:
    zk_client.create_acl_paths(acl_paths())
    store = AclChangeStore.LITERAL
    first = zk_client.create_acl_change_notification(store.sequence_prefix, b"TOPIC:a")
    second = zk_client.create_acl_change_notification(store.sequence_prefix, b"TOPIC:b")
    assert first == "/kafka-acl-changes/acl_changes_0000000000"
    assert second == "/kafka-acl-changes/acl_changes_0000000001"
    got = zk_client.get_acl_change_notifications(store.path, "acl_changes_")
    assert [(name, data) for name, (data, _) in got.items()] == [
        ("acl_changes_0000000000", b"TOPIC:a"),
        ("acl_changes_0000000001", b"TOPIC:b"),
    ]
    assert all(ctime > 1_600_000_000_000 for _, ctime in got.values())
    zk_client.delete_acl_change_notifications(store.path, ["acl_changes_0000000000", "gone"])
    assert zk_client.get_children(store.path) == ["acl_changes_0000000001"]


async def test_two_brokers_creating_on_one_pattern_keep_each_others_acls(
    make_zk_client: ZkClientFactory,
) -> None:
    one, two = (
        AclStore(make_zk_client(), AclAuthorizer(), backoff_s=lambda: 0.0) for _ in range(2)
    )
    await one.load()
    await two.load()
    orders = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
    assert await one.create_acls([AclBinding(orders, entry())]) == [None]
    # Broker two has not seen the notification yet: it creates from ZooKeeper's state, not
    # over broker one's ACL.
    assert await two.create_acls([AclBinding(orders, entry("User:bob"))]) == [None]
    assert two.authorizer.get(orders) == {entry(), entry("User:bob")}
    # Now one's cache is stale (version 0): its next write loses, reads again, retries.
    assert await one.create_acls([AclBinding(orders, entry("User:carol"))]) == [None]
    assert one.authorizer.get(orders) == {entry(), entry("User:bob"), entry("User:carol")}
    # And two catches up from the notifications.
    await two.process_notifications(AclChangeStore.LITERAL)
    assert two.authorizer.get(orders) == one.authorizer.get(orders)
    assert two.versions[orders] == one.versions[orders] == 2
