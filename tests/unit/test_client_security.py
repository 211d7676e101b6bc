"""Kafka's `--command-config` client properties in librdkafka's terms (client_security.py):
every translation, every refusal (naming the property, never a password), the process's
default under each client's own properties, the `--command-config` option of every client
command, and a PEM keystore file serving librdkafka as certificate and key, checked with a
real TLS handshake."""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypothesis import given
from hypothesis import strategies as st

from minikafka.cli import client_options
from minikafka.cli.client_options import bootstrap_server_option
from minikafka.cli.main import cli
from minikafka.client.client_security import (
    ClientSecurityError,
    client_security,
    command_config,
    kafka_names_note,
    librdkafka_properties,
    redact,
    set_client_security,
)
from minikafka.client.librdkafka import ClientConfigError, check_shared_config, client_config

SCRAM_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="alice" password="alice-secret";'
)
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="bob" password="bob-secret";'
)
SECRETS = ("alice-secret", "bob-secret", "key-secret", "store-secret")


@pytest.fixture(autouse=True)
def no_default_left_behind() -> Iterator[None]:
    """The default is the process's: a test that sets it must not leave it to the next."""
    yield
    set_client_security({})


# --- translations ----------------------------------------------------------------------------


def test_sasl_ssl_with_scram_and_pem_stores_as_kafka_writes_it() -> None:
    props = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": SCRAM_JAAS,
        "ssl.truststore.location": "/certs/ca.pem",
        "ssl.truststore.type": "PEM",
        "ssl.keystore.location": "/certs/client.pem",
        "ssl.keystore.type": "PEM",
        "ssl.key.password": "key-secret",
        "ssl.endpoint.identification.algorithm": "",
        "client.id": "tools",
        "request.timeout.ms": "20000",
    }
    assert librdkafka_properties(props) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
        "ssl.ca.location": "/certs/ca.pem",
        # One PEM file: the key and the certificate chain (Kafka 2.7+'s PEM keystore).
        "ssl.certificate.location": "/certs/client.pem",
        "ssl.key.location": "/certs/client.pem",
        "ssl.key.password": "key-secret",
        "ssl.endpoint.identification.algorithm": "none",
        "client.id": "tools",
        "request.timeout.ms": "20000",
    }


def test_sasl_plaintext_with_plain() -> None:
    props = {
        "security.protocol": "sasl_plaintext",  # Kafka ignores the case
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": PLAIN_JAAS,
    }
    assert librdkafka_properties(props) == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "bob",
        "sasl.password": "bob-secret",
    }


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_librdkafkas_own_names_pass_through(mechanism: str) -> None:
    props = {
        "bootstrap.servers": "b1:9093,b2:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": mechanism,
        "sasl.username": "bob",
        "sasl.password": "bob-secret",
        "ssl.ca.location": "/certs/ca.pem",
        "ssl.certificate.location": "/certs/cert.pem",
        "ssl.key.location": "/certs/key.pem",
        "ssl.key.password": "key-secret",
        "ssl.endpoint.identification.algorithm": "none",
        "socket.keepalive.enable": "true",
    }
    assert librdkafka_properties(props) == props


@pytest.mark.parametrize(
    ("given", "expected"), [("", "none"), ("https", "https"), ("HTTPS", "https"), ("none", "none")]
)
def test_endpoint_identification(given: str, expected: str) -> None:
    props = {"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": given}
    assert librdkafka_properties(props)["ssl.endpoint.identification.algorithm"] == expected


def test_plaintext_and_nothing_at_all() -> None:
    assert librdkafka_properties({}) == {}
    assert librdkafka_properties({"security.protocol": "plaintext", "client.id": "x"}) == {
        "security.protocol": "PLAINTEXT",
        "client.id": "x",
    }


def test_a_file_as_kafkas_tools_read_it(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text(
        "# kafka-configs.sh --command-config client.properties\n"
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism: SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="alice" \\\n'
        '    password="alice-secret";\n'
        "! a comment too\n"
        "ssl.truststore.type=PEM\n"
        "ssl.truststore.location=/certs/ca.pem\n"
    )
    assert command_config(path) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
        "ssl.ca.location": "/certs/ca.pem",
    }


