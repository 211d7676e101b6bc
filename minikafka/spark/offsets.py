"""Offset arithmetic of the Spark source, as spark-sql-kafka does it (pure: no Spark, no
network): Kafka's offsets JSON in a stable order, resolving startingOffsets against the
log's real offsets, admission control (maxOffsetsPerTrigger spread over partitions by
backlog), and planning one offset range per partition with Spark's data-loss rules.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from minikafka.common import TopicPartition
from minikafka.spark.options import EARLIEST, LATEST, OffsetSpec, SparkOptionError

log = logging.getLogger(__name__)

PartitionOffsets = dict[TopicPartition, int]

# Spark's words (KafkaSourceProvider), so a Spark user recognises them.
INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_FALSE = (
    "Some data may have been lost because they are not available in minikafka any more; "
    "either the data was aged out by retention or the topic may have been deleted before "
    "all the data in the topic was processed. If you want your query to fail on such "
    'cases, set the source option "failOnDataLoss" to "true".'
)
INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_TRUE = (
    "Some data may have been lost because they are not available in minikafka any more; "
    "either the data was aged out by retention or the topic may have been deleted before "
    "all the data in the topic was processed. If you don't want your query to fail on "
    'such cases, set the source option "failOnDataLoss" to "false".'
)


class DataLossError(RuntimeError):
    """Offsets the query should read are gone (failOnDataLoss=true)."""


def report_data_loss(message: str, fail_on_data_loss: bool) -> None:
    """Raise (failOnDataLoss=true) or log a warning (false), as Spark's reportDataLoss."""
    if fail_on_data_loss:
        raise DataLossError(f"{message}. {INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_TRUE}")
    log.warning("%s. %s", message, INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_FALSE)


def to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Kafka's offsets JSON as a dict, topics and partitions in sorted order: Spark compares
    a source's offsets as JSON text, so the same offsets must always print the same."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return out


def from_json(data: Mapping[str, object]) -> PartitionOffsets:
    """The dict Spark gives back (from a checkpoint or a previous call) -> offsets."""
    out: PartitionOffsets = {}
    for topic, parts in data.items():
        if not isinstance(parts, Mapping):
            raise ValueError(f"offsets of topic {topic!r} are not a JSON object: {parts!r}")
        for p, offset in parts.items():
            if not isinstance(offset, int):
                raise ValueError(f"offset of {topic}-{p} is not an integer: {offset!r}")
            out[TopicPartition(topic, int(p))] = offset
    return out


def resolve(
    spec: OffsetSpec,
    partitions: Iterable[TopicPartition],
    earliest: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    option: str,
) -> PartitionOffsets:
    """Real offsets for `partitions` from a startingOffsets / endingOffsets spec. Specific
    offsets must name every partition the query reads (Spark's rule), -2 / -1 resolve to the
    earliest / latest offset."""
    tps = list(partitions)
    if spec.kind == "earliest":
        return {tp: earliest[tp] for tp in tps}
    if spec.kind == "latest":
        return {tp: latest[tp] for tp in tps}
    missing = [tp for tp in tps if tp not in spec.offsets]
    if missing:
        names = ", ".join(f"{tp.topic}-{tp.partition}" for tp in missing)
        raise SparkOptionError(
            f"{option} holds specific offsets, so it must name every partition the query "
            f"reads (use -1 for latest, -2 for earliest); missing: {names}"
        )
    out: PartitionOffsets = {}
    for tp in tps:
        offset = spec.offsets[tp]
        out[tp] = earliest[tp] if offset == EARLIEST else latest[tp] if offset == LATEST else offset
    return out


def rate_limit(
    limit: int,
    start: Mapping[TopicPartition, int],
    end: Mapping[TopicPartition, int],
    new_partition_start: Mapping[TopicPartition, int],
) -> PartitionOffsets:
    """At most about `limit` offsets past `start` in all, shared by backlog (Spark's
    KafkaMicroBatchStream.rateLimit): each partition with a backlog gets its prorated share,
    rounded down, but never less than one offset; no partition goes past `end`."""
    sizes: dict[TopicPartition, int] = {}
    begins: dict[TopicPartition, int] = {}
    for tp, until in end.items():
        begin = start.get(tp, new_partition_start.get(tp))
        if begin is None:
            continue
        if until - begin > 0:
            sizes[tp] = until - begin
            begins[tp] = begin
    total = sum(sizes.values())
    if total < 1:
        return dict(end)
    out: PartitionOffsets = {}
    for tp, until in end.items():
        size = sizes.get(tp)
        if size is None:
            out[tp] = until
            continue
        prorate = limit * (size / total)
        share = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        out[tp] = min(until, begins[tp] + share)
    return out


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Offsets [from_offset, until_offset) of one partition: one Spark input partition."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def size(self) -> int:
        return self.until_offset - self.from_offset


def plan_ranges(
    start: Mapping[TopicPartition, int],
    end: Mapping[TopicPartition, int],
    earliest: Mapping[TopicPartition, int],
    fail_on_data_loss: bool,
) -> list[OffsetRange]:
    """The non-empty ranges between two offsets of a query, by Spark's rules:

    - a partition in `end` but not in `start` (added since) starts at its earliest offset;
    - a partition in `start` but not in `end` is gone: data loss;
    - an end below its start (the log was truncated, or the topic recreated): data loss, the
      partition is skipped;
    - a start below the log start offset (`earliest`; retention deleted it): data loss, and
      without failOnDataLoss the range starts at the log start.

    Data loss raises DataLossError when `fail_on_data_loss`, else logs a warning.
    """
    gone = sorted(set(start) - set(end))
    if gone:
        names = ", ".join(f"{tp.topic}-{tp.partition}" for tp in gone)
        report_data_loss(f"{names} are gone", fail_on_data_loss)
    ranges: list[OffsetRange] = []
    for tp in sorted(end):
        until = end[tp]
        if tp in start:
            begin = start[tp]
        elif tp in earliest:
            begin = earliest[tp]
        else:
            report_data_loss(
                f"Cannot find the earliest offset of new partition {tp}", fail_on_data_loss
            )
            continue
        log_start = earliest.get(tp)
        if log_start is not None and begin < log_start:
            report_data_loss(
                f"Partition {tp.topic}-{tp.partition}'s offset {begin} is below its log start "
                f"offset {log_start}",
                fail_on_data_loss,
            )
            begin = log_start
        if until < begin:
            report_data_loss(
                f"Partition {tp.topic}-{tp.partition}'s offset was changed from {begin} to "
                f"{until}, some data may have been missed",
                fail_on_data_loss,
            )
            continue
        if until > begin:
            ranges.append(OffsetRange(tp.topic, tp.partition, begin, until))
    return ranges
