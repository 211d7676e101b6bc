"""Failed records, against real brokers refusing every batch (a topic whose
max.message.bytes is below the record size): counted apart from the records sent,
reported with librdkafka's error, and the command fails."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from minikafka.cli.main import cli
from tests.cluster.conftest import ClusterFactory
from tests.kafka_protocol.test_confluent_kafka import create_topic
from tests.perf.patterns import PRODUCE_FINAL

pytestmark = pytest.mark.timeout(120)


def test_failed_records_are_not_counted_as_sent_and_fail_the_command(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster()
    create_topic(cluster.bootstrap_servers, "t", 1, 3, **{"max.message.bytes": "200"})
    args = ["perf", "produce", "--bootstrap-server", cluster.bootstrap_servers]
    args += ["--topic", "t", "--num-records", "5", "--record-size", "1000", "--throughput", "-1"]
    args += ["--producer-property", "linger.ms=0"]  # one record per batch: five refusals
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    (final,) = result.stdout.splitlines()
    match = PRODUCE_FINAL.match(final)
    assert match is not None and match.group(1) == "0", final
    assert "Error: 5 of 5 records failed; first: MSG_SIZE_TOO_LARGE: " in result.stderr
