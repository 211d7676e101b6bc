"""The models of AlterPartitionReassignments (45) and ListPartitionReassignments (46).

The union of the fields of every version served (model.py), written from kio's schemas.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ReassignablePartition:
    partition_index: int
    replicas: tuple[int, ...] | None = None  # None cancels the partition's reassignment


@dataclass(frozen=True, slots=True, kw_only=True)
class ReassignableTopic:
    name: str
    partitions: tuple[ReassignablePartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionReassignmentsRequest:
    timeout: int = 60000
    topics: tuple[ReassignableTopic, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReassignablePartitionResponse:
    partition_index: int
    error_code: int
    error_message: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReassignableTopicResponse:
    name: str
    partitions: tuple[ReassignablePartitionResponse, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterPartitionReassignmentsResponse:
    throttle_time: int = 0
    error_code: int
    error_message: str | None
    responses: tuple[ReassignableTopicResponse, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListPartitionReassignmentsTopics:
    name: str
    partition_indexes: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ListPartitionReassignmentsRequest:
    timeout: int = 60000
    topics: tuple[ListPartitionReassignmentsTopics, ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class OngoingPartitionReassignment:
    partition_index: int
    replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class OngoingTopicReassignment:
    name: str
    partitions: tuple[OngoingPartitionReassignment, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListPartitionReassignmentsResponse:
    throttle_time: int = 0
    error_code: int
    error_message: str | None
    topics: tuple[OngoingTopicReassignment, ...]
