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

`zookeeper.set.acl=true` needs an authenticated identity: without one Kafka refuses to
start with the message below, and so does minikafka. mTLS to ZooKeeper (KIP-515's
`zookeeper.ssl.*` and `zookeeper.clientCnxnSocket`) is not implemented: those properties
are refused by name (`zookeeper.ssl.client.enable=false`, Kafka's default, is accepted).

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
from minikafka.zk.auth import ZkClientAuth

KAFKA_OPTS_ENV: Final = "KAFKA_OPTS"
# Kafka's JaasUtils names.
JAVA_LOGIN_CONFIG_PARAM: Final = "java.security.auth.login.config"
ZK_SASL_CLIENT: Final = "zookeeper.sasl.client"
ZK_LOGIN_CONTEXT_NAME_KEY: Final = "zookeeper.sasl.clientconfig"
DEFAULT_ZK_LOGIN_CONTEXT_NAME: Final = "Client"
ZK_SYSTEM_PROPERTIES: Final = (JAVA_LOGIN_CONFIG_PARAM, ZK_SASL_CLIENT, ZK_LOGIN_CONTEXT_NAME_KEY)

ZK_SET_ACL: Final = "zookeeper.set.acl"
# Kafka 2.8's ZooKeeper TLS client settings (KIP-515), none implemented.
ZK_SSL_CLIENT_ENABLE: Final = "zookeeper.ssl.client.enable"
ZK_CLIENT_CNXN_SOCKET: Final = "zookeeper.clientCnxnSocket"
ZK_SSL_KEYSTORE_LOCATION: Final = "zookeeper.ssl.keystore.location"
ZK_TLS_CONFIGS: Final = frozenset(
    {
        ZK_SSL_CLIENT_ENABLE,
        ZK_CLIENT_CNXN_SOCKET,
        ZK_SSL_KEYSTORE_LOCATION,
        "zookeeper.ssl.keystore.password",
        "zookeeper.ssl.keystore.type",
        "zookeeper.ssl.truststore.location",
        "zookeeper.ssl.truststore.password",
        "zookeeper.ssl.truststore.type",
        "zookeeper.ssl.protocol",
        "zookeeper.ssl.enabled.protocols",
        "zookeeper.ssl.cipher.suites",
        "zookeeper.ssl.endpoint.identification.algorithm",
        "zookeeper.ssl.crl.enable",
        "zookeeper.ssl.ocsp.enable",
    }
)
# Kafka's listeners read their JAAS from these sections when no sasl.jaas.config is set;
# minikafka's do not (config/security.py), so such a section would be ignored: refused.
KAFKA_SERVER_SECTION: Final = "KafkaServer"


def is_zk_tls_prop(name: str) -> bool:
    return name in ZK_TLS_CONFIGS or name.startswith("zookeeper.ssl.")


def check_zk_tls_props(props: Mapping[str, str]) -> None:
    """Refuse Kafka's ZooKeeper TLS settings by name (InvalidConfigError)."""
    refused = sorted(
        name
        for name, value in props.items()
        if is_zk_tls_prop(name)
        and not (name == ZK_SSL_CLIENT_ENABLE and value.strip().lower() == "false")
    )
    if refused:
        raise InvalidConfigError(
            f"{', '.join(refused)}: TLS to ZooKeeper (KIP-515) is not implemented; minikafka's "
            "brokers authenticate to ZooKeeper with SASL DIGEST-MD5 (the JAAS file's Client "
            f"section, -D{JAVA_LOGIN_CONFIG_PARAM}=<file> in ${KAFKA_OPTS_ENV})"
        )


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
) -> ZkClientAuth:
    """Who this broker is to ZooKeeper and whether its znodes get Kafka's ACLs: Kafka's
    JaasUtils.isZkSaslEnabled and KafkaServer's check of `zookeeper.set.acl`, with the
    credentials of the JAAS section ZooKeeper's client would log in with. `read_file` reads
    the JAAS file. InvalidConfigError naming what is wrong (never a password)."""
    unknown = sorted(
        name
        for name in system_props
        if name.startswith("zookeeper.") and name not in ZK_SYSTEM_PROPERTIES
    )
    if unknown:
        raise InvalidConfigError(
            f"${KAFKA_OPTS_ENV}: {', '.join(f'-D{n}' for n in unknown)}: minikafka's ZooKeeper "
            f"client reads only {', '.join(f'-D{n}' for n in ZK_SYSTEM_PROPERTIES)} "
            "(TLS to ZooKeeper is not implemented)"
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
    if set_acl and credentials is None:
        raise InvalidConfigError(
            f"{ZK_SET_ACL} is true, but ZooKeeper client TLS configuration identifying at "
            f"least {ZK_SSL_CLIENT_ENABLE}, {ZK_CLIENT_CNXN_SOCKET}, and "
            f"{ZK_SSL_KEYSTORE_LOCATION} was not present and the verification of the JAAS "
            f"login file failed {zk_security_sys_config_string(system_props)}"
        )
    return ZkClientAuth(sasl=credentials, secure_acls=set_acl)


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


def load_zk_client_auth(set_acl: bool, kafka_opts: str) -> ZkClientAuth:
    """`zk_client_auth` from `$KAFKA_OPTS`'s text, reading the JAAS file it names."""
    return zk_client_auth(
        set_acl,
        jvm_system_properties(kafka_opts),
        lambda path: Path(path).read_text(encoding="utf-8"),
    )
