"""Vocabulary shared by every layer."""

from __future__ import annotations

import base64
import uuid
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


# --- Kafka's Uuid (topic ids, the cluster id) ---------------------------------------------


def new_kafka_uuid() -> str:
    """A random id as Kafka's Uuid.randomUuid makes one, in Kafka's text form: URL-safe
    base64 of the 16 bytes, unpadded (22 chars). Like Kafka, never the zero id (Kafka's
    "no id") nor one whose text starts with '-' (it would read as a command-line flag)."""
    while True:
        value = uuid.uuid4()
        text = kafka_uuid_text(value)
        if value.int > 1 and not text.startswith("-"):
            return text


def kafka_uuid_text(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def parse_kafka_uuid(text: str) -> uuid.UUID:
    """Kafka's text form back to the id; ValueError if it is not 22 chars of URL-safe
    base64 encoding 16 bytes."""
    if not isinstance(text, str) or len(text) != 22:
        raise ValueError(f"{text!r} is not a Kafka id (22 characters of URL-safe base64)")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (ValueError, TypeError) as e:
        raise ValueError(f"{text!r} is not a Kafka id: {e}") from None
    if len(raw) != 16 or kafka_uuid_text(uuid.UUID(bytes=raw)) != text:
        raise ValueError(f"{text!r} is not a Kafka id (22 characters of URL-safe base64)")
    return uuid.UUID(bytes=raw)
