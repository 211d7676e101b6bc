"""`minikafka configs`: kafka-configs.sh (Kafka 2.8's ConfigCommand with --bootstrap-server)
for topics, brokers and users.

Topics and brokers, over Kafka's protocol (client/resource_configs.py: DescribeConfigs with
synonyms, IncrementalAlterConfigs, AlterConfigs):

- `--entity-type topics --entity-name T` (`--topic T`), `--entity-type brokers
  --entity-name N` (`--broker N`), `--entity-type brokers --entity-default`
  (`--broker-defaults`: every broker's default, `/config/brokers/<default>`).
- `--describe`: "Dynamic configs for topic t are:" (or broker 1; "Default configs for
  brokers in the cluster are:"), then a line per config the entity sets itself,
  `  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000,
  DEFAULT_CONFIG:...}`; `--all`: every config ("All configs for ..."). Without a name:
  every topic, every broker then their default.
- `--alter --add-config k=v,k2=[a,b] --delete-config k3`: as Kafka 2.8 does it, a topic's
  with IncrementalAlterConfigs (SET and DELETE), a broker's and the default with
  AlterConfigs (the entity's dynamic configs, changed, sent whole); a config to delete
  must be set on the entity ("Invalid config(s): k3"), and a broker's sensitive dynamic
  config, which the broker describes without its value, must be given again.
  "Completed updating config for topic t." / "... for broker 1." / "Completed updating
  default config for brokers in the cluster.".

Users: the SCRAM credentials of KIP-554, on librdkafka's admin client (confluent-kafka)
over Kafka's protocol (AlterUserScramCredentials, DescribeUserScramCredentials):

- `--alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]'`
  is read as parseConfigsToBeAdded reads it (commas outside `[...]` separate the configs,
  every `[` and `]` is dropped from a value), and each credential as
  alterUserScramCredentialConfigs does: `[iterations=N,]password=P`, iterations first,
  since everything after `password=` is the password; 4096 iterations unless given (or -1).
  The client salts and hashes the password (librdkafka's UserScramCredentialUpsertion, with
  a salt made as Kafka's ScramFormatter makes one): the password never leaves it.
- `--alter --delete-config SCRAM-SHA-512[,SCRAM-SHA-256]`; deletions and upsertions go in
  one request, as Kafka sends them.
- `--describe [--entity-name U ...]`: a line per user with credentials, `SCRAM credential
  configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192,
  SCRAM-SHA-512=iterations=4096`, every user (in the broker's order) when none is named; a
  named user without credentials is left out, as Kafka's DescribeUserScramCredentialsResult
  leaves out RESOURCE_NOT_FOUND; another error of one user is Kafka's `Error retrieving SCRAM
  credential configs for user-principal ...` line.
- `--user U` is `--entity-type users --entity-name U`; `Completed updating config for user
  alice.` ends an alteration.

Where it differs from Kafka's tool: minikafka has no client quotas, so quota configs are
refused (and the `Quota configs for ...` lines Kafka prints only for quotas never appear);
clients, ips and broker-loggers are refused, saying why; `--zookeeper` alters users
only; `--add-config-file` is not taken; topics are described in name order; an iteration count
above Kafka's maximum (16384) is refused before the broker would (UNACCEPTABLE_CREDENTIAL);
a credential Kafka could not parse is refused without repeating it, and a failure is one line,
`Error while executing config command : <error>: <broker's message>`, without the
arguments and stack trace Kafka prints (the arguments hold passwords); a user's error in
--describe makes the status 1, as `minikafka consumer-groups` does for one group's.
Argument errors are click's usage errors (status 2).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, NoReturn, TypeVar

import click

from minikafka.cli.client_options import bootstrap_server_option, require_client
from minikafka.client.librdkafka import (
    ClientConfigError,
    WatchedAdmin,
    cluster_metadata,
    kafka_error_text,
)
from minikafka.client.resource_configs import (
    BROKER,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    SOURCE_NAMES,
    TOPIC,
    ConfigEntry,
    ResourceConfigs,
)
from minikafka.protocol import errors as kafka_errors
from minikafka.security.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramMechanism,
    make_credential,
    secure_random_string,
    validate_iterations,
)

if TYPE_CHECKING:
    from confluent_kafka import KafkaError
    from confluent_kafka.admin._scram import UserScramCredentialAlteration

T = TypeVar("T")

# Kafka's ConfigCommand.DefaultScramIterations.
DEFAULT_ITERATIONS: Final = 4096
# What kafka-configs.sh takes with --bootstrap-server (ConfigCommand.BrokerSupportedConfigTypes).
ENTITY_TYPES: Final = ("users", "topics", "clients", "brokers", "broker-loggers", "ips")
# Kafka's user and client quota configs (QuotaConfigs): minikafka has no quotas.
QUOTA_CONFIGS: Final = (
    "producer_byte_rate",
    "consumer_byte_rate",
    "request_percentage",
    "controller_mutation_rate",
)
# How long one call may take (Kafka's tool waits 60 s for an alteration).
API_TIMEOUT_S = 60.0
NOT_CONTROLLER = 41  # Kafka's error code: the request went to a broker no longer controller

# Kafka's codes for what can go wrong for one user of a DescribeUserScramCredentials
# (ZkAdminManager.describeUserScramCredentials) and the Java exceptions Kafka's tool names
# in its line; any other error is the whole request's.
RESOURCE_NOT_FOUND: Final = 91
_USER_ERRORS: Final = {-1: "UnknownServerException", 92: "DuplicateResourceException"}


class ConfigCommandError(Exception):
    """A failure worth one line on stderr, not a traceback."""


class ConfigSyntaxError(ValueError):
    """An --add-config or --delete-config Kafka's tool would refuse too. Never holds a
    value: values are passwords."""


_REFUSED_ENTITY_TYPES: Final = {
    "broker-loggers": "minikafka's brokers have no broker-logger configs (their log levels "
    "are not dynamic).",
    "clients": "Client configs are quotas, and minikafka has no quotas.",
    "ips": "IP configs are connection quotas, and minikafka has no quotas.",
}


# ---------------------------------------------------------------------------------------
# --add-config and --delete-config, as Kafka's ConfigCommand reads them

# A separator outside [...]: no ']' before the next '[' or the end (ConfigCommand's lookahead).
_OUTSIDE_BRACKETS: Final = r"(?=[^\]]*(?:\[|$))"
_CONFIG_SEPARATOR: Final = re.compile("," + _OUTSIDE_BRACKETS)
# Java's \s: ASCII white space only.
_KEY_VALUE_SEPARATOR: Final = re.compile(r"[ \t\n\x0b\f\r]*=[ \t\n\x0b\f\r]*" + _OUTSIDE_BRACKETS)
_BRACKETS: Final = re.compile(r"[\[\]]")
# Java's String.trim: every character up to U+0020.
_JAVA_TRIMMED: Final = "".join(chr(c) for c in range(0x21))
# alterUserScramCredentialConfigs' pattern; Java's '.' stops at any line terminator.
_CREDENTIAL: Final = re.compile(r"(?:iterations=(-?[0-9]*),)?password=([^\n\r\x85\u2028\u2029]*)")


def _java_split(pattern: re.Pattern[str], text: str) -> list[str]:
    """Java's String.split(regex): trailing empty strings dropped (unless nothing matched)."""
    parts = pattern.split(text)
    if len(parts) == 1:
        return parts
    while parts and not parts[-1]:
        parts.pop()
    return parts


