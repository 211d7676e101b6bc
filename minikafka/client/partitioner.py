"""Kafka's default partitioner: murmur2 for keyed records, sticky partitions (KIP-480) for
keyless ones.

The hash must match Kafka's `Utils.murmur2` bit for bit, so that a key lands on the same
partition whichever client produced it.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2`: 32-bit MurmurHash2, returned as a signed Java int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length // 4
    for (k,) in struct.iter_unpack("<I", data[: n4 * 4]):
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    tail = length & ~3
    rest = length % 4
    # Java's switch falls through: 3 -> 2 -> 1.
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Kafka's `Utils.toPositive`: clear the sign bit (not abs(), which overflows for MIN_VALUE)."""
    return n & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    return to_positive(murmur2(key)) % num_partitions


class DefaultPartitioner:
    """Keyed records: `toPositive(murmur2(key)) % numPartitions` over all partitions (so a key
    keeps its partition while a leader is down). Keyless records stick to one partition until
    a batch for it is full (KIP-480), which makes fuller batches than round-robin."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._sticky: dict[str, int] = {}

    def partition(
        self,
        topic: str,
        key: bytes | None,
        partitions: Sequence[int],
        available: Sequence[int],
    ) -> int:
        """`partitions`: all partition ids of the topic; `available`: those with a leader."""
        if not partitions:
            raise ValueError(f"topic {topic} has no partitions")
        if key is not None:
            return partition_for_key(key, len(partitions))
        sticky = self._sticky.get(topic)
        if sticky is None:
            return self._next_partition(topic, partitions, available, None)
        return sticky

    def on_new_batch(
        self,
        topic: str,
        partitions: Sequence[int],
        available: Sequence[int],
        prev_partition: int,
    ) -> None:
        """The sticky partition's batch is full: move keyless records elsewhere."""
        if self._sticky.get(topic, prev_partition) == prev_partition:
            self._next_partition(topic, partitions, available, prev_partition)

    def _next_partition(
        self,
        topic: str,
        partitions: Sequence[int],
        available: Sequence[int],
        prev: int | None,
    ) -> int:
        if not available:
            choice = self._rng.choice(list(partitions))
        elif len(available) == 1:
            choice = available[0]
        else:
            candidates = [p for p in available if p != prev] or list(available)
            choice = self._rng.choice(candidates)
        self._sticky[topic] = choice
        return choice
