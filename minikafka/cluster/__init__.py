"""A local development cluster: one real ZooKeeper and N broker processes in one data dir."""

from minikafka.cluster.local import (
    BrokerStartError,
    ClusterError,
    LocalCluster,
    parse_overrides,
)
from minikafka.zk.server import ZooKeeperNotInstalledError

__all__ = [
    "BrokerStartError",
    "ClusterError",
    "LocalCluster",
    "ZooKeeperNotInstalledError",
    "parse_overrides",
]
