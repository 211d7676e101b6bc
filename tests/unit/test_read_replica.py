"""The preferred read replica (rules/read_replica.py), Kafka's findPreferredReadReplica with
RackAwareReplicaSelector or LeaderSelector: which follower a consumer on a rack is sent to;
and the broker's replica.selector.class, which takes only those two."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikafka.config.broker import BrokerConfig
from minikafka.protocol.errors import InvalidConfigError
from minikafka.rules.read_replica import (
    LEADER_SELECTOR,
    RACK_AWARE_SELECTOR,
    RemoteReplica,
    preferred_read_replica,
)

RACKS: dict[int, str | None] = {1: "a", 2: "b", 3: "c", 4: "c"}


def follower(broker: int, end: int, start: int = 0, behind_ms: int = 0) -> RemoteReplica:
    return RemoteReplica(broker, start, end, behind_ms)


def choose(
    client_rack: str,
    offset: int,
    followers: list[RemoteReplica],
    selector: str | None = RACK_AWARE_SELECTOR,
    racks: dict[int, str | None] = RACKS,
) -> int | None:
    return preferred_read_replica(selector, client_rack, offset, 1, followers, racks)


def test_a_consumer_is_sent_to_the_follower_on_its_rack() -> None:
    assert choose("b", 5, [follower(2, 10), follower(3, 10)]) == 2


def test_the_leader_keeps_consumers_without_a_rack_on_its_rack_or_with_no_follower_there() -> None:
    followers = [follower(2, 10), follower(3, 10)]
    assert choose("", 5, followers) is None
    assert choose("a", 5, followers) is None  # the leader's rack
    assert choose("z", 5, followers) is None  # no replica there


def test_only_rack_aware_selection_sends_consumers_away() -> None:
    followers = [follower(2, 10)]
    assert choose("b", 5, followers, selector=None) is None
    assert choose("b", 5, followers, selector=LEADER_SELECTOR) is None


def test_a_follower_without_the_fetch_offset_is_no_candidate() -> None:
    assert choose("b", 11, [follower(2, 10)]) is None  # not there yet
    assert choose("b", 3, [follower(2, 10, start=4)]) is None  # deleted there
    assert choose("b", 10, [follower(2, 10)]) == 2  # its log end: the next record's offset
    assert choose("b", 0, [follower(2, -1, start=-1)]) is None  # never fetched: unknown


def test_a_follower_the_consumer_cannot_reach_is_no_candidate() -> None:
    assert choose("b", 5, [follower(2, 10)], racks={1: "a"}) is None


def test_the_most_caught_up_follower_on_the_rack_wins_as_kafkas_comparator() -> None:
    assert choose("c", 5, [follower(3, 10), follower(4, 12)]) == 4  # the larger log end
    assert choose("c", 5, [follower(3, 10, behind_ms=0), follower(4, 10, behind_ms=50)]) == 3
    assert choose("c", 5, [follower(3, 10), follower(4, 10)]) == 4  # then the larger id


@given(
    client_rack=st.sampled_from(["", "a", "b", "c", "z"]),
    offset=st.integers(0, 20),
    ends=st.lists(st.integers(-1, 20), min_size=3, max_size=3),
)
def test_the_choice_is_on_the_consumers_rack_and_has_the_offset(
    client_rack: str, offset: int, ends: list[int]
) -> None:
    followers = [follower(b, e) for b, e in zip((2, 3, 4), ends, strict=True)]
    chosen = choose(client_rack, offset, followers)
    if chosen is not None:
        f = next(f for f in followers if f.broker_id == chosen)
        assert RACKS[chosen] == client_rack != RACKS[1]
        assert 0 <= offset <= f.log_end_offset


# --- replica.selector.class ------------------------------------------------------------------


@pytest.mark.parametrize("selector", ["", LEADER_SELECTOR, RACK_AWARE_SELECTOR])
def test_kafkas_replica_selectors_are_accepted(selector: str) -> None:
    props = {"broker.id": "1", "log.dirs": "/tmp/d", "replica.selector.class": selector}
    assert (BrokerConfig.from_properties(props).replica_selector_class or "") == selector


def test_any_other_replica_selector_is_refused_naming_the_setting() -> None:
    props = {"broker.id": "1", "log.dirs": "/tmp/d", "replica.selector.class": "com.acme.Near"}
    with pytest.raises(InvalidConfigError, match=r"replica.selector.class 'com.acme.Near'"):
        BrokerConfig.from_properties(props)
