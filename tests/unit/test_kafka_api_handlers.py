"""The Kafka API handlers (server/kafka_api/) for every version they serve:
a request of that version (every field set, from kio's schema) goes in, and the response
frame that comes out decodes with kio as that version's response, with the values the
broker's own answer held. The broker behind is a fake returning canned answers: what is
tested is the translation, which is pure; tests/kafka_protocol/ runs it on real brokers."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from kio.static.primitive import i8

from minikafka.clock import ManualClock
from minikafka.common import TopicPartition, kafka_uuid_text, new_kafka_uuid
from minikafka.config.broker import BrokerConfig
from minikafka.config.dynamic import (
    AlterableConfig,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    DescribedConfig,
)
from minikafka.controller.events import ApiError
from minikafka.coordinator.group.group_coordinator import GroupConfig
from minikafka.protocol.errors import (
    ErrorCode,
    InvalidConfigError,
    InvalidReplicationFactorError,
    InvalidRequiredAcksError,
)
from minikafka.protocol.kafka.codec import KafkaRequest, request_type
from minikafka.replication.replica_manager import ClientMetadata, LogDirDescription
from minikafka.rpc import messages as m
from minikafka.rules.election import ElectionType
from minikafka.server.acl_store import AclStore
from minikafka.server.admin_manager import NewPartitions, NewTopic, TopicResult
from minikafka.server.authorization import RequestAuthorizer
from minikafka.server.group_coordinator_adapter import GroupCoordinatorAdapter
from minikafka.server.kafka_api.handler import SERVED_VERSIONS, KafkaApiHandler
from minikafka.server.scram_credentials import ScramCredentialAdmin
from minikafka.server.session import CloseConnection
from minikafka.zk.client import ZkError
from tests.unit.test_kafka_codec import parse_response, sample
from tests.unit.test_scram_credentials import MemoryUsers

# The samples name their topic "orders-é" and give it this id (test_kafka_codec.sample).
SAMPLE_TOPIC, SAMPLE_TOPIC_ID = "orders-é", uuid.UUID(int=0x1234)


class FakeCache:
    """Topic ids both ways, as the metadata cache has them (Kafka's text form)."""

    def __init__(self) -> None:
        self.ids = {SAMPLE_TOPIC: kafka_uuid_text(SAMPLE_TOPIC_ID), "t": new_kafka_uuid()}

    def topic_id(self, topic: str) -> str | None:
        return self.ids.get(topic)

    def topic_name(self, topic_id: str) -> str | None:
        return next((name for name, i in self.ids.items() if i == topic_id), None)

    def partition_count(self, topic: str) -> int:
        return 8 if topic in self.ids else 0

    def contains_topic(self, topic: str) -> bool:
        return topic in self.ids

    def topic_count(self) -> int:
        return len(self.ids)


class FakeReplicaManager:
    """Appends to __consumer_offsets succeed at once."""

    def __init__(self) -> None:
        self.partitions: dict[Any, Any] = {}

    async def append_records(
        self, acks: int, timeout_ms: int, entries: dict[Any, Any]
    ) -> dict[Any, m.ProducePartitionResponse]:
        return {tp: m.ProducePartitionResponse(tp.partition, 0, 0, 0) for tp in entries}


def group_coordinator() -> GroupCoordinatorAdapter:
    """A group coordinator that leads every offsets partition (loaded, nothing in them)."""
    adapter = GroupCoordinatorAdapter(
        GroupConfig(),
        FakeReplicaManager(),
        ManualClock(),
        commit_timeout_ms=5000,  # type: ignore[arg-type]
    )
    adapter.core.owned = dict.fromkeys(range(adapter.core.config.offsets_topic_num_partitions), 0)
    return adapter


class FakeController:
    """The active controller (CreatePartitions asks)."""

    is_active = True

    def is_topic_queued_for_deletion(self, topic: str) -> bool:
        return False

    async def elect_leaders(
        self, partitions: Iterable[TopicPartition], election_type: ElectionType
    ) -> dict[TopicPartition, int | ApiError]:
        """Every preferred replica leads already."""
        return dict.fromkeys(partitions, ApiError(ErrorCode.ELECTION_NOT_NEEDED, "not needed"))

    async def alter_partition_reassignments(
        self, reassignments: dict[TopicPartition, tuple[int, ...] | None]
    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        """The samples move a partition to broker 7, which this cluster lacks."""
        return dict.fromkeys(reassignments, (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "no broker 7"))

    async def list_partition_reassignments(
        self, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, Any]:
        return {}  # nothing moving


class FakeApis:
    """Canned answers of BrokerServices (and its admin manager) for whatever the request
    names."""

    def __init__(self) -> None:
        self.cache = FakeCache()
        self.config = BrokerConfig.from_properties({"broker.id": "1", "num.partitions": "4"})
        self.produce_error: Exception | None = None
        self.seen: list[Any] = []
        self.cluster_id = "mk-cluster-id-22-chars"
        self.scram_admin = ScramCredentialAdmin(MemoryUsers())
        # No authorizer: every request allowed, the ACL APIs SECURITY_DISABLED.
        self.authorizer = RequestAuthorizer(None)
        self.acl_store: AclStore | None = None
        self.group_coordinator = group_coordinator()
        self.created: list[NewTopic] = []
        self.create_error: Exception | None = None
        self.admin = self  # the admin manager's part, answered here too
        # Everything allowed (no authorizer), as BrokerServices starts.
        self.authorizer = RequestAuthorizer(None)
        self.controller = FakeController()
        self.fetch_clients: list[ClientMetadata | None] = []
        self.preferred_read_replica = -1  # what fetch answers
        self.fetch_error = ErrorCode.NONE  # what fetch answers every partition

    def now_ms(self) -> int:
        return 1_700_000_000_000

    async def create_topic(self, t: NewTopic) -> int:
        if self.create_error is not None:
            raise self.create_error
        self.created.append(t)
        return t.num_partitions

    async def metadata(
        self, topics: list[str] | None, allow_auto_topic_creation: bool, listener: str
    ) -> m.MetadataResponse:
        self.seen.append((topics, allow_auto_topic_creation, listener))
        return m.MetadataResponse(
            [m.BrokerNode(1, "broker1", 9092, "rack-a")],
            1,
            [
                m.MetadataTopic(
                    0,
                    "t",
                    [m.MetadataPartition(0, 0, 1, 3, [1, 2], [1], [2])],
                    self.cache.ids["t"],
                )
            ],
        )

    async def produce(
        self, acks: int, timeout_ms: int, entries: dict[TopicPartition, Any]
    ) -> dict[TopicPartition, m.ProducePartitionResponse]:
        self.seen.append((acks, timeout_ms, entries))
        if self.produce_error is not None:
            raise self.produce_error
        return {tp: m.ProducePartitionResponse(tp.partition, 0, 41, 3) for tp in entries}

    async def fetch(
        self,
        req: m.FetchRequest,
        readable: Callable[[str], bool] | None = None,
        client: ClientMetadata | None = None,
    ) -> m.FetchResponse:
        self.seen.append(req)
        self.fetch_clients.append(client)
        # As the replica manager: a topic not `readable` is answered, not read.
        return m.FetchResponse(
            0,
            [
                m.FetchTopicResponse(
                    t.name,
                    [
                        self._fetched(p.partition, readable is None or readable(t.name))
                        for p in t.partitions
                    ],
                )
                for t in req.topics
            ],
        )

    def _fetched(self, partition: int, readable: bool) -> m.FetchPartitionResponse:
        if not readable:
            return m.FetchPartitionResponse(
                partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1, -1, None
            )
        if self.fetch_error != ErrorCode.NONE:
            # With the replica's ends, as the replica manager answers an offset out of range
            # (its followers and tools use them).
            return m.FetchPartitionResponse(partition, self.fetch_error, 10, 2, 12, None)
        return m.FetchPartitionResponse(
            partition, 0, 10, 2, 12, b"batch", self.preferred_read_replica
        )

    async def list_offsets(self, req: m.ListOffsetsRequest) -> m.ListOffsetsResponse:
        self.seen.append(req)
        return m.ListOffsetsResponse(
            [
                m.ListOffsetsTopicResponse(
                    t.name,
                    [m.ListOffsetsPartitionResponse(p.partition, 0, 99, 3) for p in t.partitions],
                )
                for t in req.topics
            ]
        )

    async def delete_records(
        self, timeout_ms: int, offsets: dict[TopicPartition, int]
    ) -> dict[TopicPartition, tuple[int, int]]:
        self.seen.append((timeout_ms, offsets))
        return {tp: (0, offset) for tp, offset in offsets.items()}

    def describe_log_dirs(self, partitions: set[TopicPartition] | None) -> list[LogDirDescription]:
        self.seen.append(partitions)
        replicas = [(TopicPartition(SAMPLE_TOPIC, 0), 1234, 0)]
        return [LogDirDescription("/data/1", 0, replicas, 9000, 4000)]

    async def create_topics(
        self, topics: list[NewTopic], timeout_ms: int, validate_only: bool
    ) -> list[TopicResult]:
        self.seen.append((topics, timeout_ms, validate_only))
        return [TopicResult(t.name, 0) for t in topics]

    async def init_producer_id(self) -> int:
        return 4242

    async def delete_topics(self, names: list[str], timeout_ms: int) -> list[TopicResult]:
        self.seen.append((names, timeout_ms))
        return [TopicResult(n, 0) for n in names]

    async def create_partitions(
        self, topics: list[NewPartitions], timeout_ms: int, validate_only: bool
    ) -> list[TopicResult]:
        self.seen.append((topics, timeout_ms, validate_only))
        return [TopicResult(t.name, 37, "no") for t in topics]

    async def describe_configs(
        self, resource_type: int, name: str, keys: list[str] | None, include_synonyms: bool
    ) -> list[DescribedConfig]:
        self.seen.append((resource_type, name, keys, include_synonyms))
        synonym = ConfigSynonym("log.retention.ms", "60000", ConfigSource.STATIC_BROKER_CONFIG)
        return [
            DescribedConfig(
                "retention.ms",
                "60000",
                False,
                ConfigSource.STATIC_BROKER_CONFIG,
                ConfigType.LONG,
                "doc",
                (synonym,),
            )
        ]

    async def incremental_alter_configs(
        self, resource_type: int, name: str, changes: list[AlterableConfig], validate_only: bool
    ) -> None:
        self.seen.append((resource_type, name, changes, validate_only))
        if name == "refused":
            raise InvalidConfigError("no such config")

    async def alter_configs(
        self,
        resource_type: int,
        name: str,
        configs: list[tuple[str, str | None]],
        validate_only: bool,
    ) -> None:
        self.seen.append((resource_type, name, configs, validate_only))
        if name == "refused":
            raise InvalidConfigError("no such config")

    async def offsets_for_leader_epoch(
        self, req: m.OffsetForLeaderEpochRequest
    ) -> m.OffsetForLeaderEpochResponse:
        self.seen.append(req)
        return m.OffsetForLeaderEpochResponse(
            [
                m.OffsetForLeaderTopicResult(
                    t.name, [m.EpochEndOffset(p.partition, 0, 4, 77) for p in t.partitions]
                )
                for t in req.topics
            ]
        )


SERVED = SERVED_VERSIONS
ALL = [(k, v) for k, (lo, hi) in SERVED.items() for v in range(lo, hi + 1)]


def run(body: Any, fake: FakeApis | None = None) -> tuple[Any, FakeApis]:
    fake = fake or FakeApis()
    apis = KafkaApiHandler(fake, "EXTERNAL")  # type: ignore[arg-type]
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
    chunks = asyncio.run(apis.handle(request))
    if chunks is None:
        return None, fake
    frame = b"".join(bytes(c) for c in chunks)  # type: ignore[arg-type]
    correlation_id, _, response = parse_response(frame, key, version)
    assert correlation_id == 5
    return response, fake


def consumer_request(body: Any) -> Any:
    """The sample with what a consumer or producer sends (replica -1, acks all)."""
    changes: dict[str, Any] = {}
    names = {f.name for f in dataclasses.fields(body)}
    if "replica_id" in names:
        changes["replica_id"] = -1
    if "replica_state" in names:  # Fetch v15+
        changes["replica_state"] = dataclasses.replace(body.replica_state, replica_id=-1)
    if "acks" in names:
        changes["acks"] = -1
    if "key_type" in names:  # FindCoordinator: a consumer looks for its group's coordinator
        changes["key_type"] = 0
    if "transactional_id" in names:
        changes["transactional_id"] = None
    if body.__api_key__ in ACL_API_KEYS:
        return acl_request(body)
    return dataclasses.replace(body, **changes)


# DescribeAcls, CreateAcls, DeleteAcls. The sample's code 7 is no resource type, pattern type
# or permission type Kafka 2.8 knows (a request it cannot parse): a client's are these.
ACL_API_KEYS = (29, 30, 31)
ACL_CODES = {
    "resource_type": i8(2),  # TOPIC
    "resource_type_filter": i8(2),
    "resource_pattern_type": i8(3),  # LITERAL
    "pattern_type_filter": i8(3),
    "permission_type": i8(3),  # ALLOW
}


def acl_request(body: Any) -> Any:
    """An ACL request as a client sends it: the sample with codes Kafka knows."""

    def known(entity: Any) -> Any:
        names = {f.name for f in dataclasses.fields(entity)}
        return dataclasses.replace(entity, **{k: v for k, v in ACL_CODES.items() if k in names})

    if hasattr(body, "creations"):
        return dataclasses.replace(body, creations=tuple(known(c) for c in body.creations))
    if hasattr(body, "filters"):
        return dataclasses.replace(body, filters=tuple(known(f) for f in body.filters))
    return known(body)


@pytest.mark.parametrize(("api_key", "version"), ALL)
def test_every_served_version_answers_with_its_own_response(api_key: int, version: int) -> None:
    response, fake = run(consumer_request(sample(request_type(api_key, version))))
    assert response is not None
    if api_key == 0:
        p = response.responses[0].partition_responses[0]
        assert (int(p.error_code), p.base_offset) == (0, 41)
        acks, _timeout_ms, _entries = fake.seen[0]
        assert acks == -1
    elif api_key == 1:
        p = response.responses[0].partitions[0]
        assert (int(p.error_code), p.high_watermark, p.records) == (0, 10, b"batch")
        if version >= 4:
            assert p.last_stable_offset == 10  # no transactions: the HW
    elif api_key == 2:
        p = response.topics[0].partitions[0]
        assert (int(p.error_code), p.offset) == (0, 99)
    elif api_key == 3:
        assert [b.node_id for b in response.brokers] == [1]
        assert response.topics[0].partitions[0].isr_nodes == (1,)
        _topics, _allow_auto_topic_creation, listener = fake.seen[0]
        assert listener == "EXTERNAL"
    elif api_key == 10:
        # No offsets topic yet: it is created, and the client asked to come back.
        codes = (
            [c.error_code for c in response.coordinators] if version >= 4 else [response.error_code]
        )
        assert codes == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
        assert [(t.name, t.configs["cleanup.policy"]) for t in fake.created] == [
            ("__consumer_offsets", "compact")
        ]
    elif api_key == 8:
        # Generation 7 of a group that does not exist.
        codes = [int(p.error_code) for t in response.topics for p in t.partitions]
        assert codes == [ErrorCode.ILLEGAL_GENERATION]
    elif api_key == 9:
        topics = response.groups[0].topics if version >= 8 else response.topics
        assert [(p.partition_index, p.committed_offset) for t in topics for p in t.partitions] == [
            (7, -1)
        ]
    elif api_key == 11:
        # The sample's session timeout (7 ms) is below group.min.session.timeout.ms.
        assert int(response.error_code) == ErrorCode.INVALID_SESSION_TIMEOUT
        assert response.member_id == SAMPLE_TOPIC
    elif api_key in (12, 14):
        assert int(response.error_code) == ErrorCode.UNKNOWN_MEMBER_ID
    elif api_key == 13:
        if version >= 3:
            assert int(response.error_code) == 0
            assert [int(r.error_code) for r in response.members] == [ErrorCode.UNKNOWN_MEMBER_ID]
        else:
            assert int(response.error_code) == ErrorCode.UNKNOWN_MEMBER_ID
    elif api_key == 15:
        assert [(int(g.error_code), g.group_state) for g in response.groups] == [(0, "Dead")]
    elif api_key == 16:
        assert (int(response.error_code), response.groups) == (0, ())
    elif api_key == 42:
        assert [int(r.error_code) for r in response.results] == [ErrorCode.GROUP_ID_NOT_FOUND]
    elif api_key == 47:
        assert int(response.error_code) == ErrorCode.GROUP_ID_NOT_FOUND
    elif api_key == 18:
        assert {k.api_key for k in response.api_keys} == set(SERVED)
    elif api_key == 19:
        assert [int(t.error_code) for t in response.topics] == [0]
    elif api_key == 20:
        # The sample names its topic (v6: and an id, which is not looked up by id).
        named = [r for r in response.responses if r.name is not None]
        assert [int(r.error_code) for r in named] == [0]
    elif api_key == 22:
        assert (int(response.error_code), response.producer_id, response.producer_epoch) == (
            0,
            4242,
            0,
        )
        # With a transactional id: no transactions here.
        transactional = sample(request_type(22, version))
        response, _ = run(transactional)
        assert int(response.error_code) == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif api_key == 23:
        p = response.topics[0].partitions[0]
        assert (int(p.error_code), p.leader_epoch, p.end_offset) == (0, 4, 77)
    elif api_key == 37:
        assert [(int(r.error_code), r.error_message) for r in response.results] == [(37, "no")]
    elif api_key == 32:
        (r,) = response.results
        assert (int(r.error_code), r.resource_name) == (0, SAMPLE_TOPIC)
        (c,) = r.configs
        assert (c.name, c.value, c.read_only, c.config_source) == (
            "retention.ms",
            "60000",
            False,
            4,
        )
        assert [(y.name, y.source) for y in c.synonyms] == [("log.retention.ms", 4)]
        assert fake.seen[0][:2] == (7, SAMPLE_TOPIC)
    elif api_key == 44:
        (r,) = response.responses
        assert (int(r.error_code), r.resource_name) == (0, SAMPLE_TOPIC)
        (change,) = fake.seen[0][2]
        assert change == AlterableConfig(SAMPLE_TOPIC, 7, SAMPLE_TOPIC)
        refused = sample(request_type(44, version))
        resource = dataclasses.replace(refused.resources[0], resource_name="refused")
        response, _ = run(dataclasses.replace(refused, resources=(resource,)))
        assert [int(r.error_code) for r in response.responses] == [ErrorCode.INVALID_CONFIG]
    elif api_key == 33:
        (r,) = response.responses
        assert (int(r.error_code), r.resource_name) == (0, SAMPLE_TOPIC)
        (config,) = fake.seen[0][2]
        assert config == (SAMPLE_TOPIC, SAMPLE_TOPIC)
        refused = sample(request_type(33, version))
        resource = dataclasses.replace(refused.resources[0], resource_name="refused")
        response, _ = run(dataclasses.replace(refused, resources=(resource,)))
        assert [int(r.error_code) for r in response.responses] == [ErrorCode.INVALID_CONFIG]
    elif api_key == 60:
        # The sample asks endpoint type 7 in v1: refused; v0 lists the brokers.
        if version == 0:
            assert [b.broker_id for b in response.brokers] == [1]
            assert response.cluster_id == "mk-cluster-id-22-chars"
        else:
            assert int(response.error_code) == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
    elif api_key == 43:
        results = [
            (r.topic, p.partition_id, int(p.error_code), p.error_message)
            for r in response.replica_election_results
            for p in r.partition_result
        ]
        if version == 0:
            # Preferred (v0's only type): the fake controller finds it needs none.
            expected = (ErrorCode.ELECTION_NOT_NEEDED, "not needed")
        else:
            # The sample's election type 7 is neither PREFERRED nor UNCLEAN: Kafka's
            # ElectionType.valueOf throws, answered UNKNOWN_SERVER_ERROR everywhere.
            assert int(response.error_code) == ErrorCode.UNKNOWN_SERVER_ERROR
            expected = (ErrorCode.UNKNOWN_SERVER_ERROR, None)
        assert results == [(SAMPLE_TOPIC, 7, *expected)]
    elif api_key == 45:
        assert int(response.error_code) == ErrorCode.NONE
        assert [
            (t.name, p.partition_index, int(p.error_code), p.error_message)
            for t in response.responses
            for p in t.partitions
        ] == [(SAMPLE_TOPIC, 7, ErrorCode.INVALID_REPLICA_ASSIGNMENT, "no broker 7")]
    elif api_key == 46:
        assert (int(response.error_code), response.topics) == (ErrorCode.NONE, ())
    elif api_key in (17, 36):
        # Outside a SASL listener's exchange (here: no connection at all).
        assert int(response.error_code) == ErrorCode.ILLEGAL_SASL_STATE
    elif api_key == 50:
        # No SCRAM users yet: each one asked for is not found.
        assert response.results
        assert {int(r.error_code) for r in response.results} == {ErrorCode.RESOURCE_NOT_FOUND}
    elif api_key == 51:
        users = {u.name for u in response_request_users(api_key, version)}
        assert {r.user for r in response.results} == users
    elif api_key == 29:
        # No authorizer: Kafka answers every ACL API SECURITY_DISABLED.
        assert (int(response.error_code), response.error_message, response.resources) == (
            ErrorCode.SECURITY_DISABLED,
            "No Authorizer is configured on the broker",
            (),
        )
    elif api_key == 30:
        assert [(int(r.error_code), r.error_message) for r in response.results] == [
            (ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker.")
        ]
    elif api_key == 31:
        assert [
            (int(r.error_code), r.error_message, r.matching_acls) for r in response.filter_results
        ] == [(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker.", ())]
    elif api_key == 21:
        # The sample names one partition of one topic; the fake's low watermark is the
        # offset asked.
        (t,) = response.topics
        ((_timeout_ms, offsets),) = fake.seen
        assert [(p.partition_index, int(p.error_code), p.low_watermark) for p in t.partitions] == [
            (tp.partition, 0, offset) for tp, offset in offsets.items()
        ]
    elif api_key == 35:
        (d,) = response.results
        assert (int(d.error_code), d.log_dir) == (0, "/data/1")
        assert [
            (t.name, p.partition_index, p.partition_size, p.offset_lag, p.is_future_key)
            for t in d.topics
            for p in t.partitions
        ] == [(SAMPLE_TOPIC, 0, 1234, 0, False)]
        if version >= 4:
            assert (d.total_bytes, d.usable_bytes) == (9000, 4000)
    else:
        raise AssertionError(f"api key {api_key} served but not checked here")


def response_request_users(api_key: int, version: int) -> list[Any]:
    body = sample(request_type(api_key, version))
    return [*body.deletions, *body.upsertions]


@pytest.mark.parametrize("version", range(SERVED[0][0], SERVED[0][1] + 1))
def test_a_produce_refused_as_a_whole_answers_every_partition(version: int) -> None:
    fake = FakeApis()
    fake.produce_error = InvalidRequiredAcksError("acks 2")
    response, _ = run(consumer_request(sample(request_type(0, version))), fake)
    codes = [int(p.error_code) for t in response.responses for p in t.partition_responses]
    assert codes == [ErrorCode.INVALID_REQUIRED_ACKS]


@pytest.mark.parametrize("version", range(SERVED[0][0], SERVED[0][1] + 1))
def test_acks_0_gets_no_response(version: int) -> None:
    body = dataclasses.replace(consumer_request(sample(request_type(0, version))), acks=0)
    response, fake = run(body)
    assert response is None
    [(acks, _timeout_ms, entries)] = fake.seen  # appended all the same
    assert acks == 0 and entries


def test_a_failed_produce_with_acks_0_closes_the_connection() -> None:
    """The producer reads no answer: Kafka closes the connection instead, so the client
    notices the failure and refreshes its metadata."""
    fake = FakeApis()
    fake.produce_error = InvalidRequiredAcksError("acks 2")
    body = dataclasses.replace(consumer_request(sample(request_type(0, 9))), acks=0)
    with pytest.raises(CloseConnection, match=r"with ack=0.*INVALID_REQUIRED_ACKS"):
        run(body, fake)


@pytest.mark.parametrize("version", range(SERVED[1][0], SERVED[1][1] + 1))
def test_a_fetch_from_a_replica_id_is_refused_on_the_client_listener(version: int) -> None:
    body = sample(request_type(1, version))
    if version >= 15:
        body = dataclasses.replace(
            body, replica_state=dataclasses.replace(body.replica_state, replica_id=2)
        )
    else:
        body = dataclasses.replace(body, replica_id=2)
    response, fake = run(body)
    assert [int(p.error_code) for t in response.responses for p in t.partitions] == [
        ErrorCode.INVALID_REQUEST
    ]
    assert fake.seen == []


@pytest.mark.parametrize("version", range(SERVED[1][0], SERVED[1][1] + 1))
def test_a_fetch_as_the_debug_replica_reaches_the_replica_manager_as_one(version: int) -> None:
    """Replica id -2 (Kafka's FetchRequest.DEBUGGING_CONSUMER_ID): a tool reading any
    replica, a follower's too, up to its LEO. It is passed on as it came, not as a
    consumer's -1 (which would be read from leaders only, up to the HW)."""
    body = sample(request_type(1, version))
    if version >= 15:
        body = dataclasses.replace(
            body, replica_state=dataclasses.replace(body.replica_state, replica_id=-2)
        )
    else:
        body = dataclasses.replace(body, replica_id=-2)
    response, fake = run(body)
    assert [int(p.error_code) for t in response.responses for p in t.partitions] == [0]
    (seen,) = fake.seen
    assert seen.replica_id == m.DEBUG_REPLICA_ID


@pytest.mark.parametrize("version", range(SERVED[1][0], SERVED[1][1] + 1))
def test_a_consumers_rack_and_its_preferred_read_replica_from_fetch_v11(version: int) -> None:
    """KIP-392: from v11 a consumer's fetch carries its rack (client metadata: it may read
    followers) and the response the replica it should read from; before, neither."""
    body = sample(request_type(1, version))
    if version >= 15:
        body = dataclasses.replace(
            body, replica_state=dataclasses.replace(body.replica_state, replica_id=-1)
        )
    else:
        body = dataclasses.replace(body, replica_id=-1)
    if version >= 11:
        body = dataclasses.replace(body, rack_id="rack-b")
    fake = FakeApis()
    fake.preferred_read_replica = 3
    response, fake = run(body, fake)
    (client,) = fake.fetch_clients
    (p,) = [p for t in response.responses for p in t.partitions]
    if version >= 11:
        assert client is not None and client.rack_id == "rack-b"
        assert p.preferred_read_replica == 3
    else:
        assert client is None


def out_of_range_fetch(version: int, replica_id: int) -> Any:
    """The one partition of a Fetch answered OFFSET_OUT_OF_RANGE (the replica's HW 10,
    log start 2), sent by `replica_id`."""
    body = sample(request_type(1, version))
    if version >= 15:
        body = dataclasses.replace(
            body, replica_state=dataclasses.replace(body.replica_state, replica_id=replica_id)
        )
    else:
        body = dataclasses.replace(body, replica_id=replica_id)
    fake = FakeApis()
    fake.fetch_error = ErrorCode.OFFSET_OUT_OF_RANGE
    response, _ = run(body, fake)
    (p,) = [p for t in response.responses for p in t.partitions]
    assert p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    return p


@pytest.mark.parametrize("version", range(SERVED[1][0], SERVED[1][1] + 1))
def test_a_fetch_error_carries_unknown_offsets(version: int) -> None:
    """As Kafka's readFromLocalLog: an errored partition's HW, last stable offset and log
    start are -1, whatever the replica knows. librdkafka goes back to the leader after a
    follower's OFFSET_OUT_OF_RANGE only for a fetch offset past the HW it is sent: with
    the follower's own HW, an offset below the follower's log start would be reset."""
    p = out_of_range_fetch(version, -1)
    assert (p.high_watermark, p.last_stable_offset) == (-1, -1)
    if version >= 5:
        assert p.log_start_offset == -1
    assert p.records in (None, b"")


@pytest.mark.parametrize("version", range(SERVED[1][0], SERVED[1][1] + 1))
def test_a_debugging_replica_fetch_error_keeps_the_replicas_ends(version: int) -> None:
    """minikafka's tools read a replica as the debugging replica (-2), which no Kafka
    client sends: below the log start they restart there, from the ends the error carries."""
    p = out_of_range_fetch(version, -2)
    assert p.high_watermark == 10
    if version >= 5:
        assert p.log_start_offset == 2


def test_a_transactional_produce_is_refused() -> None:
    body = dataclasses.replace(sample(request_type(0, 9)), acks=-1, transactional_id="tx")
    response, fake = run(body)
    p = response.responses[0].partition_responses[0]
    assert int(p.error_code) == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert fake.seen == []


def test_metadata_v0_empty_list_means_every_topic_and_v1_means_none() -> None:
    v0 = dataclasses.replace(sample(request_type(3, 0)), topics=())
    _, fake = run(v0)
    assert fake.seen[0][0] is None
    v1 = dataclasses.replace(sample(request_type(3, 1)), topics=())
    _, fake = run(v1)
    assert fake.seen[0][0] == []
    v1_all = dataclasses.replace(sample(request_type(3, 1)), topics=None)
    _, fake = run(v1_all)
    assert fake.seen[0][0] is None


def test_describe_cluster_v1_lists_the_brokers_for_endpoint_type_1() -> None:
    body = dataclasses.replace(sample(request_type(60, 1)), endpoint_type=1)
    response, _ = run(body)
    assert int(response.error_code) == 0
    assert [(b.broker_id, b.host, b.port) for b in response.brokers] == [(1, "broker1", 9092)]
    assert (response.cluster_id, response.controller_id) == ("mk-cluster-id-22-chars", 1)


def test_metadata_carries_the_cluster_id_from_v2() -> None:
    response, _ = run(consumer_request(sample(request_type(3, 2))))
    assert response.cluster_id == "mk-cluster-id-22-chars"


@pytest.mark.parametrize(
    "error",
    [ZkError("connection lost"), InvalidReplicationFactorError("3 > 1 live broker")],
    ids=["zookeeper-away", "too-few-brokers"],
)
def test_find_coordinator_answers_not_available_when_the_offsets_topic_cannot_be_made(
    error: Exception,
) -> None:
    fake = FakeApis()
    fake.create_error = error
    response, _ = run(consumer_request(sample(request_type(10, 4))), fake)
    assert [c.error_code for c in response.coordinators] == [ErrorCode.COORDINATOR_NOT_AVAILABLE]


@pytest.mark.parametrize(
    ("key_type", "code"), [(1, "COORDINATOR_NOT_AVAILABLE"), (7, "INVALID_REQUEST")]
)
def test_find_coordinator_of_a_transaction_or_an_unknown_type(key_type: int, code: str) -> None:
    """No transaction coordinator here; an unknown type is Kafka's CoordinatorType.forId
    failing: INVALID_REQUEST."""
    body = dataclasses.replace(sample(request_type(10, 4)), key_type=key_type)
    response, _ = run(body, FakeApis())
    assert [c.error_code for c in response.coordinators] == [ErrorCode[code]]
    if key_type == 7:
        assert response.coordinators[0].error_message == "Unknown coordinator type received: 7"
