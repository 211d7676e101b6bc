"""The ssl.* settings (security/tls.py), the throwaway certificates (security/certs.py),
and real TLS handshakes over loopback between the contexts they make."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ssl
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from minikafka.security.certs import (
    CertificateAuthority,
    IssuedCertificate,
    make_ca,
)
from minikafka.security.principal import ANONYMOUS, KafkaPrincipal
from minikafka.security.ssl_principal import ssl_principal
from minikafka.security.tls import (
    SSL_CONFIG_NAMES,
    UNSUPPORTED_SSL_CONFIGS,
    ClientAuth,
    SslConfigError,
    SslSettings,
    client_context,
    peer_principal_name,
    server_context,
    ssl_settings,
)
from minikafka.security.x500 import subject_name

# --- settings ----------------------------------------------------------------------------


def test_defaults() -> None:
    s = ssl_settings({})
    assert s.keystore_type == "PEM" and s.truststore_type == "PEM"
    assert s.client_auth is ClientAuth.NONE
    assert s.enabled_protocols == ("TLSv1.2", "TLSv1.3")
    assert s.protocol == "TLSv1.3"
    assert s.cipher_suites == ()
    assert s.endpoint_identification_algorithm == "https"
    assert s.principal_mapping_rules == "DEFAULT"
    assert not s.has_keystore and not s.has_truststore
    assert s == SslSettings()


def test_listener_override_wins_and_the_prefix_is_lowercase() -> None:
    props = {
        "ssl.client.auth": "requested",
        "listener.name.internal.ssl.client.auth": "required",
        "listener.name.internal.ssl.enabled.protocols": "TLSv1.3",
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/",
    }
    internal = ssl_settings(props, "INTERNAL")
    assert internal.client_auth is ClientAuth.REQUIRED
    assert internal.enabled_protocols == ("TLSv1.3",)
    # Not overridden: the global value.
    assert internal.principal_mapping_rules == "RULE:^CN=([^,]*),.*$/$1/"
    assert ssl_settings(props, "EXTERNAL").client_auth is ClientAuth.REQUESTED
    assert ssl_settings(props).client_auth is ClientAuth.REQUESTED
    assert ssl_settings(props, "internal") == internal


def test_an_uppercase_listener_prefix_is_refused_not_ignored() -> None:
    props = {"listener.name.INTERNAL.ssl.client.auth": "required"}
    with pytest.raises(SslConfigError, match="lowercase") as e:
        ssl_settings(props, "INTERNAL")
    assert e.value.config == "listener.name.INTERNAL.ssl.client.auth"
    # Not an ssl.* key: not this module's.
    ssl_settings({"listener.name.INTERNAL.sasl.enabled.mechanisms": "PLAIN"}, "INTERNAL")


@pytest.mark.parametrize(
    ("config", "value", "why"),
    [
        ("ssl.client.auth", "yes", "none, requested, required"),
        ("ssl.client.auth", "REQUIRED", "none, requested, required"),
        ("ssl.enabled.protocols", "TLSv1.1,TLSv1.2", "TLSv1.1"),
        ("ssl.protocol", "TLSv1.1", "TLSv1.1"),
        ("ssl.keystore.type", "JKS", "use PEM"),
        ("ssl.keystore.type", "BKS", "PEM or PKCS12"),
        ("ssl.keystore.type", "pem", "in capitals"),
        ("ssl.truststore.type", "JKS", "use PEM"),
        ("ssl.truststore.type", "PKCS12", "use PEM"),
        ("ssl.cipher.suites", "TLS_FOO_WITH_BAR", "unknown cipher suite"),
        (
            "ssl.cipher.suites",
            "ECDHE-RSA-AES256-GCM-SHA384",
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        ),
        ("ssl.endpoint.identification.algorithm", "ldaps", "https"),
        ("ssl.principal.mapping.rules", "default", "Invalid rule"),
        ("ssl.truststore.password", "secret", "no password"),
        ("ssl.provider", "SunJSSE", "not supported"),
        ("ssl.engine.factory.class", "com.example.F", "not supported"),
    ],
)
def test_bad_values_name_the_property(config: str, value: str, why: str) -> None:
    with pytest.raises(SslConfigError, match=why) as e:
        ssl_settings({config: value})
    assert e.value.config == config
    assert str(e.value).startswith(config + ":")
    assert isinstance(e.value, ValueError)
    # The same through a listener's override names the key that was read.
    with pytest.raises(SslConfigError) as e:
        ssl_settings({f"listener.name.ssl.{config}": value}, "SSL")
    assert e.value.config == f"listener.name.ssl.{config}"


@pytest.mark.parametrize(
    ("props", "config"),
    [
        # DefaultSslEngineFactory.createKeystore's refusals
        (
            {"ssl.keystore.location": "/k.pem", "ssl.keystore.password": "p"},
            "ssl.keystore.password",
        ),
        ({"ssl.keystore.certificate.chain": "C"}, "ssl.keystore.key"),
        ({"ssl.keystore.key": "K"}, "ssl.keystore.certificate.chain"),
        (
            {
                "ssl.keystore.key": "K",
                "ssl.keystore.certificate.chain": "C",
                "ssl.keystore.location": "/k.pem",
            },
            "ssl.keystore.location",
        ),
        (
            {
                "ssl.keystore.key": "K",
                "ssl.keystore.certificate.chain": "C",
                "ssl.keystore.type": "PKCS12",
            },
            "ssl.keystore.key",
        ),
        ({"ssl.keystore.password": "p"}, "ssl.keystore.password"),
        (
            {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "/k.p12"},
            "ssl.keystore.password",
        ),
        # createTruststore's
        (
            {"ssl.truststore.location": "/ca.pem", "ssl.truststore.certificates": "C"},
            "ssl.truststore.location",
        ),
        # minikafka's own: a setting that would be ignored
        ({"ssl.key.password": "p"}, "ssl.key.password"),
        (
            {
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": "/k.p12",
                "ssl.keystore.password": "a",
                "ssl.key.password": "b",
            },
            "ssl.key.password",
        ),
    ],
)
def test_combinations_kafka_refuses(props: dict[str, str], config: str) -> None:
    with pytest.raises(SslConfigError) as e:
        ssl_settings(props)
    assert e.value.config == config


def test_values_are_trimmed_and_empty_ones_unset() -> None:
    s = ssl_settings(
        {
            "ssl.client.auth": " required ",
            "ssl.keystore.location": " /k.pem ",
            "ssl.keystore.password": "",
            "ssl.enabled.protocols": " TLSv1.3 , ",
            "ssl.endpoint.identification.algorithm": "",
        }
    )
    assert s.client_auth is ClientAuth.REQUIRED
    assert s.keystore_location == "/k.pem" and s.keystore_password is None
    assert s.enabled_protocols == ("TLSv1.3",)
    # Empty: clients do not check the server's host name.
    assert s.endpoint_identification_algorithm == ""
    upper = ssl_settings({"ssl.endpoint.identification.algorithm": "HTTPS"})
    assert upper.endpoint_identification_algorithm == "https"
    # Java's keystore types ignore case (PEM, Kafka's own, does not).
    p12 = ssl_settings(
        {"ssl.keystore.type": "pkcs12", "ssl.keystore.location": "/k", "ssl.keystore.password": "x"}
    )
    assert p12.keystore_type == "PKCS12"


def test_repr_hides_key_material_and_passwords() -> None:
    secrets = {
        "ssl.keystore.key": "-----BEGIN ENCRYPTED PRIVATE KEY-----SECRETKEY",
        "ssl.keystore.certificate.chain": "CHAINTEXT",
        "ssl.key.password": "s3cr3t-key-pw",
        "ssl.truststore.certificates": "TRUSTTEXT",
    }
    for text in (repr(ssl_settings(secrets)), str(ssl_settings(secrets))):
        for value in secrets.values():
            assert value not in text
        assert "[hidden]" in text
    p12 = ssl_settings(
        {
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": "/k",
            "ssl.keystore.password": "pw-123",
        }
    )
    assert "pw-123" not in repr(p12) and "/k" in repr(p12)


def test_config_names() -> None:
    assert len(set(SSL_CONFIG_NAMES)) == len(SSL_CONFIG_NAMES)
    assert all(n.startswith("ssl.") for n in SSL_CONFIG_NAMES)
    assert not set(SSL_CONFIG_NAMES) & set(UNSUPPORTED_SSL_CONFIGS)
    assert {
        "ssl.provider",
        "ssl.keymanager.algorithm",
        "ssl.trustmanager.algorithm",
        "ssl.secure.random.implementation",
        "ssl.engine.factory.class",
    } <= set(UNSUPPORTED_SSL_CONFIGS)


def test_cipher_suites() -> None:
    s = ssl_settings(
        {
            "ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
        }
    )
    assert s.cipher_suites == (
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    )
    # The TLS 1.3 suites cannot be chosen in Python: all of OpenSSL's or none.
    with pytest.raises(SslConfigError, match=r"cannot choose TLS 1\.3") as e:
        ssl_settings({"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"})
    assert e.value.config == "ssl.cipher.suites"
    ssl_settings(
        {
            "ssl.cipher.suites": "TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256,"
            "TLS_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
        }
    )
    # Only TLS 1.3 enabled, only TLS 1.2 suites: no protocol left.
    with pytest.raises(SslConfigError, match="none of the suites") as e:
        ssl_settings(
            {
                "ssl.enabled.protocols": "TLSv1.3",
                "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            }
        )
    assert e.value.config == "ssl.cipher.suites"


# --- certificates --------------------------------------------------------------------------


@dataclass(frozen=True)
class Pki:
    ca: CertificateAuthority
    broker: IssuedCertificate
    client: IssuedCertificate
    encrypted: IssuedCertificate  # key password "key-pw"
    expired: IssuedCertificate
    other_ca: CertificateAuthority
    rogue: IssuedCertificate  # signed by other_ca


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    d = tmp_path_factory.mktemp("pki")
    ca = make_ca(d)
    hosts = ["broker1", "localhost", "127.0.0.1"]
    now = datetime.datetime.now(datetime.UTC)
    other = make_ca(d / "other", "other-ca")
    return Pki(
        ca=ca,
        broker=ca.issue(d, "broker1", hosts=hosts),
        client=ca.issue(d, "client1", hosts=["client1"]),
        encrypted=ca.issue(d, "secret1", hosts=hosts, key_password="key-pw"),
        expired=ca.issue(
            d,
            "old1",
            hosts=hosts,
            not_before=now - datetime.timedelta(days=2),
            not_after=now - datetime.timedelta(days=1),
        ),
        other_ca=other,
        rogue=other.issue(d / "other", "rogue", hosts=hosts),
    )


def test_certificate_files(pki: Pki) -> None:
    d = pki.ca.directory
    assert {p.name for p in d.iterdir() if p.is_file()} >= {
        "ca.pem",
        "ca.key",
        "broker1.pem",
        "broker1.key",
        "broker1.keystore.pem",
    }
    for key_file in (d / "ca.key", pki.broker.key, pki.broker.keystore, pki.encrypted.key):
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600, key_file
    cert = x509.load_pem_x509_certificate(pki.broker.certificate.read_bytes())
    assert cert.subject.rfc4514_string() == "CN=broker1,OU=minikafka"
    assert cert.issuer == pki.ca.certificate.subject
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["broker1", "localhost"]
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(eku) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    # The chain file: the certificate, then the CA's.
    chain = pki.broker.certificate.read_text()
    assert chain.count("BEGIN CERTIFICATE") == 2
    assert chain.endswith(pki.ca.certificate_path.read_text())
    keystore = pki.broker.keystore.read_text()
    assert keystore.startswith("-----BEGIN PRIVATE KEY-----") and chain in keystore
    assert "BEGIN ENCRYPTED PRIVATE KEY" in pki.encrypted.key.read_text()
    assert pki.ca.certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == (
        "minikafka-ca"
    )


def test_the_ca_is_loaded_again_and_not_replaced(pki: Pki) -> None:
    again = CertificateAuthority.load(pki.ca.directory)
    assert again.certificate == pki.ca.certificate and again.name == "minikafka-ca"
    with pytest.raises(FileExistsError):
        make_ca(pki.ca.directory)


@pytest.mark.parametrize("name", ["ca", "../x", "a/b", ".hidden", ""])
def test_certificate_names_are_file_names(pki: Pki, tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError):
        pki.ca.issue(tmp_path, name, hosts=["localhost"])


# --- handshakes ------------------------------------------------------------------------------


def props_for(cert: IssuedCertificate, **extra: str) -> dict[str, str]:
    return {**cert.kafka_properties(), **{k.replace("_", "."): v for k, v in extra.items()}}


def server_settings(cert: IssuedCertificate, **extra: str) -> SslSettings:
    return ssl_settings(props_for(cert, **extra))


def trusting(ca: CertificateAuthority, **extra: str) -> SslSettings:
    return ssl_settings(
        {"ssl.truststore.location": str(ca.certificate_path)}
        | {k.replace("_", "."): v for k, v in extra.items()}
    )


@dataclass
class Exchange:
    seen: list[str | None]  # the client's DN as the server read it
    version: str | None  # as the client negotiated it
    cipher: str | None


async def exchange(
    server: ssl.SSLContext, client: ssl.SSLContext, server_hostname: str | None = "localhost"
) -> Exchange:
    """A server on 127.0.0.1 that answers one line with its peer's DN, and a client
    that sends one and reads the answer: a failed handshake raises (on the client, at
    connect or, with TLS 1.3, when the server's alert arrives at the first read)."""
    seen: list[str | None] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(peer_principal_name(writer.get_extra_info("ssl_object")))
        await reader.readline()
        writer.write(f"{seen[-1]}\n".encode())
        await writer.drain()
        writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server)
    port = srv.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, ssl=client, server_hostname=server_hostname),
            5,
        )
        try:
            writer.write(b"hello\n")
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), 5)
            if not line:
                raise ConnectionResetError("the server closed the connection")
            assert line.decode().strip() == str(seen[-1])
            cipher = writer.get_extra_info("cipher")
            return Exchange(seen, cipher[1], cipher[0])
        finally:
            writer.close()
            with contextlib.suppress(OSError, ssl.SSLError):
                await writer.wait_closed()
    finally:
        srv.close()
        await srv.wait_closed()


