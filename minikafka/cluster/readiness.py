"""What ZooKeeper says of a local cluster, and waiting until the cluster is ready.

Ready is as a client needs it: each broker registered in `/brokers/ids` with its port (and
a newer broker epoch than a previous process's) and accepting connections, a controller
elected, and each broker's metadata naming the controller and the other brokers (read at
its admin endpoint, with the cluster's token when it has one). All waiting polls a
condition against a deadline (`waiting.py`).
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Collection, Iterable, Mapping

from minikafka.cluster.brokers import LocalBrokers
from minikafka.cluster.errors import BrokerStartError, ClusterError
from minikafka.cluster.leader_balance import balance_leaders
from minikafka.cluster.ports import port_accepts
from minikafka.cluster.waiting import POLL_INTERVAL_S, wait_for
from minikafka.common import TopicPartition
from minikafka.zk.client import BrokerInfo, ZkClient, ZkClientAuth
from minikafka.zk.cluster_view import ZkClusterView
from minikafka.zk.server import LocalZooKeeper


class ClusterReadiness(LocalBrokers):
    """The brokers of a data dir and their ZooKeeper (`zookeeper`, which the subclass
    sets), as ZooKeeper sees them."""

    zookeeper: LocalZooKeeper
    # A client on `zookeeper`, opened when first needed.
    _zk_view: ZkClusterView | None = None

    def admin_token(self) -> str | None:
        """The token the brokers' admin endpoints ask for (`admin.listeners.token`), None
        when they ask for none. The subclass knows it."""
        return None

    def zk_auth(self) -> ZkClientAuth | None:
        """Who the cluster's tools are to ZooKeeper (a secured cluster's brokers' identity,
        and their ACLs), None for anonymous. The subclass knows it."""
        return None

    # --- ZooKeeper view ----------------------------------------------------------------

    def zk_client(self) -> ZkClient:
        """A started client on this cluster's ZooKeeper (closed by `stop`)."""
        return self._view().client()

    def _view(self) -> ZkClusterView:
        if self._zk_view is None:
            if not self.zookeeper.is_running():
                raise ClusterError(f"ZooKeeper of {self.data_dir} is not running")
            self._zk_view = ZkClusterView(self.zookeeper.connect_string, self.zk_auth())
        return self._zk_view

    def close_zk_client(self) -> None:
        if self._zk_view is not None:
            self._zk_view.close()
            self._zk_view = None

    def controller(self) -> tuple[int, int] | None:
        """(controller id, controller epoch) as ZooKeeper has them now, or None."""
        try:
            return self._view().controller()
        except ClusterError:
            return None

    def registrations(self) -> dict[int, BrokerInfo]:
        """Live registrations in `/brokers/ids` (any id), empty if ZooKeeper is down."""
        return self._registrations()

    def _read_registrations(self) -> dict[int, BrokerInfo] | None:
        """None when ZooKeeper cannot be read (down, or not answering right now)."""
        try:
            return self._view().read_registrations()
        except ClusterError:
            return None

    def _registrations(self) -> dict[int, BrokerInfo]:
        return self._read_registrations() or {}

    def _current_controller(self) -> int | None:
        if not self.zookeeper.is_running():
            return None
        got = self.controller()
        return None if got is None else got[0]

    # --- waiting -------------------------------------------------------------------------

    def wait_for_registered(
        self,
        broker_ids: Iterable[int],
        timeout: float = 60.0,
        *,
        newer_than: Mapping[int, int] | None = None,
    ) -> dict[int, BrokerInfo]:
        """Wait until each broker is registered in ZooKeeper with its port (and an epoch
        above `newer_than[id]`, if given) and its port accepts connections. Raises
        BrokerStartError, with the log tail, if one exits or the deadline passes."""
        ids = sorted(set(broker_ids))
        newer = dict(newer_than or {})
        deadline = time.monotonic() + timeout
        while True:
            for bid in ids:
                b = self._broker(bid)
                if b.proc is not None and self._live_pid(b) is None:
                    raise BrokerStartError(
                        f"broker {bid} (pid {b.proc.pid}) exited with code "
                        f"{b.proc.returncode} before it was ready.\n{self.log_tail(bid)}"
                    )
            regs = self._registrations()
            ready = {
                bid: regs[bid]
                for bid in ids
                if bid in regs
                and regs[bid].port == self._brokers[bid].port
                and regs[bid].epoch > newer.get(bid, -1)
                and port_accepts(self.broker_host(bid), self._brokers[bid].port)
            }
            if len(ready) == len(ids):
                return ready
            if time.monotonic() >= deadline:
                missing = [bid for bid in ids if bid not in ready]
                tails = "\n".join(self.log_tail(bid) for bid in missing)
                raise BrokerStartError(
                    f"broker(s) {missing} not registered in ZooKeeper and listening after "
                    f"{timeout:.1f}s.\n{tails}"
                )
            time.sleep(POLL_INTERVAL_S)

    def wait_for_metadata(self, broker_ids: Iterable[int], timeout: float = 60.0) -> None:
        """Wait until each broker's metadata (what it answers clients, fed by the
        controller's UpdateMetadata) names a controller and every one of these brokers. A
        client that bootstraps before then is told of no controller; librdkafka's admin
        client can then wait for one for the whole of its request timeout."""
        ids = sorted(set(broker_ids))
        token = self.admin_token()
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}

        def known() -> bool:
            for bid in ids:
                request = urllib.request.Request(
                    f"{self.admin_url(bid)}/v1/broker", headers=headers
                )
                try:
                    with urllib.request.urlopen(request, timeout=2) as r:
                        meta = json.load(r)["metadata"]
                except (OSError, ValueError, KeyError):
                    return False
                if meta["controller_id"] < 0 or not set(ids) <= set(meta["live_brokers"]):
                    return False
            return True

        wait_for(known, timeout, f"broker(s) {ids} to receive the cluster's metadata")

    def balance_leaders(self, timeout: float) -> list[TopicPartition]:
        """Give each partition back to its preferred replica (the first assigned), as Kafka's
        preferred replica election does, once that replica is back in the ISR; returns the
        partitions still led by another broker when `timeout` has passed (`leader_balance.py`)."""
        return balance_leaders(self.zk_client(), timeout)

    def wait_for_unregistered(self, broker_ids: Iterable[int], timeout: float = 60.0) -> None:
        """Wait until none of these brokers is registered (e.g. a killed broker's session
        has expired)."""
        ids = set(broker_ids)

        def gone() -> bool:
            regs = self._read_registrations()
            return regs is not None and not ids.intersection(regs)

        wait_for(
            gone,
            timeout,
            f"broker(s) {sorted(ids)} to leave /brokers/ids",
        )

    def wait_for_controller(
        self, timeout: float = 60.0, exclude: Collection[int] = (), min_epoch: int = 0
    ) -> tuple[int, int]:
        """Wait for a controller that is a registered broker, not in `exclude`, with a
        controller epoch >= `min_epoch`; returns (controller id, controller epoch)."""
        found: list[tuple[int, int]] = []

        def elected() -> bool:
            got = self.controller()
            if got is None or got[0] in exclude or got[1] < min_epoch:
                return False
            if got[0] not in self._registrations():
                return False
            found.append(got)
            return True

        what = "a controller" + (f" other than {sorted(exclude)}" if exclude else "")
        wait_for(elected, timeout, what)
        return found[-1]
