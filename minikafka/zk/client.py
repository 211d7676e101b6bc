"""`ZkClient`: Kafka's `KafkaZkClient` (ZooKeeper era) as a thin synchronous adapter over kazoo.

Every method blocks for a few ZooKeeper round trips; the broker calls them from a worker
thread (`asyncio.to_thread`). Each request waits at most `request_timeout_ms` for its reply
and then raises `ZkConnectionError`, so a broker cut off from ZooKeeper cannot pin its
worker threads forever (a timed-out write may still have been applied, as with any
connection loss). kazoo exceptions never escape: callers see the `Zk*Error` classes.

Fencing (design §8.1, §8.8): every controller write is one multi that starts with a
version check on `/controller_epoch`; a failed check raises `ControllerMovedError` and
nothing is applied.

Kafka's `KafkaZkClient` is one class; `ZkClient` is one too, put together from a module per
job, each a base of it:

- `session.py`: the session (connecting, connection states, raw reads and writes) and the
  requests the jobs are built on (pipelined reads, multis, fenced or not);
- `auth.py`: SASL to ZooKeeper and the ACLs of created znodes (`zookeeper.set.acl`);
- `errors.py`: the `Zk*Error` classes; `multi.py`: a multi's operations and size limits;
- `watches.py`: children, data and existence watches;
- `brokers.py`: broker registration; `cluster_ids.py`: the cluster id, producer id blocks;
- `topics.py`: topics, assignments, deletion markers; `configs.py`: entity configs and
  their change notifications; `admin.py`: the admin's writes (Kafka's AdminZkClient);
- `acls.py`: ACLs by resource pattern, their conditional writes and change notifications;
- `partition_states.py`: partition states, the controller's and the leader's writes;
- `controller_znodes.py`: the controller election and resignation, ISR change
  notifications, the preferred replica election.

Callers import `ZkClient` and every name below from here.
"""

from __future__ import annotations

from minikafka.zk.acls import AclZnodes
from minikafka.zk.admin import AdminZnodes
from minikafka.zk.auth import ZkClientAuth
from minikafka.zk.brokers import BrokerZnodes
from minikafka.zk.cluster_ids import ClusterIdZnodes
from minikafka.zk.codecs import BrokerInfo
from minikafka.zk.controller_znodes import ControllerZnodes
from minikafka.zk.errors import (
    ControllerMovedError,
    ZkAuthFailedError,
    ZkBadVersionError,
    ZkConnectionError,
    ZkError,
    ZkNoAuthError,
    ZkNodeExistsError,
    ZkNoNodeError,
    ZkNotEmptyError,
    ZkRequestTooLargeError,
)
from minikafka.zk.multi import JUTE_MAX_BUFFER
from minikafka.zk.partition_states import PartitionStateZnodes
from minikafka.zk.session import ZkState, expire_session, parse_connect_string
from minikafka.zk.topics import TopicZNode
from minikafka.zk.watches import Watch, ZnodeWatches

__all__ = [
    "JUTE_MAX_BUFFER",
    "BrokerInfo",
    "ControllerMovedError",
    "TopicZNode",
    "Watch",
    "ZkAuthFailedError",
    "ZkBadVersionError",
    "ZkClient",
    "ZkClientAuth",
    "ZkConnectionError",
    "ZkError",
    "ZkNoAuthError",
    "ZkNoNodeError",
    "ZkNodeExistsError",
    "ZkNotEmptyError",
    "ZkRequestTooLargeError",
    "ZkState",
    "expire_session",
    "parse_connect_string",
]


class ZkClient(
    BrokerZnodes,
    ClusterIdZnodes,
    AdminZnodes,
    AclZnodes,
    PartitionStateZnodes,
    ControllerZnodes,
    ZnodeWatches,
):
    """Kafka's ZooKeeper reads and writes, by Kafka's names (see design §3 for the layout)."""
