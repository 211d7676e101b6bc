"""Bad input to the group coordinator, sent raw (as no well-behaved client would) to real
brokers: a JoinGroup storm, a member that never heartbeats, commits from the wrong
generation, from an unknown member, during a rebalance or for a topic that does not exist,
and a member metadata blob too big to store. Each gets Kafka's error code; the
coordinator stays up and a group living beside them is not disturbed."""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.offset_commit.v8.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment

from minikafka.cluster import LocalCluster
from minikafka.protocol.errors import ErrorCode
from tests.cluster.conftest import ClusterFactory, wait_until
from tests.kafka_protocol.test_confluent_kafka import create_topic
from tests.kafka_protocol.wire import KafkaWire

pytestmark = pytest.mark.timeout(240)

E = ErrorCode
SESSION_MS = 6000


def ms(n: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=n)


def coordinator_wire(cluster: LocalCluster, group: str) -> KafkaWire:
    """A connection to `group`'s coordinator, ready for the group: FindCoordinator asked
    until it answers, and again while that broker does not serve the group yet. (A broker
    may learn the new leader of the group's offsets partition from UpdateMetadata before
    the leader has its LeaderAndIsr and loads the partition: NOT_COORDINATOR or
    COORDINATOR_LOAD_IN_PROGRESS meanwhile, as in Kafka; clients ask again.)"""
    found: list[Any] = []

    def find() -> bool:
        with KafkaWire(cluster.broker_host(1), cluster.broker_ports[1]) as w:
            (c,) = w.call(
                FindCoordinatorRequest(key_type=0, coordinator_keys=(group,))
            ).coordinators
        if c.error_code != 0:
            return False
        with KafkaWire(c.host, c.port) as w:
            (g,) = w.call(
                DescribeGroupsRequest(groups=(group,), include_authorized_operations=False)
            ).groups
        if g.error_code != 0:
            return False
        found.append(c)
        return True

    wait_until(find, 30, f"a coordinator serving {group}")
    c = found[-1]
    return KafkaWire(c.host, c.port)


def join(
    w: KafkaWire,
    group: str,
    member_id: str = "",
    metadata: bytes = b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff",
    session_ms: int = SESSION_MS,
) -> Any:
    return w.call(
        JoinGroupRequest(
            group_id=group,
            session_timeout=ms(session_ms),
            rebalance_timeout=ms(10000),
            member_id=member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocols=(JoinGroupRequestProtocol(name="range", metadata=metadata),),
        )
    )


def join_as_member(w: KafkaWire, group: str, **kwargs: Any) -> Any:
    """JoinGroup twice, as a client does (KIP-394): the member id, then the generation."""
    first = join(w, group, **kwargs)
    assert first.error_code == E.MEMBER_ID_REQUIRED
    second = join(w, group, member_id=first.member_id, **kwargs)
    assert second.error_code == 0, second
    return second


def sync(w: KafkaWire, group: str, joined: Any, assignment: bytes = b"") -> Any:
    return w.call(
        SyncGroupRequest(
            group_id=group,
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=(
                SyncGroupRequestAssignment(member_id=joined.member_id, assignment=assignment),
            ),
        )
    )


def heartbeat(w: KafkaWire, group: str, member_id: str, generation: int) -> int:
    resp = w.call(
        HeartbeatRequest(
            group_id=group, generation_id=generation, member_id=member_id, group_instance_id=None
        )
    )
    return int(resp.error_code)


def commit(
    w: KafkaWire, group: str, member_id: str, generation: int, topic: str, offset: int = 5
) -> int:
    resp = w.call(
        OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=None,
            topics=(
                OffsetCommitRequestTopic(
                    name=topic,
                    partitions=(
                        OffsetCommitRequestPartition(
                            partition_index=0,
                            committed_offset=offset,
                            committed_leader_epoch=-1,
                            committed_metadata="",
                        ),
                    ),
                ),
            ),
        )
    )
    (code,) = [int(p.error_code) for t in resp.topics for p in t.partitions]
    return code


