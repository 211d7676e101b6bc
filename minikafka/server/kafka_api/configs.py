"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: topics' overrides and brokers'
dynamic configs (the rules are config/dynamic.py's)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from minikafka.config import dynamic
from minikafka.protocol.errors import ErrorCode, KafkaError
from minikafka.security.operations import AclOperation, ResourceType
from minikafka.server.broker_services import BrokerServices
from minikafka.server.kafka_api.models.configs import (
    AlterConfigsRequest,
    AlterConfigsResourceResponse,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResourceResponse,
    IncrementalAlterConfigsResponse,
)
from minikafka.server.kafka_api.registry import ApiFamily, RequestContext, api

DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 44
# Kafka's ConfigResource.Type codes.
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
# DescribeConfigs answers a refused resource with the error's own message (Kafka's).
_MESSAGES = {
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
}


class _Resource(Protocol):
    @property
    def resource_type(self) -> int: ...

    @property
    def resource_name(self) -> str: ...


R = TypeVar("R", bound=_Resource)
A = TypeVar("A", AlterConfigsResourceResponse, IncrementalAlterConfigsResourceResponse)


class ConfigApis(ApiFamily):
    def __init__(self, apis: BrokerServices) -> None:
        self.apis = apis

    @api(DESCRIBE_CONFIGS, "DescribeConfigs", versions=(1, 4))
    async def describe_configs(
        self, req: DescribeConfigsRequest, ctx: RequestContext
    ) -> DescribeConfigsResponse:
        results = []
        for r in req.resources:
            refused = self._refused(
                ctx, AclOperation.DESCRIBE_CONFIGS, r, "DescribeConfigs", broker_logger=True
            )
            if refused is not None:
                results.append(
                    DescribeConfigsResult(
                        resource_type=r.resource_type,
                        resource_name=r.resource_name,
                        error_code=refused,
                        error_message=_MESSAGES[refused],
                        configs=(),
                    )
                )
                continue
            # Null or empty: every config (Kafka answers an empty list with all of them too).
            keys = list(r.configuration_keys) if r.configuration_keys else None
            try:
                described = await self.apis.admin.describe_configs(
                    r.resource_type, r.resource_name, keys, req.include_synonyms
                )
            except KafkaError as e:
                results.append(
                    DescribeConfigsResult(
                        resource_type=r.resource_type,
                        resource_name=r.resource_name,
                        error_code=e.code,
                        error_message=e.message,
                        configs=(),
                    )
                )
                continue
            configs = tuple(
                DescribeConfigsResourceResult(
                    name=c.name,
                    value=c.value,
                    read_only=c.read_only,
                    config_source=int(c.source),
                    is_sensitive=c.sensitive,
                    synonyms=tuple(
                        DescribeConfigsSynonym(name=y.name, value=y.value, source=int(y.source))
                        for y in c.synonyms
                    ),
                    config_type=int(c.type),
                    documentation=c.doc if req.include_documentation else None,
                )
                for c in described
            )
            results.append(
                DescribeConfigsResult(
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                    error_code=ErrorCode.NONE,
                    error_message=None,
                    configs=configs,
                )
            )
        return DescribeConfigsResponse(results=tuple(results))

    @api(INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs", versions=(0, 1))
    async def incremental_alter_configs(
        self, req: IncrementalAlterConfigsRequest, ctx: RequestContext
    ) -> IncrementalAlterConfigsResponse:
        answers = await _alter_each(
            IncrementalAlterConfigsResourceResponse,
            req.resources,
            lambda r: self._refused(
                ctx, AclOperation.ALTER_CONFIGS, r, "IncrementalAlterConfigs", broker_logger=True
            ),
            lambda r: self.apis.admin.incremental_alter_configs(
                r.resource_type,
                r.resource_name,
                [dynamic.AlterableConfig(c.name, c.config_operation, c.value) for c in r.configs],
                req.validate_only,
            ),
        )
        return IncrementalAlterConfigsResponse(responses=answers)

    @api(ALTER_CONFIGS, "AlterConfigs", versions=(0, 2))
    async def alter_configs(
        self, req: AlterConfigsRequest, ctx: RequestContext
    ) -> AlterConfigsResponse:
        """AlterConfigs, which older tools and clients still send: each resource's configs
        replace all of its overrides."""
        answers = await _alter_each(
            AlterConfigsResourceResponse,
            req.resources,
            # Broker loggers are not AlterConfigs' (refused as an invalid request).
            lambda r: self._refused(
                ctx, AclOperation.ALTER_CONFIGS, r, "AlterConfigs", broker_logger=False
            ),
            lambda r: self.apis.admin.alter_configs(
                r.resource_type,
                r.resource_name,
                [(c.name, c.value) for c in r.configs],
                req.validate_only,
            ),
        )
        return AlterConfigsResponse(responses=answers)

    def _refused(
        self,
        ctx: RequestContext,
        operation: AclOperation,
        resource: _Resource,
        request: str,
        *,
        broker_logger: bool,
    ) -> ErrorCode | None:
        """Kafka's rule for the three config APIs: `operation` (DESCRIBE_CONFIGS or
        ALTER_CONFIGS) on the topic for a topic's configs, on the cluster for a broker's
        (and a broker logger's, where the API has them); the error a refused resource gets,
        or None. Other resource types are not authorized: they are refused as invalid."""
        authorizer = self.apis.authorizer
        rtype = resource.resource_type
        if rtype == TOPIC:
            allowed = authorizer.authorize(
                ctx.session, operation, ResourceType.TOPIC, resource.resource_name, request=request
            )
            return None if allowed else ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if rtype == BROKER or (broker_logger and rtype == BROKER_LOGGER):
            allowed = authorizer.authorize_cluster(ctx.session, operation, request=request)
            return None if allowed else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return None


async def _alter_each(
    answer: type[A],
    resources: Sequence[R],
    refused: Callable[[R], ErrorCode | None],
    alter: Callable[[R], Awaitable[None]],
) -> tuple[A, ...]:
    """Both alter APIs' answer: each resource altered in turn, with its error or none (a
    resource refused by the authorizer is not altered, and its error has no message)."""
    answers: list[A] = []
    for r in resources:
        code, message = int(ErrorCode.NONE), None
        denied = refused(r)
        if denied is not None:
            code = int(denied)
        else:
            try:
                await alter(r)
            except KafkaError as e:
                code, message = int(e.code), e.message
        answers.append(
            answer(
                error_code=code,
                error_message=message,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
            )
        )
    return tuple(answers)
