"""TLS for Kafka's SSL listeners and their clients: the broker's `ssl.*` configs read as
Kafka reads them and turned into Python `ssl.SSLContext`s, as Kafka's
DefaultSslEngineFactory turns them into JSSE SSLEngines.

Mirrored from Kafka (SslConfigs, BrokerSecurityConfigs, DefaultSslEngineFactory):

- a `listener.name.<listener>.ssl.x` key overrides `ssl.x` for that listener, the listener
  name lowercased in the prefix (ListenerName.configPrefix);
- PEM keystores from a file (`ssl.keystore.location`, the key and its certificate chain in
  one file) or inline (`ssl.keystore.certificate.chain` and `ssl.keystore.key`, Kafka 2.7+),
  with PKCS#8 keys only, encrypted exactly when `ssl.key.password` is set; PEM truststores
  from a file or inline (`ssl.truststore.certificates`); the combinations Kafka refuses
  (a keystore password with PEM, a location and inline PEM together, a chain without a
  key...) are refused with the same reasons;
- `ssl.client.auth` none/requested/required; `ssl.enabled.protocols` (TLSv1.2,TLSv1.3);
  `ssl.protocol` caps the version a client offers (a TLSv1.2 client never uses TLS 1.3
  even if enabled) while a server negotiates any enabled version, as JSSE does (checked
  against OpenJDK 17); `ssl.cipher.suites` by their IANA names, a protocol with none of
  its suites listed being unusable, as in JSSE; `ssl.endpoint.identification.algorithm`
  (https: clients check the server's host name; empty: they do not);
- the certificates of the truststore are each a trust anchor (Java's PKIX trusts any
  truststore entry, not only self-signed roots); no truststore means the system's CAs
  (Java's cacerts);
- `ssl.principal.mapping.rules` (ssl_principal.py) applied to the client certificate's
  subject as Java's X500Principal.getName() writes it (x500.py).

Where minikafka differs, it refuses rather than ignores:

- JKS stores cannot be read: `ssl.keystore.type` is PEM or PKCS12 (read with cryptography,
  one password for the whole file: `ssl.key.password` must be unset or equal to
  `ssl.keystore.password`), `ssl.truststore.type` is PEM, and both default to PEM (Kafka's
  default is JKS); `ssl.truststore.password` is therefore always refused (Kafka refuses it
  for PEM);
- Python's ssl module cannot choose TLS 1.3 cipher suites: a `ssl.cipher.suites` naming
  TLS 1.3 suites must name all that OpenSSL enables (or none, which disables TLS 1.3 as
  in Kafka);
- `ssl.endpoint.identification.algorithm` is https or empty (JSSE also knows LDAPS);
- `ssl.key.password` without a keystore is refused (Kafka ignores it);
- encrypted PKCS#8 keys are read whatever their scheme, PBES2 (AES) included, which
  Kafka's own PEM reader cannot decrypt on JDK 17 (it takes PBES1 ones such as
  PBE-SHA1-3DES): a key minikafka reads may not do for a Java client;
- an empty value counts as unset;
- the configs of UNSUPPORTED_SSL_CONFIGS name JVM machinery and are refused.

The ssl module loads a certificate chain and key only from files: the key and chain,
whatever their source, are written to a fresh private directory (0700, files 0600), the
key encrypted with a one-time random passphrase, and removed right after loading.
"""

from __future__ import annotations

import enum
import functools
import os
import re
import secrets
import shutil
import ssl
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Final

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from minikafka.security.ssl_principal import SslPrincipalMapper
from minikafka.security.x500 import subject_name

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

KEYSTORE_TYPE: Final = "ssl.keystore.type"
KEYSTORE_LOCATION: Final = "ssl.keystore.location"
KEYSTORE_PASSWORD: Final = "ssl.keystore.password"
KEYSTORE_CERTIFICATE_CHAIN: Final = "ssl.keystore.certificate.chain"
KEYSTORE_KEY: Final = "ssl.keystore.key"
KEY_PASSWORD: Final = "ssl.key.password"
TRUSTSTORE_TYPE: Final = "ssl.truststore.type"
TRUSTSTORE_LOCATION: Final = "ssl.truststore.location"
TRUSTSTORE_CERTIFICATES: Final = "ssl.truststore.certificates"
TRUSTSTORE_PASSWORD: Final = "ssl.truststore.password"
CLIENT_AUTH: Final = "ssl.client.auth"
ENABLED_PROTOCOLS: Final = "ssl.enabled.protocols"
PROTOCOL: Final = "ssl.protocol"
CIPHER_SUITES: Final = "ssl.cipher.suites"
ENDPOINT_IDENTIFICATION_ALGORITHM: Final = "ssl.endpoint.identification.algorithm"
PRINCIPAL_MAPPING_RULES: Final = "ssl.principal.mapping.rules"

