"""ACLs allow exactly what they grant, on a SASL_SSL cluster whose authorizer is Kafka's
AclAuthorizer (`cluster up --security sasl_ssl` turns it on, the admin user a super user).
Unmodified clients (confluent-kafka) as users with different ACLs: a producer without
WRITE is refused with TOPIC_AUTHORIZATION_FAILED, a consumer without READ on its group with
GROUP_AUTHORIZATION_FAILED, a user sees in Metadata only the topics it may DESCRIBE, and a
prefixed ACL covers topics created after it."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    ElectionType,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from minikafka.client.kafka_wire import KafkaConnection, NetworkError
from minikafka.client.wire_security import wire_security
from minikafka.cluster import LocalCluster
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.kafka.codec import request_type
from minikafka.server.kafka_api.handler import SERVED_VERSIONS
from tests.cluster.conftest import started_cluster
from tests.cluster.helpers import run_cli
from tests.security.helpers import grant
from tests.unit import test_kafka_codec

pytestmark = pytest.mark.timeout(300)

USERS = ("carol", "dave", "erin", "frank")
LITERAL, PREFIXED = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED


def acl(
    rt: ResourceType, name: str, user: str, op: AclOperation, pattern: Any = LITERAL
) -> AclBinding:
    return AclBinding(rt, name, pattern, f"User:{user}", "*", op, AclPermissionType.ALLOW)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with started_cluster(tmp_path_factory.mktemp("authz"), security="sasl_ssl") as c:
        admin = AdminClient(c.client_config())
        for f in admin.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion(
                    u, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), f"{u}-pw".encode()
                )
                for u in USERS
            ]
        ).values():
            f.result(30)
        for f in admin.create_topics([NewTopic("orders", 3, 3)]).values():
            f.result(60)
        grant(
            c,
            # carol: a producer of orders.
            acl(ResourceType.TOPIC, "orders", "carol", AclOperation.WRITE),
            acl(ResourceType.TOPIC, "orders", "carol", AclOperation.DESCRIBE),
            # dave: may read orders, but no group.
            acl(ResourceType.TOPIC, "orders", "dave", AclOperation.READ),
            # erin: everything on topics and groups starting with logs-.
            acl(ResourceType.TOPIC, "logs-", "erin", AclOperation.ALL, PREFIXED),
            acl(ResourceType.GROUP, "logs-", "erin", AclOperation.ALL, PREFIXED),
        )
        yield c


def as_user(cluster: LocalCluster, user: str, **extra: Any) -> dict[str, Any]:
    admin = cluster.client_config()
    return {
        "bootstrap.servers": cluster.bootstrap_servers,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": f"{user}-pw",
        "ssl.ca.location": admin["ssl.ca.location"],
        **extra,
    }


def produce(cluster: LocalCluster, user: str, topic: str, n: int = 20) -> list[KafkaError | None]:
    producer = Producer(as_user(cluster, user, acks="all", **{"message.timeout.ms": 20000}))
    errors: list[KafkaError | None] = []
    for i in range(n):
        producer.produce(topic, b"v%d" % i, on_delivery=lambda err, _m: errors.append(err))
    producer.flush(60)
    return errors


def consume_error_or_values(
    cluster: LocalCluster, user: str, topic: str, group: str, expected: int
) -> tuple[int | None, list[bytes]]:
    """The first error code the consumer reports, or the values it read."""
    consumer = Consumer(
        as_user(cluster, user, **{"group.id": group, "auto.offset.reset": "earliest"})
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < expected and time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                return msg.error().code(), got
            got.append(msg.value())
    finally:
        consumer.close()
    return None, got


def test_a_producer_with_write_is_served_and_one_without_is_refused(
    cluster: LocalCluster,
) -> None:
    assert produce(cluster, "carol", "orders") == [None] * 20
    refused = produce(cluster, "frank", "orders")
    assert refused and all(
        e is not None and e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED for e in refused
    ), refused


def test_a_consumer_without_read_on_its_group_is_refused(cluster: LocalCluster) -> None:
    code, _ = consume_error_or_values(cluster, "dave", "orders", "dave-group", 20)
    assert code == KafkaError.GROUP_AUTHORIZATION_FAILED
    grant(cluster, acl(ResourceType.GROUP, "dave-group", "dave", AclOperation.READ))
    code, values = consume_error_or_values(cluster, "dave", "orders", "dave-group", 20)
    assert code is None and len(values) >= 20


def test_metadata_shows_only_the_topics_a_user_may_describe(cluster: LocalCluster) -> None:
    def topics(user: str) -> set[str]:
        md = AdminClient(as_user(cluster, user)).list_topics(timeout=30)
        return {t for t in md.topics if not t.startswith("__")}

    assert "orders" in topics("carol")
    assert "orders" not in topics("frank")


def test_a_prefixed_acl_covers_topics_created_after_it(cluster: LocalCluster) -> None:
    admin = AdminClient(cluster.client_config())
    for f in admin.create_topics([NewTopic("logs-new", 1, 3)]).values():
        f.result(60)
    assert produce(cluster, "erin", "logs-new") == [None] * 20
    code, values = consume_error_or_values(cluster, "erin", "logs-new", "logs-readers", 20)
    assert code is None and sorted(values) == sorted(b"v%d" % i for i in range(20))
    # Not beyond the prefix.
    assert all(e is not None for e in produce(cluster, "erin", "orders", 3))


# --- the admin tools over the SASL_SSL listener, as users with and without ACLs -----------


def command_config(cluster: LocalCluster, path: Path, user: str | None) -> Path:
    """A client properties file for `user` (None: the admin)."""
    settings = cluster.client_config() if user is None else as_user(cluster, user)
    path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    return path


def tool(cluster: LocalCluster, config: Path, *args: str) -> CompletedProcess[str]:
    return run_cli(
        *args, "--bootstrap-server", cluster.bootstrap_servers, "--command-config", str(config)
    )


def test_delete_records_log_dirs_and_configs_need_their_acls(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    admin_props = command_config(cluster, tmp_path / "admin.properties", None)
    dave = command_config(cluster, tmp_path / "dave.properties", "dave")  # READ on orders
    erin = command_config(cluster, tmp_path / "erin.properties", "erin")  # ALL on logs-*
    admin = AdminClient(cluster.client_config())
    for f in admin.create_topics([NewTopic("logs-trimmed", 1, 3)]).values():
        f.result(60)
    assert produce(cluster, "erin", "logs-trimmed", 10) == [None] * 10

    spec = tmp_path / "offsets.json"
    spec.write_text(
        json.dumps(
            {
                "partitions": [
                    {"topic": "orders", "partition": 0, "offset": 0},
                    {"topic": "logs-trimmed", "partition": 0, "offset": 4},
                ]
            }
        )
    )
    refused = tool(cluster, dave, "delete-records", "--offset-json-file", str(spec))
    assert refused.returncode == 1
    assert refused.stdout.splitlines()[2:] == [
        "partition: orders-0\terror: org.apache.kafka.common.errors."
        "TopicAuthorizationException: Topic authorization failed.",
        "partition: logs-trimmed-0\terror: org.apache.kafka.common.errors."
        "TopicAuthorizationException: Topic authorization failed.",
    ]
    spec.write_text(
        json.dumps({"partitions": [{"topic": "logs-trimmed", "partition": 0, "offset": 4}]})
    )
    done = tool(cluster, erin, "delete-records", "--offset-json-file", str(spec))
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.splitlines()[-1] == "partition: logs-trimmed-0\tlow_watermark: 4"

    # DESCRIBE on the cluster: the admin sees every replica, erin no log dir (Kafka 2.8's
    # answer to a principal without it: an empty list).
    listed = tool(cluster, admin_props, "log-dirs", "--describe", "--topic-list", "orders")
    assert listed.returncode == 0, (listed.stdout, listed.stderr)
    doc = json.loads(listed.stdout.splitlines()[2])
    assert {
        p["partition"] for b in doc["brokers"] for d in b["logDirs"] for p in d["partitions"]
    } == {
        "orders-0",
        "orders-1",
        "orders-2",
    }
    listed = tool(cluster, erin, "log-dirs", "--describe")
    assert listed.returncode == 0, (listed.stdout, listed.stderr)
    assert [b["logDirs"] for b in json.loads(listed.stdout.splitlines()[2])["brokers"]] == [
        [],
        [],
        [],
    ]

    # DESCRIBE_CONFIGS on the topic: dave's READ does not imply it.
    described = tool(cluster, admin_props, "configs", "--topic", "orders", "--describe")
    assert described.stdout == "Dynamic configs for topic orders are:\n", described.stderr
    refused = tool(cluster, dave, "configs", "--topic", "orders", "--describe")
    assert refused.returncode == 1
    assert "TOPIC_AUTHORIZATION_FAILED" in refused.stderr


# --- a user without ACLs, every API ------------------------------------------------------


def _sample_of_orders(entity_type: type) -> Any:
    """tests/unit/test_kafka_codec.py's sample request, every string "orders": the topic,
    group, transactional id and user it names are real ones, so each request asks for
    something that exists."""
    original = test_kafka_codec._sample_primitive

    def primitive(kind: type) -> Any:
        return "orders" if issubclass(kind, str) else original(kind)

    test_kafka_codec._sample_primitive = primitive
    try:
        return test_kafka_codec.sample(entity_type)
    finally:
        test_kafka_codec._sample_primitive = original


def _error_codes(entity: Any) -> set[int]:
    """Every error code anywhere in a response."""
    if dataclasses.is_dataclass(entity):
        codes: set[int] = set()
        for f in dataclasses.fields(entity):
            value = getattr(entity, f.name)
            codes |= {int(value)} if f.name == "error_code" else _error_codes(value)
        return codes
    if isinstance(entity, tuple):
        return set().union(*(_error_codes(v) for v in entity)) if entity else set()
    return set()


def _zookeeper_state(cluster: LocalCluster) -> dict[str, bytes | None]:
    """Every znode's path, and the data of those a request could change (topics, configs,
    ACLs, admin requests); a partition's state is left out (an ISR may move on its own).
    Read anonymously: what ZooKeeper keeps from everyone reads as None."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoAuthError, NoNodeError

    zk = KazooClient(hosts=cluster.zookeeper_connect)
    zk.start(30)
    state: dict[str, bytes | None] = {}
    try:
        pending = ["/"]
        while pending:
            path = pending.pop()
            if path == "/zookeeper":
                continue
            try:
                data, _ = zk.get(path)
                children = zk.get_children(path)
            except NoAuthError:
                state[path] = None
                continue
            except NoNodeError:
                continue
            keep = path.startswith(("/brokers/topics", "/config", "/kafka-acl", "/admin"))
            state[path] = data if keep and not path.endswith("/state") else b""
            pending += [f"{path.rstrip('/')}/{child}" for child in children]
    finally:
        zk.stop()
        zk.close()
    return state


