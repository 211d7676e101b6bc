"""ZooKeeper secured as Kafka secures it (`cluster up --security`): the brokers log in to
ZooKeeper with SASL DIGEST-MD5 (their JAAS file's Client section, named in KAFKA_OPTS) and
run with zookeeper.set.acl=true. Real ZooKeeper, real broker processes: the cluster works,
the znodes the brokers made carry Kafka's ACLs, a client without the brokers' identity can
read what Kafka leaves readable and write nothing, and a broker with a wrong ZooKeeper
password fails to start, saying why."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, Id, Permissions

from minikafka.cluster import LocalCluster
from minikafka.cluster.security import ZK_USER
from tests.cluster.conftest import started_cluster
from tests.security.helpers import add_user

pytestmark = pytest.mark.timeout(300)

TOPIC = "secured-zk"
BROKERS_ALL = ACL(Permissions.ALL, Id("sasl", ZK_USER))
WORLD_READ = ACL(Permissions.READ, Id("world", "anyone"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # SASL without TLS: the cheapest secured mode; ZooKeeper is secured alike in all three.
    with started_cluster(
        tmp_path_factory.mktemp("zk-sasl"), brokers=2, security="sasl_plaintext"
    ) as c:
        admin = AdminClient(c.client_config())
        admin.create_topics([NewTopic(TOPIC, 2, 2)])[TOPIC].result(60)
        add_user(c, "alice", "alice-secret")
        yield c


def kazoo(cluster: LocalCluster, login: bool) -> Iterator[KazooClient]:
    options = None
    if login:
        assert cluster.security is not None
        password = cluster.security.zookeeper_password()
        options = {"mechanism": "DIGEST-MD5", "username": ZK_USER, "password": password}
    client = KazooClient(cluster.zookeeper_connect, sasl_options=options)
    client.start(timeout=15)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.fixture
def brokers_zk(cluster: LocalCluster) -> Iterator[KazooClient]:
    """Logged in as the brokers are: may read every ACL."""
    yield from kazoo(cluster, login=True)


@pytest.fixture
def anonymous_zk(cluster: LocalCluster) -> Iterator[KazooClient]:
    yield from kazoo(cluster, login=False)


def test_the_brokers_work_on_a_secured_zookeeper(cluster: LocalCluster) -> None:
    config = cluster.client_config()
    producer = Producer({**config, "acks": "all"})
    for i in range(10):
        producer.produce(TOPIC, f"v{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0
    consumer = Consumer({**config, "group.id": "zk-acl-test", "auto.offset.reset": "earliest"})
    consumer.subscribe([TOPIC])
    got: list[bytes] = []
    try:
        while len(got) < 10:
            msg = consumer.poll(30)
            assert msg is not None, f"only {got} consumed"
            assert msg.error() is None, msg.error()
            got.append(msg.value())
    finally:
        consumer.close()
    assert sorted(got) == sorted(f"v{i}".encode() for i in range(10))


def test_the_brokers_znodes_are_theirs_and_readable_by_anyone(brokers_zk: KazooClient) -> None:
    for path in (
        "/brokers/ids/1",  # ephemeral
        "/brokers/topics",  # a persistent path, made by `cluster up` as the brokers
        f"/brokers/topics/{TOPIC}",
        f"/brokers/topics/{TOPIC}/partitions/0/state",  # the controller's multi
        "/controller",
        "/controller_epoch",
        "/cluster/id",
        "/config",
        f"/config/topics/{TOPIC}",
        "/kafka-acl/Topic",  # the authorizer's
    ):
        acls, _ = brokers_zk.get_acls(path)
        assert acls == [BROKERS_ALL, WORLD_READ], path


def test_sensitive_znodes_are_the_brokers_alone(brokers_zk: KazooClient) -> None:
    # alice's SCRAM credentials, written by the broker that took AlterUserScramCredentials.
    for path in ("/config/users", "/config/users/alice", "/config/users/admin", "/config/brokers"):
        acls, _ = brokers_zk.get_acls(path)
        assert acls == [BROKERS_ALL], path


def test_without_the_brokers_identity_a_client_reads_but_cannot_write(
    anonymous_zk: KazooClient,
) -> None:
    assert TOPIC in anonymous_zk.get_children("/brokers/topics")
    data, _ = anonymous_zk.get(f"/brokers/topics/{TOPIC}")
    assert b'"partitions"' in data
    with pytest.raises(NoAuthError):
        anonymous_zk.create("/brokers/topics/forged", b'{"version":2,"partitions":{"0":[1]}}')
    with pytest.raises(NoAuthError):
        anonymous_zk.set(f"/brokers/topics/{TOPIC}", b"{}")
    with pytest.raises(NoAuthError):
        anonymous_zk.delete(f"/brokers/topics/{TOPIC}/partitions/0/state")
    with pytest.raises(NoAuthError):
        anonymous_zk.create("/admin/delete_topics/" + TOPIC, b"")
    # Nor may it read a SCRAM credential, or even list the users.
    with pytest.raises(NoAuthError):
        anonymous_zk.get("/config/users/alice")
    with pytest.raises(NoAuthError):
        anonymous_zk.get_children("/config/users")


def test_a_broker_with_a_wrong_zookeeper_password_fails_to_start_and_says_why(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    jaas = tmp_path / "jaas.conf"
    jaas.write_text(
        "Client { org.apache.zookeeper.server.auth.DigestLoginModule required "
        f'username="{ZK_USER}" password="not-the-password"; }};\n'
    )
    props = tmp_path / "server.properties"
    props.write_text(
        "broker.id=9\n"
        "listeners=PLAINTEXT://127.0.0.1:0\n"
        f"log.dirs={tmp_path / 'logs'}\n"
        f"zookeeper.connect={cluster.zookeeper_connect}\n"
        "zookeeper.set.acl=true\n"
    )
    env = {**os.environ, "KAFKA_OPTS": f"-Djava.security.auth.login.config={jaas}"}
    # Not a hang: the broker exits once ZooKeeper has refused the login.
    done = subprocess.run(
        [sys.executable, "-m", "minikafka", "broker", "--config", str(props)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert "refused this client's SASL authentication (DIGEST-MD5 as user 'kafka')" in (done.stderr)
    assert "not-the-password" not in done.stderr + done.stdout


def test_a_broker_with_set_acl_and_no_zookeeper_login_is_refused(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_OPTS"}
    done = subprocess.run(
        [
            *(sys.executable, "-m", "minikafka", "broker"),
            *("--override", "broker.id=9", "--override", f"log.dirs={tmp_path}"),
            *("--override", f"zookeeper.connect={cluster.zookeeper_connect}"),
            *("--override", "zookeeper.set.acl=true"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "zookeeper.set.acl is true, but ZooKeeper client TLS configuration" in done.stderr


def test_a_broker_whose_session_expired_logs_in_again_and_reregisters(
    cluster: LocalCluster, brokers_zk: KazooClient
) -> None:
    before = {bid: info.epoch for bid, info in cluster.registrations().items()}
    # `cluster`'s session expiry attaches to the broker's session without logging in.
    cluster.expire_session(2)
    cluster.wait_for_registered([2], 60, newer_than=before)
    acls, _ = brokers_zk.get_acls("/brokers/ids/2")
    assert acls == [BROKERS_ALL, WORLD_READ]