# The broker ssl.* configs this module reads. ssl.truststore.password is one: it is read to
# be refused (PEM truststores take no password, in Kafka too).
SSL_CONFIG_NAMES: Final = (
    KEYSTORE_TYPE,
    KEYSTORE_LOCATION,
    KEYSTORE_PASSWORD,
    KEYSTORE_CERTIFICATE_CHAIN,
    KEYSTORE_KEY,
    KEY_PASSWORD,
    TRUSTSTORE_TYPE,
    TRUSTSTORE_LOCATION,
    TRUSTSTORE_CERTIFICATES,
    TRUSTSTORE_PASSWORD,
    CLIENT_AUTH,
    ENABLED_PROTOCOLS,
    PROTOCOL,
    CIPHER_SUITES,
    ENDPOINT_IDENTIFICATION_ALGORITHM,
    PRINCIPAL_MAPPING_RULES,
)

# Kafka's other ssl.* configs, which configure the JVM's TLS machinery: refused, with why.
UNSUPPORTED_SSL_CONFIGS: Final[Mapping[str, str]] = {
    "ssl.provider": "a JCA security provider: minikafka's TLS is Python's ssl module on OpenSSL",
    "ssl.keymanager.algorithm": "a JSSE KeyManagerFactory algorithm: OpenSSL has none to choose",
    "ssl.trustmanager.algorithm": "a JSSE TrustManagerFactory algorithm: OpenSSL verifies certificates itself",
    "ssl.secure.random.implementation": "a Java SecureRandom: OpenSSL seeds its own random generator",
    "ssl.engine.factory.class": "a Java SslEngineFactory class: minikafka cannot load Java classes",
    "ssl.allow.dn.changes": "Kafka 3.x, for keystores reloaded at run time, which minikafka does not do",
    "ssl.allow.san.changes": "Kafka 3.x, for keystores reloaded at run time, which minikafka does not do",
}

PEM: Final = "PEM"
PKCS12: Final = "PKCS12"
DEFAULT_ENABLED_PROTOCOLS: Final = ("TLSv1.2", "TLSv1.3")
DEFAULT_PROTOCOL: Final = "TLSv1.3"
HTTPS: Final = "https"

_VERSIONS: Final = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
# ssl.protocol names an SSLContext algorithm; JSSE's "TLS" supports up to TLS 1.3.
_PROTOCOL_CAPS: Final = {**_VERSIONS, "TLS": ssl.TLSVersion.TLSv1_3}

