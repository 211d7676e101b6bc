"""ZkClient on a ZooKeeper that takes SASL logins (zk/auth.py, zk/session.py): with
zookeeper.set.acl, every znode the client creates (the chroot, the persistent paths, a
topic's znodes in one multi, the SCRAM credentials) gets Kafka's ACLs; without it they stay
open, as before; a client without the identity is refused with ZkNoAuthError; a wrong
password fails the start at once."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.security import ACL, Id, Permissions

from minikafka.zk.client import (
    ZkAuthFailedError,
    ZkClient,
    ZkClientAuth,
    ZkNoAuthError,
)
from minikafka.zk.server import LocalZooKeeper, write_client_jaas, write_server_jaas

USER, PASSWORD = "kafka", 'pa"ss\\word'  # quotes and backslashes survive the JAAS file
OWNER = ACL(Permissions.ALL, Id("sasl", USER))
WORLD_READ = ACL(Permissions.READ, Id("world", "anyone"))
OPEN = ACL(Permissions.ALL, Id("world", "anyone"))


@pytest.fixture(scope="module")
def sasl_zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalZooKeeper]:
    base: Path = tmp_path_factory.mktemp("zk-sasl")
    write_server_jaas(base / "server.jaas", {USER: PASSWORD})
    server = LocalZooKeeper(base / "zk", port=0, fsync=False, server_jaas=base / "server.jaas")
    server.start(timeout=60)
    yield server
    server.stop()


@pytest.fixture
def chroot() -> str:
    return f"/test-{uuid.uuid4().hex[:12]}"


def client(zk: LocalZooKeeper, chroot: str, auth: ZkClientAuth | None) -> ZkClient:
    c = ZkClient(zk.connect_string + chroot, session_timeout_ms=6000, auth=auth)
    c.start()
    return c


@pytest.fixture
def admin(sasl_zk: LocalZooKeeper) -> Iterator[KazooClient]:
    k = KazooClient(
        sasl_zk.connect_string,
        sasl_options={"mechanism": "DIGEST-MD5", "username": USER, "password": PASSWORD},
    )
    k.start(timeout=15)
    yield k
    k.stop()
    k.close()


def test_with_set_acl_every_znode_gets_kafkas_acls(
    sasl_zk: LocalZooKeeper, chroot: str, admin: KazooClient
) -> None:
    zk = client(sasl_zk, chroot, ZkClientAuth(sasl=(USER, PASSWORD), secure_acls=True))
    try:
        zk.ensure_persistent_paths()
        zk.create_topic("orders", {0: [1], 1: [1]})
        zk.set_user_config("alice", {"SCRAM-SHA-512": "salt=...,iterations=4096"})
    finally:
        zk.close()
    acl = lambda path: admin.get_acls(chroot + path)[0]  # noqa: E731
    assert admin.get_acls(chroot)[0] == [OWNER, WORLD_READ]  # the chroot, made first
    for path in ("/brokers/topics/orders", "/config", "/config/changes", "/admin/delete_topics"):
        assert acl(path) == [OWNER, WORLD_READ], path
    for path in ("/config/users", "/config/users/alice", "/config/brokers"):
        assert acl(path) == [OWNER], path


def test_without_set_acl_znodes_stay_open(sasl_zk: LocalZooKeeper, chroot: str) -> None:
    zk = client(sasl_zk, chroot, None)
    try:
        zk.ensure_persistent_paths()
        zk.set_user_config("alice", {"SCRAM-SHA-512": "salt=...,iterations=4096"})
    finally:
        zk.close()
    raw = KazooClient(sasl_zk.connect_string)
    raw.start(timeout=15)
    try:
        for path in ("", "/brokers/topics", "/config/users/alice"):
            assert raw.get_acls(chroot + path)[0] == [OPEN], path
    finally:
        raw.stop()
        raw.close()


def test_without_the_identity_writes_are_refused(sasl_zk: LocalZooKeeper, chroot: str) -> None:
    owner = client(sasl_zk, chroot, ZkClientAuth(sasl=(USER, PASSWORD), secure_acls=True))
    anonymous = client(sasl_zk, chroot, None)
    try:
        owner.ensure_persistent_paths()
        owner.set_user_config("alice", {"SCRAM-SHA-512": "salt=...,iterations=4096"})
        # Existing paths are found, not created again (which ZooKeeper would refuse).
        anonymous.ensure_persistent_paths()
        with pytest.raises(ZkNoAuthError, match="NoAuth"):
            anonymous.create_topic("forged", {0: [1]})
        with pytest.raises(ZkNoAuthError):
            anonymous.get_user_config("alice")
    finally:
        owner.close()
        anonymous.close()


def test_a_wrong_password_fails_the_start(sasl_zk: LocalZooKeeper, chroot: str) -> None:
    zk = ZkClient(
        sasl_zk.connect_string,
        connection_timeout_ms=30000,
        auth=ZkClientAuth(sasl=(USER, "wrong"), secure_acls=True),
    )
    with pytest.raises(ZkAuthFailedError, match="as user 'kafka'") as e:
        zk.start()
    assert "wrong" not in str(e.value)


def test_configs_zookeeper_logs_in_as_kafka_configs_does(
    sasl_zk: LocalZooKeeper, chroot: str, admin: KazooClient, tmp_path: Path
) -> None:
    """`minikafka configs --zookeeper` takes the JAAS file's Client section named in
    $KAFKA_OPTS, as kafka-configs.sh's JVM does, and creates the user's znode with Kafka's
    ACLs (its KafkaZkClient is secure when SASL is on); without the login it is refused."""
    jaas = tmp_path / "client.jaas"
    write_client_jaas(jaas, USER, PASSWORD)
    command = [
        sys.executable, "-m", "minikafka", "configs", "--zookeeper",
        sasl_zk.connect_string + chroot, "--user", "carol", "--alter",
        "--add-config", "SCRAM-SHA-512=[password=carol-secret]",
    ]  # fmt: skip
    env = {**os.environ, "KAFKA_OPTS": f"-Djava.security.auth.login.config={jaas}"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert admin.get_acls(f"{chroot}/config/users/carol")[0] == [OWNER]
    # Anonymous, the same command may not write where the credentials are.
    anonymous = {k: v for k, v in env.items() if k != "KAFKA_OPTS"}
    refused = subprocess.run(command, env=anonymous, capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "NoAuth" in refused.stderr, refused.stderr
