"""A local development cluster: one real ZooKeeper and N broker processes in one data dir,
on loopback or (as root) each broker in its own network namespace, with faults to inject.

`LocalCluster` (`local.py`) runs it; one job a module beside it:
- where it lives, the data dir's files: `data_dir.py`; cluster.json: `state.py`;
- what each broker runs (command line, `server.properties`, overrides): `broker_config.py`;
- the brokers' ports: `ports.py`; the brokers and their processes: `brokers.py`;
- ZooKeeper's process and the brokers' sessions: `zookeeper.py`;
- what ZooKeeper says of the cluster, and waiting until it is ready: `readiness.py`
  (polling: `waiting.py`); the preferred leaders after a start: `leader_balance.py`;
- netns mode: the topology and how faults are made (`netns.py`), one cluster's network
  (`network.py`) and its faults (`network_faults.py`).
The docker-compose cluster driven from the host is `compose.py`.
"""

from minikafka.cluster.broker_config import parse_overrides
from minikafka.cluster.errors import BrokerStartError, ClusterError, PortInUseError
from minikafka.cluster.local import NETWORK_MODES, LocalCluster
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
