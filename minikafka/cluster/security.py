"""A secured local cluster (`minikafka cluster up --security MODE`): the certificates,
the admin user and the broker settings of each mode, and the client settings that reach it.

- `sasl_ssl`: every broker's one listener is SASL_SSL, with SCRAM-SHA-512 and SCRAM-SHA-256;
  brokers authenticate to each other on it as the admin user (SCRAM-SHA-512), over TLS.
- `ssl`: the listener is SSL and asks every client for a certificate (mutual TLS); the
  principal is the certificate's common name (ssl.principal.mapping.rules). Brokers
  present their own certificates to each other.
- `sasl_plaintext`: SASL (SCRAM) without TLS, for a trusted network.

Every mode turns Kafka's ACL authorizer on (authorizer.class.name), with the admin user
and the brokers as super users (super.users): the admin may do anything, brokers may send
each other the inter-broker requests, and any other user needs ACLs.

Every mode secures ZooKeeper as Kafka's docs do: the cluster's ZooKeeper takes SASL
DIGEST-MD5 logins (a JAAS `Server` section with one user, `kafka`), the brokers log in as
that user (a JAAS `Client` section, named in their `KAFKA_OPTS` as
`-Djava.security.auth.login.config=`) and run with `zookeeper.set.acl=true`, so that only
they may write the znodes they create, and nobody else may read `/config/users`. The
cluster's own commands (`cluster up`'s admin user and persistent paths, preferred replica
elections, readiness, chaos) log in as the same user.

Everything lives in `<data dir>/security/`: a throwaway CA, one certificate per broker and
one for the admin client, the admin user's password and the admin endpoints' token (mode
0600). The admin user is a super user and is written to ZooKeeper as Kafka's
`kafka-configs --zookeeper` writes a SCRAM user, before the brokers start (they
authenticate to each other with it). In every mode the brokers' HTTP admin endpoints ask
for the token (`admin.listeners.token`) on every route but /health.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Final, Literal, get_args

from minikafka.config.security import ACL_AUTHORIZER
from minikafka.config.zk_client import JAVA_LOGIN_CONFIG_PARAM, KAFKA_OPTS_ENV, ZK_SET_ACL
from minikafka.security.certs import CertificateAuthority, IssuedCertificate, make_ca
from minikafka.security.scram import ScramMechanism, make_credential
from minikafka.zk.client import ZkClientAuth
from minikafka.zk.server import write_client_jaas, write_server_jaas

SecurityMode = Literal["ssl", "sasl_ssl", "sasl_plaintext"]
SECURITY_MODES: Final[tuple[str, ...]] = get_args(SecurityMode)

ADMIN_USER: Final = "admin"
SECURITY_DIR: Final = "security"
# The secret of the brokers' HTTP admin endpoints (`admin.listeners.token`).
ADMIN_TOKEN_FILE: Final = "admin-http.token"
ADMIN_TOKEN_PROPERTY: Final = "admin.listeners.token"
# The client certificate's common name is the principal's name (User:admin, User:broker1).
MAPPING_RULES: Final = "RULE:^CN=([^,]+),OU=minikafka$/$1/,DEFAULT"
SCRAM_LOGIN_MODULE: Final = "org.apache.kafka.common.security.scram.ScramLoginModule"
INTER_BROKER_MECHANISM: Final = "SCRAM-SHA-512"
# Who the brokers (and the cluster's commands) are to ZooKeeper: `sasl:kafka` in the ACLs.
ZK_USER: Final = "kafka"


def _listener(mode: SecurityMode) -> str:
    return mode.upper()


class ClusterSecurity:
    """The security material of one local cluster's data dir."""

    def __init__(self, data_dir: Path, mode: SecurityMode, host: str) -> None:
        if mode not in SECURITY_MODES:
            raise ValueError(f"security must be one of {', '.join(SECURITY_MODES)}, got {mode!r}")
        self.mode: SecurityMode = mode
        self.directory = data_dir / SECURITY_DIR
        self.host = host

    @property
    def listener(self) -> str:
        """The brokers' one listener name, which is also its security protocol."""
        return _listener(self.mode)

    @property
    def uses_tls(self) -> bool:
        return self.mode in ("ssl", "sasl_ssl")

    @property
    def uses_sasl(self) -> bool:
        return self.mode in ("sasl_ssl", "sasl_plaintext")

    @property
    def ca_path(self) -> Path:
        return self.directory / "ca.pem"

    @property
    def password_path(self) -> Path:
        return self.directory / f"{ADMIN_USER}.password"

    @property
    def admin_token_path(self) -> Path:
        return self.directory / ADMIN_TOKEN_FILE

    @property
    def zookeeper_password_path(self) -> Path:
        return self.directory / "zookeeper.password"

    @property
    def zookeeper_server_jaas_path(self) -> Path:
        """ZooKeeper's JAAS file (`Server`: the user the brokers log in as)."""
        return self.directory / "zookeeper-server.jaas"

    @property
    def zookeeper_client_jaas_path(self) -> Path:
        """The brokers' JAAS file (`Client`: how they log in to ZooKeeper)."""
        return self.directory / "zookeeper-client.jaas"

    def prepare(self, broker_ids: list[int]) -> None:
        """Make what is missing: the CA, a certificate per broker and the admin's, the
        admin's password, the admin endpoints' token. Idempotent: a restarted cluster keeps
        its CA, password and token."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.directory.chmod(0o700)
        if self.uses_tls:
            ca = (
                CertificateAuthority.load(self.directory)
                if self.ca_path.exists()
                else make_ca(self.directory)
            )
            hosts = sorted({self.host, "localhost", "127.0.0.1"})
            for name in [ADMIN_USER, *(f"broker{b}" for b in broker_ids)]:
                if not (self.directory / f"{name}.keystore.pem").exists():
                    ca.issue(self.directory, name, hosts=hosts)
        if self.uses_sasl and not self.password_path.exists():
            _write_secret(self.password_path, secrets.token_urlsafe(24))
        if not self.admin_token_path.exists():
            _write_secret(self.admin_token_path, secrets.token_urlsafe(32))
        if not self.zookeeper_password_path.exists():
            _write_secret(self.zookeeper_password_path, secrets.token_urlsafe(24))
        # Written from the password at every start: a data dir from before ZooKeeper was
        # secured gets them too.
        password = self.zookeeper_password()
        write_server_jaas(self.zookeeper_server_jaas_path, {ZK_USER: password})
        write_client_jaas(self.zookeeper_client_jaas_path, ZK_USER, password)

    def zookeeper_password(self) -> str:
        return self.zookeeper_password_path.read_text().strip()

    def zk_client_auth(self) -> ZkClientAuth:
        """The brokers' ZooKeeper identity and ACLs, for the cluster's own commands."""
        return ZkClientAuth(sasl=(ZK_USER, self.zookeeper_password()), secure_acls=True)

    def broker_environment(self) -> dict[str, str]:
        """What the brokers' processes get: Kafka's way to the JAAS file."""
        return {KAFKA_OPTS_ENV: f"-D{JAVA_LOGIN_CONFIG_PARAM}={self.zookeeper_client_jaas_path}"}

    def admin_password(self) -> str:
        return self.password_path.read_text().strip()

    def admin_token(self) -> str | None:
        """The brokers' `admin.listeners.token`, which whoever reads their admin endpoints
        presents; None for a data dir prepared before there were tokens (until its next
        `cluster up`): its running brokers ask for none."""
        try:
            return self.admin_token_path.read_text().strip() or None
        except FileNotFoundError:
            return None

    def admin_scram_config(self) -> dict[str, str]:
        """The admin's `/config/users/admin` entries (both SCRAM mechanisms)."""
        password = self.admin_password()
        return {m.mechanism_name: make_credential(m, password).to_zk() for m in ScramMechanism}

    def _keystore(self, name: str) -> Path:
        return self.directory / f"{name}.keystore.pem"

    def broker_principals(self, broker_ids: Iterable[int]) -> list[str]:
        """Who the brokers are to each other: their certificates' names in ssl mode
        (User:broker<N>, by the mapping rule), else the admin user they log in as."""
        if self.mode == "ssl":
            return [f"User:broker{b}" for b in sorted(broker_ids)]
        return [f"User:{ADMIN_USER}"]

    def super_users(self, broker_ids: Iterable[int]) -> str:
        """`super.users`: the admin and every broker, which must be allowed CLUSTER_ACTION
        on each other (LeaderAndIsr, replica fetches) and need no ACL for it."""
        principals = [f"User:{ADMIN_USER}", *self.broker_principals(broker_ids)]
        return ";".join(dict.fromkeys(principals))

    def broker_properties(
        self,
        broker_id: int,
        host: str,
        port: int,
        broker_ids: Iterable[int] = (),
        *,
        password: str | None = None,
    ) -> dict[str, str]:
        """The security part of one broker's server.properties (`broker_ids`: every broker
        of the cluster, this one included, for `super.users`). `password`: the admin's,
        read from the data dir when None (a placeholder serves to check overrides against
        these settings before the data dir is prepared)."""
        listener = self.listener
        props = {
            "listeners": f"{listener}://{host}:{port}",
            "security.inter.broker.protocol": listener,
            "authorizer.class.name": ACL_AUTHORIZER,
            "super.users": self.super_users({broker_id, *broker_ids}),
            ZK_SET_ACL: "true",
        }
        token = self.admin_token()
        if token is not None:
            props[ADMIN_TOKEN_PROPERTY] = token
        if self.uses_tls:
            props.update(
                {
                    "ssl.keystore.type": "PEM",
                    "ssl.keystore.location": str(self._keystore(f"broker{broker_id}")),
                    "ssl.truststore.type": "PEM",
                    "ssl.truststore.location": str(self.ca_path),
                    "ssl.principal.mapping.rules": MAPPING_RULES,
                }
            )
        if self.mode == "ssl":
            props["ssl.client.auth"] = "required"
        if self.uses_sasl:
            prefix = f"listener.name.{listener.lower()}."
            props.update(
                {
                    "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256",
                    "sasl.mechanism.inter.broker.protocol": INTER_BROKER_MECHANISM,
                    f"{prefix}{INTER_BROKER_MECHANISM.lower()}.sasl.jaas.config": (
                        f'{SCRAM_LOGIN_MODULE} required username="{ADMIN_USER}" '
                        f'password="{self.admin_password() if password is None else password}";'
                    ),
                }
            )
        return props

    def client_config(self) -> dict[str, str]:
        """librdkafka's settings for the admin client (without bootstrap.servers)."""
        config = {"security.protocol": self.listener}
        if self.uses_tls:
            config["ssl.ca.location"] = str(self.ca_path)
        if self.mode == "ssl":
            admin = self._keystore(ADMIN_USER)
            config["ssl.certificate.location"] = str(admin)
            config["ssl.key.location"] = str(admin)
        if self.uses_sasl:
            config.update(
                {
                    "sasl.mechanism": INTER_BROKER_MECHANISM,
                    "sasl.username": ADMIN_USER,
                    "sasl.password": self.admin_password(),
                }
            )
        return config

    def issued(self, name: str) -> IssuedCertificate | None:
        """A certificate made for `name`, if any (for tests and tools)."""
        keystore = self._keystore(name)
        if not keystore.exists():
            return None
        return IssuedCertificate(
            name,
            self.directory / f"{name}.pem",
            self.directory / f"{name}.key",
            keystore,
            self.ca_path,
            False,
        )


def _write_secret(path: Path, secret: str) -> None:
    """A new file only its owner can read, holding `secret`."""
    path.touch(mode=0o600)
    path.write_text(secret)
