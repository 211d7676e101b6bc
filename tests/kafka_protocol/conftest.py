"""Real clusters (tests/cluster/conftest.py's fixtures) for the Kafka-protocol tests."""

from tests.cluster.conftest import cluster, make_cluster  # noqa: F401
