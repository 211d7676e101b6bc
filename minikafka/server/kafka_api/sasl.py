"""SaslHandshake and SaslAuthenticate: a client authenticating on a SASL listener.

The exchange's rules (which request may come when, what each mechanism checks) are the
connection's SaslServerAuthenticator's (security/sasl_server.py); these handlers feed it
the requests and mark the connection authenticated or failed. On a listener without SASL,
or once authenticated, Kafka answers both with ILLEGAL_SASL_STATE (minikafka does not
re-authenticate: connections.max.reauth.ms is 0).
"""

from __future__ import annotations

import logging

from minikafka.protocol.errors import ErrorCode
from minikafka.security.sasl_server import SASL_AUTHENTICATE, SASL_HANDSHAKE
from minikafka.server.kafka_api.models.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from minikafka.server.kafka_api.registry import ApiFamily, RequestContext, api

log = logging.getLogger(__name__)


class SaslApis(ApiFamily):
    @api(SASL_HANDSHAKE, "SaslHandshake", versions=(0, 1))
    async def sasl_handshake(
        self, req: SaslHandshakeRequest, ctx: RequestContext
    ) -> SaslHandshakeResponse:
        session = ctx.session
        sasl = session.sasl if session is not None else None
        if sasl is None or sasl.authenticated:
            return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=())
        result = sasl.handshake(req.mechanism, ctx.api_version)
        if result.error_code != ErrorCode.NONE:
            assert session is not None
            log.info(
                "SASL mechanism %r from %s is not enabled on listener %s (enabled: %s)",
                req.mechanism,
                ctx.client_host,
                ctx.listener,
                ", ".join(result.mechanisms),
            )
            session.fail_authentication()
        return SaslHandshakeResponse(error_code=result.error_code, mechanisms=result.mechanisms)

    @api(SASL_AUTHENTICATE, "SaslAuthenticate", versions=(0, 2))
    async def sasl_authenticate(
        self, req: SaslAuthenticateRequest, ctx: RequestContext
    ) -> SaslAuthenticateResponse:
        session = ctx.session
        sasl = session.sasl if session is not None else None
        if session is None or sasl is None or sasl.authenticated:
            return SaslAuthenticateResponse(
                error_code=ErrorCode.ILLEGAL_SASL_STATE,
                error_message="SaslAuthenticate request received after successful authentication"
                if sasl is not None
                else "SaslAuthenticate request received on a listener without SASL",
                auth_bytes=b"",
            )
        result = sasl.authenticate(req.auth_bytes)
        if result.failed:
            log.info(
                "failed authentication with %s (%s) on listener %s: %s",
                ctx.client_host,
                sasl.mechanism,
                ctx.listener,
                result.reason or result.error_message,
            )
            session.fail_authentication()
        elif result.completed:
            session.sasl_completed()
        return SaslAuthenticateResponse(
            error_code=result.error_code,
            error_message=result.error_message,
            auth_bytes=result.auth_bytes,
        )
