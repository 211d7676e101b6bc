"""Kafka's error codes (same numbers and names) and the exceptions that carry them.

Every layer raises a `KafkaError` subclass; request handlers turn it into the code
on the wire, clients turn codes back into exceptions with `error_for_code`.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum


class ErrorCode(IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    KAFKA_STORAGE_ERROR = 56
    SASL_AUTHENTICATION_FAILED = 58
    REASSIGNMENT_IN_PROGRESS = 60
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    UNKNOWN_TOPIC_ID = 100
    UNSUPPORTED_ENDPOINT_TYPE = 115


class KafkaError(Exception):
    """An error with a Kafka error code. Subclasses fix the code."""

    code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR
    retriable: bool = False

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.code.name)
        self.message = message or self.code.name

    def __str__(self) -> str:
        return (
            f"{self.code.name}: {self.message}" if self.message != self.code.name else self.message
        )


class OffsetOutOfRangeError(KafkaError):
    code = ErrorCode.OFFSET_OUT_OF_RANGE


class CorruptRecordError(KafkaError):
    code = ErrorCode.CORRUPT_MESSAGE
    retriable = True


class UnknownTopicOrPartitionError(KafkaError):
    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    retriable = True


class LeaderNotAvailableError(KafkaError):
    code = ErrorCode.LEADER_NOT_AVAILABLE
    retriable = True


class NotLeaderOrFollowerError(KafkaError):
    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
    retriable = True


class OffsetNotAvailableError(KafkaError):
    """KIP-207: a new leader's HW is still below the offset its epoch began at, so the
    latest offset it could answer might be lower than the previous leader's."""

    code = ErrorCode.OFFSET_NOT_AVAILABLE
    retriable = True


class RequestTimedOutError(KafkaError):
    code = ErrorCode.REQUEST_TIMED_OUT
    retriable = True


class MessageTooLargeError(KafkaError):
    code = ErrorCode.MESSAGE_TOO_LARGE


class StaleControllerEpochError(KafkaError):
    code = ErrorCode.STALE_CONTROLLER_EPOCH


class RecordListTooLargeError(KafkaError):
    code = ErrorCode.RECORD_LIST_TOO_LARGE


class NotEnoughReplicasError(KafkaError):
    code = ErrorCode.NOT_ENOUGH_REPLICAS
    retriable = True


class NotEnoughReplicasAfterAppendError(KafkaError):
    code = ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    retriable = True


class InvalidRequestError(KafkaError):
    code = ErrorCode.INVALID_REQUEST


class KafkaStorageError(KafkaError):
    code = ErrorCode.KAFKA_STORAGE_ERROR
    retriable = True


class FencedLeaderEpochError(KafkaError):
    code = ErrorCode.FENCED_LEADER_EPOCH
    retriable = True


class UnknownLeaderEpochError(KafkaError):
    code = ErrorCode.UNKNOWN_LEADER_EPOCH
    retriable = True


class InvalidRecordError(KafkaError):
    code = ErrorCode.INVALID_RECORD


# Kafka's messages for a batch refused for some of its records (LogValidator).
RECORDS_REJECTED = "One or more records have been rejected"
RECORDS_REJECTED_FOR_TIMESTAMPS = "One or more records have been rejected due to invalid timestamp"


class RecordValidationError(InvalidRecordError):
    """Records of a batch refused one by one (Kafka's RecordValidationException, KIP-467):
    the batch is not appended, and the Produce response names each bad record by its index
    in its batch, with why, so that a client fails those records and not the others. The
    error is INVALID_TIMESTAMP if any record's timestamp is at fault, else INVALID_RECORD."""

    def __init__(
        self, record_errors: Sequence[tuple[int, str]], *, invalid_timestamp: bool = False
    ) -> None:
        super().__init__(RECORDS_REJECTED_FOR_TIMESTAMPS if invalid_timestamp else RECORDS_REJECTED)
        if invalid_timestamp:
            self.code = ErrorCode.INVALID_TIMESTAMP
        self.record_errors: tuple[tuple[int, str], ...] = tuple(record_errors)


class CoordinatorNotAvailableError(KafkaError):
    code = ErrorCode.COORDINATOR_NOT_AVAILABLE


class OutOfOrderSequenceError(KafkaError):
    code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(KafkaError):
    code = ErrorCode.INVALID_PRODUCER_EPOCH


class InvalidConfigError(KafkaError):
    code = ErrorCode.INVALID_CONFIG


class InvalidRequiredAcksError(KafkaError):
    code = ErrorCode.INVALID_REQUIRED_ACKS


class TopicAlreadyExistsError(KafkaError):
    code = ErrorCode.TOPIC_ALREADY_EXISTS


class InvalidPartitionsError(KafkaError):
    code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactorError(KafkaError):
    code = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidReplicaAssignmentError(KafkaError):
    code = ErrorCode.INVALID_REPLICA_ASSIGNMENT


class ClusterAuthorizationFailedError(KafkaError):
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


class ReassignmentInProgressError(KafkaError):
    code = ErrorCode.REASSIGNMENT_IN_PROGRESS


class NoReassignmentInProgressError(KafkaError):
    code = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS


class NotControllerError(KafkaError):
    code = ErrorCode.NOT_CONTROLLER
    retriable = True


class StaleBrokerEpochError(KafkaError):
    code = ErrorCode.STALE_BROKER_EPOCH


class InvalidTopicError(KafkaError):
    code = ErrorCode.INVALID_TOPIC_EXCEPTION


class BrokerNotAvailableError(KafkaError):
    code = ErrorCode.BROKER_NOT_AVAILABLE
    retriable = True


class PolicyViolationError(KafkaError):
    code = ErrorCode.POLICY_VIOLATION


class UnsupportedVersionError(KafkaError):
    code = ErrorCode.UNSUPPORTED_VERSION


class TopicDeletionDisabledError(KafkaError):
    code = ErrorCode.TOPIC_DELETION_DISABLED


class FetchSessionIdNotFoundError(KafkaError):
    """KIP-227: the leader has no fetch session with this id (evicted, or it restarted)."""

    code = ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    retriable = True

    def __init__(self, message: str = "") -> None:
        super().__init__(message or "The fetch session ID was not found.")


class InvalidFetchSessionEpochError(KafkaError):
    """KIP-227: the request's session epoch is not the one the leader expects."""

    code = ErrorCode.INVALID_FETCH_SESSION_EPOCH
    retriable = True

    def __init__(self, message: str = "") -> None:
        super().__init__(message or "The fetch session epoch is invalid.")


def _all_subclasses(cls: type[KafkaError]) -> list[type[KafkaError]]:
    out: list[type[KafkaError]] = []
    for sub in cls.__subclasses__():
        out.append(sub)
        out.extend(_all_subclasses(sub))
    return out


_BY_CODE: dict[ErrorCode, type[KafkaError]] = {sub.code: sub for sub in _all_subclasses(KafkaError)}


def error_for_code(code: int, message: str = "") -> KafkaError:
    """The exception for a code received on the wire (a plain KafkaError if none is specific)."""
    try:
        ec = ErrorCode(code)
    except ValueError:
        err = KafkaError(message or f"unknown error code {code}")
        return err
    cls = _BY_CODE.get(ec)
    if cls is not None:
        return cls(message)
    err = KafkaError(message or ec.name)
    err.code = ec
    return err
