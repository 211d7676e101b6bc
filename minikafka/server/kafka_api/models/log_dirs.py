"""The models of DescribeLogDirs (35).

The union of the fields of every version served (model.py), generated once from kio's
schemas and kept by hand since; a comment gives the versions of a field some versions lack.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribableLogDirTopic:
    topic: str
    partitions: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeLogDirsRequest:
    topics: tuple[DescribableLogDirTopic, ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeLogDirsPartition:
    partition_index: int
    partition_size: int
    offset_lag: int
    is_future_key: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeLogDirsTopic:
    name: str
    partitions: tuple[DescribeLogDirsPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeLogDirsResult:
    error_code: int
    log_dir: str
    topics: tuple[DescribeLogDirsTopic, ...]
    total_bytes: int = -1  # v4+
    usable_bytes: int = -1  # v4+


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeLogDirsResponse:
    throttle_time: int = 0
    error_code: int = 0  # v3+
    results: tuple[DescribeLogDirsResult, ...]
