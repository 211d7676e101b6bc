"""SIGTERM handled as Ctrl-C by every long-running command, as Kafka's tools do (their JVM
shutdown hook runs on either): the command closes its clients (a consumer commits and
leaves its group, a producer flushes), prints what it printed on Ctrl-C, and exits with
143 (128 + SIGTERM), the status a JVM tool ends with on SIGTERM."""

from __future__ import annotations

import contextlib
import functools
import signal
from collections.abc import Callable, Iterator
from types import FrameType
from typing import ParamSpec, TypeVar

SIGTERM_STATUS = 128 + signal.SIGTERM

P = ParamSpec("P")
R = TypeVar("R")


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: a KeyboardInterrupt, so that every Ctrl-C path runs, which says
    which signal it was for the exit status."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within: SIGTERM raises Terminated in the main thread, as SIGINT raises
    KeyboardInterrupt."""

    def interrupt(_sig: int, _frame: FrameType | None) -> None:
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread (an embedding caller): leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Within: Ctrl-C and SIGTERM wait until the block is done, then raise as usual. For
    steps that must not be cut in two, such as printing records and counting them."""
    received: list[int] = []

    def remember(sig: int, _frame: FrameType | None) -> None:
        received.append(sig)

    try:
        previous = {s: signal.signal(s, remember) for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread: no handlers to defer
        yield
        return
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if received:
        raise Terminated if received[0] == signal.SIGTERM else KeyboardInterrupt


def handles_sigterm(command: Callable[P, R]) -> Callable[P, R]:
    """A click command's callback run with SIGTERM as Ctrl-C."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with sigterm_as_interrupt():
            return command(*args, **kwargs)

    return run


def interrupt_status(e: KeyboardInterrupt, on_ctrl_c: int) -> int:
    """The exit status after an interrupt: 143 for SIGTERM, else the command's own."""
    return SIGTERM_STATUS if isinstance(e, Terminated) else on_ctrl_c
