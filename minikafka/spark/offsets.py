"""Offset arithmetic of the Spark source, as spark-sql-kafka does it (pure: no Spark, no
network): Kafka's offsets JSON in a stable order, resolving startingOffsets against the
log's real offsets, admission control (maxOffsetsPerTrigger spread over partitions by
backlog), and planning one offset range per partition with Spark's data-loss rules.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
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


def _check_names_every_partition(
    spec: OffsetSpec, tps: Iterable[TopicPartition], option: str
) -> None:
    missing = [tp for tp in tps if tp not in spec.offsets]
    if missing:
        names = ", ".join(f"{tp.topic}-{tp.partition}" for tp in missing)
        what = "offsets" if spec.kind == "specific" else "timestamps"
        hint = " (use -1 for latest, -2 for earliest)" if spec.kind == "specific" else ""
        raise SparkOptionError(
            f"{option} holds specific {what}, so it must name every partition the query "
            f"reads{hint}; missing: {names}"
        )


def timestamps_to_look_up(
    spec: OffsetSpec, partitions: Iterable[TopicPartition], option: str
) -> dict[TopicPartition, int]:
    """The timestamp to ask ListOffsets for, per partition, of a timestamp spec (empty for
    the other kinds)."""
    tps = list(partitions)
    if spec.kind == "timestamp":
        assert spec.timestamp is not None
        return {tp: spec.timestamp for tp in tps}
    if spec.kind == "by_timestamp":
        _check_names_every_partition(spec, tps, option)
        return {tp: spec.offsets[tp] for tp in tps}
    return {}


def resolve(
    spec: OffsetSpec,
    partitions: Iterable[TopicPartition],
    earliest: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    option: str,
    *,
    by_time: Mapping[TopicPartition, int] | None = None,
    starting: bool = True,
) -> PartitionOffsets:
    """Real offsets for `partitions` from a start or end spec. Specific offsets must name
    every partition the query reads (Spark's rule), -2 / -1 resolve to the earliest / latest
    offset. For a timestamp spec, `by_time` holds what ListOffsets found for each
    partition's timestamp (the first offset whose timestamp is at or after it; -1 when no
    record's is): none found is, for a start, an error or the latest offset per the spec's
    strategy, for an end the latest offset (Spark's rules)."""
    tps = list(partitions)
    if spec.kind == "earliest":
        return {tp: earliest[tp] for tp in tps}
    if spec.kind == "latest":
        return {tp: latest[tp] for tp in tps}
    if spec.kind in ("timestamp", "by_timestamp"):
        wanted = timestamps_to_look_up(spec, tps, option)
        assert by_time is not None
        resolved: PartitionOffsets = {}
        for tp in tps:
            found = by_time[tp]
            if found >= 0:
                resolved[tp] = found
            elif starting and spec.no_match == "error":
                raise SparkOptionError(
                    f"{option}: No offset matched from request of topic-partition "
                    f"{tp.topic}-{tp.partition} and timestamp {wanted[tp]} (no record's "
                    "timestamp is at or after it; startingOffsetsByTimestampStrategy=latest "
                    "starts such a partition at its latest offset instead)"
                )
            else:
                resolved[tp] = latest[tp]
        return resolved
    _check_names_every_partition(spec, tps, option)
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


def _divide(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """`r` cut into `parts` contiguous pieces differing by at most one offset, the later
    pieces taking the remainder (Spark's getDividedPartition); empty pieces dropped."""
    out: list[OffsetRange] = []
    remaining = r.size
    begin = r.from_offset
    for part in range(parts):
        this = remaining // (parts - part)
        remaining -= this
        end = min(begin + this, r.until_offset)
        if end > begin:
            out.append(OffsetRange(r.topic, r.partition, begin, end))
        begin = end
    return out


def split_ranges(
    ranges: Sequence[OffsetRange],
    min_partitions: int | None,
    max_records_per_partition: int | None = None,
) -> list[OffsetRange]:
    """Spark's KafkaOffsetRangeCalculator.getRanges: the non-empty ranges, one Spark task
    each, unless

    - `max_records_per_partition`: a range with more offsets is first cut into as few
      even pieces as keep each within it;
    - `min_partitions`: with fewer ranges (or pieces) than that, the large ones are cut
      into about `min_partitions` Spark tasks in all, each its share by size (a range
      rounding to one part stays whole, and its size is left out of the others' shares).

    The pieces of a range are contiguous and cover it exactly, so every offset is still
    read once; the second step only cuts further, so no piece exceeds the maximum."""
    nonempty = [r for r in ranges if r.size > 0]
    if max_records_per_partition is not None:
        nonempty = [
            piece for r in nonempty for piece in _divide(r, -(-r.size // max_records_per_partition))
        ]
    if min_partitions is None or len(nonempty) >= min_partitions:
        return nonempty
    total = sum(r.size for r in nonempty)

    def part_count(size: int, of_total: int, parts: int) -> int:
        # Scala's math.round: half up
        return max(math.floor(size / of_total * parts + 0.5), 1)

    # By topic partition, as Spark's: once maxRecordsPerPartition has cut a partition,
    # one of its pieces rounding to one part keeps all its pieces whole.
    unsplit = [r for r in nonempty if part_count(r.size, total, min_partitions) == 1]
    unsplit_tps = {r.tp for r in unsplit}
    split_total = total - sum(r.size for r in unsplit)
    split_min = max(min_partitions - len(unsplit), 1)
    out: list[OffsetRange] = []
    for r in nonempty:
        parts = 1 if r.tp in unsplit_tps else part_count(r.size, split_total, split_min)
        out.extend(_divide(r, parts))
    return out
