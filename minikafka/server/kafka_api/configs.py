"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: topics' overrides and brokers'
dynamic configs (the rules are config/dynamic.py's)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from minikafka.config import dynamic
from minikafka.protocol.errors import ErrorCode, KafkaError
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


class _Resource(Protocol):
    @property
    def resource_type(self) -> int: ...

    @property
    def resource_name(self) -> str: ...


R = TypeVar("R", bound=_Resource)


class ConfigApis(ApiFamily):
    def __init__(self, apis: BrokerServices) -> None:
        self.apis = apis

    @api(DESCRIBE_CONFIGS, "DescribeConfigs", versions=(1, 4))
    async def describe_configs(
        self, req: DescribeConfigsRequest, ctx: RequestContext
    ) -> DescribeConfigsResponse:
        results = []
        for r in req.resources:
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
                    is_sensitive=False,
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
            req.resources,
            lambda r: self.apis.admin.incremental_alter_configs(
                r.resource_type,
                r.resource_name,
                [dynamic.AlterableConfig(c.name, c.config_operation, c.value) for c in r.configs],
                req.validate_only,
            ),
        )
        return IncrementalAlterConfigsResponse(
            responses=tuple(
                IncrementalAlterConfigsResourceResponse(
                    error_code=code,
                    error_message=message,
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                )
                for r, (code, message) in zip(req.resources, answers, strict=True)
            )
        )

    @api(ALTER_CONFIGS, "AlterConfigs", versions=(0, 2))
    async def alter_configs(
        self, req: AlterConfigsRequest, ctx: RequestContext
    ) -> AlterConfigsResponse:
        """AlterConfigs, which older tools and clients still send: each resource's configs
        replace all of its overrides."""
        answers = await _alter_each(
            req.resources,
            lambda r: self.apis.admin.alter_configs(
                r.resource_type,
                r.resource_name,
                [(c.name, c.value) for c in r.configs],
                req.validate_only,
            ),
        )
        return AlterConfigsResponse(
            responses=tuple(
                AlterConfigsResourceResponse(
                    error_code=code,
                    error_message=message,
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                )
                for r, (code, message) in zip(req.resources, answers, strict=True)
            )
        )


async def _alter_each(
    resources: Sequence[R], alter: Callable[[R], Awaitable[None]]
) -> list[tuple[int, str | None]]:
    """Both alter APIs' answer: each resource's error code and message, one at a time."""
    answers: list[tuple[int, str | None]] = []
    for r in resources:
        try:
            await alter(r)
        except KafkaError as e:
            answers.append((int(e.code), e.message))
        else:
            answers.append((int(ErrorCode.NONE), None))
    return answers
