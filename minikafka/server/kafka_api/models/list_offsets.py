"""The models of ListOffsets (2) and OffsetForLeaderEpoch (23).

The union of the fields of every version served (model.py), generated once from kio's
schemas and kept by hand since; a comment gives the versions of a field some versions lack.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsPartition:
    partition_index: int
    timestamp: int
    current_leader_epoch: int = -1  # v4+


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsTopic:
    name: str
    partitions: tuple[ListOffsetsPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsRequest:
    replica_id: int
    topics: tuple[ListOffsetsTopic, ...]
    isolation_level: int = 0  # v2+


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsPartitionResponse:
    partition_index: int
    error_code: int
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1  # v4+


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsTopicResponse:
    name: str
    partitions: tuple[ListOffsetsPartitionResponse, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsResponse:
    topics: tuple[ListOffsetsTopicResponse, ...]
    throttle_time: int = 0  # v2+


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetForLeaderPartition:
    partition: int
    current_leader_epoch: int = -1
    leader_epoch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetForLeaderTopic:
    topic: str
    partitions: tuple[OffsetForLeaderPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetForLeaderEpochRequest:
    topics: tuple[OffsetForLeaderTopic, ...]
    replica_id: int = -2  # v3+


@dataclass(frozen=True, slots=True, kw_only=True)
class EpochEndOffset:
    error_code: int
    partition: int
    leader_epoch: int = -1
    end_offset: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetForLeaderTopicResult:
    topic: str
    partitions: tuple[EpochEndOffset, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetForLeaderEpochResponse:
    throttle_time: int = 0
    topics: tuple[OffsetForLeaderTopicResult, ...]
