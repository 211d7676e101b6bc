"""ApiVersions and DescribeCluster: what this broker serves, and which brokers there are."""

from __future__ import annotations

from minikafka.protocol.errors import ErrorCode
from minikafka.security.operations import NOT_REQUESTED, AclOperation, ResourceType
from minikafka.server.authorization import CLUSTER_NAME
from minikafka.server.broker_services import BrokerServices
from minikafka.server.kafka_api.models.cluster import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
    DescribeClusterBroker,
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from minikafka.server.kafka_api.registry import ApiFamily, RequestContext, api

API_VERSIONS, DESCRIBE_CLUSTER = 18, 60
BROKER_ENDPOINTS = 1  # DescribeCluster's endpoint type for brokers (KIP-919)


class ClusterApis(ApiFamily):
    def __init__(self, apis: BrokerServices, served: dict[int, tuple[int, int]]) -> None:
        self.apis = apis
        self.served = served  # registry.served_versions of every family

    @api(API_VERSIONS, "ApiVersions", versions=(0, 3))
    async def api_versions(
        self, req: ApiVersionsRequest, ctx: RequestContext
    ) -> ApiVersionsResponse:
        return ApiVersionsResponse(
            error_code=ErrorCode.NONE,
            api_keys=tuple(
                ApiVersion(api_key=key, min_version=low, max_version=high)
                for key, (low, high) in self.served.items()
            ),
        )

    @api(DESCRIBE_CLUSTER, "DescribeCluster", versions=(0, 1))
    async def describe_cluster(
        self, req: DescribeClusterRequest, ctx: RequestContext
    ) -> DescribeClusterResponse:
        meta = await self.apis.metadata([], allow_auto_topic_creation=False, listener=ctx.listener)
        cluster_id = self.apis.cluster_id or ""
        # v1 may ask for the controllers (KIP-919): a ZooKeeper-era cluster has no quorum
        # controllers to list, and Kafka's ZooKeeper brokers refuse it the same way.
        if req.endpoint_type != BROKER_ENDPOINTS:
            return DescribeClusterResponse(
                error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
                error_message="only brokers (endpoint type 1) can be described",
                endpoint_type=req.endpoint_type,
                cluster_id=cluster_id,
                brokers=(),
            )
        return DescribeClusterResponse(
            error_code=ErrorCode.NONE,
            endpoint_type=BROKER_ENDPOINTS,
            cluster_id=cluster_id,
            controller_id=meta.controller_id,
            cluster_authorized_operations=self._cluster_operations(ctx, req),
            brokers=tuple(
                DescribeClusterBroker(broker_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                for b in meta.brokers
            ),
        )

    def _cluster_operations(self, ctx: RequestContext, req: DescribeClusterRequest) -> int:
        """KIP-430: the cluster's authorized operations when asked, and only to a principal
        that may DESCRIBE the cluster (0 otherwise). DescribeCluster itself needs nothing:
        Kafka 2.8 answers anyone with the brokers, as Metadata does."""
        if not req.include_cluster_authorized_operations:
            return NOT_REQUESTED
        authorizer = self.apis.authorizer
        if not authorizer.authorize_cluster(
            ctx.session, AclOperation.DESCRIBE, request="DescribeCluster"
        ):
            return 0
        return authorizer.authorized_operations(ctx.session, ResourceType.CLUSTER, CLUSTER_NAME)
