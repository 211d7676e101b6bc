"""The models of CreateTopics (19), DeleteTopics (20) and CreatePartitions (37).

The union of the fields of every version served (model.py), generated once from kio's
schemas and kept by hand since; a comment gives the versions of a field some versions lack.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatableTopicConfig:
    name: str
    value: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatableReplicaAssignment:
    partition_index: int
    broker_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatableTopic:
    name: str
    num_partitions: int
    replication_factor: int
    assignments: tuple[CreatableReplicaAssignment, ...]
    configs: tuple[CreatableTopicConfig, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsRequest:
    topics: tuple[CreatableTopic, ...]
    timeout: int = 60000
    validate_only: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatableTopicConfigs:
    name: str
    value: str | None
    read_only: bool
    config_source: int = -1
    is_sensitive: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatableTopicResult:
    name: str
    error_code: int
    error_message: str | None
    topic_config_error_code: int = 0  # v5+
    num_partitions: int = -1  # v5+
    replication_factor: int = -1  # v5+
    configs: tuple[CreatableTopicConfigs, ...] | None = None  # v5+
    topic_id: uuid.UUID | None = None  # v7+


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsResponse:
    throttle_time: int = 0
    topics: tuple[CreatableTopicResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicState:
    name: str | None = None
    topic_id: uuid.UUID | None


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicsRequest:
    topic_names: tuple[str, ...] = ()  # v1-5
    timeout: int
    topics: tuple[DeleteTopicState, ...] = ()  # v6+


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletableTopicResult:
    name: str | None
    error_code: int
    error_message: str | None = None  # v5+
    topic_id: uuid.UUID | None = None  # v6+


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicsResponse:
    throttle_time: int = 0
    responses: tuple[DeletableTopicResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatePartitionsAssignment:
    broker_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatePartitionsTopic:
    name: str
    count: int
    assignments: tuple[CreatePartitionsAssignment, ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatePartitionsRequest:
    topics: tuple[CreatePartitionsTopic, ...]
    timeout: int
    validate_only: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatePartitionsTopicResult:
    name: str
    error_code: int
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CreatePartitionsResponse:
    throttle_time: int = 0
    results: tuple[CreatePartitionsTopicResult, ...]
