"""The README's benchmark commands are valid as written: every `.venv/bin/python
scripts/X.py ARGS` line of the sh blocks under "## Benchmarks", and of the block of
"## Measure it" that runs scripts/bench.py, gives ARGS to X's own parser (its module-level
`parse_args(argv)`, loaded without running its main) and the parser accepts them. And every
benchmark the README names has an end-to-end test under tests/ that runs it at a smoke size,
so that a new benchmark cannot be added without one."""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.util
import io
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from tests.readme import block, commands

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
PYTHON = ".venv/bin/python"

# README benchmarks that no test runs, and why (their arguments are still checked above).
NOT_RUN_BY_TESTS = {
    "bench_docker.py": (
        "it needs a Docker engine and minutes of image builds, and --cold removes the "
        "project's images and the build cache; tests/docker runs the compose cluster it times"
    ),
    "bench_spark_compose.py": (
        "it needs a Docker engine and the Spark image's build, minutes of CI; tests/docker "
        "runs the compose cluster's spark profile it reads on, and tests/perf runs "
        "bench_spark.py, whose standalone read it repeats there"
    ),
}


@dataclass(frozen=True)
class BenchmarkCommand:
    """One README command line running a benchmark script."""

    line: str  # as written, continuation lines joined
    script: str  # its file name under scripts/
    args: tuple[str, ...]  # what follows the script, split as sh does


# The README's blocks with benchmark commands: "## Benchmarks" and the scripts/bench.py
# block of "## Measure it" (after its pip install of the bench extra).
BLOCKS = ("Measure it#3", "Benchmarks#0")


def readme_benchmark_commands() -> list[BenchmarkCommand]:
    """Every command of those blocks that runs a script under scripts/, in the README's
    order. A line that runs a script other than as `.venv/bin/python scripts/X.py ARGS`
    fails the caller's test: it could not be checked."""
    found: list[BenchmarkCommand] = []
    for block_id in BLOCKS:
        for line in commands(block(block_id).text):
            words = shlex.split(line, comments=True)
            if not any(w.startswith("scripts/") for w in words):
                continue  # the pip install of bench.py's extra: test_the_bench_extra_exists
            assert len(words) >= 2 and words[0] == PYTHON, f"not run by {PYTHON}: {line}"
            assert re.fullmatch(r"scripts/\w+\.py", words[1]), f"not a script: {line}"
            found.append(
                BenchmarkCommand(line, words[1].removeprefix("scripts/"), tuple(words[2:]))
            )
    return found


@functools.cache
def load_script(name: str) -> ModuleType:
    """scripts/<name> as a module: its imports and definitions run, its main does not (the
    module is not __main__)."""
    path = SCRIPTS / name
    module_name = f"readme_benchmark_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None, f"cannot load {path}"
    module = importlib.util.module_from_spec(spec)
    # @dataclass looks its class's module up in sys.modules while it builds the class.
    sys.modules[module_name] = module
    # Python runs a script with its directory first on sys.path: scripts import the
    # modules they share (scripts/scale_common.py) by name.
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    spec.loader.exec_module(module)
    return module


def scripts_run_by_tests() -> set[str]:
    """The script file names that a test file under tests/ holds as a string literal of its
    own, as `ROOT / "scripts" / "bench_x.py"` (a mention in a comment or a docstring does not
    count: it runs nothing)."""
    names: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        if path == Path(__file__).resolve():
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                m = re.fullmatch(r"(?:scripts/)?(\w+\.py)", node.value)
                if m is not None:
                    names.add(m.group(1))
    return names


COMMANDS = readme_benchmark_commands()


def test_the_readme_runs_every_benchmark_script() -> None:
    listed = {c.script for c in COMMANDS}
    on_disk = {p.name for p in SCRIPTS.glob("bench*.py")}
    assert not listed - on_disk, f"the README runs scripts that do not exist: {listed - on_disk}"
    assert not on_disk - listed, f"benchmarks the README does not show: {on_disk - listed}"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.script)
def test_the_readme_benchmark_commands_parse(command: BenchmarkCommand) -> None:
    parse_args = getattr(load_script(command.script), "parse_args", None)
    assert callable(parse_args), f"scripts/{command.script} has no parse_args(argv)"
    # argparse prints its complaint to stderr and exits: keep both for the failure message.
    complaint = io.StringIO()
    exit_code: str | int | None = None
    with contextlib.redirect_stderr(complaint):
        try:
            parse_args(list(command.args))
        except SystemExit as e:
            exit_code = e.code
    assert exit_code is None, (
        f"the README's `{command.line}`: scripts/{command.script} refuses its arguments "
        f"(exit {exit_code}): {complaint.getvalue().strip()}"
    )


def test_every_readme_benchmark_has_an_end_to_end_test() -> None:
    listed = {c.script for c in COMMANDS}
    run = scripts_run_by_tests()
    missing = sorted(listed - run - NOT_RUN_BY_TESTS.keys())
    assert not missing, (
        f"no test under tests/ runs {missing}: add one that runs it at a smoke size "
        "(as tests/perf/test_bench_groups_script.py does)"
    )
    # An exception that a test now covers, or that the README no longer shows, goes.
    stale = sorted((NOT_RUN_BY_TESTS.keys() & run) | (NOT_RUN_BY_TESTS.keys() - listed))
    assert not stale, f"NOT_RUN_BY_TESTS lists {stale}: remove them"


def test_the_bench_extra_is_what_the_readme_installs() -> None:
    """The pip line before scripts/bench.py installs an extra pyproject.toml defines."""
    (install,) = [c for c in commands(block("Measure it#3").text) if "pip install" in c]
    assert shlex.split(install) == [".venv/bin/pip", "install", "-e", ".[bench]"]
    assert re.search(r"^bench = \[", (ROOT / "pyproject.toml").read_text(), re.M)
