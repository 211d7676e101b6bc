"""Kafka's internal topic of the group coordinator, `__consumer_offsets`: its name, and which
of its partitions coordinates a group (the broker leading that partition does). The records
the coordinator keeps there are coordinator/group/offsets_topic.py's."""

from __future__ import annotations

import struct
from typing import Final

# Kafka's Topic.GROUP_METADATA_TOPIC_NAME.
OFFSETS_TOPIC: Final = "__consumer_offsets"


def java_string_hash(s: str) -> int:
    """Java's `String.hashCode()`: `s[0]*31^(n-1) + ... + s[n-1]` in signed 32-bit arithmetic,
    over UTF-16 code units, so a character outside the BMP counts as its two surrogates."""
    units = s.encode("utf-16-be", "surrogatepass")  # lone surrogates are Java chars too
    h = 0
    for (unit,) in struct.iter_unpack(">H", units):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """The `__consumer_offsets` partition whose leader coordinates `group_id`:
    `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`, where Kafka's
    `Utils.abs(Integer.MIN_VALUE)` is 0 (Java's Math.abs would leave it negative)."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    h = java_string_hash(group_id)
    return (0 if h == -0x8000_0000 else abs(h)) % num_partitions