# IANA (Java) cipher suite names of TLS 1.2 and the names OpenSSL gives them
# (`openssl ciphers -stdname`).
TLS12_CIPHER_SUITES: Final[Mapping[str, str]] = {
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": "ECDHE-ECDSA-AES256-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CCM": "ECDHE-ECDSA-AES128-CCM",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CCM": "ECDHE-ECDSA-AES256-CCM",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CCM_8": "ECDHE-ECDSA-AES128-CCM8",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CCM_8": "ECDHE-ECDSA-AES256-CCM8",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "DHE-RSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256": "DHE-RSA-AES256-SHA256",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256": "DHE-RSA-AES128-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA": "DHE-RSA-AES256-SHA",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA": "DHE-RSA-AES128-SHA",
    "TLS_DHE_RSA_WITH_AES_128_CCM": "DHE-RSA-AES128-CCM",
    "TLS_DHE_RSA_WITH_AES_256_CCM": "DHE-RSA-AES256-CCM",
    "TLS_DHE_RSA_WITH_AES_128_CCM_8": "DHE-RSA-AES128-CCM8",
    "TLS_DHE_RSA_WITH_AES_256_CCM_8": "DHE-RSA-AES256-CCM8",
    "TLS_DHE_DSS_WITH_AES_256_GCM_SHA384": "DHE-DSS-AES256-GCM-SHA384",
    "TLS_DHE_DSS_WITH_AES_128_GCM_SHA256": "DHE-DSS-AES128-GCM-SHA256",
    "TLS_DHE_DSS_WITH_AES_256_CBC_SHA256": "DHE-DSS-AES256-SHA256",
    "TLS_DHE_DSS_WITH_AES_128_CBC_SHA256": "DHE-DSS-AES128-SHA256",
    "TLS_DHE_DSS_WITH_AES_256_CBC_SHA": "DHE-DSS-AES256-SHA",
    "TLS_DHE_DSS_WITH_AES_128_CBC_SHA": "DHE-DSS-AES128-SHA",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA256": "AES256-SHA256",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_128_CCM": "AES128-CCM",
    "TLS_RSA_WITH_AES_256_CCM": "AES256-CCM",
    "TLS_RSA_WITH_AES_128_CCM_8": "AES128-CCM8",
    "TLS_RSA_WITH_AES_256_CCM_8": "AES256-CCM8",
}
# TLS 1.3 suites have the same name in IANA, Java and OpenSSL.
TLS13_CIPHER_SUITES: Final = frozenset(
    {
        "TLS_AES_256_GCM_SHA384",
        "TLS_AES_128_GCM_SHA256",
        "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_AES_128_CCM_SHA256",
        "TLS_AES_128_CCM_8_SHA256",
    }
)
# Java lists this signalling value among its suites; OpenSSL always signals secure
# renegotiation, so naming it changes nothing.
_RENEGOTIATION_SCSV: Final = "TLS_EMPTY_RENEGOTIATION_INFO_SCSV"

_PEM_BLOCK: Final = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END \1-----", re.DOTALL)


class SslConfigError(ValueError):
    """A bad ssl.* setting: `config` names the property (listener-prefixed when the
    listener's override was the one read)."""

    def __init__(self, config: str, reason: str) -> None:
        super().__init__(f"{config}: {reason}")
        self.config = config
        self.reason = reason


class ClientAuth(enum.Enum):
    """ssl.client.auth (Kafka's SslClientAuth)."""

    NONE = "none"
    REQUESTED = "requested"
    REQUIRED = "required"


# Kafka's PASSWORD-typed settings, which it prints as [hidden].
_HIDDEN: Final = frozenset(
    {
        "keystore_password",
        "keystore_certificate_chain",
        "keystore_key",
        "key_password",
        "truststore_certificates",
    }
)


