"""Every code block of the README has a test that runs it (tests/readme.py's RUNNERS), and
that test reads the block from the README rather than a copy of it."""

from __future__ import annotations

import ast
import re
import shlex

from tests import readme

SAMPLE = """intro
## First

```sh
one --a 1   # trailing comment
# a comment line
two \\
    --b 2 \\
    --c 3
    # an indented comment line
```

## Second

```python
print("x")
```

```sh
three
```
"""


def test_blocks_are_named_by_section_and_place() -> None:
    found = readme.blocks(SAMPLE)
    assert list(found) == ["First#0", "Second#0", "Second#1"]
    assert found["Second#0"].kind == "python" and found["Second#0"].text == 'print("x")\n'
    assert readme.commands(found["First#0"].text) == ["one --a 1", "two --b 2 --c 3"]
    assert readme.commands(found["Second#1"].text) == ["three"]


def test_every_block_has_a_runner_and_every_runner_a_block() -> None:
    in_readme = set(readme.blocks())
    assert in_readme, "no code blocks found in the README"
    assert sorted(in_readme - set(readme.RUNNERS)) == [], "README blocks no test runs"
    assert sorted(set(readme.RUNNERS) - in_readme) == [], "runners of blocks the README lost"


def test_each_runner_exists_and_reads_its_block_from_the_readme() -> None:
    for block_id, runner in readme.RUNNERS.items():
        path, _, name = runner.partition("::")
        source = (readme.ROOT / path).read_text()
        functions = {
            node.name
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        assert name in functions, f"{block_id}: {runner} does not exist"
        # The test file names the block it runs (readme.block("...")), so it runs the
        # README's text, whatever it says today.
        assert f'"{block_id}"' in source, f"{block_id}: {path} never reads it"


def test_the_spark_extra_is_what_scripts_test_installs() -> None:
    """The Spark section's install line installs the `spark` extra into the repository's
    venv; scripts/test (CI) installs that extra into the same venv, and every Spark test
    then runs on it."""
    (command,) = readme.commands(readme.block("Pipelines with Spark#0").text)
    argv = shlex.split(command)
    assert argv[:3] == [".venv/bin/pip", "install", "-e"]
    extras = re.fullmatch(r"\.\[(.*)\]", argv[3])
    assert extras is not None and extras.group(1) == "spark"
    pyproject = (readme.ROOT / "pyproject.toml").read_text()
    assert re.search(r"^spark = \[", pyproject, re.M), "pyproject.toml has no spark extra"
    script = (readme.ROOT / "scripts" / "test").read_text()
    assert re.search(r"pip install -q -e '\.\[[^]]*\bspark\b[^]]*\]'", script)
