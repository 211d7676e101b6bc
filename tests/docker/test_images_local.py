"""Run what the images run, on this machine, without a Docker engine (the real containers
are tests/docker/test_compose_cluster.py's).

ZooKeeper starts with the zookeeper image's CMD and is probed with docker-compose.yml's
healthcheck; three brokers start through docker/broker-entrypoint.sh with the compose
file's environment (every port moved to a free one: the INTERNAL and EXTERNAL listeners and
the admin endpoint; advertised names to 127.0.0.1, data to a temp dir) and are probed with
docker/broker-healthcheck.py; then a topic with three replicas takes writes with acks=all
through the EXTERNAL ports and reads them back, and SIGTERM (what `docker stop` sends) stops
every broker cleanly through the entrypoint's exec.

By default the `minikafka` of this venv runs. To try the brokers on other libraries, e.g.
Debian bookworm's packages unpacked with `dpkg -x`, point IMAGE_TEST_PYTHON at an
interpreter, or at a wrapper script that sets PYTHONPATH (and LD_LIBRARY_PATH) for it; the
client commands stay on this venv's, as a client on the host would.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from minikafka.zk.server import pick_free_port
from tests.docker.test_compose_static import (
    BROKERS,
    ROOT,
    ZOO_CFG,
    ZOOKEEPER_DOCKERFILE,
    dockerfile_instructions,
    environment,
    healthcheck_command,
    services,
)

PYTHON = os.environ.get("IMAGE_TEST_PYTHON", sys.executable)
HEALTHCHECK = ROOT / "docker" / "broker-healthcheck.py"
ENTRYPOINT = ROOT / "docker" / "broker-entrypoint.sh"

pytestmark = pytest.mark.skipif(
    not Path("/usr/share/java/zookeeper.jar").is_file() or shutil.which("java") is None,
    reason="needs Debian's zookeeper package",
)


def wait_for(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.3)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


@pytest.fixture
def zookeeper(tmp_path: Path) -> Iterator[tuple[int, list[str]]]:
    """ZooKeeper run with the image's CMD and config (dataDir and port moved); yields its
    port and the compose healthcheck's command for that port."""
    port = pick_free_port()
    conf = tmp_path / "zk-conf"
    conf.mkdir()
    cfg = ZOO_CFG.read_text()
    cfg = cfg.replace("dataDir=/var/lib/zookeeper", f"dataDir={tmp_path / 'zk-data'}")
    cfg = cfg.replace("clientPort=2181", f"clientPort={port}\nclientPortAddress=127.0.0.1")
    (conf / "zoo.cfg").write_text(cfg)
    shutil.copy(ZOO_CFG.parent / "log4j.properties", conf)
    cmd = json.loads(
        next(r for k, r in dockerfile_instructions(ZOOKEEPER_DOCKERFILE) if k == "CMD")
    )
    cmd = [arg.replace("/etc/zookeeper/minikafka", str(conf)) for arg in cmd]
    check = healthcheck_command(services()["zookeeper"])[1:]
    check = [arg.replace("/127.0.0.1/2181", f"/127.0.0.1/{port}") for arg in check]
    assert subprocess.run(check, capture_output=True).returncode != 0  # nothing there yet
    with open(tmp_path / "zookeeper.out", "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(
            "the ZooKeeper healthcheck",
            lambda: proc.poll() is None and zookeeper_healthy(check),
        )
        assert "ZooKeeper" in (tmp_path / "zookeeper.out").read_text()  # logs to stdout
        yield port, check
    finally:
        stop(proc)


