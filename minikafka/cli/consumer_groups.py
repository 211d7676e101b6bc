"""`minikafka consumer-groups`: list, describe, reset the offsets of and delete consumer
groups, like kafka-consumer-groups.sh, on librdkafka's AdminClient (confluent-kafka) over
Kafka's protocol.

The tables are kafka-consumer-groups.sh's, column for column: left-aligned, each padded to
its widest value (15 characters at least, as Kafka's), a blank line before each table. A
partition's LOG-END-OFFSET is its high watermark as a consumer sees it (ListOffsets to its
leader). Kafka's notes on the group's state ("has no active members", "is rebalancing") go
to stderr, as Kafka's do; errors go there too, with Kafka's text, and end the command with
status 1. With --all-groups (every group ListGroups names, by id) an error of one group (it
is active, gone, without a reset plan) is said and the others are acted on; the status is
still 1.

As Kafka's tool, --reset-offsets only touches an inactive group (no member: state Empty),
plans without changing anything unless --execute is given, and keeps every new offset
between the partition's log start and its high watermark (--to-datetime and --by-duration
take ListOffsets' answer by timestamp as it is, or the high watermark where no record is
that recent). It refuses a group that does not exist (Kafka's would create its offsets).
--export prints the plan as the CSV --from-file reads. confluent-kafka is imported inside
the functions (client/librdkafka.py says why).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from minikafka.cli.client_options import bootstrap_server_option, require_client
from minikafka.client.librdkafka import (
    AllBrokersDown,
    ClientConfigError,
    client_config,
    kafka_error_text,
    new_admin,
    new_consumer,
    quiet_log_config,
    retrying,
    watermarks,
)

if TYPE_CHECKING:
    from confluent_kafka import Consumer, KafkaException
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.admin._group import ConsumerGroupDescription
    from confluent_kafka.admin._metadata import ClusterMetadata

T = TypeVar("T")

MISSING = "-"  # Kafka's MISSING_COLUMN_VALUE
# How often a waiting call looks whether librdkafka has found every broker down, so that a
# wrong or dead --bootstrap-server fails within a second or so rather than at the timeout.
POLL_S = 0.25
DEFAULT_TIMEOUT_MS = 30000

# Kafka's names of the classic protocol's group states (GroupState.toString()).
STATE_NAMES = {
    "UNKNOWN": "Unknown",
    "PREPARING_REBALANCING": "PreparingRebalance",
    "COMPLETING_REBALANCING": "CompletingRebalance",
    "STABLE": "Stable",
    "DEAD": "Dead",
    "EMPTY": "Empty",
}
INACTIVE_STATES = ("Empty", "Dead")
REBALANCING_STATES = ("PreparingRebalance", "CompletingRebalance")

DRY_RUN_WARNING = (
    "WARN: No action will be performed as the --execute option is missing.In a future major "
    "release, the default behavior of this command will be to prompt the user before executing "
    "the reset rather than doing a dry run. You should add the --dry-run option explicitly if "
    "you are scripting this command and want to keep the current default behavior without "
    "prompting."
)


class GroupCommandError(Exception):
    """An error worth one line on stderr ("Error: ..."), and status 1."""


class GroupSkipped(GroupCommandError):
    """An error of one group (missing, active, without a reset plan): said, and with
    --all-groups the others are acted on before the command ends with status 1."""


TopicPartitionKey = tuple[str, int]


# --- the admin client ------------------------------------------------------------------------


class _Admin:
    """librdkafka's AdminClient (and, for the partitions' offsets, a consumer that joins no
    group), failing a call as soon as librdkafka reports every broker down instead of after
    the whole timeout."""

    def __init__(self, bootstrap_server: str, timeout_s: float) -> None:
        self.bootstrap_server = bootstrap_server
        self.timeout_s = timeout_s
        self._down = AllBrokersDown()
        config = client_config(bootstrap_server, {**quiet_log_config(), "error_cb": self._down})
        self.client: AdminClient = new_admin(config)
        self._consumer: Consumer | None = None
        self._metadata: ClusterMetadata | None = None

    def consumer(self) -> Consumer:
        """A consumer that joins no group, for ListOffsets (made once, when first needed)."""
        if self._consumer is None:
            self._consumer = new_consumer(
                client_config(
                    self.bootstrap_server,
                    {
                        **quiet_log_config(),
                        "enable.auto.commit": False,
                        # Kafka's (librdkafka's is read_committed): the high watermark.
                        "isolation.level": "read_uncommitted",
                    },
                )
            )
        return self._consumer

    def wait(self, future: Future[T]) -> T:
        """An admin call's result (KafkaException: its error)."""
        deadline = time.monotonic() + self.timeout_s + POLL_S
        while True:
            try:
                return future.result(timeout=POLL_S)
            except TimeoutError:
                pass
            self.client.poll(0)  # runs error_cb
            if (message := self._down.message()) is not None:
                raise GroupCommandError(message)
            if time.monotonic() >= deadline:
                raise GroupCommandError(
                    f"Timed out after {self.timeout_s * 1000:.0f} ms waiting for the brokers"
                )

    def metadata(self) -> ClusterMetadata:
        """Every topic and live broker (asked once per command). All topics, never some:
        Metadata for a named topic may create it (auto.create.topics.enable)."""
        from confluent_kafka import KafkaException

        if self._metadata is None:
            try:
                self._metadata = self.client.list_topics(timeout=self.timeout_s)
            except KafkaException as e:
                raise GroupCommandError(kafka_error_text(e.args[0])) from None
        return self._metadata

    def offsets(self, topic: str, partition: int) -> tuple[int, int] | None:
        """(log start offset, high watermark) of a partition; None if it has no leader (or
        does not exist)."""
        md = self.metadata().topics.get(topic)
        p = None if md is None or md.error is not None else md.partitions.get(partition)
        if p is None or p.leader < 0:
            return None
        try:
            return watermarks(self.consumer(), topic, partition, self.timeout_s)
        except TimeoutError:
            return None

    def offsets_for_times(
        self, partitions: Sequence[TopicPartitionKey], timestamp: int
    ) -> dict[TopicPartitionKey, int]:
        """ListOffsets by timestamp: each partition's first offset whose record's timestamp
        is `timestamp` (ms) or later; -1 where there is none."""
        from confluent_kafka import KafkaException, TopicPartition

        if not partitions:
            return {}
        consumer = self.consumer()

        def ask(seconds: float) -> dict[TopicPartitionKey, int]:
            asked = [TopicPartition(t, p, timestamp) for t, p in partitions]
            found = consumer.offsets_for_times(asked, timeout=seconds)
            for tp in found:
                if tp.error is not None:
                    raise KafkaException(tp.error)
            return {(tp.topic, tp.partition): tp.offset for tp in found}

        try:
            return retrying("offsets by timestamp", self.timeout_s, ask)
        except TimeoutError as e:
            raise GroupCommandError(str(e)) from None

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()


