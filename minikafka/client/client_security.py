"""Kafka clients' security settings (TLS, SASL) in librdkafka's terms.

Mirrors the file Kafka's tools take with `--command-config` (kafka-topics.sh,
kafka-configs.sh, kafka-consumer-groups.sh, ...): a Java properties file of client configs
by the Java client's names. librdkafka has most of them under the same names; these it
names otherwise, and `librdkafka_properties` translates them:

| Kafka's Java client                                  | librdkafka                            |
|------------------------------------------------------|---------------------------------------|
| `sasl.jaas.config` (`username`, `password` options)  | `sasl.username`, `sasl.password`      |
| `ssl.truststore.location`, `ssl.truststore.type=PEM` | `ssl.ca.location`                     |
| `ssl.keystore.location`, `ssl.keystore.type=PEM`     | `ssl.certificate.location` and        |
| (key and certificate chain in one file, Kafka 2.7+)  | `ssl.key.location`, both that file    |
| `ssl.endpoint.identification.algorithm=` (empty)     | `ssl.endpoint.identification.algorithm=none` |

What librdkafka cannot do is refused with a message naming the property, never dropped:
JKS and PKCS12 stores (librdkafka reads PEM), Java class names (callback handlers, login
classes, security providers), JSSE settings (`ssl.protocol`, `ssl.enabled.protocols`, key
and trust manager algorithms), and settings that would go unused (SASL settings with a
protocol without SASL, TLS ones with a protocol without TLS), which in Kafka pass silently
and leave a client unprotected that its user believes protected. Everything else passes
through as librdkafka's own property; the CLI has librdkafka check the names and values
(it knows which it has) before any command runs.

Messages name properties, never values of secrets: the file holds passwords.

The process-wide default (`set_client_security`, `client_security`) is what `--command-config`
sets: `client_config` (librdkafka.py) puts it under every client's own properties.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from minikafka.config.broker import parse_properties
from minikafka.security.jaas import (
    JaasConfigError,
    check_login_module,
    client_credentials,
    parse_jaas_config,
)

SECURITY_PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# The mechanisms minikafka's brokers offer (and librdkafka's build has).
SASL_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# What a client's login module takes; a broker's (`user_<name>`) or a delegation token's
# (`tokenauth`) options have no librdkafka counterpart.
_CLIENT_JAAS_OPTIONS: Final = frozenset({"username", "password"})

# Properties of Kafka's Java clients that librdkafka does not have, with what to do instead.
_JAVA_ONLY: Final[Mapping[str, str]] = {
    "ssl.protocol": "librdkafka (OpenSSL) negotiates the highest TLS version both sides have",
    "ssl.enabled.protocols": "librdkafka (OpenSSL) negotiates the highest TLS version both "
    "sides have",
    "ssl.provider": "librdkafka's TLS is OpenSSL's",
    "ssl.keymanager.algorithm": "a JSSE setting; librdkafka's TLS is OpenSSL's",
    "ssl.trustmanager.algorithm": "a JSSE setting; librdkafka's TLS is OpenSSL's",
    "ssl.secure.random.implementation": "a JSSE setting; librdkafka's TLS is OpenSSL's",
    "ssl.engine.factory.class": "librdkafka cannot load Java classes",
    "ssl.truststore.certificates": "put the certificates in a file: "
    "ssl.truststore.location with ssl.truststore.type=PEM",
    "ssl.keystore.certificate.chain": "put the key and the certificate chain in one file: "
    "ssl.keystore.location with ssl.keystore.type=PEM",
    "ssl.keystore.key": "put the key and the certificate chain in one file: "
    "ssl.keystore.location with ssl.keystore.type=PEM",
    "ssl.client.auth": "a broker's setting (whether it asks clients for certificates)",
    "ssl.principal.mapping.rules": "a broker's setting",
    "security.providers": "librdkafka cannot load Java classes",
    "sasl.client.callback.handler.class": "librdkafka cannot load Java classes",
    "sasl.login.callback.handler.class": "librdkafka cannot load Java classes",
    "sasl.login.class": "librdkafka cannot load Java classes",
    "sasl.login.refresh.window.factor": "token refresh of Kafka's Java login (OAUTHBEARER, "
    "Kerberos), which minikafka's brokers do not offer",
    "sasl.login.refresh.window.jitter": "token refresh of Kafka's Java login (OAUTHBEARER, "
    "Kerberos), which minikafka's brokers do not offer",
    "sasl.login.refresh.min.period.seconds": "token refresh of Kafka's Java login "
    "(OAUTHBEARER, Kerberos), which minikafka's brokers do not offer",
    "sasl.login.refresh.buffer.seconds": "token refresh of Kafka's Java login (OAUTHBEARER, "
    "Kerberos), which minikafka's brokers do not offer",
    "metric.reporters": "librdkafka cannot load Java classes",
    "interceptor.classes": "librdkafka cannot load Java classes",
}

# librdkafka's names of what a Kafka-named property became, for messages about them.
_FROM_KAFKA_NAMES: Final[Mapping[str, str]] = {
    "ssl.ca.location": "ssl.truststore.location",
    "ssl.certificate.location": "ssl.keystore.location",
    "ssl.key.location": "ssl.keystore.location",
    "sasl.username": "sasl.jaas.config",
    "sasl.password": "sasl.jaas.config",
}

# A property whose value must not appear anywhere: passwords, keys, the JAAS line.
_SECRET_NAME: Final = re.compile(r"password|secret|jaas|\.pem$|ssl\.keystore\.key$", re.I)


class ClientSecurityError(ValueError):
    """A client property minikafka refuses. The message names the property and says why,
    never a secret's value."""