def zookeeper_healthy(check: list[str]) -> bool:
    """The compose healthcheck, with its 5 s timeout: a ZooKeeper still starting may accept
    the connection and not answer yet (docker counts that as a failed check too)."""
    try:
        return subprocess.run(check, timeout=5).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def minikafka_bin(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    wrapper = bin_dir / "minikafka"
    wrapper.write_text(f'#!/bin/sh\nexec {PYTHON} -m minikafka "$@"\n')
    wrapper.chmod(0o755)
    return bin_dir


def run_cli(*args: str, stdin: str = "") -> str:
    # Client commands run on the host, with this interpreter (and its confluent-kafka), even
    # when IMAGE_TEST_PYTHON runs the brokers: the image has no Kafka client.
    result = subprocess.run(
        [sys.executable, "-m", "minikafka", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, f"minikafka {' '.join(args)}: {result.stderr}"
    return result.stdout


def healthcheck(props: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, str(HEALTHCHECK), str(props)], capture_output=True, text=True, timeout=30
    )


def healthy(proc: subprocess.Popen[bytes], props: Path) -> bool:
    return proc.poll() is None and healthcheck(props).returncode == 0


def test_brokers_from_the_entrypoint_become_healthy_and_replicate(
    zookeeper: tuple[int, list[str]], tmp_path: Path
) -> None:
    zk_port, _ = zookeeper
    path = f"{minikafka_bin(tmp_path)}:{os.environ['PATH']}"
    # Every MINIKAFKA_* variable would become a broker property.
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("MINIKAFKA_")}
    brokers: dict[str, tuple[subprocess.Popen[bytes], Path, int]] = {}
    try:
        for name in BROKERS:
            internal, port, admin = pick_free_port(), pick_free_port(), pick_free_port()
            env = environment(services()[name])
            # The compose file's listener names and settings, on ports of this test's own.
            assert env["LISTENERS"] == "INTERNAL://0.0.0.0:19092,EXTERNAL://0.0.0.0:9092"
            env.update(
                ZOOKEEPER_CONNECT=f"127.0.0.1:{zk_port}",
                LISTENERS=f"INTERNAL://0.0.0.0:{internal},EXTERNAL://0.0.0.0:{port}",
                ADVERTISED_LISTENERS=(
                    f"INTERNAL://127.0.0.1:{internal},EXTERNAL://127.0.0.1:{port}"
                ),
                MINIKAFKA_ADMIN_LISTENERS=f"http://127.0.0.1:{admin}",
                LOG_DIRS=str(tmp_path / name / "data"),
                SERVER_PROPERTIES=str(tmp_path / name / "server.properties"),
            )
            with open(tmp_path / f"{name}.log", "wb") as log:
                proc = subprocess.Popen(
                    ["bash", str(ENTRYPOINT)],
                    env={**inherited, **env, "PATH": path},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            brokers[name] = (proc, tmp_path / name / "server.properties", port)

        for name, (proc, props, _) in brokers.items():
            wait_for(
                f"{name}'s healthcheck",
                functools.partial(healthy, proc, props),
            )
            assert f"broker {name[-1]} is live on 127.0.0.1:" in healthcheck(props).stdout

        bootstrap = ",".join(f"127.0.0.1:{port}" for _, _, port in brokers.values())
        run_cli("topics", "--bootstrap-server", bootstrap, "--create", "--topic", "t")
        description = run_cli("topics", "--bootstrap-server", bootstrap, "--describe")
        assert "ReplicationFactor: 3" in description  # MINIKAFKA_DEFAULT_REPLICATION_FACTOR
        lines = [str(i) for i in range(200)]
        run_cli(
            *("produce", "--bootstrap-server", bootstrap, "--topic", "t", "--acks", "all"),
            stdin="\n".join(lines) + "\n",
        )
        out = run_cli(
            *("consume", "--bootstrap-server", bootstrap, "--topic", "t"),
            *("--from-beginning", "--max-messages", "200"),
        )
        assert sorted(out.split(), key=int) == lines
        # A rich table: every replica of t-0 with its role (the ISR may still be growing).
        table = run_cli("replicas", "--bootstrap-server", bootstrap, "--describe", "--topic", "t")
        assert table.count("leader") == 1 and table.count("follower") == 2, table

        # docker stop: SIGTERM to the process the entrypoint exec'd, a controlled shutdown.
        for name, (proc, props, _) in brokers.items():
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(90) == 0, (tmp_path / f"{name}.log").read_text()[-3000:]
            assert healthcheck(props).returncode == 1
    finally:
        for proc, _, _ in brokers.values():
            stop(proc)
