"""Topic ids (KIP-516): kio carries them as UUIDs, the metadata cache as Kafka's text."""

from __future__ import annotations

import functools
import uuid
from typing import Final

from minikafka.common import kafka_uuid_text, parse_kafka_uuid
from minikafka.server.metadata_cache import MetadataCache

ZERO_UUID: Final = uuid.UUID(int=0)  # Kafka's "no topic id"


@functools.lru_cache(maxsize=4096)
def _uuid_of(topic_id: str) -> uuid.UUID:
    return parse_kafka_uuid(topic_id)


def topic_uuid(cache: MetadataCache, topic: str) -> uuid.UUID:
    """The topic's id, or the zero id for a topic this broker does not know."""
    topic_id = cache.topic_id(topic)
    return ZERO_UUID if topic_id is None else _uuid_of(topic_id)


def uuid_of(topic_id: str | None) -> uuid.UUID:
    """A topic id of the metadata cache as a UUID (None: the zero id)."""
    return ZERO_UUID if topic_id is None else _uuid_of(topic_id)


def topic_named(cache: MetadataCache, topic_id: uuid.UUID | None) -> str | None:
    """The topic with this id; None for the zero id or one no topic here has."""
    if topic_id is None or topic_id == ZERO_UUID:
        return None
    return cache.topic_name(kafka_uuid_text(topic_id))
