"""Network faults of a local cluster in netns mode: a broker cut off from the other brokers
or from everything, or its packets delayed and dropped, until healed.

Each broker has at most one cut and one degrade; a new one replaces the old. They act on
the broker's own link (see minikafka.cluster.netns), outlive its restarts, and are recorded
in network-faults.json (`network.py`) for `status` and for other `minikafka cluster`
commands. A loopback cluster refuses them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from minikafka.cluster import netns
from minikafka.cluster.brokers import LocalBrokers
from minikafka.cluster.errors import ClusterError
from minikafka.cluster.network import ClusterNetwork, load_faults


class NetworkFaults(LocalBrokers):
    """The network faults of the brokers (netns mode only, as root)."""

    def netns_command(self, broker_id: int, argv: Sequence[str]) -> list[str]:
        """`argv` run inside broker N's network namespace (root only), e.g. a client on the
        broker's side of a partition: `subprocess.run(cluster.netns_command(2, [...]))`."""
        network = self._require_netns("running a command in a broker's namespace")
        self._broker(broker_id)
        netns.require_privileges()
        return [*netns.exec_prefix(network.layout, broker_id), *argv]

    def partition_from_brokers(self, broker_id: int) -> None:
        """Cut broker N off from the other brokers only, both ways (packets are dropped, not
        refused). It keeps its ZooKeeper session, its registration and its clients, and goes
        on leading what it led: the Jepsen 2013 case. Until `heal`."""
        self._set_fault(broker_id, cut="brokers")

    def isolate(self, broker_id: int) -> None:
        """Cut broker N off from everything: the other brokers, ZooKeeper (its session
        expires after zookeeper.session.timeout.ms) and clients in the root namespace
        (`netns_command` runs a client on its side). Until `heal`."""
        self._set_fault(broker_id, cut="all")

    def degrade(
        self,
        broker_id: int,
        *,
        delay_ms: float = 0.0,
        jitter_ms: float = 0.0,
        loss_pct: float = 0.0,
    ) -> None:
        """Delay (± jitter) every packet to and from broker N, and drop `loss_pct` percent of
        them: tc netem on both ends of its link, so a round trip to it takes 2 × delay_ms
        more. Needs a kernel with sch_netem (ClusterError otherwise). Until `heal`."""
        if min(delay_ms, jitter_ms, loss_pct) < 0 or loss_pct > 100:
            raise ValueError("delay_ms and jitter_ms must be >= 0, loss_pct within 0..100")
        if not (delay_ms or jitter_ms or loss_pct):
            raise ValueError("degrade needs a delay, a jitter or a loss")
        params = {"delay_ms": delay_ms, "jitter_ms": jitter_ms, "loss_pct": loss_pct}
        self._set_fault(broker_id, degrade=params)

    def heal(self, broker_id: int | None = None) -> None:
        """Undo every network fault of broker N (cut and degrade), or of all brokers. Dropped
        connections are not reset: TCP retransmits on them, or the peers' timeouts close them."""
        network = self._require_netns("network faults")
        netns.require_privileges()
        if broker_id is None:
            network.heal(self.broker_ids, with_recorded=True)
        else:
            self._broker(broker_id)
            network.heal([broker_id], with_recorded=False)

    def network_faults(self) -> dict[int, dict[str, Any]]:
        """The faults in force, per broker that has one: `{"cut": "brokers" | "all",
        "degrade": {"delay_ms", "jitter_ms", "loss_pct"}}` (either key may be missing)."""
        return load_faults(self._dir)

    def _require_netns(self, what: str) -> ClusterNetwork:
        if self._netns is None:
            raise ClusterError(
                f"{what} need network='netns' (`minikafka cluster up --network netns`, as "
                f"root); the cluster in {self.data_dir} runs on loopback"
            )
        return self._netns

    def _set_fault(
        self,
        broker_id: int,
        *,
        cut: netns.Cut | None = None,
        degrade: dict[str, float] | None = None,
    ) -> None:
        network = self._require_netns("network faults")
        self._broker(broker_id)
        netns.require_privileges()
        network.set_fault(broker_id, cut=cut, degrade=degrade)
