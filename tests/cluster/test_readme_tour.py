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

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.cluster.conftest import wait_until

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()

pytestmark = pytest.mark.timeout(900)


def sh_block_after(heading: str) -> str:
    start = README.index(heading)
    block = re.search(r"```sh\n(.*?)```", README[start:], re.S)
    assert block is not None, f"no sh block after {heading!r}"
    return block.group(1)


def commands(block: str) -> list[str]:
    """The block's commands: comment lines and trailing comments dropped."""
    out = []
    for line in block.splitlines():
        command = line.split("  #")[0].strip()
        if command and not command.startswith("#"):
            out.append(command)
    return out


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
    (start_cluster,) = commands(sh_block_after("## Two commands"))
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
        (run_tests,) = commands(sh_block_after("Set up and run the tests"))
        assert run_tests == "scripts/test"
        assert os.access(clone / "scripts" / "test", os.X_OK)

        tour = commands(sh_block_after("## A 60-second tour"))
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
