"""The README's code blocks, for the tests that run them, and the table saying which test
runs each one: tests/unit/test_readme_blocks.py fails when a block has no runner, so a new
example cannot land without a test that runs it as written.

A block is named by its section (the `## ` heading above it) and its place among that
section's blocks: "Break it#2" is the third block of "## Break it".
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from minikafka.cluster import LocalCluster

ROOT = Path(__file__).resolve().parents[1]
README_PATH = ROOT / "README.md"


@dataclass(frozen=True)
class Block:
    id: str
    kind: str  # the fence's language: sh, python
    text: str


def blocks(text: str | None = None) -> dict[str, Block]:
    """Every fenced code block of the README, by id, in the README's order."""
    text = README_PATH.read_text() if text is None else text
    found: dict[str, Block] = {}
    section = ""
    per_section: dict[str, int] = {}
    fence: list[str] | None = None
    kind = ""
    for line in text.splitlines(keepends=True):
        if fence is None and line.startswith("## "):
            section = line[3:].strip()
        elif line.startswith("```"):
            if fence is None:
                fence, kind = [], line[3:].strip()
            else:
                n = per_section.get(section, 0)
                per_section[section] = n + 1
                block_id = f"{section}#{n}"
                found[block_id] = Block(block_id, kind, "".join(fence))
                fence = None
        elif fence is not None:
            fence.append(line)
    return found


def block(block_id: str) -> Block:
    return blocks()[block_id]


def commands(text: str) -> list[str]:
    """A shell block's commands, each on one line: backslash continuations joined, comment
    lines and trailing comments (two spaces, then #) dropped."""
    out: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.split("  #")[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        command = (pending + line.strip()).strip()
        pending = ""
        if command:
            out.append(command)
    return out


@dataclass(frozen=True)
class Walkthrough:
    """A walkthrough block's run: its bash process, the directory it ran in, its data dir."""

    done: subprocess.CompletedProcess[str]
    cwd: Path
    data_dir: Path

    @property
    def out(self) -> str:
        return self.done.stdout + self.done.stderr


def run_walkthrough(
    block_id: str, tmp_path: Path, data_dir_line: str, up: str, *edits: tuple[str, str]
) -> Walkthrough:
    """A README walkthrough block run as written: as one bash script (its exports and
    here-documents hold across lines), in a fresh directory, with only the changes that let
    it share the machine with other tests: its data dir (the block's first line,
    `data_dir_line`) moved under `tmp_path`, free ports on its one `up` command, then each
    of `edits` (old, new: the first occurrence replaced). Its cluster is killed afterwards,
    whatever the script did."""
    script = block(block_id).text
    assert script.startswith(data_dir_line) and script.count(up) == 1
    data_dir = tmp_path / Path(data_dir_line.split("=", 1)[1].strip()).name
    script = script.replace(data_dir_line, f"export MINIKAFKA_DATA_DIR={data_dir}\n", 1)
    script = script.replace(up, f"{up} --port 0 --zookeeper-port 0 --admin-port 0", 1)
    for old, new in edits:
        assert old in script, old
        script = script.replace(old, new, 1)
    cwd = tmp_path / "work"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINIKAFKA_")}
    env["PATH"] = f"{os.path.dirname(sys.executable)}:{env['PATH']}"
    try:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    finally:
        with contextlib.suppress(Exception):
            LocalCluster(data_dir).kill_all()
    return Walkthrough(done, cwd, data_dir)


# Which test runs each block: "path::test function". The long-running commands are run with
# a bound each test states (a shorter --time-limit, TIME_LIMIT, a kill once they have done
# what they are for), and the benchmarks' command lines are parsed by their scripts while
# smoke-sized runs of each script check its figures.
RUNNERS: dict[str, str] = {
    "Two commands#0": "tests/cluster/test_readme_tour.py::test_two_commands_and_the_tour_work_from_a_fresh_copy",
    "Two commands#1": "tests/cluster/test_readme_tour.py::test_two_commands_and_the_tour_work_from_a_fresh_copy",
    "A 60-second tour#0": "tests/cluster/test_readme_tour.py::test_two_commands_and_the_tour_work_from_a_fresh_copy",
    "Kafka clients#0": "tests/cluster/test_readme_example.py::test_the_readme_python_examples_run_as_written",
    "Kafka clients#1": "tests/cluster/test_readme_example.py::test_the_readme_topic_config_example_changes_the_topic",
    "Security#0": "tests/security/test_readme_security.py::test_the_readme_security_walkthrough_runs_as_written",
    "Grow, shrink and rebalance#0": "tests/cluster/test_readme_grow.py::test_the_readme_grow_and_shrink_walkthrough_runs_as_written",
    "Metrics and the admin endpoint#0": "tests/cluster/test_readme_tour.py::test_two_commands_and_the_tour_work_from_a_fresh_copy",
    "The dashboard#0": "tests/cluster/test_readme_tour.py::test_two_commands_and_the_tour_work_from_a_fresh_copy",
    "Pipelines with Spark#0": "tests/unit/test_readme_blocks.py::test_the_spark_extra_is_what_scripts_test_installs",
    "Pipelines with Spark#1": "tests/spark/test_readme_spark.py::test_the_spark_example_counts_the_clicks_and_stops_on_ctrl_c",
    "Pipelines with Spark#2": "tests/spark/test_readme_spark.py::test_the_pipeline_commands_run_in_the_order_given",
    "Pipelines with Spark#3": "tests/docker/test_compose_cluster.py::test_the_readme_spark_cluster_runs_the_pipeline_demo_and_spark_submit",
    "Break it#0": "tests/cluster/test_network_faults.py::test_cli_up_netns_on_the_default_fixed_ports_and_the_readme_faults",
    "Break it#1": "tests/cluster/test_network_faults.py::test_cli_up_netns_on_the_default_fixed_ports_and_the_readme_faults",
    "Break it#2": "tests/docker/test_compose_cluster.py::test_the_readme_docker_commands_in_order",
    "Break it#3": "tests/docker/test_compose_cluster.py::test_the_readme_scale_out_onto_broker4_and_drain_it",
    "Break it#4": "tests/docker/test_compose_cluster.py::test_the_readme_docker_commands_in_order",
    "Measure it#0": "tests/cluster/test_readme_tour.py::test_two_commands_and_the_tour_work_from_a_fresh_copy",
    "Measure it#1": "tests/cluster/test_readme_tour.py::test_two_commands_and_the_tour_work_from_a_fresh_copy",
    "Measure it#2": "tests/cluster/test_readme_tour.py::test_two_commands_and_the_tour_work_from_a_fresh_copy",
    "Measure it#3": "tests/perf/test_readme_benchmarks.py::test_the_readme_benchmark_commands_parse",
    "Benchmarks#0": "tests/perf/test_readme_benchmarks.py::test_the_readme_benchmark_commands_parse",
}
