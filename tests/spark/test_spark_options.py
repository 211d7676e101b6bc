"""The Spark source's and sink's option checks and offset arithmetic (pure logic: no Spark,
no cluster)."""

from __future__ import annotations

import json
import logging
import socket

import pyarrow as pa
import pytest
from confluent_kafka import Message
from hypothesis import given
from hypothesis import strategies as st

from minikafka.common import TopicPartition
from minikafka.spark import offsets as offs
from minikafka.spark.arrow import records_to_batch
from minikafka.spark.options import (
    Assign,
    OffsetSpec,
    SparkOptionError,
    Subscribe,
    SubscribePattern,
    parse_sink_options,
    parse_source_options,
    select_partitions,
)

BS = {"kafka.bootstrap.servers": "localhost:9092"}


def tp(topic: str, p: int) -> TopicPartition:
    return TopicPartition(topic, p)


def source(streaming: bool | None = False, **options: str):
    return parse_source_options({**BS, **options}, streaming=streaming)


def refused(match: str, streaming: bool | None = False, **options: str) -> None:
    with pytest.raises(SparkOptionError, match=match):
        source(streaming, **options)


# --- source options ----------------------------------------------------------------------


def test_defaults_are_sparks():
    batch = source(subscribe="a")
    assert batch.starting == OffsetSpec("earliest") and batch.ending == OffsetSpec("latest")
    assert batch.fail_on_data_loss is True and batch.include_headers is False
    stream = source(True, subscribe="a")
    assert stream.starting == OffsetSpec("latest") and stream.ending is None


def test_option_names_are_case_insensitive_and_values_parsed():
    opts = parse_source_options(
        {
            "KAFKA.BOOTSTRAP.SERVERS": "h:1,h:2",
            "subscribePattern": "orders-.*",
            "StartingOffsets": '{"orders-1":{"0":5,"1":-2}}',
            "maxOffsetsPerTrigger": "100",
            "failOnDataLoss": "false",
            "includeHeaders": "TRUE",
            "kafka.fetch.wait.max.ms": "50",
            "kafka.max.poll.records": "300",
            "kafka.default.api.timeout.ms": "5000",
        },
        streaming=True,
    )
    assert opts.subscription == SubscribePattern("orders-.*")
    assert opts.starting.offsets == {tp("orders-1", 0): 5, tp("orders-1", 1): -2}
    assert opts.max_offsets_per_trigger == 100
    assert not opts.fail_on_data_loss and opts.include_headers
    # kafka.* options are librdkafka's properties by their Kafka names, passed on as given;
    # the Kafka consumer settings librdkafka lacks are the source's own.
    group_id = opts.consumer_config["group.id"]
    assert opts.consumer_config == {
        "fetch.wait.max.ms": "50",
        "isolation.level": "read_uncommitted",  # Kafka's default, not librdkafka's
        "group.id": group_id,
    }
    assert opts.read_chunk_records == 300 and opts.api_timeout_ms == 5000
    defaults = source(subscribe="a", **{"kafka.isolation.level": "read_committed"})
    assert defaults.consumer_config == {
        "isolation.level": "read_committed",
        "group.id": defaults.consumer_config["group.id"],
    }
    assert defaults.read_chunk_records == 10_000 and defaults.api_timeout_ms == 60_000


def test_bootstrap_servers_are_required():
    with pytest.raises(SparkOptionError, match=r"kafka\.bootstrap\.servers"):
        parse_source_options({"subscribe": "a"}, streaming=False)
    refused("kafka.bootstrap.servers", **{"kafka.bootstrap.servers": "nohost"}, subscribe="a")


