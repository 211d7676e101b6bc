"""Errors the client raises itself, without a broker error code behind them.

They are KafkaErrors so callers can catch every client failure with one class; their `str`
is the message alone since the code they carry is not one a broker sent.
"""

from __future__ import annotations

from minikafka.protocol.errors import ErrorCode, KafkaError


class ClientError(KafkaError):
    def __str__(self) -> str:
        return self.message


class KafkaTimeoutError(ClientError):
    """Kafka's TimeoutException: a deadline (delivery.timeout.ms, max.block.ms, an admin
    call's timeout) passed. The outcome is unknown: a record may still have been written."""

    code = ErrorCode.REQUEST_TIMED_OUT
    retriable = True


class IllegalStateError(ClientError):
    """Kafka's IllegalStateException: the client was used after close, or before setup."""
