"""DescribeAcls, CreateAcls and DeleteAcls as Kafka 2.8's KafkaApis answers them
(server/kafka_api/acls.py), with an ACL authorizer over an in-memory ZooKeeper: the cluster
authorization each needs, SECURITY_DISABLED without an authorizer, each creation's error,
describe filters, deletions reported under their filters, and the requests Kafka cannot
parse. tests/unit/test_kafka_api_handlers.py checks every version's frame; tests/security/
test_acls.py runs them on a real cluster."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from minikafka.protocol.errors import ErrorCode
from minikafka.security.acls import MalformedAclRequestError
from minikafka.security.authorizer import AclAuthorizer
from minikafka.security.operations import AclOperation, AclPermissionType, PatternType, ResourceType
from minikafka.security.principal import KafkaPrincipal
from minikafka.server.acl_store import AclStore
from minikafka.server.authorization import RequestAuthorizer
from minikafka.server.kafka_api.acls import AclApis
from minikafka.server.kafka_api.models.acls import (
    AclCreation,
    CreateAclsRequest,
    DeleteAclsFilter,
    DeleteAclsRequest,
    DescribeAclsRequest,
)
from minikafka.server.kafka_api.registry import RequestContext
from minikafka.server.session import ConnectionSession, ListenerSecurity
from tests.unit.test_acl_store import MemoryAclZk

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


@dataclass
class Services:
    """The part of BrokerServices the ACL APIs use."""

    authorizer: RequestAuthorizer
    acl_store: AclStore | None
    zk: MemoryAclZk = field(default_factory=MemoryAclZk)


async def services(authorizer: bool = True) -> Services:
    if not authorizer:
        return Services(RequestAuthorizer(None), None)
    zk = MemoryAclZk()
    store = AclStore(zk, AclAuthorizer(super_users=["User:admin"]), backoff_s=lambda: 0.0)
    await store.load()
    return Services(RequestAuthorizer(store.authorizer), store, zk)


def ctx(user: str = "admin", version: int = 2) -> RequestContext:
    session = ConnectionSession(
        "SASL_SSL",
        ListenerSecurity(protocol="SASL_SSL"),
        "/10.0.0.7",
        KafkaPrincipal.user(user),
    )
    return RequestContext(
        api_version=version,
        correlation_id=1,
        client_id="c",
        client_host="/10.0.0.7",
        listener="SASL_SSL",
        session=session,
    )


def creation(
    name: str = "orders",
    rt: ResourceType = TOPIC,
    pattern_type: PatternType = LITERAL,
    principal: str = "User:alice",
    operation: AclOperation = AclOperation.READ,
    permission: AclPermissionType = ALLOW,
    host: str = "*",
) -> AclCreation:
    return AclCreation(
        resource_type=rt,
        resource_name=name,
        resource_pattern_type=pattern_type,
        principal=principal,
        host=host,
        operation=operation,
        permission_type=permission,
    )


def describe_filter(
    name: str | None = None,
    rt: ResourceType = ResourceType.ANY,
    pattern_type: PatternType = PatternType.ANY,
    principal: str | None = None,
) -> DescribeAclsRequest:
    return DescribeAclsRequest(
        resource_type_filter=rt,
        resource_name_filter=name,
        pattern_type_filter=pattern_type,
        principal_filter=principal,
        host_filter=None,
        operation=AclOperation.ANY,
        permission_type=AclPermissionType.ANY,
    )


def delete_filter(
    name: str | None = None,
    rt: ResourceType = ResourceType.ANY,
    pattern_type: PatternType = PatternType.ANY,
    principal: str | None = None,
) -> DeleteAclsFilter:
    d = describe_filter(name, rt, pattern_type, principal)
    return DeleteAclsFilter(
        resource_type_filter=d.resource_type_filter,
        resource_name_filter=d.resource_name_filter,
        pattern_type_filter=d.pattern_type_filter,
        principal_filter=d.principal_filter,
        host_filter=d.host_filter,
        operation=d.operation,
        permission_type=d.permission_type,
    )


async def create(
    apis: AclApis, *creations: AclCreation, user: str = "admin"
) -> list[tuple[int, str | None]]:
    response = await apis.create_acls(CreateAclsRequest(creations=creations), ctx(user))
    return [(r.error_code, r.error_message) for r in response.results]


async def test_without_an_authorizer_every_acl_api_answers_security_disabled() -> None:
    apis = AclApis(await services(authorizer=False))  # type: ignore[arg-type]
    assert (
        await create(apis, creation(), creation("x"))
        == [(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker.")] * 2
    )
    described = await apis.describe_acls(describe_filter(), ctx())
    assert (described.error_code, described.error_message) == (
        ErrorCode.SECURITY_DISABLED,
        "No Authorizer is configured on the broker",
    )
    deleted = await apis.delete_acls(DeleteAclsRequest(filters=(delete_filter(),)), ctx())
    assert [(r.error_code, r.error_message) for r in deleted.filter_results] == [
        (ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker.")
    ]


async def test_each_acl_api_needs_its_operation_on_the_cluster() -> None:
    s = await services()
    apis = AclApis(s)  # type: ignore[arg-type]
    denied = (
        "Request Request(session=Session(User:alice,/10.0.0.7), listenerName="
        "ListenerName(SASL_SSL), securityProtocol=SASL_SSL) is not authorized."
    )
    assert await create(apis, creation(), user="alice") == [
        (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, denied)
    ]
    described = await apis.describe_acls(describe_filter(), ctx("alice"))
    assert (described.error_code, described.error_message, described.resources) == (
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        denied,
        (),
    )
    deleted = await apis.delete_acls(DeleteAclsRequest(filters=(delete_filter(),)), ctx("alice"))
    assert [(r.error_code, r.error_message) for r in deleted.filter_results] == [
        (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, denied)
    ]
    assert s.zk.writes == []
    # The admin (a super user) lets alice ALTER the cluster, which implies DESCRIBE.
    assert await create(apis, creation("kafka-cluster", CLUSTER, operation=AclOperation.ALTER)) == [
        (ErrorCode.NONE, None)
    ]
    assert await create(apis, creation(), user="alice") == [(ErrorCode.NONE, None)]
    described = await apis.describe_acls(describe_filter(rt=TOPIC), ctx("alice"))
    assert described.error_code == ErrorCode.NONE
    assert [r.resource_name for r in described.resources] == ["orders"]


async def test_each_creation_gets_kafkas_error() -> None:
    apis = AclApis(await services())  # type: ignore[arg-type]
    assert await create(
        apis,
        creation(),
        creation("other-cluster", CLUSTER, operation=AclOperation.ALTER),
        creation(""),
        # Not Type:name: the write of "payments" fails, and with it every creation on it.
        creation("payments", principal="alice"),
        creation("payments", operation=AclOperation.WRITE),
        # What Kafka 2.8 takes: READ on the cluster, any host text, a prefix named "*".
        creation("kafka-cluster", CLUSTER),
        creation("*", pattern_type=PREFIXED, host="not an address"),
    ) == [
        (ErrorCode.NONE, None),
        (
            ErrorCode.INVALID_REQUEST,
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        (ErrorCode.INVALID_REQUEST, "Invalid empty resource name"),
        (ErrorCode.UNKNOWN_SERVER_ERROR, None),
        (ErrorCode.UNKNOWN_SERVER_ERROR, None),
        (ErrorCode.NONE, None),
        (ErrorCode.NONE, None),
    ]
    # An ANY or MATCH field fails every creation of the request (Kafka's handler throws).
    assert (
        await create(apis, creation(), creation(pattern_type=PatternType.MATCH))
        == [(ErrorCode.UNKNOWN_SERVER_ERROR, None)] * 2
    )


async def test_describe_answers_the_matching_acls_by_pattern() -> None:
    apis = AclApis(await services())  # type: ignore[arg-type]
    await create(
        apis,
        creation("orders"),
        creation("orders", principal="User:bob", permission=DENY),
        creation("ord", pattern_type=PREFIXED),
        creation("*", principal="User:bob"),
        creation("app", GROUP),
    )

    async def described(**kwargs: object) -> list[tuple[int, str, int, list[str]]]:
        response = await apis.describe_acls(describe_filter(**kwargs), ctx())  # type: ignore[arg-type]
        assert response.error_code == ErrorCode.NONE
        return [
            (r.resource_type, r.resource_name, r.pattern_type, [a.principal for a in r.acls])
            for r in response.resources
        ]

    assert len(await described()) == 4
    # MATCH: every pattern that applies to the topic "orders".
    assert await described(name="orders", rt=TOPIC, pattern_type=PatternType.MATCH) == [
        (TOPIC, "*", LITERAL, ["User:bob"]),
        (TOPIC, "orders", LITERAL, ["User:alice", "User:bob"]),
        (TOPIC, "ord", PREFIXED, ["User:alice"]),
    ]
    # ANY: the name exactly, LITERAL or PREFIXED.
    assert await described(name="ord", rt=TOPIC) == [(TOPIC, "ord", PREFIXED, ["User:alice"])]
    assert await described(principal="User:bob") == [
        (TOPIC, "*", LITERAL, ["User:bob"]),
        (TOPIC, "orders", LITERAL, ["User:bob"]),
    ]
    assert await described(rt=GROUP) == [(GROUP, "app", LITERAL, ["User:alice"])]


async def test_delete_reports_the_deleted_acls_under_their_filters() -> None:
    s = await services()
    apis = AclApis(s)  # type: ignore[arg-type]
    await create(apis, creation("orders"), creation("orders", principal="User:bob"))
    response = await apis.delete_acls(
        DeleteAclsRequest(
            filters=(
                delete_filter(principal="User:bob"),
                delete_filter("orders", TOPIC, LITERAL),
                delete_filter("nothing", TOPIC),
            )
        ),
        ctx(),
    )
    got = [
        [
            (m.error_code, m.resource_type, m.resource_name, m.pattern_type, m.principal)
            for m in r.matching_acls
        ]
        for r in response.filter_results
    ]
    assert got == [
        [(0, TOPIC, "orders", LITERAL, "User:bob")],
        [(0, TOPIC, "orders", LITERAL, "User:alice")],
        [],
    ]
    assert {r.error_code for r in response.filter_results} == {0}
    assert "/kafka-acl/Topic/orders" not in s.zk.znodes


async def test_what_kafka_cannot_parse_closes_the_connection_before_any_check() -> None:
    # Even without an authorizer, and from a principal that may do nothing.
    for s in (await services(authorizer=False), await services()):
        apis = AclApis(s)  # type: ignore[arg-type]
        unknown_type = creation(rt=ResourceType.UNKNOWN)
        with pytest.raises(MalformedAclRequestError, match="unknown elements"):
            await apis.create_acls(CreateAclsRequest(creations=(unknown_type,)), ctx("alice"))
        bad = dataclasses.replace(describe_filter(), permission_type=9)
        with pytest.raises(MalformedAclRequestError, match="UNKNOWN"):
            await apis.describe_acls(bad, ctx("alice"))
        with pytest.raises(MalformedAclRequestError, match="UNKNOWN"):
            await apis.delete_acls(
                DeleteAclsRequest(filters=(delete_filter(pattern_type=PatternType.UNKNOWN),)),
                ctx("alice"),
            )
