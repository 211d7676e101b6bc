"""Security between a broker and ZooKeeper, the pure parts: the JAAS file's Client section
as Kafka's ZooKeeper client reads it (config/zk_client.py), the ACLs of each znode under
`zookeeper.set.acl` (Kafka's ZkData.defaultAcls, zk/auth.py), the ZooKeeper TLS settings
refused by name, and what a secured local cluster gives its brokers."""

from __future__ import annotations

from pathlib import Path

import pytest
from kazoo.security import ACL, Id, Permissions

from minikafka.cluster.security import ZK_USER, ClusterSecurity
from minikafka.config.broker import BrokerConfig
from minikafka.config.zk_client import (
    jvm_system_properties,
    load_zk_client_auth,
    zk_client_auth,
    zk_tls,
)
from minikafka.protocol.errors import InvalidConfigError
from minikafka.security.jaas import JaasConfigError, parse_jaas_file
from minikafka.zk.auth import ZkClientAuth, ZkTls, default_acls

DIGEST = "org.apache.zookeeper.server.auth.DigestLoginModule"
JAAS = f"""
// Kafka's docs' example: the broker's ZooKeeper login next to another section.
Server {{
  {DIGEST} required user_kafka="kafka-secret";
}};
Client {{
  {DIGEST} required
  username="kafka"
  password="kafka-secret";
}};
Other {{ {DIGEST} required username="other" password="other-secret"; }};
"""


def auth(
    jaas: str | None,
    set_acl: bool = False,
    tls_props: dict[str, str] | None = None,
    **system_props: str,
) -> ZkClientAuth:
    props = {k.replace("_", "."): v for k, v in system_props.items()}
    if jaas is not None:
        props["java.security.auth.login.config"] = "/etc/kafka/jaas.conf"

    def read(path: str) -> str:
        assert path == "/etc/kafka/jaas.conf"
        assert jaas is not None
        return jaas

    return zk_client_auth(set_acl, props, read, tls_props)


# --- the JAAS file ------------------------------------------------------------------------


def test_a_jaas_file_is_read_section_by_section() -> None:
    sections = parse_jaas_file(JAAS)
    assert list(sections) == ["Server", "Client", "Other"]
    (client,) = sections["Client"]
    assert client.login_module == DIGEST
    assert client.options == {"username": "kafka", "password": "kafka-secret"}


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (f"Client {{ {DIGEST} required; ", "has no closing"),
        (f"Client {DIGEST} required;", "expected '{'"),
        (f"Client {{ {DIGEST} required; }}", "expected ';'"),
        (f"Client {{ {DIGEST} required; }}; Client {{ {DIGEST} required; }};", "twice"),
        (f"Client {{ {DIGEST} maybe; }};", "control flag"),
    ],
)
def test_a_malformed_jaas_file_is_refused(text: str, error: str) -> None:
    with pytest.raises(JaasConfigError, match=error):
        parse_jaas_file(text)


def test_kafka_opts_system_properties() -> None:
    assert jvm_system_properties(
        "-Xmx1G -Djava.security.auth.login.config='/etc/kafka/my jaas.conf' "
        "-Dzookeeper.sasl.client=true -Dflag -D"
    ) == {
        "java.security.auth.login.config": "/etc/kafka/my jaas.conf",
        "zookeeper.sasl.client": "true",
        "flag": "",
    }
    with pytest.raises(InvalidConfigError, match="KAFKA_OPTS"):
        jvm_system_properties("-Dx='unclosed")


# --- the broker's ZooKeeper identity ------------------------------------------------------


def test_the_client_section_gives_the_brokers_sasl_identity() -> None:
    got = auth(JAAS, set_acl=True)
    assert got == ZkClientAuth(sasl=("kafka", "kafka-secret"), secure_acls=True)
    assert got.sasl_options() == {
        "mechanism": "DIGEST-MD5",
        "username": "kafka",
        "password": "kafka-secret",
    }
    assert "kafka-secret" not in repr(got)


def test_zookeeper_sasl_clientconfig_names_another_section() -> None:
    got = auth(JAAS, zookeeper_sasl_clientconfig="Other")
    assert got.sasl == ("other", "other-secret")


def test_without_a_jaas_file_the_broker_is_anonymous_and_its_znodes_open() -> None:
    assert auth(None) == ZkClientAuth()
    # A JAAS file without the section: no SASL either (Kafka's JaasUtils).
    assert auth(JAAS, zookeeper_sasl_clientconfig="Missing") == ZkClientAuth()


def test_set_acl_without_an_identity_is_refused_with_kafkas_message() -> None:
    with pytest.raises(InvalidConfigError) as e:
        auth(None, set_acl=True)
    assert e.value.message == (
        "zookeeper.set.acl is true, but ZooKeeper client TLS configuration identifying at "
        "least zookeeper.ssl.client.enable, zookeeper.clientCnxnSocket, and "
        "zookeeper.ssl.keystore.location was not present and the verification of the JAAS "
        "login file failed [java.security.auth.login.config=null, "
        "zookeeper.sasl.client=default:true, zookeeper.sasl.clientconfig=default:Client]"
    )


