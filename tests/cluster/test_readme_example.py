"""The README's Python examples, run as written against a real 3-broker cluster (only
their bootstrap address is this cluster's): confluent-kafka, an unmodified Kafka client.
Each creates its topic, produces ten records with acks=all and prints all ten back; run
twice, the second time the topic exists already."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cluster.conftest import ClusterFactory
from tests.readme import block

BOOTSTRAP_LINE = 'bootstrap = "localhost:9092,localhost:9093,localhost:9094"'
# (the README's block, what it prints per record i: key and value)
EXAMPLES = {
    "confluent-kafka": ("Kafka clients#0", "user-{k}", "hello {i}"),
}
TOPIC_CONFIG_EXAMPLE = "Kafka clients#1"


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_the_readme_python_examples_run_as_written(
    make_cluster: ClusterFactory, example: str
) -> None:
    block_id, key, value = EXAMPLES[example]
    cluster = make_cluster(3)
    code = block(block_id).text
    assert BOOTSTRAP_LINE in code
    code = code.replace(BOOTSTRAP_LINE, f'bootstrap = "{cluster.bootstrap_servers}"')
    produced = {f"b'{key.format(k=i % 3)}' b'{value.format(i=i)}'" for i in range(10)}
    for run in (1, 2):  # twice: the second time the topic exists already
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        printed = [line.split(" ", 2)[2] for line in done.stdout.splitlines()]
        if run == 1:
            assert sorted(printed) == sorted(produced)  # all ten, each once
        else:
            # From the beginning again over 20 records: it stops at ten or more (whole
            # polls), which may all come from some partitions; each is one of the example's.
            assert len(printed) >= 10 and set(printed) <= produced


def test_the_readme_topic_config_example_changes_the_topic(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(3)
    bootstrap = f'bootstrap = "{cluster.bootstrap_servers}"'
    for block_id in (EXAMPLES["confluent-kafka"][0], TOPIC_CONFIG_EXAMPLE):
        code = block(block_id).text
        assert BOOTSTRAP_LINE in code
        done = subprocess.run(
            [sys.executable, "-c", code.replace(BOOTSTRAP_LINE, bootstrap)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    described = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert described["retention.ms"] == "3600000 1"  # the topic's own (source 1)
    assert cluster.zk_client().get_topic_config("greetings") == {"retention.ms": "3600000"}
