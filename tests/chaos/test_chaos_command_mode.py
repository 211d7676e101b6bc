"""`minikafka chaos` against a cluster it does not manage (the docker-compose mode).

The "cluster it does not manage" is a real local cluster, faulted only through a nemesis
command: a shim written here that does scripts/docker-fault.sh's ops (kill, start, restart,
pause, unpause, status) with `python -m minikafka cluster ...`, as docker-fault.sh does them
with `docker`. Chaos itself sees nothing of it but the bootstrap servers, ZooKeeper and the
command, and reads replicas back by fetching from each broker.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from minikafka.chaos import runner
from minikafka.chaos.command_cluster import (
    CommandCluster,
    NemesisCommandError,
    nemesis_argv,
    parse_nemesis_command,
)
from minikafka.chaos.nemesis import plan
from minikafka.chaos.runner import ChaosOptions, run_chaos, write_report
from minikafka.chaos.workload import decode_value
from minikafka.cli.main import cli
from minikafka.client.replicas import ReplicaClient
from minikafka.cluster import LocalCluster
from minikafka.common import TopicPartition
from minikafka.storage.log_files import read_records
from tests.chaos.test_chaos_runs import FAST, assert_safe
from tests.cluster.conftest import ClusterFactory

# The fixture's LocalCluster still holds the process the nemesis command killed (the shim
# started its successor): at teardown it reports that one's -9 as an unclean SIGTERM exit.
KILLED_BY_THE_SHIM = pytest.mark.filterwarnings(
    "ignore:brokers exited uncleanly on SIGTERM:UserWarning"
)

# The state `status` prints, from `minikafka cluster status --json` (docker's names).
_STATE_OF = """
import json, sys
b = next(b for b in json.load(sys.stdin)["brokers"] if b["id"] == int(sys.argv[1]))
print("paused" if b["paused"] else "running" if b["alive"] else "exited")
"""


def write_shim(tmp_path: Path, cluster: LocalCluster) -> tuple[Path, Path]:
    """(shim, calls log): scripts/docker-fault.sh's interface on a local cluster. Only
    `status` prints the state (docker-fault.sh prints it after every op): chaos reads it
    only there, and each `minikafka cluster` costs an interpreter start."""
    shim = tmp_path / "local-fault.sh"
    calls = tmp_path / "nemesis-calls.log"
    py, data = shlex.quote(sys.executable), shlex.quote(str(cluster.data_dir))
    shim.write_text(
        f"""#!/usr/bin/env bash
set -euo pipefail
[ $# -eq 2 ] || {{ echo "usage: $0 OP BROKER" >&2; exit 64; }}
op=$1
broker=$2
echo "$op $broker" >>{shlex.quote(str(calls))}
mk() {{ {py} -m minikafka cluster "$@" --data-dir {data} >&2; }}
state() {{ {py} -m minikafka cluster status --json --data-dir {data} | {py} -c {shlex.quote(_STATE_OF)} "$broker"; }}
case $op in
    kill) mk kill --broker "$broker" ;;
    start) if [ "$(state)" = exited ]; then mk restart --broker "$broker"; fi ;;
    restart) mk restart --broker "$broker" ;;
    pause) mk pause --broker "$broker" ;;
    unpause | resume) mk resume --broker "$broker" ;;
    status) state ;;
    *) echo "local-fault: unknown op '$op'" >&2; exit 64 ;;
esac
"""
    )
    shim.chmod(0o755)
    return shim, calls


class Sampler:
    """Which brokers were ever seen dead or paused, from their processes (/proc), while a
    run goes on: what the nemesis command did, seen from outside chaos."""

    def __init__(self, cluster: LocalCluster) -> None:
        self._cluster = cluster
        self.dead: set[int] = set()
        self.paused: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            for b in self._cluster.broker_ids:
                if not self._cluster.is_alive(b):
                    self.dead.add(b)
                elif self._cluster.is_paused(b):
                    self.paused.add(b)


@pytest.fixture
def no_file_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Command mode must read replicas by fetching, never from the (here local) files."""

    def forbidden(*args: object, **kwargs: object) -> dict[int, bytes | None]:
        raise AssertionError("command mode read a replica from its segment files")

    monkeypatch.setattr(runner, "read_records", forbidden)
    yield


# --- real runs -----------------------------------------------------------------------------


