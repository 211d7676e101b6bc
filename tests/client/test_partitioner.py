"""Kafka's default partitioner, checked against the values Kafka's own tests use."""

import random

import pytest

from minikafka.client.partitioner import (
    DefaultPartitioner,
    murmur2,
    partition_for_key,
    to_positive,
)

# org.apache.kafka.common.utils.UtilsTest#testMurmur2 (plus the empty input).
KAFKA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
    b"": 275646681,
}


@pytest.mark.parametrize(("data", "expected"), list(KAFKA_MURMUR2.items()))
def test_murmur2_matches_kafkas_utils_murmur2(data, expected):
    assert murmur2(data) == expected


def test_to_positive_clears_the_sign_bit_like_kafka():
    assert to_positive(-(2**31)) == 0  # abs() would overflow in Java
    assert to_positive(-1) == 2**31 - 1
    assert to_positive(42) == 42


def test_keyed_partition_is_to_positive_murmur2_mod_partition_count():
    # toPositive(-790332482) = 1357151166; 1357151166 % 50 = 16
    assert partition_for_key(b"foobar", 50) == 16
    p = DefaultPartitioner()
    for key, h in KAFKA_MURMUR2.items():
        assert p.partition("t", key, list(range(7)), [0]) == (h & 0x7FFFFFFF) % 7


def test_keyed_records_ignore_partition_availability():
    # A key keeps its partition even while that partition has no leader.
    p = DefaultPartitioner()
    assert p.partition("t", b"foobar", list(range(50)), available=[0, 1]) == 16


def test_keyless_records_stick_to_one_available_partition_until_a_new_batch():
    p = DefaultPartitioner(random.Random(7))
    first = p.partition("t", None, [0, 1, 2, 3], [1, 2, 3])
    assert first in (1, 2, 3)
    assert all(p.partition("t", None, [0, 1, 2, 3], [1, 2, 3]) == first for _ in range(20))
    p.on_new_batch("t", [0, 1, 2, 3], [1, 2, 3], first)
    second = p.partition("t", None, [0, 1, 2, 3], [1, 2, 3])
    assert second != first and second in (1, 2, 3)


def test_new_batch_on_a_partition_that_is_no_longer_sticky_changes_nothing():
    p = DefaultPartitioner(random.Random(1))
    sticky = p.partition("t", None, [0, 1, 2], [0, 1, 2])
    other = next(x for x in (0, 1, 2) if x != sticky)
    p.on_new_batch("t", [0, 1, 2], [0, 1, 2], other)
    assert p.partition("t", None, [0, 1, 2], [0, 1, 2]) == sticky


def test_keyless_records_spread_over_partitions_across_batches():
    p = DefaultPartitioner(random.Random(3))
    seen = set()
    for _ in range(50):
        part = p.partition("t", None, [0, 1, 2], [0, 1, 2])
        seen.add(part)
        p.on_new_batch("t", [0, 1, 2], [0, 1, 2], part)
    assert seen == {0, 1, 2}


def test_keyless_records_fall_back_to_any_partition_when_none_has_a_leader():
    p = DefaultPartitioner(random.Random(5))
    assert p.partition("t", None, [0, 1], []) in (0, 1)