@dataclass(frozen=True)
class SslSettings:
    """One listener's (or one client's) TLS settings, validated when made: an invalid
    combination raises SslConfigError naming the property."""

    keystore_type: str = PEM
    keystore_location: str | None = None
    keystore_password: str | None = None
    keystore_certificate_chain: str | None = None
    keystore_key: str | None = None
    key_password: str | None = None
    truststore_type: str = PEM
    truststore_location: str | None = None
    truststore_certificates: str | None = None
    client_auth: ClientAuth = ClientAuth.NONE
    enabled_protocols: tuple[str, ...] = DEFAULT_ENABLED_PROTOCOLS
    protocol: str = DEFAULT_PROTOCOL
    cipher_suites: tuple[str, ...] = ()
    endpoint_identification_algorithm: str = HTTPS
    principal_mapping_rules: str = "DEFAULT"

    def __post_init__(self) -> None:
        self._check_stores()
        for name in self.enabled_protocols:
            if name not in _VERSIONS:
                raise SslConfigError(
                    ENABLED_PROTOCOLS, f"{name!r} is not supported: only TLSv1.2 and TLSv1.3"
                )
        if self.protocol not in _PROTOCOL_CAPS:
            raise SslConfigError(
                PROTOCOL, f"{self.protocol!r} is not supported: TLSv1.3 (the default) or TLSv1.2"
            )
        _check_cipher_suites(self.cipher_suites)
        if not self._usable_versions():
            raise SslConfigError(
                CIPHER_SUITES,
                f"none of the suites is for an enabled protocol ({ENABLED_PROTOCOLS}="
                f"{','.join(self.enabled_protocols) or '(empty)'})",
            )
        if self.endpoint_identification_algorithm not in ("", HTTPS):
            raise SslConfigError(
                ENDPOINT_IDENTIFICATION_ALGORITHM,
                f"{self.endpoint_identification_algorithm!r} is not supported: "
                "https (check the server's host name) or empty (do not)",
            )
        try:
            SslPrincipalMapper.from_rules(self.principal_mapping_rules)
        except ValueError as e:
            raise SslConfigError(PRINCIPAL_MAPPING_RULES, str(e)) from None

    def _check_stores(self) -> None:
        if self.keystore_type.upper() == "JKS":
            raise SslConfigError(
                KEYSTORE_TYPE,
                "JKS keystores cannot be read: use PEM (ssl.keystore.type=PEM with the key "
                "and its certificate chain in one PEM file) or PKCS12",
            )
        if self.keystore_type.upper() == PEM and self.keystore_type != PEM:
            raise SslConfigError(
                KEYSTORE_TYPE, f"{self.keystore_type!r}: Kafka's type is PEM, in capitals"
            )
        if self.keystore_type not in (PEM, PKCS12):
            raise SslConfigError(
                KEYSTORE_TYPE, f"{self.keystore_type!r} is not supported: PEM or PKCS12"
            )
        if self.truststore_type != PEM:
            raise SslConfigError(
                TRUSTSTORE_TYPE,
                f"{self.truststore_type!r} truststores cannot be read: use PEM "
                "(ssl.truststore.type=PEM with the CA certificates in one PEM file)",
            )
        # DefaultSslEngineFactory.createKeystore's checks, in its order.
        if self.keystore_key is not None:
            if self.keystore_type != PEM:
                raise SslConfigError(
                    KEYSTORE_KEY,
                    f"can be set only with {KEYSTORE_TYPE}=PEM, not {self.keystore_type}",
                )
            if self.keystore_certificate_chain is None:
                raise SslConfigError(
                    KEYSTORE_CERTIFICATE_CHAIN,
                    f"must be set with {KEYSTORE_KEY}: the key's certificate chain",
                )
            if self.keystore_location is not None:
                raise SslConfigError(
                    KEYSTORE_LOCATION, f"cannot be set together with {KEYSTORE_KEY}"
                )
            if self.keystore_password is not None:
                raise SslConfigError(
                    KEYSTORE_PASSWORD,
                    f"cannot be set with PEM: only {KEY_PASSWORD} may be (for an encrypted key)",
                )
        elif self.keystore_certificate_chain is not None:
            raise SslConfigError(
                KEYSTORE_KEY, f"must be set with {KEYSTORE_CERTIFICATE_CHAIN}: the private key"
            )
        elif self.keystore_location is None:
            if self.keystore_password is not None:
                raise SslConfigError(
                    KEYSTORE_PASSWORD, f"is set, but there is no keystore ({KEYSTORE_LOCATION})"
                )
            if self.key_password is not None:
                raise SslConfigError(
                    KEY_PASSWORD,
                    f"is set, but there is no keystore ({KEYSTORE_LOCATION} or {KEYSTORE_KEY})",
                )
        elif self.keystore_type == PEM:
            if self.keystore_password is not None:
                raise SslConfigError(
                    KEYSTORE_PASSWORD,
                    f"cannot be set with PEM: only {KEY_PASSWORD} may be (for an encrypted key)",
                )
        else:
            if self.keystore_password is None:
                raise SslConfigError(
                    KEYSTORE_PASSWORD, f"must be set for a {PKCS12} keystore ({KEYSTORE_LOCATION})"
                )
            if self.key_password is not None and self.key_password != self.keystore_password:
                raise SslConfigError(
                    KEY_PASSWORD,
                    f"must be unset or equal to {KEYSTORE_PASSWORD}: a PKCS12 keystore is read "
                    "with one password",
                )
        if self.truststore_certificates is not None and self.truststore_location is not None:
            raise SslConfigError(
                TRUSTSTORE_LOCATION, f"cannot be set together with {TRUSTSTORE_CERTIFICATES}"
            )

    @property
    def has_keystore(self) -> bool:
        return self.keystore_location is not None or self.keystore_key is not None

    @property
    def has_truststore(self) -> bool:
        return self.truststore_location is not None or self.truststore_certificates is not None

    @functools.cached_property
    def principal_mapper(self) -> SslPrincipalMapper:
        return SslPrincipalMapper.from_rules(self.principal_mapping_rules)

    def _usable_versions(self) -> list[ssl.TLSVersion]:
        """The enabled protocols that have a cipher suite: JSSE does not use a protocol
        none of whose suites is enabled."""
        versions = [_VERSIONS[p] for p in self.enabled_protocols]
        if not self.enabled_protocols:  # Kafka: an empty list leaves JSSE's defaults
            versions = [_VERSIONS[p] for p in DEFAULT_ENABLED_PROTOCOLS]
        if self.cipher_suites:
            suites = set(self.cipher_suites)
            if not suites & TLS12_CIPHER_SUITES.keys():
                versions = [v for v in versions if v != ssl.TLSVersion.TLSv1_2]
            if not suites & TLS13_CIPHER_SUITES:
                versions = [v for v in versions if v != ssl.TLSVersion.TLSv1_3]
        return sorted(versions)

    def __repr__(self) -> str:
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            shown = "[hidden]" if f.name in _HIDDEN and value is not None else repr(value)
            parts.append(f"{f.name}={shown}")
        return f"SslSettings({', '.join(parts)})"

    __str__ = __repr__


