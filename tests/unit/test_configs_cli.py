"""`minikafka configs --entity-type users`: kafka-configs.sh's `--add-config` syntax (Kafka's
ConfigCommand cases, and its grammar as a property), SCRAM credentials as Kafka's tool reads
them, argument errors, and the command over Kafka's protocol with librdkafka against a
stand-in broker answering as Kafka 2.8's (tests/unit/scram_broker.py): Kafka's output lines,
Kafka's salt and a password salted on the client. Nothing here needs a real broker
(tests/cluster/test_configs_users.py runs the command against minikafka's)."""

from __future__ import annotations

import hashlib
import random
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import given
from hypothesis import strategies as st

from minikafka.cli.configs import (
    ConfigSyntaxError,
    ScramUpsertion,
    broker_configs_after,
    completed_line,
    completed_resource_line,
    describe_entry_line,
    describe_error_line,
    describe_header,
    describe_line,
    parse_add_config,
    parse_delete_config,
    parse_scram_credential,
    user_alteration,
)
from minikafka.cli.main import cli
from minikafka.client.client_security import set_client_security
from minikafka.client.resource_configs import ConfigEntry, Synonym
from minikafka.security.scram import ScramMechanism
from tests.unit.scram_broker import ScramBroker, scram_broker

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
KEY_VALUE_ERROR = 'Invalid entity config: all configs to be added must be in the format "key=val".'


@pytest.fixture(autouse=True)
def no_default_left_behind() -> Iterator[None]:
    yield
    set_client_security({})


# --- --add-config ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Kafka's ConfigCommandTest.
        ("a=b,c=d", {"a": "b", "c": "d"}),
        ("a=b,c=,d=e,f=", {"a": "b", "c": "", "d": "e", "f": ""}),
        ("a=b,c=[d,e ,f],g=[h,i]", {"a": "b", "c": "d,e ,f", "g": "h,i"}),
        (
            "SCRAM-SHA-256=[iterations=8192,password=foo-secret]",
            {"SCRAM-SHA-256": "iterations=8192,password=foo-secret"},
        ),
        # The brief's example, and what Kafka's regular expressions make of the rest.
        (
            "SCRAM-SHA-256=[iterations=8192,password=alice-secret],"
            "SCRAM-SHA-512=[password=alice-secret]",
            {
                "SCRAM-SHA-256": "iterations=8192,password=alice-secret",
                "SCRAM-SHA-512": "password=alice-secret",
            },
        ),
        (" a = b , c = [ d ] ", {"a": "b", "c": "d"}),  # trimmed, white space round '='
        ("a=b,", {"a": "b"}),  # Java's split drops a trailing empty string
        ("a=b,a=c", {"a": "c"}),  # Properties.setProperty: the last one
        ("a=[x=y,z]", {"a": "x=y,z"}),  # '=' inside brackets is the value's
        ("a=[p]q]", {"a": "pq"}),  # every bracket goes, wherever it is
        ("=,", {"": ""}),  # an empty key too
    ],
)
def test_add_config_as_kafka_parses_it(text: str, expected: dict[str, str]) -> None:
    assert parse_add_config(text) == expected


# "a=b=c]": to Kafka's lookahead both '=' are inside brackets (a ']' follows), so none splits.
@pytest.mark.parametrize("text", ["", "a", "a=b=c", ",a=b", "a=b,,c=d", "a=[b,c", "a=b=c]"])
def test_add_config_kafka_refuses(text: str) -> None:
    with pytest.raises(ConfigSyntaxError) as e:
        parse_add_config(text)
    assert str(e.value) == KEY_VALUE_ERROR


def test_add_config_of_commas_alone_is_nothing() -> None:
    # Java's ",".split(",") is empty: no config, which the command then refuses.
    assert parse_add_config(",") == {}


_KEY = st.text(st.sampled_from("abcxyzABC019.-_"), min_size=1, max_size=12)
# Any value but brackets and line terminators; commas and '=' are what the brackets are for.
_VALUE = st.text(
    st.characters(codec="utf-8", exclude_characters="[]\n\r\x85\u2028\u2029"), max_size=20
)


