"""Static checks of the container setup (docker-compose.yml, docker/, scripts/docker-*.sh).

Nothing is built or started here (tests/docker/test_compose_cluster.py runs the real thing
on a Docker engine): the files are parsed, with the compose file's `${VAR:-default}`
variables at their defaults as compose reads them when unset, and checked against each
other and against the code: service names, broker ids,
listeners and published ports, volumes, healthchecks, start order, the Debian packages the
images install, every `minikafka ...` command they run (resolved through the click group),
and the entrypoint's environment → server.properties mapping (run with bash, the properties
loaded with BrokerConfig).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

from minikafka.chaos.command_cluster import COMMAND_NEMESIS_OPS, COMMAND_OPS
from minikafka.cli.main import cli
from minikafka.config.broker import BrokerConfig, parse_admin_listener, parse_properties
from minikafka.config.listeners import parse_endpoints
from minikafka.protocol.errors import InvalidConfigError

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
# The secured variant: an override file, used together with COMPOSE_FILE.
SECURE_FILE = ROOT / "docker-compose.secure.yml"
BROKER_DOCKERFILE = ROOT / "docker" / "Dockerfile"
ZOOKEEPER_DOCKERFILE = ROOT / "docker" / "zookeeper.Dockerfile"
DOCKERFILES = (BROKER_DOCKERFILE, ZOOKEEPER_DOCKERFILE)
ENTRYPOINT = ROOT / "docker" / "broker-entrypoint.sh"
ZOO_CFG = ROOT / "docker" / "zookeeper" / "zoo.cfg"
FAULT_SCRIPT = ROOT / "scripts" / "docker-fault.sh"
CHAOS_SCRIPT = ROOT / "scripts" / "docker-chaos.sh"
# The scripts that run `minikafka ...` (each invocation is checked against the CLI).
MINIKAFKA_SCRIPTS = (ENTRYPOINT, FAULT_SCRIPT, CHAOS_SCRIPT)
SCRIPTS = (
    *MINIKAFKA_SCRIPTS,
    ROOT / "scripts" / "docker-base-image.sh",
    ROOT / "scripts" / "docker-setup.sh",
)
# The brokers `docker compose up` starts, and those of the grow profile (started only when
# named: scaling out); every broker invariant holds for both.
BROKERS = ("broker1", "broker2", "broker3")
GROW_PROFILE = "grow"
GROW_BROKERS = ("broker4",)
ALL_BROKERS = (*BROKERS, *GROW_BROKERS)
# The Spark standalone cluster of the spark profile: a master and two workers.
SPARK_PROFILE = "spark"
SPARK_MASTER = "spark-master"
SPARK_WORKERS = ("spark-worker1", "spark-worker2")
SPARK_SERVICES = (SPARK_MASTER, *SPARK_WORKERS)
SPARK_HEALTHCHECK = ROOT / "docker" / "spark-healthcheck.py"

# The Debian packages the Dockerfiles may `apt-get install` (and python3-matplotlib, left
# out on purpose), with the candidate version `apt-cache policy` showed on Debian 12.11
# (bookworm, with bookworm-security and bookworm-updates).
BOOKWORM_PACKAGES = {
    "python3": "3.11.2-1+b1",
    "python3-kazoo": "2.8.0-2",
    "python3-pure-sasl": "0.5.1+dfsg1-2",
    "python3-msgpack": "1.0.3-2+b1",
    "python3-aiohttp": "3.8.4-1+deb12u2",
    "python3-uvloop": "0.17.0+ds1-2+b2",
    "python3-click": "8.1.3-2",
    "python3-rich": "13.3.1-1",
    "python3-crc32c": "2.3-1.1+b1",
    "python3-prometheus-client": "0.16.0-0.1",
    "python3-snappy": "0.5.3-1.2+b1",
    "python3-lz4": "4.0.2+dfsg-1+b2",
    "python3-zstandard": "0.20.0-3",
    "python3-cryptography": "38.0.4-3+deb12u1",
    # the spark target: Spark's JVM, the `ps` its scripts run, pandas' dateutil and pytz
    "openjdk-17-jre-headless": "17.0.21.1+2-1~deb12u1",
    "procps": "2:4.0.2-3",
    "python3-dateutil": "2.8.2-2",
    "python3-tz": "2022.7.1-4",
    "python3-pip": "23.0.1+dfsg-1",
    # build-only, for the C extension (installed and purged in one layer)
    "gcc": "4:12.2.0-3",
    "libc6-dev": "2.36-9+deb12u14",
    "python3-dev": "3.11.2-1+b1",
    "python3-matplotlib": "3.6.3-1+b1",
    "zookeeper": "3.8.0-11+deb12u2",
}
# pyproject's runtime dependencies → the Debian package the broker image takes each from.
DEBIAN_PACKAGE_FOR = {
    "kazoo": "python3-kazoo",
    "pure-sasl": "python3-pure-sasl",
    "msgpack": "python3-msgpack",
    "uvloop": "python3-uvloop",
    "aiohttp": "python3-aiohttp",
    "click": "python3-click",
    "rich": "python3-rich",
    "crc32c": "python3-crc32c",
    "prometheus-client": "python3-prometheus-client",
    "python-snappy": "python3-snappy",
    "lz4": "python3-lz4",
    "zstandard": "python3-zstandard",
    "cryptography": "python3-cryptography",
    "matplotlib": "python3-matplotlib",
}
# Runtime dependencies without a (recent enough) Debian package: the broker image installs
# the pinned wheels of docker/image-wheels.txt, which scripts/docker-setup.sh downloads on
# the host into docker/wheels/ (kio; typing-extensions, newer than bookworm's 4.4).
IMAGE_WHEELS = ROOT / "docker" / "image-wheels.txt"
# The spark target's packages not from Debian: the spark extra and what it needs, pinned
# to what the host's .venv resolves them to (scripts/docker-setup.sh puts the wheels into
# docker/spark-wheels/, pyspark's built from its sdist).
SPARK_WHEELS = ROOT / "docker" / "spark-wheels.txt"


def pins_of(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def image_wheels() -> dict[str, str]:
    return pins_of(IMAGE_WHEELS)


# Dependencies the broker image leaves out, and why. Each must be imported lazily (inside a
# function), so that the `minikafka` command works without it.
NOT_IN_BROKER_IMAGE = {
    # It brings numpy, pillow, fonts and tk, only for the timeline PNG of `minikafka chaos`,
    # which runs on the host (it drives the cluster from outside), never in a broker.
    "matplotlib": "python3-matplotlib",
    # The Kafka client of the tools (produce, consume, topics, perf, chaos): brokers need
    # none. Bookworm's python3-confluent-kafka (1.9) is older than the tools need.
    "confluent-kafka": None,
    # `minikafka perf`'s latency percentiles: a host tool. Not packaged by Debian.
    "hdrhistogram": None,
    # The chaos history and report to and from JSON (`minikafka chaos`, a host tool). Not
    # packaged by Debian bookworm.
    "msgspec": None,
}
# The module a distribution is imported as, where the names differ.
IMPORT_NAME = {"confluent-kafka": "confluent_kafka", "hdrhistogram": "hdrh"}
# Options a script may use that the CLI does not have yet; none may be pending.
PENDING: dict[str, set[str]] = {}

SHELL_OPERATORS = {";", "&", "&&", "|", "||", "(", ")", ";;"}


# --- parsing helpers -----------------------------------------------------------------------


def with_defaults(text: str) -> str:
    """`${VAR:-default}` replaced by its default, as compose does when VAR is unset."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", text)


