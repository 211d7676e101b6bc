"""The perf tools' cluster tests use the real-cluster fixtures (and failure reports) of
tests/cluster."""

from tests.cluster.conftest import make_cluster, pytest_runtest_makereport  # noqa: F401
