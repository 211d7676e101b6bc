"""Real clusters (tests/cluster/conftest.py's fixtures) for the security tests; the modules
that share one secured cluster define their own module-scoped `cluster`."""

from tests.cluster.conftest import make_cluster  # noqa: F401
