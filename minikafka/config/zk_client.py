"""How a broker reaches ZooKeeper securely, from Kafka's settings: SASL from the JAAS file
(Kafka's ZooKeeper client is the JVM's, configured by system properties, which Kafka users
pass in `$KAFKA_OPTS`), and `zookeeper.set.acl` from server.properties.

What minikafka reads of `$KAFKA_OPTS`: the `-D` system properties ZooKeeper's client and
Kafka's JaasUtils read, `java.security.auth.login.config` (the JAAS file),
`zookeeper.sasl.client` (`false`: no SASL) and `zookeeper.sasl.clientconfig` (the JAAS
section, `Client` by default). Any other `-Dzookeeper.*` property is refused by name (it
would change what Kafka's client does, and minikafka's would not); everything else there
is the JVM's (heap, GC) and means nothing to a Python broker.

The JAAS section must be ZooKeeper's DIGEST-MD5 login module with `username` and
`password`; Kerberos (Krb5LoginModule) and any other module are refused by name.

TLS to ZooKeeper is KIP-515's broker settings: `zookeeper.ssl.client.enable=true` with
`zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty`, PEM key and trust
stores (`zookeeper.ssl.keystore.location`/`password`/`type`,
`zookeeper.ssl.truststore.location`/`type`), `zookeeper.ssl.endpoint.identification.algorithm`
(HTTPS, or empty for none); a client certificate is an identity of its own (ZooKeeper's
x509 provider). What kazoo's TLS cannot do is refused by name: JKS and PKCS12 stores, the
protocol and cipher settings, CRL and OCSP checks; so is any of them without
`zookeeper.ssl.client.enable=true`, where Kafka would ignore it.

`zookeeper.set.acl=true` needs an authenticated identity (SASL or a client certificate):
without one Kafka refuses to start with the message below, and so does minikafka.

Pure except `load_zk_client_auth`, which reads the JAAS file.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from minikafka.protocol.errors import InvalidConfigError
from minikafka.security.jaas import (
    ZK_DIGEST_LOGIN_MODULE,
    JaasConfigError,
    JaasEntry,
    client_credentials,
    parse_jaas_file,
)
from minikafka.storage.log_config import parse_bool
from minikafka.zk.auth import ZkClientAuth, ZkTls

KAFKA_OPTS_ENV: Final = "KAFKA_OPTS"
# Kafka's JaasUtils names.
JAVA_LOGIN_CONFIG_PARAM: Final = "java.security.auth.login.config"
ZK_SASL_CLIENT: Final = "zookeeper.sasl.client"
ZK_LOGIN_CONTEXT_NAME_KEY: Final = "zookeeper.sasl.clientconfig"
DEFAULT_ZK_LOGIN_CONTEXT_NAME: Final = "Client"
ZK_SYSTEM_PROPERTIES: Final = (JAVA_LOGIN_CONFIG_PARAM, ZK_SASL_CLIENT, ZK_LOGIN_CONTEXT_NAME_KEY)

ZK_SET_ACL: Final = "zookeeper.set.acl"
# Kafka 2.8's ZooKeeper TLS client settings (KIP-515).
ZK_SSL_CLIENT_ENABLE: Final = "zookeeper.ssl.client.enable"
ZK_CLIENT_CNXN_SOCKET: Final = "zookeeper.clientCnxnSocket"
ZK_SSL_KEYSTORE_LOCATION: Final = "zookeeper.ssl.keystore.location"
ZK_SSL_KEYSTORE_PASSWORD: Final = "zookeeper.ssl.keystore.password"
ZK_SSL_KEYSTORE_TYPE: Final = "zookeeper.ssl.keystore.type"
ZK_SSL_TRUSTSTORE_LOCATION: Final = "zookeeper.ssl.truststore.location"
ZK_SSL_TRUSTSTORE_PASSWORD: Final = "zookeeper.ssl.truststore.password"
ZK_SSL_TRUSTSTORE_TYPE: Final = "zookeeper.ssl.truststore.type"
ZK_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM: Final = "zookeeper.ssl.endpoint.identification.algorithm"
ZK_SSL_CRL_ENABLE: Final = "zookeeper.ssl.crl.enable"
ZK_SSL_OCSP_ENABLE: Final = "zookeeper.ssl.ocsp.enable"
NETTY_CLIENT_CNXN_SOCKET: Final = "org.apache.zookeeper.ClientCnxnSocketNetty"
# Settings kazoo's TLS client has no way to honour, and why.
_NO_PROTOCOL_SETTING: Final = (
    "kazoo's TLS client negotiates TLS 1.2 or later as Python's ssl module does; it takes "
    "no protocol setting"
)
UNSUPPORTED_ZK_TLS_CONFIGS: Final[Mapping[str, str]] = {
    "zookeeper.ssl.protocol": _NO_PROTOCOL_SETTING,
    "zookeeper.ssl.enabled.protocols": _NO_PROTOCOL_SETTING,
    "zookeeper.ssl.cipher.suites": "kazoo's TLS client takes no cipher suites",
    ZK_SSL_TRUSTSTORE_PASSWORD: "a PEM truststore has no password",
}
ZK_TLS_CONFIGS: Final = frozenset(
    {
        ZK_SSL_CLIENT_ENABLE,
        ZK_CLIENT_CNXN_SOCKET,
        ZK_SSL_KEYSTORE_LOCATION,
        ZK_SSL_KEYSTORE_PASSWORD,
        ZK_SSL_KEYSTORE_TYPE,
        ZK_SSL_TRUSTSTORE_LOCATION,
        ZK_SSL_TRUSTSTORE_TYPE,
        ZK_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM,
        ZK_SSL_CRL_ENABLE,
        ZK_SSL_OCSP_ENABLE,
        *UNSUPPORTED_ZK_TLS_CONFIGS,
    }
)
# Kafka's listeners read their JAAS from these sections when no sasl.jaas.config is set;
# minikafka's do not (config/security.py), so such a section would be ignored: refused.
KAFKA_SERVER_SECTION: Final = "KafkaServer"


def is_zk_tls_prop(name: str) -> bool:
    return name in ZK_TLS_CONFIGS or name.startswith("zookeeper.ssl.")


def _bool(props: Mapping[str, str], name: str) -> bool:
    try:
        return parse_bool(props.get(name, "false"))
    except ValueError as e:
        raise InvalidConfigError(f"invalid value for {name}: {e}") from e


def _pem_store(props: Mapping[str, str], location: str, type_: str) -> str | None:
    path = props.get(location) or None
    kind = props.get(type_, "").strip().upper()
    if kind and kind != "PEM":
        raise InvalidConfigError(
            f"{type_}={props[type_]}: minikafka's ZooKeeper client reads PEM stores only "
            "(a key and its certificate chain, or CA certificates); JKS and PKCS12 are not "
            "supported"
        )
    if path is not None and not kind and not path.lower().endswith(".pem"):
        # ZooKeeper's X509Util infers the type from the extension.
        raise InvalidConfigError(
            f"{location}: {path} does not end in .pem; set {type_}=PEM (PEM stores only)"
        )
    return path


def zk_tls(props: Mapping[str, str]) -> ZkTls | None:
    """TLS to ZooKeeper from Kafka's `zookeeper.ssl.*` broker settings (None: plaintext).
    InvalidConfigError naming what minikafka cannot do, or would ignore."""
    for name, why in UNSUPPORTED_ZK_TLS_CONFIGS.items():
        if name in props:
            raise InvalidConfigError(f"{name} is not supported: {why}")
    for name in (ZK_SSL_CRL_ENABLE, ZK_SSL_OCSP_ENABLE):
        if _bool(props, name):
            raise InvalidConfigError(
                f"{name}=true is not supported: kazoo's TLS client checks no revocation"
            )
    unknown = sorted(n for n in props if n not in ZK_TLS_CONFIGS)
    if unknown:
        raise InvalidConfigError(
            f"unknown broker {'property' if len(unknown) == 1 else 'properties'} "
            f"{', '.join(unknown)}: minikafka refuses properties it does not implement"
        )
    if not _bool(props, ZK_SSL_CLIENT_ENABLE):
        ignored = sorted(
            n
            for n in props
            if n not in (ZK_SSL_CLIENT_ENABLE, ZK_SSL_CRL_ENABLE, ZK_SSL_OCSP_ENABLE)
        )
        if ignored:
            raise InvalidConfigError(
                f"{', '.join(ignored)}: set with {ZK_SSL_CLIENT_ENABLE}=true only (without "
                "it the broker reaches ZooKeeper in plaintext and would ignore them)"
            )
        return None
    if props.get(ZK_CLIENT_CNXN_SOCKET, "").strip() != NETTY_CLIENT_CNXN_SOCKET:
        raise InvalidConfigError(
            f"{ZK_SSL_CLIENT_ENABLE}=true needs {ZK_CLIENT_CNXN_SOCKET}="
            f"{NETTY_CLIENT_CNXN_SOCKET}, as ZooKeeper's client does (its TLS is Netty's)"
        )
    algorithm = props.get(ZK_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM, "HTTPS").strip()
    if algorithm.upper() not in ("HTTPS", ""):
        raise InvalidConfigError(
            f"{ZK_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM}={algorithm}: HTTPS (the server's "
            "certificate must name the host connected to) or empty (no check) only"
        )
    keystore = _pem_store(props, ZK_SSL_KEYSTORE_LOCATION, ZK_SSL_KEYSTORE_TYPE)
    truststore = _pem_store(props, ZK_SSL_TRUSTSTORE_LOCATION, ZK_SSL_TRUSTSTORE_TYPE)
    password = props.get(ZK_SSL_KEYSTORE_PASSWORD) or None
    if password is not None and keystore is None:
        raise InvalidConfigError(
            f"{ZK_SSL_KEYSTORE_PASSWORD} is set without {ZK_SSL_KEYSTORE_LOCATION}"
        )
    return ZkTls(keystore, password, truststore, check_hostname=algorithm != "")


def jvm_system_properties(kafka_opts: str) -> dict[str, str]:
    """The `-Dname=value` options of a JVM command line (`$KAFKA_OPTS`), by name; `-Dname`
    alone is the empty string, as for Java. InvalidConfigError for unbalanced quotes."""
    try:
        words = shlex.split(kafka_opts)
    except ValueError as e:
        raise InvalidConfigError(f"${KAFKA_OPTS_ENV} cannot be split into options: {e}") from e
    props: dict[str, str] = {}
    for word in words:
        if word.startswith("-D") and len(word) > 2:
            name, _, value = word[2:].partition("=")
            props[name] = value
    return props


def zk_security_sys_config_string(system_props: Mapping[str, str]) -> str:
    """Kafka's JaasUtils.zkSecuritySysConfigString, for its messages."""
    login = system_props.get(JAVA_LOGIN_CONFIG_PARAM, "null")
    client = system_props.get(ZK_SASL_CLIENT, "default:true")
    context = system_props.get(
        ZK_LOGIN_CONTEXT_NAME_KEY, f"default:{DEFAULT_ZK_LOGIN_CONTEXT_NAME}"
    )
    return (
        f"[{JAVA_LOGIN_CONFIG_PARAM}={login}, {ZK_SASL_CLIENT}={client}, "
        f"{ZK_LOGIN_CONTEXT_NAME_KEY}={context}]"
    )