def test_a_file_that_is_not_text(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_bytes(b"security.protocol=\xff\xfe\n")
    with pytest.raises(ClientSecurityError, match=r"client\.properties: not a UTF-8 text file"):
        command_config(path)


# --- refusals --------------------------------------------------------------------------------

SSL = {"security.protocol": "SSL"}
SASL = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256"}

REFUSED: list[tuple[dict[str, str], str]] = [
    ({"security.protocol": "TLS"}, "security.protocol 'TLS' is not one of"),
    # Stores librdkafka cannot read: JKS is Kafka's default type.
    ({**SSL, "ssl.truststore.location": "/t.jks"}, "ssl.truststore.location: a JKS truststore"),
    (
        {**SSL, "ssl.truststore.location": "/t.p12", "ssl.truststore.type": "PKCS12"},
        "ssl.truststore.location: a PKCS12 truststore",
    ),
    ({**SSL, "ssl.keystore.location": "/k.jks"}, "ssl.keystore.location: a JKS keystore"),
    (
        {
            **SSL,
            "ssl.keystore.location": "/k.p12",
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.password": "store-secret",
        },
        "ssl.keystore.location: a PKCS12 keystore",
    ),
    (
        {
            **SSL,
            "ssl.truststore.location": "/ca.pem",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.password": "store-secret",
        },
        "ssl.truststore.password: a PEM truststore has no password",
    ),
    (
        {
            **SSL,
            "ssl.keystore.location": "/k.pem",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.password": "store-secret",
            "ssl.key.password": "key-secret",
        },
        "ssl.keystore.password: a PEM keystore has no password",
    ),
    ({**SSL, "ssl.keystore.type": "PEM"}, "ssl.keystore.type without ssl.keystore.location"),
    (
        {**SSL, "ssl.truststore.password": "store-secret"},
        "ssl.truststore.password without ssl.truststore.location",
    ),
    ({**SSL, "ssl.key.password": "key-secret"}, "ssl.key.password is the password"),
    (
        {
            **SSL,
            "ssl.truststore.location": "/ca.pem",
            "ssl.truststore.type": "PEM",
            "ssl.ca.location": "/other.pem",
        },
        "ssl.truststore.location and ssl.ca.location",
    ),
    (
        {
            **SSL,
            "ssl.keystore.location": "/k.pem",
            "ssl.keystore.type": "PEM",
            "ssl.key.location": "/key.pem",
        },
        "ssl.keystore.location and ssl.key.location",
    ),
    (
        {**SSL, "ssl.endpoint.identification.algorithm": "ldap"},
        "ssl.endpoint.identification.algorithm 'ldap'",
    ),
    (
        {**SSL, "ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"},
        "ssl.cipher.suites holds Java's cipher suite names",
    ),
    # Java-only settings.
    ({**SSL, "ssl.protocol": "TLSv1.3"}, "ssl.protocol is a setting of Kafka's Java clients"),
    ({**SSL, "ssl.enabled.protocols": "TLSv1.2,TLSv1.3"}, "ssl.enabled.protocols is a setting"),
    ({**SSL, "ssl.keymanager.algorithm": "SunX509"}, "ssl.keymanager.algorithm is a setting"),
    ({**SSL, "ssl.keystore.key": "-----BEGIN"}, "ssl.keystore.key is a setting"),
    ({**SSL, "ssl.truststore.certificates": "-----BEGIN"}, "ssl.truststore.certificates is"),
    (
        {**SASL, "sasl.jaas.config": SCRAM_JAAS, "sasl.login.callback.handler.class": "a.B"},
        "sasl.login.callback.handler.class is a setting",
    ),
    ({"security.providers": "a.B"}, "security.providers is a setting"),
    # SASL that would go unused, or cannot work.
    (
        {"sasl.mechanism": "PLAIN", "sasl.jaas.config": PLAIN_JAAS},
        "sasl.jaas.config is used only with security.protocol SASL_PLAINTEXT or SASL_SSL, and "
        "this one is PLAINTEXT",
    ),
    (
        {"security.protocol": "SASL_SSL", "sasl.jaas.config": SCRAM_JAAS},
        "SASL_SSL needs sasl.mechanism",
    ),
    (
        {"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"},
        "sasl.mechanism 'GSSAPI' is not one minikafka's brokers offer",
    ),
    (
        {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"},
        "sasl.mechanism 'OAUTHBEARER'",
    ),
    (SASL, "needs the user's credentials"),
    ({**SASL, "sasl.username": "alice"}, "needs the user's credentials"),
    ({**SASL, "sasl.jaas.config": PLAIN_JAAS}, "needs login module"),
    (
        {**SASL, "sasl.jaas.config": SCRAM_JAAS, "sasl.password": "bob-secret"},
        "sasl.jaas.config and sasl.password both give credentials",
    ),
    (
        {
            **SASL,
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
            'required username="alice";',
        },
        "needs both username and password",
    ),
    (
        {
            **SASL,
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
            'required username="alice" password="alice-secret" tokenauth="true";',
        },
        "option 'tokenauth' has no librdkafka counterpart",
    ),
    (
        {
            **SASL,
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
            'required username="alice" password="alice-secret"',
        },
        "sasl.jaas.config: JAAS config entry not terminated by semi-colon",
    ),
    # TLS settings that would go unused.
    (
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": PLAIN_JAAS,
            "ssl.truststore.location": "/ca.pem",
            "ssl.truststore.type": "PEM",
        },
        "ssl.truststore.location is used only with security.protocol SSL or SASL_SSL, and this "
        "one is SASL_PLAINTEXT",
    ),
    ({"ssl.ca.location": "/ca.pem"}, "ssl.ca.location is used only with security.protocol SSL"),
]


@pytest.mark.parametrize(("props", "message"), REFUSED)
def test_refused_with_the_property_named_and_no_secret(props: dict[str, str], message: str) -> None:
    with pytest.raises(ClientSecurityError) as e:
        librdkafka_properties(props)
    assert message in str(e.value)
    for secret in SECRETS:
        assert secret not in str(e.value)


def test_a_refusal_from_a_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "admin.properties"
    path.write_text("security.protocol=SSL\nssl.keystore.location=/k.jks\n")
    with pytest.raises(ClientSecurityError, match=r"admin\.properties: ssl\.keystore\.location"):
        command_config(path)


# Marked, so that a password is never mistaken for words a message has anyway.
_PASSWORD = st.text(st.characters(codec="utf-8", exclude_characters='"\\\n\r'), max_size=30).map(
    lambda text: f"pw<{text}>"
)


@given(password=_PASSWORD, refused=st.sampled_from(REFUSED))
def test_no_message_holds_a_password_of_the_file(
    password: str, refused: tuple[dict[str, str], str]
) -> None:
    """Whatever the password and whichever refusal, the message does not repeat it."""
    props, _ = refused
    props = {
        k: v.replace("alice-secret", password).replace("key-secret", password)
        for k, v in props.items()
    }
    with pytest.raises(ClientSecurityError) as e:
        librdkafka_properties(props)
    assert password not in str(e.value)


def test_redact_and_kafka_names_note() -> None:
    props = {"sasl.password": "p4ss", "ssl.key.password": "k3y", "client.id": "p4ss-client"}
    assert redact("x p4ss y k3y", props) == "x [hidden] y [hidden]"
    assert kafka_names_note("ssl.ca.location failed: BIO lib") == (
        "ssl.ca.location failed: BIO lib (in Kafka's names: ssl.ca.location is "
        "ssl.truststore.location)"
    )
    assert kafka_names_note("timed out") == "timed out"


# --- the process's default -------------------------------------------------------------------


def test_client_config_puts_the_default_under_each_clients_own_properties() -> None:
    assert client_config("b:9092", {"acks": "all"}) == {
        "bootstrap.servers": "b:9092",
        "socket.nagle.disable": True,
        "acks": "all",
    }
    set_client_security(
        {
            "bootstrap.servers": "elsewhere:9093",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "socket.nagle.disable": "false",
            "client.id": "from-the-file",
        }
    )
    assert client_config("b:9092", {"client.id": "mine"}) == {
        "bootstrap.servers": "b:9092",  # the servers asked for win
        "socket.nagle.disable": "false",  # the settings win over the built-in default
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "client.id": "mine",  # the client's own win over the settings
    }
    copy = client_security()
    copy["security.protocol"] = "PLAINTEXT"
    assert client_security()["security.protocol"] == "SASL_SSL"  # a copy
    set_client_security({})
    assert client_config("b:9092", {}) == {
        "bootstrap.servers": "b:9092",
        "socket.nagle.disable": True,
    }


# --- --command-config ------------------------------------------------------------------------


@click.command()
@bootstrap_server_option
def show(bootstrap_server: str) -> None:
    """A client command that prints what its clients would get."""
    click.echo(bootstrap_server)
    click.echo(sorted(client_security().items()))


def _sasl_file(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "client.properties"
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
        f"sasl.jaas.config={SCRAM_JAAS}\n{extra}"
    )
    return path


def test_the_option_sets_the_default_and_may_name_the_servers(tmp_path: Path) -> None:
    path = _sasl_file(tmp_path, "bootstrap.servers=b1:9095,b2:9095\n")
    result = CliRunner().invoke(show, ["--command-config", str(path)])
    assert result.exit_code == 0, result.output
    servers, settings = result.stdout.splitlines()
    assert servers == "b1:9095,b2:9095"
    assert "('sasl.username', 'alice')" in settings and "SASL_PLAINTEXT" in settings
    # --bootstrap-server wins over the file's, wherever it is on the line.
    result = CliRunner().invoke(show, ["--bootstrap-server", "b3:1", "--command-config", str(path)])
    assert result.stdout.splitlines()[0] == "b3:1"
    # The next command without the option starts without settings.
    result = CliRunner().invoke(show, ["--bootstrap-server", "b3:1"])
    assert result.stdout.splitlines() == ["b3:1", "[]"]


def test_a_refused_file_is_a_usage_error_without_its_passwords(tmp_path: Path) -> None:
    path = _sasl_file(tmp_path, "ssl.truststore.location=/ca.jks\n")
    result = CliRunner().invoke(show, ["--bootstrap-server", "b:1", "--command-config", str(path)])
    assert result.exit_code == 2
    assert "Invalid value for '--command-config'" in result.stderr
    assert "ssl.truststore.location is used only with security.protocol SSL" in result.stderr
    assert "alice-secret" not in result.output
    assert client_security() == {}


def test_librdkafka_checks_the_names_and_values(tmp_path: Path) -> None:
    path = _sasl_file(tmp_path, "receive.buffer.bytes=65536\n")  # Java's name
    result = CliRunner().invoke(show, ["--bootstrap-server", "b:1", "--command-config", str(path)])
    assert result.exit_code == 2
    assert 'librdkafka refuses it: No such configuration property: "receive.buffer.bytes"' in (
        " ".join(result.stderr.split())
    )
    # A property of only producers or only consumers is for the clients of that kind.
    path = _sasl_file(tmp_path, "auto.offset.reset=earliest\nacks=all\n")
    result = CliRunner().invoke(show, ["--bootstrap-server", "b:1", "--command-config", str(path)])
    assert result.exit_code == 0, result.output


def test_a_missing_file_is_clicks_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        show, ["--bootstrap-server", "b:1", "--command-config", str(tmp_path / "none")]
    )
    assert result.exit_code == 2 and "does not exist" in result.stderr


