"""Security settings as Kafka names them: each listener's TLS (`ssl.*`) and SASL
(`sasl.enabled.mechanisms`, `listener.name.<listener>.<mechanism>.sasl.jaas.config`)
settings, with Kafka's `listener.name.<listener>.` prefix overriding the unprefixed value;
how brokers authenticate to each other (the inter-broker listener's protocol,
`sasl.mechanism.inter.broker.protocol` and the credentials in that listener's JAAS config);
and the authorizer (`authorizer.class.name`: Kafka's AclAuthorizer or none; `super.users`).

Pure: names and values are checked here, at load; key files are read when the broker builds
its TLS contexts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from minikafka.config.listeners import Listeners
from minikafka.protocol.errors import InvalidConfigError
from minikafka.security.authorizer import parse_super_users
from minikafka.security.jaas import (
    JaasConfigError,
    JaasEntry,
    check_login_module,
    client_credentials,
    parse_jaas_config,
    plain_users,
)
from minikafka.security.principal import KafkaPrincipal
from minikafka.security.sasl_server import PLAIN, SUPPORTED_MECHANISMS
from minikafka.security.ssl_principal import SslPrincipalMapper
from minikafka.security.tls import (
    SSL_CONFIG_NAMES,
    UNSUPPORTED_SSL_CONFIGS,
    SslConfigError,
    SslSettings,
    ssl_settings,
)

LISTENER_PREFIX: Final = "listener.name."
JAAS_SUFFIX: Final = ".sasl.jaas.config"
# Kafka's authorizer in ZooKeeper mode, the one minikafka has (server/acl_store.py).
ACL_AUTHORIZER: Final = "kafka.security.authorizer.AclAuthorizer"
TLS_PROTOCOLS: Final = ("SSL", "SASL_SSL")
SASL_PROTOCOLS: Final = ("SASL_PLAINTEXT", "SASL_SSL")


def is_security_prop(name: str) -> bool:
    """Whether a broker property belongs to this module (read from the properties as given,
    since its names carry listener names)."""
    return name.startswith(("ssl.", LISTENER_PREFIX)) or name == "sasl.jaas.config"


@dataclass(frozen=True)
class ListenerSecuritySettings:
    name: str
    protocol: str
    ssl: SslSettings | None  # SSL and SASL_SSL listeners
    principal_mapper: SslPrincipalMapper | None
    sasl_mechanisms: tuple[str, ...]  # SASL listeners
    plain_users: Mapping[str, str] = field(default_factory=dict, repr=False)
    jaas: Mapping[str, JaasEntry] = field(default_factory=dict, repr=False)

    @property
    def uses_tls(self) -> bool:
        return self.protocol in TLS_PROTOCOLS

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in SASL_PROTOCOLS


@dataclass(frozen=True)
class SecurityConfig:
    listeners: Mapping[str, ListenerSecuritySettings]
    inter_broker_listener: str
    # How this broker authenticates when it connects to another (None: no SASL).
    inter_broker_mechanism: str | None
    inter_broker_credentials: tuple[str, str] | None = field(repr=False)
    authorizer: bool
    super_users: frozenset[KafkaPrincipal]

    @property
    def inter_broker(self) -> ListenerSecuritySettings:
        return self.listeners[self.inter_broker_listener]

    @property
    def secured(self) -> bool:
        return any(ls.protocol != "PLAINTEXT" for ls in self.listeners.values())

    @classmethod
    def parse(
        cls,
        listeners: Listeners,
        props: Mapping[str, str],
        *,
        sasl_enabled_mechanisms: str,
        sasl_mechanism_inter_broker_protocol: str,
        connections_max_reauth_ms: int,
        authorizer_class_name: str,
        super_users: str | None,
    ) -> SecurityConfig:
        try:
            return _parse(
                listeners,
                props,
                sasl_enabled_mechanisms,
                sasl_mechanism_inter_broker_protocol,
                connections_max_reauth_ms,
                authorizer_class_name,
                super_users,
            )
        except (SslConfigError, JaasConfigError) as e:
            raise InvalidConfigError(str(e)) from e


def _check_names(props: Mapping[str, str], listener_names: set[str]) -> None:
    for name in props:
        if name == "sasl.jaas.config":
            raise InvalidConfigError(
                "sasl.jaas.config: a broker's JAAS config names its listener and mechanism: "
                "set listener.name.<listener>.<mechanism>.sasl.jaas.config (e.g. "
                "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config)"
            )
        rest = name
        if name.startswith(LISTENER_PREFIX):
            listener, dot, rest = name[len(LISTENER_PREFIX) :].partition(".")
            if not dot or listener.upper() not in listener_names:
                raise InvalidConfigError(
                    f"{name}: {listener!r} is not one of the broker's listeners "
                    f"({', '.join(sorted(n.lower() for n in listener_names))})"
                )
            if rest == "sasl.enabled.mechanisms":
                continue
            if rest.endswith(JAAS_SUFFIX):
                mechanism = rest[: -len(JAAS_SUFFIX)].upper()
                if mechanism not in SUPPORTED_MECHANISMS:
                    raise InvalidConfigError(
                        f"{name}: mechanism {mechanism} is not one minikafka implements "
                        f"({', '.join(SUPPORTED_MECHANISMS)})"
                    )
                continue
        if rest in UNSUPPORTED_SSL_CONFIGS:
            raise InvalidConfigError(f"{name} is not supported: {UNSUPPORTED_SSL_CONFIGS[rest]}")
        if rest not in SSL_CONFIG_NAMES:
            raise InvalidConfigError(
                f"unknown broker property {name!r}: minikafka refuses properties it does not "
                "implement"
            )


def _mechanisms(value: str, what: str) -> tuple[str, ...]:
    mechanisms = tuple(m.strip().upper() for m in value.split(",") if m.strip())
    for m in mechanisms:
        if m not in SUPPORTED_MECHANISMS:
            raise InvalidConfigError(
                f"{what}: SASL mechanism {m} is not implemented; minikafka implements "
                f"{', '.join(SUPPORTED_MECHANISMS)}"
            )
    if not mechanisms:
        raise InvalidConfigError(f"{what} must name at least one SASL mechanism")
    return mechanisms


def _parse(
    listeners: Listeners,
    props: Mapping[str, str],
    sasl_enabled_mechanisms: str,
    sasl_mechanism_inter_broker_protocol: str,
    connections_max_reauth_ms: int,
    authorizer_class_name: str,
    super_users: str | None,
) -> SecurityConfig:
    names = {e.listener for e in listeners.bind}
    _check_names(props, names)
    if connections_max_reauth_ms != 0:
        raise InvalidConfigError(
            "connections.max.reauth.ms: re-authentication (KIP-368) is not implemented; leave it 0"
        )
    settings: dict[str, ListenerSecuritySettings] = {}
    for e in listeners.bind:
        protocol = listeners.protocol(e.listener)
        prefix = f"{LISTENER_PREFIX}{e.listener.lower()}."
        tls = ssl_settings(props, e.listener) if protocol in TLS_PROTOCOLS else None
        mapper = (
            SslPrincipalMapper.from_rules(tls.principal_mapping_rules) if tls is not None else None
        )
        mechanisms: tuple[str, ...] = ()
        jaas: dict[str, JaasEntry] = {}
        users: dict[str, str] = {}
        if protocol in SASL_PROTOCOLS:
            key = prefix + "sasl.enabled.mechanisms"
            mechanisms = _mechanisms(
                props.get(key, sasl_enabled_mechanisms),
                key if key in props else "sasl.enabled.mechanisms",
            )
            for mechanism in mechanisms:
                jaas_key = f"{prefix}{mechanism.lower()}{JAAS_SUFFIX}"
                raw = props.get(jaas_key)
                if raw is None:
                    if mechanism == PLAIN:
                        raise InvalidConfigError(
                            f"{jaas_key} must be set: PLAIN's users come from it "
                            '(user_<name>="<password>" options)'
                        )
                    continue
                try:
                    entry = parse_jaas_config(raw)
                    check_login_module(entry, mechanism)
                except JaasConfigError as err:
                    raise InvalidConfigError(f"{jaas_key}: {err}") from err
                jaas[mechanism] = entry
                if mechanism == PLAIN:
                    users = plain_users(entry)
        settings[e.listener] = ListenerSecuritySettings(
            e.listener, protocol, tls, mapper, mechanisms, users, jaas
        )

    inter = settings[listeners.inter_broker]
    inter_mechanism: str | None = None
    credentials: tuple[str, str] | None = None
    if inter.uses_sasl:
        inter_mechanism = sasl_mechanism_inter_broker_protocol.strip().upper()
        if inter_mechanism not in inter.sasl_mechanisms:
            raise InvalidConfigError(
                f"sasl.mechanism.inter.broker.protocol {inter_mechanism} must be one of the "
                f"inter-broker listener {inter.name}'s enabled mechanisms "
                f"({', '.join(inter.sasl_mechanisms)})"
            )
        inter_entry = inter.jaas.get(inter_mechanism)
        credentials = client_credentials(inter_entry) if inter_entry is not None else None
        if credentials is None:
            raise InvalidConfigError(
                f"listener.name.{inter.name.lower()}.{inter_mechanism.lower()}{JAAS_SUFFIX} must "
                'hold username="..." password="...": the credentials this broker '
                "authenticates with to the other brokers"
            )

    authorizer = authorizer_class_name.strip()
    if authorizer and authorizer != ACL_AUTHORIZER:
        raise InvalidConfigError(
            f"authorizer.class.name: {authorizer} is not available; minikafka implements "
            f"Kafka's ZooKeeper ACL authorizer, {ACL_AUTHORIZER}"
        )
    try:
        # As AclAuthorizer.configure reads it: an empty part in the middle, or one that is
        # not Type:name, fails the broker's start.
        supers = parse_super_users(super_users)
    except ValueError as err:
        raise InvalidConfigError(f"super.users: {err}") from err
    return SecurityConfig(
        settings,
        listeners.inter_broker,
        inter_mechanism,
        credentials,
        bool(authorizer),
        supers,
    )
