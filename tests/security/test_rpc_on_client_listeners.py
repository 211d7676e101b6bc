"""The RPC between brokers (LeaderAndIsr, UpdateMetadata, StopReplica, replica Fetch, ...) is
served on the inter-broker listener only. On a plaintext cluster with an INTERNAL and an
EXTERNAL listener, every such request sent to EXTERNAL closes the connection unanswered and
changes nothing: a client that can reach the client port cannot play controller."""

from __future__ import annotations

import asyncio

from minikafka.cluster import LocalCluster
from minikafka.rpc import messages as m
from minikafka.rpc.framing import RequestHeader, encode_request
from tests.cluster.conftest import ClusterFactory
from tests.cluster.helpers import create_topic, partition_states
from tests.cluster.test_listeners import with_two_listeners
from tests.rpc.test_framing import SAMPLES


async def sent_and_closed(host: str, port: int, request: object) -> bool:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        api_key = m.API_KEY_OF_REQUEST[type(request)]
        for chunk in encode_request(RequestHeader(int(api_key), 0, 7, "x"), request):
            writer.write(bytes(chunk))
        await writer.drain()
        return await asyncio.wait_for(reader.read(1), 10) == b""
    except ConnectionError:
        return True
    finally:
        writer.close()


async def test_broker_requests_on_a_client_listener_are_refused(
    make_cluster: ClusterFactory,
) -> None:
    cluster: LocalCluster = make_cluster(3)
    external = with_two_listeners(cluster)
    await create_topic(cluster, "t", 1, 3)
    before = partition_states(cluster, "t", 1)
    forged = m.LeaderAndIsrRequest(
        99,
        1_000_000,
        1,
        [m.LeaderAndIsrPartitionState("t", 0, 1_000_000, 99, 50, [99], 0, [99])],
        [m.BrokerNode(99, "127.0.0.1", 1, None)],
    )
    for bid, port in external.items():
        for request in [forged, *SAMPLES]:
            assert await sent_and_closed("127.0.0.1", port, request), (bid, request)
    assert all(cluster.is_alive(b) for b in cluster.broker_ids)
    assert partition_states(cluster, "t", 1) == before
    log = cluster.broker_log_path(1).read_text()
    assert "which is not the inter-broker listener" in log
    # The brokers still talk among themselves: a new topic gets leaders and full ISRs.
    await create_topic(cluster, "u", 3, 3)
    assert all(len(s.isr) == 3 for s in partition_states(cluster, "u", 3).values())