HANDSHAKE_FAILED = (ssl.SSLError, ConnectionError, asyncio.IncompleteReadError)


async def test_plain_tls(pki: Pki) -> None:
    result = await exchange(
        server_context(server_settings(pki.broker)), client_context(trusting(pki.ca))
    )
    assert result.seen == [None]
    assert result.version == "TLSv1.3"
    assert ssl_principal(result.seen[0], SslSettings().principal_mapper) == ANONYMOUS


async def test_host_name_is_checked_unless_disabled(pki: Pki) -> None:
    server = server_context(server_settings(pki.broker))
    # The certificate's IP address and DNS names both do.
    await exchange(server, client_context(trusting(pki.ca)), server_hostname=None)
    await exchange(server, client_context(trusting(pki.ca)), server_hostname="broker1")
    with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
        await exchange(server, client_context(trusting(pki.ca)), server_hostname="broker9")
    unchecked = trusting(pki.ca, ssl_endpoint_identification_algorithm="")
    await exchange(server, client_context(unchecked), server_hostname="broker9")


async def test_mutual_tls_gives_the_client_principal(pki: Pki) -> None:
    settings = server_settings(
        pki.broker,
        ssl_client_auth="required",
        ssl_principal_mapping_rules="RULE:^CN=([^,]*),OU=minikafka$/$1/, DEFAULT",
    )
    client = client_context(ssl_settings(props_for(pki.client)))
    result = await exchange(server_context(settings), client)
    assert result.seen == ["CN=client1,OU=minikafka"]
    assert ssl_principal(result.seen[0], settings.principal_mapper) == KafkaPrincipal.user(
        "client1"
    )


