"""A consumer's fetch with an authorizer: the replica manager answers every partition of a
topic the consumer may not READ with TOPIC_AUTHORIZATION_FAILED, unread, as Kafka's
handleFetchRequest does, for a full fetch's partitions and for every partition of an
incremental fetch's session, listed in the request or not (a READ revoked while a consumer
holds a session takes effect on its next fetch). Refused partitions stay in the session,
and neither end nor hold up a long poll. One replica manager, no sockets."""

from __future__ import annotations

import asyncio

from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode
from minikafka.replication.replica_manager import ReplicaManager
from minikafka.rpc.messages import (
    CONSUMER_REPLICA_ID,
    BrokerNode,
    FetchPartition,
    FetchRequest,
    FetchTopic,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
)

from .test_incremental_delayed_fetch import (
    LONG_POLL_MS,
    T0,
    T1,
    answered,
    append,
    incremental,
    lead,
    open_session,
    rm,
)

__all__ = ["rm"]  # the fixture

U0 = TopicPartition("u", 0)
DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED


def nothing(_topic: str) -> bool:
    return False


def only_u(topic: str) -> bool:
    return topic == "u"


async def lead_u(rm: ReplicaManager) -> None:
    """Topic "u" (one partition) led here too, its HW following the LEO."""
    state = LeaderAndIsrPartitionState("u", 0, 1, 1, 0, [1], 0, [1])
    nodes = [BrokerNode(1, "127.0.0.1", 9091)]
    await rm.become_leader_or_follower(LeaderAndIsrRequest(0, 1, -1, [state], nodes))


def full_fetch(max_wait_ms: int, *tps: TopicPartition) -> FetchRequest:
    by_topic: dict[str, list[FetchPartition]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(FetchPartition(tp.partition, 0, 1 << 20))
    return FetchRequest(
        CONSUMER_REPLICA_ID,
        max_wait_ms,
        1,
        1 << 20,
        [FetchTopic(name, parts) for name, parts in by_topic.items()],
    )


async def test_a_full_fetch_of_an_unreadable_topic_is_refused_at_once(rm: ReplicaManager) -> None:
    await lead(rm, isr=[1])
    await append(rm, T0, b"secret")
    resp = await asyncio.wait_for(
        rm.fetch_messages(full_fetch(LONG_POLL_MS, T0, T1), nothing), timeout=5
    )
    assert answered(resp) == {T0: (DENIED, -1, False), T1: (DENIED, -1, False)}
    [p, _] = resp.topics[0].partitions
    assert (p.log_start_offset, p.log_end_offset, p.records) == (-1, -1, None)


async def test_a_refused_topic_does_not_end_the_long_poll_of_the_others(
    rm: ReplicaManager,
) -> None:
    await lead(rm, isr=[1])
    await lead_u(rm)
    fetch = asyncio.create_task(rm.fetch_messages(full_fetch(LONG_POLL_MS, T0, U0), only_u))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not fetch.done()  # waiting for "u", whatever "t"'s refusal
    await append(rm, U0, b"x")
    resp = await asyncio.wait_for(fetch, timeout=5)
    assert answered(resp) == {T0: (DENIED, -1, False), U0: (ErrorCode.NONE, 1, True)}


async def test_an_incremental_fetch_refuses_every_session_partition_of_an_unreadable_topic(
    rm: ReplicaManager,
) -> None:
    await lead(rm, isr=[1])
    sid = await open_session(rm, CONSUMER_REPLICA_ID)  # allowed then
    await append(rm, T0, b"x")
    # READ revoked: the request lists nothing, the session's partitions are answered all
    # the same, unread, and at once.
    resp = await asyncio.wait_for(
        rm.fetch_messages(incremental(-1, sid, 1, LONG_POLL_MS), nothing), timeout=5
    )
    assert resp.error_code == ErrorCode.NONE and resp.session_id == sid
    assert answered(resp) == {T0: (DENIED, -1, False), T1: (DENIED, -1, False)}
    # Again on the next fetch (an error is always news).
    resp = await rm.fetch_messages(incremental(-1, sid, 2, 0), nothing)
    assert answered(resp) == {T0: (DENIED, -1, False), T1: (DENIED, -1, False)}
    # READ granted again: the partitions are read where the session left them.
    resp = await rm.fetch_messages(incremental(-1, sid, 3, 0), lambda _t: True)
    assert answered(resp) == {T0: (ErrorCode.NONE, 1, True), T1: (ErrorCode.NONE, 0, False)}


async def test_a_session_created_with_a_refused_topic_keeps_it(rm: ReplicaManager) -> None:
    await lead(rm, isr=[1])
    req = full_fetch(0, T0, T1)
    resp = await rm.fetch_messages(
        FetchRequest(
            req.replica_id, 0, 1, req.max_bytes, req.topics, session_id=0, session_epoch=0
        ),
        nothing,
    )
    assert resp.session_id != 0
    assert answered(resp) == {T0: (DENIED, -1, False), T1: (DENIED, -1, False)}
    session = rm.fetch_sessions.get(resp.session_id)
    assert session is not None and set(session.partitions) == {T0, T1}
    await append(rm, T1, b"y")
    resp = await rm.fetch_messages(incremental(-1, resp.session_id, 1, 0))
    assert answered(resp) == {T0: (ErrorCode.NONE, 0, False), T1: (ErrorCode.NONE, 1, True)}
