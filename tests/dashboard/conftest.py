"""Real clusters (tests/cluster/conftest.py's fixtures) for the dashboard's tests."""

from tests.cluster.conftest import cluster, make_cluster, pytest_runtest_makereport  # noqa: F401
