"""How a handler declares the Kafka API it serves, and the one table of versions that
follows from the declarations.

    class GroupApis(ApiFamily):
        @api(HEARTBEAT, "Heartbeat", versions=(0, 4))
        async def heartbeat(self, req: HeartbeatRequest, ctx: RequestContext) -> HeartbeatResponse:

The request model is the handler's `req` annotation, the response model its return
annotation (model.py converts both to and from kio's entity of each version). A handler
returns None when Kafka sends no response (produce with acks=0), or an EncodedResponse when
it writes the frame itself (Produce and Fetch, for speed and zero-copy).
`served_versions` of the families is what ApiVersions advertises and the codec decodes:
there is no other list.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from minikafka.protocol.kafka.fetch_response import Chunk
from minikafka.server.session import ConnectionSession

__all__ = [
    "ApiFamily",
    "ApiSpec",
    "EncodedResponse",
    "RequestContext",
    "Route",
    "api",
    "routes",
    "served_versions",
]

F = TypeVar("F", bound=Callable[..., Awaitable[object]])

_SPEC: Final = "__kafka_api__"


@dataclass(frozen=True, slots=True)
class ApiSpec:
    key: int
    name: str
    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What a handler knows of a request besides its body."""

    api_version: int
    correlation_id: int
    client_id: str  # the header's client.id ("" for null)
    client_host: str  # as Kafka shows a member's host: "/127.0.0.1"
    listener: str  # the listener it came in on (Metadata answers with its addresses)
    # The connection's identity (principal, SASL exchange); None outside a connection (tests).
    session: ConnectionSession | None = None


@dataclass(frozen=True, slots=True)
class EncodedResponse:
    """A response frame a handler wrote itself, as chunks for the socket."""

    chunks: list[Chunk]


def api(key: int, name: str, *, versions: tuple[int, int]) -> Callable[[F], F]:
    """Declare a family's method the handler of API `key` for `versions` (min, max)."""
    low, high = versions
    if not 0 <= low <= high:
        raise ValueError(f"{name}: bad version range {versions}")

    def declare(handler: F) -> F:
        setattr(handler, _SPEC, ApiSpec(key, name, low, high))
        return handler

    return declare


class ApiFamily:
    """A set of related APIs' handlers (one module each: produce, fetch, groups, ...)."""


@dataclass(frozen=True, slots=True)
class Route:
    spec: ApiSpec
    handler: Callable[[Any, RequestContext], Awaitable[object]]
    request_model: type
    response_model: type | None  # None: the handler encodes its response itself


def _declared(family: type[ApiFamily]) -> Iterable[tuple[str, ApiSpec]]:
    for name in dir(family):
        spec = getattr(getattr(family, name), _SPEC, None)
        if isinstance(spec, ApiSpec):
            yield name, spec


def served_versions(families: Iterable[type[ApiFamily]]) -> dict[int, tuple[int, int]]:
    """api key -> (min, max) of every API the families declare, by key."""
    out: dict[int, tuple[int, int]] = {}
    for family in families:
        for _, spec in _declared(family):
            if spec.key in out:
                raise ValueError(f"api key {spec.key} ({spec.name}) is declared twice")
            out[spec.key] = (spec.min_version, spec.max_version)
    return dict(sorted(out.items()))


def routes(family: ApiFamily) -> list[Route]:
    """The routes of one family instance: its handlers, bound, with their models."""
    out = []
    for name, spec in _declared(type(family)):
        method = getattr(family, name)
        hints = typing.get_type_hints(method)
        request_model = hints["req"]
        response_model = hints["return"]
        out.append(
            Route(
                spec,
                method,
                request_model,
                _response_model(response_model),
            )
        )
    return out


def _response_model(hint: Any) -> type | None:
    """The model class in `Model` or `Model | None`; None for EncodedResponse handlers."""
    for arg in typing.get_args(hint) or (hint,):
        if isinstance(arg, type) and dataclasses.is_dataclass(arg) and arg is not EncodedResponse:
            return arg
    return None