def _check_cipher_suites(suites: Sequence[str]) -> None:
    tls12: list[str] = []
    tls13: set[str] = set()
    for name in suites:
        if name in TLS12_CIPHER_SUITES:
            tls12.append(TLS12_CIPHER_SUITES[name])
        elif name in TLS13_CIPHER_SUITES:
            tls13.add(name)
        elif name != _RENEGOTIATION_SCSV:
            hint = ""
            if name in TLS12_CIPHER_SUITES.values():
                iana = next(k for k, v in TLS12_CIPHER_SUITES.items() if v == name)
                hint = f" (OpenSSL's name: Kafka takes the IANA name {iana})"
            raise SslConfigError(
                CIPHER_SUITES,
                f"unknown cipher suite {name!r}{hint}: expected IANA names such as "
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 or TLS_AES_256_GCM_SHA384",
            )
    if tls13 and tls13 != _openssl_tls13_suites():
        raise SslConfigError(
            CIPHER_SUITES,
            "Python's ssl module cannot choose TLS 1.3 cipher suites: name all those OpenSSL "
            f"enables ({', '.join(sorted(_openssl_tls13_suites()))}) or none (no TLS 1.3)",
        )
    if tls12:
        available = {c["name"] for c in _tls12_context(tls12).get_ciphers()}
        missing = [n for n in suites if TLS12_CIPHER_SUITES.get(n, "") in set(tls12) - available]
        if missing:
            raise SslConfigError(
                CIPHER_SUITES, f"not available in this OpenSSL: {', '.join(missing)}"
            )


def _tls12_context(openssl_names: Sequence[str]) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        ctx.set_ciphers(":".join(openssl_names))
    except ssl.SSLError:
        raise SslConfigError(
            CIPHER_SUITES, "none of the TLS 1.2 suites is available in this OpenSSL"
        ) from None
    return ctx


@functools.cache
def _openssl_tls13_suites() -> frozenset[str]:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return frozenset(c["name"] for c in ctx.get_ciphers() if c["protocol"] == "TLSv1.3")


