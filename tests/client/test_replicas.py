"""The replica client (`ReplicaClient`) and `minikafka replicas --describe` against the
fake cluster, whose brokers answer Kafka's Metadata, DescribeConfigs, ListOffsets and Fetch
through the broker's own Kafka adapter, and `/v1/partitions` on their admin endpoints from
canned leader views (`FakeCluster.leader_row`); and the decoding of fetched record batches."""

from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from minikafka.cli.main import cli
from minikafka.cli.replicas import partition_rows
from minikafka.client.replica_reads import parse_fetched_records
from minikafka.client.replica_states import (
    PartitionReplicas,
    admin_url,
    partition_replicas,
    serves_broker,
)
from minikafka.client.replicas import AdminEndpointError, ReplicaClient
from minikafka.common import TopicPartition
from minikafka.protocol.errors import (
    CorruptRecordError,
    ErrorCode,
    LeaderNotAvailableError,
    NotLeaderOrFollowerError,
    UnknownTopicOrPartitionError,
)
from minikafka.rpc import messages as m
from minikafka.storage.record_batch import CRC_OFFSET, build_batch
from tests.client.fake_broker import FakeCluster, PartitionsGet, ThreadedCluster


def fast_client(cluster: FakeCluster, **kw: Any) -> ReplicaClient:
    kw.setdefault("retry_backoff_ms", 10)
    kw.setdefault("default_api_timeout_ms", 3000)
    return ReplicaClient(cluster.bootstrap, **kw)


def replica_state(broker_id: int, leo: int, age: int, in_isr: bool, leader_leo: int) -> dict:
    """A row of a leader's `replica_states`, as the admin endpoint writes it."""
    return {
        "broker_id": broker_id,
        "log_end_offset": leo,
        "lag": None if leo < 0 else leader_leo - leo,
        "in_isr": in_isr,
        "last_caught_up_ms_ago": age,
    }


def leader_view(partition: int, leader: int, epoch: int, hw: int, leo: int, states: list) -> dict:
    """A leader's row of `/v1/partitions`, with what this client reads of it."""
    return {
        "topic": "t",
        "partition": partition,
        "role": "leader",
        "leader": leader,
        "leader_epoch": epoch,
        "high_watermark": hw,
        "log_end_offset": leo,
        "replica_states": [replica_state(*s, leader_leo=leo) for s in states],
    }


# --- the pure conversion -----------------------------------------------------------------


def test_replicas_come_in_assignment_order_with_lag_against_the_leaders_leo():
    view = leader_view(
        0,
        leader=2,
        epoch=4,
        hw=7,
        leo=10,
        states=[
            (2, 10, 0, True),
            (1, 7, 1500, True),
            (3, -1, -1, False),  # not fetched since this leader took over
            (9, 10, 5, True),  # outside the assignment: goes last
        ],
    )
    p = partition_replicas(view, assignment=[3, 1, 2])
    got = [(r.broker_id, r.is_leader, r.in_isr, r.lag, r.last_caught_up_ms_ago) for r in p.replicas]
    assert got == [
        (3, False, False, None, -1),
        (1, False, True, 3, 1500),
        (2, True, True, 0, 0),
        (9, False, True, 0, 5),
    ]
    assert (p.high_watermark, p.log_end_offset, p.leader_epoch, p.error) == (7, 10, 4, None)


def test_rows_show_unknowns_and_errors_plainly():
    view = leader_view(3, 1, 0, 5, 6, [(1, 6, 0, True), (2, -1, -1, False)])
    assert partition_rows(partition_replicas(view, [1, 2])) == [
        ["3", "1", "leader", "yes", "6", "5", "0", "0"],
        ["3", "2", "follower", "no", "?", "5", "?", "never"],
    ]
    failed = PartitionReplicas("t", 4, -1, 2, -1, -1, [], LeaderNotAvailableError("no leader"))
    assert partition_rows(failed) == [
        ["4", "", "error: LEADER_NOT_AVAILABLE: no leader", "", "", "", "", ""]
    ]


# --- the client --------------------------------------------------------------------------


def asked_leaders(cluster: FakeCluster) -> list[int]:
    """The brokers whose admin endpoint was asked for its partitions, in that order."""
    return [b for b, _ in cluster.requests_of(PartitionsGet)]