def parse_add_config(text: str) -> dict[str, str]:
    """Kafka's `--add-config` (ConfigCommand.parseConfigsToBeAdded): `key=value` configs
    separated by commas, `[...]` grouping a value that holds commas (or `=`), e.g.
    `k1=v1,k2=[v1,v2,v2],k3=v3`. Every `[` and `]` is dropped from a value, keys and values
    are trimmed, and a key given twice keeps its last value."""
    pairs = [_KEY_VALUE_SEPARATOR.split(item) for item in _java_split(_CONFIG_SEPARATOR, text)]
    if any(len(pair) != 2 for pair in pairs):
        raise ConfigSyntaxError(
            'Invalid entity config: all configs to be added must be in the format "key=val".'
        )
    return {
        key.strip(_JAVA_TRIMMED): _BRACKETS.sub("", value).strip(_JAVA_TRIMMED)
        for key, value in pairs
    }


def parse_delete_config(values: Iterable[str]) -> list[str]:
    """Kafka's `--delete-config` (repeatable, each comma-separated): the names, trimmed, in
    order, each once."""
    names: list[str] = []
    for value in values:
        for raw in value.split(","):
            name = raw.strip(_JAVA_TRIMMED)
            if not name:
                raise ConfigSyntaxError(f"--delete-config {value!r} names an empty config")
            if name not in names:
                names.append(name)
    return names


@dataclass(frozen=True)
class ScramUpsertion:
    mechanism: ScramMechanism
    iterations: int
    password: str = field(repr=False)


