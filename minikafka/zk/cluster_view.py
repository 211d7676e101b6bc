"""What a tool outside the brokers reads of a cluster in ZooKeeper: the live registrations
in `/brokers/ids` and the controller. Shared by the local cluster (`minikafka cluster`) and
chaos's command mode, which drive a cluster from outside and only ever read these."""

from __future__ import annotations

from minikafka.zk.client import BrokerInfo, ZkClient, ZkClientAuth, ZkError

# A tool's session: short enough that a dead tool's session goes soon, and requests that
# fail fast when ZooKeeper is down (the callers then say so or retry).
SESSION_TIMEOUT_MS = 10000
CONNECTION_TIMEOUT_MS = 5000
REQUEST_TIMEOUT_MS = 5000


class ZkClusterView:
    """A client on `connect`, started on first use and kept until `close`; `auth`: its
    SASL identity and ACLs, a secured cluster's brokers' (its tools write znodes the brokers
    then write too: the persistent paths, the admin user, preferred replica elections)."""

    def __init__(self, connect: str, auth: ZkClientAuth | None = None) -> None:
        self.connect = connect
        self.auth = auth
        self._zk: ZkClient | None = None

    def client(self) -> ZkClient:
        """The started client; ZkError (naming the address) if ZooKeeper does not answer."""
        if self._zk is None:
            client = ZkClient(
                self.connect,
                session_timeout_ms=SESSION_TIMEOUT_MS,
                connection_timeout_ms=CONNECTION_TIMEOUT_MS,
                request_timeout_ms=REQUEST_TIMEOUT_MS,
                auth=self.auth,
            )
            client.start()
            self._zk = client
        return self._zk

    def close(self) -> None:
        if self._zk is not None:
            self._zk.close()
            self._zk = None

    def read_registrations(self) -> dict[int, BrokerInfo] | None:
        """Live registrations in `/brokers/ids`; None when ZooKeeper cannot be read now."""
        try:
            return self.client().get_all_brokers()
        except (ZkError, ValueError):
            return None

    def controller(self) -> tuple[int, int] | None:
        """(controller id, controller epoch) as ZooKeeper has them now, or None."""
        try:
            zk = self.client()
            cid = zk.get_controller_id()
            epoch = zk.get_controller_epoch()
            # Two reads: make sure /controller did not change between them.
            if cid is None or epoch is None or zk.get_controller_id() != cid:
                return None
        except (ZkError, ValueError):
            return None
        return cid, epoch[0]