async def test_describe_replicas_asks_each_partitions_leader(cluster):
    cluster.create_topic("t", partitions=3, replication_factor=3)
    for p in range(3):
        await cluster.append("t", p, [b"x"] * (p + 5))
    async with fast_client(cluster) as client:
        described = await client.describe_replicas(["t"])
    assert sorted(asked_leaders(cluster)) == [1, 2, 3]  # partition i is led by broker i+1
    assert [(p.partition, p.leader, p.error) for p in described] == [
        (0, 1, None),
        (1, 2, None),
        (2, 3, None),
    ]
    p2 = described[2]
    assert [r.broker_id for r in p2.replicas] == [3, 1, 2]  # the assignment's order
    assert [(r.log_end_offset, r.lag, r.in_isr) for r in p2.replicas] == [
        (7, 0, True),
        (5, 2, False),
        (6, 1, True),
    ]
    assert p2.high_watermark == 6


async def test_a_moved_leader_is_found_again_through_metadata(cluster):
    cluster.create_topic("t", partitions=1, replication_factor=3)

    def moved(broker_id, r):
        # Broker 1 answers as a follower: it lost the leadership meanwhile.
        cluster.move_leader("t", 0, 2)
        return cluster.partitions_answer(broker_id, r)

    cluster.inject(PartitionsGet, moved, broker=1)
    async with fast_client(cluster) as client:
        (p,) = await client.describe_replicas()
    assert (p.leader, p.leader_epoch, p.error) == (2, 1, None)
    assert asked_leaders(cluster) == [1, 2]


async def test_partitions_that_cannot_be_described_carry_their_error(cluster):
    cluster.create_topic("t", partitions=2, replication_factor=1)
    await cluster.stop_broker(2)  # sole replica of partition 1
    cluster.inject(PartitionsGet, lambda b, r: (200, {"partitions": []}), broker=1, times=1000)
    async with fast_client(cluster) as client:
        p0, p1 = await client.describe_replicas(["t"], timeout_ms=300)
    assert isinstance(p0.error, NotLeaderOrFollowerError) and p0.replicas == []
    assert isinstance(p1.error, LeaderNotAvailableError)


async def test_an_unknown_topic_raises(cluster):
    async with fast_client(cluster) as client:
        with pytest.raises(UnknownTopicOrPartitionError):
            await client.describe_replicas(["nope"])


# --- finding the leaders' admin endpoints -------------------------------------------------


def test_a_wildcard_admin_listener_is_reached_at_the_brokers_own_host():
    assert admin_url("http://0.0.0.0:9645", "localhost") == "http://localhost:9645"
    assert admin_url("http://:9645", "::1") == "http://[::1]:9645"
    assert admin_url("http://10.0.0.7:9644", "localhost") == "http://10.0.0.7:9644"
    with pytest.raises(ValueError):
        admin_url("localhost:9644", "localhost")


def test_an_admin_endpoint_is_the_brokers_when_it_says_so_for_the_address_reached():
    broker = {
        "broker_id": 2,
        "listeners": ["INTERNAL://broker2:19092", "EXTERNAL://localhost:9093"],
    }
    assert serves_broker(broker, 2, "localhost", 9093)
    assert not serves_broker(broker, 1, "localhost", 9093)  # another broker's endpoint
    assert not serves_broker(broker, 2, "localhost", 9092)  # another cluster's broker 2


async def test_a_wildcard_admin_listener_is_asked_at_the_host_metadata_gives(cluster):
    cluster.create_topic("t", partitions=3, replication_factor=3)
    for b in cluster.broker_ids:
        cluster.admin_listeners[b] = f"http://0.0.0.0:{cluster.admin_ports[b]}"
    async with fast_client(cluster) as client:
        described = await client.describe_replicas(["t"])
    assert [(p.leader, p.error) for p in described] == [(1, None), (2, None), (3, None)]


async def test_an_admin_endpoint_that_is_another_brokers_fails_its_partitions_at_once(cluster):
    # As a container's wildcard admin listener whose port the host maps to another broker.
    cluster.create_topic("t", partitions=2, replication_factor=3)
    cluster.admin_listeners[2] = f"http://0.0.0.0:{cluster.admin_ports[1]}"
    async with fast_client(cluster, default_api_timeout_ms=60_000) as client:
        p0, p1 = await client.describe_replicas(["t"])
    assert p0.error is None
    assert isinstance(p1.error, AdminEndpointError)
    assert str(p1.error) == (
        f"broker 2's admin endpoint: http://127.0.0.1:{cluster.admin_ports[1]} (from its "
        f"admin.listeners http://0.0.0.0:{cluster.admin_ports[1]}) is not the admin endpoint "
        f"of broker 2 at 127.0.0.1:{cluster.ports[2]} (broker 1 answered)"
    )
    assert asked_leaders(cluster) == [1]  # broker 1's own partition only, asked once


