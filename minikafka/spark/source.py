"""`MinikafkaDataSource`: minikafka topics as a Spark source (batch and streaming) and sink,
through PySpark's Python Data Source API, modelled on spark-sql-kafka.

Where the pieces run: Spark asks for the schema and plans batch reads in a Python worker on
the driver; a streaming query keeps one stream reader object on the driver for its whole
life (initialOffset, latestOffset, partitions, commit); `read()` runs in executors' Python
workers on a pickled copy of the reader. So readers keep no connection in their pickled
state: the driver side opens its clients on first use, each `read()` opens its own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from minikafka.common import TopicPartition
from minikafka.spark import offsets as offs
from minikafka.spark.arrow import records_to_batch, spark_schema_ddl
from minikafka.spark.cluster_calls import OffsetsClient, read_range
from minikafka.spark.offsets import OffsetRange, PartitionOffsets
from minikafka.spark.options import (
    OffsetSpec,
    SourceOptions,
    SparkOptionError,
    parse_source_options,
    spec_name,
)

log = logging.getLogger(__name__)


class OffsetRangePartition(InputPartition):
    """One Spark input partition: one topic partition's offset range."""

    def __init__(self, rng: OffsetRange) -> None:
        super().__init__(rng)
        self.range = rng


def _read(options: SourceOptions, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    if not isinstance(partition, OffsetRangePartition):
        # Spark plans a batch read with no partitions as one InputPartition(None).
        if partition.value is not None:
            raise TypeError(f"not a minikafka offset range: {partition!r}")
        return
    for chunk in read_range(options, partition.range):
        yield records_to_batch(chunk, options.include_headers)


def _input_partitions(ranges: Sequence[OffsetRange]) -> list[InputPartition]:
    return [OffsetRangePartition(r) for r in ranges]


_BY_TIME = ("timestamp", "by_timestamp")


def _resolve(
    client: OffsetsClient,
    spec: OffsetSpec,
    tps: Sequence[TopicPartition],
    earliest: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    which: Literal["starting", "ending"],
) -> PartitionOffsets:
    """A start or end spec's offsets; a timestamp spec's found by ListOffsets."""
    option = spec_name(spec, which)
    by_time = None
    if spec.kind in _BY_TIME:
        by_time = client.offsets_for_times(offs.timestamps_to_look_up(spec, tps, option))
    return offs.resolve(
        spec, tps, earliest, latest, option, by_time=by_time, starting=which == "starting"
    )


class MinikafkaBatchReader(DataSourceReader):
    """`spark.read.format("minikafka")`: startingOffsets (default earliest) to endingOffsets
    (default latest, i.e. the high watermarks when the query is planned)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        opts = self.options
        assert opts.ending is not None
        client = OffsetsClient(opts)
        try:
            tps = client.partitions(opts.subscription)
            watermarks = client.watermarks(tps)
            earliest = {tp: low for tp, (low, _) in watermarks.items()}
            latest = {tp: high for tp, (_, high) in watermarks.items()}
            start = _resolve(client, opts.starting, tps, earliest, latest, "starting")
            end = _resolve(client, opts.ending, tps, earliest, latest, "ending")
        finally:
            client.close()
        by_time = opts.starting.kind in _BY_TIME or opts.ending.kind in _BY_TIME
        for tp in tps:
            if end[tp] > latest[tp]:
                raise SparkOptionError(
                    f"endingOffsets: offset {end[tp]} of {tp.topic}-{tp.partition} is past "
                    f"its high watermark {latest[tp]}"
                )
            # (Spark's batch asserts it when it reads such a range)
            if by_time and start[tp] > end[tp]:
                raise SparkOptionError(
                    f"The start offset {start[tp]} of {tp.topic}-{tp.partition} (from "
                    f"{spec_name(opts.starting, 'starting')}) is after its end offset "
                    f"{end[tp]} (from {spec_name(opts.ending, 'ending')})"
                )
        ranges = offs.plan_ranges(start, end, earliest, opts.fail_on_data_loss)
        return _input_partitions(
            offs.split_ranges(ranges, opts.min_partitions, opts.max_records_per_partition)
        )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)


class MinikafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """`spark.readStream.format("minikafka")`, as spark-sql-kafka's micro-batch stream."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._client: OffsetsClient | None = None
        self._available_now_target: PartitionOffsets | None = None
        self._latest: PartitionOffsets | None = None
        # When the last micro-batch was let run (Spark's lastTriggerMillis): 0, so the first
        # trigger runs whatever minOffsetsPerTrigger says.
        self._last_trigger_ms = 0.0

    def __getstate__(self) -> dict[str, Any]:
        # Executors get a pickled copy for read(): no clients, no driver-side state.
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"])  # type: ignore[misc]

    @property
    def client(self) -> OffsetsClient:
        if self._client is None:
            self._client = OffsetsClient(self.options)
        return self._client

    def _latest_offsets(self) -> PartitionOffsets:
        tps = self.client.partitions(self.options.subscription)
        self._latest = self.client.latest(tps)
        return self._latest

    def initialOffset(self) -> dict[str, Any]:
        tps = self.client.partitions(self.options.subscription)
        spec = self.options.starting
        earliest = self.client.earliest(tps) if spec.kind != "latest" else {}
        latest = self.client.latest(tps) if spec.kind != "earliest" else {}
        start = _resolve(self.client, spec, tps, earliest, latest, "starting")
        return offs.to_json(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        # PySpark has no composite limit: with both, maxOffsetsPerTrigger's, and latestOffset
        # applies minOffsetsPerTrigger from the options.
        opts = self.options
        if opts.max_offsets_per_trigger is not None:
            return ReadMaxRows(opts.max_offsets_per_trigger)
        if opts.min_offsets_per_trigger is not None:
            return ReadMinRows(opts.min_offsets_per_trigger)
        return ReadAllAvailable()

    def _delay_batch(self, begin: PartitionOffsets, latest: PartitionOffsets) -> bool:
        """Spark's delayBatch: skip this trigger while fewer than minOffsetsPerTrigger new
        offsets are there, unless maxTriggerDelay has passed since the last batch ran."""
        now = time.time() * 1000
        if now - self._last_trigger_ms >= self.options.max_trigger_delay_ms:
            self._last_trigger_ms = now
            return False
        new = sum(offset - begin.get(tp, 0) for tp, offset in latest.items())
        assert self.options.min_offsets_per_trigger is not None
        if new < self.options.min_offsets_per_trigger:
            return True
        self._last_trigger_ms = now
        return False

    def prepareForTriggerAvailableNow(self) -> None:
        # Trigger.AvailableNow reads what is there now, in as many micro-batches as
        # maxOffsetsPerTrigger needs, and nothing that arrives later.
        self._available_now_target = self._latest_offsets()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = offs.from_json(start)
        if self._available_now_target is not None:
            # Never past what was there when the query started; a partition the target has
            # and `begin` lacks (new since a restart) is read from its earliest offset.
            latest = dict(self._available_now_target)
        else:
            latest = self._latest_offsets()
        end = latest
        if not isinstance(limit, (ReadAllAvailable, ReadMaxRows, ReadMinRows)):
            raise ValueError(f"the minikafka source does not support the read limit {limit!r}")
        # ReadAllAvailable (Trigger.Once) reads everything, as Spark's; so does
        # Trigger.AvailableNow, which would otherwise wait for offsets that never come.
        if (
            not isinstance(limit, ReadAllAvailable)
            and self.options.min_offsets_per_trigger is not None
            and self._available_now_target is None
            and self._delay_batch(begin, latest)
        ):
            log.debug("Delaying batch: fewer new offsets than minOffsetsPerTrigger")
            return start
        if isinstance(limit, ReadMaxRows):
            new = [tp for tp in latest if tp not in begin]
            end = offs.rate_limit(limit.max_rows, begin, latest, self.client.earliest(new))
        # A partition in `begin` but gone from the cluster is not in `end`: partitions()
        # reports that as data loss.
        return offs.to_json(end)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return None if self._latest is None else offs.to_json(self._latest)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin, until = offs.from_json(start), offs.from_json(end)
        earliest = self.client.earliest(sorted(until))
        ranges = offs.plan_ranges(begin, until, earliest, self.options.fail_on_data_loss)
        opts = self.options
        return _input_partitions(
            offs.split_ranges(ranges, opts.min_partitions, opts.max_records_per_partition)
        )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)

    def commit(self, end: dict[str, Any]) -> None:
        pass  # Spark's checkpoint holds the offsets; the cluster keeps no consumer state

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


class MinikafkaDataSource(DataSource):
    """The `minikafka` format: `spark.dataSource.register(MinikafkaDataSource)`, then
    `spark.read.format("minikafka")`, `spark.readStream...`, `df.write...`, `df.writeStream...`.
    """

    @classmethod
    def name(cls) -> str:
        return "minikafka"

    def schema(self) -> str:
        # Checked here so that a bad option fails at load(), before any query is planned.
        opts = parse_source_options(self.options, streaming=None)
        return spark_schema_ddl(opts.include_headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        return MinikafkaBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return MinikafkaStreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from minikafka.spark.sink import MinikafkaBatchWriter

        return MinikafkaBatchWriter(self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from minikafka.spark.sink import MinikafkaStreamWriter

        return MinikafkaStreamWriter(self.options, schema, overwrite)