def parse_scram_credential(mechanism: ScramMechanism, value: str) -> ScramUpsertion:
    """A credential of `--add-config`, `[iterations=N,]password=P`, as Kafka's
    alterUserScramCredentialConfigs reads it: iterations first (everything after `password=`
    is the password), 4096 unless given or -1. ConfigSyntaxError for a credential Kafka
    refuses, an iteration count out of Kafka's bounds or an empty password; the message
    names the mechanism, never the value."""
    name = mechanism.mechanism_name
    match = _CREDENTIAL.fullmatch(value)
    if match is None:
        raise ConfigSyntaxError(
            f"Invalid credential property {name}: expected {name}=[iterations=N,password=P] "
            f"or {name}=[password=P]"
        )
    iterations_text, password = match.group(1), match.group(2)
    if iterations_text is None or iterations_text == "-1":
        iterations = DEFAULT_ITERATIONS
    elif iterations_text in ("", "-"):
        raise ConfigSyntaxError(f"Invalid credential property {name}: iterations is not a number")
    else:
        iterations = int(iterations_text)
    problem = validate_iterations(iterations)
    if problem is not None and iterations < MIN_ITERATIONS:
        raise ConfigSyntaxError(
            f"Iterations {iterations} is less than the minimum {MIN_ITERATIONS} required for {name}"
        )
    if problem is not None:
        raise ConfigSyntaxError(
            f"Iterations {iterations} is more than the maximum {MAX_ITERATIONS} allowed for "
            f"{name} (a broker refuses it: {problem})"
        )
    if not password:
        raise ConfigSyntaxError(f"Invalid credential property {name}: the password is empty")
    return ScramUpsertion(mechanism, iterations, password)


@dataclass(frozen=True)
class ScramAlteration:
    """One user's credential changes: deletions and upsertions, at most one per mechanism."""

    user: str
    upsertions: tuple[ScramUpsertion, ...]
    deletions: tuple[ScramMechanism, ...]

    def warnings(self) -> list[str]:
        """What Kafka's syntax does that its user may not have meant."""
        return [
            f"Warning: {u.mechanism.mechanism_name}'s password holds ',iterations=': "
            "kafka-configs.sh reads iterations only before password=, so that is part of the "
            "password"
            for u in self.upsertions
            if ",iterations=" in u.password
        ]


def _scram_names(names: Sequence[str]) -> tuple[list[ScramMechanism], list[str], list[str]]:
    """(SCRAM mechanisms, quota configs, others) among config names."""
    scram = [ScramMechanism.from_name(n) for n in names if n in _MECHANISM_NAMES]
    quotas = [n for n in names if n in QUOTA_CONFIGS]
    others = [n for n in names if n not in _MECHANISM_NAMES and n not in QUOTA_CONFIGS]
    return scram, quotas, others


_MECHANISM_NAMES: Final = frozenset(m.mechanism_name for m in ScramMechanism)


def user_alteration(user: str, add: dict[str, str], delete: Sequence[str]) -> ScramAlteration:
    """What --add-config and --delete-config ask of `user`'s credentials; ConfigSyntaxError
    for a config users do not have here (quotas, unknown names) or a credential Kafka's tool
    refuses."""
    for names, verb in ((list(add), "added"), (list(delete), "deleted")):
        _, quotas, others = _scram_names(names)
        if quotas:
            raise ConfigSyntaxError(
                f"minikafka has no quotas: {', '.join(quotas)} cannot be {verb} (users have "
                "SCRAM credential configs only: SCRAM-SHA-256, SCRAM-SHA-512)"
            )
        if others:
            raise ConfigSyntaxError(
                f"Only SCRAM credential configs can be {verb} for 'users' (SCRAM-SHA-256, "
                f"SCRAM-SHA-512). Unexpected config names: {', '.join(others)}"
            )
    both = sorted(set(add) & set(delete))
    if both:
        raise ConfigSyntaxError(f"{', '.join(both)}: both added and deleted")
    upsertions = tuple(
        parse_scram_credential(ScramMechanism.from_name(name), value) for name, value in add.items()
    )
    deletions = tuple(_scram_names(delete)[0])
    return ScramAlteration(user, upsertions, deletions)


# ---------------------------------------------------------------------------------------
# What the broker says


def mechanism_name(code: int) -> str:
    """Kafka's name of a KIP-554 mechanism type (UNKNOWN for one it does not know)."""
    try:
        return ScramMechanism.from_type_code(code).mechanism_name
    except ValueError:
        return "UNKNOWN"