def zk_client_auth(
    set_acl: bool,
    system_props: Mapping[str, str],
    read_file: Callable[[str], str],
    tls_props: Mapping[str, str] | None = None,
) -> ZkClientAuth:
    """Who this broker is to ZooKeeper and whether its znodes get Kafka's ACLs: Kafka's
    JaasUtils.isZkSaslEnabled and KafkaServer's check of `zookeeper.set.acl`, with the
    credentials of the JAAS section ZooKeeper's client would log in with. `read_file` reads
    the JAAS file; `tls_props` are the broker's `zookeeper.ssl.*` settings (`zk_tls`).
    InvalidConfigError naming what is wrong (never a password)."""
    tls = zk_tls(tls_props or {})
    unknown = sorted(
        name
        for name in system_props
        if name.startswith("zookeeper.") and name not in ZK_SYSTEM_PROPERTIES
    )
    if unknown:
        raise InvalidConfigError(
            f"${KAFKA_OPTS_ENV}: {', '.join(f'-D{n}' for n in unknown)}: minikafka's ZooKeeper "
            f"client reads only {', '.join(f'-D{n}' for n in ZK_SYSTEM_PROPERTIES)} "
            "(set TLS to ZooKeeper with the broker's zookeeper.ssl.* properties)"
        )
    # Java's Boolean.parseBoolean: "true" in any case is true, anything else false.
    sasl_enabled = system_props.get(ZK_SASL_CLIENT, "true").strip().lower() == "true"
    context = system_props.get(ZK_LOGIN_CONTEXT_NAME_KEY, DEFAULT_ZK_LOGIN_CONTEXT_NAME)
    login_file = system_props.get(JAVA_LOGIN_CONFIG_PARAM)
    credentials: tuple[str, str] | None = None
    if login_file:
        where = f"the JAAS file {login_file} ({JAVA_LOGIN_CONFIG_PARAM})"
        try:
            sections = parse_jaas_file(read_file(login_file))
        except OSError as e:
            raise InvalidConfigError(
                "Exception while loading Zookeeper JAAS login context "
                f"{zk_security_sys_config_string(system_props)}: cannot read {login_file}: "
                f"{e.strerror or e}"
            ) from e
        except JaasConfigError as e:
            raise InvalidConfigError(f"{where}: {e}") from e
        if any(name.endswith(KAFKA_SERVER_SECTION) for name in sections):
            raise InvalidConfigError(
                f"{where} has a {KAFKA_SERVER_SECTION} section: minikafka's listeners take "
                "their JAAS config from listener.name.<listener>.<mechanism>.sasl.jaas.config "
                "only; move it there"
            )
        entries = sections.get(context)
        if entries is not None:
            if not sasl_enabled:
                # Kafka's JaasUtils: a JAAS Client section with SASL turned off would
                # leave the broker's znodes open while looking secured.
                raise InvalidConfigError(
                    "Exploitable ZooKeeper configuration: JAAS configuration is present, but "
                    f"system property {ZK_SASL_CLIENT} is set to false, which disables SASL "
                    "in the ZooKeeper client"
                )
            credentials = _digest_credentials(entries, context, where)
    auth = ZkClientAuth(sasl=credentials, secure_acls=set_acl, tls=tls)
    if set_acl and not auth.identified:
        raise InvalidConfigError(
            f"{ZK_SET_ACL} is true, but ZooKeeper client TLS configuration identifying at "
            f"least {ZK_SSL_CLIENT_ENABLE}, {ZK_CLIENT_CNXN_SOCKET}, and "
            f"{ZK_SSL_KEYSTORE_LOCATION} was not present and the verification of the JAAS "
            f"login file failed {zk_security_sys_config_string(system_props)}"
        )
    return auth


