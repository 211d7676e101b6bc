"""`minikafka delete-records`' offset JSON, read as Kafka's DeleteRecordsCommand reads it,
and the error lines it prints as Kafka's tool does."""

from __future__ import annotations

import pytest

from minikafka.cli.delete_records import DeleteRecordsError, error_text, parse_offset_json
from minikafka.common import TopicPartition


def test_kafkas_json_in_order() -> None:
    text = (
        '{"partitions": [{"topic": "b", "partition": 1, "offset": 7},'
        ' {"topic": "a", "partition": 0, "offset": -1}], "version": 1}'
    )
    assert parse_offset_json(text) == [(TopicPartition("b", 1), 7), (TopicPartition("a", 0), -1)]
    # No version: Kafka's earliest, 1.
    assert parse_offset_json('{"partitions": []}') == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "The input string is not a valid JSON"),
        ('{"partitions": [], "version": 2}', "Not supported version field value 2"),
        ('{"version": 1}', "Missing partitions field"),
        ('{"partitions": [{"topic": "a", "partition": 0}]}', "needs topic, partition and offset"),
        ('{"partitions": [{"topic": "a", "partition": "0", "offset": 1}]}', "not a topic"),
        (
            '{"partitions": [{"topic": "a", "partition": 0, "offset": 1},'
            ' {"topic": "a", "partition": 0, "offset": 2}]}',
            "Offset json file contains duplicate topic partitions: a-0",
        ),
    ],
)
def test_what_kafkas_tool_refuses(text: str, message: str) -> None:
    with pytest.raises(DeleteRecordsError, match=message):
        parse_offset_json(text)


def test_error_lines_name_kafkas_exception() -> None:
    assert error_text(1, "OFFSET_OUT_OF_RANGE: Broker: Offset out of range") == (
        "org.apache.kafka.common.errors.OffsetOutOfRangeException: The requested offset is "
        "not within the range of offsets maintained by the server."
    )
    # An error Kafka's tool would not see from this request: librdkafka's text.
    assert error_text(-195, "_TRANSPORT: down") == "_TRANSPORT: down"
