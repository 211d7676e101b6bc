"""A follower's fetcher backs off the partitions a leader refused: many refused alike in one
response are logged in one line, and the loop releases them when they are due without
going through every backing-off partition on each round."""

from __future__ import annotations

import asyncio
import logging

import pytest

from minikafka.common import TopicPartition
from minikafka.config.broker import BrokerConfig
from minikafka.replication.fetcher import DELAY_LOG_PARTITIONS, ReplicaFetcher
from minikafka.replication.replica_manager import ReplicaManager
from minikafka.rpc.messages import BrokerNode

from .test_incremental_delayed_fetch import rm  # noqa: F401  (fixture)

LEADER = BrokerNode(2, "127.0.0.1", 1)


async def test_partitions_refused_alike_back_off_together_in_one_log_line(
    rm: ReplicaManager,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    fetcher = ReplicaFetcher(LEADER, rm, BrokerConfig(broker_id=1, replica_fetch_backoff_ms=1000))
    tps = [TopicPartition("t", p) for p in range(500)]
    fetcher.add_partitions(dict.fromkeys(tps, 0))
    loop = asyncio.get_running_loop()
    with caplog.at_level(logging.INFO, logger="minikafka.replication.fetcher"):
        before = loop.time()
        fetcher._delay_many([*tps, TopicPartition("gone", 0)], "fetch: NOT_LEADER_OR_FOLLOWER")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    assert "500 partition(s): fetch: NOT_LEADER_OR_FOLLOWER" in lines[0]
    assert f"and {500 - DELAY_LOG_PARTITIONS} more" in lines[0]
    due = fetcher.partitions[tps[0]].delayed_until
    assert before + 1.0 <= due <= loop.time() + 1.0
    assert all(fetcher.partitions[tp].delayed_until == due for tp in tps)

    # Not due yet: nothing is released; due: all are, and nothing is left to wait for.
    fetcher._release_delays(due - 0.01)
    assert fetcher._delayed == set(tps)
    fetcher._release_delays(due)
    assert fetcher._delayed == set()
    assert fetcher._next_release == float("inf")


async def test_the_earliest_delay_is_released_first(
    rm: ReplicaManager,  # noqa: F811
) -> None:
    fetcher = ReplicaFetcher(LEADER, rm, BrokerConfig(broker_id=1))
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    fetcher.add_partitions({a: 0, b: 0})
    fetcher._set_delay(b, fetcher.partitions[b], 20.0)
    fetcher._set_delay(a, fetcher.partitions[a], 10.0)
    assert fetcher._next_release == 10.0
    fetcher._release_delays(15.0)
    assert fetcher._delayed == {b} and fetcher._next_release == 20.0
    # A partition dropped while backing off leaves an early wake-up, never a late one.
    fetcher.remove_partitions({b})
    fetcher._release_delays(16.0)
    assert fetcher._delayed == set() and fetcher._next_release == float("inf")
