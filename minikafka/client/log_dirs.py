"""Brokers' log dirs and the replicas in them: Kafka's DescribeLogDirs, sent to each broker
asked as Kafka's admin client sends it (every replica: topics null). librdkafka has no call
for it, so it goes over `kafka_wire`; librdkafka's metadata finds the brokers."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from minikafka.client.kafka_wire import KafkaConnection
from minikafka.client.librdkafka import ClientConfigError, cluster_metadata
from minikafka.common import TopicPartition
from minikafka.protocol.errors import BrokerNotAvailableError, ErrorCode, KafkaError


@dataclass(frozen=True)
class ReplicaInfo:
    """Kafka's ReplicaInfo: the replica's size in bytes, how far its LEO is behind (a
    current log: the HW; a future log: the current one), whether it is a future log."""

    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class LogDirInfo:
    """Kafka's LogDirDescription: a log dir's error code (NONE, or e.g. KAFKA_STORAGE_ERROR
    for a dir offline) and the replicas in it."""

    path: str
    error_code: int
    replicas: dict[TopicPartition, ReplicaInfo]


class LogDirsError(Exception):
    """The brokers could not be asked (none answered, one is not in the cluster)."""


def describe_log_dirs_request() -> Any:
    """DescribeLogDirs v2 (Kafka 2.8's latest) for every replica: topics null."""
    from kio.schema.describe_log_dirs.v2.request import DescribeLogDirsRequest

    return DescribeLogDirsRequest(topics=None)


def log_dirs_of(response: Any) -> list[LogDirInfo]:
    return [
        LogDirInfo(
            r.log_dir,
            int(r.error_code),
            {
                TopicPartition(t.name, p.partition_index): ReplicaInfo(
                    p.partition_size, p.offset_lag, p.is_future_key
                )
                for t in r.topics
                for p in t.partitions
            },
        )
        for r in response.results
    ]


def broker_addresses(bootstrap_servers: str, timeout_s: float) -> dict[int, tuple[str, int]]:
    """Every broker of the cluster (its id -> host, port), from librdkafka's metadata."""
    try:
        md = cluster_metadata(bootstrap_servers, LogDirsError, timeout_s)
    except ClientConfigError as e:
        raise LogDirsError(str(e)) from None
    return {b.id: (b.host or "", b.port) for b in md.brokers.values()}


async def describe_log_dirs(
    addresses: dict[int, tuple[str, int]],
    broker_ids: Sequence[int],
    timeout_s: float,
    client_id: str = "log-dirs-tool",
) -> dict[int, list[LogDirInfo]]:
    """Each broker's log dirs, asked of all of them at once. KafkaError (NetworkError,
    BrokerNotAvailableError for an id not in `addresses`) for a broker that could not
    answer: Kafka's tool fails as a whole then too."""
    missing = [b for b in broker_ids if b not in addresses]
    if missing:
        raise BrokerNotAvailableError(
            f"broker {', '.join(map(str, missing))} is not in the cluster metadata"
        )

    async def ask(broker_id: int) -> list[LogDirInfo]:
        conn = KafkaConnection(*addresses[broker_id], client_id=client_id)
        try:
            return log_dirs_of(await conn.call(describe_log_dirs_request(), timeout_s))
        finally:
            await conn.close()

    answers = await asyncio.gather(*(ask(b) for b in broker_ids), return_exceptions=True)
    out: dict[int, list[LogDirInfo]] = {}
    for b, answer in zip(broker_ids, answers, strict=True):
        if isinstance(answer, BaseException):
            if isinstance(answer, KafkaError):
                raise type(answer)(f"broker {b}: {answer}") from None
            raise answer
        out[b] = answer
    return out


# Kafka's exception class of a log dir's error (LogDirDescription.error), by code.
_JAVA_EXCEPTIONS = {
    ErrorCode.KAFKA_STORAGE_ERROR: "KafkaStorageException",
    ErrorCode.UNKNOWN_SERVER_ERROR: "UnknownServerException",
}


def java_exception_name(code: int) -> str | None:
    """What kafka-log-dirs.sh prints as a log dir's "error": the exception's class name,
    null for none."""
    if code == ErrorCode.NONE:
        return None
    try:
        name = _JAVA_EXCEPTIONS.get(ErrorCode(code))
    except ValueError:
        name = None
    return f"org.apache.kafka.common.errors.{name or 'UnknownServerException'}"