def describe_line(user: str, credentials: Iterable[tuple[int, int]]) -> str:
    """Kafka's line for a user's credentials, each (mechanism type, iterations)."""
    text = ", ".join(f"{mechanism_name(m)}=iterations={i}" for m, i in credentials)
    return f"SCRAM credential configs for user-principal '{user}' are {text}"


def describe_error_line(user: str, code: int, message: str) -> str:
    """Kafka's line for a user the broker could not describe (the error as Java's
    ExecutionException shows it)."""
    exception = _USER_ERRORS.get(code, "KafkaException")
    return (
        f"Error retrieving SCRAM credential configs for user-principal '{user}': "
        f"ExecutionException: org.apache.kafka.common.errors.{exception}: {message}"
    )


def completed_line(user: str) -> str:
    return f"Completed updating config for user {user}."


class _Admin(WatchedAdmin):
    def __init__(self, bootstrap_server: str) -> None:
        super().__init__(bootstrap_server, ConfigCommandError, API_TIMEOUT_S)

    def alter(self, alteration: ScramAlteration) -> None:
        """One user's alterations in one request to the controller, sent again after
        NOT_CONTROLLER (the controller moved) until the API timeout, as Kafka's admin client
        does."""
        from confluent_kafka import KafkaException

        requests = _requests(alteration)
        deadline = time.monotonic() + API_TIMEOUT_S
        while True:
            timeout_s = max(1.0, deadline - time.monotonic())
            futures = self.client.alter_user_scram_credentials(requests, request_timeout=timeout_s)
            try:
                self.wait(futures[alteration.user], deadline)
                return
            except KafkaException as e:
                if _error(e).code() != NOT_CONTROLLER or time.monotonic() >= deadline:
                    raise
            time.sleep(0.1)  # Kafka's retry.backoff.ms
            # Metadata naming the new controller, where the request goes next.
            with contextlib.suppress(KafkaException):
                self.client.list_topics(timeout=1.0)

    def describe(self, users: Sequence[str]) -> tuple[list[str], bool]:
        """Kafka's lines for `users` (every user with credentials if none), and whether every
        user named could be described."""
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + API_TIMEOUT_S
        if not users:
            future = self.client.describe_user_scram_credentials(request_timeout=API_TIMEOUT_S)
            assert isinstance(future, Future)
            described: dict[str, Any] = self.wait(future, deadline)
            return [describe_line(d.user, _credentials(d)) for d in described.values()], True
        futures = self.client.describe_user_scram_credentials(
            list(users), request_timeout=API_TIMEOUT_S
        )
        assert isinstance(futures, dict)
        lines: list[str] = []
        ok = True
        for user in users:
            try:
                d = self.wait(futures[user], deadline)
            except KafkaException as e:
                error = _error(e)
                if error.code() == RESOURCE_NOT_FOUND:
                    continue  # no credentials: Kafka's tool says nothing of the user
                if error.code() not in _USER_ERRORS:
                    raise  # the request's error, every user's
                lines.append(describe_error_line(user, error.code(), error.str()))
                ok = False
                continue
            lines.append(describe_line(d.user, _credentials(d)))
        return lines, ok


def _requests(alteration: ScramAlteration) -> list[UserScramCredentialAlteration]:
    """librdkafka's alterations: deletions, then upsertions (the order of Kafka's tool), each
    upsertion with a salt made as Kafka's ScramFormatter makes one."""
    from confluent_kafka.admin._scram import (
        ScramCredentialInfo,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )
    from confluent_kafka.admin._scram import ScramMechanism as RdScramMechanism

    def rd(mechanism: ScramMechanism) -> RdScramMechanism:
        return RdScramMechanism(mechanism.type_code)

    requests: list[UserScramCredentialAlteration] = [
        UserScramCredentialDeletion(alteration.user, rd(m)) for m in alteration.deletions
    ]
    requests += [
        UserScramCredentialUpsertion(
            alteration.user,
            ScramCredentialInfo(rd(u.mechanism), u.iterations),
            u.password.encode("utf-8"),
            secure_random_string().encode("ascii"),
        )
        for u in alteration.upsertions
    ]
    return requests


def _credentials(description: Any) -> list[tuple[int, int]]:
    return [(info.mechanism.value, info.iterations) for info in description.scram_credential_infos]


