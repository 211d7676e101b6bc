"""Two listeners per broker, as Kafka configures them: brokers replicate on the inter-broker
listener (INTERNAL) and a client gets, in Metadata, the addresses of the listener it came
in on, so a client that knows only the EXTERNAL ports works end to end. Real ZooKeeper,
real broker processes, a real Kafka client (confluent-kafka)."""

from __future__ import annotations

import asyncio
import json

import pytest

from minikafka.cluster import LocalCluster
from minikafka.rpc.messages import MetadataResponse
from minikafka.zk.server import pick_free_port
from tests.cluster.conftest import ClusterFactory, wait_until
from tests.cluster.helpers import (
    create_topic,
    metadata_at,
    partition_states,
    read_records,
    send_values,
)

pytestmark = pytest.mark.timeout(180)


def with_two_listeners(cluster: LocalCluster) -> dict[int, int]:
    """Restart the cluster with INTERNAL on each broker's own port (inter-broker) and
    EXTERNAL on a new one; returns the EXTERNAL ports."""
    cluster.stop()
    external = {}
    for bid in cluster.broker_ids:
        internal_port = cluster.broker_address(bid)[1]
        external[bid] = pick_free_port("127.0.0.1")
        cluster.broker_overrides[bid] = {
            "listeners": (
                f"INTERNAL://127.0.0.1:{internal_port},EXTERNAL://127.0.0.1:{external[bid]}"
            ),
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
        }
    cluster.start()
    return external


async def test_clients_get_the_addresses_of_the_listener_they_came_in_on(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(3)
    external = with_two_listeners(cluster)
    internal = {bid: cluster.broker_address(bid)[1] for bid in cluster.broker_ids}

    # Registered as Kafka registers several listeners: no PLAINTEXT, so host/port are null.
    raw = cluster.zk_client().get_data("/brokers/ids/2")
    assert raw is not None
    reg = json.loads(raw)
    assert reg["endpoints"] == [
        f"INTERNAL://127.0.0.1:{internal[2]}",
        f"EXTERNAL://127.0.0.1:{external[2]}",
    ]
    assert (reg["host"], reg["port"]) == (None, -1)

    def ports(md: MetadataResponse) -> dict[int, int]:
        return {b.node_id: b.port for b in md.brokers}

    # Every broker knows every broker's two addresses (from the controller's UpdateMetadata).
    for bid in cluster.broker_ids:
        assert ports(await metadata_at("127.0.0.1", external[bid])) == external
        assert ports(await metadata_at("127.0.0.1", internal[bid])) == internal

    # A client that knows only the external addresses: create, produce with acks=all on
    # three replicas (the followers fetch over INTERNAL), consume.
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in external.values())
    cluster_bootstrap = cluster.bootstrap_servers
    assert all(str(p) not in cluster_bootstrap for p in external.values())
    await create_topic(cluster, "t", 3, 3)
    values = [f"v{i}".encode() for i in range(300)]
    acked = await asyncio.to_thread(send_values, bootstrap, "t", values, {"acks": "all"})
    assert len(set(acked)) == len(values)
    wait_until(
        lambda: all(len(s.isr) == 3 for s in partition_states(cluster, "t", 3).values()),
        timeout=30,
        what="every replica in the ISR",
    )
    got = [r.value for r in await asyncio.to_thread(read_records, bootstrap, "t", len(values))]
    assert sorted(got) == sorted(values)
