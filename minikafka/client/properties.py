"""Client properties by their Kafka names (`batch.size=65536`) -> keyword arguments of the
minikafka Producer / Consumer (`batch_size=65536`), checked before anything connects.

The names accepted are the clients' keyword-only parameters with `_` read as `.`
(`minikafka.client.config_names`); an unknown name is an error that lists the known ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikafka.client.config_names import PropertyError, to_kwargs
from minikafka.client.consumer import Consumer
from minikafka.client.producer import Producer, check_compression_type, parse_acks

__all__ = ["PropertyError", "consumer_config", "parse_properties", "producer_config"]


def producer_config(props: Mapping[str, str]) -> dict[str, Any]:
    """Producer keyword arguments for Kafka-named properties (PropertyError if unknown or
    malformed)."""
    out = to_kwargs(Producer, "producer", props)
    try:
        if "acks" in out:
            parse_acks(out["acks"])
        if "compression_type" in out:
            check_compression_type(out["compression_type"])
    except ValueError as e:
        raise PropertyError(str(e)) from None
    for name in ("batch_size", "linger_ms", "buffer_memory", "request_timeout_ms"):
        if name in out and out[name] < 0:
            raise PropertyError(f"{name.replace('_', '.')} must not be negative")
    if "max_in_flight_requests_per_connection" in out and (
        out["max_in_flight_requests_per_connection"] < 1
    ):
        raise PropertyError("max.in.flight.requests.per.connection must be at least 1")
    return out


def consumer_config(props: Mapping[str, str]) -> dict[str, Any]:
    """Consumer keyword arguments for Kafka-named properties (PropertyError if unknown)."""
    return to_kwargs(Consumer, "consumer", props)


def parse_properties(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """`k=v` strings -> dict (the value may contain '='); PropertyError if one has no '='."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PropertyError(f"expected key=value, got {item!r}")
        out[key.strip()] = value
    return out
