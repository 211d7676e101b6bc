"""Vocabulary shared by every layer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class TopicPartition(NamedTuple):
    # A NamedTuple, not a frozen dataclass: it keys most dicts of the request path and the
    # fetch sessions, and a tuple hashes and compares in C (a dataclass's __hash__ is Python).
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


NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """A partition's leadership as stored in `/brokers/topics/<t>/partitions/<p>/state`.

    `zk_version` is the state znode's version when this was read or written (-1 if unknown);
    every update of the znode is conditional on it.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int = -1

    def new_leader_and_isr(self, leader: int, isr: tuple[int, ...]) -> LeaderAndIsr:
        """The next leadership: a new leader epoch (the controller's elections)."""
        return LeaderAndIsr(
            leader, self.leader_epoch + 1, tuple(isr), self.controller_epoch, self.zk_version
        )

    def with_isr(self, isr: tuple[int, ...]) -> LeaderAndIsr:
        """Same leader and epoch, another ISR (a leader's own ISR change)."""
        return LeaderAndIsr(
            self.leader, self.leader_epoch, tuple(isr), self.controller_epoch, self.zk_version
        )


# The listener name (and security protocol) of a broker that configures just one listener.
PLAINTEXT = "PLAINTEXT"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A broker's address on one listener (`NAME://host:port`, Kafka's EndPoint)."""

    listener: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"