async def test_a_leader_without_an_admin_endpoint_is_an_error_row(cluster):
    cluster.create_topic("t", partitions=1, replication_factor=3)
    cluster.admin_listeners[1] = None
    async with fast_client(cluster, default_api_timeout_ms=60_000) as client:
        (p,) = await client.describe_replicas(["t"])
    assert str(p.error) == (
        "broker 1 has no admin endpoint (admin.listeners is not set): only it shows each "
        "replica as the leader sees it"
    )


async def test_an_unreachable_admin_endpoint_is_found_again_once_it_answers(cluster):
    cluster.create_topic("t", partitions=1, replication_factor=3)
    port = cluster.admin_ports[1]
    await cluster.stop_admin_endpoint(1)  # the admin endpoint down, Kafka's listener up
    # One attempt only (the backoff is longer than the call may take): its own error.
    async with fast_client(cluster, retry_backoff_ms=10_000) as client:
        (p,) = await client.describe_replicas(["t"], timeout_ms=5_000)
        assert p.error is not None and p.error.code == ErrorCode.NETWORK_EXCEPTION
        assert str(p.error).startswith(
            f"NETWORK_EXCEPTION: broker 1's admin endpoint http://127.0.0.1:{port}: "
        )
        assert p.error.retriable
        await cluster.start_admin_endpoint(1)
        (p,) = await client.describe_replicas(["t"])
    assert (p.leader, p.error) == (1, None)


# --- debug replica reads -----------------------------------------------------------------


async def test_a_replica_is_read_whole_in_small_fetches_as_the_debug_replica(cluster):
    cluster.create_topic("t", partitions=1, replication_factor=3)
    for i in range(10):
        await cluster.append("t", 0, [f"{i}-{j}".encode() for j in range(3)])
    tp = TopicPartition("t", 0)
    async with fast_client(cluster) as client:
        whole = await client.fetch_replica_records(1, tp, max_bytes=100)
        assert whole == {o: f"{o // 3}-{o % 3}".encode() for o in range(30)}
        # An end offset in the middle of a batch: nothing at or past it.
        assert await client.fetch_replica_records(1, tp, 8) == {o: whole[o] for o in range(8)}
        # A follower's replica too (broker 2 does not lead the partition).
        assert await client.fetch_replica_records(2, tp, max_bytes=100) == whole
    fetches = [r for _, r in cluster.requests_of(m.FetchRequest)]
    assert len(fetches) > 10  # one batch (or two) per small fetch
    assert all((r.replica_id, r.max_wait_ms) == (m.DEBUG_REPLICA_ID, 0) for r in fetches)
    # The replica's end, where none is given: its LEO, asked as the debug replica too.
    ends = cluster.requests_of(m.ListOffsetsRequest)
    assert [(b, r.replica_id) for b, r in ends] == [
        (1, m.DEBUG_REPLICA_ID),
        (2, m.DEBUG_REPLICA_ID),
    ]


async def test_a_replica_read_starts_at_its_log_start(cluster):
    cluster.create_topic("t", partitions=1, replication_factor=1)
    await cluster.append("t", 0, [b"a", b"b", b"c"])
    await cluster.append("t", 0, [b"d"])
    cluster.partition("t", 0).log_start_offset = 2  # the first batch still holds it

    def out_of_range(broker_id: int, r: m.FetchRequest) -> m.FetchResponse:
        # As a broker answers a fetch below the log start: with both ends of the log.
        (fp,) = r.topics[0].partitions
        assert fp.fetch_offset == 0
        part = m.FetchPartitionResponse(0, ErrorCode.OFFSET_OUT_OF_RANGE, 4, 2, 4, None)
        return m.FetchResponse(0, [m.FetchTopicResponse("t", [part])])

    cluster.inject(m.FetchRequest, out_of_range)
    async with fast_client(cluster) as client:
        got = await client.fetch_replica_records(1, TopicPartition("t", 0))
    assert got == {2: b"c", 3: b"d"}
    offsets = [
        r.topics[0].partitions[0].fetch_offset for _, r in cluster.requests_of(m.FetchRequest)
    ]
    assert offsets[:2] == [0, 2]


