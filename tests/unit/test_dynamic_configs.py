"""The pure parts of dynamic topic configs: what DescribeConfigs answers (values, sources,
synonyms), what IncrementalAlterConfigs makes of a topic's overrides, and which config
change notifications a broker acts on and purges."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.config.broker import BrokerConfig
from minikafka.config.dynamic import (
    TOPIC_CONFIGS,
    AlterableConfig,
    AlterOp,
    ConfigSource,
    altered_topic_overrides,
    describe_broker,
    describe_topic,
    replaced_topic_overrides,
)
from minikafka.protocol.errors import InvalidConfigError, InvalidRequestError
from minikafka.server.config_changes import CHANGE_EXPIRATION_MS, plan_config_changes
from minikafka.storage.log_config import LogConfig

BROKER = BrokerConfig.from_properties({"broker.id": "1", "log.retention.hours": "1"})


def test_every_topic_config_is_described_and_every_one_exists() -> None:
    assert set(TOPIC_CONFIGS) == set(LogConfig.TOPIC_NAMES)
    described = describe_topic(BROKER, {}, None, include_synonyms=False)
    assert [c.name for c in described] == list(TOPIC_CONFIGS)
    assert all(not c.read_only and c.synonyms == () for c in described)


# Every topic config of Kafka 2.8's documentation (kafka.apache.org/28/documentation,
# "Topic-Level Configs").
KAFKA_28_TOPIC_CONFIGS = {
    "cleanup.policy",
    "compression.type",
    "delete.retention.ms",
    "file.delete.delay.ms",
    "flush.messages",
    "flush.ms",
    "follower.replication.throttled.replicas",
    "index.interval.bytes",
    "leader.replication.throttled.replicas",
    "max.compaction.lag.ms",
    "max.message.bytes",
    "message.downconversion.enable",
    "message.format.version",
    "message.timestamp.difference.max.ms",
    "message.timestamp.type",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "min.insync.replicas",
    "preallocate",
    "retention.bytes",
    "retention.ms",
    "segment.bytes",
    "segment.index.bytes",
    "segment.jitter.ms",
    "segment.ms",
    "unclean.leader.election.enable",
}


def test_every_topic_config_kafka_2_8_defines_is_known_with_its_broker_synonym() -> None:
    assert set(TOPIC_CONFIGS) == KAFKA_28_TOPIC_CONFIGS
    properties = {BrokerConfig.property_name(f) for f in BrokerConfig.__dataclass_fields__}
    for name, d in TOPIC_CONFIGS.items():
        assert d.broker_synonym is None or d.broker_synonym in properties, name
    # Each default is the broker's, and a valid topic config.
    defaults = {c.name: c.value for c in describe_topic(BrokerConfig(), {}, None, False)}
    LogConfig().with_overrides({k: v for k, v in defaults.items() if v is not None})
    assert defaults["compression.type"] == "producer"
    assert defaults["message.timestamp.type"] == "CreateTime"
    assert defaults["file.delete.delay.ms"] == "60000"
    assert defaults["leader.replication.throttled.replicas"] == ""


def test_replication_throttles_refuse_any_replica_until_they_exist() -> None:
    for name in (
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
    ):
        with pytest.raises(InvalidConfigError, match=f"{name}: minikafka does not throttle"):
            altered_topic_overrides(BROKER, {}, [op(name, AlterOp.SET, "0:1,1:2")])
        assert altered_topic_overrides(BROKER, {}, [op(name, AlterOp.SET, "")]) == {name: ""}


def test_alter_configs_makes_the_configs_it_names_all_of_the_overrides() -> None:
    assert replaced_topic_overrides(BROKER, [("retention.ms", "5")]) == {"retention.ms": "5"}
    assert replaced_topic_overrides(BROKER, []) == {}
    with pytest.raises(InvalidConfigError, match="Unknown topic config name: nope"):
        replaced_topic_overrides(BROKER, [("nope", "1")])
    with pytest.raises(InvalidRequestError, match="Null value not supported"):
        replaced_topic_overrides(BROKER, [("retention.ms", None)])
    with pytest.raises(InvalidRequestError, match=r"duplicate config keys: flush\.ms"):
        replaced_topic_overrides(BROKER, [("flush.ms", "1"), ("flush.ms", "2")])
    with pytest.raises(InvalidConfigError, match=r"segment\.bytes"):
        replaced_topic_overrides(BROKER, [("segment.bytes", "10")])


def test_values_come_from_the_override_then_the_broker_then_the_default() -> None:
    described = {
        c.name: c
        for c in describe_topic(
            BROKER, {"min.insync.replicas": "2", "retention.ms": "5"}, None, include_synonyms=True
        )
    }
    mir = described["min.insync.replicas"]
    assert (mir.value, mir.source) == ("2", ConfigSource.TOPIC_CONFIG)
    assert [(s.name, s.value, s.source) for s in mir.synonyms] == [
        ("min.insync.replicas", "2", ConfigSource.TOPIC_CONFIG),
        ("min.insync.replicas", "1", ConfigSource.DEFAULT_CONFIG),
    ]
    retention = described["retention.ms"]
    assert [(s.name, s.value, s.source) for s in retention.synonyms] == [
        ("retention.ms", "5", ConfigSource.TOPIC_CONFIG),
        ("log.retention.ms", "3600000", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG),
    ]
    no_override = {c.name: c for c in describe_topic(BROKER, {}, None, include_synonyms=False)}
    assert (no_override["retention.ms"].value, no_override["retention.ms"].source) == (
        "3600000",
        ConfigSource.STATIC_BROKER_CONFIG,
    )
    assert no_override["unclean.leader.election.enable"].value == "false"
    assert no_override["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG


def test_named_keys_only_and_unknown_names_left_out() -> None:
    described = describe_topic(BROKER, {}, ["flush.ms", "nope", "flush.ms"], False)
    assert [c.name for c in described] == ["flush.ms"]
    broker = describe_broker(BROKER, ["broker.id", "log.retention.ms", "nope"])
    assert [(c.name, c.value, c.read_only) for c in broker] == [
        ("broker.id", "1", True),
        ("log.retention.ms", "3600000", True),
    ]


def op(name: str, kind: AlterOp, value: str | None = None) -> AlterableConfig:
    return AlterableConfig(name, int(kind), value)


def test_set_and_delete_change_the_overrides() -> None:
    current = {"retention.ms": "5", "flush.ms": "10"}
    new = altered_topic_overrides(
        BROKER,
        current,
        [op("retention.ms", AlterOp.DELETE), op("segment.bytes", AlterOp.SET, "100000")],
    )
    assert new == {"flush.ms": "10", "segment.bytes": "100000"}
    assert current == {"retention.ms": "5", "flush.ms": "10"}  # not changed in place
    assert altered_topic_overrides(BROKER, current, [op("max.message.bytes", AlterOp.DELETE)]) == (
        current
    )


def test_append_and_subtract_work_on_the_list_config() -> None:
    appended = altered_topic_overrides(
        BROKER, {}, [op("cleanup.policy", AlterOp.APPEND, "compact")]
    )
    assert appended == {"cleanup.policy": "delete,compact"}  # onto the broker's default
    again = altered_topic_overrides(
        BROKER, appended, [op("cleanup.policy", AlterOp.APPEND, "delete")]
    )
    assert again == appended
    assert altered_topic_overrides(
        BROKER, appended, [op("cleanup.policy", AlterOp.SUBTRACT, "delete")]
    ) == {"cleanup.policy": "compact"}
    with pytest.raises(InvalidConfigError):  # nothing left: not a policy
        altered_topic_overrides(BROKER, {}, [op("cleanup.policy", AlterOp.SUBTRACT, "delete")])


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ([op("no.such", AlterOp.SET, "1")], InvalidConfigError),
        ([op("cleanup.policy", AlterOp.SET, "compress")], InvalidConfigError),
        ([op("min.cleanable.dirty.ratio", AlterOp.SET, "1.5")], InvalidConfigError),
        ([op("cleanup.policy", AlterOp.APPEND, None)], InvalidRequestError),
        ([op("min.insync.replicas", AlterOp.SET, "0")], InvalidConfigError),
        ([op("retention.ms", AlterOp.SET, "soon")], InvalidConfigError),
        ([op("retention.ms", AlterOp.APPEND, "1")], InvalidConfigError),
        ([op("retention.ms", AlterOp.SUBTRACT, "1")], InvalidConfigError),
        ([op("retention.ms", AlterOp.SET, None)], InvalidRequestError),
        ([AlterableConfig("retention.ms", 9, "1")], InvalidRequestError),
        ([op("flush.ms", AlterOp.SET, "1"), op("flush.ms", AlterOp.DELETE)], InvalidRequestError),
    ],
)
def test_bad_changes_are_refused_as_kafka_refuses_them(
    changes: list[AlterableConfig], error: type[Exception]
) -> None:
    with pytest.raises(error):
        altered_topic_overrides(BROKER, {}, changes)


def names(*seqs: int) -> list[str]:
    return [f"config_change_{s:010d}" for s in seqs]


def test_only_notifications_after_the_last_one_processed_are_acted_on() -> None:
    now = 10 * CHANGE_EXPIRATION_MS
    a, b, c, d = names(1, 2, 3, 4)
    notifications = {
        a: ("topics/old", now),
        b: ("topics/t1", now),
        c: ("brokers/1", now),
        d: ("topics/t1", now),
    }
    plan = plan_config_changes(notifications, 1, now)
    assert (plan.topics, plan.last_sequence, plan.purge) == (["t1"], 4, [])
    assert plan_config_changes(notifications, 4, now).topics == []
    # An unreadable notification is passed over, not retried for ever.
    assert plan_config_changes({a: (None, now)}, -1, now).last_sequence == 1


def test_notifications_older_than_15_minutes_are_purged() -> None:
    now = 10 * CHANGE_EXPIRATION_MS
    old, fresh = names(7, 8)
    plan = plan_config_changes(
        {old: ("topics/a", now - CHANGE_EXPIRATION_MS - 1), fresh: ("topics/b", now)}, -1, now
    )
    assert (plan.topics, plan.purge) == (["a", "b"], [old])


@given(st.lists(st.integers(0, 50), unique=True), st.integers(-1, 50))
def test_the_last_sequence_never_goes_back(seqs: list[int], last: int) -> None:
    notifications = {n: ("topics/t", 0) for n in names(*seqs)}
    plan = plan_config_changes(notifications, last, 0)
    assert plan.last_sequence == max([last, *seqs])
    assert plan.topics == (["t"] if any(s > last for s in seqs) else [])
