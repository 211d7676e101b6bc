"""minikafka's RPC between brokers, served (rpc/ holds its messages and framing): what the
controller sends brokers (LeaderAndIsr, UpdateMetadata, StopReplica), what brokers send the
controller (ControlledShutdown), what followers send leaders (Fetch, OffsetForLeaderEpoch)
and what a group's coordinator asks partition leaders for its consumer lag metric
(ListOffsets, admin_http/metrics.py). Nothing else: clients, tools, tests and scripts ask
a broker in Kafka's protocol (server/kafka_api/).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from minikafka.common import TopicPartition
from minikafka.protocol.errors import (
    ErrorCode,
    KafkaError,
    NotControllerError,
    UnsupportedVersionError,
)
from minikafka.rpc.framing import RequestHeader
from minikafka.rpc.messages import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    FetchRequest,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    ListOffsetsRequest,
    OffsetForLeaderEpochRequest,
    PartitionRef,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from minikafka.rules.consumer_offsets import OFFSETS_TOPIC
from minikafka.server.broker_services import BrokerServices

log = logging.getLogger(__name__)

# UpdateMetadata applied slower than this is logged with its size (LeaderAndIsr always is).
SLOW_UPDATE_METADATA_S = 0.2


class RpcApis:
    def __init__(self, services: BrokerServices) -> None:
        self.services = services
        self._handlers: dict[type, Callable[[Any], Awaitable[Any]]] = {
            FetchRequest: services.fetch,
            ListOffsetsRequest: services.list_offsets,
            OffsetForLeaderEpochRequest: services.offsets_for_leader_epoch,
            LeaderAndIsrRequest: self.handle_leader_and_isr,
            UpdateMetadataRequest: self.handle_update_metadata,
            StopReplicaRequest: self.handle_stop_replica,
            ControlledShutdownRequest: self.handle_controlled_shutdown,
        }

    async def handle(self, header: RequestHeader, request: Any) -> Any:
        """The socket server's handler, the same on every listener: no request between
        brokers depends on the listener it came in on."""
        handler = self._handlers.get(type(request))
        if handler is None:
            raise UnsupportedVersionError(f"{type(request).__name__} is not supported")
        return await handler(request)

    async def handle_leader_and_isr(self, req: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        try:
            resp = await self.services.rm.become_leader_or_follower(req)
        except KafkaError as e:
            log.warning("rejected LeaderAndIsr from controller %d: %s", req.controller_id, e)
            return LeaderAndIsrResponse(int(e.code), [])
        self._on_offsets_leadership_change(
            [st.partition for st in req.partition_states if st.topic == OFFSETS_TOPIC]
        )
        return resp

    def _on_offsets_leadership_change(self, partitions: list[int]) -> None:
        """Kafka's onLeadershipChange: the group coordinator loads the groups of the
        offsets partitions led here now and unloads the others among `partitions`."""
        if self.services.group_coordinator is None or not partitions:
            return
        led: dict[int, int] = {}
        resigned: list[int] = []
        for partition in partitions:
            p = self.services.rm.partitions.get(TopicPartition(OFFSETS_TOPIC, partition))
            if p is not None and p.is_leader:
                led[partition] = p.leader_epoch
            else:
                resigned.append(partition)
        self.services.group_coordinator.on_leadership_change(led, resigned)

    async def handle_update_metadata(self, req: UpdateMetadataRequest) -> UpdateMetadataResponse:
        try:
            self.services.rm.check_controller_request(req.controller_epoch, req.broker_epoch)
        except KafkaError as e:
            log.warning("rejected UpdateMetadata from controller %d: %s", req.controller_id, e)
            return UpdateMetadataResponse(int(e.code))
        self.services.rm.controller_epoch = req.controller_epoch
        started = time.monotonic()
        self.services.cache.update(req)
        took = time.monotonic() - started
        if took >= SLOW_UPDATE_METADATA_S:
            log.info(
                "UpdateMetadata from controller %d: %d partitions, %d deleted topics; "
                "applied in %.2fs",
                req.controller_id,
                len(req.partition_states),
                len(req.deleted_topics),
                took,
            )
        return UpdateMetadataResponse(int(ErrorCode.NONE))

    async def handle_stop_replica(self, req: StopReplicaRequest) -> StopReplicaResponse:
        try:
            resp = await self.services.rm.stop_replicas(req)
        except KafkaError as e:
            log.warning("rejected StopReplica from controller %d: %s", req.controller_id, e)
            return StopReplicaResponse(int(e.code), [])
        self._on_offsets_leadership_change(
            [sp.partition for sp in req.partitions if sp.topic == OFFSETS_TOPIC]
        )
        return resp

    async def handle_controlled_shutdown(
        self, req: ControlledShutdownRequest
    ) -> ControlledShutdownResponse:
        try:
            if self.services.controller is None or not self.services.controller.is_active:
                raise NotControllerError(
                    f"broker {self.services.config.broker_id} is not the controller"
                )
            remaining = await self.services.controller.controlled_shutdown(
                req.broker_id, req.broker_epoch
            )
        except KafkaError as e:
            return ControlledShutdownResponse(int(e.code), [])
        return ControlledShutdownResponse(
            int(ErrorCode.NONE), [PartitionRef(tp.topic, tp.partition) for tp in remaining]
        )
