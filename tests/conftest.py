"""How the suite runs on two workers (pytest-xdist, `scripts/test` passes `-n 2`).

Most integration tests wait (session timeouts, fault schedules, containers starting) far
more than they compute: run one after another they left the machine's two cores idle
two thirds of the time. Work goes to the workers a test module at a time, so a module's
shared cluster (a module-scoped fixture) is started once. The Docker and Spark tests are
one unit of their own, run in order on one worker: they share images, compose projects and
a Spark session, and each is the whole machine's load while its JVMs start. (CI's run,
`scripts/test` without arguments, runs them after the rest, alone: see scripts/test.)
"""

from __future__ import annotations

from typing import Any

import pytest

# Test directories whose modules run together, in order, on one worker.
ONE_WORKER = ("tests/docker/", "tests/spark/")
ONE_WORKER_SCOPE = "docker and spark"


def work_unit(nodeid: str) -> str:
    """The unit of work a test belongs to: its module, or the Docker and Spark unit."""
    if nodeid.startswith(ONE_WORKER):
        return ONE_WORKER_SCOPE
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return ByModule(config, log)