def test_a_user_without_acls_trying_every_api_changes_nothing(cluster: LocalCluster) -> None:
    """frank, authenticated but granted nothing, sends every API the brokers serve (its
    latest version, every field set, every name "orders"): each is answered with Kafka's
    errors, or an empty answer where Kafka filters (ListGroups), or the connection is
    closed (the ACL APIs' sample filters use a resource type Kafka 2.8 cannot parse); the
    ZooKeeper state, the topic's data and the groups are as they were, every broker up."""
    admin = AdminClient(cluster.client_config())
    watermarks = Consumer({**cluster.client_config(), "group.id": "watermarks"})

    def ends() -> list[tuple[int, int]]:
        return [
            watermarks.get_watermark_offsets(TopicPartition("orders", p), timeout=30)
            for p in range(3)
        ]

    def groups() -> set[str]:
        return {g.group_id for g in admin.list_consumer_groups().result(30).valid}

    pids = {b: cluster.pid(b) for b in cluster.broker_ids}
    zookeeper_before, ends_before, groups_before = _zookeeper_state(cluster), ends(), groups()
    security = wire_security(
        {**cluster.client_config(), "sasl.username": "frank", "sasl.password": "frank-pw"}
    )
    host, port = cluster.broker_address(1)

    async def every_api() -> dict[str, set[int] | None]:
        outcomes: dict[str, set[int] | None] = {}
        for key, (_, latest) in sorted(SERVED_VERSIONS.items()):
            request = _sample_of_orders(request_type(key, latest))
            name = type(request).__name__
            connection = KafkaConnection(host, port, client_id="frank", security=security)
            try:
                outcomes[name] = _error_codes(await connection.call(request, 30))
            except NetworkError:
                outcomes[name] = None  # closed
            finally:
                await connection.close()
        return outcomes

    outcomes = asyncio.run(every_api())
    closed = {name for name, codes in outcomes.items() if codes is None}
    assert closed == {"DescribeAclsRequest", "CreateAclsRequest", "DeleteAclsRequest"}, outcomes
    # Answered without an error: only what Kafka lets anyone ask, with nothing in it.
    unrefused = {name for name, codes in outcomes.items() if codes == {0}}
    assert unrefused == {"ApiVersionsRequest", "ListGroupsRequest"}, outcomes
    for name, codes in outcomes.items():
        if codes is not None and name not in unrefused:
            assert codes - {0}, (name, codes)
    authorization = {
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    }
    for name in ("Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch",
                 "JoinGroup", "CreateTopics", "DeleteTopics", "DeleteGroups",
                 "DescribeUserScramCredentials", "AlterUserScramCredentials",
                 "ElectLeaders", "DeleteRecords", "DescribeLogDirs"):  # fmt: skip
        codes = outcomes[f"{name}Request"]
        assert codes is not None and codes & authorization, (name, codes)

    assert {b: cluster.pid(b) for b in cluster.broker_ids} == pids
    assert all(cluster.is_alive(b) for b in cluster.broker_ids)
    assert _zookeeper_state(cluster) == zookeeper_before
    assert ends() == ends_before
    assert groups() == groups_before and "orders" not in groups_before
    watermarks.close()
    for b in cluster.broker_ids:
        log = cluster.broker_log_path(b).read_text()
        assert "Traceback" not in log, log[log.index("Traceback") - 2000 :][:4000]


