"""Request and response types, with Kafka's API keys and field names.

Each message is a frozen dataclass; `schema.py` turns it into a msgpack array. Fields added
later go at the end with a default, so older peers keep decoding (see `from_wire`).

The RPC carries only what brokers send each other (`API_TYPES`; ListOffsets: the broker
coordinating a group asks each partition's leader for its high watermark, for the consumer
lag metric). The Metadata and Produce types here are not RPC messages: they are what the
metadata cache, the replica manager and the request handlers of Kafka's protocol pass each
other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from minikafka.common import Endpoint
from minikafka.rpc.schema import Records, RecordsValue

# Fetch / ListOffsets replica ids (Kafka's)
CONSUMER_REPLICA_ID = -1
DEBUG_REPLICA_ID = -2  # reads up to LEO without being a follower (tools)

# ListOffsets timestamps
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3  # ListOffsets v7 (KIP-734): the record with the largest timestamp

NO_LEADER_EPOCH = -1


class ApiKey(IntEnum):
    FETCH = 1
    LIST_OFFSETS = 2
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    OFFSET_FOR_LEADER_EPOCH = 23


# --- Metadata -----------------------------------------------------------------------------


@dataclass(frozen=True)
class BrokerNode:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    # In UpdateMetadata: every advertised listener of the broker (host/port above are its
    # inter-broker listener's), so each broker can answer a client with the addresses on the
    # listener the client came in on. Empty in what clients receive.
    endpoints: list[Endpoint] = field(default_factory=list)


@dataclass(frozen=True)
class MetadataPartition:
    error_code: int
    partition: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]


@dataclass(frozen=True)
class MetadataTopic:
    error_code: int
    name: str
    partitions: list[MetadataPartition]
    topic_id: str | None = None  # Kafka's text form (KIP-516)


@dataclass(frozen=True)
class MetadataResponse:
    brokers: list[BrokerNode]
    controller_id: int
    topics: list[MetadataTopic]


# --- Produce ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordError:
    """KIP-467: a record a batch was refused for, by its index in its batch, and why."""

    batch_index: int
    message: str | None = None


@dataclass(frozen=True)
class ProducePartitionResponse:
    partition: int
    error_code: int
    base_offset: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    record_errors: list[RecordError] = field(default_factory=list)
    log_append_time: int = -1  # the time the leader stamped (LogAppendTime topics)


# --- Fetch --------------------------------------------------------------------------------


@dataclass(frozen=True)
class FetchPartition:
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = NO_LEADER_EPOCH
    log_start_offset: int = -1  # the follower's, so the leader tracks it


@dataclass(frozen=True)
class FetchTopic:
    name: str
    partitions: list[FetchPartition]


@dataclass(frozen=True)
class ForgottenTopic:
    """Partitions an incremental fetch drops from its session (KIP-227)."""

    name: str
    partitions: list[int]


# KIP-227 fetch sessions: id 0 = none; epoch 0 asks for a new session, -1 = sessionless.
INVALID_SESSION_ID = 0
FINAL_EPOCH = -1


@dataclass(frozen=True)
class FetchRequest:
    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    topics: list[FetchTopic]
    replica_epoch: int = -1  # the follower's broker epoch
    # Defaults: a sessionless full fetch, what older senders and consumers mean.
    session_id: int = INVALID_SESSION_ID
    session_epoch: int = FINAL_EPOCH
    forgotten_topics: list[ForgottenTopic] = field(default_factory=list)


@dataclass(frozen=True)
class FetchPartitionResponse:
    partition: int
    error_code: int
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    records: Records | RecordsValue | None
    # KIP-392: the follower a consumer should fetch from instead (Fetch v11+), -1 for none.
    preferred_read_replica: int = -1


@dataclass(frozen=True)
class FetchTopicResponse:
    name: str
    partitions: list[FetchPartitionResponse]


@dataclass(frozen=True)
class FetchResponse:
    error_code: int  # top level: FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH
    topics: list[FetchTopicResponse]
    session_id: int = INVALID_SESSION_ID  # the session this response belongs to (KIP-227)


# --- ListOffsets --------------------------------------------------------------------------


@dataclass(frozen=True)
class ListOffsetsPartition:
    partition: int
    # LATEST_TIMESTAMP, EARLIEST_TIMESTAMP, MAX_TIMESTAMP, or a time in ms: the first offset
    # whose record timestamp is at or after it
    timestamp: int
    current_leader_epoch: int = NO_LEADER_EPOCH


@dataclass(frozen=True)
class ListOffsetsTopic:
    name: str
    partitions: list[ListOffsetsPartition]


@dataclass(frozen=True)
class ListOffsetsRequest:
    replica_id: int
    topics: list[ListOffsetsTopic]


@dataclass(frozen=True)
class ListOffsetsPartitionResponse:
    partition: int
    error_code: int
    offset: int = -1
    leader_epoch: int = NO_LEADER_EPOCH
    timestamp: int = -1  # of the record found by a timestamp lookup


@dataclass(frozen=True)
class ListOffsetsTopicResponse:
    name: str
    partitions: list[ListOffsetsPartitionResponse]


@dataclass(frozen=True)
class ListOffsetsResponse:
    topics: list[ListOffsetsTopicResponse]


# --- OffsetsForLeaderEpoch ----------------------------------------------------------------


@dataclass(frozen=True)
class OffsetForLeaderPartition:
    partition: int
    current_leader_epoch: int
    leader_epoch: int


@dataclass(frozen=True)
class OffsetForLeaderTopic:
    name: str
    partitions: list[OffsetForLeaderPartition]


@dataclass(frozen=True)
class OffsetForLeaderEpochRequest:
    replica_id: int
    topics: list[OffsetForLeaderTopic]


@dataclass(frozen=True)
class EpochEndOffset:
    partition: int
    error_code: int
    leader_epoch: int
    end_offset: int


@dataclass(frozen=True)
class OffsetForLeaderTopicResult:
    name: str
    partitions: list[EpochEndOffset]


@dataclass(frozen=True)
class OffsetForLeaderEpochResponse:
    topics: list[OffsetForLeaderTopicResult]


# --- Controller -> broker -----------------------------------------------------------------


@dataclass(frozen=True)
class PartitionRef:
    topic: str
    partition: int


@dataclass(frozen=True)
class LeaderAndIsrPartitionState:
    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: list[int]
    zk_version: int
    replicas: list[int]
    is_new: bool = False
    # A reassignment's (KIP-455, Kafka's LeaderAndIsr v3): the replicas being added are not
    # counted in the partition's replication factor (under-replicated) until it completes.
    adding_replicas: list[int] = field(default_factory=list)
    removing_replicas: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class LeaderAndIsrRequest:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_states: list[LeaderAndIsrPartitionState]
    live_leaders: list[BrokerNode]


@dataclass(frozen=True)
class PartitionError:
    topic: str
    partition: int
    error_code: int


@dataclass(frozen=True)
class LeaderAndIsrResponse:
    error_code: int
    partition_errors: list[PartitionError]


@dataclass(frozen=True)
class UpdateMetadataPartitionState:
    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: list[int]
    zk_version: int
    replicas: list[int]
    offline_replicas: list[int]


@dataclass(frozen=True)
class UpdateMetadataRequest:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_states: list[UpdateMetadataPartitionState]
    live_brokers: list[BrokerNode]
    deleted_topics: list[str] = field(default_factory=list)
    # Topic ids (KIP-516) of the topics in partition_states (Kafka's UpdateMetadata v7
    # carries them per topic).
    topic_ids: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class UpdateMetadataResponse:
    error_code: int


@dataclass(frozen=True)
class StopReplicaPartition:
    topic: str
    partition: int
    delete_partition: bool
    leader_epoch: int = NO_LEADER_EPOCH


@dataclass(frozen=True)
class StopReplicaRequest:
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partitions: list[StopReplicaPartition]


@dataclass(frozen=True)
class StopReplicaResponse:
    error_code: int
    partition_errors: list[PartitionError]


# --- Broker -> controller -----------------------------------------------------------------


@dataclass(frozen=True)
class ControlledShutdownRequest:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True)
class ControlledShutdownResponse:
    error_code: int
    remaining_partitions: list[PartitionRef]


# --- a leader's view of its replicas (admin endpoint, metrics) ---------------------------


@dataclass(frozen=True)
class ReplicaState:
    broker_id: int
    log_end_offset: int
    last_caught_up_ms_ago: int
    in_isr: bool


API_TYPES: dict[ApiKey, tuple[type, type]] = {
    ApiKey.FETCH: (FetchRequest, FetchResponse),
    ApiKey.LIST_OFFSETS: (ListOffsetsRequest, ListOffsetsResponse),
    ApiKey.LEADER_AND_ISR: (LeaderAndIsrRequest, LeaderAndIsrResponse),
    ApiKey.STOP_REPLICA: (StopReplicaRequest, StopReplicaResponse),
    ApiKey.UPDATE_METADATA: (UpdateMetadataRequest, UpdateMetadataResponse),
    ApiKey.CONTROLLED_SHUTDOWN: (ControlledShutdownRequest, ControlledShutdownResponse),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse),
}

API_KEY_OF_REQUEST: dict[type, ApiKey] = {req: key for key, (req, _) in API_TYPES.items()}
