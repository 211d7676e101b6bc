"""The broker's metadata cache answers Metadata from partitions it builds once per change:
whatever UpdateMetadata requests came in, the answer equals one built from scratch, and
requests between two changes of a topic share one answer. The Metadata handler keeps each
topic's encoded partitions until the topic changes, and forgets deleted topics without
scanning its answers for every request."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.common import NO_LEADER
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.kafka.metadata_response import PartitionLike
from minikafka.rpc.messages import (
    BrokerNode,
    MetadataPartition,
    MetadataResponse,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
from minikafka.server.authorization import RequestAuthorizer
from minikafka.server.broker_services import BrokerServices
from minikafka.server.kafka_api import metadata as metadata_handler
from minikafka.server.kafka_api.metadata import MetadataApis
from minikafka.server.kafka_api.models.metadata import MetadataRequest, MetadataRequestTopic
from minikafka.server.kafka_api.registry import RequestContext
from minikafka.server.metadata_cache import MetadataCache

TOPICS = ("a", "b", "c")
BROKERS = (1, 2, 3)


def state(topic: str, partition: int, leader: int, epoch: int) -> UpdateMetadataPartitionState:
    isr = [b for b in BROKERS if b == leader] or [1]
    return UpdateMetadataPartitionState(
        topic, partition, 1, leader, epoch, isr, epoch, [1, 2, 3], []
    )


def update(
    states: list[UpdateMetadataPartitionState], live: list[int], deleted: list[str]
) -> UpdateMetadataRequest:
    nodes = [BrokerNode(b, "127.0.0.1", 9000 + b) for b in live]
    return UpdateMetadataRequest(1, 1, 1, states, nodes, deleted)


def from_scratch(
    states: dict[str, dict[int, UpdateMetadataPartitionState]], live: set[int]
) -> dict[str, list[MetadataPartition]]:
    out = {}
    for topic, parts in states.items():
        answer = []
        for p, s in sorted(parts.items()):
            alive = s.leader != NO_LEADER and s.leader in live
            answer.append(
                MetadataPartition(
                    int(ErrorCode.NONE if alive else ErrorCode.LEADER_NOT_AVAILABLE),
                    p,
                    s.leader if alive else NO_LEADER,
                    s.leader_epoch,
                    list(s.replicas),
                    list(s.isr),
                    list(s.offline_replicas),
                )
            )
        out[topic] = answer
    return out


updates = st.lists(
    st.tuples(
        st.lists(
            st.tuples(
                st.sampled_from(TOPICS),
                st.integers(0, 3),
                st.sampled_from((NO_LEADER, *BROKERS)),
                st.integers(0, 5),
            ),
            max_size=6,
        ),
        st.sets(st.sampled_from(BROKERS)),
        st.lists(st.sampled_from(TOPICS), max_size=1),
        st.booleans(),  # ask for the metadata after this update
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=int(os.environ.get("MINIKAFKA_HYPOTHESIS_EXAMPLES", "200")), deadline=None)
@given(updates)
def test_answers_equal_answers_built_from_scratch(steps) -> None:
    cache = MetadataCache(1)
    model: dict[str, dict[int, UpdateMetadataPartitionState]] = {}
    live: set[int] = set()
    for changes, brokers, deleted, ask in steps:
        states = [state(t, p, leader, epoch) for t, p, leader, epoch in changes]
        cache.update(update(states, sorted(brokers), deleted))
        live = set(brokers)
        for topic in deleted:
            model.pop(topic, None)
        for s in states:
            model.setdefault(s.topic, {})[s.partition] = s
        if ask:
            got = {t.name: t.partitions for t in cache.get_topic_metadata(None)}
            assert got == from_scratch(model, live)


def test_requests_between_two_changes_of_a_topic_share_its_answer() -> None:
    cache = MetadataCache(1)
    cache.update(update([state("a", 0, 1, 0), state("b", 0, 2, 0)], [1, 2, 3], []))
    first = {t.name: t.partitions for t in cache.get_topic_metadata(None)}
    again = {t.name: t.partitions for t in cache.get_topic_metadata(["a", "b"])}
    assert all(again[n] is first[n] for n in "ab")
    # A change of topic b: a's answer stands, b's is built again.
    cache.update(update([state("b", 0, 3, 1)], [1, 2, 3], []))
    after = {t.name: t.partitions for t in cache.get_topic_metadata(None)}
    assert after["a"] is first["a"] and after["b"] is not first["b"]
    assert after["b"][0].leader == 3
    # Broker 3 gone: every answer is built again (b's leader is no longer alive).
    cache.update(update([], [1, 2], []))
    gone = {t.name: t.partitions for t in cache.get_topic_metadata(None)}
    assert gone["a"] is not after["a"]
    assert gone["b"][0].error_code == ErrorCode.LEADER_NOT_AVAILABLE


class CountingCache(MetadataCache):
    def __init__(self) -> None:
        super().__init__(1)
        self.lookups = 0

    def contains_topic(self, topic: str) -> bool:
        self.lookups += 1
        return super().contains_topic(topic)


class CacheServices:
    """What MetadataApis uses of BrokerServices, over a real metadata cache."""

    def __init__(self, cache: MetadataCache) -> None:
        self.cache = cache
        self.authorizer = RequestAuthorizer(None)
        self.cluster_id = "mk-cluster-id-22-chars"

    async def metadata(
        self, topics: list[str] | None, allow_auto_topic_creation: bool, listener: str
    ) -> MetadataResponse:
        found = self.cache.get_topic_metadata(topics)
        return MetadataResponse(self.cache.alive_brokers_on(listener), 1, found)


def ask(apis: MetadataApis, topics: list[str] | None) -> set[str]:
    req = MetadataRequest(
        topics=None if topics is None else tuple(MetadataRequestTopic(name=t) for t in topics),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    ctx = RequestContext(12, 1, "c", "/127.0.0.1", "PLAINTEXT")
    resp = asyncio.run(apis.answer(req, ctx))
    return {t.name for t in resp.topics if t.name is not None}


def test_answers_of_deleted_topics_are_pruned_without_scanning_for_each_small_request() -> None:
    cache = CountingCache()
    names = [f"t{i}" for i in range(2_500)]
    cache.update(update([state(n, 0, 1, 0) for n in names], [1, 2, 3], []))
    apis = MetadataApis(cast(BrokerServices, CacheServices(cache)))
    assert len(ask(apis, None)) == 2_500
    # Requests for a few topics while all 2,500 answers are kept, live: no scan.
    for i in range(20):
        assert ask(apis, [names[i]]) == {names[i]}
    assert cache.lookups == 0
    # Most topics deleted: the next request drops their answers, once.
    cache.update(update([], [1, 2, 3], names[:2_000]))
    assert ask(apis, [names[-1]]) == {names[-1]}
    assert cache.lookups == 2_500
    assert ask(apis, [names[-2]]) == {names[-2]}
    assert cache.lookups == 2_500
    # The kept answers are the live topics' own.
    assert set(apis._answered) == set(names[2_000:])


def test_a_topic_s_partitions_are_encoded_once_per_format_until_it_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    encoded: list[tuple[int, int]] = []
    real = metadata_handler.encode_partitions

    def counting(version: int, partitions: Sequence[PartitionLike]) -> bytes:
        encoded.append((version, len(partitions)))
        return real(version, partitions)

    monkeypatch.setattr(metadata_handler, "encode_partitions", counting)
    cache = MetadataCache(1)
    cache.update(
        update([state("a", p, 1, 0) for p in range(3)] + [state("b", 0, 2, 0)], [1, 2], [])
    )
    apis = MetadataApis(cast(BrokerServices, CacheServices(cache)))

    def frame(version: int) -> bytes:
        req = MetadataRequest(topics=None, allow_auto_topic_creation=False)
        ctx = RequestContext(version, 1, "c", "/127.0.0.1", "PLAINTEXT")
        return b"".join(bytes(c) for c in asyncio.run(apis.metadata(req, ctx)).chunks)

    first = frame(12)
    assert sorted(encoded) == [(12, 1), (12, 3)]
    # v9-13 share the flexible format; v1 is another.
    assert frame(9)[4:] != first[4:] and frame(12) == first and len(encoded) == 2
    frame(1)
    frame(4)
    assert sorted(encoded[2:]) == [(1, 1), (1, 3)]
    # b changes: only b is encoded again, and the answer shows its new leader.
    cache.update(update([state("b", 0, 1, 1)], [1, 2], []))
    changed = frame(12)
    assert encoded[4:] == [(12, 1)]
    assert changed != first
    assert apis._answered["b"][1][0].leader_id == 1
