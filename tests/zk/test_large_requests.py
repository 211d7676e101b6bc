"""Requests of thousands of partitions against a real ZooKeeper: nothing may exceed
jute.maxbuffer (1 MiB), which the server answers by dropping the connection."""

from __future__ import annotations

import time
from typing import Any

import pytest

from minikafka.common import LeaderAndIsr, TopicPartition
from minikafka.controller.partition_state_machine import state_creation_chunks
from minikafka.zk import multi as zk_multi_module
from minikafka.zk import paths
from minikafka.zk.client import JUTE_MAX_BUFFER, ZkClient, ZkRequestTooLargeError
from minikafka.zk.controller_znodes import ISR_CHANGE_NOTIFICATION_BYTES

from .conftest import ZkClientFactory


def elect(client: ZkClient) -> int:
    won = client.try_elect_controller(1)
    assert won is not None
    return won[1]


def multis(client: ZkClient, monkeypatch: pytest.MonkeyPatch) -> list[list[Any]]:
    """Records the operations of every multi `client` sends from now on (fence included)."""
    sent: list[list[Any]] = []
    real = client._multi_async

    def recording(ops: list[Any], fence_version: int | None) -> Any:
        all_ops, result = real(ops, fence_version)
        sent.append(all_ops)
        return all_ops, result

    monkeypatch.setattr(client, "_multi_async", recording)
    return sent


def big_topic(client: ZkClient, topic: str, n: int) -> dict[TopicPartition, LeaderAndIsr]:
    client.create_topic(topic, {p: [1, 2, 3] for p in range(n)}, {"retention.ms": "1"})
    return {TopicPartition(topic, p): LeaderAndIsr(1, 0, (1, 2, 3), 1) for p in range(n)}


def test_a_multi_larger_than_jute_maxbuffer_is_refused_before_it_is_sent(
    zk_client: ZkClient,
) -> None:
    fence = elect(zk_client)
    states = big_topic(zk_client, "big", 5000)  # ~1.3 MB as one multi
    with pytest.raises(ZkRequestTooLargeError, match=r"jute\.maxbuffer"):
        zk_client.create_partition_states(states, fence)
    # Nothing was sent: the session is fine and nothing was written.
    assert zk_client.connected
    assert not zk_client.exists(paths.partitions("big"))
    assert zk_client.get_controller_epoch() is not None