def test_a_client_section_with_sasl_turned_off_is_exploitable() -> None:
    with pytest.raises(InvalidConfigError, match="Exploitable ZooKeeper configuration"):
        auth(JAAS, zookeeper_sasl_client="false")
    # Without the section, turning SASL off is just no SASL.
    assert auth(None, zookeeper_sasl_client="false") == ZkClientAuth()


@pytest.mark.parametrize(
    ("client", "error"),
    [
        (
            "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;",
            "uses com.sun.security.auth.module.Krb5LoginModule; minikafka's ZooKeeper client "
            "does SASL DIGEST-MD5 only",
        ),
        (f'{DIGEST} required username="kafka";', 'must hold username="..." password="..."'),
        (
            f'{DIGEST} required username="a" password="b"; {DIGEST} required;',
            "has 2 login modules",
        ),
        (f'{DIGEST} required username="kafka" password="${{pw}}";', "expansion"),
    ],
)
def test_a_client_section_minikafka_cannot_log_in_with_is_refused(client: str, error: str) -> None:
    with pytest.raises(InvalidConfigError, match="Client") as e:
        auth(f"Client {{ {client} }};")
    assert error in e.value.message
    assert "kafka-secret" not in e.value.message


def test_a_kafka_server_section_would_be_ignored_so_it_is_refused() -> None:
    jaas = JAAS + (
        "KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required; };"
    )
    with pytest.raises(InvalidConfigError, match="KafkaServer section"):
        auth(jaas)


def test_other_zookeeper_system_properties_are_refused_by_name() -> None:
    with pytest.raises(InvalidConfigError, match=r"-Dzookeeper\.client\.secure"):
        auth(JAAS, zookeeper_client_secure="true")


def test_an_unreadable_jaas_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.conf"
    with pytest.raises(InvalidConfigError, match="Zookeeper JAAS login context") as e:
        load_zk_client_auth(False, f"-Djava.security.auth.login.config={missing}")
    assert str(missing) in e.value.message


# --- the ACLs of each znode ---------------------------------------------------------------

CREATOR_ALL = ACL(Permissions.ALL, Id("auth", ""))
WORLD_READ = ACL(Permissions.READ, Id("world", "anyone"))
OPEN = ACL(Permissions.ALL, Id("world", "anyone"))


@pytest.mark.parametrize(
    "path",
    [
        "/brokers/topics/orders/partitions/0/state",
        "/brokers/ids/1",
        "/controller",
        "/config",
        "/config/topics/orders",
        "/config/changes/config_change_0000000001",
        "/kafka-acl/Topic/orders",
        "/admin/delete_topics/orders",
        "/minikafka",  # a chroot
    ],
)
def test_znodes_are_the_creators_and_readable_by_anyone(path: str) -> None:
    assert default_acls(True, path) == [CREATOR_ALL, WORLD_READ]


@pytest.mark.parametrize(
    "path",
    [
        "/config/users",
        "/config/users/alice",
        "/config/brokers",
        "/config/brokers/<default>",
        "/delegation_token",
        "/delegation_token/tokens/t1",
    ],
)
def test_sensitive_znodes_give_the_world_nothing(path: str) -> None:
    assert default_acls(True, path) == [CREATOR_ALL]


def test_without_set_acl_or_under_consumers_znodes_are_open() -> None:
    assert default_acls(False, "/config/users/alice") == [OPEN]
    # Kafka's old consumers write there themselves.
    assert default_acls(True, "/consumers") == [OPEN]


# --- broker settings ----------------------------------------------------------------------


def test_zookeeper_set_acl_is_a_broker_setting() -> None:
    assert not BrokerConfig.from_properties({"broker.id": "1"}).zookeeper_set_acl
    cfg = BrokerConfig.from_properties({"broker.id": "1", "zookeeper.set.acl": "true"})
    assert cfg.zookeeper_set_acl


NETTY = "org.apache.zookeeper.ClientCnxnSocketNetty"
TLS = {
    "zookeeper.ssl.client.enable": "true",
    "zookeeper.clientCnxnSocket": NETTY,
    "zookeeper.ssl.keystore.location": "/etc/kafka/broker1.keystore.pem",
    "zookeeper.ssl.keystore.password": "key-secret",
    "zookeeper.ssl.truststore.location": "/etc/kafka/ca.pem",
    "zookeeper.ssl.truststore.type": "PEM",
}


