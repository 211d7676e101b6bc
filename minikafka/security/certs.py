"""Throwaway TLS certificates for local clusters and docker compose: a CA and the
certificates it signs, in the PEM files Kafka's `ssl.keystore.type=PEM` and
`ssl.truststore.type=PEM` read (Kafka 2.7+, KIP-651).

In a directory: `ca.pem` and `ca.key` (the CA), and for each certificate `<name>.pem` (the
certificate then the CA's: the chain), `<name>.key` (its PKCS#8 key, encrypted when given
a password, the only form Kafka's PEM keystores take) and `<name>.keystore.pem` (key and
chain in one file: what `ssl.keystore.location` names). The truststore is `ca.pem`. Key
files are 0600. Subjects are `CN=<name>,OU=minikafka`, so the principal of a client
certificate is predictable (`User:CN=client1,OU=minikafka` with the DEFAULT mapping rule).
Keys are EC P-256: quick to make, and every TLS 1.2 and 1.3 peer takes them. An
encrypted key is PBES2 (AES-256-CBC), what cryptography writes: OpenSSL-based peers
(minikafka, librdkafka, Python) read it, Kafka's Java PEM reader does not (on JDK 17 it
decrypts PBES1 keys only; for a Java client leave the key unencrypted, or re-encrypt it
with `openssl pkcs8 -topk8 -v1 PBE-SHA1-3DES`). Every
certificate may serve both ends (serverAuth and clientAuth), as a broker is a server to
clients and a client of the other brokers.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_CERTIFICATE: Final = "ca.pem"
CA_KEY: Final = "ca.key"
ORGANIZATIONAL_UNIT: Final = "minikafka"
# Names become file names: no separators, no dot-files, and not the CA's own.
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# A little backdating, for clocks a few seconds apart (a container's and the host's).
_BACKDATE: Final = datetime.timedelta(minutes=5)

CaKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True)
class IssuedCertificate:
    name: str
    certificate: Path  # <name>.pem: the certificate and the CA's
    key: Path  # <name>.key
    keystore: Path  # <name>.keystore.pem: key and chain
    truststore: Path  # the CA's ca.pem
    key_encrypted: bool

    def kafka_properties(self) -> dict[str, str]:
        """The ssl.* properties that use these files; an encrypted key also needs
        ssl.key.password, which is not kept here."""
        return {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.truststore),
        }


@dataclass(frozen=True)
class CertificateAuthority:
    directory: Path
    certificate: x509.Certificate
    key: CaKey

    @property
    def certificate_path(self) -> Path:
        return self.directory / CA_CERTIFICATE

    @property
    def name(self) -> str:
        cn = self.certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        return str(cn[0].value) if cn else self.certificate.subject.rfc4514_string()

    @classmethod
    def load(cls, directory: Path) -> CertificateAuthority:
        """The CA make_ca wrote in `directory`. FileNotFoundError without one; ValueError
        for files that are not a CA's certificate and unencrypted key."""
        directory = Path(directory)
        cert = x509.load_pem_x509_certificate((directory / CA_CERTIFICATE).read_bytes())
        key = serialization.load_pem_private_key((directory / CA_KEY).read_bytes(), None)
        if not isinstance(key, CaKey):
            raise ValueError(f"{directory / CA_KEY}: an EC or RSA key was expected")
        spki = serialization.PublicFormat.SubjectPublicKeyInfo
        der = serialization.Encoding.DER
        if key.public_key().public_bytes(der, spki) != cert.public_key().public_bytes(der, spki):
            raise ValueError(f"{directory / CA_KEY} is not the key of {directory / CA_CERTIFICATE}")
        return cls(directory, cert, key)

    def issue(
        self,
        directory: Path,
        name: str,
        *,
        hosts: Sequence[str],
        days: int = 365,
        key_password: str | None = None,
        not_before: datetime.datetime | None = None,
        not_after: datetime.datetime | None = None,
    ) -> IssuedCertificate:
        """A certificate for `name` (subject CN=<name>,OU=minikafka) valid for each of
        `hosts` (DNS names or IP addresses), written to `directory` (replacing one of the
        same name). not_before and not_after override the validity (tests make expired
        certificates with them)."""
        if not _NAME.fullmatch(name) or name == "ca":
            raise ValueError(
                f"{name!r}: a certificate name is letters, digits, '.', '_' and '-' (not 'ca')"
            )
        if not hosts:
            raise ValueError("a certificate needs at least one host name or address")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        now = datetime.datetime.now(datetime.UTC)
        start = not_before if not_before is not None else now - _BACKDATE
        end = not_after if not_after is not None else now + datetime.timedelta(days=days)
        key = ec.generate_private_key(ec.SECP256R1())
        ca_ski = self.certificate.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_subject(name))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_key_usage(ca=False), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .add_extension(x509.SubjectAlternativeName(_alt_names(hosts)), critical=False)
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski.value),
                critical=False,
            )
            .sign(self.key, hashes.SHA256())
        )
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(key_password.encode())
            if key_password is not None
            else serialization.NoEncryption()
        )
        key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
        )
        chain_pem = cert.public_bytes(serialization.Encoding.PEM) + self.certificate.public_bytes(
            serialization.Encoding.PEM
        )
        issued = IssuedCertificate(
            name=name,
            certificate=directory / f"{name}.pem",
            key=directory / f"{name}.key",
            keystore=directory / f"{name}.keystore.pem",
            truststore=self.certificate_path,
            key_encrypted=key_password is not None,
        )
        _write(issued.certificate, chain_pem, 0o644)
        _write(issued.key, key_pem, 0o600)
        _write(issued.keystore, key_pem + chain_pem, 0o600)
        return issued


def make_ca(directory: Path, name: str = "minikafka-ca", days: int = 365) -> CertificateAuthority:
    """A new CA (subject CN=<name>,OU=minikafka) written to `directory` as ca.pem and
    ca.key (0600). FileExistsError when the directory already holds one: replacing it
    would orphan the certificates it signed (CertificateAuthority.load reuses it)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for file in (CA_CERTIFICATE, CA_KEY):
        if (directory / file).exists():
            raise FileExistsError(f"{directory / file} exists: the directory already has a CA")
    key = ec.generate_private_key(ec.SECP256R1())
    subject = _subject(name)
    now = datetime.datetime.now(datetime.UTC)
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(ski, critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    # The key first: a CA certificate without its key would be a directory load() refuses.
    _write(directory / CA_KEY, key_pem, 0o600)
    _write(directory / CA_CERTIFICATE, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return CertificateAuthority(directory, cert, key)


def _subject(name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ORGANIZATIONAL_UNIT),
            x509.NameAttribute(NameOID.COMMON_NAME, name),
        ]
    )


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def _alt_names(hosts: Sequence[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):  # once each, in order
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def _write(path: Path, data: bytes, mode: int) -> None:
    """Writes through a temporary file created with its final mode, then renamed: a key
    is never readable by others, not even while written, and a reader never sees half."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)  # the umask may have taken bits the mode wanted (0644)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