def test_thousands_of_states_created_in_chunks_then_the_topic_deleted_in_chunks(
    zk_client: ZkClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    fence = elect(zk_client)
    n = 5000
    states = big_topic(zk_client, "big", n)
    sent = multis(zk_client, monkeypatch)
    started = time.monotonic()
    chunks = state_creation_chunks(states)
    assert [len(c) for c in chunks] == [1000] * 5
    for chunk in chunks:
        created = zk_client.create_partition_states(chunk, fence)
        assert all(s.zk_version == 0 for s in created.values())
    assert len(sent) == 5
    assert max(sum(op.size(zk_client.chroot) for op in ops) for ops in sent) < JUTE_MAX_BUFFER
    assert zk_client.get_partition_ids("big") == list(range(n))
    tps = list(states)
    assert zk_client.get_partition_states(tps) == {
        tp: LeaderAndIsr(1, 0, (1, 2, 3), 1, 0) for tp in tps
    }

    # All of them in one controller batch: a few multis, not one per partition.
    sent.clear()
    done, conflicts = zk_client.update_partition_states_as_controller(
        {tp: (LeaderAndIsr(2, 1, (2, 3), 1), 0) for tp in tps}, fence
    )
    assert conflicts == [] and len(done) == n
    assert {s.zk_version for s in done.values()} == {1}
    assert 1 < len(sent) <= 5

    assert zk_client.request_topic_deletion("big")
    sent.clear()
    zk_client.delete_topic_znodes("big", fence)
    # ~10,000 deletions: several multis, each fenced, the deletion request in the last one.
    assert len(sent) > 1
    assert all(ops[0].kind == "check" for ops in sent)
    assert sent[-1][-1].path == paths.delete_topic("big")
    assert zk_client.get_all_topics() == []
    assert zk_client.get_topic_deletions() == []
    assert not zk_client.exists(paths.topic_config("big"))
    print(f"5,000 partitions: created, updated and deleted in {time.monotonic() - started:.1f}s")


def test_batched_controller_writes_find_the_conflicting_partition(
    make_zk_client: ZkClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    controller, leader = make_zk_client(), make_zk_client()
    fence = elect(controller)
    states = big_topic(controller, "t", 30)
    controller.create_partition_states(states, fence)
    # A leader changes the ISR of t-17 meanwhile (zk version 0 -> 1).
    tp17 = TopicPartition("t", 17)
    assert leader.update_partition_state_as_leader(tp17, LeaderAndIsr(1, 0, (1, 2), 1), 0) == 1
    monkeypatch.setattr(zk_multi_module, "MULTI_CHUNK_OPS", 10)
    sent = multis(controller, monkeypatch)
    done, conflicts = controller.update_partition_states_as_controller(
        {tp: (LeaderAndIsr(2, 1, (2, 3), 1), 0) for tp in states}, fence
    )
    assert conflicts == [tp17]
    assert set(done) == set(states) - {tp17}
    # 3 multis of 10, then the failed one (t-17 is in the second) one partition at a time.
    assert [len(ops) - 1 for ops in sent] == [10, 10, 10] + [1] * 10
    assert controller.get_partition_state(tp17) == LeaderAndIsr(1, 0, (1, 2), 1, 1)
    assert controller.get_partition_state(TopicPartition("t", 16)) == LeaderAndIsr(
        2, 1, (2, 3), 1, 1
    )


def test_fenced_deletes_go_in_chunks_and_skip_what_is_already_gone(
    make_zk_client: ZkClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    controller, broker = make_zk_client(), make_zk_client()
    fence = elect(controller)
    names = [broker.create_isr_change_notification([TopicPartition("t", i)]) for i in range(25)]
    broker._kazoo().delete(paths.isr_change_notification(names[12]))  # gone meanwhile
    monkeypatch.setattr(zk_multi_module, "MULTI_CHUNK_OPS", 10)
    sent = multis(controller, monkeypatch)
    controller.delete_isr_change_notifications(names, fence)
    assert controller.get_isr_change_notifications() == []
    # 10 + 10 (one missing: that chunk again without it) + 5.
    assert [len(ops) - 1 for ops in sent] == [10, 10, 9, 5]


def test_topic_configs_read_in_one_go(zk_client: ZkClient) -> None:
    zk_client.create_topic("a", {0: [1]}, {"retention.ms": "5"})
    zk_client.create_topic("b", {0: [1]}, {})
    assert zk_client.get_topic_configs(["a", "b", "missing"]) == {
        "a": {"retention.ms": "5"},
        "b": {},
        "missing": {},
    }


def test_isr_changes_of_many_partitions_go_in_several_notifications(
    zk_client: ZkClient,
) -> None:
    """A broker catching up tens of thousands of partitions: as one notification, the
    changes would exceed jute.maxbuffer and ZooKeeper would drop the connection."""
    topic = "t" * 200
    tps = [TopicPartition(topic, p) for p in range(20_000)]  # about 5 MB as one
    names = zk_client.create_isr_change_notifications(tps)
    assert zk_client.connected
    assert len(names) > 4
    assert zk_client.get_isr_change_notifications() == sorted(names)
    assert [tp for n in names for tp in zk_client.read_isr_change_notification(n)] == tps
    for n in names:
        data = zk_client.get_data(paths.isr_change_notification(n))
        assert data is not None and len(data) <= ISR_CHANGE_NOTIFICATION_BYTES