def _error(e: Exception) -> KafkaError:
    from confluent_kafka import KafkaError

    error = e.args[0] if e.args else None
    if isinstance(error, KafkaError):
        return error
    return KafkaError(KafkaError._FAIL, str(e))


# ---------------------------------------------------------------------------------------
# The command


@click.command("configs")
@bootstrap_server_option
@click.option(
    "--entity-type",
    type=click.Choice(ENTITY_TYPES),
    help="Type of entity: topics, brokers or users (clients, ips and broker-loggers are "
    "refused, saying why).",
)
@click.option(
    "--entity-name",
    "entity_names",
    multiple=True,
    metavar="NAME",
    help="The topic, the broker id or the user (users: repeatable with --describe). Without "
    "it, --describe shows every topic, every broker and the brokers' default, or every user "
    "with credentials.",
)
@click.option(
    "--entity-default",
    is_flag=True,
    help="With --entity-type brokers: the default of every broker in the cluster "
    "(/config/brokers/<default>).",
)
@click.option(
    "--user",
    "users",
    multiple=True,
    metavar="NAME",
    help="Shorthand for --entity-type users --entity-name NAME.",
)
@click.option(
    "--topic",
    "topic",
    default=None,
    metavar="NAME",
    help="--entity-type topics --entity-name NAME.",
)
@click.option(
    "--broker", "broker", default=None, metavar="ID", help="--entity-type brokers --entity-name ID."
)
@click.option("--broker-defaults", is_flag=True, help="--entity-type brokers --entity-default.")
@click.option(
    "--zookeeper",
    "zookeeper",
    default=None,
    metavar="HOST:PORT",
    help="Users only, with --alter: write the credentials to ZooKeeper's /config/users "
    "directly, as kafka-configs.sh --zookeeper does, without a broker: how the first users "
    "(the admin, the brokers' own) are made before the brokers that authenticate with them "
    "start.",
)
@click.option("--describe", is_flag=True, help="List configs for the given entity.")
@click.option("--alter", is_flag=True, help="Alter the configuration for the entity.")
@click.option(
    "--all",
    "describe_all",
    is_flag=True,
    help="With --describe of topics and brokers: every config (static and default ones too), "
    "not only the dynamic ones.",
)
@click.option(
    "--add-config",
    "add_configs",
    multiple=True,
    metavar="CONFIGS",
    help="Configs to add or change, comma-separated, [...] grouping a value's commas: "
    "'retention.ms=1000,cleanup.policy=[compact,delete]' for a topic or a broker; for a "
    "user 'SCRAM-SHA-256=[iterations=8192,password=P],SCRAM-SHA-512=[password=P]' "
    f"(iterations default to {DEFAULT_ITERATIONS}, {MIN_ITERATIONS} to {MAX_ITERATIONS}, and "
    "come before password=).",
)
@click.option(
    "--delete-config",
    "delete_configs",
    multiple=True,
    metavar="K1[,K2]",
    help="Configs to delete (comma-separated, repeatable).",
)
@click.pass_context
def configs(
    ctx: click.Context,
    bootstrap_server: str,
    entity_type: str | None,
    entity_names: tuple[str, ...],
    entity_default: bool,
    users: tuple[str, ...],
    topic: str | None,
    broker: str | None,
    broker_defaults: bool,
    describe: bool,
    alter: bool,
    describe_all: bool,
    add_configs: tuple[str, ...],
    delete_configs: tuple[str, ...],
    zookeeper: str | None,
) -> None:
    """Describe and alter topics' configs, brokers' dynamic configs (one broker's or the
    cluster default) and users' SCRAM credentials, like kafka-configs.sh.

    \b
    minikafka configs --entity-type topics --entity-name orders --alter \\
        --add-config retention.ms=86400000
    minikafka configs --topic orders --describe
    minikafka configs --entity-type brokers --entity-default --alter \\
        --add-config log.cleaner.threads=2
    minikafka configs --broker 1 --describe --all
    minikafka configs --entity-type users --entity-name alice --alter \\
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
    minikafka configs --zookeeper zookeeper:2181 --user admin --alter \\
        --add-config 'SCRAM-SHA-512=[password=admin-secret]'
    """
    if describe == alter:
        raise click.UsageError("Command must include exactly one action: --describe, --alter")
    if describe and (add_configs or delete_configs):
        given = "--add-config" if add_configs else "--delete-config"
        raise click.UsageError(f"{given} goes with --alter, not --describe")
    if describe_all and not describe:
        raise click.UsageError("--all goes with --describe")
    entity_type, names = _entity(
        entity_type, entity_names, entity_default, users, topic, broker, broker_defaults
    )
    if entity_type in ("topics", "brokers"):
        if zookeeper is not None:
            raise click.UsageError(
                f"--zookeeper alters users' SCRAM credentials only: {entity_type}' configs go "
                "through a broker (--bootstrap-server)"
            )
        _resource_command(
            bootstrap_server, entity_type, names, alter, describe_all, add_configs, delete_configs
        )
        return
    if describe_all:
        raise click.UsageError("--all goes with topics and brokers (users have credentials only)")
    names = _user_names(names)
    alteration = _alteration(names, add_configs, delete_configs) if alter else None
    if zookeeper is not None:
        if alteration is None:
            raise click.UsageError("--zookeeper goes with --alter (--describe asks a broker)")
        if ctx.get_parameter_source("bootstrap_server") is not click.core.ParameterSource.DEFAULT:
            raise click.UsageError("give one of --bootstrap-server and --zookeeper, not both")
        for warning in alteration.warnings():
            click.echo(warning, err=True)
        try:
            alter_in_zookeeper(zookeeper, alteration)
        except Exception as e:
            _fail(f"{type(e).__name__}: {e}")
        click.echo(completed_line(alteration.user))
        return
    require_client("minikafka configs runs its admin client")

    from confluent_kafka import KafkaException

    ok = True
    try:
        admin = _Admin(bootstrap_server)
        if alteration is not None:
            for warning in alteration.warnings():
                click.echo(warning, err=True)
            admin.alter(alteration)
            click.echo(completed_line(alteration.user))
            return
        lines, ok = admin.describe(names)
        for line in lines:
            click.echo(line)
    except KafkaException as e:
        _fail(kafka_error_text(_error(e)))
    except (ConfigCommandError, ClientConfigError) as e:
        _fail(str(e))
    if not ok:
        sys.exit(1)