async def test_requested_client_auth_lets_a_client_without_certificate_in(pki: Pki) -> None:
    server = server_context(server_settings(pki.broker, ssl_client_auth="requested"))
    assert (await exchange(server, client_context(trusting(pki.ca)))).seen == [None]
    with_cert = await exchange(server, client_context(ssl_settings(props_for(pki.client))))
    assert with_cert.seen == ["CN=client1,OU=minikafka"]


@pytest.mark.parametrize("protocol", ["TLSv1.2", "TLSv1.3"])
async def test_required_client_auth_refuses_a_client_without_certificate(
    pki: Pki, protocol: str
) -> None:
    server = server_context(
        server_settings(pki.broker, ssl_client_auth="required", ssl_enabled_protocols=protocol)
    )
    seen: list[str | None] = []
    with pytest.raises(HANDSHAKE_FAILED):
        seen = (await exchange(server, client_context(trusting(pki.ca)))).seen
    assert seen == []


async def test_a_client_trusting_another_ca_fails(pki: Pki) -> None:
    server = server_context(server_settings(pki.broker))
    with pytest.raises(ssl.SSLCertVerificationError, match="certificate verify failed"):
        await exchange(server, client_context(trusting(pki.other_ca)))


async def test_a_client_certificate_from_another_ca_is_refused(pki: Pki) -> None:
    server = server_context(server_settings(pki.broker, ssl_client_auth="required"))
    rogue = ssl_settings(
        props_for(pki.rogue) | {"ssl.truststore.location": str(pki.ca.certificate_path)}
    )
    with pytest.raises(HANDSHAKE_FAILED):
        await exchange(server, client_context(rogue))