class CalmGroup:
    """A confluent-kafka member of a group beside the bad one: it must stay in its first
    generation (no rebalance forced on it) and keep reading."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.generations: list[int] = []
        self.assigned = threading.Event()
        self._stop = threading.Event()
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "calm",
                "session.timeout.ms": SESSION_MS,
                "heartbeat.interval.ms": 500,
                "auto.offset.reset": "earliest",
            }
        )
        self.rebalances = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        def on_assign(_: Any, partitions: list[Any]) -> None:
            self.rebalances += 1
            self.assigned.set()

        self.consumer.subscribe(["calm-topic"], on_assign=on_assign)
        while not self._stop.is_set():
            self.consumer.poll(0.2)
        self.consumer.close()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(30)


@pytest.fixture
def calm(cluster: LocalCluster) -> Iterator[CalmGroup]:
    create_topic(cluster.bootstrap_servers, "calm-topic", 2, 3)
    group = CalmGroup(cluster.bootstrap_servers, "calm-topic")
    assert group.assigned.wait(60)
    yield group
    group.stop()


def test_a_join_group_storm_is_answered_and_other_groups_are_not_disturbed(
    cluster: LocalCluster, calm: CalmGroup
) -> None:
    rebalances = calm.rebalances
    with coordinator_wire(cluster, "storm") as w:
        # 300 would-be members that never come back with their member id: each is answered
        # MEMBER_ID_REQUIRED and kept pending only for its session timeout.
        ids = {join(w, "storm").member_id for _ in range(300)}
        assert len(ids) == 300
        # A real member still gets in: the join waits for the pending ones (or their
        # session timeout), then completes.
        joined = join_as_member(w, "storm")
        assert joined.leader == joined.member_id
    assert calm.rebalances == rebalances


def test_a_member_that_never_heartbeats_is_removed_after_its_session_timeout(
    cluster: LocalCluster,
) -> None:
    with coordinator_wire(cluster, "silent") as w:
        joined = join_as_member(w, "silent")
        assert sync(w, "silent", joined).error_code == 0
        assert heartbeat(w, "silent", joined.member_id, joined.generation_id) == 0
        last_heartbeat = time.monotonic()

        def members() -> list[str]:
            (g,) = w.call(
                DescribeGroupsRequest(groups=("silent",), include_authorized_operations=False)
            ).groups
            return [m.member_id for m in g.members]

        # No heartbeat from now on (DescribeGroups does not count as one): gone after the
        # session timeout, not before.
        assert members() == [joined.member_id]
        wait_until(lambda: not members(), SESSION_MS / 1000 * 3, "the silent member to go")
        assert time.monotonic() - last_heartbeat >= SESSION_MS / 1000 * 0.9
        assert heartbeat(w, "silent", joined.member_id, joined.generation_id) == (
            E.UNKNOWN_MEMBER_ID
        )


def test_commits_that_do_not_belong_get_kafka_s_error_codes(
    cluster: LocalCluster, calm: CalmGroup
) -> None:
    create_topic(cluster.bootstrap_servers, "owned", 1, 3)
    with coordinator_wire(cluster, "strict") as w:
        joined = join_as_member(w, "strict")
        # Joined, not synced yet: CompletingRebalance.
        assert commit(w, "strict", joined.member_id, joined.generation_id, "owned") == (
            E.REBALANCE_IN_PROGRESS
        )
        assert sync(w, "strict", joined).error_code == 0
        gen = joined.generation_id
        assert commit(w, "strict", joined.member_id, gen + 1, "owned") == E.ILLEGAL_GENERATION
        assert commit(w, "strict", "someone-else", gen, "owned") == E.UNKNOWN_MEMBER_ID
        assert commit(w, "strict", joined.member_id, gen, "no-such-topic") == (
            E.UNKNOWN_TOPIC_OR_PARTITION
        )
        # A group that does not exist, with a generation: that generation is gone.
        assert commit(w, "strict", "m", 3, "owned") in (E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID)
        # The member's own commit goes through.
        assert commit(w, "strict", joined.member_id, gen, "owned", offset=7) == 0
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "strict"})
    try:
        from confluent_kafka import TopicPartition

        (tp,) = c.committed([TopicPartition("owned", 0)], timeout=30)
        assert tp.offset == 7
    finally:
        c.close()


def test_member_metadata_too_big_to_store_fails_the_sync_not_the_broker(
    make_cluster: ClusterFactory,
) -> None:
    """A member metadata blob larger than message.max.bytes: JoinGroup keeps it in memory,
    but the leader's SyncGroup cannot store the group (Kafka answers UNKNOWN_SERVER_ERROR
    for a record too large); the broker serves on and other groups work."""
    cluster = make_cluster(3)
    blob = b"\x00\x00" + b"x" * (2 * 1024 * 1024)
    with coordinator_wire(cluster, "huge") as w:
        joined = join_as_member(w, "huge", metadata=blob)
        assert len(joined.members[0].metadata) == len(blob)
        assert sync(w, "huge", joined).error_code == E.UNKNOWN_SERVER_ERROR
    with coordinator_wire(cluster, "small") as w:
        joined = join_as_member(w, "small")
        assert sync(w, "small", joined).error_code == 0
    assert all(cluster.is_alive(b) for b in cluster.broker_ids)


def test_clients_cannot_write_to_the_offsets_topic(cluster: LocalCluster, calm: CalmGroup) -> None:
    """Only the coordinator appends to __consumer_offsets: a client's records there would be
    loaded as groups. Kafka answers INVALID_TOPIC_EXCEPTION, and so does minikafka."""
    from minikafka.rules.consumer_offsets import OFFSETS_TOPIC
    from minikafka.storage.record_batch import build_batch
    from tests.kafka_protocol.test_kafka_listener import produce, produce_error

    with KafkaWire(cluster.broker_host(1), cluster.broker_ports[1]) as w:
        code, _ = produce_error(w, produce(OFFSETS_TOPIC, build_batch([b"junk"], keys=[b"k"])))
    assert code == E.INVALID_TOPIC_EXCEPTION
