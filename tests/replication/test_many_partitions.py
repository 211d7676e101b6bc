"""A LeaderAndIsr that brings hundreds of new partitions: their logs are created on the
event loop a slice at a time, the loop serving others in between, and are durable
(leader-epoch checkpoints included) when it is answered."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from minikafka.common import TopicPartition
from minikafka.protocol.errors import ErrorCode
from minikafka.replication.replica_manager import CREATE_LOGS_SLICE
from minikafka.rpc.messages import LeaderAndIsrPartitionState, LeaderAndIsrRequest
from minikafka.storage.checkpoint import LEADER_EPOCH_CHECKPOINT, EpochEntry
from minikafka.storage.log import Log
from minikafka.storage.log_config import LogConfig
from minikafka.storage.record_batch import build_batch

from .conftest import BrokerFactory, wait_for

N = 400


def states(leader_of: dict[int, int], epoch: int = 5) -> list[LeaderAndIsrPartitionState]:
    return [
        LeaderAndIsrPartitionState("many", p, 1, leader, epoch, [1, 2], 0, [1, 2], is_new=True)
        for p, leader in leader_of.items()
    ]


async def test_many_new_partitions_are_created_in_slices_and_durable(
    brokers: BrokerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = brokers(1)
    await b.start()
    opened_in: set[str] = set()
    real_open = b.log_manager.open_new_log
    ticks: list[int] = []  # how many log dirs there were at each turn of another task

    def recording(tp: TopicPartition, log_dir: Path, config: LogConfig | None = None) -> Log:
        opened_in.add(threading.current_thread().name)
        return real_open(tp, log_dir, config)

    async def other_task() -> None:
        while True:
            ticks.append(sum(1 for _ in b.log_manager.log_dirs[0].glob("many-*")))
            await asyncio.sleep(0)

    monkeypatch.setattr(b.log_manager, "open_new_log", recording)
    # Broker 1 leads the even partitions and follows broker 2 (not running) for the others.
    leader_of = {p: 1 if p % 2 == 0 else 2 for p in range(N)}
    ticker = asyncio.create_task(other_task())
    await asyncio.sleep(0)
    resp = await b.rm.become_leader_or_follower(
        LeaderAndIsrRequest(0, 1, -1, states(leader_of), [])
    )
    ticker.cancel()
    assert resp.error_code == ErrorCode.NONE
    assert {e.error_code for e in resp.partition_errors} == {ErrorCode.NONE}
    # On the event loop's thread (in worker threads each syscall waited for the GIL), the
    # loop free between slices: the other task ran while the logs were being created.
    assert opened_in == {threading.current_thread().name}
    during = {n for n in ticks if 0 < n < N}
    assert len(during) >= N // CREATE_LOGS_SLICE - 1, ticks
    assert len(b.rm.partitions) == N == len(b.log_manager.all_logs())
    log_dir = tmp_path / "b1"
    for p, leader in leader_of.items():
        part = b.rm.partitions[TopicPartition("many", p)]
        assert part.is_leader == (leader == 1)
        assert part.log.dir == log_dir / f"many-{p}"
        assert part.log.latest_epoch() == (5 if leader == 1 else -1)
        # No checkpoint written for the new epoch (no fsync per partition): the log's
        # first flush writes it, and a crash before rebuilds it from the epoch's batches.
        assert not (part.log.dir / LEADER_EPOCH_CHECKPOINT).exists()

    # kill -9 and start again: every replica is there. (An epoch starting at the LEO of an
    # empty log is dropped on loading, as Kafka does; a record keeps it.)
    b.rm.partitions[TopicPartition("many", 0)].log.append_as_leader(build_batch([b"x"]), 5)
    b = await brokers.restart(1, crash=True)
    logs = b.log_manager.all_logs()
    assert set(logs) == {TopicPartition("many", p) for p in range(N)}
    assert logs[TopicPartition("many", 0)].leader_epoch_cache.entries == [EpochEntry(5, 0)]
    assert logs[TopicPartition("many", 0)].log_end_offset == 1


async def test_a_replica_that_cannot_be_created_gets_a_storage_error(
    brokers: BrokerFactory, tmp_path: Path
) -> None:
    b = brokers(1)
    await b.start()
    (tmp_path / "b1" / "many-7").write_text("not a directory")
    leader_of = {p: 1 for p in range(20)}
    resp = await b.rm.become_leader_or_follower(
        LeaderAndIsrRequest(0, 1, -1, states(leader_of), [])
    )
    errors = {e.partition: e.error_code for e in resp.partition_errors}
    assert errors[7] == ErrorCode.KAFKA_STORAGE_ERROR
    assert {code for p, code in errors.items() if p != 7} == {ErrorCode.NONE}
    assert TopicPartition("many", 7) not in b.rm.partitions
    assert len(b.rm.partitions) == 19 and all(p.is_leader for p in b.rm.partitions.values())
    # The controller sends it again later (say, the disk was fixed): created then.
    (tmp_path / "b1" / "many-7").unlink()
    resp = await b.rm.become_leader_or_follower(LeaderAndIsrRequest(0, 1, -1, states({7: 1}), []))
    assert resp.partition_errors[0].error_code == ErrorCode.NONE
    assert b.rm.partitions[TopicPartition("many", 7)].is_leader


async def test_a_leader_turned_follower_of_many_partitions_syncs_their_epoch_files_once(
    brokers: BrokerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broker 1 led 200 partitions in epoch 5 without writing; broker 2 takes them over in
    epoch 6. Broker 1's fetcher drops epoch 5 (it starts at the LEO) from each partition's
    leader-epoch checkpoint, every file written, then one syncfs for them all before any
    of them fetches: not two fsyncs each on the event loop."""
    from minikafka.replication import fetcher as fetcher_module
    from minikafka.storage import checkpoint

    n = 200
    b1, b2 = brokers(1), brokers(2)
    await b1.start()
    await b2.start()
    led_by_1 = states({p: 1 for p in range(n)})
    await b1.rm.become_leader_or_follower(LeaderAndIsrRequest(0, 1, -1, led_by_1, [b1.node]))
    await b2.rm.become_leader_or_follower(LeaderAndIsrRequest(0, 1, -1, led_by_1, [b1.node]))
    logs = [b1.rm.partitions[TopicPartition("many", p)].log for p in range(n)]
    for lg in logs:
        lg.leader_epoch_cache.persist()  # epoch 5 on disk, as a flush would have written it
    assert all((lg.dir / LEADER_EPOCH_CHECKPOINT).read_text().endswith("5 0\n") for lg in logs)

    fsyncs: list[int] = []
    real_fsync = checkpoint.os.fsync
    monkeypatch.setattr(checkpoint.os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd))[1])
    synced: list[int] = []  # how many partitions were fetching at each sync
    real_sync = fetcher_module.sync_filesystems

    def recording_sync(paths: object) -> None:
        synced.append(len(b1.fetchers.fetchers[2].session.fetchable))
        real_sync(paths)  # type: ignore[arg-type]

    monkeypatch.setattr(fetcher_module, "sync_filesystems", recording_sync)
    led_by_2 = [LeaderAndIsrPartitionState("many", p, 1, 2, 6, [1, 2], 0, [1, 2]) for p in range(n)]
    await b2.rm.become_leader_or_follower(LeaderAndIsrRequest(0, 1, -1, led_by_2, [b2.node]))
    await b1.rm.become_leader_or_follower(LeaderAndIsrRequest(0, 1, -1, led_by_2, [b2.node]))
    await wait_for(
        lambda: (
            all(
                (lg.dir / LEADER_EPOCH_CHECKPOINT).read_text().splitlines() == ["0", "0"]
                for lg in logs
            )
            and b1.fetchers.partition_count() == n
            and not b1.fetchers.fetchers[2]._truncating
        )
    )
    assert synced and synced[0] == 0  # before any of them fetched
    assert len(fsyncs) < n // 4, len(fsyncs)
