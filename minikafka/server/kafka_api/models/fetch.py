"""The models of Fetch (1): the request; the response is written by hand (protocol/kafka/fetch_response.py).

The union of the fields of every version served (model.py), generated once from kio's
schemas and kept by hand since; a comment gives the versions of a field some versions lack.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaState:
    replica_id: int = -1
    replica_epoch: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class ForgottenTopic:
    topic: str = ""  # v7-12
    partitions: tuple[int, ...] = ()
    topic_id: uuid.UUID | None = None  # v13+


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchPartition:
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    log_start_offset: int = -1  # v5+
    current_leader_epoch: int = -1  # v9+
    last_fetched_epoch: int = -1  # v12+
    replica_directory_id: uuid.UUID | None = None  # v17+


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchTopic:
    topic: str = ""  # v4-12
    partitions: tuple[FetchPartition, ...]
    topic_id: uuid.UUID | None = None  # v13+


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequest:
    replica_id: int = -1  # v4-14
    max_wait: int
    min_bytes: int
    max_bytes: int = 2147483647
    isolation_level: int = 0
    topics: tuple[FetchTopic, ...]
    session_id: int = 0  # v7+
    session_epoch: int = -1  # v7+
    forgotten_topics_data: tuple[ForgottenTopic, ...] = ()  # v7+
    rack_id: str = ""  # v11+
    cluster_id: str | None = None  # v12+
    replica_state: ReplicaState | None = None  # v15+
