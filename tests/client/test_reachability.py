"""The brokers-answering probe (`minikafka topics --describe`): ApiVersions to each broker,
in threads, the request made once beforehand."""

from __future__ import annotations

import socket
import threading

import pytest

from minikafka.client import reachability


def test_the_probe_is_made_in_the_callers_thread_before_the_threads_send_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """kio's modules, imported for the first time in several threads at once, can fail with
    importlib's _DeadlockError: the probe (and the import) comes first, in one thread."""
    made_in: list[str] = []
    real = reachability._api_versions_frame

    def recording() -> bytes:
        made_in.append(threading.current_thread().name)
        return real()

    monkeypatch.setattr(reachability, "_api_versions_frame", recording)
    with socket.socket() as listening, socket.socket() as closed:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        closed.bind(("127.0.0.1", 0))  # bound, not listening: refused
        addresses = {
            1: listening.getsockname(),
            2: closed.getsockname(),
            3: listening.getsockname(),
        }
        # The listening socket accepts (the backlog) but never answers: as a paused broker.
        assert reachability.unanswering(addresses, timeout_s=0.3) == {1, 2, 3}
    assert made_in == [threading.current_thread().name]
