"""The broker's security settings made real: each listener's TLS context and SASL server
settings (what its connections must prove), and how this broker connects to the others'
inter-broker listener (TLS with its own certificate, then SASL with the credentials of
the inter-broker listener's JAAS config), as Kafka's ChannelBuilders do."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from functools import partial

from minikafka.config.security import ListenerSecuritySettings, SecurityConfig
from minikafka.protocol.errors import InvalidConfigError
from minikafka.protocol.kafka.client_codec import CorrelationMismatchError, exchange
from minikafka.rpc.connection import PLAINTEXT_CONNECTIONS, ConnectionSecurity
from minikafka.security.principal import KafkaPrincipal
from minikafka.security.sasl_client import AuthenticationFailedError
from minikafka.security.sasl_client import sasl_client_authenticate as authenticate
from minikafka.security.sasl_server import SaslServerConfig, ScramCredentials
from minikafka.security.ssl_principal import NoMatchingRule, SslPrincipalMapper, ssl_principal
from minikafka.security.tls import SslConfigError, client_context, server_context
from minikafka.server.session import ListenerSecurity


def listener_security(
    settings: ListenerSecuritySettings,
    security: SecurityConfig,
    scram_credentials: ScramCredentials,
    *,
    failed_authentication_delay_ms: int,
    sasl_max_receive_size: int,
    rpc_allowed: Callable[[KafkaPrincipal, str], bool],
) -> ListenerSecurity:
    """What one listener demands; InvalidConfigError naming the property when a key or
    certificate cannot be loaded."""
    context = None
    if settings.ssl is not None:
        try:
            context = server_context(settings.ssl)
        except SslConfigError as e:
            raise InvalidConfigError(f"listener {settings.name}: {e}") from e
    mapper = settings.principal_mapper or SslPrincipalMapper.from_rules(None)

    def principal(dn: str | None) -> KafkaPrincipal:
        try:
            return ssl_principal(dn, mapper)
        except NoMatchingRule as e:
            raise ValueError(f"no ssl.principal.mapping.rules rule maps {dn!r}: {e}") from e

    sasl = None
    if settings.uses_sasl:
        sasl = SaslServerConfig(settings.sasl_mechanisms, settings.plain_users, scram_credentials)
    return ListenerSecurity(
        protocol=settings.protocol,
        ssl_context=context,
        ssl_principal=principal,
        sasl=sasl,
        failed_authentication_delay_ms=failed_authentication_delay_ms,
        sasl_max_receive_size=sasl_max_receive_size,
        serves_rpc=settings.name == security.inter_broker_listener,
        rpc_allowed=rpc_allowed,
    )


def inter_broker_connections(security: SecurityConfig) -> ConnectionSecurity:
    """How this broker's RPC connections to the others authenticate."""
    inter = security.inter_broker
    if inter.protocol == "PLAINTEXT":
        return PLAINTEXT_CONNECTIONS
    context = None
    if inter.ssl is not None:
        try:
            context = client_context(inter.ssl)
        except SslConfigError as e:
            raise InvalidConfigError(f"inter-broker listener {inter.name}: {e}") from e
    authenticate = None
    if security.inter_broker_mechanism is not None:
        assert security.inter_broker_credentials is not None
        username, password = security.inter_broker_credentials
        authenticate = partial(
            sasl_client_authenticate, security.inter_broker_mechanism, username, password
        )
    return ConnectionSecurity(ssl_context=context, authenticate=authenticate)


async def sasl_client_authenticate(
    mechanism: str,
    username: str,
    password: str,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    """security/sasl_client.py's exchange over a fresh connection's streams (its first
    requests: correlation ids from 1). AuthenticationFailedError when the peer refuses."""
    correlation_ids = itertools.count(1)

    async def call(request: object) -> object:
        correlation_id = next(correlation_ids)
        try:
            return await exchange(reader, writer, request, correlation_id, "minikafka-broker")
        except CorrelationMismatchError as e:
            raise AuthenticationFailedError(
                f"SASL answer out of step ({e.got} != {e.expected})"
            ) from None

    await authenticate(mechanism, username, password, call)