# --- what the brokers say of a group -------------------------------------------------------


def state_name(description: ConsumerGroupDescription) -> str:
    state = getattr(description, "state", None)
    return "Unknown" if state is None else STATE_NAMES.get(state.name, state.name.title())


def _describe_group(admin: _Admin, group: str) -> ConsumerGroupDescription | None:
    """The group as its coordinator describes it; None if it does not exist (state Dead,
    or GROUP_ID_NOT_FOUND as newer brokers answer)."""
    from confluent_kafka import KafkaError, KafkaException

    (future,) = admin.client.describe_consumer_groups(
        [group], request_timeout=admin.timeout_s
    ).values()
    try:
        description = admin.wait(future)
    except KafkaException as e:
        if _code(e) == KafkaError.GROUP_ID_NOT_FOUND:
            return None
        raise
    return None if state_name(description) == "Dead" else description


def _committed(admin: _Admin, group: str) -> dict[TopicPartitionKey, int]:
    """The group's committed offsets, by (topic, partition)."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    (future,) = admin.client.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)], request_timeout=admin.timeout_s
    ).values()
    result = admin.wait(future)
    out: dict[TopicPartitionKey, int] = {}
    for tp in result.topic_partitions or []:
        if tp.error is not None:
            raise GroupCommandError(
                f"Offset of {tp.topic}-{tp.partition}: {kafka_error_text(tp.error)}"
            )
        if tp.offset >= 0:  # -1001 (OFFSET_INVALID): none committed
            out[(tp.topic, tp.partition)] = tp.offset
    return out


def _code(e: KafkaException) -> int | None:
    from confluent_kafka import KafkaError

    error = e.args[0] if e.args else None
    return error.code() if isinstance(error, KafkaError) else None


def _message(e: KafkaException) -> str:
    from confluent_kafka import KafkaError

    error = e.args[0] if e.args else None
    return kafka_error_text(error) if isinstance(error, KafkaError) else str(e)


# --- Kafka's tables ----------------------------------------------------------------------------


def row(widths: Sequence[int], values: Sequence[object]) -> str:
    """Java's printf with `%-Ns` per column (N: the width; 0: `%s`), joined by spaces."""
    return " ".join(f"{v!s:<{w}}" if w else str(v) for w, v in zip(widths, values, strict=True))


def _state_notes(group: str, state: str) -> None:
    """What Kafka says of the group's state before its tables (stderr)."""
    if state == "Empty":
        click.echo(f"\nConsumer group '{group}' has no active members.", err=True)
    elif state in REBALANCING_STATES:
        click.echo(f"\nWarning: Consumer group '{group}' is rebalancing.", err=True)


@dataclass(frozen=True)
class OffsetRow:
    topic: str
    partition: int
    offset: int | None
    log_end_offset: int | None
    consumer_id: str
    host: str
    client_id: str

    @property
    def lag(self) -> int | None:
        if self.offset is None or self.log_end_offset is None:
            return None
        return self.log_end_offset - self.offset


def _text(value: int | None) -> str:
    return MISSING if value is None else str(value)


