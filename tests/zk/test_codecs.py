"""Kafka's znode JSON: exact shapes (Kafka's field names), round trips, malformed input."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.common import (
    Endpoint,
    LeaderAndIsr,
    TopicPartition,
    kafka_uuid_text,
    new_kafka_uuid,
    parse_kafka_uuid,
)
from minikafka.zk import codecs, paths
from minikafka.zk.codecs import BrokerInfo


def parsed(data: bytes) -> object:
    return json.loads(data)


# --- exact shapes -------------------------------------------------------------------------


def test_broker_info_is_kafkas_v4_json() -> None:
    data = codecs.encode_broker_info(BrokerInfo(1, "10.0.0.1", 9092), timestamp_ms=1234)
    assert parsed(data) == {
        "version": 4,
        "host": "10.0.0.1",
        "port": 9092,
        "endpoints": ["PLAINTEXT://10.0.0.1:9092"],
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "jmx_port": -1,
        "timestamp": "1234",
    }
    assert b" " not in data  # compact, as Kafka's Json.encodeAsBytes


def test_broker_info_with_rack() -> None:
    data = codecs.encode_broker_info(BrokerInfo(2, "h", 1, rack="rack-a"), timestamp_ms=1)
    obj = parsed(data)
    assert isinstance(obj, dict) and obj["rack"] == "rack-a"
    assert codecs.decode_broker_info(2, data, epoch=77) == BrokerInfo(2, "h", 1, "rack-a", 77)


def test_broker_info_timestamp_defaults_to_now_as_string() -> None:
    obj = parsed(codecs.encode_broker_info(BrokerInfo(1, "h", 1)))
    assert isinstance(obj, dict) and obj["timestamp"].isdigit()


def test_broker_info_decodes_kafkas_own_registration() -> None:
    # As written by a Kafka 2.x broker with only a SASL listener: host/port are null.
    kafka = (
        b'{"features":{},"listener_security_protocol_map":{"SASL_PLAINTEXT":"SASL_PLAINTEXT"},'
        b'"endpoints":["SASL_PLAINTEXT://[::1]:9093"],"jmx_port":9999,"port":-1,"host":null,'
        b'"version":5,"timestamp":"1700000000000"}'
    )
    sasl = Endpoint("SASL_PLAINTEXT", "::1", 9093)
    assert codecs.decode_broker_info(3, kafka) == BrokerInfo(
        3, "::1", 9093, endpoints=(sasl,), protocols=(("SASL_PLAINTEXT", "SASL_PLAINTEXT"),)
    )


def test_broker_info_registers_each_listeners_security_protocol() -> None:
    internal = Endpoint("INTERNAL", "broker1", 19093)
    external = Endpoint("EXTERNAL", "localhost", 9093)
    info = dataclasses.replace(
        BrokerInfo.from_endpoints(1, [internal, external]),
        protocols=(("EXTERNAL", "SASL_SSL"), ("INTERNAL", "SSL")),
    )
    obj = parsed(codecs.encode_broker_info(info, timestamp_ms=5))
    assert isinstance(obj, dict)
    assert obj["listener_security_protocol_map"] == {"INTERNAL": "SSL", "EXTERNAL": "SASL_SSL"}
    assert codecs.decode_broker_info(1, codecs.encode_broker_info(info)).protocol("EXTERNAL") == (
        "SASL_SSL"
    )


def test_broker_info_with_two_listeners_is_kafkas_json() -> None:
    internal = Endpoint("INTERNAL", "broker1", 19092)
    external = Endpoint("EXTERNAL", "localhost", 9092)
    info = BrokerInfo.from_endpoints(1, [internal, external], rack="r1")
    data = codecs.encode_broker_info(info, timestamp_ms=5)
    obj = parsed(data)
    assert isinstance(obj, dict)
    # No listener is named PLAINTEXT: host and port are null, as Kafka writes them.
    assert (obj["host"], obj["port"]) == (None, -1)
    assert obj["endpoints"] == ["INTERNAL://broker1:19092", "EXTERNAL://localhost:9092"]
    assert obj["listener_security_protocol_map"] == {
        "INTERNAL": "PLAINTEXT",
        "EXTERNAL": "PLAINTEXT",
    }
    decoded = codecs.decode_broker_info(1, data, epoch=9)
    assert decoded.endpoint("EXTERNAL") == external
    assert decoded.endpoint("INTERNAL") == internal
    assert decoded.endpoint("PLAINTEXT") is None
    assert decoded.all_endpoints() == (internal, external)
    assert (decoded.rack, decoded.epoch) == ("r1", 9)


def test_broker_info_host_port_are_the_plaintext_listeners() -> None:
    eps = [Endpoint("REPLICATION", "10.0.0.1", 19092), Endpoint("PLAINTEXT", "::1", 9092)]
    data = codecs.encode_broker_info(BrokerInfo.from_endpoints(2, eps), timestamp_ms=5)
    obj = parsed(data)
    assert isinstance(obj, dict)
    assert (obj["host"], obj["port"]) == ("::1", 9092)
    assert obj["endpoints"] == ["REPLICATION://10.0.0.1:19092", "PLAINTEXT://[::1]:9092"]
    decoded = codecs.decode_broker_info(2, data)
    assert (decoded.host, decoded.port) == ("::1", 9092)
    assert decoded.all_endpoints() == tuple(eps)


def test_topic_assignment_is_kafkas_v2_json() -> None:
    data = codecs.encode_topic_assignment({1: [2, 3, 1], 0: (1, 2, 3)})
    assert parsed(data) == {
        "version": 2,
        "partitions": {"0": [1, 2, 3], "1": [2, 3, 1]},
        "adding_replicas": {},
        "removing_replicas": {},
    }
    assert codecs.decode_topic_assignment("t", data) == {0: (1, 2, 3), 1: (2, 3, 1)}


def test_topic_assignment_with_a_topic_id_is_kafkas_v3_json() -> None:
    topic_id = new_kafka_uuid()
    data = codecs.encode_topic_assignment({0: (1, 2)}, topic_id)
    assert parsed(data) == {
        "version": 3,
        "topic_id": topic_id,
        "partitions": {"0": [1, 2]},
        "adding_replicas": {},
        "removing_replicas": {},
    }
    assert codecs.decode_topic_assignment("t", data) == {0: (1, 2)}
    assert codecs.decode_topic_id("t", data) == topic_id
    assert codecs.decode_topic_id("t", codecs.encode_topic_assignment({0: (1,)})) is None
    with pytest.raises(ValueError, match="topic_id"):
        codecs.decode_topic_id("t", b'{"version":3,"topic_id":"short","partitions":{}}')


def test_kafka_uuid_text_round_trips_and_refuses_other_text() -> None:
    for _ in range(200):
        text = new_kafka_uuid()
        assert len(text) == 22 and not text.startswith("-")
        assert kafka_uuid_text(parse_kafka_uuid(text)) == text
    for bad in ("", "A" * 21, "A" * 23, "!" * 22, "AAAAAAAAAAAAAAAAAAAAAB"):
        with pytest.raises(ValueError):
            parse_kafka_uuid(bad)


def test_config_change_notification_is_kafkas_v2_json_and_reads_v1() -> None:
    data = codecs.encode_config_change_notification("topics/t")
    assert parsed(data) == {"version": 2, "entity_path": "topics/t"}
    assert codecs.decode_config_change_notification(data) == "topics/t"
    v1 = b'{"version":1,"entity_type":"topics","entity_name":"t"}'
    assert codecs.decode_config_change_notification(v1) == "topics/t"


def test_topic_assignment_accepts_version_1() -> None:
    assert codecs.decode_topic_assignment("t", b'{"version":1,"partitions":{"0":[1]}}') == {0: (1,)}


def test_partition_state_is_kafkas_json() -> None:
    state = LeaderAndIsr(leader=1, leader_epoch=5, isr=(1, 3), controller_epoch=2, zk_version=9)
    data = codecs.encode_partition_state(state)
    assert parsed(data) == {
        "version": 1,
        "leader": 1,
        "leader_epoch": 5,
        "controller_epoch": 2,
        "isr": [1, 3],
    }
    # zk_version lives in the znode's stat, not in the JSON.
    assert codecs.decode_partition_state(TopicPartition("t", 0), data, zk_version=9) == state
    assert codecs.decode_partition_state("t-0", data).zk_version == -1


def test_partition_state_without_leader() -> None:
    state = LeaderAndIsr(-1, 3, (2,), 1)
    assert codecs.decode_partition_state("t-0", codecs.encode_partition_state(state)) == state


def test_controller_json_and_epoch() -> None:
    data = codecs.encode_controller(3, timestamp_ms=42)
    assert parsed(data) == {"version": 1, "brokerid": 3, "timestamp": "42"}
    assert codecs.decode_controller(data) == 3
    assert codecs.encode_controller_epoch(0) == b"0"
    assert codecs.decode_controller_epoch(b"17") == 17
    assert codecs.decode_controller_epoch("17\n") == 17


def test_isr_change_notification_json() -> None:
    tps = [TopicPartition("t", 0), TopicPartition("other", 3)]
    data = codecs.encode_isr_change_notification(tps)
    assert parsed(data) == {
        "version": 1,
        "partitions": [{"topic": "t", "partition": 0}, {"topic": "other", "partition": 3}],
    }
    assert codecs.decode_isr_change_notification(data) == tps


def test_preferred_replica_election_json() -> None:
    tps = [TopicPartition("t", 1)]
    data = codecs.encode_preferred_replica_election(tps)
    assert parsed(data) == {"version": 1, "partitions": [{"topic": "t", "partition": 1}]}
    assert codecs.decode_preferred_replica_election(data) == tps


def test_topic_config_json() -> None:
    data = codecs.encode_topic_config({"min.insync.replicas": "2", "retention.ms": "1000"})
    assert parsed(data) == {
        "version": 1,
        "config": {"min.insync.replicas": "2", "retention.ms": "1000"},
    }
    assert codecs.decode_topic_config("t", data) == {
        "min.insync.replicas": "2",
        "retention.ms": "1000",
    }
    assert parsed(codecs.encode_topic_config({})) == {"version": 1, "config": {}}


# --- round trips ------------------------------------------------------------------------

broker_ids = st.integers(min_value=0, max_value=2**31 - 1)
ints = st.integers(min_value=-1, max_value=2**31 - 1)
names = st.text(
    st.characters(whitelist_categories=("L", "N"), whitelist_characters="._-"),
    min_size=1,
    max_size=30,
)


@given(broker_ids, names, st.integers(1, 65535), st.none() | names, ints)
def test_broker_info_round_trip(
    bid: int, host: str, port: int, rack: str | None, epoch: int
) -> None:
    info = BrokerInfo(bid, host, port, rack)
    decoded = codecs.decode_broker_info(bid, codecs.encode_broker_info(info), epoch=epoch)
    assert decoded == BrokerInfo(bid, host, port, rack, epoch)


@given(st.dictionaries(st.integers(0, 1000), st.lists(broker_ids, max_size=5).map(tuple)))
def test_topic_assignment_round_trip(assignment: dict[int, tuple[int, ...]]) -> None:
    assert codecs.decode_topic_assignment("t", codecs.encode_topic_assignment(assignment)) == (
        assignment
    )


@given(ints, ints, st.lists(broker_ids, max_size=5).map(tuple), ints, ints)
def test_partition_state_round_trip(
    leader: int, epoch: int, isr: tuple[int, ...], cepoch: int, version: int
) -> None:
    state = LeaderAndIsr(leader, epoch, isr, cepoch, version)
    data = codecs.encode_partition_state(state)
    assert codecs.decode_partition_state("t-0", data, zk_version=version) == state


@given(st.lists(st.builds(TopicPartition, names, st.integers(0, 10_000)), max_size=10))
def test_partition_lists_round_trip(tps: list[TopicPartition]) -> None:
    assert codecs.decode_isr_change_notification(codecs.encode_isr_change_notification(tps)) == tps
    assert (
        codecs.decode_preferred_replica_election(codecs.encode_preferred_replica_election(tps))
        == tps
    )


@given(st.dictionaries(names, st.text(max_size=20)))
def test_topic_config_round_trip(config: dict[str, str]) -> None:
    assert codecs.decode_topic_config("t", codecs.encode_topic_config(config)) == config


@given(st.integers(0, 2**31 - 1))
def test_controller_round_trips(n: int) -> None:
    assert codecs.decode_controller(codecs.encode_controller(n)) == n
    assert codecs.decode_controller_epoch(codecs.encode_controller_epoch(n)) == n


# --- malformed input ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("decode", "data", "message"),
    [
        (lambda d: codecs.decode_partition_state("t-0", d), b"{not json", "not valid JSON"),
        (lambda d: codecs.decode_partition_state("t-0", d), None, "no data"),
        (lambda d: codecs.decode_partition_state("t-0", d), b"[1, 2]", "expected a JSON object"),
        (
            lambda d: codecs.decode_partition_state("t-0", d),
            b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1}',
            "missing field 'isr'",
        ),
        (
            lambda d: codecs.decode_partition_state("t-0", d),
            b'{"version":1,"leader":"1","leader_epoch":0,"controller_epoch":1,"isr":[1]}',
            "field 'leader' must be an integer",
        ),
        (
            lambda d: codecs.decode_partition_state("t-0", d),
            b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[true]}',
            "field 'isr' must be an integer",
        ),
        (
            lambda d: codecs.decode_partition_state("t-0", d),
            b'{"version":7,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1]}',
            "unsupported version 7",
        ),
        (
            lambda d: codecs.decode_topic_assignment("t", d),
            b'{"version":2,"partitions":{"x":[1]}}',
            "partition id 'x'",
        ),
        (
            lambda d: codecs.decode_topic_assignment("t", d),
            b'{"version":2,"partitions":[1]}',
            "'partitions' must be an object",
        ),
        (lambda d: codecs.decode_broker_info(1, d), b'{"version":4}', "missing field 'endpoints'"),
        (
            lambda d: codecs.decode_broker_info(1, d),
            b'{"version":4,"endpoints":["nonsense"]}',
            "malformed endpoint",
        ),
        (lambda d: codecs.decode_controller(d), b'{"version":1}', "missing field 'brokerid'"),
        (lambda d: codecs.decode_controller_epoch(d), b"one", "not a decimal integer"),
        (lambda d: codecs.decode_controller_epoch(d), b"\xff", "not UTF-8"),
        (
            lambda d: codecs.decode_isr_change_notification(d),
            b'{"version":1,"partitions":[{"topic":"t"}]}',
            "missing field 'partition'",
        ),
        (
            lambda d: codecs.decode_isr_change_notification(d),
            b'{"version":1,"partitions":["t-0"]}',
            "partition entry must be an object",
        ),
        (
            lambda d: codecs.decode_topic_config("t", d),
            b'{"version":1,"config":{"min.insync.replicas":2}}',
            "value of 'min.insync.replicas' must be a string",
        ),
    ],
)
def test_malformed_input_names_the_problem(
    decode: Callable[[bytes | None], object], data: bytes | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        decode(data)


def test_error_names_the_znode() -> None:
    with pytest.raises(ValueError, match=r"topic config /config/topics/orders"):
        codecs.decode_topic_config("orders", b"")
    with pytest.raises(ValueError, match=r"partition state of orders-3"):
        codecs.decode_partition_state(TopicPartition("orders", 3), b"{}")


# --- paths ------------------------------------------------------------------------------


def test_paths_are_kafkas() -> None:
    assert paths.broker_ids() == "/brokers/ids"
    assert paths.broker(3) == "/brokers/ids/3"
    assert paths.topics() == "/brokers/topics"
    assert paths.topic("t") == "/brokers/topics/t"
    assert paths.partitions("t") == "/brokers/topics/t/partitions"
    assert paths.partition("t", 2) == "/brokers/topics/t/partitions/2"
    assert paths.partition_state("t", 2) == "/brokers/topics/t/partitions/2/state"
    assert paths.controller() == "/controller"
    assert paths.controller_epoch() == "/controller_epoch"
    assert paths.isr_change_notifications() == "/isr_change_notification"
    assert paths.isr_change_notification_prefix() == "/isr_change_notification/isr_change_"
    assert paths.delete_topics() == "/admin/delete_topics"
    assert paths.delete_topic("t") == "/admin/delete_topics/t"
    assert paths.preferred_replica_election() == "/admin/preferred_replica_election"
    assert paths.topic_configs() == "/config/topics"
    assert paths.topic_config("t") == "/config/topics/t"
    assert set(paths.persistent_paths()) >= {
        "/brokers/ids",
        "/brokers/topics",
        "/config/topics",
        "/admin/delete_topics",
        "/isr_change_notification",
    }


@pytest.mark.parametrize("bad", ["", "a/b", ".", ".."])
def test_paths_reject_names_that_would_address_another_znode(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid topic name"):
        paths.topic(bad)
