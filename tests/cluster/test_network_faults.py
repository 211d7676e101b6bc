"""Network faults on a real cluster: every broker in its own network namespace (root only).

`partition_from_brokers` (the broker keeps ZooKeeper and its clients), `isolate` (it keeps
nothing), `heal`, `expire_session` and ZooKeeper restarts, through the Python API and the
`minikafka cluster` command. These tests need root and fail, not skip, without it: CI
runs as root, and a fault test that silently never runs proves nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from minikafka.cluster import ClusterError, LocalCluster, PortInUseError, netns
from minikafka.common import TopicPartition
from tests.cluster.conftest import (
    SESSION_TIMEOUT_MS,
    TEST_OVERRIDES,
    ClusterFactory,
    wait_until,
    wait_until_async,
)
from tests.cluster.helpers import (
    create_topic,
    deliver,
    partition_states,
    producing,
    replica_records,
    send_values,
)
from tests.readme import block, commands

pytestmark = pytest.mark.timeout(120)

SESSION_TIMEOUT_S = SESSION_TIMEOUT_MS / 1000
FAULT_OVERRIDES = {
    "replica.lag.time.max.ms": "2000",
    "isr.change.propagation.check.interval.ms": "200",
    "isr.change.propagation.blackout.ms": "500",
    "isr.change.propagation.max.delay.ms": "2000",
    "auto.leader.rebalance.enable": "false",  # only the faults move leaders
}
TOPIC = "t"
TP = TopicPartition(TOPIC, 0)
# The README's chaos runs (120 s or chaos's default, 60 s) are run for this long each.
README_CHAOS_BOUND_S = 20


@pytest.fixture
def as_root() -> None:
    """Fail (not skip) without root: namespaces, veth links and tc filters need it."""
    assert os.geteuid() == 0, "network fault tests need root (network namespaces, veth, tc)"


def bootstrap(cluster: LocalCluster, exclude: tuple[int, ...] = ()) -> str:
    addrs = (cluster.broker_address(b) for b in cluster.broker_ids if b not in exclude)
    return ",".join(f"{host}:{port}" for host, port in addrs)


def accepts(cluster: LocalCluster, broker_id: int, timeout: float = 1.0) -> bool:
    """A TCP connection from the root namespace (where clients are) to the broker succeeds."""
    try:
        socket.create_connection(cluster.broker_address(broker_id), timeout=timeout).close()
        return True
    except OSError:
        return False


def leftovers(cluster: LocalCluster) -> list[str]:
    """Namespaces and links of this cluster that still exist."""
    net = cluster.status()["network"]
    names = [n for n in netns.netns_names() if n.startswith(f"mk-{net['id']}-")]
    return names + [n for n in netns.link_names() if n.startswith(f"mk{net['id']}")]


class Traffic:
    """acks=1 records to the topic, one after another (in a thread of its own), until
    stopped: what makes a cut-off follower's LEO differ from the leader's (Kafka only
    expels a follower that is behind). A send that fails fails the test at exit."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.servers = bootstrap(cluster)
        self.acked = 0
        self._stop = threading.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Traffic:
        self._task = asyncio.create_task(asyncio.to_thread(self._run))
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._task is not None
        await self._task

    def _run(self) -> None:
        with producing(self.servers, {"acks": 1, "request.timeout.ms": 5000}) as producer:
            i = 0
            while not self._stop.is_set():
                deliver(producer, TOPIC, [f"v{i}".encode()])
                self.acked += 1
                i += 1
                self._stop.wait(0.02)  # a steady trickle, not a benchmark


