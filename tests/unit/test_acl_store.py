"""The broker's ACLs in ZooKeeper (server/acl_store.py) against an in-memory ZooKeeper: the
cache loaded at start, change notifications from other brokers, and CreateAcls' and
DeleteAcls' writes as Kafka's AclAuthorizer makes them (conditional on the znode version,
read again and retried on a lost race, the znode deleted when no ACL remains, a change
notification for every change and none otherwise)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable

import pytest

from minikafka.protocol.errors import ErrorCode
from minikafka.security.acl_zk import AclChangeStore, change_notification, encode_acls
from minikafka.security.acls import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclError,
    ResourcePattern,
    ResourcePatternFilter,
    validate_acl_creations,
)
from minikafka.security.authorizer import AclAuthorizer
from minikafka.security.operations import AclOperation, AclPermissionType, PatternType, ResourceType
from minikafka.security.principal import KafkaPrincipal
from minikafka.server.acl_store import (
    AclStore,
    DeletedAcl,
    notification_sequence,
    plan_acl_changes,
)
from minikafka.zk.bridge import LoopBridge
from minikafka.zk.client import Watch, ZkConnectionError

LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
READ, WRITE = AclOperation.READ, AclOperation.WRITE
ALICE = KafkaPrincipal.user("alice")


class MemoryAclZk:
    """The ACL znodes and notifications of ZooKeeper, in memory (zk/acls.py's contract).
    `interfere(path)` runs before each conditional write: another broker's write racing."""

    def __init__(self) -> None:
        self.znodes: dict[str, tuple[bytes, int, int]] = {}  # path -> (data, version, ctime)
        self.sequences: dict[str, int] = {}
        self.now_ms = 1_700_000_000_000
        self.interfere: Callable[[str], None] | None = None
        self.watches: dict[str, Callable[[list[str]], None]] = {}
        self.writes: list[tuple[str, str]] = []  # (operation, path)
        self.fail_reads = False

    # -- as another broker would write ------------------------------------------------

    def put(self, path: str, data: bytes) -> None:
        old = self.znodes.get(path)
        version = 0 if old is None else old[1] + 1
        self.znodes[path] = (data, version, self.now_ms)

    def children(self, path: str) -> list[str]:
        depth = path.count("/") + 1
        return sorted(
            p.rsplit("/", 1)[1]
            for p in self.znodes
            if p.startswith(path + "/") and p.count("/") == depth
        )

    def notify(self, pattern: ResourcePattern) -> str:
        return self.create_acl_change_notification(*change_notification(pattern))

    # -- AclZkStore ---------------------------------------------------------------------

    def create_acl_paths(self, paths: Iterable[str]) -> None:
        for p in paths:
            self.znodes.setdefault(p, (b"", 0, self.now_ms))

    def get_acl_znodes(self, store_roots: Iterable[str]) -> dict[str, tuple[bytes, int]]:
        found = [
            f"{r}/{t}/{n}"
            for r in store_roots
            for t in self.children(r)
            for n in self.children(f"{r}/{t}")
        ]
        return self.get_acl_znodes_at(found)

    def get_acl_znodes_at(self, paths: Iterable[str]) -> dict[str, tuple[bytes, int]]:
        if self.fail_reads:
            raise ZkConnectionError("no ZooKeeper")
        return {p: self.znodes[p][:2] for p in paths if p in self.znodes}

    def _race(self, path: str) -> None:
        if self.interfere is not None:
            self.interfere(path)

    def create_acl_znode(self, path: str, data: bytes) -> bool:
        self._race(path)
        self.writes.append(("create", path))
        if path in self.znodes:
            return False
        self.znodes[path] = (data, 0, self.now_ms)
        return True

    def set_acl_znode(self, path: str, data: bytes, expected_version: int) -> int | None:
        self._race(path)
        self.writes.append(("set", path))
        old = self.znodes.get(path)
        if old is None or old[1] != expected_version:
            return None
        self.znodes[path] = (data, old[1] + 1, old[2])
        return old[1] + 1

    def delete_acl_znode(self, path: str, expected_version: int | None) -> bool:
        self._race(path)
        self.writes.append(("delete", path))
        old = self.znodes.get(path)
        if old is None:
            return True
        if expected_version is None or old[1] != expected_version:
            return False
        del self.znodes[path]
        return True

    def create_acl_change_notification(self, sequence_prefix: str, data: bytes) -> str:
        parent = sequence_prefix.rsplit("/", 1)[0]
        seq = self.sequences.get(parent, 0)
        self.sequences[parent] = seq + 1
        path = f"{sequence_prefix}{seq:010d}"
        self.znodes[path] = (data, 0, self.now_ms)
        return path

    def get_acl_change_notifications(
        self, change_path: str, prefix: str
    ) -> dict[str, tuple[bytes, int]]:
        if self.fail_reads:
            raise ZkConnectionError("no ZooKeeper")
        return {
            n: (self.znodes[f"{change_path}/{n}"][0], self.znodes[f"{change_path}/{n}"][2])
            for n in self.children(change_path)
            if n.startswith(prefix)
        }

    def delete_acl_change_notifications(self, change_path: str, names: Iterable[str]) -> None:
        for n in names:
            self.znodes.pop(f"{change_path}/{n}", None)

    def watch_children(self, path: str, cb: Callable[[list[str]], None]) -> Watch:
        self.watches[path] = cb
        cb(self.children(path))
        return Watch(path)

    # -- what a test reads ------------------------------------------------------------

    def acls_json(self, path: str) -> object:
        return json.loads(self.znodes[path][0])

    def notifications(self, store: AclChangeStore) -> list[bytes]:
        return [self.znodes[f"{store.path}/{n}"][0] for n in self.children(store.path)]


def entry(
    principal: str = "User:alice",
    operation: AclOperation = READ,
    permission: AclPermissionType = ALLOW,
    host: str = "*",
) -> AccessControlEntry:
    return AccessControlEntry(principal, host, operation, permission)


def binding(
    name: str = "orders", pattern_type: PatternType = LITERAL, e: AccessControlEntry | None = None
) -> AclBinding:
    return AclBinding(ResourcePattern(TOPIC, name, pattern_type), e or entry())


def pattern_filter(
    name: str | None, pattern_type: PatternType = PatternType.ANY, rt: ResourceType = TOPIC
) -> AclBindingFilter:
    return AclBindingFilter(
        ResourcePatternFilter(rt, name, pattern_type), AccessControlEntryFilter.ANY
    )


def principal_filter(principal: str) -> AclBindingFilter:
    return AclBindingFilter(
        ResourcePatternFilter.ANY,
        AccessControlEntryFilter(principal, None, AclOperation.ANY, AclPermissionType.ANY),
    )


def store(zk: MemoryAclZk | None = None, **kwargs: object) -> AclStore:
    return AclStore(
        zk or MemoryAclZk(),
        AclAuthorizer(),
        backoff_s=lambda: 0.0,
        wall_clock_ms=lambda: zk.now_ms if zk is not None else 0,
        **kwargs,  # type: ignore[arg-type]
    )


def kafka_json(*acls: tuple[str, str, str, str]) -> bytes:
    """A znode as Kafka writes it: (principal, permissionType, operation, host)."""
    return json.dumps(
        {
            "version": 1,
            "acls": [
                {"principal": p, "permissionType": t, "operation": o, "host": h}
                for p, t, o, h in acls
            ],
        }
    ).encode()


# --- start -------------------------------------------------------------------------------


async def test_load_creates_kafkas_znodes_and_reads_every_acl() -> None:
    zk = MemoryAclZk()
    zk.put("/kafka-acl/Topic/orders", kafka_json(("User:alice", "Allow", "Read", "*")))
    zk.put("/kafka-acl/Topic/orders", kafka_json(("User:alice", "Allow", "Write", "*")))
    zk.put("/kafka-acl/Group/*", kafka_json(("User:*", "Allow", "Read", "10.0.0.1")))
    zk.put("/kafka-acl-extended/prefixed/Topic/logs-", kafka_json(("User:bob", "Deny", "All", "*")))
    # A resource type this version does not know: skipped, as Kafka skips it.
    zk.put("/kafka-acl/User/alice", kafka_json(("User:bob", "Allow", "Read", "*")))
    s = store(zk)
    await s.load()
    for path in (
        "/kafka-acl",
        "/kafka-acl/Topic",
        "/kafka-acl/DelegationToken",
        "/kafka-acl-extended/prefixed/TransactionalId",
        "/kafka-acl-changes",
        "/kafka-acl-extended-changes",
    ):
        assert path in zk.znodes
    a = s.authorizer
    assert a.get(ResourcePattern(TOPIC, "orders", LITERAL)) == {entry(operation=WRITE)}
    assert s.versions[ResourcePattern(TOPIC, "orders", LITERAL)] == 1
    assert a.authorize(KafkaPrincipal.user("bob"), "10.0.0.1", READ, GROUP, "app")
    assert not a.authorize(KafkaPrincipal.user("bob"), "1.1.1.1", READ, TOPIC, "logs-app")
    assert len(a) == 3


async def test_a_znode_kafka_could_not_load_stops_the_start_but_one_not_json_holds_no_acls() -> (
    None
):
    zk = MemoryAclZk()
    zk.put("/kafka-acl/Topic/orders", b"not json")
    s = store(zk)
    await s.load()
    assert len(s.authorizer) == 0
    zk.put("/kafka-acl/Topic/orders", b'{"version":2,"acls":[]}')
    with pytest.raises(ValueError, match="/kafka-acl/Topic/orders"):
        await store(zk).load()


# --- CreateAcls --------------------------------------------------------------------------


async def test_create_writes_kafkas_json_at_kafkas_paths_and_notifies() -> None:
    zk = MemoryAclZk()
    s = store(zk)
    await s.load()
    results = await s.create_acls(
        [
            binding(),
            binding(e=entry(operation=WRITE)),
            binding("logs-", PREFIXED, entry("User:bob", AclOperation.ALL, DENY, "10.0.0.1")),
        ]
    )
    assert results == [None, None, None]
    assert zk.acls_json("/kafka-acl/Topic/orders") == {
        "version": 1,
        "acls": [
            {
                "principal": "User:alice",
                "permissionType": "Allow",
                "operation": "Read",
                "host": "*",
            },
            {
                "principal": "User:alice",
                "permissionType": "Allow",
                "operation": "Write",
                "host": "*",
            },
        ],
    }
    assert zk.acls_json("/kafka-acl-extended/prefixed/Topic/logs-")["acls"] == [
        {"principal": "User:bob", "permissionType": "Deny", "operation": "All", "host": "10.0.0.1"}
    ]
    # One znode write and one notification per pattern.
    assert zk.writes == [
        ("create", "/kafka-acl/Topic/orders"),
        ("create", "/kafka-acl-extended/prefixed/Topic/logs-"),
    ]
    assert zk.notifications(AclChangeStore.LITERAL) == [b"TOPIC:orders"]
    assert [json.loads(n) for n in zk.notifications(AclChangeStore.EXTENDED)] == [
        {"version": 1, "resourceType": "TOPIC", "name": "logs-", "patternType": "PREFIXED"}
    ]
    # The cache has them at once, without waiting for the notification.
    assert s.authorizer.authorize(ALICE, "1.2.3.4", WRITE, TOPIC, "orders")
    assert s.versions[ResourcePattern(TOPIC, "orders", LITERAL)] == 0


async def test_creating_an_acl_that_exists_changes_nothing_and_notifies_nobody() -> None:
    zk = MemoryAclZk()
    s = store(zk)
    await s.load()
    await s.create_acls([binding()])
    zk.writes.clear()
    assert await s.create_acls([binding()]) == [None]
    # Kafka writes the same ACLs again (conditionally), without a notification.
    assert zk.writes == [("set", "/kafka-acl/Topic/orders")]
    assert zk.notifications(AclChangeStore.LITERAL) == [b"TOPIC:orders"]
    assert s.versions[ResourcePattern(TOPIC, "orders", LITERAL)] == 1


async def test_a_lost_race_reads_the_znode_again_and_keeps_the_other_writers_acls() -> None:
    zk = MemoryAclZk()
    s = store(zk)
    await s.load()
    await s.create_acls([binding()])
    other = encode_acls({entry(), entry("User:bob")})
    raced: list[str] = []

    def another_broker(path: str) -> None:
        if not raced:  # its write lands between our read (the cache) and our write
            raced.append(path)
            zk.put(path, other)

    zk.interfere = another_broker
    assert await s.create_acls([binding(e=entry(operation=WRITE))]) == [None]
    assert s.authorizer.get(ResourcePattern(TOPIC, "orders", LITERAL)) == {
        entry(),
        entry("User:bob"),
        entry(operation=WRITE),
    }
    assert zk.znodes["/kafka-acl/Topic/orders"][1] == 2


async def test_a_pattern_that_never_stops_changing_fails_its_creations_only() -> None:
    zk = MemoryAclZk()
    s = store(zk, max_update_retries=3)
    await s.load()

    def always(path: str) -> None:
        if path.endswith("/orders"):
            zk.put(path, encode_acls({entry("User:bob")}))

    zk.interfere = always
    results = await s.create_acls(
        [binding(), binding("payments"), binding(e=entry(operation=WRITE))]
    )
    unknown = AclError(ErrorCode.UNKNOWN_SERVER_ERROR, None)
    assert results == [unknown, None, unknown]
    # The first try and 3 retries.
    assert zk.writes.count(("create", "/kafka-acl/Topic/orders")) == 1
    assert zk.writes.count(("set", "/kafka-acl/Topic/orders")) == 3
    assert s.authorizer.get(ResourcePattern(TOPIC, "payments", LITERAL)) == {entry()}


async def test_validation_errors_come_through_and_zookeeper_failures_fail_the_pattern() -> None:
    zk = MemoryAclZk()
    s = store(zk)
    await s.load()
    cluster = AclBindingFilter(
        ResourcePatternFilter(ResourceType.CLUSTER, "other", LITERAL),
        AccessControlEntryFilter("User:alice", "*", AclOperation.ALTER, ALLOW),
    )
    fine = binding().to_filter()
    zk.fail_reads = True  # "payments" is not cached: read from ZooKeeper first
    results = await s.create_acls(
        validate_acl_creations([cluster, fine, binding("payments").to_filter()])
    )
    assert results == [
        AclError(
            ErrorCode.INVALID_REQUEST,
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        AclError(ErrorCode.UNKNOWN_SERVER_ERROR, None),
        AclError(ErrorCode.UNKNOWN_SERVER_ERROR, None),
    ]


# --- DeleteAcls --------------------------------------------------------------------------


async def test_delete_reports_each_acl_under_the_first_filter_and_removes_empty_znodes() -> None:
    zk = MemoryAclZk()
    s = store(zk)
    await s.load()
    await s.create_acls(
        [
            binding(),
            binding(e=entry("User:bob")),
            binding("logs-", PREFIXED),
            binding("payments"),
        ]
    )
    before = len(zk.notifications(AclChangeStore.LITERAL))
    deleted = await s.delete_acls(
        [
            principal_filter("User:bob"),
            pattern_filter("orders"),  # LITERAL or PREFIXED "orders"
            pattern_filter("logs-", PREFIXED),
            principal_filter("User:carol"),
        ]
    )
    assert deleted == [
        [DeletedAcl(binding(e=entry("User:bob")))],
        [DeletedAcl(binding())],  # bob's came under the first filter only
        [DeletedAcl(binding("logs-", PREFIXED))],
        [],
    ]
    assert "/kafka-acl/Topic/orders" not in zk.znodes
    assert "/kafka-acl-extended/prefixed/Topic/logs-" not in zk.znodes
    assert "/kafka-acl/Topic/payments" in zk.znodes
    assert ResourcePattern(TOPIC, "orders", LITERAL) not in s.authorizer
    assert ResourcePattern(TOPIC, "orders", LITERAL) not in s.versions
    assert zk.notifications(AclChangeStore.LITERAL)[before:] == [b"TOPIC:orders"]
    assert len(zk.notifications(AclChangeStore.EXTENDED)) == 2


async def test_delete_finds_a_pattern_another_broker_created_before_its_notification() -> None:
    zk = MemoryAclZk()
    s = store(zk)
    await s.load()
    zk.put("/kafka-acl/Topic/orders", encode_acls({entry()}))  # not in our cache yet
    assert await s.delete_acls([pattern_filter("orders", LITERAL)]) == [[DeletedAcl(binding())]]
    assert "/kafka-acl/Topic/orders" not in zk.znodes
    # A filter that names no pattern exactly only sees the cache (Kafka's MATCH caveat).
    zk.put("/kafka-acl/Topic/orders", encode_acls({entry()}))
    assert await s.delete_acls([pattern_filter("orders", PatternType.MATCH)]) == [[]]
    # And a name no znode can have holds nothing to delete.
    assert await s.delete_acls([pattern_filter("a/b", LITERAL)]) == [[]]


async def test_a_failed_delete_reports_its_acls_with_the_error() -> None:
    zk = MemoryAclZk()
    s = store(zk, max_update_retries=0)
    await s.load()
    await s.create_acls([binding(), binding("payments")])
    zk.interfere = lambda path: zk.put(path, encode_acls({entry()})) if "orders" in path else None
    deleted = await s.delete_acls([pattern_filter(None, PatternType.ANY)])
    unknown = AclError(ErrorCode.UNKNOWN_SERVER_ERROR, None)
    assert deleted == [[DeletedAcl(binding(), unknown), DeletedAcl(binding("payments"))]]
    assert "/kafka-acl/Topic/orders" in zk.znodes


# --- change notifications ----------------------------------------------------------------


def test_plan_takes_the_newer_notifications_skips_unreadable_ones_and_purges_old_ones() -> None:
    now = 1_700_000_000_000
    old = now - 15 * 60 * 1000 - 1
    notifications = {
        "acl_changes_0000000003": (b"TOPIC:orders", now),
        "acl_changes_0000000001": (b"TOPIC:old", old),
        "acl_changes_0000000002": (b"no colon", now),
        "acl_changes_0000000004": (b"Group:app", now),
        "acl_changes_0000000005": (b"TOPIC:orders", now),
    }
    plan = plan_acl_changes(AclChangeStore.LITERAL, notifications, 1, now)
    assert plan.patterns == [
        ResourcePattern(TOPIC, "orders", LITERAL),
        ResourcePattern(GROUP, "app", LITERAL),
    ]
    assert plan.last_sequence == 5
    assert plan.purge == ["acl_changes_0000000001"]
    assert notification_sequence("acl_changes_0000000042") == 42


async def test_another_brokers_change_reaches_the_cache_through_its_notification() -> None:
    zk = MemoryAclZk()
    s = store(zk)
    zk.put("/kafka-acl/Topic/orders", encode_acls({entry()}))
    await s.load()
    zk.put("/kafka-acl/Topic/orders", encode_acls({entry(), entry("User:bob")}))
    zk.notify(ResourcePattern(TOPIC, "orders", LITERAL))
    zk.put("/kafka-acl-extended/prefixed/Topic/logs-", encode_acls({entry()}))
    zk.notify(ResourcePattern(TOPIC, "logs-", PREFIXED))
    await s.process_notifications(AclChangeStore.LITERAL)
    await s.process_notifications(AclChangeStore.EXTENDED)
    assert s.authorizer.get(ResourcePattern(TOPIC, "orders", LITERAL)) == {
        entry(),
        entry("User:bob"),
    }
    assert s.versions[ResourcePattern(TOPIC, "orders", LITERAL)] == 1
    assert s.authorizer.authorize(ALICE, "h", READ, TOPIC, "logs-2024")
    # Deleted elsewhere: gone from the cache.
    del zk.znodes["/kafka-acl/Topic/orders"]
    zk.notify(ResourcePattern(TOPIC, "orders", LITERAL))
    await s.process_notifications(AclChangeStore.LITERAL)
    assert ResourcePattern(TOPIC, "orders", LITERAL) not in s.authorizer
    assert s.last_sequence == {AclChangeStore.LITERAL: 1, AclChangeStore.EXTENDED: 0}
    # A znode the broker cannot read leaves the cached ACLs as they were.
    zk.put("/kafka-acl-extended/prefixed/Topic/logs-", b'{"version":1,"acls":[{"x":1}]}')
    zk.notify(ResourcePattern(TOPIC, "logs-", PREFIXED))
    await s.process_notifications(AclChangeStore.EXTENDED)
    assert s.authorizer.get(ResourcePattern(TOPIC, "logs-", PREFIXED)) == {entry()}


async def test_the_watch_processes_existing_then_new_notifications_and_purges_old_ones() -> None:
    zk = MemoryAclZk()
    s = store(zk)
    await s.load()
    zk.put("/kafka-acl/Topic/orders", encode_acls({entry()}))
    zk.notify(ResourcePattern(TOPIC, "orders", LITERAL))
    zk.now_ms += 15 * 60 * 1000 + 1  # that notification is now old
    await s.start(LoopBridge(asyncio.get_running_loop()))
    try:
        await wait_for(lambda: ResourcePattern(TOPIC, "orders", LITERAL) in s.authorizer)
        await wait_for(lambda: zk.notifications(AclChangeStore.LITERAL) == [])
        zk.put("/kafka-acl/Group/app", encode_acls({entry()}))
        zk.notify(ResourcePattern(GROUP, "app", LITERAL))
        zk.watches["/kafka-acl-changes"](zk.children("/kafka-acl-changes"))
        await wait_for(lambda: ResourcePattern(GROUP, "app", LITERAL) in s.authorizer)
    finally:
        await s.stop()


async def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)
