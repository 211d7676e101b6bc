"""The models of Metadata (3).

The union of the fields of every version served (model.py), generated once from kio's
schemas and kept by hand since; a comment gives the versions of a field some versions lack.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataRequestTopic:
    name: str | None
    topic_id: uuid.UUID | None = None  # v10+


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataRequest:
    topics: tuple[MetadataRequestTopic, ...] | None
    allow_auto_topic_creation: bool = True  # v4+
    include_cluster_authorized_operations: bool = False  # v8-10
    include_topic_authorized_operations: bool = False  # v8+


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataResponsePartition:
    error_code: int
    partition_index: int
    leader_id: int
    replica_nodes: tuple[int, ...] = ()
    isr_nodes: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()  # v5+
    leader_epoch: int = -1  # v7+


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataResponseTopic:
    error_code: int
    name: str | None
    partitions: tuple[MetadataResponsePartition, ...]
    is_internal: bool = False  # v1+
    topic_authorized_operations: int = -2147483648  # v8+
    topic_id: uuid.UUID | None = None  # v10+


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataResponseBroker:
    node_id: int
    host: str
    port: int
    rack: str | None = None  # v1+


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataResponse:
    brokers: tuple[MetadataResponseBroker, ...]
    topics: tuple[MetadataResponseTopic, ...]
    controller_id: int = -1  # v1+
    cluster_id: str | None = None  # v2+
    throttle_time: int = 0  # v3+
    cluster_authorized_operations: int = -2147483648  # v8-10
    error_code: int = 0  # v13+