async def test_partition_from_brokers_drops_a_follower_from_the_isr_but_not_from_zookeeper(
    make_cluster: ClusterFactory, as_root: None
) -> None:
    cluster = make_cluster(3, FAULT_OVERRIDES, network="netns")
    controller, _ = cluster.wait_for_controller(timeout=5)
    follower = next(b for b in cluster.broker_ids if b != controller)
    leader = next(b for b in cluster.broker_ids if b != follower)
    others = [b for b in cluster.broker_ids if b not in (leader, follower)]
    await create_topic(cluster, TOPIC, -1, -1, assignment={0: [leader, follower, *others]})
    await wait_until_async(
        lambda: len(partition_states(cluster, TOPIC, 1)[0].isr) == 3, 10, "a full ISR"
    )
    before = cluster.registrations()[follower]

    async with Traffic(cluster) as traffic:
        cut_at = time.monotonic()
        cluster.partition_from_brokers(follower)
        assert cluster.network_faults() == {follower: {"cut": "brokers"}}
        await wait_until_async(
            lambda: follower not in partition_states(cluster, TOPIC, 1)[0].isr,
            15,
            "the leader to drop the cut-off follower from the ISR",
        )
        shrunk_after = time.monotonic() - cut_at
        # Still in ZooKeeper with the same session, still reachable by clients: only the
        # broker-to-broker links are cut.
        reg = cluster.registrations().get(follower)
        assert reg is not None and reg.epoch == before.epoch
        assert accepts(cluster, follower)
        assert partition_states(cluster, TOPIC, 1)[0].leader == leader

        cluster.heal(follower)
        healed_at = time.monotonic()
        assert cluster.network_faults() == {}
        await wait_until_async(
            lambda: follower in partition_states(cluster, TOPIC, 1)[0].isr,
            20,
            "the healed follower to rejoin the ISR",
        )
        rejoined_after = time.monotonic() - healed_at
    assert traffic.acked > 0
    assert cluster.registrations()[follower].epoch == before.epoch
    print(f"ISR shrink {shrunk_after:.1f}s after the cut, rejoin {rejoined_after:.1f}s after heal")


# A client on the isolated broker's side of the partition: acks=all to the old leader,
# with timeouts short enough to end while the test waits for the failover.
ZOMBIE_PRODUCER = """
import json, sys
from confluent_kafka import Producer

bootstrap, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
acked, errors = [], []

def report(err, msg):
    if err is None:
        acked.append(msg.offset())
    else:
        errors.append(f"{err.name()}: {err.str()}")

producer = Producer({
    "bootstrap.servers": bootstrap, "socket.nagle.disable": True, "acks": "all",
    "retries": 0, "request.timeout.ms": 3000, "message.timeout.ms": 4000,
})
for i in range(n):
    producer.produce(topic, f"zombie-{i}".encode(), on_delivery=report)
unreported = producer.flush(20)
print(json.dumps({"acked": acked, "errors": errors, "unreported": unreported}))
"""


