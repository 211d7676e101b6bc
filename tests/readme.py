"""The README's code blocks, for the tests that run them, and the table saying which test
runs each one: tests/unit/test_readme_blocks.py fails when a block has no runner, so a new
example cannot land without a test that runs it as written.

A block is named by its section (the `## ` heading above it) and its place among that
section's blocks: "Break it#2" is the third block of "## Break it".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
