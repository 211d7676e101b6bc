"""The models of DescribeConfigs (32), AlterConfigs (33) and IncrementalAlterConfigs (44).

The union of the fields of every version served (model.py), generated once from kio's
schemas and kept by hand since; a comment gives the versions of a field some versions lack.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsResource:
    resource_type: int
    resource_name: str
    configuration_keys: tuple[str, ...] | None = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsRequest:
    resources: tuple[DescribeConfigsResource, ...]
    include_synonyms: bool = False
    include_documentation: bool = False  # v3+


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsSynonym:
    name: str
    value: str | None
    source: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsResourceResult:
    name: str
    value: str | None
    read_only: bool
    config_source: int = -1
    is_sensitive: bool
    synonyms: tuple[DescribeConfigsSynonym, ...]
    config_type: int = 0  # v3+
    documentation: str | None = None  # v3+


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsResult:
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    configs: tuple[DescribeConfigsResourceResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsResponse:
    throttle_time: int = 0
    results: tuple[DescribeConfigsResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterableConfig:
    name: str
    value: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterConfigsResource:
    resource_type: int
    resource_name: str
    configs: tuple[AlterableConfig, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterConfigsRequest:
    resources: tuple[AlterConfigsResource, ...]
    validate_only: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterConfigsResourceResponse:
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterConfigsResponse:
    throttle_time: int = 0
    responses: tuple[AlterConfigsResourceResponse, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class IncrementalAlterableConfig:
    name: str
    config_operation: int
    value: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class IncrementalAlterConfigsResource:
    resource_type: int
    resource_name: str
    configs: tuple[IncrementalAlterableConfig, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class IncrementalAlterConfigsRequest:
    resources: tuple[IncrementalAlterConfigsResource, ...]
    validate_only: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class IncrementalAlterConfigsResourceResponse:
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class IncrementalAlterConfigsResponse:
    throttle_time: int = 0
    responses: tuple[IncrementalAlterConfigsResourceResponse, ...]
