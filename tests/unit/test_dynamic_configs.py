"""The pure parts of dynamic topic and broker configs: what DescribeConfigs answers (values,
sources, synonyms), what IncrementalAlterConfigs and AlterConfigs make of a topic's
overrides and of a broker's dynamic configs (KIP-226), and which config change
notifications a broker acts on and purges."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.config.broker import BrokerConfig
from minikafka.config.docs import BROKER_CONFIG_DOCS
from minikafka.config.dynamic import (
    DEFAULT_BROKER_ENTITY,
    DYNAMIC_BROKER_CONFIGS,
    TOPIC_CONFIGS,
    AlterableConfig,
    AlterOp,
    BrokerConfigLayers,
    ConfigSource,
    altered_broker_configs,
    altered_topic_overrides,
    describe_broker,
    describe_broker_default,
    describe_topic,
    replaced_broker_configs,
    replaced_topic_overrides,
)
from minikafka.protocol.errors import InvalidConfigError, InvalidRequestError
from minikafka.server.config_changes import CHANGE_EXPIRATION_MS, plan_config_changes
from minikafka.storage.log_config import LONG_MAX, LogConfig

BROKER = BrokerConfig.from_properties({"broker.id": "1", "log.retention.hours": "1"})
LAYERS = BrokerConfigLayers(BROKER)


def test_every_topic_config_is_described_and_every_one_exists() -> None:
    assert set(TOPIC_CONFIGS) == set(LogConfig.TOPIC_NAMES)
    described = describe_topic(LAYERS, {}, None, include_synonyms=False)
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
    properties = {
        BrokerConfig.property_name(f)
        for f in BrokerConfig.__dataclass_fields__
        if f != "security_props"
    }
    for name, d in TOPIC_CONFIGS.items():
        assert d.broker_synonym is None or d.broker_synonym in properties, name
    # Each default is the broker's, and a valid topic config.
    defaults = {
        c.name: c.value for c in describe_topic(BrokerConfigLayers(BrokerConfig()), {}, None, False)
    }
    LogConfig().with_overrides({k: v for k, v in defaults.items() if v is not None})
    assert defaults["compression.type"] == "producer"
    assert defaults["message.timestamp.type"] == "CreateTime"
    assert defaults["file.delete.delay.ms"] == "60000"
    assert defaults["leader.replication.throttled.replicas"] == ""


def test_throttled_replica_lists_are_checked_as_kafkas_validator_does() -> None:
    for name in (
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
    ):
        for good in ("0:1,1:2", "*", ""):
            assert altered_topic_overrides(BROKER, {}, [op(name, AlterOp.SET, good)]) == {
                name: good
            }
        with pytest.raises(InvalidConfigError, match=f"{name} must be the literal '\\*'"):
            altered_topic_overrides(BROKER, {}, [op(name, AlterOp.SET, "0:1,x")])
    parsed = LogConfig().with_overrides({"leader.replication.throttled.replicas": "0:1,2:1"})
    assert parsed.leader_throttled.throttles(2, 1)
    assert not parsed.follower_throttled


def test_throttled_rates_are_per_broker_dynamic_longs_at_least_0() -> None:
    rate = "leader.replication.throttled.rate"
    assert altered_broker_configs(LAYERS, "1", {}, [op(rate, AlterOp.SET, "1048576")]) == {
        rate: "1048576"
    }
    layers = BrokerConfigLayers(BrokerConfig(broker_id=1), {}, {rate: "1048576"})
    assert layers.effective().leader_replication_throttled_rate == 1048576
    for bad, message in (("fast", "invalid value"), ("-1", "Value must be at least 0")):
        with pytest.raises(InvalidRequestError, match=message):
            altered_broker_configs(LAYERS, "1", {}, [op(rate, AlterOp.SET, bad)])
    # Kafka ignores them at the cluster default: refused there, not accepted and ignored.
    with pytest.raises(InvalidRequestError, match="at default cluster level.*" + rate):
        altered_broker_configs(
            LAYERS, DEFAULT_BROKER_ENTITY, {}, [op(rate, AlterOp.SET, "1048576")]
        )
    by_hand = BrokerConfigLayers(BrokerConfig(broker_id=1), {rate: "5"}, {})
    assert by_hand.effective().leader_replication_throttled_rate == LONG_MAX
    # Dynamic only, as in Kafka: server.properties has no such setting.
    with pytest.raises(InvalidConfigError, match=f"{rate} can only be set dynamically"):
        BrokerConfig.from_properties({"broker.id": "1", rate: "5"})
    assert (
        BrokerConfig.from_properties(
            {"broker.id": "1", "replication.quota.window.num": "5"}
        ).replication_quota_window_num
        == 5
    )
    with pytest.raises(InvalidConfigError, match=r"replication\.quota\.window\.size\.seconds"):
        BrokerConfig.from_properties(
            {"broker.id": "1", "replication.quota.window.size.seconds": "0"}
        )


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
            LAYERS, {"min.insync.replicas": "2", "retention.ms": "5"}, None, include_synonyms=True
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
    no_override = {c.name: c for c in describe_topic(LAYERS, {}, None, include_synonyms=False)}
    assert (no_override["retention.ms"].value, no_override["retention.ms"].source) == (
        "3600000",
        ConfigSource.STATIC_BROKER_CONFIG,
    )
    assert no_override["unclean.leader.election.enable"].value == "false"
    assert no_override["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG


def test_every_broker_config_is_documented_and_every_documented_one_exists() -> None:
    described = describe_broker(LAYERS, None, include_synonyms=False)
    properties = {
        BrokerConfig.property_name(f)
        for f in BrokerConfig.__dataclass_fields__
        # Properties as given (ssl.*, zookeeper.ssl.*), keys and passwords among them.
        if f not in ("security_props", "zookeeper_tls_props")
    }
    assert {c.name for c in described} == properties
    for c in described:
        assert c.doc is not None and c.doc.strip(), c.name
    # The table documents each property that is not a topic config's default, and nothing
    # else: a property added to or removed from BrokerConfig must be added to or removed
    # from it.
    synonyms = {d.broker_synonym for d in TOPIC_CONFIGS.values() if d.broker_synonym}
    assert set(BROKER_CONFIG_DOCS) == properties - synonyms
    assert all(doc.strip() for doc in BROKER_CONFIG_DOCS.values())
    docs = {c.name: c.doc for c in described}
    assert docs["log.retention.ms"] == (
        "The default of the topic config that derives from it: " + TOPIC_CONFIGS["retention.ms"].doc
    )
    assert docs["broker.id"] == BROKER_CONFIG_DOCS["broker.id"]
    default = describe_broker_default(
        BrokerConfigLayers(BROKER, cluster_default={"log.cleaner.backoff.ms": "100"}), None, False
    )
    assert [c.doc for c in default] == [BROKER_CONFIG_DOCS["log.cleaner.backoff.ms"]]


def test_named_keys_only_and_unknown_names_left_out() -> None:
    described = describe_topic(LAYERS, {}, ["flush.ms", "nope", "flush.ms"], False)
    assert [c.name for c in described] == ["flush.ms"]
    broker = describe_broker(LAYERS, ["broker.id", "log.retention.ms", "nope"], False)
    assert [(c.name, c.value, c.read_only) for c in broker] == [
        ("broker.id", "1", True),
        ("log.retention.ms", "3600000", False),
    ]


def op(name: str, kind: AlterOp, value: str | None = None) -> AlterableConfig:
    return AlterableConfig(name, int(kind), value)


def test_kafkas_dynamic_broker_configs_that_minikafka_has_are_dynamic() -> None:
    # Kafka 2.8's DynamicLogConfig.ReconfigurableConfigs (the topic configs' broker
    # synonyms but log.message.format.version), LogCleaner's backoff, the fetcher threads.
    assert {
        "log.segment.bytes",
        "log.roll.ms",
        "log.roll.jitter.ms",
        "log.index.size.max.bytes",
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "log.retention.bytes",
        "log.retention.ms",
        "message.max.bytes",
        "log.index.interval.bytes",
        "log.cleaner.delete.retention.ms",
        "log.cleaner.min.compaction.lag.ms",
        "log.cleaner.max.compaction.lag.ms",
        "log.segment.delete.delay.ms",
        "log.cleaner.min.cleanable.ratio",
        "log.cleanup.policy",
        "unclean.leader.election.enable",
        "min.insync.replicas",
        "compression.type",
        "log.preallocate",
        "log.message.timestamp.type",
        "log.message.timestamp.difference.max.ms",
        "log.message.downconversion.enable",
        "log.cleaner.backoff.ms",
        "num.replica.fetchers",
        "leader.replication.throttled.rate",
        "follower.replication.throttled.rate",
    } == DYNAMIC_BROKER_CONFIGS


def test_a_broker_setting_comes_from_its_own_then_the_cluster_default_then_the_file() -> None:
    layers = BrokerConfigLayers(
        BROKER,
        cluster_default={"log.retention.ms": "7000", "message.max.bytes": "5000"},
        per_broker={"log.retention.ms": "9000"},
    )
    cfg = layers.effective()
    assert (cfg.log_retention_ms, cfg.message_max_bytes) == (9000, 5000)
    assert cfg.log_config().retention_ms == 9000
    described = {c.name: c for c in describe_broker(layers, None, include_synonyms=True)}
    retention = described["log.retention.ms"]
    assert (retention.value, retention.source, retention.read_only) == (
        "9000",
        ConfigSource.DYNAMIC_BROKER_CONFIG,
        False,
    )
    assert [(s.value, s.source) for s in retention.synonyms] == [
        ("9000", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("7000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("3600000", ConfigSource.STATIC_BROKER_CONFIG),
        ("604800000", ConfigSource.DEFAULT_CONFIG),
    ]
    mmb = described["message.max.bytes"]
    assert (mmb.value, mmb.source) == ("5000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert described["broker.id"].read_only
    assert described["zookeeper.connect"].source == ConfigSource.DEFAULT_CONFIG
    # A topic without an override shows the broker's dynamic value and its layers.
    topic = {c.name: c for c in describe_topic(layers, {}, ["retention.ms"], True)}
    assert topic["retention.ms"].value == "9000"
    assert topic["retention.ms"].source == ConfigSource.DYNAMIC_BROKER_CONFIG
    assert [s.name for s in topic["retention.ms"].synonyms] == ["log.retention.ms"] * 4
    # The default resource ("") describes the cluster defaults that are set, only.
    default = describe_broker_default(layers, None, include_synonyms=False)
    assert [(c.name, c.value, c.source) for c in default] == [
        ("log.retention.ms", "7000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("message.max.bytes", "5000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
    ]


def test_stored_dynamic_configs_that_do_not_apply_are_left_out() -> None:
    layers = BrokerConfigLayers(
        BROKER,
        cluster_default={"broker.id": "9", "log.retention.ms": "soon"},
        per_broker={"log.segment.bytes": "2000000"},
    )
    cfg = layers.effective()
    assert (cfg.broker_id, cfg.log_retention_ms, cfg.log_segment_bytes) == (1, 3600000, 2000000)


def test_broker_changes_set_delete_and_replace_the_entitys_dynamic_configs() -> None:
    new = altered_broker_configs(
        LAYERS,
        "1",
        {"log.retention.ms": "5000", "log.flush.interval.ms": "10"},
        [op("log.flush.interval.ms", AlterOp.DELETE), op("min.insync.replicas", AlterOp.SET, "2")],
    )
    assert new == {"log.retention.ms": "5000", "min.insync.replicas": "2"}
    appended = altered_broker_configs(
        LAYERS, DEFAULT_BROKER_ENTITY, {}, [op("log.cleanup.policy", AlterOp.APPEND, "compact")]
    )
    assert appended == {"log.cleanup.policy": "delete,compact"}
    assert replaced_broker_configs(LAYERS, "1", [("log.roll.ms", "60000")]) == {
        "log.roll.ms": "60000"
    }
    assert replaced_broker_configs(LAYERS, "1", []) == {}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (op("broker.id", AlterOp.SET, "2"), "Cannot update these configs dynamically: broker.id"),
        (op("listeners", AlterOp.SET, "PLAINTEXT://:1"), "dynamically: listeners"),
        (op("log.message.format.version", AlterOp.SET, "2.8"), "dynamically"),
        (op("no.such.thing", AlterOp.SET, "1"), "Unknown broker configs: no.such.thing"),
        (
            op("replica.alter.log.dirs.io.max.bytes.per.second", AlterOp.SET, "1"),
            "does not move replicas between log directories",
        ),
        (op("log.retention.ms", AlterOp.SET, "soon"), "invalid value for log.retention.ms"),
        (op("num.replica.fetchers", AlterOp.SET, "4"), "num.replica.fetchers must be 1"),
        (op("log.retention.ms", AlterOp.APPEND, "1"), "not a list"),
        (op("log.retention.ms", AlterOp.SET, None), "Null value"),
    ],
)
def test_bad_broker_changes_are_refused_as_kafka_refuses_them(
    change: AlterableConfig, message: str
) -> None:
    with pytest.raises((InvalidRequestError, InvalidConfigError), match=message) as info:
        altered_broker_configs(LAYERS, "1", {}, [change])
    if "list" not in message:
        assert isinstance(info.value, InvalidRequestError)
        assert "ConfigResource(type=BROKER, name='1')" in str(info.value) or "Null" in message


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
        "config_change_0000000005": ("brokers/<default>", now),
        "config_change_0000000006": ("users/alice", now),
    }
    plan = plan_config_changes(notifications, 1, now)
    assert (plan.topics, plan.brokers, plan.last_sequence, plan.purge) == (
        ["t1"],
        ["1", "<default>"],
        6,
        [],
    )
    assert plan_config_changes(notifications, 6, now)[:2] == ([], [])
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