@given(st.dictionaries(_KEY, _VALUE, min_size=1, max_size=5))
def test_bracketed_values_come_back(configs: dict[str, str]) -> None:
    text = ",".join(f"{k}=[{v}]" for k, v in configs.items())
    java_trimmed = "".join(chr(c) for c in range(0x21))
    assert parse_add_config(text) == {k: v.strip(java_trimmed) for k, v in configs.items()}


@given(st.dictionaries(_KEY, st.text(st.sampled_from("abc019.-_/:"), max_size=10), min_size=1))
def test_plain_values_need_no_brackets(configs: dict[str, str]) -> None:
    assert parse_add_config(",".join(f"{k}={v}" for k, v in configs.items())) == configs


def test_delete_config() -> None:
    assert parse_delete_config(["SCRAM-SHA-512"]) == ["SCRAM-SHA-512"]
    assert parse_delete_config([" SCRAM-SHA-512 , SCRAM-SHA-256", "SCRAM-SHA-512"]) == [
        "SCRAM-SHA-512",
        "SCRAM-SHA-256",
    ]
    with pytest.raises(ConfigSyntaxError, match="names an empty config"):
        parse_delete_config(["SCRAM-SHA-512,,SCRAM-SHA-256"])


# --- SCRAM credentials -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "iterations", "password"),
    [
        ("password=alice-secret", 4096, "alice-secret"),  # Kafka's DefaultScramIterations
        ("iterations=8192,password=alice-secret", 8192, "alice-secret"),
        ("iterations=-1,password=p", 4096, "p"),  # -1: the default, as Kafka 2.8.2 reads it
        ("iterations=16384,password=p", 16384, "p"),
        ("password=a=b,c", 4096, "a=b,c"),  # the rest of the value is the password
        # iterations after password=: part of the password, as Kafka reads it.
        ("password=p,iterations=8192", 4096, "p,iterations=8192"),
    ],
)
def test_credential_as_kafka_reads_it(value: str, iterations: int, password: str) -> None:
    assert parse_scram_credential(SHA256, value) == ScramUpsertion(SHA256, iterations, password)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "iterations=100,password=alice-secret",
            "Iterations 100 is less than the minimum 4096 required for SCRAM-SHA-256",
        ),
        (
            "iterations=16385,password=alice-secret",
            "Iterations 16385 is more than the maximum 16384 allowed for SCRAM-SHA-256 (a broker "
            "refuses it: Too many iterations)",
        ),
        ("iterations=,password=alice-secret", "iterations is not a number"),
        ("iterations=8192", "Invalid credential property SCRAM-SHA-256: expected"),
        ("alice-secret", "Invalid credential property SCRAM-SHA-256: expected"),
        ("iterations=x8192,password=alice-secret", "Invalid credential property"),
        ("password=", "the password is empty"),
        ("password=alice-secret\nmore", "Invalid credential property"),
    ],
)
def test_credential_refused_without_its_password(value: str, message: str) -> None:
    with pytest.raises(ConfigSyntaxError) as e:
        parse_scram_credential(SHA256, value)
    assert message in str(e.value)
    assert "alice-secret" not in str(e.value)


def test_a_password_is_not_in_a_credentials_repr() -> None:
    assert "alice-secret" not in repr(ScramUpsertion(SHA256, 4096, "alice-secret"))


def test_user_alteration() -> None:
    alteration = user_alteration(
        "alice",
        {"SCRAM-SHA-256": "iterations=8192,password=a", "SCRAM-SHA-512": "password=p,iterations=1"},
        ["SCRAM-SHA-1"] * 0,
    )
    assert alteration.upsertions == (
        ScramUpsertion(SHA256, 8192, "a"),
        ScramUpsertion(SHA512, 4096, "p,iterations=1"),
    )
    assert alteration.deletions == ()
    (warning,) = alteration.warnings()
    assert "SCRAM-SHA-512's password holds ',iterations='" in warning and "p," not in warning
    assert user_alteration("bob", {}, ["SCRAM-SHA-512"]).deletions == (SHA512,)