def test_leader_elections_need_alter_on_the_cluster(cluster: LocalCluster, tmp_path: Path) -> None:
    """ElectLeaders needs ALTER on the cluster: the admin (a super user) may, frank may not
    (CLUSTER_AUTHORIZATION_FAILED, which `leader-election` reports as Kafka's tool does)."""
    asked = [TopicPartition("orders", p) for p in range(3)]
    admin = AdminClient(cluster.client_config())  # kept: a destroyed client fails its futures
    allowed = admin.elect_leaders(ElectionType.PREFERRED, asked)
    # Every preferred replica leads already (nobody moved them).
    assert {
        (tp.partition, None if e is None else e.code()) for tp, e in allowed.result(60).items()
    } == {(p, KafkaError.ELECTION_NOT_NEEDED) for p in range(3)}
    as_frank = AdminClient(as_user(cluster, "frank"))
    refused = as_frank.elect_leaders(ElectionType.PREFERRED, asked)
    with pytest.raises(KafkaException) as e:
        refused.result(60)
    assert e.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED

    frank = tmp_path / "frank.properties"
    frank.write_text(
        "".join(
            f"{k}={v}\n" for k, v in as_user(cluster, "frank").items() if k != "bootstrap.servers"
        )
    )
    command = ["leader-election", "--admin.config", str(frank), "--election-type", "preferred"]
    command += ["--bootstrap-server", cluster.bootstrap_servers, "--all-topic-partitions"]
    result = subprocess.run(
        [sys.executable, "-m", "minikafka", *command], capture_output=True, text=True, timeout=120
    )
    assert (result.returncode, result.stdout) == (1, "Not authorized to perform leader election\n")