def offset_rows(
    admin: _Admin, description: ConsumerGroupDescription, committed: dict[TopicPartitionKey, int]
) -> list[OffsetRow]:
    """Kafka's rows: each member's partitions (members with the most partitions first,
    each one's partitions by topic and number), then the partitions with a committed offset
    that no member owns."""
    members = sorted(
        (m for m in description.members if m.assignment.topic_partitions),
        key=lambda m: len(m.assignment.topic_partitions),
        reverse=True,
    )
    owned: list[tuple[TopicPartitionKey, str, str, str]] = []
    for m in members:
        tps = sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions)
        owned += [(tp, m.member_id, m.host, m.client_id) for tp in tps]
    taken = {tp for tp, *_ in owned}
    owned += [(tp, MISSING, MISSING, MISSING) for tp in sorted(set(committed) - taken)]
    out = []
    for (topic, partition), consumer_id, host, client_id in owned:
        offsets = admin.offsets(topic, partition)
        out.append(
            OffsetRow(
                topic,
                partition,
                committed.get((topic, partition)),
                None if offsets is None else offsets[1],
                consumer_id,
                host,
                client_id,
            )
        )
    return out


def format_offsets(group: str, rows: Iterable[OffsetRow]) -> list[str]:
    rows = list(rows)
    widths = [
        max(15, len(group)),
        max([15, *(len(r.topic) for r in rows)]),
        10,
        15,
        15,
        15,
        max([15, *(len(r.consumer_id) for r in rows)]),
        max([15, *(len(r.host) for r in rows)]),
        0,
    ]
    header = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
    lines = [row(widths, [*header, "CONSUMER-ID", "HOST", "CLIENT-ID"])]
    for r in rows:
        lines.append(
            row(
                widths,
                [
                    group,
                    r.topic,
                    r.partition,
                    _text(r.offset),
                    _text(r.log_end_offset),
                    _text(r.lag),
                    r.consumer_id,
                    r.host,
                    r.client_id,
                ],
            )
        )
    return ["", *lines]


def format_members(group: str, description: ConsumerGroupDescription) -> list[str]:
    members = description.members
    instance_ids = [m.group_instance_id or "" for m in members]
    with_instance_ids = any(instance_ids)
    widths = [
        max([15, len(group)]),
        max([15, *(len(m.member_id) for m in members)]),
        *([max([17, *(len(i) for i in instance_ids)])] if with_instance_ids else []),
        max([15, *(len(m.host) for m in members)]),
        max([15, *(len(m.client_id) for m in members)]),
        15,
    ]
    header = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    if with_instance_ids:
        header.insert(2, "GROUP-INSTANCE-ID")
    # Kafka's format ends in "%-15s ": every line has the padding and a space at its end.
    lines = ["", row(widths, header) + " "]
    for m, instance_id in zip(members, instance_ids, strict=True):
        values: list[object] = [group, m.member_id, m.host, m.client_id]
        if with_instance_ids:
            values.insert(2, instance_id)
        values.append(len(m.assignment.topic_partitions))
        lines.append(row(widths, values) + " ")
    return lines


def format_state(group: str, description: ConsumerGroupDescription) -> list[str]:
    c = description.coordinator
    coordinator = f"{c.host}:{c.port}  ({c.id_string})"  # two spaces, as Kafka's
    widths = [max(15, len(group)), max(25, len(coordinator)), 20, 20, 0]
    header = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
    values = [
        group,
        coordinator,
        description.partition_assignor or MISSING,
        state_name(description),
        len(description.members),
    ]
    return ["", row(widths, header), row(widths, values)]


# --- the reset specifiers ----------------------------------------------------------------------

_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})"
    r"(?:(Z)|([+-])(\d{2})(?::?(\d{2}))?)"
)