@pytest.mark.timeout(240)
@pytest.mark.usefixtures("no_file_reads")
@KILLED_BY_THE_SHIM
async def test_command_mode_kill_and_pause_run_is_safe(
    make_cluster: ClusterFactory, tmp_path: Path
) -> None:
    cluster = make_cluster(overrides=FAST)
    shim, calls = write_shim(tmp_path, cluster)
    # Seed 1: a kill, then a pause. Time for more: restarting the killed broker takes a
    # session timeout and more on a loaded machine, and the pause must still come. Partition
    # moves beside them, which need no command (on three brokers: reorders).
    opts = ChaosOptions(
        nemesis=("kill", "pause", "reassign"), interval_s=5.0, time_limit_s=45.0, seed=1, rate=50
    )
    assert [f.op for f in plan(("kill", "pause"), 2, opts.seed)] == ["kill", "pause"]
    pids = {b: cluster.pid(b) for b in cluster.broker_ids}

    with (
        CommandCluster(
            cluster.bootstrap_servers, cluster.zookeeper_connect, f"{shim} {{op}} {{broker}}"
        ) as remote,
        Sampler(cluster) as seen,
    ):
        report = await run_chaos(remote, opts, log=print)
    write_report(report, tmp_path / "report")

    assert_safe(report)
    history = report.history
    assert history.meta["brokers"] == [1, 2, 3]
    struck = {f.op: int(f.target) for f in history.faults if f.op != "reassign"}
    assert set(struck) == {"kill", "pause"}, history.faults
    completed = [m for m in history.moves if m.outcome == "completed"]
    assert completed and all(m.assignment == m.target for m in completed), history.moves
    killed, paused = struck["kill"], struck["pause"]
    # The commands ran, each fault healed by its counterpart...
    lines = calls.read_text().splitlines()
    for op, heal, target in (("kill", "start", killed), ("pause", "unpause", paused)):
        assert f"{op} {target}" in lines, lines
        assert lines.index(f"{heal} {target}") > lines.index(f"{op} {target}"), lines
    # ...and did what they say: seen from the processes, and from ZooKeeper.
    assert killed in seen.dead and paused in seen.paused
    assert cluster.pid(killed) not in (None, pids[killed])  # started again: a new process
    assert all(cluster.is_alive(b) and not cluster.is_paused(b) for b in cluster.broker_ids)
    kill_window = next(f for f in history.faults if f.op == "kill")
    assert kill_window.end is not None
    assert any(
        o.leader not in (killed, -1) and kill_window.start <= o.time <= kill_window.end
        for o in history.leaders
    ), "no leadership moved off the killed broker"

    # Replicas read with fetches: every broker's copy of every partition, and the same
    # records as the files on disk (which this local cluster happens to have).
    assert history.meta["replica_logs_from"] == "fetch"
    logs = history.replica_logs
    assert {(r.broker_id, r.partition) for r in logs} == {
        (b, p) for b in (1, 2, 3) for p in range(opts.partitions)
    }
    assert all(r.high_watermark > 0 and r.records for r in logs)
    for r in logs:
        on_disk = read_records(
            cluster.log_dir(r.broker_id), TopicPartition(opts.topic, r.partition), r.high_watermark
        )
        assert r.records == {o: decode_value(v) for o, v in on_disk.items()}
    # The client's helper without an end: each replica whole, up to its own LEO.
    async with ReplicaClient(cluster.bootstrap_servers) as client:
        for b in cluster.broker_ids:
            for p in range(opts.partitions):
                tp = TopicPartition(opts.topic, p)
                # Small fetches: many rounds, batches cut at the byte limit.
                whole = await client.fetch_replica_records(b, tp, max_bytes=4096)
                assert whole and whole == read_records(cluster.log_dir(b), tp)


async def test_replicas_are_read_from_files_locally_and_fetched_otherwise(
    tmp_path: Path,
) -> None:
    local = LocalCluster(tmp_path / "local")  # not started: only its directory is read
    remote = CommandCluster("localhost:1", "localhost:2", "fault.sh {op} {broker}")
    async with ReplicaClient("localhost:1") as client:
        source, read = runner._replica_reader(local, client)
        assert source == "files"
        assert await read(1, TopicPartition("t", 0), 10) == {}
        assert runner._replica_reader(remote, client)[0] == "fetch"


