"""Client properties by their Kafka names (`batch.size=65536`) -> keyword arguments of the
minikafka Producer / Consumer (`batch_size=65536`), checked before anything connects.

The names accepted are the clients' keyword-only parameters with `_` read as `.`; an unknown
name is an error that lists the known ones. `compression.type` is accepted only as `none`:
the minikafka producer does not compress.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from minikafka.client.consumer import Consumer
from minikafka.client.producer import Producer, parse_acks

# Keyword parameters that are objects, not configs.
_NOT_CONFIGS = {"partitioner"}
DEFAULT_DELIVERY_TIMEOUT_MS = 120000


class PropertyError(ValueError):
    """A property that the client does not have, or a value it cannot take."""


def _known(cls: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    return {
        name.replace("_", "."): p
        for name, p in inspect.signature(cls).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and name not in _NOT_CONFIGS
    }


def _convert(cls: Callable[..., Any], kind: str, props: Mapping[str, str]) -> dict[str, Any]:
    known = _known(cls)
    out: dict[str, Any] = {}
    for raw_name, raw in props.items():
        name = raw_name.strip()
        p = known.get(name)
        if p is None:
            raise PropertyError(
                f"unknown {kind} property {name!r} (known: {', '.join(sorted(known))})"
            )
        value = raw.strip()
        if isinstance(p.default, bool):
            if value.lower() not in ("true", "false"):
                raise PropertyError(f"{name} must be true or false, not {raw!r}")
            out[p.name] = value.lower() == "true"
        elif isinstance(p.default, int) and p.name != "acks":
            try:
                out[p.name] = int(value)
            except ValueError:
                raise PropertyError(f"{name} must be an integer, not {raw!r}") from None
        else:
            out[p.name] = value
    return out


def producer_config(props: Mapping[str, str]) -> dict[str, Any]:
    """Producer keyword arguments for Kafka-named properties (PropertyError if unknown or
    malformed). When linger.ms or request.timeout.ms is raised but delivery.timeout.ms is
    not given, delivery.timeout.ms is raised to their sum (Kafka refuses the combination)."""
    props = dict(props)
    compression = props.pop("compression.type", None)
    if compression is not None and compression.strip().lower() != "none":
        raise PropertyError(
            f"compression.type={compression} is not supported: the minikafka producer "
            "does not compress (only compression.type=none)"
        )
    out = _convert(Producer, "producer", props)
    if "acks" in out:
        try:
            parse_acks(out["acks"])
        except ValueError as e:
            raise PropertyError(str(e)) from None
    for name in ("batch_size", "linger_ms", "buffer_memory", "request_timeout_ms"):
        if name in out and out[name] < 0:
            raise PropertyError(f"{name.replace('_', '.')} must not be negative")
    if "max_in_flight_requests_per_connection" in out and (
        out["max_in_flight_requests_per_connection"] < 1
    ):
        raise PropertyError("max.in.flight.requests.per.connection must be at least 1")
    if "delivery_timeout_ms" not in out:
        floor = out.get("linger_ms", 0) + out.get("request_timeout_ms", 30000)
        if floor > DEFAULT_DELIVERY_TIMEOUT_MS:
            out["delivery_timeout_ms"] = floor
    return out


def consumer_config(props: Mapping[str, str]) -> dict[str, Any]:
    """Consumer keyword arguments for Kafka-named properties (PropertyError if unknown)."""
    return _convert(Consumer, "consumer", props)


def parse_properties(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """`k=v` strings -> dict (the value may contain '='); PropertyError if one has no '='."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PropertyError(f"expected key=value, got {item!r}")
        out[key.strip()] = value
    return out