def ssl_settings(props: Mapping[str, str], listener: str | None = None) -> SslSettings:
    """The ssl.* settings of `props` for a listener: `listener.name.<listener>.ssl.x`
    (the name lowercased, as Kafka writes the prefix) wins over `ssl.x`. SslConfigError
    naming the property read on a bad value or combination, or on a setting minikafka
    does not implement (UNSUPPORTED_SSL_CONFIGS)."""
    prefix = f"listener.name.{listener.lower()}." if listener else None
    if prefix is not None:
        for key in props:
            # Kafka matches the prefix exactly: another case would be silently unused.
            lowered = key.lower()
            if (
                lowered.startswith(prefix)
                and lowered[len(prefix) :].startswith("ssl.")
                and not key.startswith(prefix)
            ):
                raise SslConfigError(
                    key, f"Kafka reads the listener's overrides as {prefix}... (lowercase)"
                )

    def key_of(name: str) -> str:
        if prefix is not None and prefix + name in props:
            return prefix + name
        return name

    def get(name: str) -> str | None:
        value = props.get(key_of(name))
        if value is None:
            return None
        # Kafka trims every value; an empty one counts as unset here.
        return value.strip() or None

    def get_list(name: str, default: tuple[str, ...]) -> tuple[str, ...]:
        value = props.get(key_of(name))
        if value is None:
            return default
        return tuple(item.strip() for item in value.split(",") if item.strip())

    for name, why in UNSUPPORTED_SSL_CONFIGS.items():
        if key_of(name) in props:
            raise SslConfigError(key_of(name), f"not supported: {why}")
    if get(TRUSTSTORE_PASSWORD) is not None:
        raise SslConfigError(
            key_of(TRUSTSTORE_PASSWORD), "PEM truststores take no password (Kafka refuses it too)"
        )

    client_auth_text = get(CLIENT_AUTH) or ClientAuth.NONE.value
    try:
        client_auth = ClientAuth(client_auth_text)
    except ValueError:
        raise SslConfigError(
            key_of(CLIENT_AUTH),
            f"{client_auth_text!r} is not one of none, requested, required",
        ) from None
    keystore_type = get(KEYSTORE_TYPE) or PEM
    if keystore_type.upper() == PKCS12:  # Java's KeyStore types ignore case; PEM does not
        keystore_type = PKCS12
    endpoint = props.get(key_of(ENDPOINT_IDENTIFICATION_ALGORITHM))
    endpoint = HTTPS if endpoint is None else endpoint.strip()
    if endpoint.lower() == HTTPS:  # JSSE compares it ignoring case
        endpoint = HTTPS
    try:
        return SslSettings(
            keystore_type=keystore_type,
            keystore_location=get(KEYSTORE_LOCATION),
            keystore_password=get(KEYSTORE_PASSWORD),
            keystore_certificate_chain=get(KEYSTORE_CERTIFICATE_CHAIN),
            keystore_key=get(KEYSTORE_KEY),
            key_password=get(KEY_PASSWORD),
            truststore_type=get(TRUSTSTORE_TYPE) or PEM,
            truststore_location=get(TRUSTSTORE_LOCATION),
            truststore_certificates=get(TRUSTSTORE_CERTIFICATES),
            client_auth=client_auth,
            enabled_protocols=get_list(ENABLED_PROTOCOLS, DEFAULT_ENABLED_PROTOCOLS),
            protocol=get(PROTOCOL) or DEFAULT_PROTOCOL,
            cipher_suites=get_list(CIPHER_SUITES, ()),
            endpoint_identification_algorithm=endpoint,
            principal_mapping_rules=get(PRINCIPAL_MAPPING_RULES) or "DEFAULT",
        )
    except SslConfigError as e:
        if key_of(e.config) != e.config:
            raise SslConfigError(key_of(e.config), e.reason) from None
        raise


def server_context(settings: SslSettings) -> ssl.SSLContext:
    """The SSLContext of an SSL listener: its keystore (required), the client
    authentication of ssl.client.auth verified against the truststore, the enabled
    protocols and cipher suites. SslConfigError naming the property when a store cannot
    be loaded."""
    if not settings.has_keystore:
        raise SslConfigError(
            KEYSTORE_LOCATION,
            "an SSL listener needs a keystore: set ssl.keystore.location (a PEM file with "
            "the key and its certificate chain) or ssl.keystore.certificate.chain and "
            "ssl.keystore.key",
        )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    # JSSE servers ignore ssl.protocol (its SSLContext caps only what a client offers).
    _set_protocols(ctx, settings.cipher_suites, settings._usable_versions())
    _load_keystore(ctx, settings)
    ctx.verify_mode = {
        ClientAuth.NONE: ssl.CERT_NONE,
        ClientAuth.REQUESTED: ssl.CERT_OPTIONAL,
        ClientAuth.REQUIRED: ssl.CERT_REQUIRED,
    }[settings.client_auth]
    if settings.has_truststore:
        _load_truststore(ctx, settings)
    elif settings.client_auth is not ClientAuth.NONE:
        ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    return ctx


