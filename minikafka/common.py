"""Vocabulary shared by every layer."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @staticmethod
    def parse_dir_name(name: str) -> TopicPartition:
        """`orders-3` -> TopicPartition("orders", 3); topics may themselves contain '-'."""
        topic, sep, part = name.rpartition("-")
        if not sep or not topic or not part.isdigit():
            raise ValueError(f"not a partition directory name: {name!r}")
        return TopicPartition(topic, int(part))
