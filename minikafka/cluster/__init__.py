"""A local development cluster: one real ZooKeeper and N broker processes in one data dir,
on loopback or (as root) each broker in its own network namespace, with faults to inject."""

from minikafka.cluster.local import (
    NETWORK_MODES,
    BrokerStartError,
    ClusterError,
    LocalCluster,
    PortInUseError,
    parse_overrides,
)
from minikafka.zk.server import ZooKeeperNotInstalledError

__all__ = [
    "NETWORK_MODES",
    "BrokerStartError",
    "ClusterError",
    "LocalCluster",
    "PortInUseError",
    "ZooKeeperNotInstalledError",
    "parse_overrides",
]