@pytest.mark.parametrize(
    ("add", "delete", "message"),
    [
        (
            {"consumer_byte_rate": "20000"},
            [],
            "minikafka has no quotas: consumer_byte_rate cannot be added",
        ),
        (
            {},
            ["producer_byte_rate"],
            "minikafka has no quotas: producer_byte_rate cannot be deleted",
        ),
        (
            {"some_config": "10", "SCRAM-SHA-256": "password=x"},
            [],
            "Only SCRAM credential configs can be added for 'users' (SCRAM-SHA-256, "
            "SCRAM-SHA-512). Unexpected config names: some_config",
        ),
        ({}, ["SCRAM-SHA-256", "some_config"], "Unexpected config names: some_config"),
        ({}, ["SCRAM-SHA-1"], "Unexpected config names: SCRAM-SHA-1"),
        (
            {"SCRAM-SHA-256": "password=x"},
            ["SCRAM-SHA-256"],
            "SCRAM-SHA-256: both added and deleted",
        ),
    ],
)
def test_user_alteration_refused(add: dict[str, str], delete: list[str], message: str) -> None:
    with pytest.raises(ConfigSyntaxError) as e:
        user_alteration("alice", add, delete)
    assert message in str(e.value)


# --- Kafka's output --------------------------------------------------------------------------


def test_kafkas_lines() -> None:
    """ConfigCommand.scala (Kafka 2.8): describeClientQuotaAndUserScramCredentialConfigs and
    alterConfig."""
    assert describe_line("alice", [(1, 8192), (2, 4096)]) == (
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096"
    )
    assert describe_line("bob", [(0, 4096)]) == (
        "SCRAM credential configs for user-principal 'bob' are UNKNOWN=iterations=4096"
    )
    assert describe_error_line("alice", 92, "Cannot describe ...: alice") == (
        "Error retrieving SCRAM credential configs for user-principal 'alice': "
        "ExecutionException: org.apache.kafka.common.errors.DuplicateResourceException: "
        "Cannot describe ...: alice"
    )
    assert completed_line("alice") == "Completed updating config for user alice."


# --- argument errors -------------------------------------------------------------------------


def configs(*args: str, bootstrap: str = "127.0.0.1:1") -> Result:
    return CliRunner().invoke(cli, ["configs", "--bootstrap-server", bootstrap, *args])