# ---------------------------------------------------------------------------------------
# Topics and brokers (Kafka 2.8's describeResourceConfig and alterConfig)


def describe_header(entity_type: str, name: str, describe_all: bool) -> str:
    """Kafka's line before an entity's configs ("" is the brokers' default)."""
    if not name:
        return f"Default configs for {entity_type} in the cluster are:"
    return f"{'All' if describe_all else 'Dynamic'} configs for {entity_type[:-1]} {name} are:"


def describe_entry_line(entry: ConfigEntry) -> str:
    """Kafka's line for one config: `  name=value sensitive=false synonyms={SOURCE:name=value,
    ...}` (a sensitive value is null)."""
    synonyms = ", ".join(
        f"{SOURCE_NAMES.get(y.source, 'UNKNOWN')}:{y.name}={_java(y.value)}" for y in entry.synonyms
    )
    return (
        f"  {entry.name}={_java(entry.value)} sensitive={str(entry.sensitive).lower()} "
        f"synonyms={{{synonyms}}}"
    )


def _java(value: str | None) -> str:
    return "null" if value is None else value


def completed_resource_line(entity_type: str, name: str) -> str:
    if name:
        return f"Completed updating config for {entity_type[:-1]} {name}."
    return f"Completed updating default config for {entity_type} in the cluster."


def dynamic_source(resource_type: int, name: str) -> int:
    """The source of the configs kafka-configs.sh shows and alters for the entity: a topic's
    own, a broker's own, or the brokers' default."""
    if resource_type == TOPIC:
        return DYNAMIC_TOPIC_CONFIG
    return DYNAMIC_BROKER_CONFIG if name else DYNAMIC_DEFAULT_BROKER_CONFIG


def broker_configs_after(
    current: dict[str, str | None], add: dict[str, str], delete: Sequence[str]
) -> dict[str, str]:
    """Kafka 2.8's broker alteration (AlterConfigs replaces the entity's dynamic configs):
    the current ones with `add` set and `delete` removed. ConfigSyntaxError names a deletion
    of a config not set and a sensitive one the broker does not show (whose value the tool
    cannot send back)."""
    invalid = [k for k in delete if k not in current]
    if invalid:
        raise ConfigSyntaxError(f"Invalid config(s): {','.join(invalid)}")
    new = {**current, **add}
    for k in delete:
        new.pop(k, None)
    missing = [k for k, v in new.items() if v is None]
    if missing:
        raise ConfigSyntaxError(
            "All sensitive broker config entries must be specified for --alter, missing "
            f"entries: Set({', '.join(missing)})"
        )
    return {k: v for k, v in new.items() if v is not None}


