"""What the client-side commands (topics, produce, consume) share: `--bootstrap-server`
and `key=value` options."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Iterable
from typing import Any, TypeVar

import click

from minikafka.client.bootstrap import DEFAULT_BOOTSTRAP, parse_bootstrap_servers
from minikafka.client.librdkafka import MissingClientError, require_librdkafka
from minikafka.cluster.data_dir import STATE_FILE, default_data_dir
from minikafka.cluster.local import LocalCluster

F = TypeVar("F", bound=Callable[..., Any])


# Where a client command bootstraps from when --bootstrap-server is not given and no local
# cluster runs in the default data dir.
BOOTSTRAP_ENV = "MINIKAFKA_BOOTSTRAP_SERVERS"


def default_bootstrap() -> str:
    """The brokers of the local cluster in the default data dir when it runs (its
    cluster.json knows every broker, so one dead broker does not stop a command), else
    $MINIKAFKA_BOOTSTRAP_SERVERS, else localhost:9092."""
    data_dir = default_data_dir()
    if (data_dir / STATE_FILE).is_file():
        with contextlib.suppress(Exception):  # unreadable or not ours: the next choice
            local = LocalCluster(data_dir)
            if any(local.is_alive(b) for b in local.broker_ids):
                return local.bootstrap_servers
    return os.environ.get(BOOTSTRAP_ENV) or DEFAULT_BOOTSTRAP


def _check_bootstrap(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    value = value or default_bootstrap()
    try:
        parse_bootstrap_servers(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    return value


def bootstrap_server_option(fn: F) -> F:
    decorator = click.option(
        "--bootstrap-server",
        "bootstrap_server",
        default=None,
        callback=_check_bootstrap,
        metavar="HOST:PORT[,HOST:PORT]",
        help="Brokers to bootstrap from. Default: every broker of the running local cluster "
        f"(`minikafka cluster up`'s default data dir), else ${BOOTSTRAP_ENV}, else "
        f"{DEFAULT_BOOTSTRAP}.",
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


def refuse_unknown(props: dict[str, str], known: Collection[str], option: str) -> None:
    """A property the command does not have is an error (not a warning it then ignores)."""
    unknown = sorted(set(props) - set(known))
    if unknown:
        raise click.BadParameter(
            f"unknown property {', '.join(unknown)} (known: {', '.join(sorted(known))})",
            param_hint=option,
        )


def truthy(props: dict[str, str], key: str, default: bool = False) -> bool:
    value = props.get(key)
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        raise click.BadParameter(
            f"{key} must be true or false, not {value!r}", param_hint="--property"
        )
    return value.strip().lower() == "true"


def unescape(text: str) -> str:
    """`\\t`, `\\n` typed on a command line mean tab and newline (as Kafka's tools read them)."""
    return text.replace("\\t", "\t").replace("\\n", "\n").replace("\\r", "\r")


def require_client(what: str) -> None:
    """Before anything connects: a one-line error naming the pip command when
    confluent-kafka, which the command (`what ... on librdkafka`) runs on, is missing."""
    try:
        require_librdkafka(what)
    except MissingClientError as e:
        raise click.ClickException(str(e)) from None
