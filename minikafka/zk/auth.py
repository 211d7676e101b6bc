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
from typing import Any, Final

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
class ZkTls:
    """TLS to ZooKeeper (KIP-515), as kazoo makes it: `keystore`, a PEM file with the
    client's key and certificate chain (its identity: ZooKeeper's x509 provider names it
    by the certificate's subject), the key's password, `truststore` the PEM CAs (None: the
    system's), and whether the server's certificate must name the host connected to."""

    keystore: str | None = None
    keystore_password: str | None = field(default=None, repr=False)
    truststore: str | None = None
    check_hostname: bool = True

    def kazoo_options(self) -> dict[str, Any]:
        return {
            "use_ssl": True,
            "verify_certs": True,
            "check_hostname": self.check_hostname,
            "ca": self.truststore,
            # kazoo loads a key only with both; one PEM file holds the key and the chain.
            "certfile": self.keystore,
            "keyfile": self.keystore,
            "keyfile_password": self.keystore_password,
        }


@dataclass(frozen=True)
class ZkClientAuth:
    """How a client authenticates to ZooKeeper and whether its znodes get Kafka's ACLs.

    `sasl`: (username, password) for DIGEST-MD5, None for no SASL. `tls`: TLS to
    ZooKeeper, None for plaintext. `secure_acls`: Kafka's `zookeeper.set.acl`."""

    sasl: tuple[str, str] | None = field(default=None, repr=False)
    secure_acls: bool = False
    tls: ZkTls | None = None

    @property
    def identified(self) -> bool:
        """Whether ZooKeeper knows this client as someone: SASL, or a TLS client
        certificate (Kafka's isZkSecurityEnabled)."""
        return self.sasl is not None or (self.tls is not None and self.tls.keystore is not None)

    def kazoo_options(self) -> dict[str, Any]:
        """KazooClient's keyword arguments for SASL and TLS."""
        options: dict[str, Any] = {"sasl_options": self.sasl_options()}
        if self.tls is not None:
            options.update(self.tls.kazoo_options())
        return options

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