def parse_datetime(text: str) -> int:
    """--to-datetime as Kafka's Utils.getDateTime reads it: `YYYY-MM-DDTHH:mm:SS.sss`, then
    a zone (Z, ±hh, ±hhmm or ±hh:mm), UTC without one; epoch ms. ValueError with Kafka's
    text."""
    _, t, clock = text.partition("T")
    if not t or not clock:
        raise ValueError(
            "Error parsing timestamp. It does not contain a 'T' according to ISO8601 format"
        )
    if not any(c in clock for c in "+-Z"):
        text += "Z"
    m = _DATETIME.fullmatch(text)
    try:
        if m is None:
            raise ValueError
        year, month, day, hour, minute, second, millis = (int(g) for g in m.groups()[:7])
        zone_hours, zone_minutes = int(m[10] or 0), int(m[11] or 0)
        if zone_hours > 23 or zone_minutes > 59:
            raise ValueError
        offset = dt.timedelta(hours=zone_hours, minutes=zone_minutes)
        zone = dt.timezone(-offset if m[9] == "-" else offset)
        # datetime() refuses what a strict SimpleDateFormat does: month 13, February 30...
        at = dt.datetime(year, month, day, hour, minute, second, millis * 1000, tzinfo=zone)
    except ValueError:
        raise ValueError(f'Unparseable date: "{text}"') from None
    return (at - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(milliseconds=1)


# java.time.Duration.parse's pattern: days, hours, minutes, seconds (with a fraction).
_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?"
    r"(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration(text: str) -> int:
    """--by-duration as java.time.Duration.parse reads it (`PnDTnHnMnS`, e.g. P1DT2H,
    PT30M, PT0.5S; each part may be negative); nanoseconds. ValueError with Java's text."""
    m = _DURATION.fullmatch(text)
    parts = None if m is None else [m[2], m[4], m[5], m[6]]
    # "P" and "PT" alone are not durations.
    if m is None or parts is None or m[3] in ("T", "t") or all(p is None for p in parts):
        raise ValueError("Text cannot be parsed to a Duration")
    days, hours, minutes, seconds = (int(p) if p else 0 for p in parts)
    nanos = (((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1_000_000_000
    if m[7]:
        nanos += int(m[7].ljust(9, "0")) * (-1 if m[6].startswith("-") else 1)
    return -nanos if m[1] == "-" else nanos


def read_reset_plan(text: str, group: str | None) -> dict[str, dict[TopicPartitionKey, int]]:
    """--from-file: the CSV --export writes, offsets by group. Kafka's reading: with one
    --group, a file whose first line has three columns is `topic,partition,offset` lines
    for that group; any other is `group,topic,partition,offset` lines. Blank lines are
    skipped. ValueError naming the line that is neither."""
    rows = [
        (n, [cell.strip() for cell in cells])
        for n, cells in enumerate(csv.reader(io.StringIO(text)), 1)
        if any(cell.strip() for cell in cells)
    ]
    single = group is not None and bool(rows) and len(rows[0][1]) == 3
    columns = "topic,partition,offset" if single else "group,topic,partition,offset"
    plan: dict[str, dict[TopicPartitionKey, int]] = {}
    for n, cells in rows:
        try:
            if len(cells) != (3 if single else 4):
                raise ValueError
            topic, partition, offset = cells[-3], int(cells[-2]), int(cells[-1])
        except ValueError:
            raise ValueError(f"line {n} is not {columns}: {','.join(cells)}") from None
        owner = group if single and group is not None else cells[0]
        plan.setdefault(owner, {})[(topic, partition)] = offset
    return plan


def export_csv(planned: Mapping[str, Mapping[TopicPartitionKey, int]], with_group: bool) -> str:
    """--export: Kafka's CSV of the new offsets, `topic,partition,offset` lines for one
    --group, `group,topic,partition,offset` lines for --all-groups."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for group, offsets in planned.items():
        for (topic, partition), offset in offsets.items():
            writer.writerow(
                [group, topic, partition, offset] if with_group else [topic, partition, offset]
            )
    return out.getvalue()


@dataclass(frozen=True)
class ResetTarget:
    """A reset specifier: its Kafka name (to-earliest, to-latest, to-offset, shift-by,
    to-datetime, by-duration, from-file) and what it needs."""

    name: str
    # to-offset: the offset; shift-by: N; to-datetime, by-duration: the timestamp (ms).
    value: int | None = None
    plan: Mapping[str, Mapping[TopicPartitionKey, int]] | None = None  # from-file's


# --- the actions -------------------------------------------------------------------------------


def _listings(admin: _Admin, states: set[str] | None = None) -> list[Any]:
    """The groups (ListGroups), by id; only those in `states` if given."""
    from confluent_kafka import ConsumerGroupState

    kwargs: dict[str, Any] = {"request_timeout": admin.timeout_s}
    if states:
        by_name = {name: key for key, name in STATE_NAMES.items()}
        kwargs["states"] = {ConsumerGroupState[by_name[s]] for s in states}
    result = admin.wait(admin.client.list_consumer_groups(**kwargs))
    if result.errors:
        raise GroupCommandError("; ".join(_message(e) for e in result.errors))
    return sorted(result.valid or [], key=lambda g: g.group_id)


def _list(admin: _Admin, with_state: bool, states: set[str] | None) -> list[str]:
    listings = _listings(admin, states)
    if not with_state:
        return [g.group_id for g in listings]
    # Kafka: the group column is its widest id (15 at least) plus 10, then " %-20s".
    group_width = max([15, *(len(g.group_id) for g in listings)]) + 10
    widths = [group_width, 20]

    def name(g: Any) -> str:
        state = getattr(g, "state", None)
        return "Unknown" if state is None else STATE_NAMES.get(state.name, state.name)

    return [
        row(widths, ["GROUP", "STATE"]),
        *(row(widths, [g.group_id, name(g)]) for g in listings),
    ]


def _error(message: str) -> None:
    click.echo(f"\nError: {message}", err=True)


def _describe(admin: _Admin, groups: Sequence[str], view: str) -> bool:
    """Each group's tables, in order (Kafka's with --all-groups: by id); False if one did
    not exist (said, and the others described)."""
    found = True
    for group in groups:
        description = _describe_group(admin, group)
        if description is None:
            _error(f"Consumer group '{group}' does not exist.")
            found = False
            continue
        _state_notes(group, state_name(description))
        if view == "members":
            lines = format_members(group, description)
        elif view == "state":
            lines = format_state(group, description)
        else:
            rows = offset_rows(admin, description, _committed(admin, group))
            if not rows:
                continue  # Kafka prints no table without a row
            lines = format_offsets(group, rows)
        for line in lines:
            click.echo(line)
    return found


def parse_topic_arg(arg: str) -> tuple[str, list[int] | None]:
    """Kafka's `--topic t` (all its partitions) or `--topic t:0,1,2`."""
    if ":" not in arg:
        return arg, None
    parts = arg.split(":")
    if len(parts) != 2:
        raise click.UsageError(f"Invalid topic arg '{arg}', expected topic name and partitions")
    topic, partitions = parts
    out = []
    for p in partitions.split(","):
        try:
            out.append(int(p))
        except ValueError:
            raise click.UsageError(
                f"Invalid partition '{p}' specified in topic arg '{arg}'"
            ) from None
    return topic, out


def _partitions_to_reset(
    admin: _Admin, topics: Sequence[str], committed: dict[TopicPartitionKey, int]
) -> list[TopicPartitionKey]:
    if not topics:  # --all-topics: those the group has offsets for
        return sorted(committed)
    md = admin.metadata()
    out: list[TopicPartitionKey] = []
    for arg in topics:
        topic, partitions = parse_topic_arg(arg)
        if partitions is None:
            t = md.topics.get(topic)
            if t is None or t.error is not None:
                raise GroupCommandError(
                    "Executing consumer group command failed due to "
                    f"UNKNOWN_TOPIC_OR_PARTITION: Topic '{topic}' does not exist."
                )
            partitions = sorted(t.partitions)
        out += [(topic, p) for p in partitions]
    return _valid_partitions(admin, out)


def _valid_partitions(
    admin: _Admin, partitions: Iterable[TopicPartitionKey]
) -> list[TopicPartitionKey]:
    """Kafka's checkAllTopicPartitionsValid: every partition exists and has a leader."""
    md = admin.metadata()
    out = sorted(set(partitions))
    missing = [
        (t, p)
        for t, p in out
        if (tm := md.topics.get(t)) is None or tm.error is not None or p not in tm.partitions
    ]
    if missing:
        raise GroupCommandError(
            "Executing consumer group command failed due to The partitions "
            f'"{",".join(f"{t}-{p}" for t, p in missing)}" do not exist'
        )
    leaderless = [(t, p) for t, p in out if md.topics[t].partitions[p].leader < 0]
    if leaderless:
        raise GroupCommandError(
            "Executing consumer group command failed due to The partitions "
            f'"{",".join(f"{t}-{p}" for t, p in leaderless)}" have no leader'
        )
    return out


def plan_offset(
    tp: TopicPartitionKey,
    target: str,
    value: int | None,
    committed: dict[TopicPartitionKey, int],
    log_range: tuple[int, int],
) -> int:
    """The new offset of a partition, kept within [log start, high watermark] as Kafka's
    checkOffsetsRange does (with its warning on stderr)."""
    start, end = log_range
    if target == "to-earliest":
        return start
    if target == "to-latest":
        return end
    assert value is not None
    if target == "shift-by":
        current = committed.get(tp)
        if current is None:
            raise GroupCommandError(
                f"Cannot shift offset for partition {tp[0]}-{tp[1]} since there is no current "
                "committed offset"
            )
        wanted = current + value
    else:
        wanted = value
    if wanted > end:
        click.echo(
            f"WARN: New offset ({wanted}) is higher than latest offset for topic partition "
            f"{tp[0]}-{tp[1]}. Value will be set to {end}.",
            err=True,
        )
        return end
    if wanted < start:
        click.echo(
            f"WARN: New offset ({wanted}) is lower than earliest offset for topic partition "
            f"{tp[0]}-{tp[1]}. Value will be set to {start}.",
            err=True,
        )
        return start
    return wanted


def _log_range(admin: _Admin, tp: TopicPartitionKey) -> tuple[int, int]:
    log_range = admin.offsets(*tp)
    if log_range is None:
        raise GroupCommandError(f"Error getting offsets of topic partition: {tp[0]}-{tp[1]}")
    return log_range


def _offsets_at(
    admin: _Admin, partitions: Sequence[TopicPartitionKey], timestamp: int
) -> dict[TopicPartitionKey, int]:
    """--to-datetime and --by-duration: each partition's first offset at or after the
    timestamp; where no record is that recent, the high watermark (Kafka's fallback)."""
    found = admin.offsets_for_times(partitions, timestamp)
    out: dict[TopicPartitionKey, int] = {}
    for tp in partitions:
        offset = found.get(tp, -1)
        if offset < 0:
            click.echo(
                f"\nWarn: Partition {tp[1]} from topic {tp[0]} is empty. Falling back to latest "
                "known offset.",
                err=True,
            )
            offset = _log_range(admin, tp)[1]
        out[tp] = offset
    return out


def _plan_group(
    admin: _Admin, group: str, topics: Sequence[str], target: ResetTarget
) -> dict[TopicPartitionKey, int]:
    """The new offsets of one group (GroupSkipped: not this group)."""
    description = _describe_group(admin, group)
    if description is None:
        raise GroupSkipped(f"Consumer group '{group}' does not exist.")
    state = state_name(description)
    if state not in INACTIVE_STATES:
        raise GroupSkipped(
            f"Assignments can only be reset if the group '{group}' is inactive, but the "
            f"current state is {state}."
        )
    committed = _committed(admin, group)
    if target.name == "from-file":
        assert target.plan is not None
        requested = target.plan.get(group)
        if requested is None:
            raise GroupSkipped(f"No reset plan for group {group} found.")
        return {
            tp: plan_offset(tp, "to-offset", requested[tp], committed, _log_range(admin, tp))
            for tp in _valid_partitions(admin, requested)
        }
    partitions = _partitions_to_reset(admin, topics, committed)
    if target.name in ("to-datetime", "by-duration"):
        assert target.value is not None
        return _offsets_at(admin, partitions, target.value)
    return {
        tp: plan_offset(tp, target.name, target.value, committed, _log_range(admin, tp))
        for tp in partitions
    }


def _alter(admin: _Admin, group: str, offsets: Mapping[TopicPartitionKey, int]) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    request = ConsumerGroupTopicPartitions(
        group, [TopicPartition(t, p, offset) for (t, p), offset in offsets.items()]
    )
    (future,) = admin.client.alter_consumer_group_offsets(
        [request], request_timeout=admin.timeout_s
    ).values()
    result = admin.wait(future)
    failed = [tp for tp in result.topic_partitions or [] if tp.error is not None]
    if failed:
        raise GroupCommandError(
            "Executing consumer group command failed due to "
            + "; ".join(f"{tp.topic}-{tp.partition}: {kafka_error_text(tp.error)}" for tp in failed)
        )


def _reset(
    admin: _Admin,
    groups: Sequence[str],
    topics: Sequence[str],
    target: ResetTarget,
    execute: bool,
    export: bool,
    with_group: bool,
) -> bool:
    """Plan (and with `execute` commit) each group's new offsets, then print them: Kafka's
    table, or with `export` its CSV (`with_group`: a group column first, as Kafka's unless
    one --group was given). False if a group was skipped (said, and the others reset)."""
    planned: dict[str, dict[TopicPartitionKey, int]] = {}
    done = True
    for group in groups:
        try:
            offsets = _plan_group(admin, group, topics, target)
        except GroupSkipped as e:
            _error(str(e))
            planned[group], done = {}, False  # in Kafka's result too: its width counts
            continue
        if execute and offsets:
            _alter(admin, group, offsets)
        planned[group] = offsets
    if not any(planned.values()):
        return done
    if export:
        click.echo(export_csv(planned, with_group))  # and Kafka's blank line after it
        return done
    widths = [
        max([15, *(len(g) for g in planned)]),
        max([15, *(len(t) for offsets in planned.values() for t, _ in offsets)]),
        10,
        0,
    ]
    click.echo("")
    click.echo(row(widths, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]))
    for group, offsets in planned.items():
        for (t, p), offset in offsets.items():
            click.echo(row(widths, [group, t, p, offset]))
    return done


def _delete(admin: _Admin, groups: Sequence[str]) -> bool:
    """Delete the groups (one request); False if one could not be (said, with those that
    were)."""
    from confluent_kafka import KafkaException

    futures = (
        admin.client.delete_consumer_groups(list(groups), request_timeout=admin.timeout_s)
        if groups
        else {}
    )
    deleted: list[str] = []
    failed: dict[str, str] = {}
    for group in sorted(futures):
        try:
            admin.wait(futures[group])
            deleted.append(group)
        except KafkaException as e:
            failed[group] = _message(e)
    names = ", ".join(f"'{g}'" for g in deleted)
    if not failed:
        click.echo(f"Deletion of requested consumer groups ({names}) was successful.")
        return True
    _error("Deletion of some consumer groups failed:")
    for group, message in failed.items():
        click.echo(f"* Group '{group}' could not be deleted due to: {message}", err=True)
    if deleted:
        click.echo(f"\nThese consumer groups were deleted successfully: {names}")
    return False


# --- the command -------------------------------------------------------------------------------


def _parse_states(text: str) -> set[str]:
    """Kafka's `--list --state stable,empty` (any case)."""
    by_lower = {name.lower(): name for name in STATE_NAMES.values() if name != "Unknown"}
    states = {by_lower.get(s.strip().lower(), "") for s in text.split(",")}
    if "" in states:
        raise click.UsageError(
            f"Invalid state list '{text}'. Valid states are: " + ", ".join(by_lower.values())
        )
    return states


def _refuse_with(used: str, others: dict[str, bool]) -> None:
    for name, given in others.items():
        if given:
            raise click.UsageError(f'Option "[{used}]" can\'t be used with option "[{name}]"')


def _to_datetime(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """--to-datetime as epoch ms, refused before anything connects."""
    try:
        return None if value is None else parse_datetime(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def _by_duration(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """--by-duration in nanoseconds, refused before anything connects."""
    try:
        return None if value is None else parse_duration(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


SCENARIOS = (
    "to-earliest",
    "to-latest",
    "to-offset",
    "shift-by",
    "to-datetime",
    "by-duration",
    "from-file",
)


@click.command("consumer-groups")
@bootstrap_server_option
@click.option("--list", "list_", is_flag=True, help="List all consumer groups.")
@click.option(
    "--describe",
    is_flag=True,
    help="Describe a group (--group) or every group (--all-groups): its partitions' committed "
    "offsets and lag (--offsets, the default), its members (--members) or its state (--state).",
)
@click.option(
    "--delete", is_flag=True, help="Delete a group (--group) or every group (--all-groups)."
)
@click.option(
    "--reset-offsets",
    is_flag=True,
    help="Reset the offsets of an inactive group (--group) or of every inactive group "
    "(--all-groups): a scope (--topic or --all-topics) and a target (--to-earliest, "
    "--to-latest, --to-offset, --shift-by, --to-datetime, --by-duration), or --from-file; "
    "--dry-run (the default) plans, --execute commits, --export prints CSV.",
)
@click.option("--group", help="The consumer group to act on.")
@click.option(
    "--all-groups",
    is_flag=True,
    help="Act on every consumer group (--describe, --delete, --reset-offsets).",
)
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="TOPIC[:P,P...]",
    help="With --reset-offsets: a topic (all its partitions) or some of its partitions "
    "(repeatable).",
)
@click.option(
    "--all-topics",
    is_flag=True,
    help="With --reset-offsets: every partition the group has an offset for.",
)
@click.option("--members", is_flag=True, help="With --describe: the group's members.")
@click.option(
    "--offsets", is_flag=True, help="With --describe: offsets and lag (the default view)."
)
@click.option(
    "--state",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[STATE,...]",
    help="With --describe: the group's state. With --list: each group's state (only the groups "
    "in these states if given, e.g. stable,empty).",
)
@click.option("--to-earliest", is_flag=True, help="Reset to each partition's log start.")
@click.option("--to-latest", is_flag=True, help="Reset to each partition's high watermark.")
@click.option("--to-offset", type=int, metavar="OFFSET", help="Reset to this offset.")
@click.option(
    "--shift-by",
    type=int,
    metavar="N",
    help="Reset to the committed offset plus N (N may be negative).",
)
@click.option(
    "--to-datetime",
    callback=_to_datetime,
    metavar="YYYY-MM-DDTHH:mm:SS.sss",
    help="Reset to each partition's first offset at or after this time (ListOffsets by "
    "timestamp); a zone may follow (Z, +hh, +hhmm, +hh:mm), UTC without one. Where no record "
    "is that recent: the high watermark.",
)
@click.option(
    "--by-duration",
    callback=_by_duration,
    metavar="PnDTnHnMnS",
    help="Reset as --to-datetime to now minus this duration, e.g. PT30M, P1DT12H.",
)
@click.option(
    "--from-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Reset to the offsets of a CSV file, as --export writes it: topic,partition,offset "
    "lines for --group, group,topic,partition,offset lines for --all-groups. Takes no scope.",
)
@click.option("--dry-run", is_flag=True, help="Only show the new offsets (the default).")
@click.option("--execute", is_flag=True, help="Commit the new offsets.")
@click.option(
    "--export",
    is_flag=True,
    help="With --reset-offsets: print the new offsets as CSV, for --from-file, instead of "
    "the table.",
)
@click.option(
    "--timeout",
    "timeout_ms",
    type=click.IntRange(min=1),
    default=DEFAULT_TIMEOUT_MS,
    show_default=True,
    help="How long one request may take, in ms (kafka-consumer-groups.sh's is 5000).",
)
def consumer_groups(
    bootstrap_server: str,
    list_: bool,
    describe: bool,
    delete: bool,
    reset_offsets: bool,
    group: str | None,
    all_groups: bool,
    topics: tuple[str, ...],
    all_topics: bool,
    members: bool,
    offsets: bool,
    state: str | None,
    to_earliest: bool,
    to_latest: bool,
    to_offset: int | None,
    shift_by: int | None,
    to_datetime: int | None,
    by_duration: int | None,
    from_file: Path | None,
    dry_run: bool,
    execute: bool,
    export: bool,
    timeout_ms: int,
) -> None:
    """List, describe, reset the offsets of or delete consumer groups (like
    kafka-consumer-groups.sh), on librdkafka's admin client."""
    require_client("minikafka consumer-groups runs its admin client")
    actions = {"list": list_, "describe": describe, "delete": delete}
    actions["reset-offsets"] = reset_offsets
    if sum(actions.values()) != 1:
        raise click.UsageError(
            "Command must include exactly one action: --list, --describe, --delete, --reset-offsets"
        )
    (action,) = (name for name, given in actions.items() if given)
    specified = {
        "to-earliest": to_earliest,
        "to-latest": to_latest,
        "to-offset": to_offset is not None,
        "shift-by": shift_by is not None,
        "to-datetime": to_datetime is not None,
        "by-duration": by_duration is not None,
        "from-file": from_file is not None,
    }
    targets = {name: specified[name] for name in SCENARIOS}
    reset_only = {
        **targets,
        "all-topics": all_topics,
        "dry-run": dry_run,
        "execute": execute,
        "export": export,
    }
    if action != "reset-offsets":
        unavailable = [name for name, given in reset_only.items() if given]
        if topics and action != "delete":
            unavailable.insert(0, "topic")
        if unavailable:
            raise click.UsageError(
                f"Option(s) [{', '.join(unavailable)}] are unavailable given other options on "
                "the command line"
            )
    if action != "describe" and (members or offsets):
        names = [n for n, given in (("members", members), ("offsets", offsets)) if given]
        raise click.UsageError(
            f"Option(s) [{', '.join(names)}] are unavailable given other options on the "
            "command line"
        )
    if state is not None and action not in ("describe", "list"):
        raise click.UsageError(
            "Option(s) [state] are unavailable given other options on the command line"
        )
    if action == "list":
        _refuse_with("group", {"list": group is not None})
        _refuse_with("all-groups", {"list": all_groups})
    elif group is None and not all_groups:
        raise click.UsageError(
            f"Option [{action}] takes one of these options: [group], [all-groups]"
        )
    else:
        _refuse_with("group", {"all-groups": group is not None and all_groups})
    view = "offsets"
    if action == "describe":
        views = {"members": members, "offsets": offsets, "state": state is not None}
        if sum(views.values()) > 1:
            raise click.UsageError(
                "Option [describe] takes at most one of these options: [members], [offsets], "
                "[state]"
            )
        if state:
            raise click.UsageError("Option [describe] does not take a value for [state]")
        view = next((name for name, given in views.items() if given), "offsets")
    if action == "delete" and topics:
        raise click.UsageError(
            "The consumer does not support topic-specific offset deletion from a consumer group."
        )
    target = ResetTarget("")
    if action == "reset-offsets":
        if dry_run and execute:
            raise click.UsageError(
                "Option [reset-offsets] only accepts one of [execute] and [dry-run]"
            )
        chosen = [name for name, given in targets.items() if given]
        if len(chosen) > 1:
            _refuse_with(chosen[0], {name: True for name in chosen[1:2]})
        if not chosen:
            raise click.UsageError(
                "Option [reset-offsets] requires one of the following scenarios: "
                + ", ".join(f"[{name}]" for name in SCENARIOS)
            )
        if chosen[0] == "from-file":
            # The file names the partitions; a scope beside it would be ignored (as Kafka
            # does), so it is refused.
            _refuse_with("from-file", {"topic": bool(topics), "all-topics": all_topics})
        elif not topics and not all_topics:
            raise click.UsageError(
                "One of the reset scopes should be defined: --all-topics, --topic."
            )
        if all_topics:
            _refuse_with("all-topics", {"topic": bool(topics)})
        for arg in topics:
            parse_topic_arg(arg)  # a malformed one is a usage error before anything connects
        if from_file is not None:
            try:
                plan = read_reset_plan(from_file.read_text(), group)
            except (OSError, UnicodeDecodeError, ValueError) as e:
                raise click.BadParameter(f"{from_file}: {e}", param_hint="--from-file") from None
            target = ResetTarget("from-file", plan=plan)
        else:
            target = _reset_target(chosen[0], to_offset, shift_by, to_datetime, by_duration)
        if not dry_run and not execute:
            click.echo(DRY_RUN_WARNING, err=True)
    states = _parse_states(state) if action == "list" and state else None

    from confluent_kafka import KafkaException

    admin: _Admin | None = None
    done = True
    try:
        admin = _Admin(bootstrap_server, timeout_ms / 1000)
        if action == "list":
            for line in _list(admin, state is not None, states):
                click.echo(line)
            return
        # Kafka's --all-groups: the groups ListGroups names, by id.
        groups = [g.group_id for g in _listings(admin)] if all_groups else [group or ""]
        if action == "describe":
            done = _describe(admin, groups, view)
        elif action == "delete":
            done = _delete(admin, groups)
        else:
            done = _reset(admin, groups, topics, target, execute, export, all_groups)
    except ClientConfigError as e:
        _fail(str(e))
    except KafkaException as e:
        _fail(f"Executing consumer group command failed due to {_message(e)}")
    except GroupCommandError as e:
        _fail(str(e))
    finally:
        if admin is not None:
            admin.close()
    if not done:
        sys.exit(1)


def _reset_target(
    name: str,
    to_offset: int | None,
    shift_by: int | None,
    to_datetime: int | None,
    by_duration: int | None,
) -> ResetTarget:
    if name == "to-offset":
        return ResetTarget(name, to_offset)
    if name == "shift-by":
        return ResetTarget(name, shift_by)
    if name == "to-datetime":
        return ResetTarget(name, to_datetime)
    if name == "by-duration":
        assert by_duration is not None
        # Now minus the duration, as Kafka's Instant.now().minus(duration).toEpochMilli().
        return ResetTarget(name, (time.time_ns() - by_duration) // 1_000_000)
    return ResetTarget(name)  # to-earliest, to-latest


def _fail(message: str) -> NoReturn:
    _error(message)
    sys.exit(1)
