"""Broker registration: the ephemeral `/brokers/ids/<id>` and reading who is registered."""

from __future__ import annotations

import time

from minikafka.zk import codecs, paths
from minikafka.zk.codecs import BrokerInfo
from minikafka.zk.errors import ZkConnectionError, ZkNodeExistsError
from minikafka.zk.session import ZkSession

__all__ = ["BrokerZnodes"]


class BrokerZnodes(ZkSession):
    """`/brokers/ids`: a broker registers itself; anyone reads the live brokers."""

    def register_broker(self, info: BrokerInfo, wait_for_previous_session_ms: int = 0) -> int:
        """Create the ephemeral `/brokers/ids/<id>`; returns the broker epoch (its czxid).

        Like Kafka's checkedEphemeralCreate: a znode that already exists counts as ours if
        our current session owns it (a retry after a lost reply). One owned by another
        session (typically our previous process, whose session has not expired yet) is
        waited for up to `wait_for_previous_session_ms`, then ZkNodeExistsError.
        """
        path = paths.broker(info.id)
        data = codecs.encode_broker_info(info)
        now = time.monotonic()
        wait_deadline = now + wait_for_previous_session_ms / 1000
        retry_deadline = now + self.connection_timeout_ms / 1000
        while True:
            try:
                _, stat = self._call(
                    f"register broker at {path}",
                    self._create_async(path, data, ephemeral=True, include_data=True),
                )
                return int(stat.czxid)
            except ZkNodeExistsError:
                stat = self._stat(path)
                if stat is None:
                    continue  # the old registration vanished in between: create again
                owner = int(stat.ephemeralOwner)
                if owner == self.session_id:
                    return int(stat.czxid)
                if time.monotonic() >= wait_deadline:
                    raise ZkNodeExistsError(
                        f"broker {info.id} is already registered at {path} by another "
                        f"ZooKeeper session (0x{owner:x}, ours is 0x{self.session_id or 0:x}): "
                        "another broker has this broker.id, or our previous session has "
                        "not expired yet"
                    ) from None
                self._await_deletion(path, wait_deadline)
            except ZkConnectionError:
                # The create may have been applied: the retry finds the znode and the
                # ownership check above decides.
                if time.monotonic() >= retry_deadline:
                    raise
                time.sleep(0.1)

    def get_broker(self, broker_id: int) -> BrokerInfo | None:
        got = self._get(paths.broker(broker_id))
        if got is None:
            return None
        data, stat = got
        return codecs.decode_broker_info(broker_id, data, epoch=int(stat.czxid))

    def get_broker_ids(self) -> list[int]:
        return sorted(self._int_children(paths.broker_ids()))

    def get_all_brokers(self) -> dict[int, BrokerInfo]:
        """Live brokers by id, each with its epoch (czxid)."""
        ids = self.get_broker_ids()
        got = self._get_many({i: paths.broker(i) for i in ids})
        return {
            i: codecs.decode_broker_info(i, data, epoch=int(stat.czxid))
            for i, (data, stat) in got.items()
        }
