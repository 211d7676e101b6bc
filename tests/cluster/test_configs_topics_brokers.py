"""`minikafka configs` for topics and brokers against a real 3-broker cluster, with
kafka-configs.sh's (Kafka 2.8, --bootstrap-server) syntax and output: a topic's configs
altered with IncrementalAlterConfigs, a broker's and the brokers' default with AlterConfigs,
described with their synonyms; what the brokers keep is read back from ZooKeeper and with
librdkafka's describe_configs."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Iterator
from subprocess import CompletedProcess

import pytest
from confluent_kafka.admin import ConfigResource, ResourceType

from minikafka.cluster import LocalCluster
from tests.cluster.conftest import started_cluster, wait_until
from tests.cluster.helpers import TIMEOUT_S, admin_client, bootstrap, create_topic, run_cli

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with started_cluster(tmp_path_factory.mktemp("configs")) as cluster:
        yield cluster


def configs(cluster: LocalCluster, *args: str) -> CompletedProcess[str]:
    return run_cli("configs", "--bootstrap-server", bootstrap(cluster), *args)


def ok(result: CompletedProcess[str]) -> list[str]:
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert result.stderr == ""
    return result.stdout.splitlines()


def failed(result: CompletedProcess[str]) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stdout == ""
    return result.stderr


def described(cluster: LocalCluster, rtype: ResourceType, name: str) -> dict[str, str | None]:
    """The resource's configs as librdkafka's admin client describes them."""
    admin = admin_client(bootstrap(cluster))  # kept: its calls end with it
    futures = admin.describe_configs([ConfigResource(rtype, name)])
    ((_, f),) = futures.items()
    return {k: e.value for k, e in f.result(timeout=TIMEOUT_S).items()}


LINE = re.compile(r"  (\S+?)=(.*) sensitive=(true|false) synonyms=\{(.*)\}")


def entries(lines: list[str]) -> dict[str, tuple[str, str, list[str]]]:
    """Each config line of kafka-configs.sh's --describe: name -> (value, sensitive,
    synonyms as SOURCE:name=value)."""
    out = {}
    for line in lines:
        m = LINE.fullmatch(line)
        assert m is not None, line
        out[m[1]] = (m[2], m[3], m[4].split(", ") if m[4] else [])
    return out


def test_alter_describe_and_delete_a_topics_configs(shared: LocalCluster) -> None:
    cluster = shared
    topic = f"cfg-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_topic(cluster, topic, 1, 3))
    added = configs(
        cluster,
        "--entity-type",
        "topics",
        "--entity-name",
        topic,
        "--alter",
        "--add-config",
        "retention.ms=1000,cleanup.policy=[compact,delete]",
    )
    assert ok(added) == [f"Completed updating config for topic {topic}."]
    # Kept where Kafka keeps a topic's overrides, and in force for Kafka's clients.
    assert cluster.zk_client().get_topic_config(topic) == {
        "retention.ms": "1000",
        "cleanup.policy": "compact,delete",
    }
    lines = ok(configs(cluster, "--topic", topic, "--describe"))
    assert lines[0] == f"Dynamic configs for topic {topic} are:"
    got = entries(lines[1:])
    assert set(got) == {"retention.ms", "cleanup.policy"}
    value, sensitive, synonyms = got["retention.ms"]
    assert (value, sensitive) == ("1000", "false")
    assert synonyms[0] == "DYNAMIC_TOPIC_CONFIG:retention.ms=1000"
    assert any(s.startswith("DEFAULT_CONFIG:log.retention.") for s in synonyms[1:]), synonyms
    assert got["cleanup.policy"][2][0] == "DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete"

    # --all: every config, the defaults too.
    lines = ok(configs(cluster, "--topic", topic, "--describe", "--all"))
    assert lines[0] == f"All configs for topic {topic} are:"
    everything = entries(lines[1:])
    assert everything["retention.ms"][0] == "1000"
    assert everything["segment.bytes"][2][-1].startswith("DEFAULT_CONFIG:log.segment.bytes=")

    # A bad value: Kafka's INVALID_CONFIG, and nothing changes.
    bad = configs(cluster, "--topic", topic, "--alter", "--add-config", "retention.ms=soon")
    assert "INVALID_CONFIG" in failed(bad)
    assert described(cluster, ResourceType.TOPIC, topic)["retention.ms"] == "1000"

    deleted = configs(cluster, "--topic", topic, "--alter", "--delete-config", "retention.ms")
    assert ok(deleted) == [f"Completed updating config for topic {topic}."]
    assert cluster.zk_client().get_topic_config(topic) == {"cleanup.policy": "compact,delete"}
    assert set(entries(ok(configs(cluster, "--topic", topic, "--describe"))[1:])) == {
        "cleanup.policy"
    }
    # Deleting a config the topic does not set: Kafka's tool refuses it before asking.
    again = configs(cluster, "--topic", topic, "--alter", "--delete-config", "retention.ms")
    assert "Invalid config(s): retention.ms" in failed(again)


def broker_lines(cluster: LocalCluster, *entity: str, all_: bool = False) -> list[str]:
    return ok(configs(cluster, *entity, "--describe", *(["--all"] if all_ else [])))


def test_a_brokers_config_and_the_brokers_default(shared: LocalCluster) -> None:
    cluster = shared
    default = ["--entity-type", "brokers", "--entity-default"]
    done = configs(
        cluster, *default, "--alter", "--add-config", "log.cleaner.delete.retention.ms=3600000"
    )
    assert ok(done) == ["Completed updating default config for brokers in the cluster."]
    lines = broker_lines(cluster, "--broker-defaults")
    assert lines == [
        "Default configs for brokers in the cluster are:",
        "  log.cleaner.delete.retention.ms=3600000 sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.delete.retention.ms=3600000}",
    ]

    done = configs(
        cluster, "--broker", "1", "--alter", "--add-config", "log.cleaner.delete.retention.ms=60000"
    )
    assert ok(done) == ["Completed updating config for broker 1."]

    def broker_1_has_it() -> bool:
        got = entries(broker_lines(cluster, "--entity-type", "brokers", "--entity-name", "1")[1:])
        return "log.cleaner.delete.retention.ms" in got

    wait_until(broker_1_has_it, 30, "broker 1 to apply its dynamic config")
    lines = broker_lines(cluster, "--entity-type", "brokers", "--entity-name", "1")
    assert lines[0] == "Dynamic configs for broker 1 are:"
    value, _, synonyms = entries(lines[1:])["log.cleaner.delete.retention.ms"]
    assert value == "60000"
    # Every level of the one name, in force first: what librdkafka's dict of synonyms loses.
    assert synonyms == [
        "DYNAMIC_BROKER_CONFIG:log.cleaner.delete.retention.ms=60000",
        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.delete.retention.ms=3600000",
        "DEFAULT_CONFIG:log.cleaner.delete.retention.ms=86400000",
    ]

    # Broker 2 takes the default; its dynamic configs (its own) are none.
    def broker_2_takes_the_default() -> bool:
        return (
            described(cluster, ResourceType.BROKER, "2").get("log.cleaner.delete.retention.ms")
            == "3600000"
        )

    wait_until(broker_2_takes_the_default, 30, "broker 2 to apply the cluster default")
    assert broker_lines(cluster, "--broker", "2") == ["Dynamic configs for broker 2 are:"]
    every = entries(broker_lines(cluster, "--broker", "2", all_=True)[1:])
    assert every["log.cleaner.delete.retention.ms"][0] == "3600000"
    assert every["broker.id"][0] == "2"

    # Without an entity name: every broker, then the default.
    headers = [
        line
        for line in broker_lines(cluster, "--entity-type", "brokers")
        if not line.startswith(" ")
    ]
    assert headers == [
        "Dynamic configs for broker 1 are:",
        "Dynamic configs for broker 2 are:",
        "Dynamic configs for broker 3 are:",
        "Default configs for brokers in the cluster are:",
    ]

    # A bad value: INVALID_CONFIG, nothing changes.
    bad = configs(
        cluster, "--broker", "1", "--alter", "--add-config", "log.cleaner.delete.retention.ms=x"
    )
    assert "INVALID_CONFIG" in failed(bad)
    assert cluster.zk_client().get_broker_config("1") == {
        "log.cleaner.delete.retention.ms": "60000"
    }

    # --delete-config: the broker's own goes, the default is in force again.
    done = configs(
        cluster, "--broker", "1", "--alter", "--delete-config", "log.cleaner.delete.retention.ms"
    )
    assert ok(done) == ["Completed updating config for broker 1."]
    assert cluster.zk_client().get_broker_config("1") == {}
    done = configs(
        cluster, *default, "--alter", "--delete-config", "log.cleaner.delete.retention.ms"
    )
    assert ok(done) == ["Completed updating default config for brokers in the cluster."]
    assert cluster.zk_client().get_broker_config("<default>") == {}
    missing = configs(cluster, "--broker", "1", "--alter", "--delete-config", "num.io.threads")
    assert "Invalid config(s): num.io.threads" in failed(missing)