@pytest.mark.parametrize(
    "options",
    [{}, {"subscribe": "a", "assign": '{"a":[0]}'}, {"subscribe": "a", "subscribePattern": "a"}],
)
def test_exactly_one_subscription_option(options):
    with pytest.raises(SparkOptionError, match="Exactly one of the options 'subscribe'"):
        source(**options)


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("startingOffsets", "{not json", "startingOffsets: expected e.g."),
        ("startingOffsets", '{"a":[0]}', "startingOffsets: expected e.g."),
        ("startingOffsets", '{"a":{"x":1}}', "startingOffsets: expected e.g."),
        ("startingOffsets", '{"a":{"0":-7}}', "-7 for a-0 is not an offset"),
        ("endingOffsets", '{"a":{"0":"5"}}', "endingOffsets: expected e.g."),
        ("assign", '{"a":{"0":1}}', "assign: expected e.g."),
        ("assign", "[1]", "assign: expected e.g."),
        ("subscribePattern", "(", "subscribePattern: '\\(' is not a pattern"),
        ("subscribe", " , ", "subscribe: no topic"),
        ("maxOffsetsPerTrigger", "0", "maxOffsetsPerTrigger must be a positive integer"),
        ("failOnDataLoss", "maybe", "failOnDataLoss must be true or false"),
    ],
)
def test_malformed_values_name_the_option(key, value, match):
    options = {"subscribe": "a", key: value} if key not in ("assign", "subscribe") else {key: value}
    if key == "subscribePattern":
        options = {key: value}
    refused(match, streaming=None if key == "maxOffsetsPerTrigger" else False, **options)


def test_batch_rejects_latest_start_and_earliest_end_as_spark_does():
    refused("startingOffsets can't be latest", subscribe="a", startingOffsets="latest")
    refused("endingOffsets can't be earliest", subscribe="a", endingOffsets="earliest")
    refused(
        "startingOffsets for a-0 can't be latest",
        subscribe="a",
        startingOffsets='{"a":{"0":-1}}',
    )
    refused(
        "endingOffsets for a-1 can't be earliest",
        subscribe="a",
        endingOffsets='{"a":{"0":-1,"1":-2}}',
    )
    refused("maxOffsetsPerTrigger applies to streaming", subscribe="a", maxOffsetsPerTrigger="5")


def test_streaming_rejects_ending_offsets():
    refused("endingOffsets is not valid in streaming", True, subscribe="a", endingOffsets="latest")
    refused("endingTimestamp is not valid in streaming", True, subscribe="a", endingTimestamp="5")
    refused(
        "endingOffsetsByTimestamp is not valid in streaming",
        True,
        subscribe="a",
        endingOffsetsByTimestamp='{"a":{"0":5}}',
    )


def test_specific_offsets_must_be_for_partitions_the_query_reads():
    refused(
        "startingOffsets names partitions the query does not read: b-0",
        subscribe="a",
        startingOffsets='{"b":{"0":1}}',
    )
    refused(
        "endingOffsets names partitions the query does not read: a-3",
        assign='{"a":[0]}',
        endingOffsets='{"a":{"0":1,"3":4}}',
    )


def test_unknown_unsupported_and_spark_owned_options_are_refused():
    refused("unknown option 'subscrbe'", subscribe="a", subscrbe="b")
    refused(
        "'fetchOffset.numRetries' is not supported",
        subscribe="a",
        **{"fetchOffset.numRetries": "3"},
    )
    refused("takes no path", subscribe="a", path="/x")
    refused(
        "'auto.offset.reset' is not supported", subscribe="a", **{"kafka.auto.offset.reset": "x"}
    )
    refused(
        "kafka.max.poll.records must be a positive integer",
        subscribe="a",
        **{"kafka.max.poll.records": "0"},
    )


def test_kafka_properties_are_checked_by_librdkafka():
    # librdkafka's own messages, for a name it does not have and for a bad value.
    refused(
        r'librdkafka\'s consumer config: No such configuration property: "nope"',
        subscribe="a",
        **{"kafka.nope": "1"},
    )
    refused(
        "consumer config: .*fetch.wait.max.ms",
        subscribe="a",
        **{"kafka.fetch.wait.max.ms": "soon"},
    )
    with pytest.raises(SparkOptionError, match="producer config: No such configuration property"):
        parse_sink_options({**BS, "kafka.nope": "1"})
    # A consumer property is no producer property and the other way round: librdkafka would
    # ignore it with a warning; it is refused, with that warning.
    with pytest.raises(
        SparkOptionError,
        match=r"producer config: Configuration property fetch\.wait\.max\.ms is a consumer "
        "property and will be ignored by this producer instance",
    ):
        parse_sink_options({**BS, "kafka.fetch.wait.max.ms": "10"})
    # (linger.ms is librdkafka's alias of queue.buffering.max.ms)
    refused(
        r"queue\.buffering\.max\.ms is a producer property",
        subscribe="a",
        **{"kafka.linger.ms": "5"},
    )