async def test_a_replica_read_raises_the_partitions_error(cluster):
    cluster.create_topic("t", partitions=1, replication_factor=1)  # only on broker 1
    async with fast_client(cluster) as client:
        with pytest.raises(NotLeaderOrFollowerError, match=r"on broker 2"):
            await client.fetch_replica_records(2, TopicPartition("t", 0))
        with pytest.raises(NotLeaderOrFollowerError, match=r"on broker 2"):
            await client.fetch_replica_records(2, TopicPartition("t", 0), 1)


# --- decoding fetched bytes ----------------------------------------------------------------

TP = TopicPartition("t", 0)


def stamped(values, base):
    return build_batch(values, base_offset=base)


def test_records_below_the_fetch_offset_in_the_first_batch_are_skipped():
    data = stamped([b"a", b"b", b"c"], 10) + stamped([b"d"], 13)
    records, next_offset, error = parse_fetched_records(TP, data, 12)
    assert [(r.offset, r.value) for r in records] == [(12, b"c"), (13, b"d")]
    assert next_offset == 14 and error is None
    assert all(r.tp == TP for r in records)


def test_a_partial_batch_at_the_end_of_a_fetch_is_ignored():
    whole = stamped([b"a", b"b"], 0)
    data = whole + stamped([b"c"], 2)[:-5]
    records, next_offset, error = parse_fetched_records(TP, data, 0)
    assert [r.value for r in records] == [b"a", b"b"]
    assert next_offset == 2 and error is None
    # A tail too short even for the length field is ignored too.
    records, _, error = parse_fetched_records(TP, whole + b"\x00\x00", 0)
    assert len(records) == 2 and error is None


def test_a_corrupt_batch_stops_parsing_with_the_records_before_it():
    bad = bytearray(stamped([b"c"], 2))
    bad[CRC_OFFSET] ^= 0xFF
    records, next_offset, error = parse_fetched_records(
        TP, stamped([b"a", b"b"], 0) + bytes(bad), 0
    )
    assert [r.value for r in records] == [b"a", b"b"]
    assert next_offset == 2
    assert isinstance(error, CorruptRecordError)


def test_a_fetch_without_any_complete_batch_is_an_error():
    _, _, error = parse_fetched_records(TP, stamped([b"x" * 100], 0)[:50], 0)
    assert error is not None and "no complete record batch" in str(error)


# --- the command -------------------------------------------------------------------------


@pytest.fixture
def threaded() -> Iterator[ThreadedCluster]:
    t = ThreadedCluster(3)
    yield t
    t.close()


def run(threaded, *args):
    bootstrap = ["--bootstrap-server", threaded.cluster.bootstrap]
    return CliRunner().invoke(cli, ["replicas", *bootstrap, *args])


def table_rows(text: str) -> list[list[str]]:
    """The header and body rows of rich tables, as lists of cells."""
    return [
        [c.strip() for c in line[1:-1].split(line[0])]
        for line in (raw.rstrip() for raw in text.splitlines())
        if line[:1] in ("│", "┃")
    ]


def test_describe_prints_one_row_per_replica_per_topic(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("a", partitions=2, replication_factor=2))
    threaded.call(lambda: threaded.cluster.create_topic("b", partitions=1, replication_factor=1))
    threaded.run(threaded.cluster.append("a", 0, [b"x"] * 2))
    threaded.run(threaded.cluster.append("a", 1, [b"x"] * 4))
    threaded.run(threaded.cluster.append("b", 0, [b"x"] * 1))
    result = run(threaded, "--describe")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.index("Topic: a") < out.index("Topic: b")
    rows = table_rows(out)
    assert rows[0] == list(
        ("Partition", "Replica", "Role", "InIsr", "LEO", "HW", "Lag", "LastCaughtUpAgeMs")
    )
    assert rows[1:5] == [
        ["0", "1", "leader", "yes", "2", "1", "0", "0"],
        ["0", "2", "follower", "no", "1", "1", "1", "100"],
        ["1", "2", "leader", "yes", "4", "3", "0", "0"],
        ["1", "3", "follower", "no", "3", "3", "1", "100"],
    ]
    only_b = run(threaded, "--describe", "--topic", "b")
    assert "Topic: a" not in only_b.stdout
    assert table_rows(only_b.stdout)[1:] == [["0", "1", "leader", "yes", "1", "0", "0", "0"]]


