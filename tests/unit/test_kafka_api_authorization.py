"""What each Kafka API handler authorizes, as Kafka 2.8's KafkaApis does: the handlers of
test_kafka_api_handlers.py, behind the same fake broker, with an ACL authorizer holding
specific ACLs and a connection of `User:alice` from 127.0.0.1. A denied request gets
Kafka's error and changes nothing; an allowed one is answered as without an authorizer;
filters (Metadata's every topic, ListGroups, OffsetFetch) leave out what may not be seen;
KIP-430's authorized operations follow the ACLs; a super user may do anything."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Iterable
from typing import Any

import pytest

from minikafka.common import TopicPartition
from minikafka.coordinator.group.group_metadata import GroupMetadata
from minikafka.coordinator.group.offsets_topic import OffsetCommitValue
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.kafka.codec import KafkaRequest, request_type
from minikafka.rpc import messages as m
from minikafka.security.acls import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    ResourcePattern,
)
from minikafka.security.authorizer import AUTHORIZER_LOGGER, TRACE, AclAuthorizer
from minikafka.security.operations import (
    NOT_REQUESTED,
    SUPPORTED_OPERATIONS,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    to_32bit_field,
)
from minikafka.security.principal import KafkaPrincipal
from minikafka.server.authorization import RequestAuthorizer
from minikafka.server.kafka_api.handler import KafkaApiHandler
from minikafka.server.scram_credentials import ScramCredentialAdmin
from minikafka.server.session import CloseConnection, ConnectionSession, ListenerSecurity
from tests.unit.test_kafka_api_handlers import (
    SAMPLE_TOPIC,
    SAMPLE_TOPIC_ID,
    FakeApis,
    consumer_request,
)
from tests.unit.test_kafka_codec import parse_response, sample
from tests.unit.test_scram_credentials import MemoryUsers

E = ErrorCode
Op = AclOperation
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED

ALICE = KafkaPrincipal.user("alice")
SESSION = ConnectionSession("EXTERNAL", ListenerSecurity(), "/127.0.0.1", ALICE)

Acl = tuple[ResourcePattern, AccessControlEntry]


def allow(
    rtype: ResourceType,
    name: str,
    op: AclOperation,
    pattern: PatternType = LITERAL,
    principal: str = "User:alice",
) -> Acl:
    return (
        ResourcePattern(rtype, name, pattern),
        AccessControlEntry(principal, WILDCARD_HOST, op, AclPermissionType.ALLOW),
    )


def deny(rtype: ResourceType, name: str, op: AclOperation, pattern: PatternType = LITERAL) -> Acl:
    return (
        ResourcePattern(rtype, name, pattern),
        AccessControlEntry("User:alice", WILDCARD_HOST, op, AclPermissionType.DENY),
    )


def acl_authorizer(acls: Iterable[Acl], **config: Any) -> AclAuthorizer:
    authorizer = AclAuthorizer(**config)
    by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for pattern, entry in acls:
        by_pattern.setdefault(pattern, set()).add(entry)
    for pattern, entries in by_pattern.items():
        authorizer.update(pattern, entries)
    return authorizer


def fake_with(*acls: Acl, fake: FakeApis | None = None, **config: Any) -> FakeApis:
    """The fake broker, its authorizer holding `acls` (AclAuthorizer's `config`)."""
    fake = fake or FakeApis()
    fake.authorizer = RequestAuthorizer(acl_authorizer(acls, **config))
    return fake


def call(body: Any, fake: FakeApis, session: ConnectionSession | None = SESSION) -> Any:
    """The response (None: none sent) to `body` from `session`'s connection."""
    handler = KafkaApiHandler(fake, "EXTERNAL")  # type: ignore[arg-type]
    key, version = body.__api_key__, body.__version__
    request = KafkaRequest(
        api_key=key,
        api_version=version,
        correlation_id=5,
        client_id="c",
        body=body,
        request_header_version=2 if body.__flexible__ else 1,
        response_header_version=(1 if body.__flexible__ and key != 18 else 0),
    )
    chunks = asyncio.run(handler.handle(request, session))
    if chunks is None:
        return None
    frame = b"".join(bytes(c) for c in chunks)  # type: ignore[arg-type]
    return parse_response(frame, key, version)[2]


def request(key: int, version: int, **changes: Any) -> Any:
    """The sample request (every field set) as a client sends it, with `changes`."""
    return dataclasses.replace(consumer_request(sample(request_type(key, version))), **changes)


def each(item: Any, field: str, values: Iterable[Any]) -> tuple[Any, ...]:
    """Copies of a request's sub-entity, one per value of `field`."""
    return tuple(dataclasses.replace(item, **{field: v}) for v in values)


def codes(items: Iterable[Any], name: str = "name") -> dict[Any, list[int]]:
    """Each topic's partition error codes."""
    return {getattr(t, name): [int(p.error_code) for p in t.partitions] for t in items}


def produce_codes(response: Any) -> dict[str, list[int]]:
    return {t.name: [int(p.error_code) for p in t.partition_responses] for t in response.responses}


def ops(*operations: AclOperation) -> int:
    return to_32bit_field(operations)


# --- Produce -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", [3, 8, 9])
def test_produce_needs_write_on_each_topic(version: int) -> None:
    fake = fake_with(allow(TOPIC, "a", Op.WRITE))
    body = request(0, version)
    body = dataclasses.replace(body, topic_data=each(body.topic_data[0], "name", ["a", "b"]))
    response = call(body, fake)
    answers = {t.name: t.partition_responses[0] for t in response.responses}
    assert (int(answers["a"].error_code), answers["a"].base_offset) == (0, 41)
    assert int(answers["b"].error_code) == E.TOPIC_AUTHORIZATION_FAILED
    assert answers["b"].base_offset == -1
    [(_acks, _timeout, entries)] = fake.seen
    assert {tp.topic for tp in entries} == {"a"}


def test_a_produce_to_no_writable_topic_appends_nothing() -> None:
    fake = fake_with(allow(TOPIC, "other", Op.WRITE))
    response = call(request(0, 8), fake)
    assert produce_codes(response) == {SAMPLE_TOPIC: [E.TOPIC_AUTHORIZATION_FAILED]}
    assert fake.seen == []
    # acks=0: no answer but a closed connection (Kafka's), and still nothing appended.
    with pytest.raises(CloseConnection, match="orders-é-7: TOPIC_AUTHORIZATION_FAILED"):
        call(request(0, 8, acks=0), fake)
    assert fake.seen == []


def test_produce_by_topic_id_is_authorized_by_the_topics_name() -> None:
    body = request(0, 13)
    topic = dataclasses.replace(body.topic_data[0], topic_id=SAMPLE_TOPIC_ID)
    body = dataclasses.replace(body, topic_data=(topic,))
    denied = call(body, fake_with(allow(TOPIC, "t", Op.WRITE)))
    [p] = denied.responses[0].partition_responses
    assert int(p.error_code) == E.TOPIC_AUTHORIZATION_FAILED
    allowed = call(body, fake_with(allow(TOPIC, SAMPLE_TOPIC, Op.WRITE)))
    [p] = allowed.responses[0].partition_responses
    assert (int(p.error_code), p.base_offset) == (0, 41)


def test_an_idempotent_producer_needs_only_write_on_the_topic() -> None:
    """Kafka 2.8 (KIP-679) checks IDEMPOTENT_WRITE at InitProducerId, no more on Produce:
    WRITE on the topic is enough, IDEMPOTENT_WRITE without it is not."""
    with_write = call(request(0, 8), fake_with(allow(TOPIC, SAMPLE_TOPIC, Op.WRITE)))
    assert produce_codes(with_write) == {SAMPLE_TOPIC: [0]}
    idempotent_only = call(
        request(0, 8), fake_with(allow(CLUSTER, CLUSTER_NAME, Op.IDEMPOTENT_WRITE))
    )
    assert produce_codes(idempotent_only) == {SAMPLE_TOPIC: [E.TOPIC_AUTHORIZATION_FAILED]}


# --- Fetch -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [4, 11, 12])
@pytest.mark.parametrize("replica_id", [-1, -2])
def test_fetch_needs_read_on_each_topic(version: int, replica_id: int) -> None:
    fake = fake_with(allow(TOPIC, "a", Op.READ))
    body = request(1, version, replica_id=replica_id)
    body = dataclasses.replace(body, topics=each(body.topics[0], "topic", ["a", "b"]))
    response = call(body, fake)
    parts = {t.topic: t.partitions[0] for t in response.responses}
    assert (int(parts["a"].error_code), parts["a"].records) == (0, b"batch")
    b = parts["b"]
    assert int(b.error_code) == E.TOPIC_AUTHORIZATION_FAILED
    assert (b.high_watermark, b.records) == (-1, b"")


def test_a_follower_fetch_without_cluster_action_is_a_topic_authorization_failure() -> None:
    """Kafka answers a Fetch with a replica id from a principal without CLUSTER_ACTION
    TOPIC_AUTHORIZATION_FAILED on every partition (READ on the topic does not help)."""
    body = request(1, 12, replica_id=3)
    denied = call(body, fake_with(allow(TOPIC, SAMPLE_TOPIC, Op.READ)))
    assert codes(denied.responses, "topic") == {SAMPLE_TOPIC: [E.TOPIC_AUTHORIZATION_FAILED]}
    # Allowed, it is still no way to replicate here: followers use the inter-broker RPC.
    allowed = call(body, fake_with(allow(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)))
    assert codes(allowed.responses, "topic") == {SAMPLE_TOPIC: [E.INVALID_REQUEST]}


def test_describe_alone_does_not_let_a_consumer_fetch() -> None:
    fake = fake_with(allow(TOPIC, SAMPLE_TOPIC, Op.DESCRIBE))
    response = call(request(1, 12), fake)
    assert codes(response.responses, "topic") == {SAMPLE_TOPIC: [E.TOPIC_AUTHORIZATION_FAILED]}


# --- Metadata ----------------------------------------------------------------------------


class TopicsFake(FakeApis):
    """Metadata of whichever topics are asked (every one of TOPICS for all); remembers
    what it was asked."""

    TOPICS = ("t", "public", "secret")

    async def metadata(
        self, topics: list[str] | None, allow_auto_topic_creation: bool, listener: str
    ) -> m.MetadataResponse:
        self.seen.append((topics, allow_auto_topic_creation, listener))
        return m.MetadataResponse(
            [m.BrokerNode(1, "broker1", 9092, "rack-a")],
            1,
            [
                m.MetadataTopic(0, name, [m.MetadataPartition(0, 0, 1, 3, [1], [1], [])])
                for name in (self.TOPICS if topics is None else topics)
            ],
        )


def metadata_request(version: int, names: list[str] | None, **changes: Any) -> Any:
    """Metadata for `names` (None: every topic); `changes` the version has (before v4
    every request may auto-create)."""
    body = request(3, version)
    fields = {f.name for f in dataclasses.fields(body)}
    body = dataclasses.replace(body, **{k: v for k, v in changes.items() if k in fields})
    if names is None:
        return dataclasses.replace(body, topics=None)
    topic = body.topics[0]
    if hasattr(topic, "topic_id"):  # v10+
        topic = dataclasses.replace(topic, topic_id=uuid.UUID(int=0))
    return dataclasses.replace(body, topics=each(topic, "name", names))


@pytest.mark.parametrize("version", [1, 4, 9, 12])
def test_metadata_for_every_topic_leaves_out_the_ones_not_describable(version: int) -> None:
    fake = fake_with(
        allow(TOPIC, "t", Op.READ), allow(TOPIC, "pub", Op.DESCRIBE, PREFIXED), fake=TopicsFake()
    )
    response = call(metadata_request(version, None), fake)
    assert {t.name: int(t.error_code) for t in response.topics} == {"t": 0, "public": 0}


def test_metadata_v0_empty_list_is_every_topic_and_filtered_too() -> None:
    fake = fake_with(allow(TOPIC, "t", Op.DESCRIBE), fake=TopicsFake())
    response = call(dataclasses.replace(request(3, 0), topics=()), fake)
    assert [t.name for t in response.topics] == ["t"]


@pytest.mark.parametrize("version", [1, 4, 9, 12])
def test_metadata_for_named_topics_refuses_the_ones_not_describable(version: int) -> None:
    fake = fake_with(allow(TOPIC, "t", Op.DESCRIBE), fake=TopicsFake())
    body = metadata_request(version, ["t", "secret", "unknown"], allow_auto_topic_creation=False)
    response = call(body, fake)
    assert {t.name: int(t.error_code) for t in response.topics} == {
        "t": 0,
        "secret": E.TOPIC_AUTHORIZATION_FAILED,
        "unknown": E.TOPIC_AUTHORIZATION_FAILED,
    }
    refused = next(t for t in response.topics if t.name == "secret")
    assert (refused.partitions, refused.is_internal) == ((), False)
    # The refused topics are not even looked up.
    [(asked, _auto, _listener)] = fake.seen
    assert asked == ["t"]


def test_a_topic_named_by_id_and_not_describable_is_refused_without_its_name() -> None:
    body = request(3, 12)  # the sample names SAMPLE_TOPIC by id (and by name: drop that)
    topic = dataclasses.replace(body.topics[0], name=None)
    response = call(dataclasses.replace(body, topics=(topic,)), fake_with(fake=TopicsFake()))
    [t] = response.topics
    assert (int(t.error_code), t.name, t.topic_id) == (
        E.TOPIC_AUTHORIZATION_FAILED,
        None,
        SAMPLE_TOPIC_ID,
    )


class TestMetadataAutoCreation:
    """A topic the broker does not know is auto-created only for a principal that may
    CREATE it (on the cluster or the topic); the CREATE check comes after DESCRIBE."""

    def ask(self, fake: FakeApis, auto: bool = True) -> tuple[dict[str, int], Any]:
        body = metadata_request(9, ["t", "new"], allow_auto_topic_creation=auto)
        response = call(body, fake)
        return {t.name: int(t.error_code) for t in response.topics}, fake.seen

    def test_without_create_the_new_topic_is_refused_and_not_asked_for(self) -> None:
        fake = fake_with(allow(TOPIC, "*", Op.DESCRIBE), fake=TopicsFake())
        answers, seen = self.ask(fake)
        assert answers == {"t": 0, "new": E.TOPIC_AUTHORIZATION_FAILED}
        assert seen[0][0] == ["t"]

    @pytest.mark.parametrize(
        "create",
        [allow(CLUSTER, CLUSTER_NAME, Op.CREATE), allow(TOPIC, "ne", Op.CREATE, PREFIXED)],
        ids=["on-the-cluster", "on-the-topic"],
    )
    def test_with_create_it_is_asked_for_and_may_be_created(self, create: Acl) -> None:
        fake = fake_with(allow(TOPIC, "*", Op.DESCRIBE), create, fake=TopicsFake())
        answers, seen = self.ask(fake)
        assert answers == {"t": 0, "new": 0}
        assert seen[0][:2] == (["t", "new"], True)

    def test_create_alone_is_not_enough_describe_comes_first(self) -> None:
        fake = fake_with(allow(CLUSTER, CLUSTER_NAME, Op.CREATE), fake=TopicsFake())
        answers, seen = self.ask(fake)
        assert answers == {
            "t": E.TOPIC_AUTHORIZATION_FAILED,
            "new": E.TOPIC_AUTHORIZATION_FAILED,
        }
        assert seen[0][0] == []

    def test_no_create_check_when_the_request_does_not_auto_create(self) -> None:
        fake = fake_with(allow(TOPIC, "*", Op.DESCRIBE), fake=TopicsFake())
        answers, seen = self.ask(fake, auto=False)
        assert answers == {"t": 0, "new": 0}  # (the fake knows every topic)
        assert seen[0][0] == ["t", "new"]

    def test_no_create_check_without_auto_create_topics_enable(self) -> None:
        fake = fake_with(allow(TOPIC, "*", Op.DESCRIBE), fake=TopicsFake())
        fake.config = dataclasses.replace(fake.config, auto_create_topics_enable=False)
        _answers, seen = self.ask(fake)
        assert seen[0][0] == ["t", "new"]


def test_metadata_authorized_operations_follow_the_acls() -> None:
    fake = fake_with(
        allow(TOPIC, "t", Op.READ),
        allow(TOPIC, "t", Op.ALTER_CONFIGS),
        allow(CLUSTER, CLUSTER_NAME, Op.DESCRIBE),
        allow(CLUSTER, CLUSTER_NAME, Op.CREATE),
    )
    response = call(metadata_request(10, ["t"]), fake)
    [t] = response.topics
    assert t.topic_authorized_operations == ops(
        Op.READ, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS
    )
    assert response.cluster_authorized_operations == ops(Op.DESCRIBE, Op.CREATE)


def test_metadata_cluster_operations_are_0_without_describe_on_the_cluster() -> None:
    fake = fake_with(allow(TOPIC, "t", Op.DESCRIBE), allow(CLUSTER, CLUSTER_NAME, Op.CREATE))
    response = call(metadata_request(10, ["t"]), fake)
    assert response.cluster_authorized_operations == 0
    not_asked = call(
        metadata_request(
            10,
            ["t"],
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        ),
        fake,
    )
    assert not_asked.cluster_authorized_operations == NOT_REQUESTED
    assert not_asked.topics[0].topic_authorized_operations == NOT_REQUESTED


# --- DescribeCluster ---------------------------------------------------------------------


def test_describe_cluster_needs_nothing_and_answers_operations_to_describers() -> None:
    nobody = call(request(60, 0), fake_with())
    assert (int(nobody.error_code), [b.broker_id for b in nobody.brokers]) == (0, [1])
    assert nobody.cluster_authorized_operations == 0
    describer = call(
        request(60, 0),
        fake_with(
            allow(CLUSTER, CLUSTER_NAME, Op.DESCRIBE), allow(CLUSTER, CLUSTER_NAME, Op.ALTER)
        ),
    )
    assert describer.cluster_authorized_operations == ops(Op.DESCRIBE, Op.ALTER)


# --- ListOffsets, OffsetForLeaderEpoch ----------------------------------------------------


@pytest.mark.parametrize("version", [1, 5, 7])
def test_list_offsets_needs_describe_on_each_topic(version: int) -> None:
    fake = fake_with(allow(TOPIC, "a", Op.READ))  # READ implies DESCRIBE
    body = request(2, version)
    body = dataclasses.replace(body, topics=each(body.topics[0], "name", ["b", "a"]))
    response = call(body, fake)
    assert [t.name for t in response.topics] == ["b", "a"]  # the request's order
    b, a = (t.partitions[0] for t in response.topics)
    assert (int(a.error_code), a.offset) == (0, 99)
    assert (int(b.error_code), b.offset, b.timestamp) == (E.TOPIC_AUTHORIZATION_FAILED, -1, -1)
    [seen] = fake.seen
    assert [t.name for t in seen.topics] == ["a"]


def test_list_offsets_of_no_describable_topic_asks_nothing() -> None:
    fake = fake_with()
    response = call(request(2, 5), fake)
    assert codes(response.topics) == {SAMPLE_TOPIC: [E.TOPIC_AUTHORIZATION_FAILED]}
    assert fake.seen == []


@pytest.mark.parametrize("version", [2, 3, 4])
def test_offset_for_leader_epoch_needs_describe_on_each_topic(version: int) -> None:
    fake = fake_with(allow(TOPIC, "a", Op.DESCRIBE))
    body = request(23, version)
    body = dataclasses.replace(body, topics=each(body.topics[0], "topic", ["a", "b"]))
    response = call(body, fake)
    assert codes(response.topics, "topic") == {"a": [0], "b": [E.TOPIC_AUTHORIZATION_FAILED]}
    [seen] = fake.seen
    assert [t.name for t in seen.topics] == ["a"]


def test_offset_for_leader_epoch_with_cluster_action_needs_no_describe() -> None:
    fake = fake_with(allow(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION))
    response = call(request(23, 4), fake)
    assert codes(response.topics, "topic") == {SAMPLE_TOPIC: [0]}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_delete_records_needs_delete_on_each_topic(version: int) -> None:
    fake = fake_with(allow(TOPIC, "a", Op.DELETE), allow(TOPIC, "b", Op.READ))
    body = request(21, version)
    body = dataclasses.replace(body, topics=each(body.topics[0], "name", ["b", "a"]))
    response = call(body, fake)
    b, a = (t.partitions[0] for t in response.topics)
    assert (int(a.error_code), a.low_watermark) == (0, body.topics[1].partitions[0].offset)
    assert (int(b.error_code), b.low_watermark) == (E.TOPIC_AUTHORIZATION_FAILED, -1)
    [(_timeout_ms, offsets)] = fake.seen
    assert {tp.topic for tp in offsets} == {"a"}


def test_delete_records_of_no_deletable_topic_asks_nothing() -> None:
    fake = fake_with(allow(TOPIC, SAMPLE_TOPIC, Op.ALTER))
    response = call(request(21, 2), fake)
    assert codes(response.topics) == {SAMPLE_TOPIC: [E.TOPIC_AUTHORIZATION_FAILED]}
    assert fake.seen == []


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_describe_log_dirs_needs_describe_on_the_cluster(version: int) -> None:
    denied = fake_with(allow(TOPIC, "*", Op.ALL))
    response = call(request(35, version), denied)
    assert response.results == ()
    if version >= 3:
        assert int(response.error_code) == E.CLUSTER_AUTHORIZATION_FAILED
    assert denied.seen == []
    allowed = call(request(35, version), fake_with(allow(CLUSTER, CLUSTER_NAME, Op.DESCRIBE)))
    assert [d.log_dir for d in allowed.results] == ["/data/1"]


# --- CreateTopics, DeleteTopics, CreatePartitions -----------------------------------------


def create_topics_request(version: int, names: list[str]) -> Any:
    body = request(19, version, validate_only=False)
    topic = dataclasses.replace(body.topics[0], num_partitions=3, replication_factor=1)
    return dataclasses.replace(body, topics=each(topic, "name", names))


@pytest.mark.parametrize("version", [2, 5, 7])
def test_create_topics_needs_create_on_the_cluster_or_each_topic(version: int) -> None:
    fake = fake_with(allow(TOPIC, "a", Op.CREATE))
    response = call(create_topics_request(version, ["a", "b"]), fake)
    answers = {t.name: t for t in response.topics}
    assert int(answers["a"].error_code) == 0
    b = answers["b"]
    assert (int(b.error_code), b.error_message) == (
        E.TOPIC_AUTHORIZATION_FAILED,
        "Authorization failed.",
    )
    [(topics, _timeout, _validate_only)] = fake.seen
    assert [t.name for t in topics] == ["a"]
    if version >= 5:
        assert (b.num_partitions, b.replication_factor) == (-1, -1)
        # Neither may alice see configs: DESCRIBE_CONFIGS on neither topic.
        assert [t.topic_config_error_code for t in response.topics] == [
            E.TOPIC_AUTHORIZATION_FAILED,
            E.TOPIC_AUTHORIZATION_FAILED,
        ]

    cluster = fake_with(allow(CLUSTER, CLUSTER_NAME, Op.CREATE))
    response = call(create_topics_request(version, ["a", "b"]), cluster)
    assert [int(t.error_code) for t in response.topics] == [0, 0]


def test_created_topics_configs_are_for_describe_configs_holders() -> None:
    fake = fake_with(
        allow(CLUSTER, CLUSTER_NAME, Op.CREATE), allow(TOPIC, "a", Op.DESCRIBE_CONFIGS)
    )
    response = call(create_topics_request(5, ["a", "b"]), fake)
    assert {t.name: t.topic_config_error_code for t in response.topics} == {
        "a": 0,
        "b": E.TOPIC_AUTHORIZATION_FAILED,
    }


def test_a_topic_named_twice_is_refused_as_such_not_created() -> None:
    fake = fake_with(allow(CLUSTER, CLUSTER_NAME, Op.CREATE))
    response = call(create_topics_request(5, ["a", "a"]), fake)
    assert [(int(t.error_code), t.error_message) for t in response.topics] == [
        (E.INVALID_REQUEST, "Found multiple entries for this topic.")
    ] * 2
    assert fake.seen == []


@pytest.mark.parametrize("version", [1, 5])
def test_delete_topics_needs_delete_on_each_topic(version: int) -> None:
    fake = fake_with(allow(TOPIC, "a", Op.DELETE))
    response = call(request(20, version, topic_names=("a", "b")), fake)
    assert {r.name: int(r.error_code) for r in response.responses} == {
        "a": 0,
        "b": E.TOPIC_AUTHORIZATION_FAILED,
    }
    [(names, _timeout)] = fake.seen
    assert names == ["a"]


def test_delete_topics_by_id_needs_describe_to_tell_the_name() -> None:
    body = request(20, 6)
    by_id = dataclasses.replace(body.topics[0], name=None, topic_id=SAMPLE_TOPIC_ID)
    body = dataclasses.replace(body, topics=(by_id,))
    # DELETE without DESCRIBE is not possible (DELETE implies DESCRIBE): ALTER gives
    # DESCRIBE but not DELETE, nothing gives neither.
    hidden = call(body, fake_with())
    [r] = hidden.responses
    assert (int(r.error_code), r.name, r.topic_id) == (
        E.TOPIC_AUTHORIZATION_FAILED,
        None,
        SAMPLE_TOPIC_ID,
    )
    named = call(body, fake_with(allow(TOPIC, SAMPLE_TOPIC, Op.ALTER)))
    [r] = named.responses
    assert (int(r.error_code), r.name) == (E.TOPIC_AUTHORIZATION_FAILED, SAMPLE_TOPIC)
    deleted = call(body, fake_with(allow(TOPIC, SAMPLE_TOPIC, Op.DELETE)))
    assert [int(r.error_code) for r in deleted.responses] == [0]


def test_with_topic_deletion_disabled_nothing_is_authorized() -> None:
    fake = fake_with()
    fake.config = dataclasses.replace(fake.config, delete_topic_enable=False)
    call(request(20, 5, topic_names=("a",)), fake)
    # Passed on to be refused as disabled (the fake does not check), not as unauthorized.
    assert fake.seen == [(["a"], 1500)]


@pytest.mark.parametrize("version", [0, 3])
def test_create_partitions_needs_alter_on_each_topic(version: int) -> None:
    fake = fake_with(allow(TOPIC, "a", Op.ALTER))
    body = request(37, version)
    body = dataclasses.replace(body, topics=each(body.topics[0], "name", ["a", "b"]))
    response = call(body, fake)
    assert {r.name: (int(r.error_code), r.error_message) for r in response.results} == {
        "a": (37, "no"),  # the fake's answer
        "b": (E.TOPIC_AUTHORIZATION_FAILED, "The topic authorization is failed."),
    }
    [(topics, _timeout, _validate_only)] = fake.seen
    assert [t.name for t in topics] == ["a"]


def test_create_partitions_off_the_controller_is_passed_on_to_be_refused() -> None:
    fake = fake_with()
    fake.controller.is_active = False
    call(request(37, 3), fake)
    [(topics, _timeout, _validate_only)] = fake.seen  # NOT_CONTROLLER comes first
    assert [t.name for t in topics] == [SAMPLE_TOPIC]


# --- DescribeConfigs, AlterConfigs, IncrementalAlterConfigs -------------------------------


def config_request(key: int, version: int, resources: list[tuple[int, str]]) -> Any:
    body = request(key, version)
    first = body.resources[0]
    return dataclasses.replace(
        body,
        resources=tuple(
            dataclasses.replace(first, resource_type=rtype, resource_name=name)
            for rtype, name in resources
        ),
    )


CONFIG_RESOURCES = [(2, "a"), (2, "b"), (4, "1")]


def test_describe_configs_needs_describe_configs_on_the_topic_or_cluster() -> None:
    fake = fake_with(allow(TOPIC, "a", Op.ALTER_CONFIGS))  # implies DESCRIBE_CONFIGS
    response = call(config_request(32, 4, CONFIG_RESOURCES), fake)
    assert [(r.resource_name, int(r.error_code), r.error_message) for r in response.results] == [
        ("a", 0, None),
        ("b", E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
        ("1", E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
    ]
    assert [r.configs == () for r in response.results] == [False, True, True]
    assert [name for _type, name, _keys, _synonyms in fake.seen] == ["a"]
    broker = call(
        config_request(32, 4, [(4, "1"), (8, "1")]),
        fake_with(allow(CLUSTER, CLUSTER_NAME, Op.DESCRIBE_CONFIGS)),
    )
    assert [int(r.error_code) for r in broker.results] == [0, 0]


@pytest.mark.parametrize(("key", "version"), [(33, 0), (33, 2), (44, 0), (44, 1)])
def test_altering_configs_needs_alter_configs_on_the_topic_or_cluster(
    key: int, version: int
) -> None:
    fake = fake_with(allow(TOPIC, "a", Op.ALTER_CONFIGS))
    response = call(config_request(key, version, CONFIG_RESOURCES), fake)
    assert [(r.resource_name, int(r.error_code), r.error_message) for r in response.responses] == [
        ("a", 0, None),
        ("b", E.TOPIC_AUTHORIZATION_FAILED, None),
        ("1", E.CLUSTER_AUTHORIZATION_FAILED, None),
    ]
    assert [seen[1] for seen in fake.seen] == ["a"]
    # DESCRIBE_CONFIGS does not imply ALTER_CONFIGS.
    looker = fake_with(allow(TOPIC, "a", Op.DESCRIBE_CONFIGS))
    response = call(config_request(key, version, [(2, "a")]), looker)
    assert [int(r.error_code) for r in response.responses] == [E.TOPIC_AUTHORIZATION_FAILED]
    assert looker.seen == []


def test_broker_configs_need_alter_configs_on_the_cluster() -> None:
    fake = fake_with(allow(CLUSTER, CLUSTER_NAME, Op.ALTER_CONFIGS))
    response = call(config_request(44, 1, [(4, "1"), (8, "1")]), fake)
    assert [int(r.error_code) for r in response.responses] == [0, 0]
    assert [seen[:2] for seen in fake.seen] == [(4, "1"), (8, "1")]


# --- Groups ------------------------------------------------------------------------------


def add_group(fake: FakeApis, group_id: str, offsets: dict[TopicPartition, int]) -> None:
    """An Empty group in the fake's coordinator, with these committed offsets."""
    core = fake.group_coordinator.core
    core.groups[group_id] = GroupMetadata(
        group_id,
        core.partition_for(group_id),
        offsets={tp: OffsetCommitValue(o, -1, "", 0) for tp, o in offsets.items()},
    )


@pytest.mark.parametrize("version", [3, 4])
def test_find_coordinator_needs_describe_on_the_group(version: int) -> None:
    response = call(request(10, version), fake_with(allow(GROUP, "other", Op.DESCRIBE)))
    [(code, message)] = (
        [(c.error_code, c.error_message) for c in response.coordinators]
        if version >= 4
        else [(response.error_code, response.error_message)]
    )
    assert (int(code), message) == (E.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    allowed = fake_with(allow(GROUP, SAMPLE_TOPIC, Op.READ))  # READ implies DESCRIBE
    call(request(10, version), allowed)
    # As without an authorizer: the offsets topic is made, the client asked to come back.
    assert [t.name for t in allowed.created] == ["__consumer_offsets"]


def test_find_coordinator_of_a_transactional_id_needs_describe_on_it() -> None:
    response = call(request(10, 3, key_type=1), fake_with())
    assert int(response.error_code) == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    allowed = fake_with(allow(ResourceType.TRANSACTIONAL_ID, SAMPLE_TOPIC, Op.DESCRIBE))
    response = call(request(10, 3, key_type=1), allowed)
    assert int(response.error_code) == E.COORDINATOR_NOT_AVAILABLE  # none here


@pytest.mark.parametrize(
    ("key", "version", "allowed_code"),
    [
        (11, 7, E.INVALID_SESSION_TIMEOUT),  # JoinGroup
        (14, 5, E.UNKNOWN_MEMBER_ID),  # SyncGroup
        (12, 4, E.UNKNOWN_MEMBER_ID),  # Heartbeat
        (13, 2, E.UNKNOWN_MEMBER_ID),  # LeaveGroup
    ],
)
def test_group_membership_needs_read_on_the_group(
    key: int, version: int, allowed_code: int
) -> None:
    describe_only = fake_with(allow(GROUP, SAMPLE_TOPIC, Op.DESCRIBE))
    response = call(request(key, version), describe_only)
    assert int(response.error_code) == E.GROUP_AUTHORIZATION_FAILED
    assert describe_only.group_coordinator.core.groups == {}
    reader = fake_with(allow(GROUP, SAMPLE_TOPIC, Op.READ))
    assert int(call(request(key, version), reader).error_code) == allowed_code


def test_a_refused_join_gets_no_member_id_and_no_generation() -> None:
    response = call(request(11, 7), fake_with())
    assert (response.member_id, response.generation_id, response.leader) == ("", -1, "")
    assert (response.protocol_type, response.protocol_name, response.members) == (None, None, ())


def test_a_refused_leave_answers_no_member() -> None:
    response = call(request(13, 4), fake_with())
    assert (int(response.error_code), response.members) == (E.GROUP_AUTHORIZATION_FAILED, ())


def test_list_groups_lists_all_for_describe_on_the_cluster_else_the_describable() -> None:
    fake = fake_with(allow(GROUP, "app-", Op.DESCRIBE, PREFIXED))
    for group_id in ("app-1", "app-2", "other"):
        add_group(fake, group_id, {})
    body = request(16, 4, states_filter=())
    assert [g.group_id for g in call(body, fake).groups] == ["app-1", "app-2"]
    fake.authorizer = RequestAuthorizer(acl_authorizer([allow(CLUSTER, CLUSTER_NAME, Op.DESCRIBE)]))
    assert [g.group_id for g in call(body, fake).groups] == ["app-1", "app-2", "other"]


def test_describe_groups_needs_describe_on_each_group() -> None:
    fake = fake_with(allow(GROUP, "mine", Op.READ), allow(GROUP, "mine", Op.DELETE))
    response = call(request(15, 5, groups=("mine", "theirs")), fake)
    mine, theirs = response.groups
    assert (int(mine.error_code), mine.group_state) == (0, "Dead")
    assert mine.authorized_operations == ops(Op.READ, Op.DELETE, Op.DESCRIBE)
    assert (int(theirs.error_code), theirs.group_state, theirs.protocol_type) == (
        E.GROUP_AUTHORIZATION_FAILED,
        "",
        "",
    )
    assert theirs.authorized_operations == NOT_REQUESTED


def test_delete_groups_needs_delete_on_each_group() -> None:
    fake = fake_with(allow(GROUP, "mine", Op.DELETE))
    add_group(fake, "mine", {})
    add_group(fake, "theirs", {})
    response = call(request(42, 2, groups_names=("mine", "theirs")), fake)
    assert {r.group_id: int(r.error_code) for r in response.results} == {
        "mine": 0,
        "theirs": E.GROUP_AUTHORIZATION_FAILED,
    }
    assert set(fake.group_coordinator.core.groups) == {"theirs"}


# --- OffsetCommit, OffsetFetch, OffsetDelete ----------------------------------------------


def offsets_request(key: int, version: int, group_id: str, names: list[str]) -> Any:
    body = request(key, version, group_id=group_id)
    return dataclasses.replace(body, topics=each(body.topics[0], "name", names))


@pytest.mark.parametrize("version", [2, 8])
def test_offset_commit_needs_read_on_the_group_then_on_each_topic(version: int) -> None:
    body = offsets_request(8, version, "g", ["t", "secret"])
    body = dataclasses.replace(body, generation_id_or_member_epoch=-1, member_id="")
    no_group = fake_with(allow(TOPIC, "*", Op.READ), allow(GROUP, "g", Op.DESCRIBE))
    response = call(body, no_group)
    assert codes(response.topics) == {
        "t": [E.GROUP_AUTHORIZATION_FAILED],
        "secret": [E.GROUP_AUTHORIZATION_FAILED],
    }
    assert no_group.group_coordinator.core.groups == {}
    fake = fake_with(allow(GROUP, "g", Op.READ), allow(TOPIC, "t", Op.READ))
    response = call(body, fake)
    assert codes(response.topics) == {"t": [0], "secret": [E.TOPIC_AUTHORIZATION_FAILED]}
    committed = fake.group_coordinator.core.groups["g"].offsets
    assert list(committed) == [TopicPartition("t", 7)]


@pytest.mark.parametrize("version", [1, 2, 7, 8])
def test_offset_fetch_of_named_partitions_refuses_the_undescribable_topics(
    version: int,
) -> None:
    fake = fake_with(allow(GROUP, "g", Op.DESCRIBE), allow(TOPIC, "t", Op.DESCRIBE))
    add_group(fake, "g", {TopicPartition("t", 7): 10, TopicPartition("secret", 7): 20})
    if version >= 8:
        body = request(9, version)
        group = body.groups[0]
        group = dataclasses.replace(
            group, group_id="g", topics=each(group.topics[0], "name", ["t", "secret"])
        )
        body = dataclasses.replace(body, groups=(group,))
    else:
        body = offsets_request(9, version, "g", ["t", "secret"])
    response = call(body, fake)
    topics = response.groups[0].topics if version >= 8 else response.topics
    assert {
        t.name: [(int(p.error_code), p.committed_offset) for p in t.partitions] for t in topics
    } == {"t": [(0, 10)], "secret": [(E.TOPIC_AUTHORIZATION_FAILED, -1)]}


@pytest.mark.parametrize("version", [2, 7, 8])
def test_offset_fetch_of_every_partition_leaves_out_the_undescribable_topics(
    version: int,
) -> None:
    fake = fake_with(allow(GROUP, "g", Op.DESCRIBE), allow(TOPIC, "t", Op.READ))
    add_group(fake, "g", {TopicPartition("t", 0): 10, TopicPartition("secret", 0): 20})
    if version >= 8:
        body = request(9, version)
        group = dataclasses.replace(body.groups[0], group_id="g", topics=None)
        body = dataclasses.replace(body, groups=(group,))
    else:
        body = request(9, version, group_id="g", topics=None)
    response = call(body, fake)
    topics = response.groups[0].topics if version >= 8 else response.topics
    assert [(t.name, [p.committed_offset for p in t.partitions]) for t in topics] == [("t", [10])]


@pytest.mark.parametrize("version", [1, 2, 8])
def test_offset_fetch_needs_describe_on_the_group(version: int) -> None:
    fake = fake_with(allow(TOPIC, "*", Op.DESCRIBE))
    add_group(fake, SAMPLE_TOPIC, {TopicPartition(SAMPLE_TOPIC, 7): 10})
    response = call(request(9, version), fake)
    if version >= 8:
        [group] = response.groups
        assert (int(group.error_code), group.topics) == (E.GROUP_AUTHORIZATION_FAILED, ())
    elif version >= 2:
        assert (int(response.error_code), response.topics) == (E.GROUP_AUTHORIZATION_FAILED, ())
    else:  # v1: no group-level error, every partition asked carries it
        assert codes(response.topics) == {SAMPLE_TOPIC: [E.GROUP_AUTHORIZATION_FAILED]}


def test_offset_delete_needs_delete_on_the_group_and_read_on_each_topic() -> None:
    body = offsets_request(47, 0, "g", ["t", "secret"])
    fake = fake_with(allow(GROUP, "g", Op.READ), allow(TOPIC, "*", Op.READ))
    add_group(fake, "g", {TopicPartition("t", 7): 10, TopicPartition("secret", 7): 20})
    response = call(body, fake)
    assert (int(response.error_code), response.topics) == (E.GROUP_AUTHORIZATION_FAILED, ())
    assert len(fake.group_coordinator.core.groups["g"].offsets) == 2

    fake = fake_with(allow(GROUP, "g", Op.DELETE), allow(TOPIC, "t", Op.READ))
    add_group(fake, "g", {TopicPartition("t", 7): 10, TopicPartition("secret", 7): 20})
    response = call(body, fake)
    assert int(response.error_code) == 0
    assert codes(response.topics) == {"t": [0], "secret": [E.TOPIC_AUTHORIZATION_FAILED]}


# --- InitProducerId ----------------------------------------------------------------------


def init_producer_id(fake: FakeApis) -> tuple[int, int]:
    response = call(request(22, 4), fake)
    return int(response.error_code), response.producer_id


@pytest.mark.parametrize(
    "acls",
    [
        [allow(CLUSTER, CLUSTER_NAME, Op.IDEMPOTENT_WRITE)],
        [allow(TOPIC, "t", Op.WRITE)],
        [allow(TOPIC, "logs-", Op.WRITE, PREFIXED)],
        [allow(TOPIC, WILDCARD_RESOURCE, Op.ALL)],
        [allow(TOPIC, "t", Op.WRITE), deny(TOPIC, "u", Op.WRITE)],
        [allow(TOPIC, "t", Op.WRITE, principal="User:*")],
    ],
    ids=[
        "idempotent-write",
        "write-a-topic",
        "write-prefixed",
        "all-on-every-topic",
        "write-one-deny-another",
        "write-for-everyone",
    ],
)
def test_init_producer_id_needs_idempotent_write_or_write_on_any_topic(acls: list[Acl]) -> None:
    assert init_producer_id(fake_with(*acls)) == (0, 4242)


@pytest.mark.parametrize(
    "acls",
    [
        [],
        [allow(TOPIC, "t", Op.READ), allow(TOPIC, "t", Op.DESCRIBE)],
        [allow(TOPIC, "t", Op.WRITE, principal="User:bob")],
        [allow(TOPIC, "t", Op.WRITE), deny(TOPIC, "t", Op.WRITE)],
        [allow(TOPIC, "logs-", Op.WRITE, PREFIXED), deny(TOPIC, "logs", Op.WRITE, PREFIXED)],
        [allow(TOPIC, "*", Op.WRITE, PREFIXED), deny(TOPIC, "*", Op.WRITE)],
        [allow(TOPIC, "t", Op.WRITE), deny(TOPIC, WILDCARD_RESOURCE, Op.ALL)],
        [allow(CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)],
    ],
    ids=[
        "nothing",
        "read-and-describe",
        "someone-elses-write",
        "write-denied-literally",
        "write-denied-by-a-shorter-prefix",
        "deny-write-on-every-topic",
        "deny-all-on-every-topic",
        "cluster-action",
    ],
)
def test_init_producer_id_refused_is_a_cluster_authorization_failure(acls: list[Acl]) -> None:
    assert init_producer_id(fake_with(*acls)) == (E.CLUSTER_AUTHORIZATION_FAILED, -1)


def test_init_producer_id_with_allow_everyone_if_no_acl_found() -> None:
    """The cluster without ACLs allows IDEMPOTENT_WRITE; with some (none for alice), any
    topic's WRITE is allowed unless denied on every topic: Kafka's authorizeByResourceType
    lets allow.everyone.if.no.acl.found decide whatever the topics' ACLs."""
    cluster_acl = allow(CLUSTER, CLUSTER_NAME, Op.IDEMPOTENT_WRITE, principal="User:bob")
    for acls in ([], [deny(TOPIC, "*", Op.WRITE)], [cluster_acl, allow(TOPIC, "t", Op.READ)]):
        assert init_producer_id(fake_with(*acls, allow_everyone_if_no_acl_found=True)) == (
            0,
            4242,
        )
    fake = fake_with(cluster_acl, deny(TOPIC, "*", Op.WRITE), allow_everyone_if_no_acl_found=True)
    assert init_producer_id(fake) == (E.CLUSTER_AUTHORIZATION_FAILED, -1)


def test_authorize_by_resource_type_matches_only_the_operation_or_all() -> None:
    """No implication by resource type: ALLOW ALTER implies DESCRIBE on a topic, but no
    topic's DESCRIBE by type (Kafka's authorizeByResourceType)."""
    authorizer = acl_authorizer([allow(TOPIC, "t", Op.ALTER)])
    assert authorizer.authorize(ALICE, "127.0.0.1", Op.DESCRIBE, TOPIC, "t")
    assert not authorizer.authorize_by_resource_type(ALICE, "127.0.0.1", Op.DESCRIBE, TOPIC)
    assert authorizer.authorize_by_resource_type(ALICE, "127.0.0.1", Op.ALTER, TOPIC)
    assert not authorizer.authorize_by_resource_type(ALICE, "127.0.0.1", Op.ALTER, GROUP)
    other_host = acl_authorizer(
        [
            (
                ResourcePattern(TOPIC, "t", LITERAL),
                AccessControlEntry("User:alice", "10.0.0.1", Op.WRITE, AclPermissionType.ALLOW),
            )
        ]
    )
    assert not other_host.authorize_by_resource_type(ALICE, "127.0.0.1", Op.WRITE, TOPIC)
    with pytest.raises(ValueError):
        authorizer.authorize_by_resource_type(ALICE, "127.0.0.1", Op.ANY, TOPIC)
    with pytest.raises(ValueError):
        authorizer.authorize_by_resource_type(ALICE, "127.0.0.1", Op.WRITE, ResourceType.ANY)


# --- SCRAM credentials --------------------------------------------------------------------


def test_describe_user_scram_credentials_needs_describe_on_the_cluster() -> None:
    response = call(request(50, 0), fake_with(allow(CLUSTER, CLUSTER_NAME, Op.DESCRIBE_CONFIGS)))
    assert (int(response.error_code), response.error_message, response.results) == (
        E.CLUSTER_AUTHORIZATION_FAILED,
        None,
        (),
    )
    allowed = call(request(50, 0), fake_with(allow(CLUSTER, CLUSTER_NAME, Op.ALTER)))
    assert int(allowed.error_code) == 0  # ALTER implies DESCRIBE
    assert {int(r.error_code) for r in allowed.results} == {E.RESOURCE_NOT_FOUND}


def test_alter_user_scram_credentials_needs_alter_on_the_cluster() -> None:
    body = request(51, 0)
    body = dataclasses.replace(
        body,
        deletions=each(body.deletions[0], "name", ["carol", "bob"]),
        upsertions=each(body.upsertions[0], "name", ["bob"]),
    )
    users = MemoryUsers()
    fake = fake_with(allow(CLUSTER, CLUSTER_NAME, Op.DESCRIBE))
    fake.scram_admin = ScramCredentialAdmin(users)
    response = call(body, fake)
    assert [(r.user, int(r.error_code), r.error_message) for r in response.results] == [
        ("bob", E.CLUSTER_AUTHORIZATION_FAILED, None),
        ("carol", E.CLUSTER_AUTHORIZATION_FAILED, None),
    ]
    assert users.notified == []
    allowed = call(body, fake_with(allow(CLUSTER, CLUSTER_NAME, Op.ALTER)))
    assert E.CLUSTER_AUTHORIZATION_FAILED not in {int(r.error_code) for r in allowed.results}


# --- super users, no authorizer, the log --------------------------------------------------


SUPER_USER_REQUESTS = [(0, 8), (1, 12), (2, 5), (3, 9), (8, 8), (9, 7), (19, 5), (20, 5)]


@pytest.mark.parametrize(("key", "version"), SUPER_USER_REQUESTS)
def test_a_super_user_may_do_anything(key: int, version: int) -> None:
    as_super = call(request(key, version), fake_with(super_users=["User:alice"]))
    unchecked = call(request(key, version), FakeApis())
    assert as_super == unchecked


@pytest.mark.parametrize(("key", "version"), SUPER_USER_REQUESTS)
def test_without_a_session_the_principal_is_anonymous(key: int, version: int) -> None:
    as_anonymous = call(
        request(key, version), fake_with(super_users=["User:ANONYMOUS"]), session=None
    )
    assert as_anonymous == call(request(key, version), FakeApis())


def test_a_super_users_init_producer_id_and_operations() -> None:
    fake = fake_with(super_users=["User:alice"])
    assert init_producer_id(fake) == (0, 4242)
    response = call(metadata_request(10, ["t"]), fake)
    assert response.topics[0].topic_authorized_operations == to_32bit_field(
        SUPPORTED_OPERATIONS[TOPIC]
    )
    assert response.cluster_authorized_operations == to_32bit_field(SUPPORTED_OPERATIONS[CLUSTER])


def test_denials_are_logged_with_kafkas_request_name(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(TRACE, logger=AUTHORIZER_LOGGER)
    call(request(0, 8), fake_with())
    [record] = [r for r in caplog.records if "Write" in r.getMessage()]
    assert record.levelno == logging.INFO
    assert record.getMessage() == (
        f"Principal = User:alice is Denied Operation = Write from host = 127.0.0.1 on "
        f"resource = Topic:LITERAL:{SAMPLE_TOPIC} for request = Produce with "
        "resourceRefCount = 1"
    )


def test_a_filter_logs_its_denials_quietly(caplog: pytest.LogCaptureFixture) -> None:
    """Metadata for every topic hides the undescribable ones: denials at TRACE, not INFO
    (Kafka's logIfDenied = false); named ones are denials the client asked for: INFO."""
    caplog.set_level(TRACE, logger=AUTHORIZER_LOGGER)

    def topic_denials() -> list[int]:
        return [
            r.levelno
            for r in caplog.records
            if "Denied Operation = Describe" in r.message and "resource = Topic:" in r.message
        ]

    call(metadata_request(9, None), fake_with(fake=TopicsFake()))
    assert topic_denials() == [TRACE] * len(TopicsFake.TOPICS)
    caplog.clear()
    call(metadata_request(9, ["secret"]), fake_with(fake=TopicsFake()))
    assert topic_denials() == [logging.INFO]


def test_init_producer_id_logs_its_check_by_resource_type(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(TRACE, logger=AUTHORIZER_LOGGER)
    init_producer_id(fake_with())
    messages = {(r.levelno, r.getMessage()) for r in caplog.records}
    assert (
        logging.INFO,
        "Principal = User:alice is Denied Operation = Write from host = 127.0.0.1 on "
        "resource = Topic:UNKNOWN:NONE for request = InitProducerId with resourceRefCount = 0",
    ) in messages
    # The cluster's IDEMPOTENT_WRITE is asked first, quietly.
    assert any(level == TRACE and "IdempotentWrite" in message for level, message in messages)
