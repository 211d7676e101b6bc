"""The ports of a local cluster: picking them, and finding a taken one before anything starts.

Each broker has a Kafka port and an admin port (its HTTP endpoint): fixed (a base port plus
the broker id minus one) or picked free on the first start and kept in cluster.json.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterable, Mapping

from minikafka.cluster.brokers import BrokerProcess
from minikafka.cluster.errors import BrokerStartError, ClusterError, PortInUseError
from minikafka.zk.server import pick_free_port

# (what, port, the `minikafka cluster up` option that moves it)
WantedPort = tuple[str, int, str]


def port_accepts(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.5).close()
        return True
    except OSError:
        return False


# Linux's IP_FREEBIND (linux/in.h; Python names it from 3.12 on).
_IP_FREEBIND = getattr(socket, "IP_FREEBIND", 15)


def bind_error(host: str, port: int, *, address_made_later: bool = False) -> OSError | None:
    """Why a listener could not bind host:port now; None if it could.

    `address_made_later`: the address is one that `start` adds itself (netns mode's gateway,
    on a bridge that does not exist yet). IP_FREEBIND lets the bind go ahead without it, so
    only a real conflict fails: a listener on that address or on all addresses."""
    # SO_REUSEADDR as asyncio's servers set it: a TIME_WAIT left by our previous broker on
    # this port must not count as "in use", only a listener does.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if address_made_later:
            s.setsockopt(socket.IPPROTO_IP, _IP_FREEBIND, 1)
        try:
            s.bind((host, port))
            return None
        except OSError as e:
            return e


def fixed_ports(
    zookeeper_port: int,
    brokers: Iterable[BrokerProcess],
    base_port: int,
    admin_base_port: int,
) -> list[WantedPort]:
    """The ports a start will listen on that are already known: ZooKeeper's, and each
    broker's saved or fixed ones. Picked ports (0) are free by choice."""
    wanted: list[WantedPort] = []
    if zookeeper_port:
        wanted.append(("ZooKeeper's port", zookeeper_port, "--zookeeper-port"))
    for b in brokers:
        port = b.port or (base_port + b.id - 1 if base_port else 0)
        admin = b.admin_port or (admin_base_port + b.id - 1 if admin_base_port else 0)
        if port:
            wanted.append((f"broker {b.id}'s port", port, "--port"))
        if admin:
            wanted.append((f"broker {b.id}'s admin port", admin, "--admin-port"))
    return wanted


def check_ports_free(
    host: str, wanted: Iterable[WantedPort], *, address_made_later: bool = False
) -> None:
    """PortInUseError naming every port of `wanted` that another process listens on, and
    the `minikafka cluster up` option that moves it."""
    taken: list[WantedPort] = []
    for what, port, flag in wanted:
        error = bind_error(host, port, address_made_later=address_made_later)
        if error is None:
            continue
        if error.errno != errno.EADDRINUSE:
            # Not a port another process holds (an address this machine does not have,
            # a privileged port): no other port would help.
            raise ClusterError(f"{what} {port}: cannot listen on {host}: {error.strerror}")
        taken.append((what, port, flag))
    if taken:
        lines = [f"{what} {port} ({host}) is in use by another process" for what, port, _ in taken]
        flags = sorted({flag for _, _, flag in taken})
        raise PortInUseError(
            "; ".join(lines)
            + f". Stop what holds it (`ss -ltnp 'sport = :{taken[0][1]}'` shows it), or "
            + "move it with "
            + " and ".join(f"`minikafka cluster up {f} PORT`" for f in flags)
            + " (0 picks free ports)"
        )


def check_broker_ports(host: str, b: BrokerProcess) -> None:
    """BrokerStartError if broker b cannot listen on its ports (on loopback, just before
    it starts)."""
    for what, port in (("port", b.port), ("admin port", b.admin_port)):
        error = bind_error(host, port)
        if error is not None and error.errno == errno.EADDRINUSE:
            raise BrokerStartError(
                f"{what} {port} of broker {b.id} is in use by another process "
                f"(another Kafka or minikafka?); see `ss -ltnp 'sport = :{port}'`"
            )
        if error is not None:
            raise BrokerStartError(
                f"broker {b.id} cannot listen on {host}:{port}: {error.strerror}"
            )


def assign_ports(
    brokers: Mapping[int, BrokerProcess],
    *,
    host: str,
    zookeeper_port: int,
    base_port: int,
    admin_base_port: int,
) -> None:
    """Ports for brokers that have none yet: the Kafka port, then the admin one."""
    taken = {p for b in brokers.values() for p in (b.port, b.admin_port) if p}
    taken.add(zookeeper_port)

    def pick(base: int, bid: int) -> int:
        if base:
            return base + bid - 1
        # Kernel-chosen ports are handed out in turn, so repeats are rare; skip them.
        port = pick_free_port(host)
        while port in taken:
            port = pick_free_port(host)
        return port

    for bid in sorted(brokers):
        b = brokers[bid]
        if not b.port:
            b.port = pick(base_port, bid)
            taken.add(b.port)
        if not b.admin_port:
            b.admin_port = pick(admin_base_port, bid)
            taken.add(b.admin_port)
