"""What a listener demands of its connections, and what one connection has proved.

A listener's security protocol (listener.security.protocol.map) decides how a connection
is authenticated, as in Kafka:
- PLAINTEXT: nothing; the principal is User:ANONYMOUS.
- SSL: TLS; the principal is the client certificate's subject after
  ssl.principal.mapping.rules (User:ANONYMOUS without a certificate).
- SASL_PLAINTEXT, SASL_SSL: a SASL exchange (SaslHandshake, SaslAuthenticate) before any
  other request; the principal is the authenticated user. SASL_SSL over TLS.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from minikafka.security.principal import ANONYMOUS, KafkaPrincipal
from minikafka.security.sasl_server import (
    DEFAULT_MAX_RECEIVE_SIZE,
    SaslServerAuthenticator,
    SaslServerConfig,
)

PLAINTEXT: Final = "PLAINTEXT"
SSL: Final = "SSL"
SASL_PLAINTEXT: Final = "SASL_PLAINTEXT"
SASL_SSL: Final = "SASL_SSL"


def _anyone(_principal: KafkaPrincipal, _host: str) -> bool:
    return True


def _anonymous(_dn: str | None) -> KafkaPrincipal:
    return ANONYMOUS


class CloseConnection(Exception):
    """Raised by a handler that answers by closing the connection, as Kafka's
    RequestChannel.closeConnection does (a produce that failed with acks=0: the client,
    expecting no answer, learns of the failure by the closed connection)."""


@dataclass(frozen=True)
class ListenerSecurity:
    """How one listener authenticates its connections, and who may use the inter-broker RPC
    on it."""

    protocol: str = PLAINTEXT
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)
    # The TLS client's certificate subject (None: no certificate) as a principal; raises
    # ValueError when no ssl.principal.mapping.rules rule matches (the connection is closed).
    ssl_principal: Callable[[str | None], KafkaPrincipal] = field(default=_anonymous, repr=False)
    sasl: SaslServerConfig | None = None
    failed_authentication_delay_ms: int = 100
    sasl_max_receive_size: int = DEFAULT_MAX_RECEIVE_SIZE
    # The RPC (LeaderAndIsr, replica Fetch, ...) is served on the inter-broker listener only,
    # and only to principals allowed CLUSTER_ACTION (Kafka's check on those requests).
    serves_rpc: bool = True
    rpc_allowed: Callable[[KafkaPrincipal, str], bool] = field(default=_anyone, repr=False)

    @property
    def uses_tls(self) -> bool:
        return self.protocol in (SSL, SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in (SASL_PLAINTEXT, SASL_SSL)


class ConnectionSession:
    """One client connection's identity, from its TLS handshake and SASL exchange."""

    def __init__(
        self,
        listener: str,
        security: ListenerSecurity,
        client_host: str,
        principal: KafkaPrincipal = ANONYMOUS,
    ) -> None:
        self.listener = listener
        self.security = security
        # As Kafka shows a group member's host: "/" and the address.
        self.client_host = client_host
        self.principal = principal
        self.sasl: SaslServerAuthenticator | None = (
            SaslServerAuthenticator(security.sasl) if security.sasl is not None else None
        )
        # Set when the connection must end once its last answer is out (a failed SASL
        # exchange): after connection.failed.authentication.delay.ms.
        self.close_after_ms: int | None = None

    @property
    def authenticated(self) -> bool:
        return self.sasl is None or self.sasl.authenticated

    def sasl_completed(self) -> None:
        assert self.sasl is not None and self.sasl.principal is not None
        self.principal = self.sasl.principal

    def fail_authentication(self) -> None:
        self.close_after_ms = self.security.failed_authentication_delay_ms

    @property
    def host(self) -> str:
        """The client's address without Kafka's leading slash (what ACLs' hosts name)."""
        return self.client_host.removeprefix("/")
