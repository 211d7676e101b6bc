"""The README's commands, run as a newcomer runs them, from a fresh copy of the repository:
"Two commands" (create the venv, install, `cluster up` in the foreground) and every command
of "A 60-second tour" from another terminal, each of which must succeed.

Two changes to what is written, both to share a machine with other tests: `cluster up`
gets `--port 0 --zookeeper-port 0 --admin-port 0` (free ports; the tour's commands name
none, they find the brokers through the cluster's data dir), and the data dir is a
temporary one ($MINIKAFKA_DATA_DIR) instead of the user's. The second of the two commands,
`scripts/test`, is what runs this test: it is checked for presence, not run from here.

With MINIKAFKA_TOUR_TRANSCRIPT=path the test writes each command with its output and time.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from minikafka.cluster import LocalCluster
from tests.cluster.conftest import wait_until
from tests.readme import block, commands

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(900)


def fresh_copy(dest: Path) -> None:
    """What a clone of this checkout holds: the files git tracks, as they are now."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, files):
        src = ROOT / os.fsdecode(name)
        if src.is_file():
            target = dest / os.fsdecode(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)


# `curl -sN .../v1/stream` streams until stopped: it is stopped after this long, having
# sent a view or more.
STREAM_BOUND_S = 4.0


def run_bounded(
    command: str, cwd: Path, env: dict[str, str], bound_s: float
) -> tuple[int | None, str, float]:
    """Run a shell command for at most bound_s: (exit status, or None if it was still
    running and was stopped, output, seconds)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=bound_s)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
        code = None
    return code, output, time.monotonic() - t0


def check_admin_output(command: str, code: int | None, output: str) -> None:
    """What each admin endpoint and dashboard command of the README prints."""
    what = f"{command}\n{output[:3000]}"
    if "/v1/stream" in command:
        assert code is None and "event: view\ndata: {" in output, what
        return
    assert code == 0 and output.strip(), what
    if "/metrics" in command:
        assert "kafka_server_replicamanager_partitioncount" in output, what
        assert not any(line.startswith("#") for line in output.splitlines()), what
        return
    body = json.loads(output)
    assert "error" not in body, what
    if "/health" in command:
        assert body["status"] == "ok", what
    if "topic=orders" in command:
        assert "orders" in output, what


def check_perf_output(command: str, output: str) -> None:
    """The line each perf tool ends with, as Kafka's tools print it."""
    if "perf produce" in command:
        assert re.search(r"^200000 records sent, [\d.]+ records/sec", output, re.M), output
    elif "perf consume" in command:
        header, row = [line for line in output.splitlines() if "," in line][-2:]
        assert header.startswith("start.time, end.time, data.consumed.in.MB"), output
        assert row.split(", ")[4] == "200000", output  # data.consumed.in.nMsg
    else:
        assert re.search(r"^Avg latency: [\d.]+ ms", output, re.M), output
        assert re.search(r"^Percentiles: 50th = ", output, re.M), output


class Transcript:
    def __init__(self) -> None:
        self.entries: list[str] = []

    def add(self, command: str, output: str, seconds: float, code: int) -> None:
        self.entries.append(f"$ {command}\n{output.rstrip()}\n[exit {code}, {seconds:.1f} s]\n")

    def write(self) -> None:
        path = os.environ.get("MINIKAFKA_TOUR_TRANSCRIPT")
        if path:
            Path(path).write_text("\n".join(self.entries))


