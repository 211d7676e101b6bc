"""Requests only the controller answers, over Kafka's protocol: the reassignments of
KIP-455 (AlterPartitionReassignments, ListPartitionReassignments), which librdkafka does
not send.

As Kafka's admin client: Metadata from a bootstrap broker names the controller; the
request goes there; an answer of NOT_CONTROLLER (the controller moved), or a controller
that does not answer, sends it again after fresh Metadata, until the timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minikafka.client.bootstrap import parse_bootstrap_servers
from minikafka.client.kafka_wire import KafkaConnection, NetworkError, metadata_request
from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode, KafkaError, error_for_code

__all__ = [
    "ClusterMetadata",
    "ControllerClient",
    "OngoingReassignment",
]

RETRY_BACKOFF_S = 0.1  # Kafka's retry.backoff.ms


@dataclass(frozen=True, slots=True)
class OngoingReassignment:
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """What a Metadata answer says of the brokers and of some topics."""

    controller_id: int
    brokers: dict[int, tuple[str, int]]
    racks: dict[int, str | None]
    # topic -> partition -> replicas; a topic the brokers do not know is left out.
    topics: dict[str, dict[int, tuple[int, ...]]]
    errors: dict[str, int]  # topic -> error code, for the topics asked for that have one


class ControllerClient:
    def __init__(self, bootstrap_servers: str, *, client_id: str, timeout_s: float = 60.0) -> None:
        self._bootstrap = parse_bootstrap_servers(bootstrap_servers)
        self._client_id = client_id
        self._timeout_s = timeout_s
        self._connections: dict[tuple[str, int], KafkaConnection] = {}

    async def close(self) -> None:
        for conn in self._connections.values():
            await conn.close()
        self._connections.clear()

    def _connection(self, address: tuple[str, int]) -> KafkaConnection:
        conn = self._connections.get(address)
        if conn is None:
            conn = self._connections[address] = KafkaConnection(*address, client_id=self._client_id)
        return conn

    async def metadata(self, topics: Sequence[str] | None = ()) -> ClusterMetadata:
        """Metadata from the first bootstrap broker that answers (`topics`: none by
        default, None for all)."""
        deadline = time.monotonic() + self._timeout_s
        last: Exception | None = None
        while time.monotonic() < deadline:
            for address in self._bootstrap:
                try:
                    response = await self._connection(address).call(
                        metadata_request(topics), max(0.1, min(10.0, deadline - time.monotonic()))
                    )
                except NetworkError as e:
                    last = e
                    continue
                return ClusterMetadata(
                    int(response.controller_id),
                    {int(b.node_id): (str(b.host), int(b.port)) for b in response.brokers},
                    {int(b.node_id): b.rack for b in response.brokers},
                    {
                        str(t.name): {
                            int(p.partition_index): tuple(int(r) for r in p.replica_nodes)
                            for p in t.partitions
                        }
                        for t in response.topics
                        if t.error_code == 0
                    },
                    {str(t.name): int(t.error_code) for t in response.topics if t.error_code != 0},
                )
            await asyncio.sleep(RETRY_BACKOFF_S)
        raise NetworkError(f"no bootstrap broker answered Metadata: {last}")

    async def call_controller(self, request: Any, top_level_error: Callable[[Any], int]) -> Any:
        """`request` answered by the controller (found anew after NOT_CONTROLLER)."""
        deadline = time.monotonic() + self._timeout_s
        while True:
            md = await self.metadata()
            address = md.brokers.get(md.controller_id)
            if address is not None:
                try:
                    response = await self._connection(address).call(
                        request, max(0.1, deadline - time.monotonic())
                    )
                except NetworkError:
                    if time.monotonic() >= deadline:
                        raise
                else:
                    code = top_level_error(response)
                    if code != ErrorCode.NOT_CONTROLLER or time.monotonic() >= deadline:
                        if code != ErrorCode.NONE:
                            raise error_for_code(code, response.error_message or "")
                        return response
            elif time.monotonic() >= deadline:
                raise KafkaError("no controller is known to the brokers")
            await asyncio.sleep(RETRY_BACKOFF_S)

    async def alter_partition_reassignments(
        self, reassignments: Mapping[TopicPartition, Sequence[int] | None]
    ) -> dict[TopicPartition, KafkaError | None]:
        """Target replicas (None: cancel) -> each partition's error, None if accepted."""
        from kio.schema.alter_partition_reassignments.v0.request import (
            AlterPartitionReassignmentsRequest,
            ReassignablePartition,
            ReassignableTopic,
        )
        from kio.schema.types import BrokerId, TopicName
        from kio.static.primitive import i32

        topics: dict[str, list[ReassignablePartition]] = {}
        for tp, target in reassignments.items():
            topics.setdefault(tp.topic, []).append(
                ReassignablePartition(
                    partition_index=i32(tp.partition),
                    replicas=None if target is None else tuple(BrokerId(b) for b in target),
                )
            )
        request = AlterPartitionReassignmentsRequest(
            topics=tuple(
                ReassignableTopic(name=TopicName(t), partitions=tuple(ps))
                for t, ps in topics.items()
            )
        )
        response = await self.call_controller(request, lambda r: int(r.error_code))
        return {
            TopicPartition(str(t.name), int(p.partition_index)): (
                None
                if p.error_code == 0
                else error_for_code(int(p.error_code), p.error_message or "")
            )
            for t in response.responses
            for p in t.partitions
        }

    async def list_partition_reassignments(
        self, partitions: Sequence[TopicPartition] | None = None
    ) -> dict[TopicPartition, OngoingReassignment]:
        from kio.schema.list_partition_reassignments.v0.request import (
            ListPartitionReassignmentsRequest,
            ListPartitionReassignmentsTopics,
        )
        from kio.schema.types import TopicName
        from kio.static.primitive import i32

        topics: dict[str, list[i32]] | None = None
        if partitions is not None:
            topics = {}
            for tp in partitions:
                topics.setdefault(tp.topic, []).append(i32(tp.partition))
        request = ListPartitionReassignmentsRequest(
            topics=None
            if topics is None
            else tuple(
                ListPartitionReassignmentsTopics(name=TopicName(t), partition_indexes=tuple(ps))
                for t, ps in topics.items()
            )
        )
        response = await self.call_controller(request, lambda r: int(r.error_code))
        return {
            TopicPartition(str(t.name), int(p.partition_index)): OngoingReassignment(
                tuple(int(r) for r in p.replicas),
                tuple(int(r) for r in p.adding_replicas),
                tuple(int(r) for r in p.removing_replicas),
            )
            for t in response.topics
            for p in t.partitions
        }
