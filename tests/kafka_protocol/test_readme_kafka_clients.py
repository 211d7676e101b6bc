"""The README's confluent-kafka example, run as written against a real 3-broker cluster
(only its bootstrap address is this cluster's): it creates the topic, produces ten records
with acks=all and zstd, and prints all ten back."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.cluster.conftest import ClusterFactory

README = Path(__file__).resolve().parents[2] / "README.md"
BOOTSTRAP_LINE = 'bootstrap = "localhost:9092,localhost:9093,localhost:9094"'


def readme_kafka_client_example() -> str:
    text = README.read_text()
    start = text.index("## Kafka clients")
    block = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert block is not None
    return block.group(1)


def test_the_readme_confluent_kafka_example_runs_as_written(make_cluster: ClusterFactory) -> None:
    cluster = make_cluster(3)
    code = readme_kafka_client_example()
    assert BOOTSTRAP_LINE in code
    code = code.replace(BOOTSTRAP_LINE, f'bootstrap = "{cluster.bootstrap_servers}"')
    produced = {f"b'user-{i % 3}' b'click {i}'" for i in range(10)}
    for run in (1, 2):  # twice: the second time the topic exists already
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        printed = [line.split(" ", 2)[2] for line in done.stdout.splitlines()]
        if run == 1:
            assert sorted(printed) == sorted(produced)  # all ten, each once
        else:
            assert len(printed) >= 10 and set(printed) <= produced
