import gc
import logging

import pytest

from minikafka.server.gc_pauses import (
    FullCollectionSchedule,
    GcPauseLog,
    defer_full_collections,
    resident_bytes,
    restore_full_collections,
)


def test_a_long_collection_is_logged_a_short_one_is_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [10.0]
    pauses = GcPauseLog(threshold_s=0.1, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="minikafka.server.gc_pauses"):
        pauses("start", {"generation": 0})
        now[0] += 0.05
        pauses("stop", {"generation": 0, "collected": 3})
        pauses("start", {"generation": 2})
        now[0] += 0.25
        pauses("stop", {"generation": 2, "collected": 7})
    assert [r.getMessage() for r in caplog.records] == [
        "garbage collection of generation 2 paused the broker for 0.25s (7 objects freed)"
    ]


def test_installed_it_hears_the_interpreter_s_collections(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pauses = GcPauseLog(threshold_s=0.0)
    pauses.install()
    pauses.install()  # once only
    try:
        with caplog.at_level(logging.INFO, logger="minikafka.server.gc_pauses"):
            gc.collect()
    finally:
        pauses.uninstall()
    assert pauses not in gc.callbacks
    # Installed twice, heard once (younger collections may be logged too: threshold 0).
    full = [r for r in caplog.records if "generation 2 paused" in r.getMessage()]
    assert len(full) == 1


def test_full_collections_wait_for_the_schedule_until_every_broker_restores_them() -> None:
    """While deferred, no number of younger collections starts one of the oldest generation
    (CPython's own rule would, after its threshold); restored when the last broker of the
    process asks, to what it was."""
    before = gc.get_threshold()
    defer_full_collections()
    defer_full_collections()  # a second broker in this process
    try:
        full_before = gc.get_stats()[2]["collections"]
        kept = []
        for _ in range(200):
            # Objects that survive into the oldest generation, as a leader change of
            # thousands of partitions makes: without the deferral, about 10 full collections.
            kept.append([[] for _ in range(5000)])
            gc.collect(1)  # each counts towards the oldest generation's threshold
            [[] for _ in range(701)]  # and allocations start younger collections
        assert gc.get_stats()[2]["collections"] == full_before
        del kept
        restore_full_collections()
        assert gc.get_threshold()[2] != before[2]  # the other broker still defers
    finally:
        restore_full_collections()
    assert gc.get_threshold() == before
    restore_full_collections()  # unbalanced: no effect
    assert gc.get_threshold() == before


def test_the_oldest_generation_is_collected_on_schedule_or_when_memory_doubled() -> None:
    schedule = FullCollectionSchedule(100.0, 1_000, interval_s=300.0)
    assert not schedule.due(399.0, 1_999)
    assert schedule.due(400.0, 1_000)  # the interval
    assert schedule.due(150.0, 2_000)  # twice the memory
    schedule.collected(150.0, 1_200)
    assert not schedule.due(449.0, 2_399) and schedule.due(449.0, 2_400)
    # Where the memory is unknown, the interval alone.
    blind = FullCollectionSchedule(0.0, None, interval_s=300.0)
    assert not blind.due(299.0, 10**12) and blind.due(300.0, None)


def test_resident_bytes_reads_this_process_s_memory() -> None:
    before = resident_bytes()
    assert before is not None and before > 0
    grown = b"\x01" * (64 * 1024 * 1024)  # written: resident
    after = resident_bytes()
    assert after is not None and after - before >= 60 * 1024 * 1024
    del grown
