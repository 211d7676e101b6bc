"""The models of OffsetCommit (8), OffsetFetch (9) and OffsetDelete (47).

The union of the fields of every version served (model.py), generated once from kio's
schemas and kept by hand since; a comment gives the versions of a field some versions lack.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitRequestPartition:
    partition_index: int
    committed_offset: int
    committed_metadata: str | None
    committed_leader_epoch: int = -1  # v6+


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitRequestTopic:
    name: str
    partitions: tuple[OffsetCommitRequestPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitRequest:
    group_id: str
    generation_id_or_member_epoch: int = -1
    member_id: str
    retention_time: int = -1  # v2-4
    topics: tuple[OffsetCommitRequestTopic, ...]
    group_instance_id: str | None = None  # v7+


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitResponsePartition:
    partition_index: int
    error_code: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitResponseTopic:
    name: str
    partitions: tuple[OffsetCommitResponsePartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitResponse:
    topics: tuple[OffsetCommitResponseTopic, ...]
    throttle_time: int = 0  # v3+


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchRequestTopics:
    name: str
    partition_indexes: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchRequestGroup:
    group_id: str
    topics: tuple[OffsetFetchRequestTopics, ...] | None
    member_id: str | None = None  # v9+
    member_epoch: int = -1  # v9+


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchRequestTopic:
    name: str
    partition_indexes: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchRequest:
    group_id: str = ""  # v1-7
    topics: tuple[OffsetFetchRequestTopic, ...] | None = None  # v1-7
    require_stable: bool = False  # v7+
    groups: tuple[OffsetFetchRequestGroup, ...] = ()  # v8+


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchResponsePartitions:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    metadata: str | None
    error_code: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchResponseTopics:
    name: str
    partitions: tuple[OffsetFetchResponsePartitions, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchResponseGroup:
    group_id: str
    topics: tuple[OffsetFetchResponseTopics, ...]
    error_code: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchResponsePartition:
    partition_index: int
    committed_offset: int
    metadata: str | None
    error_code: int
    committed_leader_epoch: int = -1  # v5+


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchResponseTopic:
    name: str
    partitions: tuple[OffsetFetchResponsePartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchResponse:
    topics: tuple[OffsetFetchResponseTopic, ...] = ()  # v1-7
    error_code: int = 0  # v2-7
    throttle_time: int = 0  # v3+
    groups: tuple[OffsetFetchResponseGroup, ...] = ()  # v8+


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetDeleteRequestPartition:
    partition_index: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetDeleteRequestTopic:
    name: str
    partitions: tuple[OffsetDeleteRequestPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetDeleteRequest:
    group_id: str
    topics: tuple[OffsetDeleteRequestTopic, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetDeleteResponsePartition:
    partition_index: int
    error_code: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetDeleteResponseTopic:
    name: str
    partitions: tuple[OffsetDeleteResponsePartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetDeleteResponse:
    error_code: int
    throttle_time: int = 0
    topics: tuple[OffsetDeleteResponseTopic, ...]
