"""What the client-side commands (topics, produce, consume, ...) share: `--bootstrap-server`
with `--command-config` (Kafka's tools' client properties file: TLS, SASL), the admin
endpoints' token of the command's cluster, and `key=value` options."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any, Final, TypeVar

import click

from minikafka.client.bootstrap import DEFAULT_BOOTSTRAP, parse_bootstrap_servers
from minikafka.client.client_security import (
    ClientSecurityError,
    client_security,
    command_config,
    kafka_names_note,
    redact,
    set_client_security,
)
from minikafka.client.librdkafka import (
    ClientConfigError,
    MissingClientError,
    check_shared_config,
    require_librdkafka,
)
from minikafka.client.replica_states import ADMIN_TOKEN_ENV
from minikafka.cluster.data_dir import STATE_FILE, default_data_dir
from minikafka.cluster.local import LocalCluster

F = TypeVar("F", bound=Callable[..., Any])


# Where a client command bootstraps from when --bootstrap-server is not given and no local
# cluster runs in the default data dir.
BOOTSTRAP_ENV = "MINIKAFKA_BOOTSTRAP_SERVERS"


def default_bootstrap(take_client_config: bool = False) -> str:
    """The brokers of the local cluster in the default data dir when it runs (its
    cluster.json knows every broker, so one dead broker does not stop a command), else
    $MINIKAFKA_BOOTSTRAP_SERVERS, else localhost:9092. With `take_client_config`, the local
    cluster's client settings (TLS, SASL: what its saved state says a client needs) become
    the process's client security settings too."""
    return _default_bootstrap(take_client_config)[0]


def _default_bootstrap(take_client_config: bool) -> tuple[str, LocalCluster | None]:
    """`default_bootstrap`'s servers, and the local cluster they are of (None: another)."""
    local = _running_local_cluster()
    if local is None:
        return os.environ.get(BOOTSTRAP_ENV) or DEFAULT_BOOTSTRAP, None
    # A secured local cluster says what its clients need (librdkafka's names); older
    # LocalClusters have no client_config and plaintext listeners.
    settings = getattr(local, "client_config", None) if take_client_config else None
    if settings is not None:
        set_client_security(settings())
    return local.bootstrap_servers, local


def _running_local_cluster() -> LocalCluster | None:
    data_dir = default_data_dir()
    if (data_dir / STATE_FILE).is_file():
        with contextlib.suppress(Exception):  # unreadable or not ours: the next choice
            local = LocalCluster(data_dir)
            if any(local.is_alive(b) for b in local.broker_ids):
                return local
    return None


# ctx.meta's mark of a command given --command-config: its settings, not the local
# cluster's, are the command's.
_COMMAND_CONFIG_GIVEN: Final = "minikafka.command_config"
# ctx.meta's local cluster the command bootstraps from by default (none: another cluster).
_LOCAL_CLUSTER: Final = "minikafka.local_cluster"


def admin_token() -> str | None:
    """The admin endpoints' token (`admin.listeners.token`) for the current command's
    cluster: the running local cluster's own when the command bootstraps from it by
    default (as it takes its client settings), else $MINIKAFKA_ADMIN_TOKEN; None: none."""
    ctx = click.get_current_context(silent=True)
    local = None if ctx is None else ctx.meta.get(_LOCAL_CLUSTER)
    # Older LocalClusters (and the tests' stand-ins) have no token.
    own = getattr(local, "admin_token", None)
    token = own() if callable(own) else None
    return token if isinstance(token, str) and token else os.environ.get(ADMIN_TOKEN_ENV) or None


def take_local_cluster_settings(ctx: click.Context, cluster: LocalCluster) -> None:
    """A command run against a local cluster it was pointed at (--data-dir) connects as
    the cluster's clients must (its TLS and SASL settings), unless --command-config said
    otherwise."""
    if not ctx.meta.get(_COMMAND_CONFIG_GIVEN, False):
        set_client_security(cluster.client_config())
    ctx.meta[_LOCAL_CLUSTER] = cluster


def _check_bootstrap(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    if value is None:
        # --command-config (eager: read before this) may name the servers, as a Kafka
        # client's properties file does.
        value = client_security().get("bootstrap.servers")
        if not value:
            value, ctx.meta[_LOCAL_CLUSTER] = _default_bootstrap(
                not ctx.meta.get(_COMMAND_CONFIG_GIVEN, False)
            )
    try:
        parse_bootstrap_servers(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    return value


def _load_command_config(
    ctx: click.Context, param: click.Parameter, value: Path | None
) -> Path | None:
    """--command-config's file, read, translated and checked by librdkafka, as the process's
    client security settings (client_security.py says why the whole process)."""
    if value is None:
        # Each command starts without settings (tests run many commands in one process).
        set_client_security({})
        return None
    props: dict[str, str] = {}
    try:
        props = command_config(value)
        try:
            require_librdkafka("checking --command-config")
        except MissingClientError:
            pass  # the command says itself that it needs librdkafka
        else:
            check_shared_config(props)
    except ClientSecurityError as e:
        raise click.BadParameter(str(e), ctx, param) from None
    except ClientConfigError as e:
        message = redact(kafka_names_note(str(e)), props)
        raise click.BadParameter(f"{value}: librdkafka refuses it: {message}", ctx, param) from None
    set_client_security(props)
    ctx.meta[_COMMAND_CONFIG_GIVEN] = True
    return value


def _config_file_option(flag: str) -> Callable[[F], F]:
    """A client properties file option (`--command-config`, or `--admin.config` as
    kafka-leader-election.sh names it), which the command does not get: it sets the
    process's client security settings, which every client the command makes takes."""
    return click.option(
        flag,
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        callback=_load_command_config,
        expose_value=False,
        # Read before --bootstrap-server's default is chosen, which it may give.
        is_eager=True,
        metavar="FILE",
        help="Client properties file, as Kafka's tools take it: security.protocol, "
        "sasl.mechanism, sasl.jaas.config, ssl.truststore.location and "
        "ssl.keystore.location (type PEM), ... by Kafka's or librdkafka's names, for every "
        "client the command makes; one librdkafka cannot take is refused. Without it, a "
        "command bootstrapping from the running local cluster by default takes that "
        "cluster's client settings.",
    )


def command_config_option(fn: F) -> F:
    """--command-config (see `_config_file_option`)."""
    return _config_file_option("--command-config")(fn)


def _bootstrap_option(fn: F) -> F:
    decorator = click.option(
        "--bootstrap-server",
        "bootstrap_server",
        default=None,
        callback=_check_bootstrap,
        metavar="HOST:PORT[,HOST:PORT]",
        help="Brokers to bootstrap from. Default: the client properties file's "
        "bootstrap.servers, else every broker of the running local cluster (`minikafka "
        f"cluster up`'s default data dir), else ${BOOTSTRAP_ENV}, else {DEFAULT_BOOTSTRAP}.",
    )
    return decorator(fn)


def bootstrap_server_option(fn: F) -> F:
    """--bootstrap-server, and --command-config with it."""
    return _bootstrap_option(command_config_option(fn))


def bootstrap_server_admin_config_option(fn: F) -> F:
    """--bootstrap-server, and --admin.config with it (kafka-leader-election.sh's name for
    the client properties file)."""
    return _bootstrap_option(_config_file_option("--admin.config")(fn))


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
