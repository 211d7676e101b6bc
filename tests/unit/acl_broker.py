"""A one-node stand-in Kafka broker on loopback serving what `minikafka acls` asks for
(ApiVersions, Metadata, CreateAcls, DescribeAcls, DeleteAcls, and DescribeConfigs and the
cluster's authorized operations in Metadata, which tell why a DescribeAcls answer is empty) with the answers of a Kafka
2.8 broker: with an AclAuthorizer (the creations validated as minikafka.security.acls
validates them, filters matched with Kafka's `matches`, the ACLs in memory) and a client
allowed everything; without an authorizer (SECURITY_DISABLED, with KafkaApis' messages); or
with one whose principal has no permission on the cluster (CLUSTER_AUTHORIZATION_FAILED).
It lets the command be tested with librdkafka, over Kafka's protocol, before minikafka's
brokers serve the ACL APIs (tests/security/test_acls_cli.py runs it against those)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kio.schema.create_acls.v1 import response as create_v1
from kio.schema.create_acls.v2 import response as create_v2
from kio.schema.delete_acls.v1 import response as delete_v1
from kio.schema.delete_acls.v2 import response as delete_v2
from kio.schema.describe_acls.v1 import response as describe_v1
from kio.schema.describe_acls.v2 import response as describe_v2
from kio.schema.describe_configs.v1 import response as configs_response
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.schema.metadata.v8 import response as metadata_response
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32

from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.kafka.codec import KafkaRequest
from minikafka.security.acls import (
    AclBinding,
    AclBindingFilter,
    AclError,
    validate_acl_creations,
)
from minikafka.security.operations import (
    ResourceType,
    authorized_operations,
)
from tests.unit.stand_in_broker import NO_TIME, StandInBroker

# Kafka 2.8 serves the ACL APIs' versions 0-2 (kio knows 1 and up). Metadata v8 (8-10 carry
# the cluster's authorized operations, which librdkafka's describe_cluster asks for there).
SERVED = {18: (0, 3), 3: (8, 8), 29: (1, 2), 30: (1, 2), 31: (1, 2), 32: (1, 1)}
WITHOUT_ACL_APIS = {18: (0, 3), 3: (8, 8), 32: (1, 1)}
# KafkaApis' messages without an authorizer: DescribeAcls', then CreateAcls' and DeleteAcls'.
NO_AUTHORIZER = "No Authorizer is configured on the broker"
NO_AUTHORIZER_WRITE = "No Authorizer is configured on the broker."
NOT_AUTHORIZED = "Request is not authorized."
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"

_CREATE = {1: create_v1, 2: create_v2}
_DESCRIBE = {1: describe_v1, 2: describe_v2}
_DELETE = {1: delete_v1, 2: delete_v2}


class AclBroker(StandInBroker):
    def __init__(
        self,
        served: dict[int, tuple[int, int]] = SERVED,
        authorizer: bool = True,
        allowed: bool = True,
    ) -> None:
        self.authorizer = authorizer
        self.allowed = allowed  # the client may do everything on the cluster
        self.acls: list[AclBinding] = []  # in the order created
        self.requests: list[Any] = []  # the ACL requests, as received
        super().__init__(served)

    def answer(self, request: KafkaRequest) -> Any:
        if request.api_key == 3:
            return self._metadata(request.body)
        if request.api_key == 32:
            return self._describe_configs(request.body)
        self.requests.append(request.body)
        version = request.api_version
        if request.api_key == 30:
            return self._create(request.body, _CREATE[version])
        if request.api_key == 29:
            return self._describe(request.body, _DESCRIBE[version])
        return self._delete(request.body, _DELETE[version])

    def _error(self, describe: bool = False) -> tuple[ErrorCode, str | None] | None:
        """The error of every ACL request (KafkaApis: the cluster authorization first)."""
        if not self.allowed:
            return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, NOT_AUTHORIZED
        if not self.authorizer:
            return ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER if describe else NO_AUTHORIZER_WRITE
        return None

    def _metadata(self, body: Any) -> Any:
        """No topics; the cluster's authorized operations (KIP-430) if asked for: every one
        the cluster has, or none for a client allowed nothing."""
        asked = body.include_cluster_authorized_operations
        operations = authorized_operations(ResourceType.CLUSTER, asked)
        if asked and not self.allowed:
            operations = 0
        return metadata_response.MetadataResponse(
            throttle_time=NO_TIME,
            brokers=(
                metadata_response.MetadataResponseBroker(
                    node_id=BrokerId(1), host="127.0.0.1", port=i32(self.port)
                ),
            ),
            cluster_id="acl-broker",
            controller_id=BrokerId(1),
            topics=(),
            cluster_authorized_operations=i32(operations),
        )

    def _describe_configs(self, body: Any) -> Any:
        """The broker's authorizer.class.name (all it has), or CLUSTER_AUTHORIZATION_FAILED
        (DESCRIBE_CONFIGS on the cluster) for a client allowed nothing."""
        results = []
        for r in body.resources:
            ok = self.allowed and r.resource_type == 4 and r.resource_name == "1"
            value = AUTHORIZER if self.authorizer else ""
            keys = r.configuration_keys
            results.append(
                configs_response.DescribeConfigsResult(
                    error_code=KioErrorCode.none
                    if ok
                    else KioErrorCode(int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)),
                    error_message=None,
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                    configs=(
                        configs_response.DescribeConfigsResourceResult(
                            name="authorizer.class.name",
                            value=value,
                            read_only=True,
                            config_source=i8(4 if value else 5),
                            is_sensitive=False,
                            synonyms=(),
                        ),
                    )
                    if ok and (not keys or "authorizer.class.name" in keys)
                    else (),
                )
            )
        return configs_response.DescribeConfigsResponse(
            throttle_time=NO_TIME, results=tuple(results)
        )

    def _create(self, body: Any, schema: Any) -> Any:
        error = self._error()
        if error is not None:
            results = [error for _ in body.creations]
        else:
            creations = [
                AclBindingFilter.from_codes(
                    c.resource_type,
                    c.resource_name,
                    c.resource_pattern_type,
                    c.principal,
                    c.host,
                    c.operation,
                    c.permission_type,
                )
                for c in body.creations
            ]
            results = []
            for r in validate_acl_creations(creations):
                if isinstance(r, AclError):
                    results.append((r.error_code, r.message))
                    continue
                if r not in self.acls:
                    self.acls.append(r)
                results.append((ErrorCode.NONE, None))
        return schema.CreateAclsResponse(
            throttle_time=NO_TIME,
            results=tuple(
                schema.AclCreationResult(error_code=KioErrorCode(int(code)), error_message=message)
                for code, message in results
            ),
        )

    def _describe(self, body: Any, schema: Any) -> Any:
        error = self._error(describe=True)
        if error is not None:
            code, message = error
            return schema.DescribeAclsResponse(
                throttle_time=NO_TIME,
                error_code=KioErrorCode(int(code)),
                error_message=message,
                resources=(),
            )
        f = AclBindingFilter.from_codes(
            body.resource_type_filter,
            body.resource_name_filter,
            body.pattern_type_filter,
            body.principal_filter,
            body.host_filter,
            body.operation,
            body.permission_type,
        )
        by_pattern: dict[Any, list[AclBinding]] = {}
        for b in self.acls:
            if f.matches(b):
                by_pattern.setdefault(b.pattern, []).append(b)
        return schema.DescribeAclsResponse(
            throttle_time=NO_TIME,
            error_code=KioErrorCode.none,
            error_message=None,
            resources=tuple(
                schema.DescribeAclsResource(
                    resource_type=i8(pattern.resource_type.value),
                    resource_name=pattern.name,
                    pattern_type=i8(pattern.pattern_type.value),
                    acls=tuple(
                        schema.AclDescription(
                            principal=b.entry.principal,
                            host=b.entry.host,
                            operation=i8(b.entry.operation.value),
                            permission_type=i8(b.entry.permission_type.value),
                        )
                        for b in bindings
                    ),
                )
                for pattern, bindings in by_pattern.items()
            ),
        )

    def _delete(self, body: Any, schema: Any) -> Any:
        results = []
        error = self._error()
        for raw in body.filters:
            if error is not None:
                code, message = error
                results.append(
                    schema.DeleteAclsFilterResult(
                        error_code=KioErrorCode(int(code)),
                        error_message=message,
                        matching_acls=(),
                    )
                )
                continue
            f = AclBindingFilter.from_codes(
                raw.resource_type_filter,
                raw.resource_name_filter,
                raw.pattern_type_filter,
                raw.principal_filter,
                raw.host_filter,
                raw.operation,
                raw.permission_type,
            )
            deleted = [b for b in self.acls if f.matches(b)]
            self.acls = [b for b in self.acls if b not in deleted]
            results.append(
                schema.DeleteAclsFilterResult(
                    error_code=KioErrorCode.none,
                    error_message=None,
                    matching_acls=tuple(
                        schema.DeleteAclsMatchingAcl(
                            error_code=KioErrorCode.none,
                            error_message=None,
                            resource_type=i8(b.pattern.resource_type.value),
                            resource_name=b.pattern.name,
                            pattern_type=i8(b.pattern.pattern_type.value),
                            principal=b.entry.principal,
                            host=b.entry.host,
                            operation=i8(b.entry.operation.value),
                            permission_type=i8(b.entry.permission_type.value),
                        )
                        for b in deleted
                    ),
                )
            )
        return schema.DeleteAclsResponse(throttle_time=NO_TIME, filter_results=tuple(results))


@contextmanager
def acl_broker(
    served: dict[int, tuple[int, int]] = SERVED, authorizer: bool = True, allowed: bool = True
) -> Iterator[AclBroker]:
    """An AclBroker serving `served` (api key -> versions), closed on exit."""
    broker = AclBroker(served, authorizer, allowed)
    try:
        yield broker
    finally:
        broker.close()