def load_compose() -> dict[str, Any]:
    data = yaml.safe_load(with_defaults(COMPOSE_FILE.read_text()))
    assert isinstance(data, dict)
    return data


def services() -> dict[str, Any]:
    s = load_compose()["services"]
    assert isinstance(s, dict)
    return s


def load_secure() -> dict[str, Any]:
    """docker-compose.secure.yml at its defaults, `$$` (compose's escaped `$`) read as `$`."""
    data = yaml.safe_load(with_defaults(SECURE_FILE.read_text()).replace("$$", "$"))
    assert isinstance(data, dict)
    return data


def secure_services() -> dict[str, Any]:
    """The services of docker-compose.yml with docker-compose.secure.yml over them, merged
    as compose merges an override: mappings (environment, depends_on) key by key, the
    volumes by their target, other values replaced."""
    merged = {name: dict(svc) for name, svc in services().items()}
    for name, over in load_secure()["services"].items():
        svc = merged.setdefault(name, {})
        for key, value in over.items():
            if key in ("environment", "depends_on"):
                svc[key] = {**(svc.get(key) or {}), **value}
            elif key == "volumes":
                mounts = {str(v).split(":")[1]: v for v in [*svc.get(key, []), *value]}
                svc[key] = list(mounts.values())
            else:
                svc[key] = value
    return merged


def secure_scripts() -> Iterator[str]:
    """The shell scripts the secured variant's services run (`bash -c SCRIPT`)."""
    for svc in load_secure()["services"].values():
        command = svc.get("command")
        if isinstance(command, list) and command[0] == "bash" and "c" in command[1]:
            yield command[-1]


def environment(service: dict[str, Any]) -> dict[str, str]:
    """A service's `environment` (mapping or KEY=VALUE list) as strings."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(item.split("=", 1) for item in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


@dataclass(frozen=True)
class Port:
    host_ip: str
    published: int
    target: int


def ports(service: dict[str, Any]) -> list[Port]:
    out = []
    for p in service.get("ports") or []:
        if isinstance(p, dict):
            out.append(Port(p.get("host_ip", ""), int(p["published"]), int(p["target"])))
            continue
        parts = str(p).removesuffix("/tcp").split(":")
        assert "/" not in parts[-1], f"only TCP ports expected: {p}"
        if len(parts) == 3:
            out.append(Port(parts[0], int(parts[1]), int(parts[2])))
        elif len(parts) == 2:
            out.append(Port("", int(parts[0]), int(parts[1])))
        else:
            raise AssertionError(f"port {p!r} is not published on the host")
    return out


def volume_mounts(service: dict[str, Any]) -> dict[str, str]:
    """target → source of the service's volumes (short or long syntax)."""
    out = {}
    for v in service.get("volumes") or []:
        if isinstance(v, dict):
            out[v["target"]] = v["source"]
        else:
            source, target = str(v).split(":")[:2]
            out[target] = source
    return out


def healthcheck_command(service: dict[str, Any]) -> list[str]:
    test = service["healthcheck"]["test"]
    if isinstance(test, str):
        return ["CMD-SHELL", test]
    return [str(t) for t in test]


def logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, line) with backslash-newline continuations joined; comment lines
    (also inside a continuation, as Docker reads them) dropped."""
    start, parts = 0, list[str]()
    for n, raw in enumerate(text.splitlines(), 1):
        if raw.lstrip().startswith("#"):
            continue
        if not parts:
            start = n
        if raw.rstrip().endswith("\\"):
            parts.append(raw.rstrip()[:-1])
            continue
        parts.append(raw)
        yield start, " ".join(parts)
        parts = []
    if parts:
        yield start, " ".join(parts)


def dockerfile_instructions_at(path: Path) -> list[tuple[int, str, str]]:
    """(line number, KEYWORD, arguments) of each instruction."""
    out = []
    for n, line in logical_lines(path.read_text()):
        if line.strip():
            keyword, _, rest = line.strip().partition(" ")
            out.append((n, keyword.upper(), rest.strip()))
    return out


def dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    return [(keyword, rest) for _, keyword, rest in dockerfile_instructions_at(path)]


def shell_words(text: str) -> list[str]:
    lex = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
    lex.whitespace_split = True
    lex.commenters = ""
    return list(lex)


def shell_commands(text: str) -> Iterator[list[str]]:
    """The simple commands of a shell line, split at ;, &&, ||, | ..."""
    words: list[str] = []
    for w in shell_words(text):
        if w in SHELL_OPERATORS:
            if words:
                yield words
            words = []
        else:
            words.append(w)
    if words:
        yield words


def apt_installed(path: Path) -> list[str]:
    packages = []
    for keyword, rest in dockerfile_instructions(path):
        if keyword != "RUN":
            continue
        for words in shell_commands(rest):
            args = [w for w in words if "=" not in w or w.startswith("-")]  # drop VAR=x
            if args[:2] in (["apt-get", "install"], ["apt", "install"]):
                packages += [a for a in args[2:] if not a.startswith("-")]
    return packages


def pip_installs(path: Path) -> list[list[str]]:
    return [
        words
        for keyword, rest in dockerfile_instructions(path)
        if keyword == "RUN"
        for words in shell_commands(rest)
        if words[:2] == ["pip", "install"] or words[1:4] == ["-m", "pip", "install"]
    ]


# --- `minikafka ...` commands ----------------------------------------------------------------

# Words that may stand before a command's name in a simple command.
_COMMAND_PREFIXES = {"exec", "command", "time", "then", "else", "do", "!", "{", "env", "CMD"}


@dataclass(frozen=True)
class Invocation:
    where: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.where}: minikafka {shlex.join(self.args)}"


def minikafka_args(words: list[str]) -> tuple[str, ...] | None:
    """The arguments if this simple command runs `minikafka` (or a path ending in it)."""
    i = 0
    while i < len(words) and (
        words[i] in _COMMAND_PREFIXES or re.fullmatch(r"[A-Za-z_]\w*=.*", words[i])
    ):
        i += 1
    if i < len(words) and (words[i] == "minikafka" or words[i].endswith("/minikafka")):
        return tuple(words[i + 1 :])
    return None


def invocations_in_shell(text: str, where: str, first_line: int = 1) -> list[Invocation]:
    out = []
    for n, line in logical_lines(text):
        for words in shell_commands(line):
            args = minikafka_args(words)
            if args is not None:
                out.append(Invocation(f"{where}:{first_line + n - 1}", args))
    return out


def compose_commands() -> Iterator[str]:
    """Each service's command, entrypoint and healthcheck test as a shell line."""
    for svc in services().values():
        for node in (
            svc.get("command"),
            svc.get("entrypoint"),
            svc.get("healthcheck", {}).get("test"),
        ):
            if isinstance(node, str):
                yield node
            elif node and node[0] == "CMD-SHELL":
                yield node[1]
            elif node:
                yield shlex.join(node)


def all_invocations() -> list[Invocation]:
    found = []
    for path in MINIKAFKA_SCRIPTS:
        found += invocations_in_shell(path.read_text(), str(path.relative_to(ROOT)))
    for path in DOCKERFILES:
        for n, keyword, rest in dockerfile_instructions_at(path):
            if keyword == "HEALTHCHECK":
                rest = rest.split("CMD", 1)[1].strip()
            if keyword in ("RUN", "CMD", "ENTRYPOINT", "HEALTHCHECK"):
                command = shlex.join(json.loads(rest)) if rest.startswith("[") else rest
                found += invocations_in_shell(command, str(path.relative_to(ROOT)), n)
    for s in compose_commands():
        found += invocations_in_shell(s, "docker-compose.yml")
    for s in secure_scripts():
        found += invocations_in_shell(s, "docker-compose.secure.yml")
    return found


