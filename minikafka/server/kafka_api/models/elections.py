"""The models of ElectLeaders (43).

The union of the fields of every version served (model.py), generated once from kio's
schemas and kept by hand since; a comment gives the versions of a field some versions lack.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitions:
    topic: str
    partitions: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersRequest:
    election_type: int = 0  # v1+ (v0 asks for preferred elections only)
    topic_partitions: tuple[TopicPartitions, ...] | None
    timeout: int = 60000


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionResult:
    partition_id: int
    error_code: int
    error_message: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaElectionResult:
    topic: str
    partition_result: tuple[PartitionResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersResponse:
    throttle_time: int = 0
    error_code: int = 0  # v1+
    replica_election_results: tuple[ReplicaElectionResult, ...]
