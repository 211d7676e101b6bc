"""log.open.files.max on a real cluster: three brokers each holding more partitions' segment
files than the limit let them keep open take records for every partition and give them all
back to a Kafka client (confluent-kafka), while the segment files each broker has open
(/proc/PID/fd) stay within the limit. Prints the descriptor counts measured."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest

from minikafka.cluster import LocalCluster
from tests.cluster.conftest import ClusterFactory, wait_until
from tests.cluster.helpers import create_topic, deliver, producing, read_records

pytestmark = pytest.mark.timeout(240)

CAP = 16
PARTITIONS = 60  # x RF 3 on 3 brokers: 60 replicas (and more segments) on each
PER_PARTITION = 6
# Descriptors a broker holds besides segment files: sockets (clients, other brokers,
# ZooKeeper), its log, the dir lock, the event loop's and Python's own.
MARGIN = 150
SEGMENT_FILE = re.compile(r"/\d{20}\.log( \(deleted\))?$")  # not the broker's own log


def descriptors(pid: int) -> tuple[int, int]:
    """(all descriptors, those of segment .log files) the process holds."""
    total = segments = 0
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in os.listdir(fd_dir):
        total += 1
        try:
            target = os.readlink(fd_dir / fd)
        except OSError:
            continue  # closed meanwhile
        if SEGMENT_FILE.search(target):
            segments += 1
    return total, segments


def measure(cluster: LocalCluster) -> dict[int, tuple[int, int]]:
    out = {}
    for bid in cluster.broker_ids:
        pid = cluster.pid(bid)
        assert pid is not None, f"broker {bid} is not running"
        out[bid] = descriptors(pid)
    return out


async def test_more_partitions_than_open_files_all_produce_and_consume(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(
        overrides={
            "log.open.files.max": str(CAP),
            # Small segments: several per partition, so rolls and reads of old ones too.
            "log.segment.bytes": "1024",
        }
    )
    await create_topic(cluster, "many", PARTITIONS, 3)
    values = [
        b"p%d-r%d-" % (p, r) + b"x" * 200 for r in range(PER_PARTITION) for p in range(PARTITIONS)
    ]
    partitions = [p for _ in range(PER_PARTITION) for p in range(PARTITIONS)]
    servers = cluster.bootstrap_servers
    peak: dict[int, tuple[int, int]] = {b: (0, 0) for b in cluster.broker_ids}

    def note() -> None:
        for bid, (total, segs) in measure(cluster).items():
            peak[bid] = (max(peak[bid][0], total), max(peak[bid][1], segs))

    def produce() -> None:
        with producing(servers, {"linger.ms": 0}) as producer:
            # One round per record of each partition: every round writes to all of them.
            for r in range(PER_PARTITION):
                part = slice(r * PARTITIONS, (r + 1) * PARTITIONS)
                deliver(producer, "many", values[part], partitions=partitions[part])
                note()

    await asyncio.to_thread(produce)
    records = await asyncio.to_thread(read_records, servers, "many", len(values), 120.0)
    note()
    got: dict[int, list[bytes]] = {}
    for rec in records:
        got.setdefault(rec.partition, []).append(rec.value or b"")
    for p in range(PARTITIONS):
        assert got.get(p) == [b"p%d-r%d-" % (p, r) + b"x" * 200 for r in range(PER_PARTITION)]
    # Every broker wrote more segment files than it may keep open.
    for bid in cluster.broker_ids:
        files = list(cluster.log_dir(bid).glob("many-*/*.log"))
        assert len(files) > 3 * CAP, (bid, len(files))
    print(f"log.open.files.max={CAP}; peak descriptors per broker (all, segment files): {peak}")
    for bid, (total, segs) in peak.items():
        # Beyond the cache's files: a fetch response's regions hold descriptors of their
        # own until sent, at most one per partition of the response.
        assert segs <= CAP + PARTITIONS, (bid, segs)
        assert total <= CAP + PARTITIONS + MARGIN, (bid, total)
    for bid in cluster.broker_ids:
        assert "open files limit (RLIMIT_NOFILE): soft" in cluster.broker_log_path(bid).read_text()
    # At rest (no response in flight), only the cache's.
    wait_until(lambda: all(segs <= CAP for _, segs in measure(cluster).values()), timeout=30)
    print(f"at rest: {measure(cluster)}")
