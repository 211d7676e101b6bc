"""Who a ZooKeeper client is, and the ACLs of the znodes it creates (Kafka's
`zookeeper.set.acl`, `ZkData.defaultAcls`).

Kafka's brokers authenticate to ZooKeeper with SASL (the JAAS file's `Client` section;
`config/zk_client.py` reads it): ZooKeeper's DIGEST-MD5, which kazoo speaks through
pure-sasl. With `zookeeper.set.acl=true` every znode they create is writable by that
identity only (`CREATOR_ALL_ACL`: ZooKeeper writes the creator's authenticated ids in),
readable by anyone except under Kafka's sensitive paths (SCRAM credentials, broker
configs, delegation tokens), which nobody else may read at all.

Pure: no I/O here; `session.py` hands these to kazoo.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from kazoo.security import ACL, CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

from minikafka.zk import paths

# The one SASL mechanism minikafka's ZooKeeper client speaks (ZooKeeper's DigestLoginModule).
DIGEST_MD5: Final = "DIGEST-MD5"

# Kafka's ZkData.SensitiveRootPaths: a znode whose path starts with one of these gets no
# world access ("Important: it is necessary to add any new top level Zookeeper path").
SENSITIVE_ROOT_PATHS: Final = (paths.CONFIG_USERS, paths.CONFIG_BROKERS, "/delegation_token")
# Kafka's ConsumerPathZNode: the old consumers write under it, so it stays open.
CONSUMERS_PATH: Final = "/consumers"


@dataclass(frozen=True)
class ZkClientAuth:
    """How a client authenticates to ZooKeeper and whether its znodes get Kafka's ACLs.

    `sasl`: (username, password) for DIGEST-MD5, None for no SASL. `secure_acls`: Kafka's
    `zookeeper.set.acl`."""

    sasl: tuple[str, str] | None = field(default=None, repr=False)
    secure_acls: bool = False

    @property
    def username(self) -> str | None:
        return None if self.sasl is None else self.sasl[0]

    def sasl_options(self) -> dict[str, str] | None:
        """kazoo's `sasl_options`, None without SASL."""
        if self.sasl is None:
            return None
        username, password = self.sasl
        return {"mechanism": DIGEST_MD5, "username": username, "password": password}


def is_sensitive_path(path: str) -> bool:
    """Kafka's ZkData.sensitivePath: a prefix match, as Kafka's (chroot-relative path)."""
    return path.startswith(SENSITIVE_ROOT_PATHS)


def default_acls(secure: bool, path: str) -> list[ACL]:
    """The ACLs a znode at `path` is created with (Kafka's ZkData.defaultAcls): open
    without `zookeeper.set.acl`; with it, everything for its creator's authenticated
    identities and READ for the world, but nothing for the world on a sensitive path."""
    if not secure or path == CONSUMERS_PATH:
        return list(OPEN_ACL_UNSAFE)
    acls = list(CREATOR_ALL_ACL)
    if not is_sensitive_path(path):
        acls += READ_ACL_UNSAFE
    return acls
