"""SCRAM credentials: where brokers look them up, and how clients change them (KIP-554).

Kafka keeps a user's credentials in ZooKeeper, in `/config/users/<user>`, one entry per
mechanism (`{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,
server_key=...,iterations=4096"}}`), and tells every broker of a change with a
`users/<user>` config change notification. Every broker caches all of them (Kafka's
CredentialCache), filled at start and refreshed on each notification, so a password
change takes effect on every broker without a restart; SASL lookups read only the cache.

AlterUserScramCredentials and DescribeUserScramCredentials follow Kafka's
ZkAdminManager: the client sends a salt and the salted password (never the password);
the broker derives the stored and server keys.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from minikafka.protocol.errors import ErrorCode
from minikafka.security.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramCredential,
    ScramMechanism,
    credential_from_salted_password,
)

log = logging.getLogger(__name__)


class UserConfigStore(Protocol):
    """`/config/users` in ZooKeeper (admin_zk_store.py; in memory in the unit tests)."""

    async def get_user_config(self, user: str) -> dict[str, str]: ...

    async def get_user_configs(self) -> dict[str, dict[str, str]]: ...

    async def set_user_config(self, user: str, config: Mapping[str, str]) -> None: ...


def _credentials(user: str, config: Mapping[str, str]) -> dict[ScramMechanism, ScramCredential]:
    out: dict[ScramMechanism, ScramCredential] = {}
    for mechanism in ScramMechanism:
        raw = config.get(mechanism.mechanism_name)
        if raw is None:
            continue
        try:
            out[mechanism] = ScramCredential.from_zk(raw)
        except ValueError as e:
            log.warning("ignoring user %s's %s credential: %s", user, mechanism.mechanism_name, e)
    return out


class ScramCredentialCache:
    """Every user's SCRAM credentials, as ZooKeeper last told this broker."""

    def __init__(self) -> None:
        self._users: dict[str, dict[ScramMechanism, ScramCredential]] = {}

    def get(self, mechanism: ScramMechanism, user: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def update(self, user: str, config: Mapping[str, str]) -> None:
        credentials = _credentials(user, config)
        if credentials:
            self._users[user] = credentials
        else:
            self._users.pop(user, None)

    async def load(self, store: UserConfigStore) -> None:
        for user, config in (await store.get_user_configs()).items():
            self.update(user, config)

    async def refresh(self, store: UserConfigStore, users: Sequence[str]) -> None:
        for user in users:
            self.update(user, await store.get_user_config(user))


@dataclass(frozen=True)
class CredentialInfo:
    mechanism: int  # KIP-554's type code
    iterations: int


@dataclass(frozen=True)
class UserResult:
    user: str
    error_code: int
    error_message: str | None
    credential_infos: tuple[CredentialInfo, ...] = ()


@dataclass(frozen=True)
class Upsertion:
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclass(frozen=True)
class Deletion:
    name: str
    mechanism: int


class ScramCredentialAdmin:
    def __init__(self, store: UserConfigStore) -> None:
        self._store = store

    async def describe(self, users: Sequence[str] | None) -> list[UserResult]:
        """Kafka's describeUserScramCredentials: every user with credentials when `users`
        is null or empty; an asked-for user without any is RESOURCE_NOT_FOUND, one asked
        twice DUPLICATE_RESOURCE."""
        if not users:
            configs = await self._store.get_user_configs()
            return [
                UserResult(user, ErrorCode.NONE, None, _infos(_credentials(user, cfg)))
                for user, cfg in sorted(configs.items())
                if _credentials(user, cfg)
            ]
        results = []
        duplicates = {u for u in users if users.count(u) > 1}
        for user in dict.fromkeys(users):
            if user in duplicates:
                results.append(
                    UserResult(
                        user,
                        ErrorCode.DUPLICATE_RESOURCE,
                        "Cannot describe SCRAM credentials for the same user twice in a "
                        "single request",
                    )
                )
                continue
            credentials = _credentials(user, await self._store.get_user_config(user))
            if not credentials:
                results.append(
                    UserResult(
                        user,
                        ErrorCode.RESOURCE_NOT_FOUND,
                        "Attempt to describe a user credential that does not exist",
                    )
                )
            else:
                results.append(UserResult(user, ErrorCode.NONE, None, _infos(credentials)))
        return results

    async def alter(
        self, deletions: Sequence[Deletion], upsertions: Sequence[Upsertion]
    ) -> list[UserResult]:
        """Kafka's alterUserScramCredentials: each user's changes are checked together and
        written in one znode write (then a change notification); one result per user."""
        users = list(dict.fromkeys([d.name for d in deletions] + [u.name for u in upsertions]))
        results = []
        for user in users:
            dels = [d for d in deletions if d.name == user]
            ups = [u for u in upsertions if u.name == user]
            error = _check(user, dels, ups)
            if error is not None:
                results.append(UserResult(user, *error))
                continue
            config = dict(await self._store.get_user_config(user))
            missing = [
                d
                for d in dels
                if ScramMechanism.from_type_code(d.mechanism).mechanism_name not in config
            ]
            if missing:
                results.append(
                    UserResult(
                        user,
                        ErrorCode.RESOURCE_NOT_FOUND,
                        "Attempt to delete a user credential that does not exist",
                    )
                )
                continue
            for d in dels:
                config.pop(ScramMechanism.from_type_code(d.mechanism).mechanism_name, None)
            for u in ups:
                mechanism = ScramMechanism.from_type_code(u.mechanism)
                credential = credential_from_salted_password(
                    mechanism, u.salted_password, u.salt, u.iterations
                )
                config[mechanism.mechanism_name] = credential.to_zk()
            await self._store.set_user_config(user, config)
            log.info(
                "SCRAM credentials of user %s changed (%s)",
                user,
                ", ".join(
                    [f"-{_name(d.mechanism)}" for d in dels]
                    + [f"+{_name(u.mechanism)}" for u in ups]
                ),
            )
            results.append(UserResult(user, ErrorCode.NONE, None))
        return results


def _name(code: int) -> str:
    return ScramMechanism.from_type_code(code).mechanism_name


def _infos(credentials: Mapping[ScramMechanism, ScramCredential]) -> tuple[CredentialInfo, ...]:
    return tuple(
        CredentialInfo(m.type_code, c.iterations)
        for m, c in sorted(credentials.items(), key=lambda mc: mc[0].type_code)
    )


def _check(
    user: str, deletions: Sequence[Deletion], upsertions: Sequence[Upsertion]
) -> tuple[int, str] | None:
    """Kafka's per-user validation, in its order: the error of the first rule broken."""
    if not user:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    mechanisms = [d.mechanism for d in deletions] + [u.mechanism for u in upsertions]
    for code in mechanisms:
        try:
            ScramMechanism.from_type_code(code)
        except ValueError:
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if len(set(mechanisms)) != len(mechanisms):
        return (
            ErrorCode.DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request",
        )
    for u in upsertions:
        if u.iterations < MIN_ITERATIONS:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
        if u.iterations > MAX_ITERATIONS:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
        if not u.salt or not u.salted_password:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty"
    return None