def test_zookeeper_tls_settings_as_kafkas() -> None:
    cfg = BrokerConfig.from_properties({"broker.id": "1", **TLS})
    tls = cfg.zookeeper_tls()
    assert tls == ZkTls(
        "/etc/kafka/broker1.keystore.pem", "key-secret", "/etc/kafka/ca.pem", check_hostname=True
    )
    assert "key-secret" not in repr(cfg) + repr(tls)
    assert tls.kazoo_options() == {
        "use_ssl": True,
        "verify_certs": True,
        "check_hostname": True,
        "ca": "/etc/kafka/ca.pem",
        "certfile": "/etc/kafka/broker1.keystore.pem",
        "keyfile": "/etc/kafka/broker1.keystore.pem",
        "keyfile_password": "key-secret",
    }
    no_check = {**TLS, "zookeeper.ssl.endpoint.identification.algorithm": ""}
    assert not zk_tls(no_check).check_hostname  # type: ignore[union-attr]
    # Never described: the keystore password is among them.
    assert BrokerConfig().zookeeper_tls() is None


def test_a_client_certificate_is_an_identity_for_set_acl() -> None:
    got = auth(None, set_acl=True, tls_props=TLS)
    assert got.sasl is None and got.tls is not None and got.identified and got.secure_acls
    # TLS without a client certificate identifies nobody.
    without_cert = {k: v for k, v in TLS.items() if "keystore" not in k}
    with pytest.raises(InvalidConfigError, match=r"zookeeper\.set\.acl is true"):
        auth(None, set_acl=True, tls_props=without_cert)


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"zookeeper.clientCnxnSocket": None}, "needs zookeeper.clientCnxnSocket="),
        ({"zookeeper.ssl.keystore.type": "JKS"}, "zookeeper.ssl.keystore.type=JKS: "),
        ({"zookeeper.ssl.truststore.type": "PKCS12"}, "PEM stores only"),
        (
            {"zookeeper.ssl.truststore.type": None, "zookeeper.ssl.truststore.location": "/ts.jks"},
            "does not end in .pem",
        ),
        ({"zookeeper.ssl.truststore.password": "x"}, "a PEM truststore has no password"),
        ({"zookeeper.ssl.protocol": "TLSv1.3"}, "zookeeper.ssl.protocol is not supported"),
        ({"zookeeper.ssl.enabled.protocols": "TLSv1.2"}, "takes no protocol setting"),
        ({"zookeeper.ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, "no cipher suites"),
        ({"zookeeper.ssl.crl.enable": "true"}, "zookeeper.ssl.crl.enable=true is not supported"),
        ({"zookeeper.ssl.ocsp.enable": "true"}, "checks no revocation"),
        ({"zookeeper.ssl.endpoint.identification.algorithm": "LDAPS"}, "HTTPS"),
        ({"zookeeper.ssl.keystore.typo": "PEM"}, "unknown broker property"),
        ({"zookeeper.ssl.client.enable": "false"}, "set with zookeeper.ssl.client.enable=true"),
    ],
)
def test_zookeeper_tls_settings_minikafka_cannot_honour_are_refused_by_name(
    changes: dict[str, str | None], error: str
) -> None:
    props = {**TLS, **changes}
    with pytest.raises(InvalidConfigError) as e:
        BrokerConfig.from_properties(
            {"broker.id": "1", **{k: v for k, v in props.items() if v is not None}}
        )
    assert error in e.value.message
    assert "key-secret" not in e.value.message


def test_zookeeper_tls_turned_off_is_plaintext() -> None:
    for props in (
        {},
        {"zookeeper.ssl.client.enable": "false", "zookeeper.ssl.crl.enable": "false"},
    ):
        assert BrokerConfig.from_properties({"broker.id": "1", **props}).zookeeper_tls() is None


# --- a secured local cluster --------------------------------------------------------------


@pytest.mark.parametrize("mode", ["ssl", "sasl_ssl", "sasl_plaintext"])
def test_a_secured_cluster_gives_its_brokers_a_zookeeper_login_and_acls(
    tmp_path: Path, mode: str
) -> None:
    security = ClusterSecurity(tmp_path, mode, "127.0.0.1")  # type: ignore[arg-type]
    security.prepare([1, 2])
    props = security.broker_properties(1, "127.0.0.1", 19092, [1, 2])
    assert props["zookeeper.set.acl"] == "true"
    config = BrokerConfig.from_properties({"broker.id": "1", **props})
    # The brokers read their JAAS file as Kafka's would.
    env = security.broker_environment()
    got = load_zk_client_auth(config.zookeeper_set_acl, env["KAFKA_OPTS"])
    assert got == security.zk_client_auth()
    assert got.sasl is not None and got.sasl[0] == ZK_USER and got.secure_acls
    # ZooKeeper knows that user, with that password; both files are the owner's only.
    (server,) = parse_jaas_file(security.zookeeper_server_jaas_path.read_text())["Server"]
    assert server.options == {f"user_{ZK_USER}": got.sasl[1]}
    for path in (security.zookeeper_server_jaas_path, security.zookeeper_client_jaas_path):
        assert path.stat().st_mode & 0o777 == 0o600
    # A restart keeps the password.
    security.prepare([1, 2])
    assert security.zk_client_auth() == got
