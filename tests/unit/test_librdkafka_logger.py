"""librdkafka's log through Python logging: a line repeated by every reconnect is shown once
per window with how many were held back, a failing connection at INFO, others as they are."""

from __future__ import annotations

import logging

import pytest

from minikafka.client.librdkafka import REPEAT_WINDOW_S, LibrdkafkaLogger

FAIL = (
    "FAIL [rdkafka#consumer-{n}] [thrd:h:1/bootstrap]: h:1/bootstrap: Connect to ipv4#127.0.0.1:1 "
    "failed: Connection refused (after {ms}ms in state CONNECT)"
)


def test_repeats_are_held_back_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    logger = LibrdkafkaLogger(clock=lambda: now[0])
    caplog.set_level(logging.INFO, logger="minikafka")
    for i in range(30):
        now[0] = i * 0.1
        # As confluent-kafka calls it: Python's level, then facility, client name, line.
        _, line = FAIL.format(n=i, ms=i).split("] ", 1)
        logger.log(logging.ERROR, "%s [%s] %s", "FAIL", f"rdkafka#consumer-{i % 3}", line)
    assert len(caplog.records) == 1
    assert caplog.records[0].levelno == logging.INFO  # a failing connection
    now[0] = REPEAT_WINDOW_S + 1
    logger.log(logging.ERROR, "%s", FAIL.format(n=1, ms=0))
    assert len(caplog.records) == 2
    assert caplog.records[1].getMessage().endswith("(29 more like it in the last 30 s)")


def test_other_lines_keep_their_level_and_distinct_ones_all_show(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = LibrdkafkaLogger(clock=lambda: 0.0)
    caplog.set_level(logging.WARNING, logger="minikafka")
    logger.log(logging.WARNING, "CONFWARN [rdkafka#producer-1] [thrd:app]: a")
    logger.log(logging.WARNING, "CONFWARN [rdkafka#producer-1] [thrd:app]: b")
    logger.log(logging.ERROR, FAIL.format(n=1, ms=1))  # INFO now: below WARNING
    assert [(r.levelno, r.getMessage()[-1]) for r in caplog.records] == [
        (logging.WARNING, "a"),
        (logging.WARNING, "b"),
    ]