async def test_an_expired_certificate_fails(pki: Pki) -> None:
    with pytest.raises(ssl.SSLCertVerificationError, match="expired"):
        await exchange(
            server_context(server_settings(pki.expired)), client_context(trusting(pki.ca))
        )
    # An expired client certificate too.
    server = server_context(server_settings(pki.broker, ssl_client_auth="required"))
    expired_client = ssl_settings(props_for(pki.expired))
    with pytest.raises(HANDSHAKE_FAILED):
        await exchange(server, client_context(expired_client))


async def test_protocol_versions(pki: Pki) -> None:
    tls12_server = server_context(server_settings(pki.broker, ssl_enabled_protocols="TLSv1.2"))
    tls13_client = client_context(trusting(pki.ca, ssl_enabled_protocols="TLSv1.3"))
    with pytest.raises(HANDSHAKE_FAILED):
        await exchange(tls12_server, tls13_client)
    # The defaults fall back to TLS 1.2 against a TLS 1.2 server.
    result = await exchange(tls12_server, client_context(trusting(pki.ca)))
    assert result.version == "TLSv1.2"
    # ssl.protocol=TLSv1.2 caps what a client offers, even with TLSv1.3 enabled (JSSE).
    default_server = server_context(server_settings(pki.broker))
    capped = client_context(trusting(pki.ca, ssl_protocol="TLSv1.2"))
    assert (await exchange(default_server, capped)).version == "TLSv1.2"
    # A server ignores it: JSSE servers negotiate any enabled version.
    server = server_context(server_settings(pki.broker, ssl_protocol="TLSv1.2"))
    assert (await exchange(server, client_context(trusting(pki.ca)))).version == "TLSv1.3"
    with pytest.raises(SslConfigError) as e:
        client_context(trusting(pki.ca, ssl_protocol="TLSv1.2", ssl_enabled_protocols="TLSv1.3"))
    assert e.value.config == "ssl.protocol"


