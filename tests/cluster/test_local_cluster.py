"""LocalCluster and `minikafka cluster`: real ZooKeeper, real broker processes.

The first tests run the cluster tooling with a stand-in broker (`fake_broker.py`, the
process contract only), so a failure there is the tooling's; the rest run the real broker.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minikafka.cli.client_options import BOOTSTRAP_ENV, default_bootstrap
from minikafka.cluster import (
    BrokerStartError,
    ClusterError,
    LocalCluster,
    PortInUseError,
    ZooKeeperNotInstalledError,
    parse_overrides,
)
from minikafka.cluster.data_dir import DATA_DIR_ENV
from tests.cluster.conftest import SESSION_TIMEOUT_MS, TEST_OVERRIDES, ClusterFactory, wait_until
from tests.cluster.helpers import create_topic, ctrl_c_as_in_a_terminal

SESSION_TIMEOUT_S = SESSION_TIMEOUT_MS / 1000
FAKE_BROKER = [sys.executable, str(Path(__file__).with_name("fake_broker.py"))]


# --- without processes -------------------------------------------------------------------


def test_overrides_for_all_brokers_and_for_one() -> None:
    common, per_broker = parse_overrides(
        ["replica.lag.time.max.ms=10000", "2:broker.rack=b", " num.partitions = 3 "]
    )
    assert common == {"replica.lag.time.max.ms": "10000", "num.partitions": "3"}
    assert per_broker == {2: {"broker.rack": "b"}}
    for bad in ("no-equals", "=1", "x:broker.rack=a", "listeners=PLAINTEXT://:1", "1:log.dirs=/"):
        with pytest.raises(ValueError):
            parse_overrides([bad])


def test_cli_up_refuses_an_unknown_property_in_one_line_with_the_closest_name(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [
            *(sys.executable, "-m", "minikafka", "cluster", "up"),
            *("--data-dir", str(tmp_path / "d"), "--broker-config", "log.retention.hour=1"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    error = done.stderr.splitlines()[-1]
    assert error == (
        "Error: Invalid value for --broker-config: unknown broker property "
        "'log.retention.hour' (did you mean 'log.retention.hours'?): minikafka refuses "
        "properties it does not implement"
    )
    assert "num.partitions" not in done.stderr  # not every property it knows
    assert not (tmp_path / "d").exists()  # refused before anything starts
    # Several at once, one without a close name.
    with pytest.raises(ValueError) as refused:
        parse_overrides(["zzz=1", "num.partition=3"])
    assert str(refused.value) == (
        "unknown broker properties 'num.partition' (did you mean 'num.partitions'?), 'zzz': "
        "minikafka refuses properties it does not implement"
    )


def test_broker_properties_are_ours_then_the_overrides(tmp_path: Path) -> None:
    c = LocalCluster(
        tmp_path,
        2,
        base_port=19092,
        zookeeper_port=12181,
        admin_base_port=19644,
        overrides={"num.partitions": "3"},
        broker_overrides={2: {"broker.rack": "r2", "num.partitions": "5"}},
    )
    c._assign_ports()  # start() does this once ZooKeeper has its port
    assert c.broker_ports == {1: 19092, 2: 19093}
    assert c.bootstrap_servers == "127.0.0.1:19092,127.0.0.1:19093"
    assert c.broker_properties(2) == {
        "broker.id": "2",
        "listeners": "PLAINTEXT://127.0.0.1:19093",
        "admin.listeners": "http://127.0.0.1:19645",
        "log.dirs": str(tmp_path.resolve() / "broker-2" / "logs"),
        "zookeeper.connect": "127.0.0.1:12181",
        # Kafka's development defaults: groups form at once; the offsets topic fits 2 brokers.
        "group.initial.rebalance.delay.ms": "0",
        "offsets.topic.replication.factor": "2",
        "num.partitions": "5",
        "broker.rack": "r2",
    }
    assert c.admin_url(1) == "http://127.0.0.1:19644"
    for managed in ({"broker.id": "7"}, {"admin.listeners": "http://127.0.0.1:1"}):
        with pytest.raises(ValueError, match="cannot be overridden"):
            LocalCluster(tmp_path, overrides=managed)


def test_missing_zookeeper_names_the_install_command(tmp_path: Path) -> None:
    c = LocalCluster(tmp_path / "data", zookeeper_install_dir=tmp_path / "no-zookeeper")
    with pytest.raises(ZooKeeperNotInstalledError, match=r"apt-get install -y zookeeper"):
        c.start()
    assert not (tmp_path / "data").exists()


def test_a_pid_that_is_not_our_broker_is_never_signalled(tmp_path: Path) -> None:
    # A saved pid can be recycled by an unrelated process after a reboot or a crash.
    (tmp_path / "cluster.json").write_text(
        json.dumps(
            {
                "version": 1,
                "host": "127.0.0.1",
                "zookeeper": {"port": 1, "pid": os.getpid()},
                "brokers": [{"id": 1, "port": 2, "pid": os.getpid()}],
                "overrides": {},
                "broker_overrides": {},
                "broker_command": FAKE_BROKER,
            }
        )
    )
    (tmp_path / "zookeeper").mkdir()
    (tmp_path / "zookeeper" / "zookeeper.pid").write_text(f"{os.getpid()}\n")
    c = LocalCluster(tmp_path)
    assert c.broker_ids == [1] and c.broker_ports == {1: 2}
    assert not c.is_alive(1) and c.pid(1) is None
    assert not c.zookeeper.is_running()
    with pytest.raises(ClusterError, match="not running"):
        c.kill(1)
    c.stop()  # nothing to stop; must not signal us


# --- the cluster tooling with a stand-in broker ------------------------------------------


def test_stand_in_cluster_lifecycle_and_same_ports_on_the_same_data_dir(
    make_cluster: ClusterFactory,
) -> None:
    c = make_cluster(broker_command=FAKE_BROKER)
    regs = c.registrations()
    assert sorted(regs) == [1, 2, 3]
    controller, epoch = c.wait_for_controller(timeout=5)
    c.kill(controller)
    assert not c.is_alive(controller) and c.returncode(controller) == -9
    new_controller, new_epoch = c.wait_for_controller(
        timeout=SESSION_TIMEOUT_S + 10, exclude={controller}
    )
    assert new_controller != controller and new_epoch > epoch
    info = c.restart(controller, timeout=SESSION_TIMEOUT_S + 30)
    assert info.epoch > regs[controller].epoch and info.port == regs[controller].port
    c.pause(2)
    assert c.is_paused(2) and c.is_alive(2)
    c.resume(2)
    assert not c.is_paused(2)
    assert c.terminate(3) == 0
    assert c.status()["brokers"][2]["alive"] is False
    ports, zk_port = c.broker_ports, c.zookeeper.port
    admin_urls = [c.admin_url(b) for b in c.broker_ids]
    assert len(set(admin_urls)) == 3 and not any(u.endswith(":0") for u in admin_urls)
    c.stop()
    state = json.loads(c.state_path.read_text())
    assert [b["pid"] for b in state["brokers"]] == [None, None, None]
    assert state["zookeeper"]["pid"] is None

    again = LocalCluster(c.data_dir)  # as `cluster up` on the same dir would
    assert again.broker_ports == ports and again.zookeeper.port == zk_port
    assert [again.admin_url(b) for b in again.broker_ids] == admin_urls
    assert again.overrides == TEST_OVERRIDES and again.broker_command == FAKE_BROKER
    again.start(timeout=60)
    try:
        assert again.broker_ports == ports and again.zookeeper.port == zk_port
        with pytest.raises(ClusterError, match="already running"):
            LocalCluster(c.data_dir).start()
    finally:
        again.stop()


def test_a_broker_that_exits_fails_start_with_its_log_and_stops_the_rest(
    make_cluster: ClusterFactory,
) -> None:
    crash = [sys.executable, "-c", "import sys; print('no such luck', flush=True); sys.exit(3)"]
    c = make_cluster(brokers=2, start=False, broker_command=crash)
    with pytest.raises(BrokerStartError, match=r"(?s)exited with code 3.*no such luck"):
        c.start(timeout=30)
    assert not c.zookeeper.is_running()
    assert not any(c.is_alive(bid) for bid in c.broker_ids)


# --- the real broker ---------------------------------------------------------------------


def test_every_broker_registers_with_a_distinct_epoch_and_a_controller_is_elected(
    cluster: LocalCluster,
) -> None:
    regs = cluster.registrations()
    assert sorted(regs) == [1, 2, 3]
    assert len({r.epoch for r in regs.values()}) == 3
    assert {bid: r.port for bid, r in regs.items()} == cluster.broker_ports
    controller, epoch = cluster.wait_for_controller(timeout=5)
    assert controller in regs and epoch >= 1
    status = cluster.status()
    assert status["zookeeper"]["alive"]
    assert status["controller"] == {"id": controller, "epoch": epoch}
    assert [b["controller"] for b in status["brokers"]].count(True) == 1
    for b in status["brokers"]:
        assert b["alive"] and b["registered"] and not b["paused"]
        assert b["epoch"] == regs[b["id"]].epoch and b["pid"] == cluster.pid(b["id"])
        assert cluster.config_path(b["id"]).is_file() and cluster.log_dir(b["id"]).is_dir()
    assert cluster.bootstrap_servers == ",".join(
        f"127.0.0.1:{p}" for p in cluster.broker_ports.values()
    )


def test_kill_9_of_the_controller_elects_another_with_a_higher_epoch(
    cluster: LocalCluster,
) -> None:
    controller, epoch = cluster.wait_for_controller(timeout=5)
    started = time.monotonic()
    cluster.kill(controller)
    # The dead controller's /controller znode lives until its session expires.
    new_controller, new_epoch = cluster.wait_for_controller(
        timeout=SESSION_TIMEOUT_S + 10, exclude={controller}
    )
    elapsed = time.monotonic() - started
    assert new_controller != controller and new_epoch > epoch
    assert elapsed < SESSION_TIMEOUT_S + 5, f"failover took {elapsed:.1f}s"
    cluster.wait_for_unregistered([controller], timeout=SESSION_TIMEOUT_S + 5)
    assert sorted(cluster.registrations()) == sorted(set(cluster.broker_ids) - {controller})


def test_sigterm_is_a_clean_exit_that_gives_up_the_controller_at_once(
    cluster: LocalCluster,
) -> None:
    controller, epoch = cluster.wait_for_controller(timeout=5)
    follower = next(bid for bid in cluster.broker_ids if bid != controller)
    assert cluster.terminate(follower, timeout=60) == 0
    assert follower not in cluster.registrations()  # the session was closed, not abandoned
    assert cluster.terminate(controller, timeout=60) == 0
    started = time.monotonic()
    new_controller, new_epoch = cluster.wait_for_controller(
        timeout=SESSION_TIMEOUT_S, exclude={controller}
    )
    # Well within the session timeout: the clean close deleted /controller.
    assert time.monotonic() - started < SESSION_TIMEOUT_S / 2
    assert new_epoch > epoch and new_controller not in (controller, follower)


def test_restart_of_a_killed_broker_registers_with_a_larger_broker_epoch(
    cluster: LocalCluster,
) -> None:
    controller, _ = cluster.wait_for_controller(timeout=5)
    victim = next(bid for bid in cluster.broker_ids if bid != controller)
    before = cluster.registrations()[victim]
    old_pid = cluster.pid(victim)
    cluster.kill(victim)
    assert not cluster.is_alive(victim)
    info = cluster.restart(victim, timeout=SESSION_TIMEOUT_S + 30)
    assert info.epoch > before.epoch
    assert info.port == before.port == cluster.broker_ports[victim]
    assert cluster.pid(victim) not in (None, old_pid)
    assert cluster.wait_for_controller(timeout=5)[0] == controller


def test_pause_and_resume(cluster: LocalCluster) -> None:
    controller, epoch = cluster.wait_for_controller(timeout=5)
    victim = next(bid for bid in cluster.broker_ids if bid != controller)
    before = cluster.registrations()[victim]
    cluster.pause(victim)
    assert cluster.is_paused(victim) and cluster.is_alive(victim)
    assert cluster.status()["brokers"][victim - 1]["paused"] is True
    cluster.resume(victim)
    assert not cluster.is_paused(victim)
    # A pause shorter than the session timeout changes nothing in ZooKeeper.
    assert cluster.registrations()[victim].epoch == before.epoch
    assert cluster.controller() == (controller, epoch)


def test_paused_past_the_session_timeout_the_broker_registers_again_after_resume(
    cluster: LocalCluster,
) -> None:
    controller, _ = cluster.wait_for_controller(timeout=5)
    victim = next(bid for bid in cluster.broker_ids if bid != controller)
    before = cluster.registrations()[victim]
    cluster.pause(victim)
    try:
        cluster.wait_for_unregistered([victim], timeout=SESSION_TIMEOUT_S + 10)
    finally:
        cluster.resume(victim)
    # Kafka's broker re-registers on its new session (a new czxid: a new broker epoch).
    info = cluster.wait_for_registered([victim], 30, newer_than={victim: before.epoch})[victim]
    assert info.epoch > before.epoch and cluster.pid(victim) is not None


# --- the command line --------------------------------------------------------------------


def run_cli(*args: object, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "minikafka", "cluster", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def cli_ok(*args: object) -> str:
    done = run_cli(*args)
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def cli_status(data_dir: Path) -> dict[str, Any]:
    status: dict[str, Any] = json.loads(cli_ok("status", "--json", "--data-dir", data_dir))
    return status


def test_cli_up_detach_status_faults_down_and_up_again_on_the_same_ports(tmp_path: Path) -> None:
    data_dir = tmp_path / "dev"
    overrides = [f"--broker-config={k}={v}" for k, v in TEST_OVERRIDES.items()]
    up = ["up", "--detach", "--data-dir", data_dir, "--port", "0", "--zookeeper-port", "0"]
    up += ["--admin-port", "0"]
    try:
        out = cli_ok(*up, "--brokers", "3", *overrides)
        status = cli_status(data_dir)
        assert out.count(status["bootstrap_servers"]) >= 1
        assert status["zookeeper"]["alive"]
        brokers = status["brokers"]
        assert [b["id"] for b in brokers] == [1, 2, 3]
        assert all(b["alive"] and b["registered"] for b in brokers)
        assert [b["controller"] for b in brokers].count(True) == 1
        # `up` has exited; the brokers run on in their own sessions.
        assert all(os.getsid(b["pid"]) == b["pid"] for b in brokers)
        ports = {b["id"]: b["port"] for b in brokers}
        zk_port = status["zookeeper"]["port"]
        # Each broker serves its admin endpoint where status says; the table lists them.
        admin_urls = [b["admin_url"] for b in brokers]
        text = cli_ok("status", "--data-dir", data_dir)
        assert all(url in text for url in admin_urls)
        for url in admin_urls:
            with urllib.request.urlopen(url + "/health", timeout=10) as resp:
                assert resp.status == 200

        victim = next(b["id"] for b in brokers if not b["controller"])
        cli_ok("kill", "--broker", victim, "--data-dir", data_dir)
        assert not cli_status(data_dir)["brokers"][victim - 1]["alive"]
        cli_ok("restart", "--broker", victim, "--data-dir", data_dir)
        again = cli_status(data_dir)["brokers"][victim - 1]
        assert again["alive"] and again["registered"] and again["port"] == ports[victim]
        cli_ok("pause", "--broker", victim, "--data-dir", data_dir)
        assert cli_status(data_dir)["brokers"][victim - 1]["paused"]
        cli_ok("resume", "--broker", victim, "--data-dir", data_dir)
        cli_ok("stop-broker", "--broker", victim, "--data-dir", data_dir)
        assert not cli_status(data_dir)["brokers"][victim - 1]["alive"]

        cli_ok("down", "--data-dir", data_dir)
        status = cli_status(data_dir)
        assert not status["zookeeper"]["alive"]
        assert not any(b["alive"] for b in status["brokers"])
        assert status["controller"] is None

        # Same data dir again, no overrides on the command line: ports and overrides kept.
        cli_ok(*up)
        status = cli_status(data_dir)
        assert {b["id"]: b["port"] for b in status["brokers"]} == ports
        assert status["zookeeper"]["port"] == zk_port
        assert all(b["alive"] and b["registered"] for b in status["brokers"])
        saved = json.loads((data_dir / "cluster.json").read_text())
        assert saved["overrides"] == TEST_OVERRIDES
        cli_ok("down", "--data-dir", data_dir)
    finally:
        if (data_dir / "cluster.json").exists():
            LocalCluster(data_dir).kill_all()


def test_cli_without_a_cluster_says_where_it_looked_and_how_to_start_one(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != DATA_DIR_ENV}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    # An earlier version's cluster in ./minikafka-data is pointed at.
    (tmp_path / "minikafka-data").mkdir()
    (tmp_path / "minikafka-data" / "cluster.json").write_text("{}")
    done = subprocess.run(
        [sys.executable, "-m", "minikafka", "cluster", "status"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    # The per-user default data dir, as an absolute path.
    assert f"no cluster in {tmp_path / 'xdg' / 'minikafka' / 'cluster'}" in done.stderr
    assert "there is one in ./minikafka-data" in done.stderr
    assert "--data-dir DIR" in done.stderr and "`minikafka cluster up`" in done.stderr


def test_cli_logs_prints_the_end_of_a_brokers_log_and_where_it_is(
    make_cluster: ClusterFactory,
) -> None:
    c = make_cluster(broker_command=FAKE_BROKER)
    path = c.broker_log_path(2)
    done = run_cli("logs", "--data-dir", c.data_dir, "--broker", "2", "-n", "3")
    assert done.returncode == 0, done.stderr
    assert f"==> {path} <==" in done.stderr
    assert done.stdout.splitlines() == path.read_text().splitlines()[-3:]
    zk = run_cli("logs", "--data-dir", c.data_dir, "--zookeeper", "-n", "1")
    assert zk.returncode == 0 and str(c.zookeeper.log_path) in zk.stderr
    for bad in (["--broker", "9"], [], ["--broker", "1", "--zookeeper"]):
        refused = run_cli("logs", "--data-dir", c.data_dir, *bad)
        assert refused.returncode == 2, bad


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_cli_up_in_the_foreground_stops_everything_on_ctrl_c_or_sigterm(
    tmp_path: Path, sig: signal.Signals
) -> None:
    data_dir, out_path = tmp_path / "dev", tmp_path / "up.out"
    overrides = [f"--broker-config={k}={v}" for k, v in TEST_OVERRIDES.items()]
    cmd = [sys.executable, "-m", "minikafka", "cluster", "up", "--data-dir", str(data_dir)]
    cmd += ["--port", "0", "--zookeeper-port", "0", "--admin-port", "0", *overrides]
    with open(out_path, "w") as out:
        # Its own process group: a Ctrl-C in a terminal goes to the whole foreground group.
        # PYTHONFAULTHANDLER: a SIGABRT (below, if it hangs) prints every thread's stack.
        up = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},
            preexec_fn=ctrl_c_as_in_a_terminal,
        )
    try:
        wait_until(
            lambda: "Press Ctrl-C" in out_path.read_text() or up.poll() is not None,
            90,
            "the cluster to come up",
        )
        assert up.poll() is None, out_path.read_text()
        pids = [b["pid"] for b in cli_status(data_dir)["brokers"]]
        if sig == signal.SIGINT:
            os.killpg(up.pid, sig)
        else:
            os.kill(up.pid, sig)
        try:
            code = up.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.kill(up.pid, signal.SIGABRT)
            up.wait(timeout=30)
            lc = LocalCluster(data_dir)
            logs = "".join(
                f"\n--- broker {bid}'s log, last 4 KB:\n"
                + lc.broker_log_path(bid).read_text()[-4000:]
                for bid in lc.broker_ids
            )
            pytest.fail(f"still stopping after 120 s:\n{out_path.read_text()}{logs}")
        assert code == 0, out_path.read_text()
        assert "cluster stopped" in out_path.read_text()
        status = cli_status(data_dir)
        assert not status["zookeeper"]["alive"]
        assert not any(b["alive"] for b in status["brokers"])
        assert all(not Path(f"/proc/{pid}").exists() for pid in pids)
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
        if (data_dir / "cluster.json").exists():
            LocalCluster(data_dir).kill_all()


# --- ports taken before the start ----------------------------------------------------------


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port some other process listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.mark.parametrize(
    ("which", "what", "flag"),
    [
        ("zookeeper_port", "ZooKeeper's port", "--zookeeper-port"),
        ("base_port", "broker 1's port", "--port"),
        ("admin_base_port", "broker 1's admin port", "--admin-port"),
    ],
)
def test_a_taken_port_is_named_with_its_flag_before_anything_starts(
    tmp_path: Path, taken_port: int, which: str, what: str, flag: str
) -> None:
    ports: dict[str, Any] = {"base_port": 0, "zookeeper_port": 0, "admin_base_port": 0}
    ports[which] = taken_port
    lc = LocalCluster(tmp_path / "c", 1, **ports)
    with pytest.raises(PortInUseError) as e:
        lc.start()
    message = str(e.value)
    assert f"{what} {taken_port} (127.0.0.1) is in use by another process" in message
    assert f"`minikafka cluster up {flag} PORT`" in message
    # Nothing was started or written: no ZooKeeper, no cluster.json left behind.
    assert not lc.zookeeper.is_running()
    assert not (tmp_path / "c").exists()


def test_cli_up_on_a_taken_port_says_which_and_leaves_nothing(
    tmp_path: Path, taken_port: int
) -> None:
    data = tmp_path / "c"
    done = run_cli(
        *("up", "--data-dir", data, "--brokers", "1", "--detach"),
        *("--zookeeper-port", taken_port, "--port", "0", "--admin-port", "0"),
        timeout=60,
    )
    assert done.returncode == 1
    assert f"ZooKeeper's port {taken_port}" in done.stderr
    assert "--zookeeper-port" in done.stderr
    assert "Exception" not in done.stderr + done.stdout  # no Java (or Python) trace
    assert not data.exists()


# --- stopping the whole cluster ------------------------------------------------------------------


async def test_a_whole_cluster_stop_does_not_retry_where_no_broker_can_take_over(
    make_cluster: ClusterFactory,
) -> None:
    """The last broker's controlled shutdown cannot move its leaders anywhere: it says so
    and closes at once instead of retrying (3 x 5 s by default), and every broker still
    closes cleanly. `progress` hears each phase."""
    cluster = make_cluster(3, {"controlled.shutdown.retry.backoff.ms": "5000"})
    await create_topic(cluster, "t", 6, 3)
    controller = cluster.controller()
    assert controller is not None
    phases: list[str] = []
    cluster.stop(progress=phases.append)

    last = cluster.broker_log_path(controller[0]).read_text()
    assert "no other live broker can lead the 6 partitions left; not retrying" in last
    for bid in cluster.broker_ids:
        log = cluster.broker_log_path(bid).read_text()
        assert "controlled shutdown attempt 2" not in log, f"broker {bid} retried"
        assert (cluster.log_dir(bid) / ".kafka_cleanshutdown").exists(), f"broker {bid}"
    assert len(phases) == 3, phases
    assert "(the controller)" in phases[1] and f"broker {controller[0]}" in phases[1]
    assert phases[2] == "stopping ZooKeeper…"


def test_an_exit_code_is_only_reported_for_the_process_that_had_it(
    make_cluster: ClusterFactory,
) -> None:
    """What the foreground monitor asks: broker 1 killed (code -9), then started and stopped
    cleanly by another command. The monitor must not pin the old -9 on the new process."""
    c = make_cluster(broker_command=FAKE_BROKER)
    old = c.pid(1)
    c.kill(1)
    assert old is not None and c.returncode(1, old) == -9
    other = LocalCluster(c.data_dir)  # another `minikafka cluster` command
    other.start_broker(1, timeout=SESSION_TIMEOUT_S + 30)
    new = c.pid(1)
    assert new is not None and new != old
    assert other.terminate(1) == 0
    assert c.pid(1) is None
    assert c.returncode(1, new) is None  # not ours: unknown, not -9


# --- the CLI's default bootstrap ---------------------------------------------------------------


def test_default_bootstrap_without_a_local_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "no-cluster"))
    monkeypatch.delenv(BOOTSTRAP_ENV, raising=False)
    assert default_bootstrap() == "localhost:9092"
    monkeypatch.setenv(BOOTSTRAP_ENV, "kafka1:19092,kafka2:19092")
    assert default_bootstrap() == "kafka1:19092,kafka2:19092"


def test_cli_commands_default_to_the_local_clusters_brokers_and_survive_broker_1_dead(
    tmp_path: Path,
) -> None:
    """A running cluster in the per-user default data dir is what a client command talks
    to by default, from any directory, all of its brokers: with broker 1 down the next
    command still works; `cluster status` finds it too."""
    lc = LocalCluster(
        tmp_path / "xdg" / "minikafka" / "cluster",
        3,
        base_port=0,
        zookeeper_port=0,
        admin_base_port=0,
        overrides=TEST_OVERRIDES,
        zookeeper_fsync=False,
    )
    lc.start()
    try:
        lc.kill(1)
        env = {k: v for k, v in os.environ.items() if k not in (BOOTSTRAP_ENV, DATA_DIR_ENV)}
        env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        for args in (
            ("cluster", "status"),
            ("topics", "--create", "--topic", "t", "--replication-factor", "2"),
            ("topics", "--list"),
        ):
            done = subprocess.run(
                [sys.executable, "-m", "minikafka", *args],
                cwd=elsewhere,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["t"]
    finally:
        lc.stop()
