"""SCRAM users as Kafka's ZkAdminManager and CredentialCache keep them
(server/scram_credentials.py): AlterUserScramCredentials' and
DescribeUserScramCredentials' rules and errors, the salted password turned into the stored
and server keys, and the cache every broker authenticates from."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from minikafka.protocol.errors import ErrorCode
from minikafka.security.scram import (
    ScramClient,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    salted_password,
)
from minikafka.server.scram_credentials import (
    Deletion,
    ScramCredentialAdmin,
    ScramCredentialCache,
    Upsertion,
)

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


class MemoryUsers:
    """`/config/users` in memory, with the change notifications written."""

    def __init__(self) -> None:
        self.users: dict[str, dict[str, str]] = {}
        self.notified: list[str] = []

    async def get_user_config(self, user: str) -> dict[str, str]:
        return dict(self.users.get(user, {}))

    async def get_user_configs(self) -> dict[str, dict[str, str]]:
        return {u: dict(c) for u, c in self.users.items()}

    async def set_user_config(self, user: str, config: Mapping[str, str]) -> None:
        self.users[user] = dict(config)
        self.notified.append(user)


def upsert(
    user: str, password: str, mechanism: ScramMechanism = SHA256, it: int = 4096
) -> Upsertion:
    salt = b"salt-" + user.encode()
    return Upsertion(
        user, mechanism.type_code, it, salt, salted_password(mechanism, password, salt, it)
    )


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def authenticates(
    cache: ScramCredentialCache, mechanism: ScramMechanism, user: str, pw: str
) -> bool:
    server = ScramServer(mechanism, lambda u: cache.get(mechanism, u))
    client = ScramClient(mechanism, user, pw)
    try:
        first = server.evaluate(client.first_message())
        client.verify_server_final(server.evaluate(client.final_message(first)))
    except Exception:
        return False
    return server.complete


def test_an_upserted_password_authenticates_once_the_cache_is_refreshed() -> None:
    store = MemoryUsers()
    admin = ScramCredentialAdmin(store)
    results = run(admin.alter([], [upsert("alice", "pw1"), upsert("alice", "pw1", SHA512)]))
    assert [(r.user, r.error_code) for r in results] == [("alice", ErrorCode.NONE)]
    assert store.notified == ["alice"]  # one write, one notification for the user
    assert set(store.users["alice"]) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    ScramCredential.from_zk(store.users["alice"]["SCRAM-SHA-256"])  # Kafka's format
    cache = ScramCredentialCache()
    run(cache.load(store))
    assert authenticates(cache, SHA256, "alice", "pw1")
    assert authenticates(cache, SHA512, "alice", "pw1")
    assert not authenticates(cache, SHA256, "alice", "pw2")
    run(admin.alter([], [upsert("alice", "pw2")]))
    run(cache.refresh(store, ["alice"]))
    assert authenticates(cache, SHA256, "alice", "pw2")
    assert not authenticates(cache, SHA256, "alice", "pw1")
    run(admin.alter([Deletion("alice", SHA256.type_code), Deletion("alice", SHA512.type_code)], []))
    run(cache.refresh(store, ["alice"]))
    assert not authenticates(cache, SHA512, "alice", "pw1")


def test_kafkas_errors_for_bad_alterations() -> None:
    store = MemoryUsers()
    admin = ScramCredentialAdmin(store)
    run(admin.alter([], [upsert("bob", "pw")]))
    results = run(
        admin.alter(
            [Deletion("bob", SHA512.type_code), Deletion("carol", 9)],
            [
                upsert("dave", "pw", it=100),
                upsert("erin", "pw", it=20000),
                upsert("", "pw"),
                upsert("frank", "pw"),
                upsert("frank", "pw"),
            ],
        )
    )
    assert {r.user: (r.error_code, r.error_message) for r in results} == {
        "bob": (
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        ),
        "carol": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "dave": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "erin": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "frank": (
            ErrorCode.DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request",
        ),
    }
    assert set(store.users) == {"bob"}  # nothing refused was written


def test_describe_all_some_missing_and_duplicates() -> None:
    store = MemoryUsers()
    admin = ScramCredentialAdmin(store)
    run(admin.alter([], [upsert("alice", "pw", SHA512, 8192), upsert("bob", "pw")]))
    store.users["quota-only"] = {"producer_byte_rate": "1024"}  # not a SCRAM user
    every = run(admin.describe(None))
    assert [(r.user, [(i.mechanism, i.iterations) for i in r.credential_infos]) for r in every] == [
        ("alice", [(2, 8192)]),
        ("bob", [(1, 4096)]),
    ]
    some = run(admin.describe(["bob", "nobody", "alice", "alice"]))
    assert [(r.user, r.error_code) for r in some] == [
        ("bob", ErrorCode.NONE),
        ("nobody", ErrorCode.RESOURCE_NOT_FOUND),
        ("alice", ErrorCode.DUPLICATE_RESOURCE),
    ]
