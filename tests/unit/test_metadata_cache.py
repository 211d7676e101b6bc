"""The broker's metadata cache answers Metadata from partitions it builds once per change:
whatever UpdateMetadata requests came in, the answer equals one built from scratch, and
requests between two changes of a topic share one answer."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.common import NO_LEADER
from minikafka.protocol.errors import ErrorCode
from minikafka.rpc.messages import (
    BrokerNode,
    MetadataPartition,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
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