def client_context(settings: SslSettings) -> ssl.SSLContext:
    """The SSLContext of a client of an SSL listener (a broker reaching another over the
    inter-broker listener too): the truststore (the system's CAs without one), the
    keystore when there is one (for ssl.client.auth), the server's host name checked
    unless ssl.endpoint.identification.algorithm is empty."""
    cap = _PROTOCOL_CAPS[settings.protocol]
    versions = [v for v in settings._usable_versions() if v <= cap]
    if not versions:
        raise SslConfigError(
            PROTOCOL,
            f"{settings.protocol} leaves a client none of {ENABLED_PROTOCOLS}="
            f"{','.join(settings.enabled_protocols)} (a client offers no version above it)",
        )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _set_protocols(ctx, settings.cipher_suites, versions)
    ctx.check_hostname = settings.endpoint_identification_algorithm == HTTPS
    ctx.verify_mode = ssl.CERT_REQUIRED  # Java's trust manager always checks the chain
    if settings.has_truststore:
        _load_truststore(ctx, settings)
    else:
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if settings.has_keystore:
        _load_keystore(ctx, settings)
    return ctx


def peer_principal_name(ssl_object: ssl.SSLObject | ssl.SSLSocket) -> str | None:
    """The peer certificate's subject as Java's X500Principal.getName() writes it (the
    DN Kafka maps to a principal), e.g. `CN=alice,OU=eng,O=acme,C=US`; None when the peer
    sent no certificate. See x500.py for how it differs from RFC 4514 writers."""
    der = ssl_object.getpeercert(binary_form=True)
    if der is None:
        return None
    return subject_name(der)


def _set_protocols(
    ctx: ssl.SSLContext, suites: Sequence[str], versions: Sequence[ssl.TLSVersion]
) -> None:
    ctx.minimum_version = min(versions)
    ctx.maximum_version = max(versions)
    tls12 = [TLS12_CIPHER_SUITES[s] for s in suites if s in TLS12_CIPHER_SUITES]
    if tls12:
        ctx.set_ciphers(":".join(tls12))


def _load_keystore(ctx: ssl.SSLContext, settings: SslSettings) -> None:
    if settings.keystore_key is not None:
        assert settings.keystore_certificate_chain is not None
        key = _pem_private_key(settings.keystore_key, settings.key_password, KEYSTORE_KEY)
        chain = _pem_certificates(settings.keystore_certificate_chain, KEYSTORE_CERTIFICATE_CHAIN)
        source = KEYSTORE_KEY
    else:
        assert settings.keystore_location is not None
        data = _read(settings.keystore_location, KEYSTORE_LOCATION)
        if settings.keystore_type == PKCS12:
            key, chain = _pkcs12(data, settings)
        else:
            text = data.decode("utf-8", errors="replace")
            key = _pem_private_key(text, settings.key_password, KEYSTORE_LOCATION)
            chain = _pem_certificates(text, KEYSTORE_LOCATION)
        source = KEYSTORE_LOCATION
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(serialization.Encoding.DER, spki) != chain[
        0
    ].public_key().public_bytes(serialization.Encoding.DER, spki):
        raise SslConfigError(
            source, "the private key does not match the first certificate of the chain"
        )
    _load_cert_chain(ctx, key, chain, source)


