"""The models of DeleteRecords (21).

The union of the fields of every version served (model.py), generated once from kio's
schemas and kept by hand since; a comment gives the versions of a field some versions lack.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteRecordsPartition:
    partition_index: int
    offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteRecordsTopic:
    name: str
    partitions: tuple[DeleteRecordsPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteRecordsRequest:
    topics: tuple[DeleteRecordsTopic, ...]
    timeout: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteRecordsPartitionResult:
    partition_index: int
    low_watermark: int
    error_code: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteRecordsTopicResult:
    name: str
    partitions: tuple[DeleteRecordsPartitionResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteRecordsResponse:
    throttle_time: int = 0
    topics: tuple[DeleteRecordsTopicResult, ...]
