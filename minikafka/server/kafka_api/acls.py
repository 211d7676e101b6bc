"""DescribeAcls, CreateAcls and DeleteAcls, as Kafka 2.8's KafkaApis answers them
(handleDescribeAcls, handleCreateAcls, handleDeleteAcls) with its AclAuthorizer behind
(server/acl_store.py).

In Kafka's order:
1. a request Kafka cannot parse (an UNKNOWN code, a pattern type version 0 lacks) closes
   the connection (security/acls.py: `check_create_acls_request`,
   `check_acl_filters_request`);
2. DescribeAcls needs DESCRIBE on the cluster, CreateAcls and DeleteAcls ALTER:
   CLUSTER_AUTHORIZATION_FAILED otherwise, for the whole request (every creation, every
   filter). Without an authorizer everything is allowed, so this never fails there;
3. without an authorizer (authorizer.class.name empty), SECURITY_DISABLED: "No Authorizer
   is configured on the broker" (with a final "." for CreateAcls and DeleteAcls);
4. CreateAcls: each creation's error from `validate_acl_creations`, or from writing its
   pattern's znode; DeleteAcls: each deleted ACL under the first filter that matched it;
   DescribeAcls: the cached ACLs the filter matches, by pattern.

Versions: 1-2 of each. Kafka 2.8 serves 0-2; kio has no schema for v0 (KIP-896 dropped
it from Kafka 4). Version 3 only adds the USER resource type of later Kafkas, which a 2.8
broker does not know.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from minikafka.protocol.errors import ErrorCode
from minikafka.security.acls import (
    AclBinding,
    AclBindingFilter,
    AclError,
    ResourcePattern,
    check_acl_filters_request,
    check_create_acls_request,
    validate_acl_creations,
)
from minikafka.security.operations import AclOperation
from minikafka.security.principal import ANONYMOUS
from minikafka.server.broker_services import BrokerServices
from minikafka.server.kafka_api.models.acls import (
    AclCreationResult,
    AclDescription,
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsFilter,
    DeleteAclsFilterResult,
    DeleteAclsMatchingAcl,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResource,
    DescribeAclsResponse,
)
from minikafka.server.kafka_api.registry import ApiFamily, RequestContext, api

DESCRIBE_ACLS: Final = 29
CREATE_ACLS: Final = 30
DELETE_ACLS: Final = 31

# Kafka's words (KafkaApis): DescribeAcls sets this message itself, CreateAcls and DeleteAcls
# throw a SecurityDisabledException ending with a period.
NO_AUTHORIZER: Final = "No Authorizer is configured on the broker"


def _delete_filter(f: DeleteAclsFilter) -> AclBindingFilter:
    return AclBindingFilter.from_codes(
        f.resource_type_filter,
        f.resource_name_filter,
        f.pattern_type_filter,
        f.principal_filter,
        f.host_filter,
        f.operation,
        f.permission_type,
    )


def not_authorized_message(ctx: RequestContext) -> str:
    """ClusterAuthorizationException's message in AuthHelper.authorizeClusterOperation,
    "Request <request> is not authorized.", with the parts of Kafka's request description
    that minikafka has (its session and listener)."""
    session = ctx.session
    principal = session.principal if session is not None else ANONYMOUS
    protocol = session.security.protocol if session is not None else "PLAINTEXT"
    return (
        f"Request Request(session=Session({principal},{ctx.client_host or '/'}), "
        f"listenerName=ListenerName({ctx.listener}), securityProtocol={protocol}) "
        "is not authorized."
    )


def _by_pattern(bindings: Sequence[AclBinding]) -> tuple[DescribeAclsResource, ...]:
    """DescribeAclsResponse.aclsResources: the bindings grouped by pattern."""
    grouped: dict[ResourcePattern, list[AclDescription]] = {}
    for b in bindings:
        grouped.setdefault(b.pattern, []).append(
            AclDescription(
                principal=b.entry.principal,
                host=b.entry.host,
                operation=b.entry.operation.value,
                permission_type=b.entry.permission_type.value,
            )
        )
    return tuple(
        DescribeAclsResource(
            resource_type=p.resource_type.value,
            resource_name=p.name,
            pattern_type=p.pattern_type.value,
            acls=tuple(acls),
        )
        for p, acls in grouped.items()
    )


def _matching_acl(binding: AclBinding, error: AclError | None) -> DeleteAclsMatchingAcl:
    return DeleteAclsMatchingAcl(
        error_code=ErrorCode.NONE if error is None else error.error_code,
        error_message=None if error is None else error.message,
        resource_type=binding.pattern.resource_type.value,
        resource_name=binding.pattern.name,
        pattern_type=binding.pattern.pattern_type.value,
        principal=binding.entry.principal,
        host=binding.entry.host,
        operation=binding.entry.operation.value,
        permission_type=binding.entry.permission_type.value,
    )


class AclApis(ApiFamily):
    def __init__(self, apis: BrokerServices) -> None:
        self.apis = apis

    def _authorized(self, ctx: RequestContext, operation: AclOperation, request: str) -> bool:
        return self.apis.authorizer.authorize_cluster(ctx.session, operation, request=request)

    @api(DESCRIBE_ACLS, "DescribeAcls", versions=(1, 2))
    async def describe_acls(
        self, req: DescribeAclsRequest, ctx: RequestContext
    ) -> DescribeAclsResponse:
        (acl_filter,) = check_acl_filters_request(
            [
                AclBindingFilter.from_codes(
                    req.resource_type_filter,
                    req.resource_name_filter,
                    req.pattern_type_filter,
                    req.principal_filter,
                    req.host_filter,
                    req.operation,
                    req.permission_type,
                )
            ],
            ctx.api_version,
            api="DescribeAcls",
        )
        if not self._authorized(ctx, AclOperation.DESCRIBE, "DescribeAcls"):
            return DescribeAclsResponse(
                error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                error_message=not_authorized_message(ctx),
                resources=(),
            )
        store = self.apis.acl_store
        if store is None:
            return DescribeAclsResponse(
                error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER, resources=()
            )
        return DescribeAclsResponse(
            error_code=ErrorCode.NONE,
            error_message=None,
            resources=_by_pattern(store.authorizer.acls(acl_filter)),
        )

    @api(CREATE_ACLS, "CreateAcls", versions=(1, 2))
    async def create_acls(self, req: CreateAclsRequest, ctx: RequestContext) -> CreateAclsResponse:
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
            for c in req.creations
        ]
        check_create_acls_request(creations, ctx.api_version)
        if not self._authorized(ctx, AclOperation.ALTER, "CreateAcls"):
            error = AclError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, not_authorized_message(ctx))
            return _create_response([error] * len(creations))
        store = self.apis.acl_store
        if store is None:
            error = AclError(ErrorCode.SECURITY_DISABLED, f"{NO_AUTHORIZER}.")
            return _create_response([error] * len(creations))
        return _create_response(await store.create_acls(validate_acl_creations(creations)))

    @api(DELETE_ACLS, "DeleteAcls", versions=(1, 2))
    async def delete_acls(self, req: DeleteAclsRequest, ctx: RequestContext) -> DeleteAclsResponse:
        filters = check_acl_filters_request(
            [_delete_filter(f) for f in req.filters], ctx.api_version, api="DeleteAcls"
        )
        if not self._authorized(ctx, AclOperation.ALTER, "DeleteAcls"):
            return _delete_error(
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED, not_authorized_message(ctx), len(filters)
            )
        store = self.apis.acl_store
        if store is None:
            return _delete_error(ErrorCode.SECURITY_DISABLED, f"{NO_AUTHORIZER}.", len(filters))
        deleted = await store.delete_acls(filters)
        return DeleteAclsResponse(
            filter_results=tuple(
                DeleteAclsFilterResult(
                    error_code=ErrorCode.NONE,
                    error_message=None,
                    matching_acls=tuple(_matching_acl(d.binding, d.error) for d in acls),
                )
                for acls in deleted
            )
        )


def _create_response(results: Sequence[AclError | None]) -> CreateAclsResponse:
    return CreateAclsResponse(
        results=tuple(
            AclCreationResult(error_code=ErrorCode.NONE, error_message=None)
            if r is None
            else AclCreationResult(error_code=r.error_code, error_message=r.message)
            for r in results
        )
    )


def _delete_error(code: ErrorCode, message: str, count: int) -> DeleteAclsResponse:
    """DeleteAclsRequest.getErrorResponse: every filter fails alike, deleting nothing."""
    return DeleteAclsResponse(
        filter_results=tuple(
            DeleteAclsFilterResult(error_code=code, error_message=message, matching_acls=())
            for _ in range(count)
        )
    )
