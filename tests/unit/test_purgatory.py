"""The purgatory: a waiter is checked when a partition it watches moves, and woken only
once its condition holds."""

import asyncio

import pytest

from minikafka.common import TopicPartition
from minikafka.replication.purgatory import FetchSessionKey, Purgatory

TP = TopicPartition("t", 0)
OTHER = TopicPartition("t", 1)
SESSION = FetchSessionKey(7)


class Counter:
    """A condition that holds once `value` reaches `target`, counting its checks."""

    def __init__(self, target: int) -> None:
        self.value = 0
        self.target = target
        self.checks = 0

    def __call__(self) -> bool:
        self.checks += 1
        return self.value >= self.target


async def settle() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


async def test_an_already_true_condition_returns_without_waiting():
    p = Purgatory()
    assert await p.wait_until([TP], lambda: True, 0) is True


async def test_a_waiter_is_checked_once_per_step_until_satisfied():
    p = Purgatory()
    cond = Counter(2)
    waiting = asyncio.ensure_future(p.wait_until([TP, OTHER], cond, 30))
    await settle()
    assert cond.checks == 1  # the up-front check
    cond.value = 1
    p.notify(TP)
    p.notify(OTHER)
    p.notify(TP)  # three notifications in one step: one check
    await settle()
    assert cond.checks == 2 and not waiting.done()
    p.notify(TopicPartition("unwatched", 0))
    await settle()
    assert cond.checks == 2
    cond.value = 2
    p.notify(OTHER)
    assert await waiting is True
    assert cond.checks == 3
    # Gone from every partition it watched: later notifications check nothing.
    p.notify(TP)
    await settle()
    assert cond.checks == 3


async def test_the_condition_is_checked_after_the_notifying_step_completes():
    p = Purgatory()
    state = {"hw": 0}
    waiting = asyncio.ensure_future(p.wait_until([TP], lambda: state["hw"] >= 5, 30))
    await settle()
    p.notify(TP)  # notified before the state it announces is complete ...
    state["hw"] = 5  # ... which the same step then finishes
    assert await asyncio.wait_for(waiting, 5) is True


async def test_the_deadline_returns_the_condition_as_it_is_then():
    p = Purgatory()
    state = {"ok": False}
    assert await p.wait_until([TP], lambda: state["ok"], 0.05) is False
    waiting = asyncio.ensure_future(p.wait_until([TP], lambda: state["ok"], 0.05))
    await settle()
    state["ok"] = True  # true at the deadline, never notified
    assert await waiting is True


async def test_a_condition_that_raises_raises_in_the_waiter():
    p = Purgatory()
    calls = 0

    def cond() -> bool:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise ValueError("broken state")
        return False

    waiting = asyncio.ensure_future(p.wait_until([TP], cond, 30))
    await settle()
    p.notify(TP)
    with pytest.raises(ValueError, match="broken state"):
        await waiting


async def test_a_cancelled_waiter_stops_watching():
    p = Purgatory()
    cond = Counter(1)
    waiting = asyncio.ensure_future(p.wait_until([TP], cond, 30))
    await settle()
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    cond.value = 1
    p.notify(TP)
    await settle()
    assert cond.checks == 1


async def test_notify_all_checks_every_waiter_and_on_notify_hears_every_partition():
    p = Purgatory()
    heard: list[TopicPartition] = []
    p.on_notify = heard.append
    a, b = Counter(1), Counter(1)
    wa = asyncio.ensure_future(p.wait_until([TP], a, 30))
    wb = asyncio.ensure_future(p.wait_until([OTHER], b, 30))
    await settle()
    a.value = b.value = 1
    p.notify_all()
    assert await wa is True and await wb is True
    assert sorted(heard) == sorted([TP, OTHER])


async def test_a_waiter_under_a_session_key_is_checked_by_check_and_complete():
    """An incremental fetch waits under its session's key: a partition notification reaches
    it only through on_notify (the session cache), which checks the session key."""
    p = Purgatory()
    cond = Counter(1)
    heard: list[TopicPartition] = []

    def session_cache(tp: TopicPartition) -> None:
        heard.append(tp)
        if tp == TP:  # a partition of the session moved
            p.check_and_complete(SESSION)

    p.on_notify = session_cache
    waiting = asyncio.ensure_future(p.wait_until([SESSION], cond, 30))
    await settle()
    assert p.watched(SESSION) == 1 and p.watched(TP) == 0
    p.notify(OTHER)  # not in the session
    await settle()
    assert cond.checks == 1
    p.notify(TP)
    await settle()
    assert cond.checks == 2 and not waiting.done()
    cond.value = 1
    p.notify(TP)
    assert await waiting is True
    assert p.watched(SESSION) == 0 and heard == [OTHER, TP, TP]
    assert FetchSessionKey(0) != TopicPartition("t", 0)  # no key equals a partition


async def test_notify_all_checks_session_keys_without_telling_on_notify():
    p = Purgatory()
    heard: list[TopicPartition] = []
    p.on_notify = heard.append
    a, b = Counter(1), Counter(1)
    wa = asyncio.ensure_future(p.wait_until([TP], a, 30))
    wb = asyncio.ensure_future(p.wait_until([SESSION], b, 30))
    await settle()
    a.value = b.value = 1
    p.notify_all()
    assert await wa is True and await wb is True
    assert heard == [TP]