def test_an_unknown_topic_fails_with_a_clear_message(threaded):
    result = run(threaded, "--describe", "--topic", "nope")
    assert result.exit_code == 1
    assert result.stderr == (
        "Error while executing replicas command : Topic 'nope' does not exist as expected\n"
    )


def test_undescribable_partitions_are_shown_and_fail_the_command(threaded):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=1, replication_factor=3))
    threaded.call(
        lambda: threaded.cluster.inject(
            PartitionsGet, lambda b, r: (200, {"partitions": []}), times=1000
        )
    )
    result = run(threaded, "--describe", "--timeout-ms", "300")
    assert result.exit_code == 1
    assert "NOT_LEADER_OR_FOLLOWER" in result.stdout
    assert "1 partition(s) could not be described" in result.stderr


def test_describe_is_required(threaded):
    result = run(threaded)
    assert result.exit_code == 2
    assert "--describe" in result.output


# --- admin endpoints that ask for a token (admin.listeners.token) -------------------------

TOKEN = "fake-cluster-token"


async def ask_for_a_token(cluster: FakeCluster) -> None:
    """Every broker's admin endpoint asks for TOKEN from now on (same ports)."""
    cluster.admin_token = TOKEN
    for b in cluster.broker_ids:
        await cluster.stop_admin_endpoint(b)
        await cluster.start_admin_endpoint(b)


async def test_the_token_given_is_sent_to_the_admin_endpoints(cluster):
    cluster.create_topic("t", partitions=3, replication_factor=3)
    await ask_for_a_token(cluster)
    async with fast_client(cluster, admin_token=TOKEN) as client:
        described = await client.describe_replicas(["t"])
    assert [(p.leader, p.error) for p in described] == [(1, None), (2, None), (3, None)]


async def test_no_token_or_a_wrong_one_fails_the_partitions_at_once(cluster):
    cluster.create_topic("t", partitions=1, replication_factor=3)
    await ask_for_a_token(cluster)
    port = cluster.admin_ports[1]
    for token, what in ((None, "requires a token"), ("wrong", "refused the token given")):
        # Not retried until the (long) timeout: the same token would be refused again.
        async with fast_client(cluster, admin_token=token, default_api_timeout_ms=60_000) as c:
            (p,) = await c.describe_replicas(["t"])
        assert isinstance(p.error, AdminEndpointError)
        assert str(p.error).startswith(f"broker 1's admin endpoint http://127.0.0.1:{port} {what}")
        assert "(HTTP 401)" in str(p.error) and "MINIKAFKA_ADMIN_TOKEN" in str(p.error)
    assert asked_leaders(cluster) == []


def test_the_command_sends_the_token_of_the_environment(threaded, monkeypatch):
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=1, replication_factor=1))
    threaded.run(ask_for_a_token(threaded.cluster))
    monkeypatch.delenv("MINIKAFKA_ADMIN_TOKEN", raising=False)
    refused = run(threaded, "--describe", "--timeout-ms", "5000")
    assert refused.exit_code == 1
    assert "HTTP 401" in refused.stdout
    monkeypatch.setenv("MINIKAFKA_ADMIN_TOKEN", TOKEN)
    result = run(threaded, "--describe")
    assert result.exit_code == 0, result.output
    assert table_rows(result.stdout)[1][:4] == ["0", "1", "leader", "yes"]


def test_the_command_sends_the_local_clusters_own_token(threaded, monkeypatch):
    """Bootstrapping from the running local cluster by default, its token is sent (not the
    environment's); a cluster named by address is not assumed to be the local one."""
    from minikafka.cli import client_options

    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=1, replication_factor=1))
    threaded.run(ask_for_a_token(threaded.cluster))

    class SecuredLocalCluster:
        bootstrap_servers = threaded.cluster.bootstrap

        def admin_token(self) -> str:
            return TOKEN

    monkeypatch.setattr(client_options, "_running_local_cluster", SecuredLocalCluster)
    monkeypatch.setenv("MINIKAFKA_ADMIN_TOKEN", "not-the-local-clusters")
    result = CliRunner().invoke(cli, ["replicas", "--describe"])
    assert result.exit_code == 0, result.output
    by_address = run(threaded, "--describe", "--timeout-ms", "5000")
    assert by_address.exit_code == 1 and "refused the token given" in by_address.stdout
