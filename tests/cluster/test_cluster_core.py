"""The cluster core end to end: real ZooKeeper, real broker processes, a real Kafka client
(confluent-kafka) and the CLI.

Each test asserts one behaviour a user relies on (issue 3): topics, produce and consume,
metadata that matches ZooKeeper, failover of controller and leaders, fencing of a deposed
controller, controlled shutdown, topic deletion, and a broker that survives bad input.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from pathlib import Path

import msgpack
import pytest

from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode
from minikafka.rpc.connection import BrokerConnection
from minikafka.rpc.messages import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from minikafka.zk.client import ControllerMovedError
from tests.cluster.conftest import SESSION_TIMEOUT_MS, ClusterFactory, wait_until, wait_until_async
from tests.cluster.helpers import (
    admin_client,
    consume_all,
    create_topic,
    metadata,
    partition_states,
    produce_at,
    produce_values,
    run_cli,
)

pytestmark = pytest.mark.timeout(180)


# --- topics, produce, consume ----------------------------------------------------------


async def test_rf1_and_rf3_topics_carry_records_through_the_client(cluster: LocalCluster) -> None:
    await create_topic(cluster, "single", 2, 1)
    await create_topic(cluster, "triple", 3, 3)
    for topic in ("single", "triple"):
        values = [f"{topic}-{i}".encode() for i in range(300)]
        acked = await produce_values(cluster, topic, values)
        assert len(set(acked)) == 300  # every record got its own (partition, offset)
        assert sorted(await consume_all(cluster, topic, 300)) == sorted(values)


def test_cli_creates_produces_consumes_and_describes_like_kafka(cluster: LocalCluster) -> None:
    b = cluster.bootstrap_servers
    created = run_cli(
        "topics", "--bootstrap-server", b, "--create", "--topic", "cli",
        "--partitions", "3", "--replication-factor", "3",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    lines = "\n".join(f"k{i}:v{i}" for i in range(50)) + "\n"
    produced = run_cli(
        "produce", "--bootstrap-server", b, "--topic", "cli", "--acks", "all",
        "--property", "parse.key=true", "--property", "key.separator=:",
        stdin=lines,
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    consumed = run_cli(
        "consume", "--bootstrap-server", b, "--topic", "cli", "--from-beginning",
        "--max-messages", "50", "--timeout-ms", "20000", "--property", "print.key=true",
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    pairs = sorted(line.split("\t") for line in consumed.stdout.splitlines())
    assert pairs == sorted([f"k{i}", f"v{i}"] for i in range(50))
    assert "Processed a total of 50 messages" in consumed.stderr

    described = run_cli("topics", "--bootstrap-server", b, "--describe", "--topic", "cli")
    assert described.returncode == 0, described.stderr
    states = partition_states(cluster, "cli", 3)
    assignment = cluster.zk_client().get_assignment("cli")
    assert assignment is not None
    rows = [line.strip() for line in described.stdout.splitlines() if "Partition: " in line]
    assert len(rows) == 3
    for p in range(3):
        st = states[p]
        expected = (
            f"Topic: cli\tPartition: {p}\tLeader: {st.leader}\t"
            f"Replicas: {','.join(map(str, assignment[p]))}\t"
            f"Isr: {','.join(map(str, st.isr))}"
        )
        assert rows[p] == expected


# --- failover --------------------------------------------------------------------------


async def test_kill_9_of_the_controller_elects_another_and_the_cluster_keeps_working(
    cluster: LocalCluster,
) -> None:
    await create_topic(cluster, "t", 3, 3)
    old = cluster.controller()
    assert old is not None
    cluster.kill(old[0])
    new_id, new_epoch = cluster.wait_for_controller(
        timeout=SESSION_TIMEOUT_MS / 1000 + 10, exclude=[old[0]]
    )
    assert new_id != old[0] and new_epoch > old[1]
    # The new controller acts: topics can still be created and used.
    await create_topic(cluster, "after", 2, 2)
    values = [b"a", b"b", b"c"]
    await produce_values(cluster, "after", values)
    assert sorted(await consume_all(cluster, "after", 3)) == values


async def test_kill_9_of_a_leader_moves_leadership_within_the_isr_and_clients_follow(
    cluster: LocalCluster,
) -> None:
    await create_topic(cluster, "t", 1, 3)
    before = partition_states(cluster, "t", 1)[0]
    first = [f"before-{i}".encode() for i in range(100)]
    await produce_values(cluster, "t", first)
    old_leader = before.leader
    cluster.kill(old_leader)

    def new_leader() -> bool:
        st = partition_states(cluster, "t", 1)[0]
        return st.leader not in (old_leader, -1)

    wait_until(new_leader, SESSION_TIMEOUT_MS / 1000 + 15, "a new leader for t-0")
    after = partition_states(cluster, "t", 1)[0]
    assert after.leader in before.isr
    assert after.leader_epoch > before.leader_epoch
    assert old_leader not in after.isr
    # Producers and consumers find the new leader; nothing acknowledged was lost.
    second = [f"after-{i}".encode() for i in range(100)]
    await produce_values(cluster, "t", second)
    assert sorted(await consume_all(cluster, "t", 200)) == sorted(first + second)


async def test_a_restarted_broker_rejoins_the_isr(cluster: LocalCluster) -> None:
    await create_topic(cluster, "t", 1, 3)
    await produce_values(cluster, "t", [b"x"] * 10)
    victim = partition_states(cluster, "t", 1)[0].isr[-1]
    cluster.kill(victim)
    wait_until(
        lambda: victim not in partition_states(cluster, "t", 1)[0].isr,
        SESSION_TIMEOUT_MS / 1000 + 15,
        "the killed follower to leave the ISR",
    )
    await produce_values(cluster, "t", [b"y"] * 10)  # it misses these
    cluster.restart(victim)
    wait_until(
        lambda: victim in partition_states(cluster, "t", 1)[0].isr,
        30,
        "the restarted follower to catch up and rejoin the ISR",
    )


# --- a deposed controller ---------------------------------------------------------------


async def test_a_paused_controller_is_deposed_and_fenced_when_it_resumes(
    make_cluster: ClusterFactory,
) -> None:
    # No automatic preferred-leader rebalance: the only epoch changes are the failover's.
    cluster = make_cluster(overrides={"auto.leader.rebalance.enable": "false"})
    await create_topic(cluster, "t", 3, 3)
    zombie, old_epoch = cluster.controller() or (-1, -1)
    cluster.pause(zombie)
    new_id, new_epoch = cluster.wait_for_controller(
        timeout=SESSION_TIMEOUT_MS / 1000 + 15, exclude=[zombie]
    )
    assert new_epoch > old_epoch
    # The new controller handles the zombie as a dead broker: out of every ISR.
    wait_until(
        lambda: all(zombie not in st.isr for st in partition_states(cluster, "t", 3).values()),
        30,
        "the paused controller to leave every ISR",
    )
    states_before = partition_states(cluster, "t", 3)
    cluster.resume(zombie)
    # It comes back as a plain broker: re-registered, and the controller did not change.
    cluster.wait_for_registered([zombie], timeout=30)
    assert cluster.controller() == (new_id, new_epoch)

    # Every broker, the zombie too, has had the new controller's UpdateMetadata (its
    # Metadata names the new controller): only then does it know the new epoch, and a
    # request in the old one is stale to it (one that has not heard of the new epoch yet
    # takes it, as Kafka's would).
    async def all_know_the_new_controller() -> bool:
        return all(
            [(await metadata(cluster, b)).controller_id == new_id for b in cluster.broker_ids]
        )

    await wait_until_async(all_know_the_new_controller, 30, "every broker to learn the new epoch")

    # ZooKeeper refuses writes fenced with the old controller epoch's version ...
    zk = cluster.zk_client()
    epoch_now = zk.get_controller_epoch()
    assert epoch_now is not None
    st = states_before[0]
    with pytest.raises(ControllerMovedError):
        zk.update_partition_state_as_controller(
            TopicPartition("t", 0),
            st.new_leader_and_isr(st.leader, st.isr),
            st.zk_version,
            epoch_now[1] - 1,
        )
    # ... and every broker refuses requests stamped with the old controller epoch.
    for bid, port in cluster.broker_ports.items():
        conn = BrokerConnection("127.0.0.1", port)
        await conn.connect()
        try:
            lai: LeaderAndIsrResponse = await conn.send(
                LeaderAndIsrRequest(
                    zombie,
                    old_epoch,
                    -1,
                    [LeaderAndIsrPartitionState("t", 0, old_epoch, bid, 99, [bid], 0, [1, 2, 3])],
                    [],
                )
            )
            um: UpdateMetadataResponse = await conn.send(
                UpdateMetadataRequest(zombie, old_epoch, -1, [], [])
            )
        finally:
            await conn.close()
        assert lai.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
        assert um.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    # Nothing the zombie (or we, posing as it) sent changed the partitions.
    after = partition_states(cluster, "t", 3)
    for p in range(3):
        assert after[p].leader_epoch == states_before[p].leader_epoch
    meta = await metadata(cluster)
    assert meta.controller_id == new_id
    assert all(p.leader_epoch < 99 for t in meta.topics for p in t.partitions)


# --- controlled shutdown, deletion --------------------------------------------------------


async def test_controlled_shutdown_moves_leadership_before_the_process_exits(
    cluster: LocalCluster,
) -> None:
    await create_topic(cluster, "t", 6, 3)
    leaders = {p: st.leader for p, st in partition_states(cluster, "t", 6).items()}
    victim = max(set(leaders.values()), key=lambda b: sum(1 for v in leaders.values() if v == b))
    assert cluster.terminate(victim) == 0
    # Read right after the exit: without a controlled shutdown the leaders would still be
    # the victim until its ZooKeeper session expired (seconds later).
    after = partition_states(cluster, "t", 6)
    assert all(st.leader != victim for st in after.values())
    assert all(victim not in st.isr for st in after.values())
    # The broker left its logs cleanly.
    assert (cluster.log_dir(victim) / ".kafka_cleanshutdown").exists()


async def test_topic_deletion_removes_znodes_and_files(cluster: LocalCluster) -> None:
    await create_topic(cluster, "doomed", 2, 3)
    await produce_values(cluster, "doomed", [b"x"] * 20)
    dirs = [cluster.log_dir(b) / f"doomed-{p}" for b in cluster.broker_ids for p in range(2)]
    assert all(d.is_dir() for d in dirs)
    admin = admin_client(cluster.bootstrap_servers)
    deleted = admin.delete_topics(["doomed"], operation_timeout=30, request_timeout=60)["doomed"]
    await asyncio.to_thread(deleted.result, 90)
    zk = cluster.zk_client()
    wait_until(lambda: not zk.topic_exists("doomed"), 30, "the topic znodes to go")
    assert zk.get_topic_config("doomed") == {}
    assert "doomed" not in zk.get_topic_deletions()
    wait_until(lambda: not any(d.exists() for d in dirs), 30, "the partition directories to go")
    assert "doomed" not in [t.name for t in (await metadata(cluster)).topics]


# --- bad input ----------------------------------------------------------------------------


def raw_frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


async def test_bad_frames_do_not_kill_a_broker(cluster: LocalCluster) -> None:
    bid, port = next(iter(cluster.broker_ports.items()))
    pid = cluster.pid(bid)
    garbage = [
        raw_frame(os.urandom(64)),  # not msgpack
        struct.pack(">I", 1 << 31) + b"x" * 16,  # larger than socket.request.max.bytes
        struct.pack(">I", 1000) + b"short",  # cut off mid-frame
        raw_frame(struct.pack(">I", 20) + msgpack.packb([[9999, 0, 1, "x"], {}])),  # unknown api
        b"\x00\x00",  # not even a size
    ]
    for payload in garbage:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            s.settimeout(5)
            try:
                while s.recv(65536):
                    pass
            except OSError:
                pass
    # Same process, still answering (its metadata lists every broker once the controller's
    # UpdateMetadata, which may trail the cluster's start, has arrived).
    assert cluster.pid(bid) == pid and cluster.is_alive(bid)

    async def lists_every_broker() -> bool:
        meta = await metadata(cluster, bid)
        return sorted(b.node_id for b in meta.brokers) == cluster.broker_ids

    await wait_until_async(lists_every_broker, 15, "every broker in the metadata")


async def test_oversized_batch_and_corrupt_crc_are_rejected_without_changing_the_log(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(1, {"message.max.bytes": "1000"})
    await create_topic(cluster, "t", 1, 1)
    await produce_values(cluster, "t", [b"ok"])
    from minikafka.storage.record_batch import build_batch

    big = build_batch([b"x" * 5000], base_offset=0, partition_leader_epoch=0)
    corrupt = bytearray(build_batch([b"abc"], base_offset=0, partition_leader_epoch=0))
    corrupt[-1] ^= 0xFF
    host, port = cluster.broker_address(1)
    codes = [
        (await produce_at(host, port, TopicPartition("t", 0), records, acks=1, timeout_ms=5000))[0]
        for records in (big, bytes(corrupt))
    ]
    assert codes == [ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE]
    assert await consume_all(cluster, "t", 1) == [b"ok"]


def test_broker_dirs_layout_is_kafkas(cluster: LocalCluster, tmp_path: Path) -> None:
    """The broker keeps Kafka's files in its log dir (checkpoints appear at clean shutdown)."""
    bid = cluster.broker_ids[0]
    assert cluster.terminate(bid) == 0
    names = {p.name for p in cluster.log_dir(bid).iterdir()}
    assert {
        ".kafka_cleanshutdown",
        "replication-offset-checkpoint",
        "recovery-point-offset-checkpoint",
    } <= names


def test_a_cluster_started_again_gives_each_partition_back_to_its_preferred_leader(
    make_cluster: ClusterFactory,
) -> None:
    """The first broker up leads every partition whose leader is not up yet; once the others
    are back in the ISRs, start() asks for a preferred replica election, so `cluster up`
    leaves each broker leading its share instead of one broker leading everything."""
    from tests.kafka_protocol.test_confluent_kafka import create_topic

    cluster = make_cluster(3)
    create_topic(cluster.bootstrap_servers, "spread", 6, 3)
    zk = cluster.zk_client()
    tps = [TopicPartition("spread", p) for p in range(6)]
    assignment = zk.get_assignment("spread")
    assert assignment is not None
    preferred = {tp: assignment[tp.partition][0] for tp in tps}
    assert sorted(preferred.values()) == [1, 1, 2, 2, 3, 3]
    wait_until(
        lambda: {tp: st.leader for tp, st in zk.get_partition_states(tps).items()} == preferred,
        60,
        "the preferred leaders",
    )
    cluster.stop()
    cluster.start()
    zk = cluster.zk_client()
    assert {tp: st.leader for tp, st in zk.get_partition_states(tps).items()} == preferred
