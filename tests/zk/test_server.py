"""LocalZooKeeper: a real server process from Debian's package."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from minikafka.zk.client import ZkClient
from minikafka.zk.server import (
    DEFAULT_HEAP_MB,
    LocalZooKeeper,
    ZooKeeperNotInstalledError,
    ZooKeeperStartError,
    four_letter_word,
)


def port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_start_restart_stop_on_a_free_port(tmp_path: Path) -> None:
    zk = LocalZooKeeper(tmp_path / "zk", port=0, fsync=False)
    assert not zk.is_running() and zk.pid is None
    zk.start(timeout=60)
    try:
        port = zk.port
        assert port > 0 and zk.connect_string == f"127.0.0.1:{port}"
        assert zk.is_running() and zk.pid is not None
        assert zk.ruok()
        assert "Mode: standalone" in four_letter_word("127.0.0.1", port, "srvr")
        assert zk.pid_path.read_text().strip() == str(zk.pid)
        assert "clientPortAddress=127.0.0.1" in zk.config_path.read_text()
        with pytest.raises(ZooKeeperStartError, match="already running"):
            zk.start()

        with ZkClient(zk.connect_string + "/kept", session_timeout_ms=6000) as client:
            client.ensure_persistent_paths()
            client.create_topic("t", {0: [1]}, {})

        # A restart keeps the port (clients reconnect) and the data.
        zk.stop()
        assert not zk.is_running() and not port_open(port) and not zk.pid_path.exists()
        zk.start(timeout=60)
        assert zk.port == port
        with ZkClient(zk.connect_string + "/kept", session_timeout_ms=6000) as client:
            assert client.get_assignment("t") == {0: (1,)}

        # `cluster down` runs in another process: it stops the server by its pid file.
        other = LocalZooKeeper(tmp_path / "zk", port=port)
        assert other.is_running() and other.pid == zk.pid
        other.stop()
        assert not zk.is_running() and not port_open(port)
        assert zk.log_path.stat().st_size > 0  # the server logged through log4j
    finally:
        zk.kill()


def test_the_heap_is_zookeepers_default_or_zk_server_heap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1000 MB, as ZooKeeper's own scripts give it (256 MB could not hold 100,000
    partitions), or $ZK_SERVER_HEAP's MB, which reaches the server's JVM; a value that is
    not a number of MB is refused by name."""
    monkeypatch.delenv("ZK_SERVER_HEAP", raising=False)
    assert DEFAULT_HEAP_MB == 1000
    assert LocalZooKeeper(tmp_path / "default").heap_mb == 1000
    assert LocalZooKeeper(tmp_path / "given", heap_mb=64).heap_mb == 64
    for bad in ("abc", "0", "-5", "1g"):
        monkeypatch.setenv("ZK_SERVER_HEAP", bad)
        with pytest.raises(ValueError, match=f"ZK_SERVER_HEAP='{bad}'"):
            LocalZooKeeper(tmp_path / "bad")
    monkeypatch.setenv("ZK_SERVER_HEAP", "300")
    zk = LocalZooKeeper(tmp_path / "zk", port=0, fsync=False)
    zk.start(timeout=60)
    try:
        assert zk.pid is not None
        args = Path(f"/proc/{zk.pid}/cmdline").read_bytes().split(b"\0")
        assert [a for a in args if a.startswith(b"-Xmx")] == [b"-Xmx300m"]
    finally:
        zk.kill()


def test_kill(tmp_path: Path) -> None:
    zk = LocalZooKeeper(tmp_path / "zk", port=0, fsync=False)
    zk.start(timeout=60)
    pid = zk.pid
    zk.kill()
    assert not zk.is_running()
    assert pid is not None and not Path(f"/proc/{pid}").exists()
    zk.stop()  # already gone: a no-op


def test_missing_installation_names_the_package(tmp_path: Path) -> None:
    zk = LocalZooKeeper(tmp_path / "zk", port=0, install_dir=tmp_path / "nowhere")
    with pytest.raises(ZooKeeperNotInstalledError, match=r"apt-get install zookeeper") as e:
        zk.start()
    assert str(tmp_path / "nowhere" / "bin" / "zkServer.sh") in str(e.value)
    assert not zk.is_running()


def test_missing_java(tmp_path: Path) -> None:
    zk = LocalZooKeeper(tmp_path / "zk", port=0, java=str(tmp_path / "no-java"))
    with pytest.raises(ZooKeeperNotInstalledError, match="Java"):
        zk.start()


def test_early_exit_reports_the_log_tail(tmp_path: Path, zk_server: LocalZooKeeper) -> None:
    # A fixed port that is taken: the JVM exits and start() shows why.
    zk = LocalZooKeeper(tmp_path / "zk", port=zk_server.port, fsync=False)
    with pytest.raises(ZooKeeperStartError, match="Address already in use") as e:
        zk.start(timeout=60)
    assert "exited with code" in str(e.value)
    assert not zk.is_running()
    assert zk_server.ruok()  # the other server is unharmed