def command_config(path: Path) -> dict[str, str]:
    """The client properties of a `--command-config` file (Kafka's names, Java properties
    syntax) as librdkafka's properties; ClientSecurityError naming the file and the property
    for one librdkafka cannot take."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ClientSecurityError(f"{path}: not a UTF-8 text file") from None
    except OSError as e:
        raise ClientSecurityError(f"{path}: {e.strerror or e}") from None
    try:
        return librdkafka_properties(parse_properties(text))
    except ClientSecurityError as e:
        raise ClientSecurityError(f"{path}: {e}") from None


def librdkafka_properties(props: Mapping[str, str]) -> dict[str, str]:
    """Kafka client properties (the Java client's names, or librdkafka's) as librdkafka's
    properties. ClientSecurityError for one it cannot take, or one that would go unused."""
    rest = dict(props)
    out: dict[str, str] = {}
    protocol = "PLAINTEXT"  # Kafka's and librdkafka's default
    if "security.protocol" in rest:
        given = rest.pop("security.protocol").strip()
        protocol = given.upper()  # Kafka's SecurityProtocol.forName ignores case
        if protocol not in SECURITY_PROTOCOLS:
            raise ClientSecurityError(
                f"security.protocol {given!r} is not one of {', '.join(SECURITY_PROTOCOLS)}"
            )
        out["security.protocol"] = protocol
    out.update(_sasl(protocol, rest))
    out.update(_tls(protocol, rest))
    for name in sorted(rest):
        if name in _JAVA_ONLY:
            raise ClientSecurityError(
                f"{name} is a setting of Kafka's Java clients that librdkafka does not have: "
                f"{_JAVA_ONLY[name]}"
            )
    return {**out, **rest}


def _sasl(protocol: str, rest: dict[str, str]) -> dict[str, str]:
    """The SASL settings, taken out of `rest`."""
    if not protocol.startswith("SASL_"):
        unused = sorted(k for k in rest if k.startswith("sasl."))
        if unused:
            raise ClientSecurityError(
                f"{unused[0]} is used only with security.protocol SASL_PLAINTEXT or "
                f"SASL_SSL, and this one is {protocol}"
            )
        return {}
    mechanism = rest.pop("sasl.mechanism", "").strip()
    if not mechanism:
        raise ClientSecurityError(
            f"security.protocol {protocol} needs sasl.mechanism ({', '.join(SASL_MECHANISMS)}); "
            "Kafka's default, GSSAPI (Kerberos), minikafka's brokers do not offer"
        )
    if mechanism not in SASL_MECHANISMS:
        raise ClientSecurityError(
            f"sasl.mechanism {mechanism!r} is not one minikafka's brokers offer "
            f"({', '.join(SASL_MECHANISMS)})"
        )
    jaas = rest.pop("sasl.jaas.config", None)
    native = [k for k in ("sasl.username", "sasl.password") if k in rest]
    if jaas is None:
        if len(native) != 2:
            raise ClientSecurityError(
                f"sasl.mechanism {mechanism} needs the user's credentials: sasl.jaas.config "
                "(Kafka's) or sasl.username and sasl.password (librdkafka's)"
            )
        return {"sasl.mechanism": mechanism}  # the two pass through
    if native:
        raise ClientSecurityError(
            f"sasl.jaas.config and {' and '.join(native)} both give credentials: keep one"
        )
    try:
        entry = parse_jaas_config(jaas)
        check_login_module(entry, mechanism)
    except JaasConfigError as e:  # its messages hold no values
        raise ClientSecurityError(f"sasl.jaas.config: {e}") from None
    others = sorted(set(entry.options) - _CLIENT_JAAS_OPTIONS)
    if others:
        raise ClientSecurityError(
            f"sasl.jaas.config: option {others[0]!r} has no librdkafka counterpart (a client's "
            "login module takes username and password)"
        )
    credentials = client_credentials(entry)
    if credentials is None:
        raise ClientSecurityError("sasl.jaas.config needs both username and password options")
    username, password = credentials
    return {"sasl.mechanism": mechanism, "sasl.username": username, "sasl.password": password}


def _tls(protocol: str, rest: dict[str, str]) -> dict[str, str]:
    """The TLS settings, Kafka's names translated, taken out of `rest` (librdkafka's own
    names stay there and pass through)."""
    if protocol not in ("SSL", "SASL_SSL"):
        unused = sorted(k for k in rest if k.startswith("ssl."))
        if unused:
            raise ClientSecurityError(
                f"{unused[0]} is used only with security.protocol SSL or SASL_SSL, and this "
                f"one is {protocol}"
            )
        return {}
    out: dict[str, str] = {}
    truststore = _store(rest, "truststore", "ssl.ca.location")
    if truststore is not None:
        out["ssl.ca.location"] = truststore
    keystore = _store(rest, "keystore", "ssl.certificate.location", "ssl.key.location")
    if keystore is not None:
        # librdkafka reads the first certificate (with the chain after it) and the first
        # private key of a PEM file, whatever else it holds: the one file serves as both.
        out["ssl.certificate.location"] = out["ssl.key.location"] = keystore
    if "ssl.key.password" in rest:
        if keystore is None and "ssl.key.location" not in rest:
            raise ClientSecurityError(
                "ssl.key.password is the password of the keystore's key: it needs "
                "ssl.keystore.location"
            )
        out["ssl.key.password"] = rest.pop("ssl.key.password")
    if "ssl.endpoint.identification.algorithm" in rest:
        given = rest.pop("ssl.endpoint.identification.algorithm").strip()
        # Kafka turns host name checking off with an empty value; librdkafka with "none".
        if given.lower() not in ("", "https", "none"):
            raise ClientSecurityError(
                f"ssl.endpoint.identification.algorithm {given!r}: Kafka takes https (check "
                "the broker's host name, the default) or an empty value (do not)"
            )
        out["ssl.endpoint.identification.algorithm"] = given.lower() or "none"
    suites = rest.get("ssl.cipher.suites", "")
    if "_WITH_" in suites:
        raise ClientSecurityError(
            "ssl.cipher.suites holds Java's cipher suite names (TLS_..._WITH_...); librdkafka "
            "takes OpenSSL's, colon-separated (e.g. ECDHE-RSA-AES256-GCM-SHA384)"
        )
    return out


def _store(rest: dict[str, str], kind: str, *librdkafka_names: str) -> str | None:
    """The PEM file of Kafka's `ssl.<kind>.location` (kind: truststore, keystore), its type and
    password taken out of `rest`; None if there is none."""
    location = rest.pop(f"ssl.{kind}.location", None)
    given_type = rest.pop(f"ssl.{kind}.type", None)
    password = f"ssl.{kind}.password"
    if location is None:
        if given_type is not None:
            raise ClientSecurityError(f"ssl.{kind}.type without ssl.{kind}.location")
        if password in rest:
            raise ClientSecurityError(f"{password} without ssl.{kind}.location")
        return None
    store_type = (given_type or "JKS").strip().upper()  # JKS: Kafka's default
    if store_type != "PEM":
        default = "" if given_type is not None else " (Kafka's default)"
        what = (
            "the CA certificates in a PEM file"
            if kind == "truststore"
            else "the private key and certificate chain in one PEM file"
        )
        raise ClientSecurityError(
            f"ssl.{kind}.location: a {store_type} {kind}{default}, which librdkafka cannot "
            f"read; it reads {what}: convert the {kind} and set ssl.{kind}.type=PEM"
        )
    if password in rest:
        rest.pop(password)
        only = "" if kind == "truststore" else "; the key's is ssl.key.password"
        raise ClientSecurityError(
            f"{password}: a PEM {kind} has no password (Kafka refuses one too){only}"
        )
    both = [n for n in librdkafka_names if n in rest]
    if both:
        raise ClientSecurityError(
            f"ssl.{kind}.location and {' and '.join(both)} (librdkafka's name for it) both "
            "given: keep one"
        )
    return location.strip()


def kafka_names_note(message: str) -> str:
    """`message` (librdkafka's, naming its properties), with the Kafka property each of those
    came from: a user who wrote ssl.truststore.location learns the ssl.ca.location that
    failed is that one."""
    named = [f"{lib} is {kafka}" for lib, kafka in _FROM_KAFKA_NAMES.items() if lib in message]
    return f"{message} (in Kafka's names: {'; '.join(named)})" if named else message


def redact(text: str, props: Mapping[str, str]) -> str:
    """`text` without the values of `props`' secrets (passwords, keys, the JAAS line)."""
    for name, value in props.items():
        if value and _SECRET_NAME.search(name):
            text = text.replace(value, "[hidden]")
    return text


# ---------------------------------------------------------------------------------------
# The process's default

# Why a process-wide default: a `minikafka` process runs one command against one cluster,
# and every Kafka client it makes must carry that cluster's TLS and SASL settings, including
# the clients made deep inside shared code (read_to_end, the replica client, perf's and
# chaos's workers). Passing the settings down every call chain would touch each function that
# makes a client, and the one forgotten would make a client that cannot connect; a default
# that client_config puts under every client's own properties reaches them all. Library
# callers that reach several clusters (tests, Spark's Python workers, which run in processes
# of their own) pass the properties explicitly; the default is empty unless the CLI sets it.
_default: dict[str, str] = {}


def set_client_security(props: Mapping[str, str]) -> None:
    """Make `props` (librdkafka's names) the security settings of every client this process
    makes from now on (replacing any before)."""
    global _default
    _default = dict(props)  # a new dict: a client being made meanwhile sees old or new whole


def client_security() -> dict[str, str]:
    """The process's client security settings (a copy; {} unless set)."""
    return dict(_default)