def _load_cert_chain(
    ctx: ssl.SSLContext, key: PrivateKeyTypes, chain: Sequence[x509.Certificate], source: str
) -> None:
    """Hands the key and chain to OpenSSL through files in a fresh private directory,
    removed right after: the key is written encrypted with a one-time passphrase."""
    passphrase = secrets.token_urlsafe(32).encode()
    directory = tempfile.mkdtemp(prefix="minikafka-tls-")  # mode 0700
    try:
        chain_file = Path(directory, "chain.pem")
        key_file = Path(directory, "key.pem")
        _write_private(
            chain_file, b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)
        )
        _write_private(
            key_file,
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.BestAvailableEncryption(passphrase),
            ),
        )
        ctx.load_cert_chain(chain_file, key_file, password=passphrase)
    except ssl.SSLError as e:
        raise SslConfigError(source, f"OpenSSL refused the key or certificate: {e}") from None
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _load_truststore(ctx: ssl.SSLContext, settings: SslSettings) -> None:
    if settings.truststore_certificates is not None:
        certs = _pem_certificates(settings.truststore_certificates, TRUSTSTORE_CERTIFICATES)
        source = TRUSTSTORE_CERTIFICATES
    else:
        assert settings.truststore_location is not None
        data = _read(settings.truststore_location, TRUSTSTORE_LOCATION)
        certs = _pem_certificates(data.decode("utf-8", errors="replace"), TRUSTSTORE_LOCATION)
        source = TRUSTSTORE_LOCATION
    pem = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)
    try:
        ctx.load_verify_locations(cadata=pem.decode("ascii"))
    except ssl.SSLError as e:
        raise SslConfigError(source, f"OpenSSL refused a certificate: {e}") from None
    # Every truststore certificate is a trust anchor, as in Java, not only self-signed ones.
    ctx.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN


def _read(location: str, config: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as e:
        raise SslConfigError(config, f"cannot read {location}: {e.strerror or e}") from None


def _pem_blocks(text: str) -> list[tuple[str, bytes]]:
    return [
        (m.group(1), m.group(0).encode("ascii", errors="replace"))
        for m in _PEM_BLOCK.finditer(text)
    ]


def _pem_certificates(text: str, config: str) -> list[x509.Certificate]:
    blocks = [pem for label, pem in _pem_blocks(text) if label == "CERTIFICATE"]
    if not blocks:
        raise SslConfigError(config, "no PEM certificate (-----BEGIN CERTIFICATE-----) found")
    certs = []
    for i, pem in enumerate(blocks, 1):
        try:
            certs.append(x509.load_pem_x509_certificate(pem))
        except ValueError as e:
            raise SslConfigError(config, f"certificate {i} is not valid: {e}") from None
    return certs


def _pem_private_key(text: str, password: str | None, config: str) -> PrivateKeyTypes:
    blocks = [(label, pem) for label, pem in _pem_blocks(text) if label.endswith("PRIVATE KEY")]
    if not blocks:
        raise SslConfigError(
            config,
            "no PEM private key (-----BEGIN PRIVATE KEY-----) found"
            + (
                " (JKS or PKCS12 file? set ssl.keystore.type)"
                if config == KEYSTORE_LOCATION
                else ""
            ),
        )
    if len(blocks) != 1:
        raise SslConfigError(config, f"expected one private key, found {len(blocks)}")
    label, pem = blocks[0]
    if label not in ("PRIVATE KEY", "ENCRYPTED PRIVATE KEY"):
        raise SslConfigError(
            config,
            f"a {label} is not PKCS#8: Kafka reads PKCS#8 keys only (convert it with "
            "`openssl pkcs8 -topk8`)",
        )
    encrypted = label == "ENCRYPTED PRIVATE KEY"
    if encrypted and password is None:
        raise SslConfigError(KEY_PASSWORD, f"must be set: the private key ({config}) is encrypted")
    if not encrypted and password is not None:
        raise SslConfigError(
            KEY_PASSWORD, f"is set, but the private key ({config}) is not encrypted"
        )
    try:
        return serialization.load_pem_private_key(
            pem, password.encode() if password is not None else None
        )
    except (ValueError, TypeError) as e:
        if encrypted:
            raise SslConfigError(
                KEY_PASSWORD, f"cannot decrypt the private key ({config}): wrong password?"
            ) from None
        raise SslConfigError(config, f"the private key is not valid: {e}") from None


def _pkcs12(data: bytes, settings: SslSettings) -> tuple[PrivateKeyTypes, list[x509.Certificate]]:
    assert settings.keystore_password is not None
    try:
        key, cert, extra = pkcs12.load_key_and_certificates(
            data, settings.keystore_password.encode()
        )
    except ValueError as e:
        raise SslConfigError(
            KEYSTORE_PASSWORD,
            f"cannot read the PKCS12 keystore {settings.keystore_location} (wrong password?): {e}",
        ) from None
    if key is None or cert is None:
        raise SslConfigError(
            KEYSTORE_LOCATION, f"{settings.keystore_location} holds no private key and certificate"
        )
    return key, [cert, *extra]