def test_a_refused_produce_with_acks_0_closes_the_connection(cluster: LocalCluster) -> None:
    """acks=0: no answer is read, so Kafka closes the connection on a failure (here
    TOPIC_AUTHORIZATION_FAILED) for the producer to notice; one that succeeds keeps it."""
    from kio.schema.produce.v9.request import (
        PartitionProduceData,
        ProduceRequest,
        TopicProduceData,
    )
    from kio.schema.types import TopicName
    from kio.static.primitive import i16, i32, i32Timedelta

    from minikafka.common import TopicPartition as Partition
    from minikafka.protocol.kafka.client_codec import request_frame
    from minikafka.server.listener_security import sasl_client_authenticate
    from minikafka.storage.record_batch import build_batch

    state = cluster.zk_client().get_partition_state(Partition("orders", 0))
    assert state is not None
    host, port = cluster.broker_address(state.leader)  # a follower would refuse it too
    ca = cluster.client_config()["ssl.ca.location"]

    def produce(topic: str) -> ProduceRequest:
        data = PartitionProduceData(index=i32(0), records=build_batch([b"x"]))
        return ProduceRequest(
            transactional_id=None,
            acks=i16(0),
            timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
            topic_data=(TopicProduceData(name=TopicName(topic), partition_data=(data,)),),
        )

    async def closed_after(user: str, topic: str) -> bool:
        context = ssl.create_default_context(cafile=ca)
        reader, writer = await asyncio.open_connection(host, port, ssl=context)
        try:
            await sasl_client_authenticate("SCRAM-SHA-512", user, f"{user}-pw", reader, writer)
            writer.write(request_frame(produce(topic), 10, user))
            await writer.drain()
            try:
                return await asyncio.wait_for(reader.read(1), 5) == b""
            except TimeoutError:
                return False  # still open, nothing to read: acks=0's silence
        finally:
            writer.close()

    assert asyncio.run(closed_after("frank", "orders"))
    assert not asyncio.run(closed_after("carol", "orders"))
