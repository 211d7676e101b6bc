"""What a broker and its admin endpoint (minikafka.admin_http, a layer above) know of each
other. The endpoint reads the running broker through `BrokerView`. The broker makes its
endpoint with the factory it was given (`minikafka broker` gives it one), only when
`admin.listeners` is set, and starts and stops it through `AdminEndpoint`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from minikafka.clock import Clock
    from minikafka.common import Endpoint
    from minikafka.config.broker import BrokerConfig
    from minikafka.controller.controller import KafkaController
    from minikafka.replication.replica_manager import ReplicaManager
    from minikafka.rpc.connection import ConnectionSecurity
    from minikafka.server.group_coordinator_adapter import GroupCoordinatorAdapter
    from minikafka.server.metadata_cache import MetadataCache
    from minikafka.storage.log_manager import LogManager
    from minikafka.zk.client import ZkClient


class BrokerView(Protocol):
    """The parts of a running broker (KafkaServer) that its admin endpoint reads, and never
    changes: metrics, health, the JSON views and the dashboard."""

    # Who and where it is; its state.
    @property
    def broker_id(self) -> int: ...
    @property
    def broker_epoch(self) -> int: ...
    @property
    def config(self) -> BrokerConfig: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def advertised(self) -> tuple[str, int]: ...
    @property
    def advertised_endpoints(self) -> tuple[Endpoint, ...]: ...
    @property
    def shutting_down(self) -> bool: ...
    # How it connects to the other brokers' inter-broker listener (TLS, SASL).
    @property
    def inter_broker_connections(self) -> ConnectionSecurity: ...

    # Its ZooKeeper session (the dashboard reads the registrations and the controller too).
    @property
    def zk(self) -> ZkClient: ...
    @property
    def zk_session_lost(self) -> bool: ...
    @property
    def zk_session_expirations(self) -> int: ...

    # What it holds and knows: replicas, logs, the cluster's metadata, its controller and
    # group coordinator.
    @property
    def metadata_cache(self) -> MetadataCache: ...
    @property
    def replica_manager(self) -> ReplicaManager: ...
    @property
    def log_manager(self) -> LogManager: ...
    @property
    def controller(self) -> KafkaController | None: ...
    @property
    def group_coordinator(self) -> GroupCoordinatorAdapter | None: ...


class AdminEndpoint(Protocol):
    """A broker's admin endpoint, as the broker drives it: started once its listeners are
    bound and before it registers (its `port` goes into the registration), stopped on
    shutdown."""

    @property
    def port(self) -> int: ...
    async def start(self) -> None: ...
    async def stop(self) -> None: ...


# (the broker, the host and port of `admin.listeners`) -> its endpoint, not yet started.
AdminEndpointFactory = Callable[[BrokerView, str, int], AdminEndpoint]