def _digest_credentials(
    entries: tuple[JaasEntry, ...], context: str, where: str
) -> tuple[str, str]:
    if len(entries) != 1:
        raise InvalidConfigError(
            f"{where}: section {context} has {len(entries)} login modules; minikafka's "
            f"ZooKeeper client logs in with one, {ZK_DIGEST_LOGIN_MODULE}"
        )
    entry = entries[0]
    if entry.login_module != ZK_DIGEST_LOGIN_MODULE:
        raise InvalidConfigError(
            f"{where}: section {context} uses {entry.login_module}; minikafka's ZooKeeper "
            f"client does SASL DIGEST-MD5 only, with {ZK_DIGEST_LOGIN_MODULE} "
            '(username="..." password="...")'
        )
    credentials = client_credentials(entry)
    if credentials is None or not credentials[0]:
        raise InvalidConfigError(
            f'{where}: section {context} must hold username="..." password="...": who the '
            "broker is to ZooKeeper"
        )
    if any("${" in v for v in credentials):
        raise InvalidConfigError(
            f"{where}: section {context}: ${{property}} expansion in JAAS values is not "
            "implemented; write the value itself"
        )
    return credentials


def load_zk_client_auth(
    set_acl: bool, kafka_opts: str, tls_props: Mapping[str, str] | None = None
) -> ZkClientAuth:
    """`zk_client_auth` from `$KAFKA_OPTS`'s text, reading the JAAS file it names."""
    return zk_client_auth(
        set_acl,
        jvm_system_properties(kafka_opts),
        lambda path: Path(path).read_text(encoding="utf-8"),
        tls_props,
    )