class _SecuredLocalCluster:
    bootstrap_servers = "127.0.0.1:19092"

    def client_config(self) -> dict[str, str]:
        return {
            "bootstrap.servers": "127.0.0.1:19092",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": "admin-secret",
        }


def test_the_running_local_clusters_client_settings_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_options, "_running_local_cluster", _SecuredLocalCluster)
    result = CliRunner().invoke(show, [])
    assert result.stdout.splitlines()[0] == "127.0.0.1:19092"
    assert "('sasl.username', 'admin')" in result.stdout
    # --command-config's settings are the command's, not the local cluster's.
    result = CliRunner().invoke(show, ["--command-config", str(_sasl_file(tmp_path))])
    assert result.stdout.splitlines()[0] == "127.0.0.1:19092"
    assert "('sasl.username', 'alice')" in result.stdout
    # A cluster asked for by address is not assumed to be the local one.
    result = CliRunner().invoke(show, ["--bootstrap-server", "127.0.0.1:19092"])
    assert result.stdout.splitlines()[1] == "[]"


def test_a_plaintext_local_cluster_without_client_config(monkeypatch: pytest.MonkeyPatch) -> None:
    class Plain:
        bootstrap_servers = "127.0.0.1:9092"

    monkeypatch.setattr(client_options, "_running_local_cluster", Plain)
    result = CliRunner().invoke(show, [])
    assert result.stdout.splitlines() == ["127.0.0.1:9092", "[]"]


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))
        else:
            yield " ".join((*prefix, name)), command


