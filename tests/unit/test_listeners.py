"""Kafka's listener settings: parsing and the rules that tie them together (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.common import Endpoint
from minikafka.config.broker import BrokerConfig
from minikafka.config.listeners import (
    ListenerConfigError,
    parse_endpoints,
    resolve_listeners,
)
from minikafka.protocol.errors import InvalidConfigError
from minikafka.rpc.messages import BrokerNode, UpdateMetadataRequest
from minikafka.server.metadata_cache import MetadataCache


def test_one_plaintext_listener_is_advertised_and_used_between_brokers() -> None:
    ls = resolve_listeners("PLAINTEXT://:9092", None, None, None)
    assert ls.bind == (Endpoint("PLAINTEXT", "", 9092),)
    assert ls.advertised == ls.bind
    assert ls.inter_broker == "PLAINTEXT"


def test_internal_and_external_listeners() -> None:
    ls = resolve_listeners(
        "INTERNAL://0.0.0.0:19092,EXTERNAL://0.0.0.0:9092",
        "INTERNAL://broker1:19092,EXTERNAL://localhost:9092",
        "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "INTERNAL",
    )
    assert [e.listener for e in ls.bind] == ["INTERNAL", "EXTERNAL"]
    assert ls.advertised == (
        Endpoint("INTERNAL", "broker1", 19092),
        Endpoint("EXTERNAL", "localhost", 9092),
    )
    assert ls.inter_broker == "INTERNAL"


def test_every_kafka_security_protocol_is_a_listener_protocol() -> None:
    ls = resolve_listeners(
        "A://:9092,B://:9093,SSL://:9094,SASL_PLAINTEXT://:9095",
        None,
        "A:PLAINTEXT,B:SASL_SSL,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "B",
    )
    assert dict(ls.protocols) == {
        "A": "PLAINTEXT",
        "B": "SASL_SSL",
        "SSL": "SSL",
        "SASL_PLAINTEXT": "SASL_PLAINTEXT",
    }
    assert ls.protocol("B") == "SASL_SSL"


def test_ipv6_and_lower_case_names() -> None:
    (ep,) = parse_endpoints("plaintext://[::1]:9092", "listeners")
    assert ep == Endpoint("PLAINTEXT", "::1", 9092)
    assert str(ep) == "PLAINTEXT://[::1]:9092"


@pytest.mark.parametrize(
    ("listeners", "advertised", "protocol_map", "inter", "message"),
    [
        ("localhost:9092", None, None, None, "expected NAME://host:port"),
        ("PLAINTEXT://:notaport", None, None, None, "expected NAME://host:port"),
        ("PLAINTEXT://:70000", None, None, None, "expected NAME://host:port"),
        ("", None, None, None, "at least one listener"),
        ("PLAINTEXT://:9092,PLAINTEXT://:9093", None, None, None, "different name"),
        ("A://:9092,B://:9092", None, "A:PLAINTEXT,B:PLAINTEXT", "A", "different port"),
        ("INTERNAL://:9092", None, None, "INTERNAL", "no security protocol defined for listener"),
        ("A://:9092", None, "A:KERBEROS", "A", "KERBEROS, which is not one of PLAINTEXT"),
        ("A://:9092", None, "A", "A", "is not NAME:PROTOCOL"),
        ("PLAINTEXT://:9092", "OTHER://h:9092", None, None, "is not one of listeners"),
        ("PLAINTEXT://:9092", "PLAINTEXT://0.0.0.0:9092", None, None, "0.0.0.0"),
        ("A://:9092", None, "A:PLAINTEXT", None, "set inter.broker.listener.name"),
        (
            "A://:9092,B://:9093",
            "A://h:9092",
            "A:PLAINTEXT,B:PLAINTEXT",
            "B",
            "must be a listener name defined in advertised.listeners",
        ),
    ],
)
def test_bad_listener_settings_are_refused_naming_the_problem(
    listeners: str,
    advertised: str | None,
    protocol_map: str | None,
    inter: str | None,
    message: str,
) -> None:
    with pytest.raises(ListenerConfigError, match=message):
        resolve_listeners(listeners, advertised, protocol_map, inter)


def test_broker_config_refuses_bad_listeners_at_load() -> None:
    with pytest.raises(InvalidConfigError, match=r"inter\.broker\.listener\.name"):
        BrokerConfig.from_properties(
            {
                "broker.id": "1",
                "listeners": "INTERNAL://:19092,EXTERNAL://:9092",
                "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            }
        )
    cfg = BrokerConfig.from_properties(
        {
            "broker.id": "1",
            "listeners": "INTERNAL://:19092,EXTERNAL://:9092",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
        }
    )
    assert cfg.resolved_listeners().inter_broker == "INTERNAL"


names = st.sampled_from(["PLAINTEXT", "INTERNAL", "EXTERNAL", "REPLICATION"])


@given(
    st.lists(
        st.tuples(names, st.integers(1, 65535)), min_size=1, max_size=4, unique_by=lambda t: t[0]
    )
)
def test_listeners_round_trip_through_their_string_form(pairs: list[tuple[str, int]]) -> None:
    endpoints = [Endpoint(n, f"host-{i}", p) for i, (n, p) in enumerate(pairs)]
    assert parse_endpoints(",".join(map(str, endpoints)), "listeners") == endpoints


def _cache_with(*brokers: BrokerNode) -> MetadataCache:
    cache = MetadataCache(1)
    cache.update(UpdateMetadataRequest(1, 1, 1, [], list(brokers)))
    return cache


def test_metadata_names_each_broker_by_the_requests_listener() -> None:
    both = [Endpoint("INTERNAL", "broker1", 19092), Endpoint("EXTERNAL", "localhost", 9092)]
    only_internal = [Endpoint("INTERNAL", "broker2", 19093)]
    cache = _cache_with(
        BrokerNode(1, "broker1", 19092, None, both),
        BrokerNode(2, "broker2", 19093, "r2", only_internal),
    )
    assert cache.alive_brokers_on("EXTERNAL") == [BrokerNode(1, "localhost", 9092)]
    # Kafka leaves out a broker that has no endpoint on the listener.
    assert cache.alive_brokers_on("INTERNAL") == [
        BrokerNode(1, "broker1", 19092),
        BrokerNode(2, "broker2", 19093, "r2"),
    ]


def test_a_broker_described_without_endpoints_has_one_listener() -> None:
    cache = _cache_with(BrokerNode(3, "h", 9094))
    assert cache.alive_brokers_on("PLAINTEXT") == [BrokerNode(3, "h", 9094)]
