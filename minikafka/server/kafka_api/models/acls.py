"""The models of DescribeAcls (29), CreateAcls (30) and DeleteAcls (31).

The union of the fields of every version served (model.py), from kio's schemas. Resource
types, pattern types, operations and permission types are Kafka's codes
(security/operations.py); every version served carries the pattern type.
"""

from __future__ import annotations

from dataclasses import dataclass

# -- DescribeAcls ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeAclsRequest:
    resource_type_filter: int
    resource_name_filter: str | None
    pattern_type_filter: int
    principal_filter: str | None
    host_filter: str | None
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AclDescription:
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeAclsResource:
    resource_type: int
    resource_name: str
    pattern_type: int
    acls: tuple[AclDescription, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeAclsResponse:
    throttle_time: int = 0
    error_code: int
    error_message: str | None
    resources: tuple[DescribeAclsResource, ...]


# -- CreateAcls -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AclCreation:
    resource_type: int
    resource_name: str
    resource_pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateAclsRequest:
    creations: tuple[AclCreation, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AclCreationResult:
    error_code: int
    error_message: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateAclsResponse:
    throttle_time: int = 0
    results: tuple[AclCreationResult, ...]


# -- DeleteAcls -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAclsFilter:
    resource_type_filter: int
    resource_name_filter: str | None
    pattern_type_filter: int
    principal_filter: str | None
    host_filter: str | None
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAclsRequest:
    filters: tuple[DeleteAclsFilter, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAclsMatchingAcl:
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAclsFilterResult:
    error_code: int
    error_message: str | None
    matching_acls: tuple[DeleteAclsMatchingAcl, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteAclsResponse:
    throttle_time: int = 0
    filter_results: tuple[DeleteAclsFilterResult, ...]