USAGE_ERRORS = [
    (["--entity-type", "users"], "Command must include exactly one action: --describe, --alter"),
    (
        ["--entity-type", "users", "--describe", "--alter"],
        "Command must include exactly one action",
    ),
    (
        ["--user", "alice", "--describe", "--add-config", "SCRAM-SHA-256=[password=alice-secret]"],
        "--add-config goes with --alter, not --describe",
    ),
    (
        ["--user", "alice", "--entity-type", "users", "--describe"],
        "--entity-{type,name,default} should not be used in conjunction with specific entity flags",
    ),
    (["--entity-name", "alice", "--describe"], "At least one entity type must be specified"),
    (
        ["--entity-type", "brokers", "--entity-name", "one", "--describe"],
        "The entity name for brokers must be a valid integer broker id, but it is: one",
    ),
    (
        ["--entity-type", "topics", "--entity-default", "--describe"],
        "topics have none",
    ),
    (["--topic", "t", "--alter"], "At least one of --add-config or --delete-config"),
    (["--entity-type", "topics", "--alter", "--add-config", "a=1"], "an entity name must be"),
    (["--entity-type", "brokers", "--alter", "--add-config", "a=1"], "or default entity must"),
    (["--topic", "t", "--broker", "1", "--describe"], "give one entity"),
    (["--topic", "t", "--entity-type", "topics", "--describe"], "should not be used"),
    (["--topic", "t", "--alter", "--all", "--add-config", "a=1"], "--all goes with --describe"),
    (["--user", "alice", "--describe", "--all"], "--all goes with topics and brokers"),
    (
        ["--entity-type", "topics", "--entity-name", "a", "--entity-name", "b", "--describe"],
        "give one --entity-name for topics",
    ),
    (
        ["--topic", "t", "--alter", "--add-config", "a=1", "--zookeeper", "localhost:2181"],
        "--zookeeper alters users' SCRAM credentials only",
    ),
    (
        ["--entity-type", "users", "--entity-default", "--describe"],
        "The use of --entity-default or --user-defaults is not allowed",
    ),
    (["--entity-type", "clients", "--describe"], "Client configs are quotas"),
    (["--entity-type", "ips", "--describe"], "minikafka has no quotas"),
    (["--entity-type", "broker-loggers", "--describe"], "no broker-logger configs"),
    (["--entity-type", "users", "--alter", "--delete-config", "SCRAM-SHA-256"], "--alter needs"),
    (
        ["--user", "a", "--user", "b", "--alter", "--delete-config", "SCRAM-SHA-256"],
        "--alter changes one user's credentials at a time",
    ),
    (
        ["--user", "alice", "--alter"],
        "At least one of --add-config or --delete-config must be specified with --alter",
    ),
    (
        [
            "--user",
            "alice",
            "--alter",
            "--add-config",
            "SCRAM-SHA-256=[password=alice-secret]",
            "--add-config",
            "SCRAM-SHA-512=[password=alice-secret]",
        ],
        "--add-config given more than once",
    ),
    (
        ["--user", "alice", "--alter", "--add-config", "SCRAM-SHA-256=alice-secret=x"],
        KEY_VALUE_ERROR,
    ),
    (
        [
            "--user",
            "alice",
            "--alter",
            "--add-config",
            "SCRAM-SHA-256=[iterations=1,password=alice-secret]",
        ],
        "Iterations 1 is less than the minimum 4096 required for SCRAM-SHA-256",
    ),
    (
        ["--user", "alice", "--alter", "--add-config", "SCRAM-SHA-256=[alice-secret]"],
        "Invalid credential property SCRAM-SHA-256",
    ),
    (
        ["--user", "alice", "--alter", "--add-config", "producer_byte_rate=1024"],
        "minikafka has no quotas",
    ),
    (
        ["--user", "alice", "--alter", "--delete-config", "SCRAM-SHA-256,,SCRAM-SHA-512"],
        "names an empty config",
    ),
    (
        ["--user", "alice", "--alter", "--add-config", ","],
        "Invalid value for --add-config: names no config",
    ),
    (["--entity-type", "users", "--entity-name", "", "--describe"], "is not allowed with User"),
    (["--entity-type", "groups", "--describe"], "'groups' is not one of"),
    (["--user", "alice", "--describe", "--add-config-file", "f"], "No such option"),
]


@pytest.mark.parametrize(("args", "message"), USAGE_ERRORS)
def test_argument_errors_are_usage_errors_without_passwords(args: list[str], message: str) -> None:
    result = configs(*args)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.stderr.split())
    assert "alice-secret" not in result.output


# --- over Kafka's protocol, against a stand-in broker ----------------------------------------


@pytest.fixture
def broker() -> Iterator[ScramBroker]:
    with scram_broker() as b:
        yield b


def _ok(result: Result) -> str:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