@pytest.mark.timeout(180)
@KILLED_BY_THE_SHIM
def test_cli_command_mode_end_to_end(make_cluster: ClusterFactory, tmp_path: Path) -> None:
    cluster = make_cluster(overrides=FAST)
    shim, calls = write_shim(tmp_path, cluster)
    # Without --out, the report of a cluster without a data dir here goes to minikafka's
    # per-user directory, not to the current one.
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")}
    out = tmp_path / "xdg" / "minikafka" / "other-clusters" / "chaos" / "cli-chaos"
    args = [
        "chaos",
        "--bootstrap-server",
        cluster.bootstrap_servers,
        "--zookeeper",
        cluster.zookeeper_connect,
        "--nemesis-command",
        f"{shlex.quote(str(shim))} {{op}} {{broker}}",
        "--nemesis",
        "kill,pause",
        "--seed",
        "1",  # one fault: a kill
        "--interval",
        "4",
        "--time-limit",
        "8",
        "--rate",
        "50",
        "--topic",
        "cli-chaos",
    ]
    result = subprocess.run(
        [sys.executable, "-m", "minikafka", *args],
        capture_output=True,
        text=True,
        timeout=150,
        cwd=cwd,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[0] == (
        f"the report goes to {out}, as --bootstrap-server's cluster has no data dir here "
        "(--out DIR: elsewhere)"
    )
    assert f"report: {out / 'report.json'}" in result.stdout
    # Nothing of chaos's here. (The brokers the shim restarts run in this directory, and
    # kio imports hypothesis where the test extra installed it: its .hypothesis appears.)
    assert [p.name for p in cwd.iterdir()] in ([], [".hypothesis"])
    report = json.loads((out / "report.json").read_text())
    assert report["result"]["valid"], report["result"]
    history = report["history"]
    assert [f["op"] for f in history["faults"]] == ["kill"]
    target = history["faults"][0]["target"]
    assert calls.read_text().splitlines()[:2] == [f"kill {target}", f"status {target}"]
    assert history["meta"]["replica_logs_from"] == "fetch"
    assert history["meta"]["network"] == "external"
    assert {r["broker_id"] for r in history["replica_logs"]} == {1, 2, 3}
    assert (out / "timeline.png").stat().st_size > 0


# --- the nemesis command -------------------------------------------------------------------


def test_template_is_split_like_a_shell_and_substituted_per_word() -> None:
    words = parse_nemesis_command(
        "'/opt/my tools/fault.sh' --op={op} --target broker{broker} "
        "--format '{{.State.Status}}' 'say {op} to {broker}'"
    )
    assert nemesis_argv(words, "pause", 2) == [
        "/opt/my tools/fault.sh",
        "--op=pause",
        "--target",
        "broker2",
        "--format",
        "{{.State.Status}}",  # other braces are left alone (no str.format)
        "say pause to 2",  # one word stays one argument: no shell, no re-splitting
    ]
    # A substituted value is never parsed again.
    assert nemesis_argv(("x", "{op}"), "a; rm -rf /", 1) == ["x", "a; rm -rf /"]


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("fault.sh {op}", "has no {broker}"),
        ("fault.sh {broker}", "has no {op}"),
        ("fault.sh", "has no {op} or {broker}"),
        ("fault.sh '{op} {broker}", "No closing quotation"),
    ],
)
def test_bad_templates_are_refused(template: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_nemesis_command(template)


def fake_command(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-fault.sh"
    script.write_text(f"#!/usr/bin/env bash\nset -euo pipefail\n{body}\n")
    script.chmod(0o755)
    return f"{script} {{op}} {{broker}}"


def test_states_come_from_the_last_line_of_status(tmp_path: Path) -> None:
    body = """case "$1 $2" in
    "status 1") echo "docker-fault: status broker1" ; echo running ;;
    "status 2") printf 'noise\\npaused\\n' ;;
    "status 3") echo exited ;;
    "status 4") true ;;
    *) echo "did $1 on $2" ;;
esac"""
    cc = CommandCluster("localhost:1", "localhost:2", fake_command(tmp_path, body))
    assert (cc.is_alive(1), cc.is_paused(1)) == (True, False)
    assert (cc.is_alive(2), cc.is_paused(2)) == (True, True)
    assert (cc.is_alive(3), cc.is_paused(3)) == (False, False)
    with pytest.raises(NemesisCommandError, match="printed no state"):
        cc.state(4)
    assert cc.run("kill", 7) == "did kill on 7\n"


def test_a_failing_command_raises_with_its_stderr(tmp_path: Path) -> None:
    body = 'echo "docker-fault: no container for service broker$2" >&2; exit 3'
    cc = CommandCluster("localhost:1", "localhost:2", fake_command(tmp_path, body))
    with pytest.raises(NemesisCommandError) as e:
        cc.kill(2)
    assert "exited with code 3" in str(e.value)
    assert "no container for service broker2" in str(e.value)
    assert "kill 2" in str(e.value)  # which command it was


def test_a_missing_or_hanging_command_raises(tmp_path: Path) -> None:
    missing = CommandCluster("localhost:1", "localhost:2", f"{tmp_path}/nowhere {{op}} {{broker}}")
    with pytest.raises(NemesisCommandError, match="cannot run nemesis command"):
        missing.pause(1)
    hanging = CommandCluster(
        "localhost:1",
        "localhost:2",
        fake_command(tmp_path, "echo stuck >&2; exec sleep 30"),
        command_timeout_s=0.5,
    )
    with pytest.raises(NemesisCommandError, match=r"did not finish within 0\.5s: stuck"):
        hanging.pause(1)


def test_session_expiry_is_refused_by_the_cluster(tmp_path: Path) -> None:
    cc = CommandCluster("localhost:1", "localhost:2", fake_command(tmp_path, "true"))
    with pytest.raises(Exception, match="needs a local cluster"):
        cc.expire_session(1)


def test_network_cuts_run_the_command_and_heal_all_heals_what_was_cut(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    cc = CommandCluster(
        "localhost:1", "localhost:2", fake_command(tmp_path, f'echo "$1 $2" >> {calls}')
    )
    cc.isolate(2)
    cc.partition_from_brokers(3)
    cc.heal(2)
    cc.heal(None)  # only broker 3 is still cut
    cc.heal(None)  # nothing is
    assert calls.read_text().splitlines() == [
        "isolate 2",
        "partition-from-brokers 3",
        "heal 2",
        "heal 3",
    ]


# --- option validation ---------------------------------------------------------------------

COMMAND_MODE = [
    "--bootstrap-server",
    "localhost:1",
    "--zookeeper",
    "localhost:2",
    "--nemesis-command",
    "fault.sh {op} {broker}",
]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (COMMAND_MODE[:4], "--bootstrap-server needs --nemesis-command"),
        (COMMAND_MODE[:2] + COMMAND_MODE[4:], "--bootstrap-server needs --zookeeper"),
        (COMMAND_MODE[:2], "--bootstrap-server needs --zookeeper and --nemesis-command"),
        (["--data-dir", "d", *COMMAND_MODE], "mutually exclusive"),
        (COMMAND_MODE[2:4], "--zookeeper goes only with --bootstrap-server"),
        (COMMAND_MODE[4:], "--nemesis-command goes only with --bootstrap-server"),
        (COMMAND_MODE[2:], "--zookeeper and --nemesis-command go only with --bootstrap"),
        ([*COMMAND_MODE[:4], "--nemesis-command", "fault.sh {op}"], "has no {broker}"),
        (["--bootstrap-server", "nohost", *COMMAND_MODE[2:]], "--bootstrap-server"),
        ([*COMMAND_MODE[:2], "--zookeeper", "/chroot", *COMMAND_MODE[4:]], "no host"),
        (["--faults", "3", "--time-limit", "10"], "--faults and --time-limit are mutually"),
        (["--faults", "0"], "Invalid value for '--faults'"),
        (["--producer", "transactional"], "Invalid value for '--producer'"),
    ],
)
def test_option_errors(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["chaos", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_the_readme_soak_commands_parse() -> None:
    """The README gives its long soaks inline (no test runs them for hours): each mode's
    command line is one `minikafka chaos` accepts."""
    from minikafka.cli.chaos import chaos
    from tests.readme import README_PATH

    soaks = re.findall(r"`minikafka chaos (--producer [^`]*)`", README_PATH.read_text())
    modes = []
    for soak in soaks:
        ctx = chaos.make_context("chaos", shlex.split(soak))
        modes.append(ctx.params["producer_mode"])
        assert ctx.params["faults"] == 1000, soak
    assert sorted(modes) == ["idempotent", "plain"], soaks


@pytest.mark.parametrize("nemesis", ["zk-expire", "kill,isr-change-zk-expire"])
def test_faults_a_command_cannot_do_are_refused_before_anything_runs(nemesis: str) -> None:
    # Nothing listens on these ports: the refusal comes before any connection.
    result = CliRunner().invoke(cli, ["chaos", *COMMAND_MODE, "--nemesis", nemesis])
    assert result.exit_code == 1, result.output
    assert "cannot be done with a nemesis command" in result.output
    assert nemesis.split(",")[-1] in result.output


def test_without_confluent_kafka_chaos_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)  # makes the import fail
    result = CliRunner().invoke(cli, ["chaos", *COMMAND_MODE])
    assert result.exit_code == 1, result.output
    assert (
        "minikafka chaos runs its producers and consumers on librdkafka, the confluent-kafka "
        "package: pip install confluent-kafka" in result.output
    )