# Every command that makes Kafka clients: --bootstrap-server and --command-config.
CLIENT_COMMANDS = [
    "topics",
    "produce",
    "consume",
    "consumer-groups",
    "configs",
    "delete-records",
    "log-dirs",
    "reassign-partitions",
    "acls",
    "replicas",
    "chaos",
    "perf produce",
    "perf consume",
    "perf e2e",
    "pipeline generate",
    "pipeline run",
    "pipeline demo",
]
# Client commands whose Kafka tool names the same file --admin.config
# (kafka-leader-election.sh).
ADMIN_CONFIG_COMMANDS = ["leader-election"]


def test_every_client_command_takes_command_config() -> None:
    commands = dict(_commands(cli))
    assert set(CLIENT_COMMANDS + ADMIN_CONFIG_COMMANDS) <= set(commands)
    for name, command in commands.items():
        options = {o for p in command.params for o in p.opts}
        client = name in CLIENT_COMMANDS + ADMIN_CONFIG_COMMANDS
        assert ("--bootstrap-server" in options) == client, name
        assert ("--command-config" in options) == (name in CLIENT_COMMANDS), name
        assert ("--admin.config" in options) == (name in ADMIN_CONFIG_COMMANDS), name


# --- a PEM keystore for librdkafka, for real -------------------------------------------------


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