async def test_cipher_suites_choose_the_suite_and_the_protocol(pki: Pki) -> None:
    # Only a TLS 1.2 suite listed: TLS 1.3 is not used, as in JSSE.
    suite = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
    server = server_context(server_settings(pki.broker, ssl_cipher_suites=suite))
    result = await exchange(server, client_context(trusting(pki.ca)))
    assert (result.version, result.cipher) == ("TLSv1.2", "ECDHE-ECDSA-AES128-GCM-SHA256")
    # No suite in common: the handshake fails.
    other = client_context(
        trusting(pki.ca, ssl_cipher_suites="TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384")
    )
    with pytest.raises(HANDSHAKE_FAILED):
        await exchange(server, other)


async def test_inline_pem(pki: Pki) -> None:
    key = pki.broker.key.read_text()
    chain = pki.broker.certificate.read_text()
    server = server_context(
        ssl_settings(
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.certificate.chain": chain,
                "ssl.keystore.key": key,
            }
        )
    )
    client = client_context(
        ssl_settings({"ssl.truststore.certificates": pki.ca.certificate_path.read_text()})
    )
    assert (await exchange(server, client)).seen == [None]


async def test_encrypted_key(pki: Pki) -> None:
    server = server_context(server_settings(pki.encrypted, ssl_key_password="key-pw"))
    await exchange(server, client_context(trusting(pki.ca)))
    # Inline too.
    inline = ssl_settings(
        {
            "ssl.keystore.certificate.chain": pki.encrypted.certificate.read_text(),
            "ssl.keystore.key": pki.encrypted.key.read_text(),
            "ssl.key.password": "key-pw",
        }
    )
    await exchange(server_context(inline), client_context(trusting(pki.ca)))


@pytest.mark.parametrize(
    ("cert", "password", "why"),
    [
        ("encrypted", "wrong", "cannot decrypt"),
        ("encrypted", None, "is encrypted"),
        ("broker", "key-pw", "not encrypted"),
    ],
)
def test_key_password_errors_name_ssl_key_password(
    pki: Pki, cert: str, password: str | None, why: str
) -> None:
    issued: IssuedCertificate = getattr(pki, cert)
    extra = {} if password is None else {"ssl_key_password": password}
    settings = server_settings(issued, **extra)
    with pytest.raises(SslConfigError, match=why) as e:
        server_context(settings)
    assert e.value.config == "ssl.key.password"


