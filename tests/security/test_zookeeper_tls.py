"""Mutual TLS between a broker and ZooKeeper (KIP-515): Debian's ZooKeeper serving TLS on
its secureClientPort (Netty) with client certificates required, and a real broker process
reaching it with Kafka's zookeeper.ssl.* settings, its certificate as its only ZooKeeper
identity, and zookeeper.set.acl=true: its znodes are its certificate subject's
(`x509:CN=broker1,OU=minikafka`) and readable by anyone, and a client without that
certificate writes nothing. A certificate ZooKeeper does not trust gets no session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, Id, Permissions

from minikafka.security.certs import IssuedCertificate, make_ca
from minikafka.zk.auth import ZkTls
from minikafka.zk.client import ZkClient, ZkClientAuth, ZkConnectionError
from minikafka.zk.server import LocalZooKeeper, pick_free_port
from tests.cluster.conftest import wait_until

pytestmark = pytest.mark.timeout(180)

HOSTS = ["127.0.0.1", "localhost"]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, IssuedCertificate]:
    directory = tmp_path_factory.mktemp("certs")
    ca = make_ca(directory)
    issued = {name: ca.issue(directory, name, hosts=HOSTS) for name in ("zookeeper", "broker1")}
    # A certificate from a CA ZooKeeper does not trust.
    other = make_ca(directory / "other", name="other-ca")
    issued["stranger"] = other.issue(directory / "other", "stranger", hosts=HOSTS)
    return issued


@pytest.fixture(scope="module")
def zookeeper(
    tmp_path_factory: pytest.TempPathFactory, certs: dict[str, IssuedCertificate]
) -> Iterator[LocalZooKeeper]:
    server = certs["zookeeper"]
    zk = LocalZooKeeper(
        tmp_path_factory.mktemp("zk-tls"),
        port=0,
        fsync=False,
        tls=(server.keystore, server.truststore),
    )
    zk.start()
    try:
        yield zk
    finally:
        zk.stop()


def tls_kazoo(zk: LocalZooKeeper, cert: IssuedCertificate) -> KazooClient:
    options = ZkTls(str(cert.keystore), None, str(cert.truststore)).kazoo_options()
    return KazooClient(zk.secure_connect_string, **options)


@pytest.fixture
def broker(
    zookeeper: LocalZooKeeper, certs: dict[str, IssuedCertificate], tmp_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    cert = certs["broker1"]
    props = tmp_path / "server.properties"
    props.write_text(
        "broker.id=1\n"
        f"listeners=PLAINTEXT://127.0.0.1:{pick_free_port()}\n"
        f"log.dirs={tmp_path / 'logs'}\n"
        f"zookeeper.connect={zookeeper.secure_connect_string}\n"
        "zookeeper.set.acl=true\n"
        "zookeeper.ssl.client.enable=true\n"
        "zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty\n"
        f"zookeeper.ssl.keystore.location={cert.keystore}\n"
        "zookeeper.ssl.keystore.type=PEM\n"
        f"zookeeper.ssl.truststore.location={cert.truststore}\n"
        "zookeeper.ssl.truststore.type=PEM\n"
        "offsets.topic.replication.factor=1\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_OPTS"}  # no SASL
    log = (tmp_path / "broker.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "minikafka", "broker", "--config", str(props)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_a_broker_on_mutual_tls_owns_its_znodes_by_its_certificate(
    zookeeper: LocalZooKeeper,
    certs: dict[str, IssuedCertificate],
    broker: subprocess.Popen[bytes],
) -> None:
    # Anyone may read outside the sensitive paths, on the plaintext port too.
    anonymous = KazooClient(zookeeper.connect_string)
    anonymous.start(timeout=15)
    try:
        wait_until(
            lambda: broker.poll() is None and anonymous.exists("/brokers/ids/1") is not None,
            timeout=60,
            what="broker 1 registered over TLS",
        )
        assert broker.poll() is None
        as_broker = tls_kazoo(zookeeper, certs["broker1"])
        as_broker.start(timeout=15)
        try:
            owner = ACL(Permissions.ALL, Id("x509", "CN=broker1,OU=minikafka"))
            world_read = ACL(Permissions.READ, Id("world", "anyone"))
            for path in ("/brokers/ids/1", "/brokers/topics", "/controller", "/cluster/id"):
                assert as_broker.get_acls(path)[0] == [owner, world_read], path
            assert as_broker.get_acls("/config/users")[0] == [owner]
        finally:
            as_broker.stop()
            as_broker.close()
        with pytest.raises(NoAuthError):
            anonymous.create("/brokers/topics/forged", b"{}")
        with pytest.raises(NoAuthError):
            anonymous.delete("/brokers/ids/1")
        with pytest.raises(NoAuthError):
            anonymous.get_children("/config/users")
    finally:
        anonymous.stop()
        anonymous.close()


def test_a_certificate_zookeeper_does_not_trust_gets_no_session(
    zookeeper: LocalZooKeeper, certs: dict[str, IssuedCertificate]
) -> None:
    stranger = certs["stranger"]
    client = ZkClient(
        zookeeper.secure_connect_string,
        connection_timeout_ms=3000,
        auth=ZkClientAuth(
            tls=ZkTls(str(stranger.keystore), None, str(certs["broker1"].truststore))
        ),
    )
    with pytest.raises(ZkConnectionError):
        client.start()