async def test_an_isolated_leader_is_replaced_acks_nothing_and_returns_as_a_follower(
    make_cluster: ClusterFactory, as_root: None
) -> None:
    cluster = make_cluster(3, FAULT_OVERRIDES, network="netns")
    controller, _ = cluster.wait_for_controller(timeout=5)
    leader = next(b for b in cluster.broker_ids if b != controller)
    followers = [b for b in cluster.broker_ids if b != leader]
    await create_topic(
        cluster,
        TOPIC,
        -1,
        -1,
        configs={"min.insync.replicas": "2"},
        assignment={0: [leader, *followers]},
    )
    first = [f"a{i}".encode() for i in range(5)]
    acked = await asyncio.to_thread(send_values, bootstrap(cluster), TOPIC, first)
    assert acked == [(0, o) for o in range(5)]
    before = cluster.registrations()[leader]
    epoch_before = partition_states(cluster, TOPIC, 1)[0].leader_epoch

    isolated_at = time.monotonic()
    cluster.isolate(leader)
    assert not accepts(cluster, leader), "clients in the root namespace still reach it"
    # The old leader still believes it leads: a client on its side gets nothing acked.
    host, port = cluster.broker_address(leader)
    client = [sys.executable, "-c", ZOMBIE_PRODUCER, f"{host}:{port}", TOPIC, "3"]
    zombie = subprocess.Popen(
        cluster.netns_command(leader, client),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Its ZooKeeper session expires; the controller elects another ISR member.
        cluster.wait_for_unregistered([leader], timeout=SESSION_TIMEOUT_S + 10)
        await wait_until_async(
            lambda: partition_states(cluster, TOPIC, 1)[0].leader in followers,
            10,
            "a new leader among the followers",
        )
        failover_after = time.monotonic() - isolated_at
        st = partition_states(cluster, TOPIC, 1)[0]
        assert st.leader_epoch > epoch_before and leader not in st.isr
        out, err = zombie.communicate(timeout=30)
    finally:
        if zombie.poll() is None:
            zombie.kill()
            zombie.wait()
    result = json.loads(out.strip().splitlines()[-1]) if out.strip() else None
    assert result is not None, f"the zombie producer printed nothing; stderr:\n{err}"
    assert result["acked"] == [] and result["errors"] and result["unreported"] == 0, result
    # The isolated leader appended them (it believed it led) but could not commit them.
    on_old_leader = replica_records(cluster.log_dir(leader), TP, 1 << 62)
    assert any(v and v.startswith(b"zombie-") for v in on_old_leader.values())

    # The majority side takes acks=all writes (ISR of 2 = min.insync.replicas).
    majority = bootstrap(cluster, exclude=(leader,))
    await asyncio.to_thread(send_values, majority, TOPIC, [f"b{i}".encode() for i in range(5)])

    cluster.heal(leader)
    healed_at = time.monotonic()
    info = cluster.wait_for_registered([leader], 30, newer_than={leader: before.epoch})[leader]
    assert info.epoch > before.epoch
    await wait_until_async(
        lambda: leader in partition_states(cluster, TOPIC, 1)[0].isr,
        20,
        "the old leader to rejoin the ISR",
    )
    rejoined_after = time.monotonic() - healed_at
    assert partition_states(cluster, TOPIC, 1)[0].leader in followers
    # As a follower it cut its log back to the new leader's: the unacked records are gone.
    on_old_leader = replica_records(cluster.log_dir(leader), TP, 1 << 62)
    assert not any(v and v.startswith(b"zombie-") for v in on_old_leader.values())
    assert [on_old_leader[o] for o in range(10)] == [f"a{i}".encode() for i in range(5)] + [
        f"b{i}".encode() for i in range(5)
    ]
    print(
        f"failover {failover_after:.1f}s after isolation, rejoin {rejoined_after:.1f}s after heal"
    )


def test_expire_session_makes_a_broker_register_again_with_a_new_broker_epoch(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster()  # loopback: expiring a session needs no namespaces
    assert cluster.network == "loopback"
    controller, controller_epoch = cluster.wait_for_controller(timeout=5)
    victim = next(b for b in cluster.broker_ids if b != controller)
    before = cluster.registrations()
    path = cluster.zk_session_path(victim)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600, "the session password is a secret"
    published = json.loads(path.read_text())
    pid = cluster.pid(victim)
    assert published["pid"] == pid

    started = time.monotonic()
    assert cluster.expire_session(victim) == published["session_id"]
    info = cluster.wait_for_registered([victim], 20, newer_than={victim: before[victim].epoch})
    reregistered_after = time.monotonic() - started
    assert info[victim].epoch > before[victim].epoch
    assert cluster.pid(victim) == pid, "the same process, on a new session"
    wait_until(
        lambda: json.loads(path.read_text())["session_id"] != published["session_id"],
        10,
        "the broker to publish its new session",
    )
    assert cluster.controller() == (controller, controller_epoch)

    # The controller's session: /controller goes with it, and an election follows.
    cluster.expire_session(controller)
    _, new_epoch = cluster.wait_for_controller(timeout=20, min_epoch=controller_epoch + 1)
    assert new_epoch > controller_epoch
    cluster.wait_for_registered([controller], 20, newer_than={controller: before[controller].epoch})
    print(f"re-registered {reregistered_after:.1f}s after the expiry")


def test_netns_brokers_run_alone_in_their_namespaces_and_leave_nothing_behind(
    make_cluster: ClusterFactory, as_root: None
) -> None:
    cluster = make_cluster(3, start=False, network="netns")
    net = cluster.status()["network"]
    assert net["mode"] == "netns" and cluster.host == net["gateway"]
    # What a crashed run leaves: a namespace, a bridge, a broker link. start() clears them.
    netns.ip("netns", "add", str(cluster.broker_netns(1)))
    netns.ip("link", "add", net["bridge"], "type", "bridge")
    netns.ip("link", "add", f"mk{net['id']}v2", "type", "veth", "peer", "name", f"mk{net['id']}x2")
    cluster.start(timeout=60)

    regs = cluster.registrations()
    for bid in cluster.broker_ids:
        pid = cluster.pid(bid)
        assert pid is not None
        # The pid we record and signal is the broker's Python process, in its namespace.
        assert os.path.realpath(f"/proc/{pid}/exe") == os.path.realpath(sys.executable)
        ns_inode = os.stat(f"/run/netns/{cluster.broker_netns(bid)}").st_ino
        assert (
            os.stat(f"/proc/{pid}/ns/net").st_ino == ns_inode != os.stat("/proc/self/ns/net").st_ino
        )
        assert (regs[bid].host, regs[bid].port) == cluster.broker_address(bid)
        assert cluster.broker_host(bid).startswith(net["subnet"].rsplit(".", 1)[0] + ".")
    assert cluster.zookeeper_connect.startswith(net["gateway"] + ":")

    # Process faults work the same in namespaces.
    controller, _ = cluster.wait_for_controller(timeout=5)
    victim = next(b for b in cluster.broker_ids if b != controller)
    cluster.pause(victim)
    assert cluster.is_paused(victim)
    cluster.resume(victim)
    info = cluster.restart(victim, timeout=30)  # SIGTERM, then a new process
    assert info.epoch > regs[victim].epoch and accepts(cluster, victim)
    cluster.kill(victim)
    assert not cluster.is_alive(victim)
    info = cluster.start_broker(victim, timeout=SESSION_TIMEOUT_S + 20)
    assert info is not None and accepts(cluster, victim)

    # degrade needs sch_netem: where the kernel has it, a round trip takes 2 x the delay;
    # where it does not, a clear error and nothing left on the link.
    veth = f"mk{net['id']}v{victim}"
    try:
        cluster.degrade(victim, delay_ms=100)
    except ClusterError as e:
        assert "netem" in str(e)
        assert "netem" not in netns.tc("qdisc", "show", "dev", veth).stdout
        assert cluster.network_faults() == {}
    else:
        assert cluster.network_faults() == {
            victim: {"degrade": {"delay_ms": 100, "jitter_ms": 0, "loss_pct": 0}}
        }
        started = time.monotonic()
        assert accepts(cluster, victim, timeout=5)
        assert time.monotonic() - started >= 0.18  # SYN and SYN-ACK, 100 ms each
        cluster.heal(victim)
    started = time.monotonic()
    assert accepts(cluster, victim) and time.monotonic() - started < 0.15

    # A second cluster coexists: its own id, names and subnet. The same subnet is refused.
    other = make_cluster(1, network="netns")
    other_net = other.status()["network"]
    assert other_net["id"] != net["id"] and other_net["subnet"] != net["subnet"]
    assert accepts(other, 1) and accepts(cluster, victim)
    clash = make_cluster(1, start=False, network="netns", subnet=net["subnet"])
    with pytest.raises(ClusterError, match="already in use"):
        clash.start(timeout=30)

    cluster.stop()
    assert leftovers(cluster) == []
    assert accepts(other, 1), "stopping one cluster left the other alone"


def test_netns_zookeeper_port_is_checked_against_listeners_on_all_addresses_only(
    tmp_path: Path, as_root: None
) -> None:
    """ZooKeeper listens on the bridge's gateway address, which `start` adds: before that,
    only a listener on all addresses can hold its port, and one is named before anything
    starts. A listener on another address (a loopback cluster's) is no conflict."""
    with socket.socket() as wildcard:
        wildcard.bind(("0.0.0.0", 0))
        wildcard.listen()
        port = wildcard.getsockname()[1]
        lc = LocalCluster(tmp_path / "c", 1, zookeeper_port=port, network="netns")
        with pytest.raises(PortInUseError) as e:
            lc.start(timeout=60)
        assert f"ZooKeeper's port {port} ({lc.host}) is in use by another process" in str(e.value)
        assert "--zookeeper-port" in str(e.value)
        assert not (tmp_path / "c").exists() and leftovers(lc) == [], "nothing was started"

    with socket.socket() as loopback:
        loopback.bind(("127.0.0.1", port))
        loopback.listen()
        lc = LocalCluster(
            tmp_path / "c", 1, zookeeper_port=port, overrides=TEST_OVERRIDES, network="netns"
        )
        try:
            lc.start(timeout=60)
            assert lc.zookeeper_connect == f"{lc.host}:{port}"
            assert lc.status()["zookeeper"]["alive"]
        finally:
            lc.kill_all()
        assert leftovers(lc) == []


def test_network_faults_need_netns_and_netns_needs_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loopback = LocalCluster(tmp_path / "loopback")
    with pytest.raises(ClusterError, match="network='netns'"):
        loopback.partition_from_brokers(1)
    with pytest.raises(ClusterError, match="network='netns'"):
        loopback.heal()
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    cluster = LocalCluster(tmp_path / "netns", network="netns")
    with pytest.raises(ClusterError, match="needs root"):
        cluster.start()
    with pytest.raises(ClusterError, match="needs root"):
        cluster.isolate(1)
    assert not (tmp_path / "netns" / "zookeeper").exists(), "nothing was started"


# --- the command line --------------------------------------------------------------------


def run_cli(*args: object, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "minikafka", "cluster", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def cli_ok(*args: object) -> str:
    done = run_cli(*args)
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def cli_status(data_dir: Path) -> dict[str, Any]:
    status: dict[str, Any] = json.loads(cli_ok("status", "--json", "--data-dir", data_dir))
    return status


def test_cli_partition_isolate_heal_expire_session_and_zookeeper_restart(
    tmp_path: Path, as_root: None
) -> None:
    data_dir = tmp_path / "dev"
    overrides = [f"--broker-config={k}={v}" for k, v in TEST_OVERRIDES.items()]
    d = ["--data-dir", data_dir]
    try:
        cli_ok(
            "up",
            "--detach",
            *d,
            "--port",
            "0",
            "--zookeeper-port",
            "0",
            "--admin-port",
            "0",
            "--network",
            "netns",
            *overrides,
        )
        status = cli_status(data_dir)
        assert status["network"]["mode"] == "netns"
        brokers = {b["id"]: b for b in status["brokers"]}
        assert all(b["registered"] and b["netns"] for b in brokers.values())
        victim = next(bid for bid, b in brokers.items() if not b["controller"])

        cli_ok("partition", "--broker", victim, *d)
        assert cli_status(data_dir)["brokers"][victim - 1]["faults"] == {"cut": "brokers"}
        cli_ok("isolate", "--broker", victim, *d)
        assert cli_status(data_dir)["brokers"][victim - 1]["faults"] == {"cut": "all"}
        assert "isolated" in cli_ok("status", *d)
        # A command in the broker's namespace reaches it (the partition is outside).
        host, port = brokers[victim]["host"], brokers[victim]["port"]
        probe = f"import socket; socket.create_connection(({host!r}, {port}), timeout=2).close()"
        cli_ok("exec", "--broker", victim, *d, "--", sys.executable, "-c", probe)
        cli_ok("heal", *d)
        assert cli_status(data_dir)["brokers"][victim - 1]["faults"] == {}

        out = cli_ok("expire-session", "--broker", victim, *d)
        assert "registered again" in out
        epochs = {b["id"]: b["epoch"] for b in cli_status(data_dir)["brokers"]}
        assert epochs[victim] > brokers[victim]["epoch"]

        # A quick ZooKeeper restart: every broker keeps its session, so its broker epoch.
        cli_ok("zookeeper", "restart", *d)
        assert cli_status(data_dir)["zookeeper"]["alive"]
        wait_until(
            lambda: {b["id"]: b["epoch"] for b in cli_status(data_dir)["brokers"]} == epochs,
            SESSION_TIMEOUT_S,
            "every broker to be registered again on its old session",
        )
        cli_ok("zookeeper", "stop", *d)
        assert not cli_status(data_dir)["zookeeper"]["alive"]
        cli_ok("zookeeper", "start", *d)

        cli_ok("down", *d)
        cluster = LocalCluster(data_dir)
        assert leftovers(cluster) == []
    finally:
        if (data_dir / "cluster.json").exists():
            LocalCluster(data_dir).kill_all()


@pytest.mark.timeout(600)
def test_cli_up_netns_on_the_default_fixed_ports_and_the_readme_faults(
    tmp_path: Path, as_root: None
) -> None:
    """The README's `minikafka cluster up --network netns`, no port flags: ZooKeeper on
    2181 at the gateway, brokers on 9092+ and admin endpoints on 9644+ in their namespaces.
    Then the README's "Break it" commands on it, as written and in order: the network faults,
    and the three chaos runs, each bounded by a --time-limit of its own appended (click
    takes the last), so each is a whole run: faults, heal, drain, check."""
    data_dir = tmp_path / "dev"
    d = ["--data-dir", data_dir]
    overrides = [f"--broker-config={k}={v}" for k, v in TEST_OVERRIDES.items()]
    try:
        cli_ok("up", "--detach", "--network", "netns", *d, *overrides)
        status = cli_status(data_dir)
        gateway = status["network"]["gateway"]
        assert status["zookeeper"]["alive"]
        assert status["zookeeper"]["connect"] == f"{gateway}:2181"
        brokers = {b["id"]: b for b in status["brokers"]}
        assert {bid: (b["port"], b["registered"]) for bid, b in brokers.items()} == {
            1: (9092, True),
            2: (9093, True),
            3: (9094, True),
        }
        cluster = LocalCluster(data_dir)
        for bid in cluster.broker_ids:
            assert accepts(cluster, bid)
            with urllib.request.urlopen(f"{cluster.admin_url(bid)}/health", timeout=5) as r:
                assert r.status == 200
            assert cluster.admin_url(bid).endswith(f":{9643 + bid}")
        # The README's commands find the cluster through its data dir, as after `cluster up`.
        env = {
            **os.environ,
            "MINIKAFKA_DATA_DIR": str(data_dir),
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        }
        env.pop("MINIKAFKA_BOOTSTRAP_SERVERS", None)
        created = subprocess.run(
            "minikafka topics --create --topic orders --partitions 3 --replication-factor 3",
            shell=True,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert created.returncode == 0, created.stderr
        faults = {"partition": {"cut": "brokers"}, "isolate": {"cut": "all"}, "heal": {}}
        for command in commands(block("Break it#0").text):
            done = subprocess.run(
                ["bash", "-c", command], env=env, capture_output=True, text=True, timeout=120
            )
            assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
            op = command.split()[2]
            if op in faults:
                assert cli_status(data_dir)["brokers"][1]["faults"] == faults[op], command
            if op == "exec":
                # topics --describe from inside broker 2's namespace reached the cluster.
                assert "Topic: orders" in done.stdout, done.stdout + done.stderr
        # Isolated past its session timeout, broker 2 registers again after the heal.
        wait_until(
            lambda: all(b["registered"] for b in cli_status(data_dir)["brokers"]),
            30,
            "broker 2 registered again",
        )
        runs = commands(block("Break it#1").text)
        assert len(runs) == 3 and all(r.startswith("minikafka chaos --nemesis") for r in runs)
        for command in runs:
            done = subprocess.run(
                ["bash", "-c", f"{command} --time-limit {README_CHAOS_BOUND_S}"],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            output = f"{command}\n{done.stdout}\n{done.stderr}"
            assert done.returncode == 0, output
            report = next(
                p
                for p in (data_dir / "chaos").glob("chaos-*/report.json")
                if p.parent.name in done.stdout
            )
            result = json.loads(report.read_text())["result"]
            assert result["lost"] == [] and result["acknowledged"] > 0, output
            assert {f["op"] for f in json.loads(report.read_text())["history"]["faults"]}, output
        cli_ok("down", *d)
        assert leftovers(cluster) == []
    finally:
        if (data_dir / "cluster.json").exists():
            LocalCluster(data_dir).kill_all()