def test_kafka_java_client_names_librdkafka_lacks_are_refused_with_what_to_use():
    refused(
        "kafka.fetch.max.wait.ms is a property of Kafka's Java clients.*librdkafka calls it "
        "fetch.wait.max.ms",
        subscribe="a",
        **{"kafka.fetch.max.wait.ms": "50"},
    )
    refused("socket.receive.buffer.bytes", subscribe="a", **{"kafka.receive.buffer.bytes": "1"})
    for name, hint in [
        ("buffer.memory", "queue.buffering.max.kbytes"),
        ("max.request.size", "message.max.bytes"),
        ("partitioner.class", "partitioner"),
        ("compression.zstd.level", "compression.level"),
        ("interceptor.classes", "Java classes"),
    ]:
        with pytest.raises(SparkOptionError, match=f"kafka.{name} is a property.*{hint}"):
            parse_sink_options({**BS, f"kafka.{name}": "1"})


def test_kafka_properties_are_checked_without_connecting():
    """The check is librdkafka's, yet no client it makes connects to the brokers named."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        bootstrap = f"127.0.0.1:{server.getsockname()[1]}"
        parse_source_options(
            {"kafka.bootstrap.servers": bootstrap, "subscribe": "a", "kafka.client.id": "x"},
            streaming=False,
        )
        parse_sink_options({"kafka.bootstrap.servers": bootstrap, "kafka.linger.ms": "5"})
        server.setblocking(False)
        with pytest.raises(BlockingIOError):  # nothing in the accept queue
            server.accept()


def test_select_partitions():
    topics = {"orders-1": [0, 1], "orders-2": [0], "other": [0, 1, 2]}
    assert select_partitions(Subscribe(("orders-2", "missing")), topics) == [tp("orders-2", 0)]
    assert select_partitions(SubscribePattern("orders-.*"), topics) == [
        tp("orders-1", 0),
        tp("orders-1", 1),
        tp("orders-2", 0),
    ]
    # A pattern matches whole names, as Java's Pattern.matches does.
    assert select_partitions(SubscribePattern("orders"), topics) == []
    assert select_partitions(Assign((tp("other", 2), tp("other", 0))), topics) == [
        tp("other", 0),
        tp("other", 2),
    ]
    with pytest.raises(SparkOptionError, match="assign: ghost-0, other-7 not found"):
        select_partitions(Assign((tp("ghost", 0), tp("other", 7))), topics)


# --- sink options ------------------------------------------------------------------------


def test_sink_options():
    opts = parse_sink_options({**BS, "topic": "out", "kafka.linger.ms": "5"})
    assert opts.topic == "out"
    assert opts.producer_config == {
        "linger.ms": "5",
        "acks": "all",  # Spark's sink default
        # Kafka's producer defaults where librdkafka's differ
        "partitioner": "murmur2_random",
        "delivery.timeout.ms": "120000",
    }
    assert opts.max_block_ms == 60_000
    assert parse_sink_options({**BS, "kafka.acks": "1"}).producer_config["acks"] == "1"
    given = parse_sink_options(
        {**BS, "kafka.partitioner": "consistent", "kafka.message.timeout.ms": "5000"}
    ).producer_config
    assert given["partitioner"] == "consistent"
    # message.timeout.ms is librdkafka's name for delivery.timeout.ms: the user's stays
    assert given["message.timeout.ms"] == "5000" and "delivery.timeout.ms" not in given
    # max.block.ms, which librdkafka lacks, is the sink's own: how long it waits for a topic
    blocked = parse_sink_options({**BS, "kafka.max.block.ms": "0"})
    assert blocked.max_block_ms == 0 and "max.block.ms" not in blocked.producer_config
    with pytest.raises(SparkOptionError, match=r"kafka\.max\.block\.ms must be a non-negative"):
        parse_sink_options({**BS, "kafka.max.block.ms": "-1"})
    with pytest.raises(SparkOptionError, match=r"'value\.serializer' is not supported"):
        parse_sink_options({**BS, "kafka.value.serializer": "x"})
    with pytest.raises(SparkOptionError, match="unknown option 'subscribe' for the minikafka sink"):
        parse_sink_options({**BS, "subscribe": "x"})
    # Kafka's values only: librdkafka would take acks=2, which Kafka's brokers refuse.
    with pytest.raises(SparkOptionError, match="acks must be all, -1, 0 or 1, not '2'"):
        parse_sink_options({**BS, "kafka.acks": "2"})


# --- offsets -----------------------------------------------------------------------------


def test_offsets_json_is_sorted_by_topic_then_partition_number():
    offsets = {tp("b", 10): 1, tp("a", 2): 5, tp("b", 2): 3, tp("a", 0): 0}
    text = json.dumps(offs.to_json(offsets))
    assert text == '{"a": {"0": 0, "2": 5}, "b": {"2": 3, "10": 1}}'


partition_offsets = st.dictionaries(
    st.builds(TopicPartition, st.sampled_from(["a", "b", "c.d"]), st.integers(0, 20)),
    st.integers(0, 2**62),
)


@given(partition_offsets)
def test_offsets_json_round_trips_and_prints_the_same_whatever_the_insertion_order(offsets):
    data = offs.to_json(offsets)
    assert offs.from_json(json.loads(json.dumps(data))) == offsets
    shuffled = dict(reversed(list(offsets.items())))
    assert json.dumps(offs.to_json(shuffled)) == json.dumps(data)


def test_resolve_specific_offsets():
    tps = [tp("a", 0), tp("a", 1), tp("a", 2)]
    earliest = {tp("a", 0): 3, tp("a", 1): 4, tp("a", 2): 5}
    latest = {tp("a", 0): 10, tp("a", 1): 11, tp("a", 2): 12}
    spec = OffsetSpec("specific", {tp("a", 0): 7, tp("a", 1): -2, tp("a", 2): -1})
    assert offs.resolve(spec, tps, earliest, latest, "startingOffsets") == {
        tp("a", 0): 7,
        tp("a", 1): 4,
        tp("a", 2): 12,
    }
    assert offs.resolve(OffsetSpec("earliest"), tps, earliest, latest, "x") == earliest
    assert offs.resolve(OffsetSpec("latest"), tps, earliest, latest, "x") == latest
    with pytest.raises(SparkOptionError, match=r"must name every partition.*missing: a-2"):
        offs.resolve(OffsetSpec("specific", {tp("a", 0): 1, tp("a", 1): 1}), tps, {}, {}, "s")


def test_rate_limit_shares_by_backlog_and_never_starves_a_partition():
    start = {tp("a", 0): 0, tp("a", 1): 0, tp("a", 2): 100}
    end = {tp("a", 0): 1000, tp("a", 1): 10, tp("a", 2): 100}
    # backlogs 1000 and 10 of 1010: 99.0 -> 99 and 0.99 -> ceil 1; no backlog: unchanged
    assert offs.rate_limit(100, start, end, {}) == {
        tp("a", 0): 99,
        tp("a", 1): 1,
        tp("a", 2): 100,
    }
    # a new partition counts from its earliest offset
    assert offs.rate_limit(10, {}, {tp("n", 0): 50}, {tp("n", 0): 40}) == {tp("n", 0): 50}
    assert offs.rate_limit(5, {}, {tp("n", 0): 50}, {tp("n", 0): 40}) == {tp("n", 0): 45}


@given(
    st.integers(1, 10_000),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)), min_size=1, max_size=8),
)
def test_rate_limit_properties(limit, spans):
    start = {tp("t", i): s for i, (s, _) in enumerate(spans)}
    end = {tp("t", i): s + n for i, (s, n) in enumerate(spans)}
    limited = offs.rate_limit(limit, start, end, {})
    backlog = sum(end[p] - start[p] for p in end)
    moved = sum(limited[p] - start[p] for p in end)
    for p in end:
        assert start[p] <= limited[p] <= end[p]
        if end[p] > start[p]:
            assert limited[p] > start[p]  # every partition with a backlog moves
    assert moved <= max(limit, 0) + len(spans)  # prorated shares, each rounded up at most 1
    if backlog <= limit:
        assert limited == end


def test_plan_ranges_by_sparks_rules(caplog):
    start = {tp("a", 0): 5, tp("a", 1): 0, tp("gone", 0): 3}
    end = {tp("a", 0): 9, tp("a", 1): 0, tp("a", 2): 4}  # a-2 is new
    earliest = {tp("a", 0): 0, tp("a", 1): 0, tp("a", 2): 1}
    with pytest.raises(offs.DataLossError, match=r"gone-0 are gone.*failOnDataLoss.*false"):
        offs.plan_ranges(start, end, earliest, fail_on_data_loss=True)
    with caplog.at_level(logging.WARNING):
        ranges = offs.plan_ranges(start, end, earliest, fail_on_data_loss=False)
    assert "gone-0 are gone" in caplog.text
    assert ranges == [offs.OffsetRange("a", 0, 5, 9), offs.OffsetRange("a", 2, 1, 4)]


def test_plan_ranges_below_the_log_start():
    start, end, earliest = {tp("a", 0): 2}, {tp("a", 0): 10}, {tp("a", 0): 6}
    with pytest.raises(offs.DataLossError, match="offset 2 is below its log start offset 6"):
        offs.plan_ranges(start, end, earliest, fail_on_data_loss=True)
    assert offs.plan_ranges(start, end, earliest, fail_on_data_loss=False) == [
        offs.OffsetRange("a", 0, 6, 10)
    ]


def test_plan_ranges_end_below_start_is_data_loss():
    with pytest.raises(offs.DataLossError, match="offset was changed from 8 to 5"):
        offs.plan_ranges({tp("a", 0): 8}, {tp("a", 0): 5}, {tp("a", 0): 0}, True)
    assert offs.plan_ranges({tp("a", 0): 8}, {tp("a", 0): 5}, {tp("a", 0): 0}, False) == []


def test_timestamp_options_and_their_precedence_are_sparks():
    ts = 1_700_000_000_000
    # startingTimestamp wins over startingOffsetsByTimestamp, which wins over startingOffsets
    opts = source(
        subscribe="a",
        startingTimestamp=str(ts),
        startingOffsetsByTimestamp='{"a":{"0":1}}',
        startingOffsets="earliest",
        endingOffsetsByTimestamp=f'{{"a":{{"0":{ts + 5},"1":{ts + 6}}}}}',
        endingOffsets="latest",
    )
    assert opts.starting == OffsetSpec("timestamp", timestamp=ts)
    assert opts.ending == OffsetSpec("by_timestamp", {tp("a", 0): ts + 5, tp("a", 1): ts + 6})
    opts = source(
        True,
        subscribe="a",
        startingOffsetsByTimestamp='{"a":{"0":7}}',
        startingOffsets="earliest",
        startingOffsetsByTimestampStrategy="LATEST",
    )
    assert opts.starting == OffsetSpec("by_timestamp", {tp("a", 0): 7}, no_match="latest")
    assert source(subscribe="a", endingTimestamp="9").ending == OffsetSpec("timestamp", timestamp=9)


def test_timestamp_options_bad_values_are_refused():
    refused(
        "startingTimestamp: Expected a single long value, got x",
        subscribe="a",
        startingTimestamp="x",
    )
    refused("endingTimestamp: timestamp -3 is negative", subscribe="a", endingTimestamp="-3")
    refused(
        "startingOffsetsByTimestamp: expected e.g.",
        subscribe="a",
        startingOffsetsByTimestamp='{"a":{"0":"5"}}',
    )
    refused(
        "startingOffsetsByTimestampStrategy must be error or latest",
        subscribe="a",
        startingTimestamp="5",
        startingOffsetsByTimestampStrategy="earliest",
    )
    refused(
        "endingOffsetsByTimestamp names partitions the query does not read: b-0",
        subscribe="a",
        endingOffsetsByTimestamp='{"b":{"0":1}}',
    )
    # Spark's checkOffsetLimitValidity, for timestamps as for offsets
    refused(
        "starting and ending timestamps must name the same partitions",
        subscribe="a",
        startingOffsetsByTimestamp='{"a":{"0":1}}',
        endingOffsetsByTimestamp='{"a":{"0":5,"1":5}}',
    )
    refused(
        "starting timestamp 9 of a-0 is greater than its ending timestamp 5",
        subscribe="a",
        startingOffsetsByTimestamp='{"a":{"0":9}}',
        endingOffsetsByTimestamp='{"a":{"0":5}}',
    )
    refused(
        "starting offset 9 of a-0 is greater than its ending offset 5",
        subscribe="a",
        startingOffsets='{"a":{"0":9}}',
        endingOffsets='{"a":{"0":5}}',
    )


def test_trigger_and_partition_options():
    opts = source(
        True,
        subscribe="a",
        minOffsetsPerTrigger="10",
        maxOffsetsPerTrigger="10",
        maxTriggerDelay="2s",
        minPartitions="6",
    )
    assert (opts.min_offsets_per_trigger, opts.max_offsets_per_trigger) == (10, 10)
    assert opts.max_trigger_delay_ms == 2000 and opts.min_partitions == 6
    assert opts.max_records_per_partition is None
    for streaming in (False, True):  # Spark splits batch reads and micro-batches alike
        both = source(streaming, subscribe="a", minPartitions="4", maxRecordsPerPartition="20")
        assert (both.min_partitions, both.max_records_per_partition) == (4, 20)
    assert source(True, subscribe="a", minOffsetsPerTrigger="1").max_trigger_delay_ms == 900_000
    for text, ms in [("250", 250), ("100ms", 100), ("3m", 180_000), ("1h", 3_600_000)]:
        delay = source(True, subscribe="a", minOffsetsPerTrigger="1", maxTriggerDelay=text)
        assert delay.max_trigger_delay_ms == ms
    refused(
        r"The value of minOffsetPerTrigger\(11\) is higher than the maxOffsetsPerTrigger\(10\)",
        True,
        subscribe="a",
        minOffsetsPerTrigger="11",
        maxOffsetsPerTrigger="10",
    )
    refused(
        "maxTriggerDelay: time must be specified",
        True,
        subscribe="a",
        minOffsetsPerTrigger="1",
        maxTriggerDelay="soon",
    )
    refused(
        "maxTriggerDelay applies only with minOffsetsPerTrigger",
        True,
        subscribe="a",
        maxTriggerDelay="5s",
    )
    refused("minOffsetsPerTrigger applies to streaming", subscribe="a", minOffsetsPerTrigger="5")
    refused("minPartitions must be positive", subscribe="a", minPartitions="0")
    refused("minPartitions must be an integer", subscribe="a", minPartitions="many")
    refused("maxRecordsPerPartition must be positive", subscribe="a", maxRecordsPerPartition="0")
    refused(
        "maxRecordsPerPartition must be positive", True, subscribe="a", maxRecordsPerPartition="-5"
    )
    refused(
        "maxRecordsPerPartition must be an integer", subscribe="a", maxRecordsPerPartition="1e3"
    )


def test_group_ids_are_sparks(caplog):
    batch = source(subscribe="a")
    group = batch.consumer_config["group.id"]
    assert group.startswith("spark-kafka-relation-") and group.endswith("-executor")
    assert batch.driver_group_id == group.removesuffix("-executor") + "-driver"
    assert source(subscribe="a").consumer_config["group.id"] != group  # one per query
    stream = source(True, subscribe="a", groupIdPrefix="orders")
    assert stream.consumer_config["group.id"].startswith("orders-")
    assert source(True, subscribe="a").consumer_config["group.id"].startswith("spark-kafka-source-")
    with caplog.at_level(logging.WARNING):
        given = source(subscribe="a", groupIdPrefix="x", **{"kafka.group.id": "g"})
    assert given.consumer_config["group.id"] == "g" and given.driver_group_id == "g"
    assert "Kafka option 'kafka.group.id' has been set on this query" in caplog.text
    assert "Option groupIdPrefix will be ignored" in caplog.text
    refused("groupIdPrefix: the prefix is empty", subscribe="a", groupIdPrefix=" ")


def test_resolve_timestamps_by_sparks_rules():
    a0, a1 = tp("a", 0), tp("a", 1)
    spec = OffsetSpec("timestamp", timestamp=100)
    assert offs.timestamps_to_look_up(spec, [a0, a1], "startingTimestamp") == {a0: 100, a1: 100}
    latest = {a0: 50, a1: 60}
    found = {a0: 7, a1: -1}  # a-1 has no record at or after the timestamp
    with pytest.raises(
        SparkOptionError,
        match="No offset matched from request of topic-partition a-1 and timestamp 100",
    ):
        offs.resolve(spec, [a0, a1], {}, latest, "startingTimestamp", by_time=found)
    lenient = OffsetSpec("timestamp", timestamp=100, no_match="latest")
    assert offs.resolve(lenient, [a0, a1], {}, latest, "x", by_time=found) == {a0: 7, a1: 60}
    # an end with no match is the latest offset, whatever the strategy
    assert offs.resolve(spec, [a0, a1], {}, latest, "x", by_time=found, starting=False) == {
        a0: 7,
        a1: 60,
    }
    partial = OffsetSpec("by_timestamp", {a0: 5})
    with pytest.raises(
        SparkOptionError, match="must name every partition the query reads; missing: a-1"
    ):
        offs.timestamps_to_look_up(partial, [a0, a1], "startingOffsetsByTimestamp")


def rng(p: int, start: int, end: int) -> offs.OffsetRange:
    return offs.OffsetRange("t", p, start, end)


def test_split_ranges_as_kafka_offset_range_calculator():
    # Spark's KafkaOffsetRangeCalculatorSuite cases
    assert offs.split_ranges([rng(1, 1, 2)], None) == [rng(1, 1, 2)]
    assert offs.split_ranges([rng(1, 1, 2), rng(2, 1, 1)], 1) == [rng(1, 1, 2)]  # empty dropped
    assert offs.split_ranges([rng(1, 1, 5)], 3) == [rng(1, 1, 2), rng(1, 2, 3), rng(1, 3, 5)]
    assert offs.split_ranges([rng(1, 1, 5), rng(2, 1, 21)], 4) == [
        rng(1, 1, 5),  # a fifth of the data: about 1 of 4 parts, left whole
        rng(2, 1, 7),
        rng(2, 7, 14),
        rng(2, 14, 21),
    ]
    assert offs.split_ranges([rng(1, 1, 5), rng(2, 1, 21), rng(3, 1, 2)], 4) == [
        rng(1, 1, 5),
        rng(2, 1, 11),
        rng(2, 11, 21),
        rng(3, 1, 2),
    ]
    # enough ranges already: one task per range
    assert offs.split_ranges([rng(1, 0, 100), rng(2, 0, 1)], 2) == [rng(1, 0, 100), rng(2, 0, 1)]


def test_split_ranges_by_max_records_per_partition_as_spark():
    # Spark's KafkaOffsetRangeCalculatorSuite cases for maxRecordsPerPartition (SPARK-49259)
    assert offs.split_ranges([rng(1, 1, 5)], None, 4) == [rng(1, 1, 5)]  # exactly the max
    assert offs.split_ranges([rng(1, 1, 2)], None, 4) == [rng(1, 1, 2)]
    assert offs.split_ranges([rng(1, 1, 6)], None, 4) == [rng(1, 1, 3), rng(1, 3, 6)]
    assert offs.split_ranges([rng(1, 1, 40), rng(2, 1, 50), rng(3, 1, 60)], None, 20) == [
        rng(1, 1, 20),
        rng(1, 20, 40),
        rng(2, 1, 17),  # 49 offsets: three pieces, the later ones taking the remainder
        rng(2, 17, 33),
        rng(2, 33, 50),
        rng(3, 1, 20),
        rng(3, 20, 40),
        rng(3, 40, 60),
    ]
    # with minPartitions: first cut to the max, then minPartitions cuts further if the
    # pieces are still fewer
    assert offs.split_ranges([rng(1, 1, 40)], 1, 20) == [rng(1, 1, 20), rng(1, 20, 40)]
    assert offs.split_ranges([rng(1, 1, 40)], 4, 20) == [
        rng(1, 1, 10),
        rng(1, 10, 20),
        rng(1, 20, 30),
        rng(1, 30, 40),
    ]
    assert offs.split_ranges([rng(1, 1, 2), rng(2, 1, 1)], None, 1) == [rng(1, 1, 2)]


def test_split_ranges_keeps_a_partition_whole_once_one_of_its_pieces_is_small():
    # Spark tells the ranges minPartitions leaves whole by topic partition: the max cuts
    # [0, 3) into [0, 1) and [1, 3); of 3 tasks the first's share rounds to one, so the
    # second (share 2) stays whole too, and the read has 2 tasks, not 3.
    assert offs.split_ranges([rng(1, 0, 3)], 3, 2) == [rng(1, 0, 1), rng(1, 1, 3)]
    assert offs.split_ranges([rng(1, 0, 3)], 3) == [rng(1, 0, 1), rng(1, 1, 2), rng(1, 2, 3)]


@given(
    st.lists(st.integers(0, 500), min_size=1, max_size=6),
    st.none() | st.integers(1, 40),
    st.none() | st.integers(1, 600),
)
def test_split_ranges_cover_every_offset_once(sizes, min_partitions, max_records):
    ranges = [rng(p, 10 * p, 10 * p + size) for p, size in enumerate(sizes)]
    pieces = offs.split_ranges(ranges, min_partitions, max_records)
    covered = sorted((r.partition, o) for r in pieces for o in range(r.from_offset, r.until_offset))
    expected = sorted(
        (r.partition, o) for r in ranges for o in range(r.from_offset, r.until_offset)
    )
    assert covered == expected  # every offset exactly once, nothing else
    assert all(r.size > 0 for r in pieces)
    if max_records is not None:
        assert all(r.size <= max_records for r in pieces)  # no task past the max
        # and no more tasks than that takes, unless minPartitions asks for more
        fewest = sum(-(-size // max_records) for size in sizes)
        assert len(pieces) >= fewest
        if min_partitions is None or fewest >= min_partitions:
            assert len(pieces) == fewest
    nonempty = sum(1 for s in sizes if s)
    if min_partitions is not None and nonempty < min_partitions:
        assert len(pieces) >= nonempty


# --- records -> Arrow --------------------------------------------------------------------


def test_records_to_batch_has_the_kafka_sources_columns_and_timestamp_types():
    """librdkafka's timestamp types (1 CreateTime, 2 LogAppendTime, 0 none) become Kafka's
    TimestampType ids in Spark's timestampType column (0, 1, -1); headers keep null values."""
    records = [
        Message(
            topic="t",
            partition=2,
            offset=7 + i,
            key=b"k" if i else None,
            value=b"v%d" % i,
            headers=[("h", None), ("i", b"%d" % i)] if i != 1 else None,
            timestamp=(kind, 1_700_000_000_000 + i),
        )
        for i, kind in enumerate([1, 2, 0])
    ]
    rows = records_to_batch(records, include_headers=True).to_pylist()
    assert [r["timestampType"] for r in rows] == [0, 1, -1]
    assert [r["offset"] for r in rows] == [7, 8, 9]
    assert {(r["topic"], r["partition"]) for r in rows} == {("t", 2)}
    assert [r["key"] for r in rows] == [None, b"k", b"k"]
    assert rows[0]["headers"] == [{"key": "h", "value": None}, {"key": "i", "value": b"0"}]
    assert rows[1]["headers"] == []
    assert rows[2]["timestamp"].timestamp() * 1000 == 1_700_000_000_002
    batch = records_to_batch(records, include_headers=False)
    assert "headers" not in batch.schema.names
    assert batch.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
