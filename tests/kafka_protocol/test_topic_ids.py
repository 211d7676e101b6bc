"""Topic ids (KIP-516) on real brokers: every topic has one in `/brokers/topics/<t>`, every
broker's Metadata shows it, and the requests that name topics by id (Metadata v12+,
Produce v13, Fetch v13+, DeleteTopics v6) find the topic, or answer UNKNOWN_TOPIC_ID for an
id no topic has, such as the id of a topic deleted and created again under its name."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.fetch.v16.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.produce.v13.request import PartitionProduceData, ProduceRequest, TopicProduceData

from minikafka.cluster import LocalCluster
from minikafka.common import kafka_uuid_text, parse_kafka_uuid
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.record_batch import build_batch
from minikafka.zk import codecs, paths
from tests.cluster.conftest import wait_until
from tests.kafka_protocol.wire import KafkaWire

pytestmark = pytest.mark.timeout(180)

ZERO = uuid.UUID(int=0)


def wire(cluster: LocalCluster, broker_id: int) -> KafkaWire:
    return KafkaWire(cluster.broker_host(broker_id), cluster.broker_ports[broker_id])


def ms(n: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=n)


def metadata(w: KafkaWire, *topics: str | uuid.UUID) -> dict[str | uuid.UUID, tuple[int, Any]]:
    """Each requested name or id -> (error code, response topic)."""
    asked = tuple(
        MetadataRequestTopic(name=t, topic_id=ZERO)
        if isinstance(t, str)
        else MetadataRequestTopic(name=None, topic_id=t)
        for t in topics
    )
    resp = w.call(
        MetadataRequest(
            topics=asked, allow_auto_topic_creation=False, include_topic_authorized_operations=False
        )
    )
    out: dict[str | uuid.UUID, tuple[int, Any]] = {}
    for t in resp.topics:
        out[t.name if t.name is not None else t.topic_id] = (int(t.error_code), t)
        if t.topic_id != ZERO:
            out[t.topic_id] = (int(t.error_code), t)
    return out


def create(w: KafkaWire, name: str) -> uuid.UUID:
    created: list[Any] = []

    def try_create() -> bool:
        resp = try_create_topic(w, name)
        created.append(resp)
        # A topic being deleted exists until the controller has removed it.
        return int(resp.topics[0].error_code) != ErrorCode.TOPIC_ALREADY_EXISTS

    wait_until(try_create, 30, f"topic {name} to be created")
    resp = created[-1]
    assert int(resp.topics[0].error_code) == 0
    return resp.topics[0].topic_id


def try_create_topic(w: KafkaWire, name: str) -> Any:
    return w.call(
        CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=name, num_partitions=1, replication_factor=3, assignments=(), configs=()
                ),
            ),
            timeout=ms(30000),
            validate_only=False,
        )
    )


def produce_by_id(w: KafkaWire, topic_id: uuid.UUID, records: bytes) -> tuple[int, int]:
    resp = w.call(
        ProduceRequest(
            transactional_id=None,
            acks=-1,
            timeout=ms(10000),
            topic_data=(
                TopicProduceData(
                    topic_id=topic_id,
                    partition_data=(PartitionProduceData(index=0, records=records),),
                ),
            ),
        )
    )
    assert resp.responses[0].topic_id == topic_id
    p = resp.responses[0].partition_responses[0]
    return int(p.error_code), p.base_offset


def fetch_by_id(w: KafkaWire, topic_id: uuid.UUID) -> tuple[int, bytes | None]:
    resp = w.call(
        FetchRequest(
            max_wait=ms(0),
            min_bytes=0,
            max_bytes=1 << 20,
            isolation_level=1,
            session_id=0,
            session_epoch=-1,
            topics=(
                FetchTopic(
                    topic_id=topic_id,
                    partitions=(
                        FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),
                    ),
                ),
            ),
            forgotten_topics_data=(),
            rack_id="",
        )
    )
    assert resp.responses[0].topic_id == topic_id
    p = resp.responses[0].partitions[0]
    return int(p.error_code), p.records


def leader_of(cluster: LocalCluster, topic: str) -> int:
    with wire(cluster, 1) as w:
        _, t = metadata(w, topic)[topic]
        return int(t.partitions[0].leader_id) if t.partitions else -1


def test_topics_are_found_by_id_and_an_unknown_id_is_unknown_topic_id(
    cluster: LocalCluster,
) -> None:
    with wire(cluster, 1) as w:
        topic_id = create(w, "ids")
    assert topic_id != ZERO
    # The id is the one in ZooKeeper, and every broker shows the same.
    znode = cluster.zk_client().get_assignment_and_version("ids")
    assert znode is not None and znode.topic_id == kafka_uuid_text(topic_id)
    for broker_id in (1, 2, 3):
        with wire(cluster, broker_id) as w:
            wait_until(
                lambda w=w: metadata(w, "ids")["ids"][1].topic_id == topic_id,  # type: ignore[misc]
                30,
                f"broker {broker_id}'s metadata to show the topic id",
            )
            error, by_id = metadata(w, topic_id)[topic_id]
            assert (error, by_id.name) == (0, "ids")
    wait_until(lambda: leader_of(cluster, "ids") > 0, 30, "a leader for ids-0")
    leader = leader_of(cluster, "ids")
    batch = build_batch([b"by-id-1", b"by-id-2"])
    with wire(cluster, leader) as w:
        assert produce_by_id(w, topic_id, batch) == (0, 0)
        error, records = fetch_by_id(w, topic_id)
        assert error == 0 and records is not None
        # Stored as sent, but for the partition leader epoch the leader stamps (bytes 12-15).
        assert (records[:12], records[16:]) == (batch[:12], batch[16:])

        stranger = uuid.uuid4()
        assert metadata(w, stranger)[stranger][0] == ErrorCode.UNKNOWN_TOPIC_ID
        assert metadata(w, stranger)[stranger][1].name is None
        assert produce_by_id(w, stranger, batch)[0] == ErrorCode.UNKNOWN_TOPIC_ID
        assert fetch_by_id(w, stranger)[0] == ErrorCode.UNKNOWN_TOPIC_ID

        # Deleted by id, created again under its name: a new id, and the old one is unknown.
        deleted = w.call(
            DeleteTopicsRequest(
                topics=(DeleteTopicState(name=None, topic_id=topic_id),), timeout=ms(30000)
            )
        )
        assert [(r.name, int(r.error_code)) for r in deleted.responses] == [("ids", 0)]
        again = create(w, "ids")
    assert again not in (ZERO, topic_id)
    wait_until(lambda: leader_of(cluster, "ids") > 0, 30, "a leader for the new ids-0")
    with wire(cluster, leader_of(cluster, "ids")) as w:
        wait_until(lambda: metadata(w, "ids")["ids"][1].topic_id == again, 30, "the new topic id")
        assert fetch_by_id(w, topic_id)[0] == ErrorCode.UNKNOWN_TOPIC_ID
        assert produce_by_id(w, topic_id, batch)[0] == ErrorCode.UNKNOWN_TOPIC_ID
        assert fetch_by_id(w, again)[0] == 0


def test_the_controller_gives_a_topic_written_without_an_id_its_id(
    cluster: LocalCluster,
) -> None:
    """A topic written by a tool that knows no topic ids (a version 2 znode) gets one from
    the controller, written back to ZooKeeper; it survives a controller failover."""
    zk = cluster.zk_client()
    zk.set_topic_config("legacy", {})
    zk._kazoo().create(paths.topic("legacy"), codecs.encode_topic_assignment({0: [1, 2, 3]}))

    def written_id() -> str | None:
        znode = zk.get_assignment_and_version("legacy")
        return None if znode is None else znode.topic_id

    wait_until(lambda: written_id() is not None, 30, "the controller to give legacy an id")
    topic_id = parse_kafka_uuid(written_id() or "")
    with wire(cluster, 2) as w:
        wait_until(
            lambda: metadata(w, "legacy")["legacy"][1].topic_id == topic_id,
            30,
            "the metadata to show legacy's id",
        )
    # The controller that gave it is killed; the next loads the ids at failover and sends
    # them to the restarted broker, which starts with an empty metadata cache.
    controller, _ = cluster.wait_for_controller()
    cluster.kill(controller)
    cluster.wait_for_controller(exclude=[controller])
    cluster.restart(controller)
    with wire(cluster, controller) as w:
        wait_until(
            lambda: metadata(w, "legacy")["legacy"][0] == 0,
            30,
            "the restarted broker's metadata for legacy",
        )
        assert metadata(w, "legacy")["legacy"][1].topic_id == topic_id
    assert written_id() == kafka_uuid_text(topic_id)