def _resource_command(
    bootstrap_server: str,
    entity_type: str,
    names: list[str],
    alter: bool,
    describe_all: bool,
    add_configs: tuple[str, ...],
    delete_configs: tuple[str, ...],
) -> None:
    if len(names) > 1:
        raise click.UsageError(f"give one --entity-name for {entity_type}")
    name = names[0] if names else None
    add: dict[str, str] = {}
    delete: list[str] = []
    if alter:
        if name is None:
            raise click.UsageError(
                "an entity name must be specified with --alter of topics"
                if entity_type == "topics"
                else "an entity-name or default entity must be specified with --alter of "
                "users, clients, brokers or ips"
            )
        add, delete = _changes(add_configs, delete_configs)
    resource_type = TOPIC if entity_type == "topics" else BROKER
    require_client("minikafka configs finds the brokers with its admin client")
    try:
        md = cluster_metadata(bootstrap_server, ConfigCommandError, API_TIMEOUT_S)
        client = ResourceConfigs({b.id: (b.host or "", b.port) for b in md.brokers.values()})
        if alter:
            assert name is not None
            asyncio.run(_alter_resource(client, resource_type, name, add, delete))
            click.echo(completed_resource_line(entity_type, name))
            return
        if name is not None:
            entities = [name]
        elif resource_type == TOPIC:
            entities = sorted(md.topics)
        else:  # every broker, then their default (Kafka's order)
            entities = [*(str(b) for b in sorted(client.addresses)), ""]
        for entity in entities:
            click.echo(describe_header(entity_type, entity, describe_all))
            entries = asyncio.run(client.describe(resource_type, entity))
            source = dynamic_source(resource_type, entity)
            for entry in entries:
                if describe_all or entry.source == source:
                    click.echo(describe_entry_line(entry))
    except kafka_errors.KafkaError as e:
        _fail(str(e))
    except ConfigSyntaxError as e:
        _fail(f"{kafka_errors.ErrorCode.INVALID_CONFIG.name}: {e}")
    except (ConfigCommandError, ClientConfigError) as e:
        _fail(str(e))


def _changes(
    add_configs: tuple[str, ...], delete_configs: tuple[str, ...]
) -> tuple[dict[str, str], list[str]]:
    """--alter's --add-config and --delete-config, parsed (a user's, a topic's or a broker's:
    the same options and checks, as kafka-configs.sh's)."""
    if not add_configs and not delete_configs:
        raise click.UsageError(
            "At least one of --add-config or --delete-config must be specified with --alter"
        )
    if len(add_configs) > 1:
        raise click.UsageError(
            "--add-config given more than once: give every config in one, comma-separated"
        )
    try:
        add = parse_add_config(add_configs[0]) if add_configs else {}
    except ConfigSyntaxError as e:
        raise click.BadParameter(str(e), param_hint="--add-config") from None
    try:
        delete = parse_delete_config(delete_configs)
    except ConfigSyntaxError as e:
        raise click.BadParameter(str(e), param_hint="--delete-config") from None
    return add, delete


async def _alter_resource(
    client: ResourceConfigs, resource_type: int, name: str, add: dict[str, str], delete: list[str]
) -> None:
    """Kafka 2.8's alterConfig: a topic's with IncrementalAlterConfigs (SET, DELETE), a
    broker's or the brokers' default with AlterConfigs (every dynamic config of the entity,
    changed); a config to delete must be set on the entity."""
    source = dynamic_source(resource_type, name)
    current = {
        e.name: e.value
        for e in await client.describe(resource_type, name, include_synonyms=False)
        if e.source == source
    }
    if resource_type == TOPIC:
        invalid = [k for k in delete if k not in current]
        if invalid:
            raise ConfigSyntaxError(f"Invalid config(s): {','.join(invalid)}")
        await client.incremental_alter(resource_type, name, add, delete)
        return
    await client.alter(resource_type, name, broker_configs_after(current, add, delete))


def zookeeper_user_config(current: dict[str, str], alteration: ScramAlteration) -> dict[str, str]:
    """A user's `/config/users/<user>` entries after the alteration: deleted mechanisms
    gone, upserted ones salted and hashed here (the password is never stored)."""
    config = dict(current)
    for mechanism in alteration.deletions:
        config.pop(mechanism.mechanism_name, None)
    for upsertion in alteration.upsertions:
        credential = make_credential(
            upsertion.mechanism, upsertion.password, iterations=upsertion.iterations
        )
        config[upsertion.mechanism.mechanism_name] = credential.to_zk()
    return config


