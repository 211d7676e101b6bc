"""One connection's SASL authentication on a SASL_PLAINTEXT or SASL_SSL listener, as Kafka's
SaslServerAuthenticator runs it: a state machine fed the connection's requests, sans IO.

    INITIAL --ApiVersions--> HANDSHAKE --SaslHandshake--> AUTHENTICATE --SaslAuthenticate...--> COMPLETE
       \\------------------SaslHandshake------------------/

Until the exchange completes, a connection may send only these requests, in this order:
anything else is an illegal SASL state and Kafka closes the connection without an answer.
A handshake naming a mechanism the listener does not enable is answered with
UNSUPPORTED_SASL_MECHANISM and the list it does enable; a failed exchange with
SASL_AUTHENTICATION_FAILED and the mechanism's message. Both end the connection (the
network layer closes it after connection.failed.authentication.delay.ms).

SaslHandshake v0 means the client sends the SASL tokens that follow as bare size-prefixed
frames, not in SaslAuthenticate requests (pre-1.0 clients); v1 means SaslAuthenticate.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol

from minikafka.protocol.errors import ErrorCode
from minikafka.security.plain import PlainAuthenticationError, authenticate_plain
from minikafka.security.principal import KafkaPrincipal
from minikafka.security.scram import (
    ScramAuthenticationError,
    ScramCredential,
    ScramMechanism,
    ScramServer,
)

API_VERSIONS: Final = 18
SASL_HANDSHAKE: Final = 17
SASL_AUTHENTICATE: Final = 36

PLAIN: Final = "PLAIN"
SCRAM_MECHANISMS: Final = tuple(m.mechanism_name for m in ScramMechanism)
# What minikafka implements; Kafka also has GSSAPI (Kerberos) and OAUTHBEARER.
SUPPORTED_MECHANISMS: Final = (PLAIN, *SCRAM_MECHANISMS)
# Kafka's sasl.server.max.receive.size: the largest frame an unauthenticated client may send.
DEFAULT_MAX_RECEIVE_SIZE: Final = 524288

ScramCredentials = Callable[[ScramMechanism, str], ScramCredential | None]


class SaslState(enum.Enum):
    INITIAL = "initial"  # nothing received yet
    HANDSHAKE = "handshake"  # ApiVersions answered: a SaslHandshake must follow
    AUTHENTICATE = "authenticate"  # mechanism chosen: tokens follow
    COMPLETE = "complete"
    FAILED = "failed"


class IllegalSaslState(Exception):
    """A request the exchange does not allow now: the connection is closed unanswered."""


@dataclass(frozen=True)
class SaslServerConfig:
    """A listener's SASL settings: sasl.enabled.mechanisms, PLAIN's users (from the
    listener's JAAS config), and where SCRAM credentials come from (ZooKeeper's
    /config/users, cached by the broker)."""

    enabled_mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str] = field(default_factory=dict, repr=False)
    scram_credentials: ScramCredentials = field(default=lambda _m, _u: None, repr=False)


class _Exchange(Protocol):
    def evaluate(self, token: bytes) -> bytes: ...

    @property
    def complete(self) -> bool: ...

    @property
    def username(self) -> str | None: ...


class _PlainExchange:
    """PLAIN is one token in, nothing out."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.username: str | None = None

    @property
    def complete(self) -> bool:
        return self.username is not None

    def evaluate(self, token: bytes) -> bytes:
        if self.username is not None:
            raise PlainAuthenticationError("Unexpected SASL token after authentication")
        self.username = authenticate_plain(token, self._users)
        return b""


@dataclass(frozen=True)
class HandshakeResult:
    error_code: int
    mechanisms: tuple[str, ...]


@dataclass(frozen=True)
class AuthenticateResult:
    error_code: int
    error_message: str | None
    auth_bytes: bytes
    completed: bool = False  # this token ended the exchange successfully
    # Why it failed, for the broker's log only (may name the user; never sent).
    reason: str | None = None

    @property
    def failed(self) -> bool:
        return self.error_code != ErrorCode.NONE


class SaslServerAuthenticator:
    def __init__(self, config: SaslServerConfig) -> None:
        self._config = config
        self.state = SaslState.INITIAL
        self.mechanism: str | None = None
        self.principal: KafkaPrincipal | None = None
        # SaslHandshake v0: the tokens arrive as bare frames.
        self.raw_tokens = False
        self._exchange: _Exchange | None = None

    @property
    def authenticated(self) -> bool:
        return self.state is SaslState.COMPLETE

    def check_request(self, api_key: int) -> None:
        """Raise IllegalSaslState unless the exchange allows a request of `api_key` now."""
        state = self.state
        if state is SaslState.COMPLETE:
            return
        allowed = {
            SaslState.INITIAL: (API_VERSIONS, SASL_HANDSHAKE),
            SaslState.HANDSHAKE: (SASL_HANDSHAKE,),
            SaslState.AUTHENTICATE: () if self.raw_tokens else (SASL_AUTHENTICATE,),
        }.get(state, ())
        if api_key not in allowed:
            self.state = SaslState.FAILED
            raise IllegalSaslState(
                f"Unexpected Kafka request of api key {api_key} during SASL handshake"
                + (f" (state {state.value})" if state is not SaslState.FAILED else "")
            )

    def api_versions_answered(self) -> None:
        if self.state is SaslState.INITIAL:
            self.state = SaslState.HANDSHAKE

    def handshake(self, mechanism: str, version: int) -> HandshakeResult:
        self.check_request(SASL_HANDSHAKE)
        enabled = self._config.enabled_mechanisms
        if mechanism not in enabled:
            self.state = SaslState.FAILED
            return HandshakeResult(ErrorCode.UNSUPPORTED_SASL_MECHANISM, enabled)
        self.mechanism = mechanism
        self._exchange = self._new_exchange(mechanism)
        self.raw_tokens = version == 0
        self.state = SaslState.AUTHENTICATE
        return HandshakeResult(ErrorCode.NONE, enabled)

    def _new_exchange(self, mechanism: str) -> _Exchange:
        if mechanism == PLAIN:
            return _PlainExchange(self._config.plain_users)
        scram = ScramMechanism.from_name(mechanism)
        lookup = self._config.scram_credentials
        return ScramServer(scram, lambda user: lookup(scram, user))

    def authenticate(self, token: bytes) -> AuthenticateResult:
        """Feed one token (a SaslAuthenticate's auth_bytes, or a bare frame after a v0
        handshake); the answer to send back."""
        if self.state is not SaslState.AUTHENTICATE or self._exchange is None:
            self.state = SaslState.FAILED
            raise IllegalSaslState("SASL token received outside of an authentication")
        try:
            reply = self._exchange.evaluate(token)
        except ScramAuthenticationError as e:
            self.state = SaslState.FAILED
            return AuthenticateResult(
                ErrorCode.SASL_AUTHENTICATION_FAILED, str(e), b"", reason=e.reason
            )
        except PlainAuthenticationError as e:
            self.state = SaslState.FAILED
            return AuthenticateResult(ErrorCode.SASL_AUTHENTICATION_FAILED, str(e), b"")
        if self._exchange.complete:
            username = self._exchange.username
            assert username is not None
            self.principal = KafkaPrincipal.user(username)
            self.state = SaslState.COMPLETE
            return AuthenticateResult(ErrorCode.NONE, None, reply, completed=True)
        return AuthenticateResult(ErrorCode.NONE, None, reply)
