"""Failed records, against the fake cluster of tests/client (a broker answering every produce
with an error): counted apart from the records sent, reported, and the command fails."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from minikafka.cli.main import cli
from minikafka.protocol import messages as m
from minikafka.protocol.errors import ErrorCode
from tests.client.fake_broker import ThreadedCluster, produce_error
from tests.perf.patterns import PRODUCE_FINAL


@pytest.fixture
def threaded() -> Iterator[ThreadedCluster]:
    t = ThreadedCluster(3)
    yield t
    t.close()


def test_failed_records_are_not_counted_as_sent_and_fail_the_command(
    threaded: ThreadedCluster,
) -> None:
    threaded.call(lambda: threaded.cluster.create_topic("t", partitions=1))
    threaded.call(
        lambda: threaded.cluster.inject(
            m.ProduceRequest, produce_error(ErrorCode.INVALID_REQUIRED_ACKS), times=100
        )
    )
    args = ["perf", "produce", "--bootstrap-server", threaded.cluster.bootstrap]
    args += ["--topic", "t", "--num-records", "5", "--record-size", "10", "--throughput", "-1"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    (final,) = result.stdout.splitlines()
    match = PRODUCE_FINAL.match(final)
    assert match is not None and match.group(1) == "0", final
    assert "Error: 5 of 5 records failed; first: " in result.stderr
    assert "InvalidRequiredAcksError: INVALID_REQUIRED_ACKS" in result.stderr