def alter_in_zookeeper(connect: str, alteration: ScramAlteration, timeout_s: float = 30.0) -> None:
    """`--zookeeper`: rewrite the user's config in ZooKeeper and notify the brokers, as
    Kafka's AdminZkClient.changeUserOrUserClientIdConfig does. Logged in as kafka-configs.sh
    logs in: the JAAS file's Client section named in $KAFKA_OPTS, and then with Kafka's
    secure ACLs on what it creates (its KafkaZkClient is secure when SASL is on)."""
    import dataclasses

    from minikafka.config.zk_client import KAFKA_OPTS_ENV, load_zk_client_auth
    from minikafka.zk.client import ZkClient

    auth = load_zk_client_auth(False, os.environ.get(KAFKA_OPTS_ENV, ""))
    if auth.sasl is not None:
        auth = dataclasses.replace(auth, secure_acls=True)
    zk = ZkClient(connect, session_timeout_ms=int(timeout_s * 1000), auth=auth)
    zk.start()
    try:
        zk.ensure_persistent_paths()
        current = zk.get_user_config(alteration.user)
        zk.set_user_config(alteration.user, zookeeper_user_config(current, alteration))
    finally:
        zk.close()


def _entity(
    entity_type: str | None,
    entity_names: tuple[str, ...],
    entity_default: bool,
    users: tuple[str, ...],
    topic: str | None,
    broker: str | None,
    broker_defaults: bool,
) -> tuple[str, list[str]]:
    """The entity type and the names given (each once, in order; "" is the default entity),
    after Kafka's checks of the entity options; the types minikafka does not have are
    refused here, saying why."""
    flags: list[tuple[str, list[str]]] = []
    if users:
        flags.append(("users", list(users)))
    if topic is not None:
        flags.append(("topics", [topic]))
    if broker is not None:
        flags.append(("brokers", [broker]))
    if broker_defaults:
        flags.append(("brokers", [""]))
    if flags and (entity_type is not None or entity_names or entity_default):
        raise click.UsageError(
            "--entity-{type,name,default} should not be used in conjunction with specific "
            "entity flags"
        )
    if len(flags) > 1:
        raise click.UsageError(
            "give one entity: --user, --topic, --broker and --broker-defaults each name one"
        )
    if flags:
        entity_type, names = flags[0]
    else:
        names = [*entity_names, *([""] if entity_default else [])]
    if entity_type is None:
        raise click.UsageError(
            "At least one entity type must be specified (--entity-type topics, brokers or "
            "users, or --topic, --broker, --broker-defaults, --user)"
        )
    if entity_type not in ("users", "topics", "brokers"):
        raise click.UsageError(
            f"minikafka configs handles topics, brokers and users, not {entity_type}. "
            f"{_REFUSED_ENTITY_TYPES[entity_type]}"
        )
    if entity_type == "topics" and "" in names:
        raise click.UsageError(
            "--entity-default names the default of users, clients, brokers or ips: topics "
            "have none (their defaults are the brokers' log.* configs)"
        )
    if entity_type == "brokers":
        for name in names:
            if name and not re.fullmatch(r"[+-]?[0-9]+", name):
                raise click.UsageError(
                    "The entity name for brokers must be a valid integer broker id, but it "
                    f"is: {name}"
                )
    return entity_type, list(dict.fromkeys(names))


def _user_names(names: list[str]) -> list[str]:
    if "" in names:
        raise click.UsageError(
            "The use of --entity-default or --user-defaults is not allowed with User SCRAM "
            "Credentials using --bootstrap-server."
        )
    return names


def _alteration(
    names: list[str], add_configs: tuple[str, ...], delete_configs: tuple[str, ...]
) -> ScramAlteration:
    if not names:
        raise click.UsageError("--alter needs the user: --entity-name NAME (or --user NAME)")
    if len(names) > 1:
        raise click.UsageError(
            "--alter changes one user's credentials at a time (as kafka-configs.sh): give one "
            "--entity-name"
        )
    add, delete = _changes(add_configs, delete_configs)
    if not add and not delete:  # Kafka's tool would send an empty request: `--add-config ,`
        raise click.BadParameter("names no config", param_hint="--add-config")
    try:
        return user_alteration(names[0], add, delete)
    except ConfigSyntaxError as e:
        raise click.UsageError(str(e)) from None


def _fail(message: str) -> NoReturn:
    click.echo(f"Error while executing config command : {message}", err=True)
    sys.exit(1)