def _options(cmd: click.Command, ctx: click.Context) -> dict[str, click.Option]:
    out: dict[str, click.Option] = {}
    for p in cmd.get_params(ctx):
        if isinstance(p, click.Option):
            for name in (*p.opts, *p.secondary_opts):
                out[name] = p
    return out


def check_invocation(args: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(problems, pending) of `minikafka ARGS` against the click group: pending are the
    missing subcommands and options listed in PENDING. Words that are shell expansions ($x,
    "$@") are values we cannot see, so they are skipped."""
    cmd: click.Command = cli
    ctx = click.Context(cli, info_name="minikafka", **cli.context_settings)
    problems: list[str] = []
    pending: list[str] = []
    expect_value = False
    for word in args:
        if expect_value:
            expect_value = False
            continue
        if word.startswith("$"):
            continue
        if word.startswith("-") and word != "-":
            name, has_value, _ = word.partition("=")
            option = _options(cmd, ctx).get(name)
            if option is None:
                missing = f"`{ctx.command_path}` has no option {name}"
                top = ctx.command_path.split()[1:2]
                if top and name in PENDING.get(top[0], ()):
                    pending.append(missing)
                else:
                    problems.append(missing)
            elif not (option.is_flag or option.count):
                expect_value = not has_value
            continue
        if isinstance(cmd, click.Group):
            sub = cmd.get_command(ctx, word)
            if sub is None:
                missing = f"`{ctx.command_path}` has no subcommand {word!r}"
                if cmd is cli and word in PENDING:
                    return problems, [*pending, missing]
                problems.append(missing)
                return problems, pending
            cmd = sub
            ctx = click.Context(sub, info_name=word, parent=ctx)
    return problems, pending


INVOCATIONS = all_invocations()


def test_the_commands_are_found() -> None:
    wheres = {inv.where.split(":")[0] for inv in INVOCATIONS}
    assert "docker/broker-entrypoint.sh" in wheres  # exec minikafka broker --config ...
    assert "docker/Dockerfile" in wheres  # minikafka --version
    assert "scripts/docker-chaos.sh" in wheres  # exec minikafka chaos --bootstrap-server ...
    broker = [inv for inv in INVOCATIONS if inv.args[:1] == ("broker",)]
    assert broker and all("--config" in inv.args for inv in broker)


@pytest.mark.parametrize("inv", INVOCATIONS, ids=str)
def test_minikafka_commands_exist_in_the_cli(inv: Invocation) -> None:
    problems, pending = check_invocation(inv.args)
    assert not problems, f"{inv}: " + "; ".join(problems)
    assert not pending, f"{inv}: not in the CLI: " + "; ".join(pending)


def test_the_checker_rejects_unknown_commands_and_options() -> None:
    assert check_invocation(("broker", "--config", "x", "--override", "a=b"))[0] == []
    assert check_invocation(("-v", "cluster", "kill", "--broker", "2"))[0] == []
    assert check_invocation(("broker", "--no-such-option"))[0]
    assert check_invocation(("cluster", "explode"))[0]
    assert check_invocation(("nonsense",))[0]
    assert check_invocation(("topics", "--config=a=b", "--list"))[0] == []
    assert check_invocation(("chaos", "--nemesis", "kill", "--seed", "3"))[0] == []
    assert check_invocation(("chaos", "--no-such-option", "x"))[0]
    command_mode = ("--bootstrap-server", "b:1", "--zookeeper", "z:2", "--nemesis-command", "c")
    assert check_invocation(("chaos", *command_mode))[0] == []


# --- docker-compose.yml ------------------------------------------------------------------


def test_services_are_zookeeper_and_three_brokers_and_a_fourth_in_the_grow_profile() -> None:
    """A plain `docker compose up` starts the services without a profile: ZooKeeper and
    three brokers. broker4 is in the grow profile alone, so it starts only when named
    (`docker compose --profile grow up -d --wait broker4`)."""
    profiles = {name: svc.get("profiles") for name, svc in services().items()}
    assert {name for name, p in profiles.items() if not p} == {"zookeeper", *BROKERS}
    assert {name: p for name, p in profiles.items() if p} == {
        **{b: [GROW_PROFILE] for b in GROW_BROKERS},
        **{s: [SPARK_PROFILE] for s in SPARK_SERVICES},
    }
    # The grow broker is to the compose cluster what `minikafka cluster add-broker` is to the
    # local one: the next id, on the next ports (9092+3, and the admin port 9644+3).
    (grow,) = GROW_BROKERS
    env = environment(services()[grow])
    assert env["BROKER_ID"] == str(len(BROKERS) + 1)
    assert {p.published for p in ports(services()[grow])} == {9095, 9647}


def test_broker_ids_match_the_service_names() -> None:
    ids = {}
    for name in ALL_BROKERS:
        env = environment(services()[name])
        assert env["BROKER_ID"] == name.removeprefix("broker"), name
        ids[name] = int(env["BROKER_ID"])
    assert len(set(ids.values())) == len(ALL_BROKERS)


def test_each_broker_has_a_rack_of_its_own() -> None:
    """broker.rack on every broker (Kafka refuses rack-aware placement when only some have
    one), a different rack each, so the three replicas of a topic land on three racks; and
    the rack-aware replica selector, so a consumer with client.rack reads its rack's."""
    racks = {}
    for name in ALL_BROKERS:
        env = environment(services()[name])
        config = BrokerConfig.from_properties(
            {
                "broker.id": env["BROKER_ID"],
                "broker.rack": env["MINIKAFKA_BROKER_RACK"],
                "replica.selector.class": env["MINIKAFKA_REPLICA_SELECTOR_CLASS"],
            }
        )
        racks[name] = config.broker_rack
        assert config.replica_selector_class is not None, name  # consumers read their rack's
    assert all(racks.values()), racks
    assert len(set(racks.values())) == len(ALL_BROKERS), racks


def test_zookeeper_connect_points_at_the_zookeeper_service() -> None:
    client_port = int(parse_properties(ZOO_CFG.read_text())["clientPort"])
    for name in ALL_BROKERS:
        connect = environment(services()[name])["ZOOKEEPER_CONNECT"]
        hosts = connect.split("/")[0].split(",")
        assert hosts == [f"zookeeper:{client_port}"], (name, connect)
        assert "zookeeper" in services()[name]["depends_on"]
    assert Port("127.0.0.1", client_port, client_port) in ports(services()["zookeeper"])


def test_each_broker_serves_internal_and_external_listeners() -> None:
    """INTERNAL (inter-broker) by service name inside the compose network; EXTERNAL on
    localhost at a published port of its own, the same number inside and outside so the
    advertised address works from the host."""
    published: list[int] = []
    for name, svc in services().items():
        published += [p.published for p in ports(svc)]
        if name not in ALL_BROKERS:
            continue
        env = environment(svc)
        config = BrokerConfig.from_properties(
            {
                "broker.id": env["BROKER_ID"],
                "listeners": env["LISTENERS"],
                "advertised.listeners": env["ADVERTISED_LISTENERS"],
                "listener.security.protocol.map": env["MINIKAFKA_LISTENER_SECURITY_PROTOCOL_MAP"],
                "inter.broker.listener.name": env["MINIKAFKA_INTER_BROKER_LISTENER_NAME"],
            }
        )
        listeners = config.resolved_listeners()
        assert all(e.host == "0.0.0.0" for e in listeners.bind), f"{name}: every interface"
        advertised = {e.listener: e for e in listeners.advertised}
        bound = {e.listener: e for e in listeners.bind}
        assert listeners.inter_broker == "INTERNAL"
        internal, external = advertised["INTERNAL"], advertised["EXTERNAL"]
        assert internal.host == name == svc["hostname"]
        assert internal.port == bound["INTERNAL"].port
        assert external.host == "localhost"
        assert Port("127.0.0.1", external.port, bound["EXTERNAL"].port) in ports(svc), (
            f"{name}: publish {external.port} (the advertised EXTERNAL port)"
        )
    assert len(published) == len(set(published)), f"host ports collide: {published}"


def test_the_host_ports_are_variables_and_the_advertised_port_follows() -> None:
    raw = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
    for n, name in enumerate(ALL_BROKERS, 1):
        variable = f"MINIKAFKA_BROKER{n}_PORT"
        assert (
            f"EXTERNAL://localhost:${{{variable}:-"
            in environment(raw[name])["ADVERTISED_LISTENERS"]
        )
        assert any(f"${{{variable}:-" in str(p) for p in raw[name]["ports"]), name
        assert any(f"${{MINIKAFKA_BROKER{n}_ADMIN_PORT:-" in str(p) for p in raw[name]["ports"])
    assert "${MINIKAFKA_ZOOKEEPER_PORT:-2181}" in str(raw["zookeeper"]["ports"])


def test_each_admin_endpoint_listens_on_the_port_the_host_reaches_it_at() -> None:
    """A broker's admin.listeners is a wildcard on its published admin port (the same inside
    and outside), so a client on the host that reads it with DescribeConfigs reaches the
    endpoint at the broker's Metadata host and that port (`minikafka replicas`)."""
    raw = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
    for n, name in enumerate(ALL_BROKERS, 1):
        variable = f"${{MINIKAFKA_BROKER{n}_ADMIN_PORT:-"
        assert variable in environment(raw[name])["MINIKAFKA_ADMIN_LISTENERS"], name
    published = set()
    for name in ALL_BROKERS:
        svc = services()[name]
        host, port = parse_admin_listener(environment(svc)["MINIKAFKA_ADMIN_LISTENERS"])
        assert host == "0.0.0.0", f"{name}: every interface"
        assert Port("127.0.0.1", port, port) in ports(svc), f"{name}: publish {port} as {port}"
        published.add(port)
    # `minikafka cluster up`'s, as the README says, and broker4's is add-broker's.
    assert published == {9644, 9645, 9646, 9647}


def test_data_lives_on_named_volumes() -> None:
    declared = set(load_compose()["volumes"])
    assert declared == {"zookeeper-data", *(f"{b}-data" for b in ALL_BROKERS), "spark-data"}
    data_dirs = {
        "zookeeper": [parse_properties(ZOO_CFG.read_text())["dataDir"]],
        **{b: environment(services()[b])["LOG_DIRS"].split(",") for b in ALL_BROKERS},
    }
    for name, dirs in data_dirs.items():
        mounts = volume_mounts(services()[name])
        assert set(mounts.values()) == {f"{name}-data"}, name
        for d in dirs:
            assert any(Path(d.strip()).is_relative_to(t) for t in mounts), (name, d, mounts)


def test_healthchecks() -> None:
    for name, svc in services().items():
        hc = svc["healthcheck"]
        assert {"interval", "timeout", "retries", "start_period"} <= set(hc), name
        assert healthcheck_command(svc)[0] in ("CMD", "CMD-SHELL"), name
    for name in ALL_BROKERS:
        assert healthcheck_command(services()[name]) == ["CMD", "minikafka-healthcheck"]
    installed = [
        r.split()[-1] for k, r in dockerfile_instructions(BROKER_DOCKERFILE) if k == "COPY"
    ]
    assert "/usr/local/bin/minikafka-healthcheck" in installed
    assert healthcheck_command(services()[SPARK_MASTER]) == ["CMD", "spark-healthcheck", "master"]
    for name in SPARK_WORKERS:
        assert healthcheck_command(services()[name]) == ["CMD", "spark-healthcheck", "worker"]
    assert "/usr/local/bin/spark-healthcheck" in installed


def test_zookeeper_healthcheck_asks_a_whitelisted_four_letter_word() -> None:
    cfg = parse_properties(ZOO_CFG.read_text())
    whitelist = {w.strip() for w in cfg["4lw.commands.whitelist"].split(",")}
    cmd = healthcheck_command(services()["zookeeper"])
    assert cmd[:3] == ["CMD", "bash", "-c"], "dash (Debian's sh) has no /dev/tcp"
    script = cmd[3]
    assert f"/dev/tcp/127.0.0.1/{cfg['clientPort']}" in script
    word = re.search(r"printf (\w{4}) ", script)
    assert word is not None and word.group(1) in whitelist
    # The image's own HEALTHCHECK is the same command.
    image_hc = [r for k, r in dockerfile_instructions(ZOOKEEPER_DOCKERFILE) if k == "HEALTHCHECK"]
    assert json.loads(image_hc[0].split("CMD", 1)[1]) == cmd[1:]


def test_brokers_start_once_zookeeper_is_healthy() -> None:
    for name in ALL_BROKERS:
        assert services()[name]["depends_on"] == {"zookeeper": {"condition": "service_healthy"}}


def test_brokers_get_time_for_a_controlled_shutdown_and_stay_down_when_killed() -> None:
    for name in ALL_BROKERS:
        svc = services()[name]
        assert svc["init"] is True
        assert svc["restart"] == "no"
        assert int(svc["stop_grace_period"].removesuffix("s")) >= 30


def test_builds_point_at_existing_dockerfiles() -> None:
    builds = {name: svc["build"] for name, svc in services().items() if "build" in svc}
    built = {name: ROOT / b["context"] / b["dockerfile"] for name, b in builds.items()}
    assert built == {
        "zookeeper": ZOOKEEPER_DOCKERFILE,
        "broker1": BROKER_DOCKERFILE,
        SPARK_MASTER: BROKER_DOCKERFILE,
    }
    # docker/Dockerfile's two targets.
    assert builds["broker1"]["target"] == "broker"
    assert builds[SPARK_MASTER]["target"] == "spark"
    stages = [r.split()[-1] for k, r in dockerfile_instructions(BROKER_DOCKERFILE) if k == "FROM"]
    assert {"broker", "spark"} <= set(stages)


def test_the_brokers_share_one_image_built_once() -> None:
    """One build for every broker: a build per service would make an image each (compose
    labels each with its service name), leave all but one dangling, and make the next `up`
    recreate the brokers. The others, broker4 too, run broker1's image, never pulled."""
    image = services()["broker1"]["image"]
    assert image == "minikafka-broker:dev"
    for name in ALL_BROKERS[1:]:
        svc = services()[name]
        assert svc["image"] == image and "build" not in svc, name
        assert svc["pull_policy"] == "never", name
    assert services()["zookeeper"]["image"] != image


def test_the_spark_profile_is_a_master_and_two_workers_of_one_image() -> None:
    """spark-master runs Spark's standalone Master on 7077, the workers a Worker each
    registering with it once it is healthy; one image, built once by spark-master from
    docker/Dockerfile's spark target, the workers never pulling or building it."""
    master = services()[SPARK_MASTER]
    assert master["image"] == "minikafka-spark:dev"
    assert master["command"][:2] == ["spark-class", "org.apache.spark.deploy.master.Master"]
    args = master["command"][2:]
    assert args[args.index("--host") + 1] == SPARK_MASTER == master["hostname"]
    assert args[args.index("--port") + 1] == "7077"
    assert args[args.index("--webui-port") + 1] == "8080"
    for name in SPARK_WORKERS:
        svc = services()[name]
        assert svc["image"] == master["image"] and "build" not in svc, name
        assert svc["pull_policy"] == "never", name
        assert svc["command"][:2] == ["spark-class", "org.apache.spark.deploy.worker.Worker"]
        assert svc["command"][-1] == f"spark://{SPARK_MASTER}:7077"
        assert svc["depends_on"] == {SPARK_MASTER: {"condition": "service_healthy"}}
        # The name the master lists it by, which its healthcheck looks for.
        assert environment(svc)["SPARK_LOCAL_HOSTNAME"] == svc["hostname"] == name
    for name in SPARK_SERVICES:
        svc = services()[name]
        assert svc["init"] is True and svc["restart"] == "no", name
        # The brokers' INTERNAL listeners, for commands run in the containers.
        bootstrap = environment(svc)["MINIKAFKA_BOOTSTRAP_SERVERS"].split(",")
        assert bootstrap == [f"{b}:19092" for b in BROKERS], name
    # The healthchecks ask the master at the name and UI port it has.
    assert f"http://{SPARK_MASTER}:8080/json/" in SPARK_HEALTHCHECK.read_text()


def test_the_spark_nodes_share_one_volume_at_one_path_owned_by_the_image_user() -> None:
    mounts = [volume_mounts(services()[name]) for name in SPARK_SERVICES]
    assert all(m == {"/spark-data": "spark-data"} for m in mounts), mounts
    spark_stage = BROKER_DOCKERFILE.read_text().split(" AS spark", 1)[1]
    assert "chown minikafka:minikafka /var/lib/minikafka /spark-data" in spark_stage
    assert "USER minikafka" in spark_stage
    # Executors and spark-submit run the image's python3, which has minikafka.
    assert "PYSPARK_PYTHON=/usr/bin/python3" in spark_stage


def test_the_spark_uis_are_published_on_localhost_as_variables_clear_of_the_brokers() -> None:
    """The master's web UI and a driver's application UI (in spark-master), on 127.0.0.1
    only, at ports the variables move; 7077 stays inside the compose network, where the
    drivers run; no published port is another service's."""
    raw = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
    assert [str(p) for p in raw[SPARK_MASTER]["ports"]] == [
        "127.0.0.1:${MINIKAFKA_SPARK_UI_PORT:-8080}:8080",
        "127.0.0.1:${MINIKAFKA_SPARK_APP_UI_PORT:-4040}:4040",
    ]
    assert all("ports" not in raw[name] for name in SPARK_WORKERS)
    published = [p.published for svc in services().values() for p in ports(svc)]
    assert len(published) == len(set(published)), sorted(published)
    # The master's UI links to the application UI as the host reaches it.
    assert environment(services()[SPARK_MASTER])["SPARK_PUBLIC_DNS"] == "localhost"


def test_the_header_comment_names_every_variable() -> None:
    text = COMPOSE_FILE.read_text()
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    used = set(re.findall(r"\$\{(\w+):-", text))
    documented = set(re.findall(r"MINIKAFKA_\w+", header))
    documented |= {
        f"MINIKAFKA_BROKER{n}_{kind}PORT"
        for n in range(1, 5)
        for kind in ("", "ADMIN_")
        if "MINIKAFKA_BROKER{1,2,3,4}_" in header
    }
    assert used <= documented, sorted(used - documented)


# --- Dockerfiles ---------------------------------------------------------------------------


def build_context(dockerfile: Path) -> Path:
    for svc in services().values():
        if "build" not in svc:
            continue
        context = ROOT / str(svc["build"]["context"])
        if context / str(svc["build"]["dockerfile"]) == dockerfile:
            return context
    raise AssertionError(f"no service builds {dockerfile}")


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_images_are_debian_bookworm(dockerfile: Path) -> None:
    """Every stage starts from Debian bookworm or from an earlier stage."""
    froms = [rest.split() for k, rest in dockerfile_instructions(dockerfile) if k == "FROM"]
    assert froms[0][0] == "debian:bookworm-slim"
    stages: set[str] = set()
    for words in froms:
        assert words[0] == "debian:bookworm-slim" or words[0] in stages, words
        if len(words) == 3 and words[1].upper() == "AS":
            stages.add(words[2])


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_images_install_only_known_bookworm_packages(dockerfile: Path) -> None:
    packages = apt_installed(dockerfile)
    assert packages, "no apt-get install found"
    unknown = set(packages) - set(BOOKWORM_PACKAGES)
    assert not unknown, f"not in the list checked against bookworm: {sorted(unknown)}"


def test_every_runtime_dependency_comes_from_a_debian_package_recent_enough() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    installed = set(apt_installed(BROKER_DOCKERFILE))
    for dep in project["dependencies"]:
        req = Requirement(dep)
        if req.name.lower() in image_wheels():
            pinned = image_wheels()[req.name.lower()]
            assert str(req.specifier) == f"=={pinned}", (
                f"{dep}: the image installs {pinned} (docker/image-wheels.txt)"
            )
            continue
        if (
            req.name.lower() in NOT_IN_BROKER_IMAGE
            and NOT_IN_BROKER_IMAGE[req.name.lower()] is None
        ):
            continue  # not from Debian, not in the image
        package = DEBIAN_PACKAGE_FOR.get(req.name.lower())
        assert package is not None, f"{req.name}: which Debian package provides it?"
        if req.name.lower() in NOT_IN_BROKER_IMAGE:
            assert package not in installed
        else:
            assert package in installed, f"docker/Dockerfile does not install {package}"
        upstream = BOOKWORM_PACKAGES[package].split(":")[-1].split("-")[0].split("+")[0]
        assert req.specifier.contains(Version(upstream)), (
            f"pyproject wants {dep}, bookworm's {package} is {upstream}: the image would break"
        )
    python = project["requires-python"]
    debian_python = BOOKWORM_PACKAGES["python3"].split("-")[0]
    assert Requirement(f"python{python}").specifier.contains(Version(debian_python))


def module_level_imports(path: Path) -> set[str]:
    """Top-level package names imported at module level (not inside functions)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("dependency", sorted(NOT_IN_BROKER_IMAGE))
def test_dependencies_left_out_of_the_image_are_imported_lazily(dependency: str) -> None:
    module = IMPORT_NAME.get(dependency, dependency)
    eager = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "minikafka").rglob("*.py"))
        if module in module_level_imports(path)
    ]
    assert not eager, (
        f"{module} is imported at module level in {eager}; the broker image does not "
        f"install {NOT_IN_BROKER_IMAGE[dependency] or dependency}: import it where it is "
        "used, or add the package to docker/Dockerfile"
    )


def test_pip_installs_nothing_from_pypi() -> None:
    """minikafka itself, and the pinned wheels the host downloaded (docker/image-wheels.txt),
    both with --no-index: the build reaches only Debian's archive."""
    installs = pip_installs(BROKER_DOCKERFILE)
    assert installs, "minikafka must be installed into the broker image"
    for words in installs:
        assert {"--no-index", "--no-deps"} <= set(words), words
    wheels = [w for w in installs if "/tmp/image-wheels.txt" in w]
    assert len(wheels) == 1 and "--find-links" in wheels[0]
    # The spark target's, the same way (docker/spark-wheels.txt).
    spark = [w for w in installs if "/tmp/spark-wheels.txt" in w]
    assert len(spark) == 1 and "--find-links" in spark[0]
    for words in installs:
        if words is not wheels[0] and words is not spark[0]:
            assert "--no-build-isolation" in words, words
    assert not pip_installs(ZOOKEEPER_DOCKERFILE)


def test_the_spark_wheels_are_within_pyproject_bounds_and_setup_makes_them() -> None:
    """docker/spark-wheels.txt pins the spark extra (and confluent-kafka, a dependency)
    within pyproject's bounds, and the py4j the pinned pyspark requires; the Debian packages
    the spark target takes pandas' other needs from are recent enough. scripts/docker-setup.sh
    downloads the binary wheels and builds pyspark's into docker/spark-wheels/, which the
    broker image does not copy (its layers stay as they are)."""
    pins = pins_of(SPARK_WHEELS)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    bounded = [*project["optional-dependencies"]["spark"], *project["dependencies"]]
    for dep in (Requirement(d) for d in bounded):
        if dep.name.lower() in pins:
            assert dep.specifier.contains(Version(pins[dep.name.lower()])), (dep, pins)
    spark_extra = {Requirement(d).name.lower() for d in project["optional-dependencies"]["spark"]}
    assert spark_extra | {"confluent-kafka", "py4j", "numpy", "tzdata"} == set(pins)
    # pyspark's own requirement on py4j is exact.
    assert "py4j" in pins
    installed = set(apt_installed(BROKER_DOCKERFILE))
    for package, lowest in (("python3-dateutil", "2.8.2"), ("python3-tz", "2020.1")):
        assert package in installed
        assert Version(BOOKWORM_PACKAGES[package].split("-")[0]) >= Version(lowest)
    setup = (ROOT / "scripts" / "docker-setup.sh").read_text()
    assert "docker/spark-wheels.txt" in setup and "pip wheel" in setup
    assert "/docker/spark-wheels/*.whl" in (ROOT / ".gitignore").read_text().splitlines()
    copied = [r for k, r in dockerfile_instructions(BROKER_DOCKERFILE) if k == "COPY"]
    assert not [c for c in copied if "spark-wheels" in c], "bind-mounted, not copied"


def test_the_image_wheels_are_the_only_pins_and_setup_downloads_them() -> None:
    assert set(image_wheels()) == {"kio", "typing-extensions"}
    setup = (ROOT / "scripts" / "docker-setup.sh").read_text()
    assert "docker/image-wheels.txt" in setup and "pip download" in setup
    assert "/docker/wheels/*.whl" in (ROOT / ".gitignore").read_text().splitlines()


def context_sources(dockerfile: Path) -> set[str]:
    """What the Dockerfile takes from its build context: the sources of COPY and ADD (not
    those copied from another stage) and of RUN's bind mounts."""
    sources = set()
    for keyword, rest in dockerfile_instructions(dockerfile):
        words = shlex.split(rest)
        if keyword in ("COPY", "ADD") and not any(w.startswith("--from=") for w in words):
            sources |= {w for w in words[:-1] if not w.startswith("--")}
        elif keyword == "RUN":
            for mount in (w.removeprefix("--mount=") for w in words if w.startswith("--mount=")):
                options = dict(o.split("=", 1) for o in mount.split(","))
                if options.get("type") == "bind" and "from" not in options:
                    sources.add(options["source"])
    return sources


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_copied_files_exist_in_the_build_context(dockerfile: Path) -> None:
    context = build_context(dockerfile)
    sources = context_sources(dockerfile)
    assert sources
    for source in sources:
        assert (context / source).exists(), f"{dockerfile.name}: {source}"


def test_dockerignore_sends_what_the_broker_image_copies() -> None:
    ignore = (ROOT / "docker" / "Dockerfile.dockerignore").read_text().splitlines()
    patterns = [line.strip() for line in ignore if line.strip() and not line.startswith("#")]
    assert patterns[0] == "*"
    kept = {p.removeprefix("!").rstrip("/") for p in patterns if p.startswith("!")}
    assert {source.rstrip("/") for source in context_sources(BROKER_DOCKERFILE)} == kept


def test_broker_image_runs_the_entrypoint_it_installs() -> None:
    instructions = dockerfile_instructions(BROKER_DOCKERFILE)
    entrypoint = [json.loads(r) for k, r in instructions if k == "ENTRYPOINT"]
    assert entrypoint == [["broker-entrypoint.sh"]]
    copied = {r.split()[-1]: r.split()[0] for k, r in instructions if k == "COPY"}
    assert copied["/usr/local/bin/broker-entrypoint.sh"] == "docker/broker-entrypoint.sh"
    assert copied["/usr/local/bin/minikafka-healthcheck"] == "docker/broker-healthcheck.py"


def test_zookeeper_image_runs_the_server_in_the_foreground() -> None:
    instructions = dockerfile_instructions(ZOOKEEPER_DOCKERFILE)
    cmd = json.loads(next(r for k, r in instructions if k == "CMD"))
    assert cmd[0] == "java"
    assert cmd[-2:] == [
        "org.apache.zookeeper.server.quorum.QuorumPeerMain",
        "/etc/zookeeper/minikafka/zoo.cfg",
    ]
    classpath = cmd[cmd.index("-cp") + 1].split(":")
    assert "/usr/share/java/zookeeper.jar" in classpath
    copied = next(r for k, r in instructions if k == "COPY").split()
    assert copied == [
        "zookeeper/zoo.cfg",
        "zookeeper/log4j.properties",
        "/etc/zookeeper/minikafka/",
    ]


def _apt_lists_present() -> bool:
    return any(Path("/var/lib/apt/lists").glob("*_Packages*"))


def _is_bookworm() -> bool:
    try:
        release = parse_properties(Path("/etc/os-release").read_text())
    except OSError:
        return False
    return release.get("VERSION_CODENAME", "").strip('"') == "bookworm"


@pytest.mark.skipif(
    not (_is_bookworm() and shutil.which("apt-cache") and _apt_lists_present()),
    reason="needs Debian bookworm with apt lists (apt-get update)",
)
@pytest.mark.parametrize("package", sorted(BOOKWORM_PACKAGES))
def test_package_is_in_bookworm(package: str) -> None:
    out = subprocess.run(
        ["apt-cache", "policy", package], capture_output=True, text=True, check=True
    ).stdout
    candidate = re.search(r"Candidate: (\S+)", out)
    assert candidate is not None and candidate.group(1) != "(none)", out or package
    found = candidate.group(1).split("-")[0]
    recorded = BOOKWORM_PACKAGES[package].split("-")[0]
    assert found == recorded, f"{package}: bookworm has {candidate.group(1)} now, update the list"


# --- the entrypoint's environment → server.properties ----------------------------------


def run_entrypoint(
    tmp_path: Path, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    """The entrypoint with a fake `minikafka` that prints its arguments and the config."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "minikafka"
    fake.write_text(
        '#!/bin/sh\necho "ARGS: $*"\nif [ "$1" = broker ] && [ "$2" = --config ]; then\n'
        '  cat "$3"\nfi\n'
    )
    fake.chmod(0o755)
    full_env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "SERVER_PROPERTIES": str(tmp_path / "etc" / "server.properties"),
        **env,
    }
    return subprocess.run(
        ["bash", str(ENTRYPOINT), *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def written_config(result: subprocess.CompletedProcess[str], tmp_path: Path) -> BrokerConfig:
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    config = tmp_path / "etc" / "server.properties"
    assert lines[0].startswith(f"ARGS: broker --config {config}")
    assert "\n".join(lines[1:]).strip() == config.read_text().strip()
    return BrokerConfig.load(config)


@pytest.mark.parametrize("name", ALL_BROKERS)
def test_compose_environment_makes_a_valid_broker_config(name: str, tmp_path: Path) -> None:
    env = environment(services()[name])
    config = written_config(run_entrypoint(tmp_path, env), tmp_path)
    assert config.broker_id == int(env["BROKER_ID"])
    assert config.zookeeper_connect == env["ZOOKEEPER_CONNECT"]
    assert config.listeners == env["LISTENERS"]
    assert config.advertised_listeners == env["ADVERTISED_LISTENERS"]
    assert config.log_dirs == tuple(env["LOG_DIRS"].split(","))
    for key, value in env.items():
        if key.startswith("MINIKAFKA_"):
            attr = key.removeprefix("MINIKAFKA_").lower()
            assert str(getattr(config, attr)) == value, key


def test_minikafka_variables_become_properties(tmp_path: Path) -> None:
    env = {
        "BROKER_ID": "7",
        "ZOOKEEPER_CONNECT": "zk1:2181,zk2:2181/kafka",
        "MINIKAFKA_MIN_INSYNC_REPLICAS": "2",
        "MINIKAFKA_UNCLEAN_LEADER_ELECTION_ENABLE": "true",
        "MINIKAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS": "6000",
        "MINIKAFKA_LOG_RETENTION_HOURS": "1",
        "MINIKAFKA_LOG_RETENTION_CHECK_INTERVAL_MS": "a=b",  # the value may hold '='
        "MINIKAFKA_BROKER_ID": "8",  # written after BROKER_ID: wins
        "OTHER_VARIABLE": "ignored",
    }
    result = run_entrypoint(tmp_path, env, "--override", "a=b")
    written = (tmp_path / "etc" / "server.properties").read_text()
    assert "log.retention.check.interval.ms=a=b" in written.splitlines()
    # The broker refuses a bad value (and an unknown property) naming it.
    with pytest.raises(InvalidConfigError, match=r"log\.retention\.check\.interval\.ms"):
        written_config(result, tmp_path)
    env["MINIKAFKA_LOG_RETENTION_CHECK_INTERVAL_MS"] = "1000"
    env["MINIKAFKA_SOME__ODD_NAME"] = "x"  # '__' is '_'
    result = run_entrypoint(tmp_path, env, "--override", "a=b")
    assert "some_odd.name=x" in (tmp_path / "etc" / "server.properties").read_text()
    with pytest.raises(InvalidConfigError, match=r"unknown broker property 'some_odd\.name'"):
        written_config(result, tmp_path)
    del env["MINIKAFKA_SOME__ODD_NAME"]
    config = written_config(run_entrypoint(tmp_path, env, "--override", "a=b"), tmp_path)
    assert config.broker_id == 8
    assert config.zookeeper_connect == "zk1:2181,zk2:2181/kafka"
    assert config.min_insync_replicas == 2
    assert config.unclean_leader_election_enable is True
    assert config.zookeeper_session_timeout_ms == 6000
    assert config.log_retention_ms == 3_600_000
    assert config.listeners == "PLAINTEXT://0.0.0.0:9092"
    assert config.advertised_listeners is None
    assert config.log_dirs == ("/var/lib/minikafka/data",)
    assert config.log_retention_check_interval_ms == 1000
    assert "other" not in written.lower()


def test_variables_minikafka_reads_itself_stay_variables(tmp_path: Path) -> None:
    """The broker reads some MINIKAFKA_* variables from its environment (not properties):
    the entrypoint must not turn them into unknown properties."""
    names = set()
    for path in (ROOT / "minikafka").rglob("*.py"):
        if path.name == "compose.py":
            continue  # the host's side: the compose file's variables, not a broker's
        names |= set(re.findall(r"[\"'](MINIKAFKA_[A-Z0-9_]+)[\"']", path.read_text()))
    env = {"BROKER_ID": "1", "ZOOKEEPER_CONNECT": "z:1", **dict.fromkeys(names, "/x")}
    # An unknown property would make the broker refuse its config.
    written_config(run_entrypoint(tmp_path, env), tmp_path)


def test_options_are_passed_to_the_broker(tmp_path: Path) -> None:
    env = {"BROKER_ID": "1", "ZOOKEEPER_CONNECT": "zookeeper:2181"}
    result = run_entrypoint(tmp_path, env, "--override", "num.partitions=3")
    config = tmp_path / "etc" / "server.properties"
    assert result.stdout.splitlines()[0] == (
        f"ARGS: broker --config {config} --override num.partitions=3"
    )


def test_other_commands_run_without_a_broker(tmp_path: Path) -> None:
    result = run_entrypoint(tmp_path, {}, "minikafka", "topics", "--list")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ARGS: topics --list\n"
    assert not (tmp_path / "etc").exists()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ZOOKEEPER_CONNECT": "zookeeper:2181"}, "BROKER_ID must be set"),
        ({"BROKER_ID": "1"}, "ZOOKEEPER_CONNECT must be set"),
        (
            {"BROKER_ID": "1", "ZOOKEEPER_CONNECT": "z:1", "MINIKAFKA_X": "a\nbroker.id=9"},
            "contains a newline",
        ),
    ],
)
def test_entrypoint_refuses_a_bad_environment(
    env: dict[str, str], message: str, tmp_path: Path
) -> None:
    result = run_entrypoint(tmp_path, env)
    assert result.returncode == 64
    assert message in result.stderr
    assert "ARGS:" not in result.stdout


# --- scripts -------------------------------------------------------------------------------


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_scripts_parse_and_are_executable(script: Path) -> None:
    subprocess.run(["bash", "-n", str(script)], check=True)
    assert os.access(script, os.X_OK)
    assert script.read_text().startswith("#!")
    assert "set -euo pipefail" in script.read_text()


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_shellcheck(script: Path) -> None:
    result = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_fault_script_usage_and_targets(tmp_path: Path) -> None:
    fault = ROOT / "scripts" / "docker-fault.sh"
    usage = subprocess.run(["bash", str(fault)], capture_output=True, text=True)
    assert usage.returncode == 64
    for op in ("kill", "stop", "start", "restart", "pause", "unpause", "status"):
        assert re.search(rf"^\s+(OP\s+)?{op}\b", usage.stderr, re.M), op
    # A fake compose that finds no container: the script names the service it looked for.
    compose = tmp_path / "compose"
    compose.write_text('#!/bin/sh\necho "$@" >>"$(dirname "$0")/calls"\n')
    compose.chmod(0o755)
    env = {**os.environ, "COMPOSE": str(compose)}
    targets = (
        ("2", "broker2"),
        ("broker3", "broker3"),
        ("4", "broker4"),
        ("zookeeper", "zookeeper"),
    )
    for target, service in targets:
        result = subprocess.run(
            ["bash", str(fault), "kill", target], capture_output=True, text=True, env=env
        )
        assert result.returncode == 1
        assert f"no container for service {service}" in result.stderr
        # The grow profile's broker is started by name; `up` alone would not create it.
        named = f"docker compose --profile {GROW_PROFILE} up -d --wait {service}"
        assert (named in result.stderr) == (service in GROW_BROKERS), result.stderr
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[0] == f"-f {COMPOSE_FILE} ps --all --quiet broker2"
    bad = subprocess.run(["bash", str(fault), "kill", "kafka"], capture_output=True, text=True)
    assert bad.returncode == 64


def chaos_script_options() -> dict[str, str]:
    """option → value word of the script's `minikafka chaos` command (values as written)."""
    [inv] = [i for i in INVOCATIONS if i.where.startswith("scripts/docker-chaos.sh")]
    assert inv.args[0] == "chaos"
    words = [w for w in inv.args[1:] if w != "$@"]
    assert len(words) % 2 == 0, words
    return dict(zip(words[::2], words[1::2], strict=True))


def shell_default(word: str, variable: str) -> str:
    """The default of `${VARIABLE:-default}`."""
    m = re.fullmatch(r"\$\{(\w+):-(.*)\}", word)
    assert m is not None and m.group(1) == variable, f"{word}: expected ${{{variable}:-...}}"
    return m.group(2)


def test_chaos_script_runs_command_mode_against_the_compose_cluster() -> None:
    opts = chaos_script_options()
    # Every broker by the EXTERNAL address it advertises: localhost at its published port.
    advertised = [
        next(
            e
            for e in parse_endpoints(
                environment(services()[b])["ADVERTISED_LISTENERS"], "advertised.listeners"
            )
            if e.listener == "EXTERNAL"
        )
        for b in BROKERS
    ]
    bootstrap = with_defaults(shell_default(opts["--bootstrap-server"], "BOOTSTRAP"))
    assert bootstrap.split(",") == [f"{e.host}:{e.port}" for e in advertised]
    # ZooKeeper as published on the host.
    host, port = with_defaults(shell_default(opts["--zookeeper"], "ZOOKEEPER")).rsplit(":", 1)
    assert host in ("localhost", "127.0.0.1")
    assert Port("127.0.0.1", int(port), int(port)) in ports(services()["zookeeper"])
    # The faults: docker-fault.sh with both placeholders, doing every op chaos runs it with.
    assert opts["--nemesis-command"] == "$fault {op} {broker}"
    text = CHAOS_SCRIPT.read_text()
    assert """fault=$(printf '%q' "$root/scripts/docker-fault.sh")""" in text
    fault_ops = set(re.findall(r"^\s{4}([a-z-]+)\)", FAULT_SCRIPT.read_text(), re.M))
    fault_ops |= {"unpause"}  # `unpause | resume)`
    assert set(COMMAND_OPS) <= fault_ops
    nemesis = shell_default(opts["--nemesis"], "NEMESIS").split(",")
    assert nemesis and set(nemesis) <= set(COMMAND_NEMESIS_OPS)


def test_chaos_script_reaches_the_cli_with_its_options() -> None:
    """The script as it runs, up to click's parser: `--help` is answered only once every
    option before it parsed (an unknown one fails first). No Docker: NO_UP=1 skips compose."""
    env = {**os.environ, "NO_UP": "1"}
    result = subprocess.run(
        ["bash", str(CHAOS_SCRIPT), "--seed", "7", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "--nemesis-command" in result.stdout


# --- docker-compose.secure.yml -------------------------------------------------------------


def test_the_secure_override_adds_only_its_security_service() -> None:
    assert set(secure_services()) == {"zookeeper", "security", *ALL_BROKERS, *SPARK_SERVICES}
    # The override changes no port: the same ports, on 127.0.0.1 only.
    for name in ("zookeeper", *ALL_BROKERS):
        assert "ports" not in load_secure()["services"].get(name, {}), name


@pytest.mark.parametrize("name", ALL_BROKERS)
def test_the_secure_brokers_take_sasl_ssl_outside_and_mutual_tls_between_them(
    name: str, tmp_path: Path
) -> None:
    """The merged environment, through the entrypoint, is a broker config whose EXTERNAL
    listener is SASL_SSL (SCRAM), whose INTERNAL one (the inter-broker listener) is SSL
    asking for certificates, with its own keystore and the CA from the certificates' volume,
    the authorizer on and the admin and every broker super users."""
    env = environment(secure_services()[name])
    config = written_config(run_entrypoint(tmp_path, env), tmp_path)
    security = config.security()
    external, internal = security.listeners["EXTERNAL"], security.listeners["INTERNAL"]
    assert external.protocol == "SASL_SSL"
    assert "SCRAM-SHA-512" in external.sasl_mechanisms
    assert external.ssl is not None and external.ssl.client_auth.value == "none"
    assert security.inter_broker_listener == "INTERNAL" and internal.protocol == "SSL"
    assert internal.ssl is not None and internal.ssl.client_auth.value == "required"
    assert internal.ssl.keystore_location == f"/etc/minikafka/certs/{name}.keystore.pem"
    assert security.inter_broker_mechanism is None  # the certificate is the credential
    assert security.authorizer
    assert {str(p) for p in security.super_users} == {
        "User:admin",
        *(f"User:{b}" for b in ALL_BROKERS),
    }
    assert config.admin_listeners_token == "admin-token"  # MINIKAFKA_ADMIN_TOKEN's default
    # `minikafka certs create NAME` makes CN=NAME,OU=minikafka: the broker's principal.
    assert internal.principal_mapper is not None
    assert internal.principal_mapper.name(f"CN={name},OU=minikafka") == name


def test_the_secure_brokers_wait_for_the_security_service_and_mount_its_volume_read_only() -> None:
    merged = secure_services()
    assert "certs" in load_secure()["volumes"]
    for name in ALL_BROKERS:
        svc = merged[name]
        assert svc["depends_on"] == {
            "zookeeper": {"condition": "service_healthy"},
            "security": {"condition": "service_completed_successfully"},
        }, name
        assert "certs:/etc/minikafka/certs:ro" in svc["volumes"], name
        assert volume_mounts(svc)["/var/lib/minikafka"] == f"{name}-data"
    security = merged["security"]
    assert security["image"] == merged["broker1"]["image"] and "build" not in security
    assert security["pull_policy"] == "never" and security["restart"] == "no"
    assert security["depends_on"] == {"zookeeper": {"condition": "service_healthy"}}
    assert volume_mounts(security) == {"/etc/minikafka/certs": "certs"}


def test_the_security_service_makes_every_certificate_and_the_admin_before_the_brokers() -> None:
    (script,) = secure_scripts()
    raw = yaml.safe_load(SECURE_FILE.read_text())["services"]["security"]["environment"]
    assert raw["MINIKAFKA_ADMIN_PASSWORD"] == "${MINIKAFKA_ADMIN_PASSWORD:-admin-secret}"
    found = invocations_in_shell(script, "security")
    creates = [inv.args for inv in found if inv.args[:2] == ("certs", "create")]
    assert creates, found
    for args in creates:
        hosts = {args[i + 1] for i, a in enumerate(args) if a == "--host"}
        assert hosts == {"broker$b", "localhost", "127.0.0.1"}, args  # 127.0.0.1: the healthcheck
    assert f"for b in {' '.join(b.removeprefix('broker') for b in ALL_BROKERS)}; do" in script
    configs = [inv.args for inv in found if inv.args[:1] == ("configs",)]
    assert len(configs) == 1 and configs[0][1:3] == ("--zookeeper", "zookeeper:2181")
    assert "SCRAM-SHA-512=[password=$MINIKAFKA_ADMIN_PASSWORD]" in script
    # The host client's files: the CA and Kafka-named client properties.
    assert "client/ca.pem" in script and "client/client.properties" in script
    for line in ("security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512"):
        assert line in script


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
def test_shellcheck_of_the_security_services_script(tmp_path: Path) -> None:
    (script,) = secure_scripts()
    path = tmp_path / "security.sh"
    path.write_text("#!/bin/bash\nset -eu\n" + script)
    subprocess.run(["bash", "-n", str(path)], check=True)
    result = subprocess.run(["shellcheck", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
