"""Kafka's client side of SASL, for the connections minikafka itself opens (a broker to
another's inter-broker listener, the tools' own Kafka connections): SaslHandshake v1 naming
the mechanism, then the mechanism's tokens in SaslAuthenticate v2 requests, as Kafka's
SaslClientAuthenticator sends them.

No sockets here: `call` sends one request entity and returns the response entity, so each
connection keeps its own framing and correlation ids."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.security.plain import plain_token
from minikafka.security.sasl_server import PLAIN
from minikafka.security.scram import ScramAuthenticationError, ScramClient, ScramMechanism

log = logging.getLogger(__name__)

SaslCall = Callable[[object], Awaitable[object]]


class AuthenticationFailedError(KafkaError):
    code = ErrorCode.SASL_AUTHENTICATION_FAILED


async def sasl_client_authenticate(
    mechanism: str, username: str, password: str, call: SaslCall
) -> None:
    """Authenticate as `username` with `mechanism` over `call`. AuthenticationFailedError
    when the peer refuses (the caller closes the connection: Kafka's broker does too)."""
    from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
    from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

    handshake = await call(SaslHandshakeRequest(mechanism=mechanism))
    error = int(getattr(handshake, "error_code"))  # noqa: B009
    if error != ErrorCode.NONE:
        raise AuthenticationFailedError(
            f"SASL mechanism {mechanism} refused ({ErrorCode(error).name}); the peer enables "
            f"{', '.join(getattr(handshake, 'mechanisms'))}"  # noqa: B009
        )

    async def step(token: bytes) -> bytes:
        response = await call(SaslAuthenticateRequest(auth_bytes=token))
        code = int(getattr(response, "error_code"))  # noqa: B009
        if code != ErrorCode.NONE:
            raise AuthenticationFailedError(
                f"authentication as {username} with {mechanism} failed: "
                f"{getattr(response, 'error_message')}"  # noqa: B009
            )
        reply: bytes = getattr(response, "auth_bytes")  # noqa: B009
        return reply

    if mechanism == PLAIN:
        await step(plain_token(username, password))
        return
    client = ScramClient(ScramMechanism.from_name(mechanism), username, password)
    server_first = await step(client.first_message())
    try:
        server_final = await step(client.final_message(server_first))
        client.verify_server_final(server_final)
    except ScramAuthenticationError as e:
        raise AuthenticationFailedError(f"SCRAM with {mechanism} failed: {e}") from e
    log.debug("authenticated as %s with %s", username, mechanism)
