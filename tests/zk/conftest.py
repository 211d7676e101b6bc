"""One real ZooKeeper server per test session; each test gets its own chroot."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from minikafka.zk.client import ZkClient
from minikafka.zk.server import LocalZooKeeper

ZkClientFactory = Callable[..., ZkClient]


@pytest.fixture(scope="session")
def zk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalZooKeeper]:
    # fsync off: these tests are about ZooKeeper's semantics, not its durability.
    server = LocalZooKeeper(tmp_path_factory.mktemp("zookeeper"), port=0, fsync=False)
    server.start(timeout=60)
    yield server
    server.stop()


@pytest.fixture
def zk_connect(zk_server: LocalZooKeeper) -> str:
    """`zookeeper.connect` with a fresh chroot, so tests never see each other's znodes."""
    return f"{zk_server.connect_string}/test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def make_zk_client(zk_connect: str) -> Iterator[ZkClientFactory]:
    """Started clients on this test's chroot (persistent paths created), closed at the end."""
    clients: list[ZkClient] = []

    def make(connect: str | None = None, session_timeout_ms: int = 6000) -> ZkClient:
        client = ZkClient(connect or zk_connect, session_timeout_ms=session_timeout_ms)
        client.start()
        clients.append(client)
        client.ensure_persistent_paths()
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def zk_client(make_zk_client: ZkClientFactory) -> ZkClient:
    return make_zk_client()


def wait_until(condition: Callable[[], bool], timeout: float = 10.0, what: str = "") -> None:
    """Poll `condition` until it holds or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what or condition}")
        time.sleep(0.02)


def wait_event(event: threading.Event, timeout: float = 10.0, what: str = "event") -> None:
    if not event.wait(timeout):
        pytest.fail(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture
def zk_base_dir(tmp_path: Path) -> Path:
    return tmp_path / "zk"
