"""Kafka's dotted config names (`linger.ms`) for the clients' keyword arguments (`linger_ms`).

One mapping serves the CLI's `--producer-property linger.ms=5` (string values, parsed by
the parameter's type) and the constructors' Kafka-style config dict,
`Producer({"bootstrap.servers": "localhost:9092", "linger.ms": 5})`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

# Keyword parameters that are objects, not configs.
_NOT_CONFIGS = {"partitioner"}
BOOTSTRAP_SERVERS = "bootstrap.servers"


class PropertyError(ValueError):
    """A property that the client does not have, or a value it cannot take."""


def known_configs(fn: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    """Kafka name -> parameter, for `fn`'s keyword-only parameters (`_` read as `.`)."""
    return {
        name.replace("_", "."): p
        for name, p in inspect.signature(fn).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and name not in _NOT_CONFIGS
    }


def to_kwargs(fn: Callable[..., Any], kind: str, props: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments of `fn` for Kafka-named properties. A string value is parsed by the
    parameter's type (`"true"`, `"5"`); other values are passed as they are. PropertyError
    for a name `fn` does not have, listing the ones it has."""
    known = known_configs(fn)
    out: dict[str, Any] = {}
    for raw_name, raw in props.items():
        name = raw_name.strip()
        p = known.get(name)
        if p is None:
            raise PropertyError(
                f"unknown {kind} property {name!r} (known: {', '.join(sorted(known))})"
            )
        if not isinstance(raw, str):
            out[p.name] = raw
            continue
        value = raw.strip()
        kind_of = str(
            p.annotation
        )  # a string: the clients use `from __future__ import annotations`
        if kind_of == "bool":
            if value.lower() not in ("true", "false"):
                raise PropertyError(f"{name} must be true or false, not {raw!r}")
            out[p.name] = value.lower() == "true"
        elif kind_of in ("int", "int | None"):
            try:
                out[p.name] = int(value)
            except ValueError:
                raise PropertyError(f"{name} must be an integer, not {raw!r}") from None
        else:
            out[p.name] = value
    return out


F = TypeVar("F", bound=Callable[..., Any])


def accepts_kafka_config(kind: str) -> Callable[[F], F]:
    """Let a client's `__init__(self, bootstrap_servers, *, ...)` take, in place of the
    bootstrap servers, a dict of Kafka-named configs (as confluent-kafka's clients do);
    keyword arguments may be given as well, but not the same setting twice."""

    def decorate(init: F) -> F:
        @functools.wraps(init)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
            if not args or not isinstance(args[0], Mapping):
                init(self, *args, **kwargs)
                return
            props = dict(args[0])
            bootstrap = props.pop(BOOTSTRAP_SERVERS, None)
            converted = to_kwargs(init, kind, props)
            if bootstrap is not None:
                converted["bootstrap_servers"] = bootstrap
            twice = sorted(set(converted) & set(kwargs))
            if twice:
                raise TypeError(
                    f"{', '.join(n.replace('_', '.') for n in twice)} given both in the config "
                    "dict and as a keyword argument"
                )
            init(self, *args[1:], **converted, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
