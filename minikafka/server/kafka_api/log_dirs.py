"""DescribeLogDirs: a broker's log dirs and the replicas in them (kafka-log-dirs.sh)."""

from __future__ import annotations

from itertools import groupby

from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode
from minikafka.security.operations import AclOperation, ResourceType
from minikafka.server.authorization import CLUSTER_NAME
from minikafka.server.broker_services import BrokerServices
from minikafka.server.kafka_api.models.log_dirs import (
    DescribeLogDirsPartition,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
)
from minikafka.server.kafka_api.registry import ApiFamily, RequestContext, api

DESCRIBE_LOG_DIRS = 35


class LogDirApis(ApiFamily):
    def __init__(self, apis: BrokerServices) -> None:
        self.apis = apis

    @api(DESCRIBE_LOG_DIRS, "DescribeLogDirs", versions=(1, 4))
    async def describe_log_dirs(
        self, req: DescribeLogDirsRequest, ctx: RequestContext
    ) -> DescribeLogDirsResponse:
        """Kafka's handleDescribeLogDirsRequest: DESCRIBE on the cluster, else no log dirs
        (and, v3+, CLUSTER_AUTHORIZATION_FAILED, as Kafka 3 answers); null topics: every
        replica."""
        if not self.apis.authorizer.authorize(
            ctx.session,
            AclOperation.DESCRIBE,
            ResourceType.CLUSTER,
            CLUSTER_NAME,
            request="DescribeLogDirs",
        ):
            return DescribeLogDirsResponse(
                error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=()
            )
        partitions = (
            None
            if req.topics is None
            else {TopicPartition(t.topic, p) for t in req.topics for p in t.partitions}
        )
        return DescribeLogDirsResponse(
            results=tuple(
                DescribeLogDirsResult(
                    error_code=d.error_code,
                    log_dir=d.path,
                    topics=tuple(
                        DescribeLogDirsTopic(
                            name=topic,
                            partitions=tuple(
                                DescribeLogDirsPartition(
                                    partition_index=tp.partition,
                                    partition_size=size,
                                    offset_lag=lag,
                                    is_future_key=False,
                                )
                                for tp, size, lag in replicas
                            ),
                        )
                        for topic, replicas in groupby(d.replicas, key=lambda r: r[0].topic)
                    ),
                    total_bytes=d.total_bytes,
                    usable_bytes=d.usable_bytes,
                )
                for d in self.apis.describe_log_dirs(partitions)
            )
        )