def test_two_commands_and_the_tour_work_from_a_fresh_copy(tmp_path: Path) -> None:
    clone = tmp_path / "minikafka"
    fresh_copy(clone)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MINIKAFKA_BOOTSTRAP_SERVERS", "VIRTUAL_ENV", "PYTHONPATH")
    }
    env["MINIKAFKA_DATA_DIR"] = str(tmp_path / "data")
    env["PATH"] = f"{clone / '.venv' / 'bin'}:{os.path.dirname(sys.executable)}:{env['PATH']}"
    transcript = Transcript()

    # "Two commands": the first, in the foreground, as in a terminal of its own.
    (start_cluster,) = commands(block("Two commands#0").text)
    assert start_cluster.startswith("python3 -m venv .venv && .venv/bin/pip install -e . && ")
    assert start_cluster.endswith(".venv/bin/minikafka cluster up")
    # The README says python3: here, the Python running the tests (the same version CI set up).
    start_cluster = start_cluster.replace("python3 ", f"{sys.executable} ", 1)
    started = time.monotonic()
    foreground = subprocess.Popen(
        ["bash", "-c", f"{start_cluster} --port 0 --zookeeper-port 0 --admin-port 0"],
        cwd=clone,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(
        target=lambda: lines.extend(iter(foreground.stdout.readline, "")),  # type: ignore[union-attr]
        daemon=True,
    )
    reader.start()
    try:
        wait_until(
            lambda: any("Press Ctrl-C" in line for line in lines) or foreground.poll() is not None,
            timeout=600,
            what="the cluster to be up",
        )
        assert foreground.poll() is None, "".join(lines)
        transcript.add(start_cluster, "".join(lines), time.monotonic() - started, 0)
        # The second command is the test suite (this test among it): present, executable.
        (run_tests,) = commands(block("Two commands#1").text)
        assert run_tests == "scripts/test"
        assert os.access(clone / "scripts" / "test", os.X_OK)

        tour = commands(block("A 60-second tour#0").text)
        assert tour[-1] == "minikafka cluster down"
        previous = ""
        for command in tour[:-1]:
            t0 = time.monotonic()
            done = subprocess.run(
                ["bash", "-o", "pipefail", "-c", command],
                cwd=clone,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            output = done.stdout + done.stderr
            transcript.add(command, output, time.monotonic() - t0, done.returncode)
            assert done.returncode == 0, f"{command}\n{output}"
            if command.startswith("minikafka consume"):
                assert len(done.stdout.split()) == 5, output
            if command.startswith("minikafka cluster restart"):
                assert "broker 2" in output
            if previous.startswith("minikafka cluster kill --broker 2"):
                # Right after the kill, before its session expires: marked in every ISR.
                assert done.stdout.count("\tUnreachable: 2\n") == 3, output
            previous = command
        # What the tour promised: every acknowledged record of both runs is in the topic.
        done = subprocess.run(
            [
                *("minikafka", "consume", "--topic", "orders", "--from-beginning"),
                *("--max-messages", "1100", "--timeout-ms", "30000"),
            ],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert sorted(map(int, done.stdout.split())) == list(range(1, 1101)), done.stderr

        # The sections after the tour that need a running cluster, in the README's order:
        # the admin endpoint's and the dashboard's curl commands, then `minikafka perf`.
        admin = LocalCluster(Path(env["MINIKAFKA_DATA_DIR"])).admin_url(1)
        admin = admin.removeprefix("http://")
        for block_id in ("Metrics and the admin endpoint#0", "The dashboard#0"):
            for command in commands(block(block_id).text):
                assert "localhost:9644" in command
                command = command.replace("localhost:9644", admin)
                code, output, seconds = run_bounded(command, clone, env, STREAM_BOUND_S)
                transcript.add(command, output, seconds, -1 if code is None else code)
                check_admin_output(command, code, output)
        for block_id in ("Measure it#0", "Measure it#1", "Measure it#2"):
            (command,) = commands(block(block_id).text)
            code, output, seconds = run_bounded(command, clone, env, 600)
            transcript.add(command, output, seconds, -1 if code is None else code)
            assert code == 0, f"{command}\n{output}"
            check_perf_output(command, output)

        t0 = time.monotonic()
        down = subprocess.run(
            ["bash", "-c", tour[-1]], cwd=clone, env=env, capture_output=True, text=True
        )
        transcript.add(tour[-1], down.stdout + down.stderr, time.monotonic() - t0, down.returncode)
        assert down.returncode == 0, down.stderr
        # The foreground `cluster up` notices and ends by itself.
        assert foreground.wait(timeout=60) == 0, "".join(lines)
        assert "stopped by another command" in "".join(lines)
    finally:
        transcript.write()
        if foreground.poll() is None:
            foreground.terminate()
            foreground.wait(timeout=60)