def test_add_describe_change_delete(broker: ScramBroker) -> None:
    add = "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]"
    user = ["--entity-type", "users", "--entity-name", "alice"]
    assert _ok(configs(*user, "--alter", "--add-config", add, bootstrap=broker.bootstrap)) == (
        "Completed updating config for user alice.\n"
    )
    # The broker got Kafka's salt (ScramFormatter's: 130 random bits in base 36) and the
    # password salted on the client; never the password itself.
    (request,) = broker.requests
    assert request.deletions == ()
    for upsertion in request.upsertions:
        salt = bytes(upsertion.salt)
        assert 1 <= len(salt) <= 26 and salt.decode().isalnum() and salt == salt.lower()
        hash_name = {1: "sha256", 2: "sha512"}[upsertion.mechanism]
        assert bytes(upsertion.salted_password) == hashlib.pbkdf2_hmac(
            hash_name, b"alice-secret", salt, upsertion.iterations
        )
    assert b"alice-secret" not in repr(broker.requests).encode()

    assert _ok(configs(*user, "--describe", bootstrap=broker.bootstrap)) == (
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n"
    )
    change = "SCRAM-SHA-512=[iterations=16384,password=alice-secret-2]"
    _ok(configs("--user", "alice", "--alter", "--add-config", change, bootstrap=broker.bootstrap))
    _ok(
        configs(
            "--user",
            "alice",
            "--alter",
            "--delete-config",
            "SCRAM-SHA-256",
            bootstrap=broker.bootstrap,
        )
    )
    assert _ok(configs("--user", "alice", "--describe", bootstrap=broker.bootstrap)) == (
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=16384\n"
    )
    # One request: deletions first, then upsertions, as Kafka's tool sends them.
    both = configs(
        "--user",
        "alice",
        "--alter",
        "--delete-config",
        "SCRAM-SHA-512",
        "--add-config",
        "SCRAM-SHA-256=[password=p]",
        bootstrap=broker.bootstrap,
    )
    _ok(both)
    last = broker.requests[-1]
    assert [d.mechanism for d in last.deletions] == [2]
    assert [u.mechanism for u in last.upsertions] == [1]


def test_the_brokers_errors_are_one_line(broker: ScramBroker) -> None:
    _ok(
        configs(
            "--user",
            "alice",
            "--alter",
            "--add-config",
            "SCRAM-SHA-256=[password=a]",
            bootstrap=broker.bootstrap,
        )
    )
    result = configs(
        "--user", "alice", "--alter", "--delete-config", "SCRAM-SHA-512", bootstrap=broker.bootstrap
    )
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == (
        "Error while executing config command : RESOURCE_NOT_FOUND: Attempt to delete a user "
        "credential that does not exist\n"
    )


def test_describe_every_user_and_some(broker: ScramBroker) -> None:
    assert _ok(configs("--entity-type", "users", "--describe", bootstrap=broker.bootstrap)) == ""
    for user, add in (
        ("carol", "SCRAM-SHA-512=[password=c]"),
        ("alice", "SCRAM-SHA-256=[iterations=5000,password=a]"),
    ):
        _ok(configs("--user", user, "--alter", "--add-config", add, bootstrap=broker.bootstrap))
    assert _ok(configs("--entity-type", "users", "--describe", bootstrap=broker.bootstrap)) == (
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=5000\n"
        "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-512=iterations=4096\n"
    )
    # Named, in the order given; one without credentials is left out, as Kafka's tool does;
    # a name given twice is asked for once.
    names = ["--entity-name", "carol", "--entity-name", "bob", "--entity-name", "alice"]
    assert _ok(
        configs(
            "--entity-type",
            "users",
            *names,
            "--entity-name",
            "carol",
            "--describe",
            bootstrap=broker.bootstrap,
        )
    ) == (
        "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-512=iterations=4096\n"
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=5000\n"
    )
    assert [u.name for u in broker.requests[-1].users] == ["carol", "bob", "alice"]


def test_a_broker_without_kip_554(broker: ScramBroker) -> None:
    with scram_broker({18: (0, 3), 3: (4, 4)}) as old:
        for args in (["--describe"], ["--alter", "--add-config", "SCRAM-SHA-256=[password=a]"]):
            result = configs("--user", "alice", *args, bootstrap=old.bootstrap)
            assert result.exit_code == 1
            assert result.stderr.startswith("Error while executing config command : ")
            assert "not supported by broker" in result.stderr


def test_no_broker_answers() -> None:
    result = configs("--entity-type", "users", "--describe", bootstrap="127.0.0.1:1")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error while executing config command : ")
    assert "127.0.0.1:1" in result.stderr and result.stderr.count("\n") == 1


