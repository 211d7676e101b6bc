"""Each replica of a partition as the partition's leader sees it (design §7: its LEO, lag,
ISR membership and the time since it last caught up, the clock that drives ISR
shrinking), read from the leader's HTTP admin endpoint (`GET /v1/partitions`, whose
leader rows carry `replica_states`). Kafka's protocol has no request for it.

Pure code: the JSON of a leader's row becomes a `PartitionReplicas`, and a broker's
`admin.listeners` (as DescribeConfigs gives it) the URL this client reaches its endpoint
at, with the headers that present the cluster's `admin.listeners.token`. The requests are
`replicas.py`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minikafka.common import TopicPartition
from minikafka.config.broker import parse_admin_listener
from minikafka.protocol.errors import KafkaError

# A wildcard admin listener binds every interface: its URL has the broker's host as this
# client reaches it (its Metadata address), as Kafka's listeners default to.
_WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})


@dataclass(frozen=True)
class ReplicaDescription:
    """One replica of a partition as the partition's leader sees it (design §7)."""

    broker_id: int
    is_leader: bool
    in_isr: bool
    log_end_offset: int  # -1: unknown, it has not fetched from this leader yet
    # now - lastCaughtUpTimeMs on the leader; 0 for the leader itself; -1: the follower has
    # not caught up since this leader took over (and was not in the ISR then).
    last_caught_up_ms_ago: int
    lag: int | None  # leader LEO - replica LEO, in messages; None while its LEO is unknown


@dataclass(frozen=True)
class PartitionReplicas:
    """A partition's replicas from its leader's view, or the error that kept the leader
    from answering (then `replicas` is empty)."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    high_watermark: int
    log_end_offset: int
    replicas: list[ReplicaDescription]  # in assignment order
    error: KafkaError | None = None

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


def partition_replicas(
    view: Mapping[str, Any], assignment: Sequence[int] = ()
) -> PartitionReplicas:
    """A leader's row of `/v1/partitions` -> PartitionReplicas: replicas in `assignment`
    order (any the leader reports beyond it follow in its order), lag against its LEO."""
    order = {b: i for i, b in enumerate(assignment)}
    leader = int(view["leader"])
    # sorted() is stable: replicas outside `assignment` keep the leader's order.
    states = sorted(view["replica_states"], key=lambda r: order.get(r["broker_id"], len(order)))
    leo = int(view["log_end_offset"])
    replicas = [
        ReplicaDescription(
            broker_id=r["broker_id"],
            is_leader=r["broker_id"] == leader,
            in_isr=bool(r["in_isr"]),
            log_end_offset=r["log_end_offset"],
            last_caught_up_ms_ago=0 if r["broker_id"] == leader else r["last_caught_up_ms_ago"],
            lag=None if r["log_end_offset"] < 0 else leo - r["log_end_offset"],
        )
        for r in states
    ]
    return PartitionReplicas(
        str(view["topic"]),
        int(view["partition"]),
        leader,
        int(view["leader_epoch"]),
        int(view["high_watermark"]),
        leo,
        replicas,
    )


# The admin endpoints' token (`admin.listeners.token`) of a cluster the tools do not manage:
# the commands read it from here (a local cluster's they know).
ADMIN_TOKEN_ENV = "MINIKAFKA_ADMIN_TOKEN"


def admin_headers(token: str | None) -> dict[str, str]:
    """The headers that present `token` to an admin endpoint (none for None)."""
    return {} if token is None else {"Authorization": f"Bearer {token}"}


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def admin_url(admin_listener: str, broker_host: str) -> str:
    """The URL of a broker's admin endpoint from its `admin.listeners` (`http://host:port`)
    and its host as this client reaches it: that host when the listener binds every
    interface. ValueError for a listener that is not `http://host:port`."""
    host, port = parse_admin_listener(admin_listener)
    if host in _WILDCARD_HOSTS:
        host = broker_host
    return f"http://{_host_port(host, port)}"


def serves_broker(broker_json: Mapping[str, Any], broker_id: int, host: str, port: int) -> bool:
    """Whether an admin endpoint's `/v1/broker` is broker `broker_id`'s, the broker this
    client reaches at host:port (one of its advertised listeners): a wildcard admin
    listener's port may be another broker's on this host (a container's port published
    under another number), or another cluster's."""
    if broker_json.get("broker_id") != broker_id:
        return False
    address = _host_port(host, port)
    listeners: Iterable[Any] = broker_json.get("listeners") or ()
    return any(str(e).rpartition("://")[2] == address for e in listeners)
