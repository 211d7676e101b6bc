"""The models of ApiVersions (18) and DescribeCluster (60).

The union of the fields of every version served (model.py), generated once from kio's
schemas and kept by hand since; a comment gives the versions of a field some versions lack.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsRequest:
    client_software_name: str = ""  # v3+
    client_software_version: str = ""  # v3+


@dataclass(frozen=True, slots=True, kw_only=True)
class FinalizedFeatureKey:
    name: str
    max_version_level: int
    min_version_level: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SupportedFeatureKey:
    name: str
    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersion:
    api_key: int
    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsResponse:
    error_code: int
    api_keys: tuple[ApiVersion, ...]
    throttle_time: int = 0  # v1+
    supported_features: tuple[SupportedFeatureKey, ...] = ()  # v3+
    finalized_features_epoch: int = -1  # v3+
    finalized_features: tuple[FinalizedFeatureKey, ...] = ()  # v3+
    zk_migration_ready: bool = False  # v3+


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeClusterRequest:
    include_cluster_authorized_operations: bool
    endpoint_type: int = 1  # v1+


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeClusterBroker:
    broker_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeClusterResponse:
    throttle_time: int = 0
    error_code: int
    error_message: str | None = None
    cluster_id: str
    controller_id: int = -1
    brokers: tuple[DescribeClusterBroker, ...]
    cluster_authorized_operations: int = -2147483648
    endpoint_type: int = 1  # v1+
