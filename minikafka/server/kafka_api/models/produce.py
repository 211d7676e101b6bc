"""The models of Produce (0): the request; the response is written by hand (protocol/kafka/produce_response.py).

The union of the fields of every version served (model.py), generated once from kio's
schemas and kept by hand since; a comment gives the versions of a field some versions lack.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from minikafka.server.kafka_api.model import Records


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionProduceData:
    index: int
    records: Records


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicProduceData:
    name: str = ""  # v3-12
    partition_data: tuple[PartitionProduceData, ...]
    topic_id: uuid.UUID | None = None  # v13+


@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceRequest:
    transactional_id: str | None = None
    acks: int
    timeout: int
    topic_data: tuple[TopicProduceData, ...]
