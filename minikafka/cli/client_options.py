"""What the client-side commands (topics, produce, consume) share: `--bootstrap-server`,
`key=value` options, and turning Kafka config names into client keyword arguments."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from minikafka.client.cluster import DEFAULT_BOOTSTRAP, parse_bootstrap_servers

F = TypeVar("F", bound=Callable[..., Any])


def _check_bootstrap(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        parse_bootstrap_servers(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    return value


def bootstrap_server_option(fn: F) -> F:
    decorator = click.option(
        "--bootstrap-server",
        "bootstrap_server",
        default=DEFAULT_BOOTSTRAP,
        show_default=True,
        callback=_check_bootstrap,
        metavar="HOST:PORT[,HOST:PORT]",
        help="Brokers to bootstrap from.",
    )
    return decorator(fn)


def parse_key_values(values: Iterable[str], option: str) -> dict[str, str]:
    """`k=v` strings (repeatable option) -> dict; the value may itself contain '='."""
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected key=value, got {item!r}", param_hint=option)
        out[key.strip()] = value
    return out


def client_kwargs(cls: type, props: dict[str, str], option: str) -> dict[str, Any]:
    """Kafka config names (`linger.ms`) -> keyword arguments of a client class
    (`linger_ms`), converted to the parameter's type (int where the default is an int)."""
    params = inspect.signature(cls).parameters
    out: dict[str, Any] = {}
    for name, raw in props.items():
        arg = name.replace(".", "_").replace("-", "_")
        p = params.get(arg)
        if p is None or p.kind is not inspect.Parameter.KEYWORD_ONLY:
            raise click.BadParameter(f"unknown config {name!r}", param_hint=option)
        if isinstance(p.default, bool):
            out[arg] = raw.strip().lower() == "true"
        elif isinstance(p.default, int) and arg != "acks":
            try:
                out[arg] = int(raw)
            except ValueError:
                raise click.BadParameter(
                    f"{name} must be an integer, not {raw!r}", param_hint=option
                ) from None
        else:
            out[arg] = raw
    return out


def truthy(props: dict[str, str], key: str, default: bool = False) -> bool:
    value = props.get(key)
    return default if value is None else value.strip().lower() == "true"


def unescape(text: str) -> str:
    """`\\t`, `\\n` typed on a command line mean tab and newline (as Kafka's tools read them)."""
    return text.replace("\\t", "\t").replace("\\n", "\n").replace("\\r", "\r")