class Certs:
    """A throwaway CA, a server certificate for 127.0.0.1 and a client keystore: the client's
    encrypted key and certificate chain in one PEM file, as Kafka 2.7+ takes one."""

    def __init__(self, where: Path) -> None:
        now = dt.datetime.now(dt.UTC)
        self.ca_key = ec.generate_private_key(ec.SECP256R1())
        self.ca_cert = (
            x509.CertificateBuilder()
            .subject_name(_name("minikafka test CA"))
            .issuer_name(_name("minikafka test CA"))
            .public_key(self.ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.ca_key, hashes.SHA256())
        )
        self.ca = where / "ca.pem"
        self.ca.write_bytes(self._pem(self.ca_cert))
        self.server = where / "server.pem"
        self.server.write_bytes(self._leaf("server", None))
        self.keystore = where / "client.pem"
        self.keystore.write_bytes(self._leaf("tools-client", b"key-secret"))

    @staticmethod
    def _pem(cert: x509.Certificate) -> bytes:
        return cert.public_bytes(serialization.Encoding.PEM)

    def _leaf(self, cn: str, password: bytes | None) -> bytes:
        now = dt.datetime.now(dt.UTC)
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(cn))
            .issuer_name(self.ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
            .sign(self.ca_key, hashes.SHA256())
        )
        encryption: serialization.KeySerializationEncryption = (
            serialization.NoEncryption()
            if password is None
            else serialization.BestAvailableEncryption(password)
        )
        key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
        )
        return key_pem + self._pem(cert) + self._pem(self.ca_cert)


@pytest.fixture
def certs(tmp_path: Path) -> Certs:
    return Certs(tmp_path)


def _ssl_props(certs: Certs, key_password: str = "key-secret") -> dict[str, str]:
    return librdkafka_properties(
        {
            "security.protocol": "SSL",
            "ssl.truststore.location": str(certs.ca),
            "ssl.truststore.type": "PEM",
            "ssl.keystore.location": str(certs.keystore),
            "ssl.keystore.type": "PEM",
            "ssl.key.password": key_password,
        }
    )


def test_librdkafka_reads_the_keystore_file_as_certificate_and_key(certs: Certs) -> None:
    props = _ssl_props(certs)
    assert props["ssl.certificate.location"] == props["ssl.key.location"] == str(certs.keystore)
    check_shared_config(props)  # loads the certificate chain and decrypts the key
    with pytest.raises(ClientConfigError, match=r"ssl\.key\.location failed") as e:
        check_shared_config(_ssl_props(certs, "not-the-password"))
    assert "not-the-password" not in str(e.value)


def test_a_tls_handshake_presents_the_keystores_certificate(certs: Certs) -> None:
    """A TLS server that wants a client certificate signed by the CA gets the keystore's."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs.server)
    context.load_verify_locations(certs.ca)
    context.verify_mode = ssl.CERT_REQUIRED
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    peers: list[Any] = []

    def accept() -> None:
        conn, _ = server.accept()
        try:
            with context.wrap_socket(conn, server_side=True) as tls:
                peers.append(tls.getpeercert())
        except (OSError, ssl.SSLError) as e:
            peers.append(e)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**client_config(f"127.0.0.1:{port}", _ssl_props(certs)), "log_level": 0})
    with pytest.raises(KafkaException):  # the server speaks TLS, not Kafka
        admin.list_topics(timeout=3)
    thread.join(10)
    server.close()
    assert len(peers) == 1 and isinstance(peers[0], dict), peers
    assert peers[0]["subject"] == ((("commonName", "tools-client"),),)