async def test_pkcs12_keystore(pki: Pki, tmp_path: Path) -> None:
    key = serialization.load_pem_private_key(pki.broker.key.read_bytes(), None)
    cert = x509.load_pem_x509_certificate(pki.broker.certificate.read_bytes())
    p12 = tmp_path / "broker1.p12"
    p12.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"broker1",
            key,  # type: ignore[arg-type]
            cert,
            [pki.ca.certificate],
            serialization.BestAvailableEncryption(b"store-pw"),
        )
    )
    props = {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(p12),
        "ssl.keystore.password": "store-pw",
    }
    await exchange(server_context(ssl_settings(props)), client_context(trusting(pki.ca)))
    with pytest.raises(SslConfigError, match="wrong password") as e:
        server_context(ssl_settings(props | {"ssl.keystore.password": "nope"}))
    assert e.value.config == "ssl.keystore.password"


def test_a_server_needs_a_keystore(pki: Pki) -> None:
    with pytest.raises(SslConfigError, match="needs a keystore") as e:
        server_context(trusting(pki.ca))
    assert e.value.config == "ssl.keystore.location"


def test_store_errors_name_the_property(pki: Pki, tmp_path: Path) -> None:
    missing = tmp_path / "missing.pem"
    with pytest.raises(SslConfigError, match="cannot read") as e:
        server_context(ssl_settings({"ssl.keystore.location": str(missing)}))
    assert e.value.config == "ssl.keystore.location"
    with pytest.raises(SslConfigError, match="cannot read") as e:
        client_context(ssl_settings({"ssl.truststore.location": str(missing)}))
    assert e.value.config == "ssl.truststore.location"

    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a PEM file\n")
    with pytest.raises(SslConfigError, match="no PEM private key") as e:
        server_context(ssl_settings({"ssl.keystore.location": str(garbage)}))
    assert e.value.config == "ssl.keystore.location"
    with pytest.raises(SslConfigError, match="no PEM certificate") as e:
        client_context(ssl_settings({"ssl.truststore.location": str(garbage)}))
    assert e.value.config == "ssl.truststore.location"
    with pytest.raises(SslConfigError, match="no PEM certificate") as e:
        client_context(ssl_settings({"ssl.truststore.certificates": "nothing"}))
    assert e.value.config == "ssl.truststore.certificates"

    # client1's key with broker1's certificate.
    mismatched = tmp_path / "mismatched.pem"
    mismatched.write_text(pki.client.key.read_text() + pki.broker.certificate.read_text())
    with pytest.raises(SslConfigError, match="does not match") as e:
        server_context(ssl_settings({"ssl.keystore.location": str(mismatched)}))
    assert e.value.config == "ssl.keystore.location"

    # A SEC1 ("EC PRIVATE KEY") key: Kafka reads PKCS#8 only.
    key = serialization.load_pem_private_key(pki.broker.key.read_bytes(), None)
    sec1 = tmp_path / "sec1.pem"
    sec1.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
        + pki.broker.certificate.read_bytes()
    )
    with pytest.raises(SslConfigError, match="PKCS#8") as e:
        server_context(ssl_settings({"ssl.keystore.location": str(sec1)}))
    assert e.value.config == "ssl.keystore.location"

    with pytest.raises(SslConfigError, match="certificate 1 is not valid") as e:
        client_context(
            ssl_settings(
                {
                    "ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"
                }
            )
        )
    assert e.value.config == "ssl.truststore.certificates"


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    yield tmp


def test_key_files_are_removed_after_loading(pki: Pki, private_tmp: Path) -> None:
    inline = ssl_settings(
        {
            "ssl.keystore.certificate.chain": pki.broker.certificate.read_text(),
            "ssl.keystore.key": pki.broker.key.read_text(),
        }
    )
    server_context(inline)
    client_context(ssl_settings(props_for(pki.client)))
    assert list(private_tmp.iterdir()) == []


def test_peer_principal_name_matches_java_for_typical_names(pki: Pki) -> None:
    """cryptography's RFC 4514 string and Java's RFC 2253 one agree on plain names; see
    test_x500.py for where they do not."""
    for cert in (pki.broker, pki.client, pki.ca):
        path = cert.certificate if isinstance(cert, IssuedCertificate) else cert.certificate_path
        parsed = x509.load_pem_x509_certificate(path.read_bytes())
        der = parsed.public_bytes(serialization.Encoding.DER)
        assert subject_name(der) == parsed.subject.rfc4514_string()
