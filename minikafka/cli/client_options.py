"""What the client-side commands (topics, produce, consume) share: `--bootstrap-server`,
`key=value` options, and turning Kafka config names into client keyword arguments."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from minikafka.client.cluster import DEFAULT_BOOTSTRAP, parse_bootstrap_servers
from minikafka.client.producer import Producer
from minikafka.client.properties import PropertyError, consumer_config, producer_config

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
    """Kafka config names (`linger.ms`) -> keyword arguments of the Producer or Consumer
    (`linger_ms`), checked as `minikafka.client.properties` checks them."""
    convert = producer_config if cls is Producer else consumer_config
    try:
        return convert(props)
    except PropertyError as e:
        raise click.BadParameter(str(e), param_hint=option) from None


def truthy(props: dict[str, str], key: str, default: bool = False) -> bool:
    value = props.get(key)
    return default if value is None else value.strip().lower() == "true"


def unescape(text: str) -> str:
    """`\\t`, `\\n` typed on a command line mean tab and newline (as Kafka's tools read them)."""
    return text.replace("\\t", "\t").replace("\\n", "\n").replace("\\r", "\r")