# Kafka's own expressions (ConfigCommand.parseConfigsToBeAdded, Kafka 2.8), run by Java: each
# line of stdin is one --add-config ("\t" escaped), each line of stdout its configs or ERR.
_KAFKAS_PARSER = r"""
import java.io.*; import java.util.*;
public class Parse {
  public static void main(String[] args) throws IOException {
    String pattern = "(?=[^\\]]*(?:\\[|$))";
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
    for (String line; (line = in.readLine()) != null; ) {
      String[][] pairs = Arrays.stream(line.replace("\\t", "\t").split("," + pattern))
          .map(c -> c.split("\\s*=\\s*" + pattern, -1)).toArray(String[][]::new);
      if (!Arrays.stream(pairs).allMatch(p -> p.length == 2)) { System.out.println("ERR"); continue; }
      TreeMap<String, String> props = new TreeMap<>();
      for (String[] p : pairs) props.put(p[0].trim(), p[1].replaceAll("\\[?\\]?", "").trim());
      StringBuilder out = new StringBuilder();
      props.forEach((k, v) -> out.append("<").append(k).append(">=<").append(v).append(">"));
      System.out.println(out);
    }
  }
}
"""


def test_add_config_parses_as_kafkas_own_code(tmp_path: Path) -> None:
    """Thousands of --add-config strings of the characters that matter, parsed by Kafka's
    expressions in Java and here: the same configs, or both refuse."""
    java = shutil.which("java")
    if java is None:
        pytest.skip("no java (ZooKeeper's, which the cluster tests need) on PATH")
    source = tmp_path / "Parse.java"
    source.write_text(_KAFKAS_PARSER)
    rng = random.Random(2_8)
    cases = [
        "".join(rng.choice("ab=,[] \t") for _ in range(rng.randint(0, 12))) for _ in range(3000)
    ]
    done = subprocess.run(
        [java, str(source)],
        input="\n".join(c.replace("\t", "\\t") for c in cases) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    kafkas = done.stdout.splitlines()
    assert len(kafkas) == len(cases)
    for case, kafka in zip(cases, kafkas, strict=True):
        try:
            parsed = parse_add_config(case)
        except ConfigSyntaxError:
            ours = "ERR"
        else:
            ours = "".join(f"<{k}>=<{v}>" for k, v in sorted(parsed.items()))
        assert ours == kafka, repr(case)


# --- topics and brokers: kafka-configs.sh's lines, Kafka 2.8's broker alteration ------------


def test_describe_lines_as_kafkas_tool_prints_them() -> None:
    assert describe_header("topics", "t", False) == "Dynamic configs for topic t are:"
    assert describe_header("brokers", "1", True) == "All configs for broker 1 are:"
    assert (
        describe_header("brokers", "", False) == "Default configs for brokers in the cluster are:"
    )
    entry = ConfigEntry(
        "retention.ms",
        "1000",
        1,
        False,
        False,
        (Synonym("retention.ms", "1000", 1), Synonym("log.retention.hours", "168", 5)),
    )
    assert describe_entry_line(entry) == (
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, "
        "DEFAULT_CONFIG:log.retention.hours=168}"
    )
    secret = ConfigEntry("admin.listeners.token", None, 2, True, False, ())
    assert describe_entry_line(secret) == "  admin.listeners.token=null sensitive=true synonyms={}"
    assert completed_resource_line("topics", "t") == "Completed updating config for topic t."
    assert completed_resource_line("brokers", "") == (
        "Completed updating default config for brokers in the cluster."
    )


def test_a_broker_alteration_sends_every_dynamic_config_of_the_entity() -> None:
    current: dict[str, str | None] = {"a": "1", "b": "2"}
    assert broker_configs_after(current, {"b": "3", "c": "4"}, ["a"]) == {"b": "3", "c": "4"}
    with pytest.raises(ConfigSyntaxError, match=r"Invalid config\(s\): x,y"):
        broker_configs_after(current, {}, ["x", "y"])
    # A sensitive config is described without its value: it must be given again.
    with pytest.raises(ConfigSyntaxError, match=r"missing entries: Set\(secret\)"):
        broker_configs_after({"secret": None}, {"a": "1"}, [])
    assert broker_configs_after({"secret": None}, {"secret": "s"}, []) == {"secret": "s"}
