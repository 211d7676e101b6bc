"""The cluster-wide ids kept in ZooKeeper: the cluster id (`/cluster/id`) and the blocks of
producer ids brokers take (`/latest_producer_id_block`)."""

from __future__ import annotations

from minikafka.zk import codecs, paths
from minikafka.zk.errors import ZkBadVersionError, ZkError, ZkNodeExistsError
from minikafka.zk.session import ZkSession

__all__ = ["ClusterIdZnodes"]


class ClusterIdZnodes(ZkSession):
    """The cluster id, which the first broker creates, and the producer id blocks, which
    brokers claim one after another by conditional writes."""

    # --- cluster id --------------------------------------------------------------------

    def get_or_create_cluster_id(self, proposed: str) -> str:
        """The cluster's id from `/cluster/id`; the first broker creates it with `proposed`
        (Kafka's getOrGenerateClusterId). Two first brokers race on one create; both read
        the winner's id."""
        got = self._get(paths.CLUSTER_ID)
        if got is None:
            try:
                self._call(
                    f"create {paths.CLUSTER_ID}",
                    self._create_async(
                        paths.CLUSTER_ID, codecs.encode_cluster_id(proposed), makepath=True
                    ),
                )
                return proposed
            except ZkNodeExistsError:
                got = self._get(paths.CLUSTER_ID)
                if got is None:
                    raise ZkError(f"{paths.CLUSTER_ID} vanished right after existing") from None
        return codecs.decode_cluster_id(got[0])

    # --- producer ids ------------------------------------------------------------------

    def allocate_producer_id_block(self, broker_id: int, block_size: int) -> tuple[int, int]:
        """Take the next block of producer ids, [start, end] (Kafka's ZkProducerIdManager):
        `/latest_producer_id_block` names the last block taken; the next one follows it,
        claimed by a conditional write on the znode's version (a broker that lost the race
        reads again)."""
        while True:
            got = self._get(paths.LATEST_PRODUCER_ID_BLOCK)
            start = 0 if got is None else codecs.decode_producer_id_block(got[0])[1] + 1
            end = start + block_size - 1
            data = codecs.encode_producer_id_block(broker_id, start, end)
            try:
                if got is None:
                    self._call(
                        f"create {paths.LATEST_PRODUCER_ID_BLOCK}",
                        self._create_async(paths.LATEST_PRODUCER_ID_BLOCK, data),
                    )
                else:
                    self.set_data(paths.LATEST_PRODUCER_ID_BLOCK, data, int(got[1].version))
                return start, end
            except (ZkNodeExistsError, ZkBadVersionError):
                continue  # another broker took a block first
