"""Real clusters for tests: a real ZooKeeper and real broker processes on loopback ports.

`cluster` is a started 3-broker LocalCluster in `tmp_path`; `make_cluster(brokers=...,
overrides={...})` builds more (or other) ones. Every cluster is stopped at teardown; when a
test fails, the tails of its brokers' logs (and ZooKeeper's) are attached to the report.

Tests elsewhere can use these fixtures with
`from tests.cluster.conftest import cluster, make_cluster  # noqa: F401`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
import warnings
from collections.abc import Awaitable, Callable, Generator, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from minikafka.cluster import LocalCluster

# Short enough that failover tests take seconds, long enough for a loaded CI machine.
SESSION_TIMEOUT_MS = 6000
TEST_OVERRIDES: dict[str, str] = {
    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "controlled.shutdown.retry.backoff.ms": "200",
    "leader.imbalance.check.interval.seconds": "5",
    # Kafka's 50 cost every test whose consumer has a group.id (librdkafka looks up its
    # coordinator, which creates the topic); the group tests choose their own.
    "offsets.topic.num.partitions": "5",
}

ClusterFactory = Callable[..., LocalCluster]

_CLUSTERS = pytest.StashKey[list[LocalCluster]]()


@pytest.fixture
def make_cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ClusterFactory]:
    """`make_cluster(brokers=3, overrides=None, *, start=True, timeout=60, **kwargs)`: a
    LocalCluster on free loopback ports with the test overrides (yours win), ZooKeeper
    without fsync; extra keyword arguments go to LocalCluster."""
    clusters = request.node.stash.setdefault(_CLUSTERS, [])

    def make(
        brokers: int = 3,
        overrides: Mapping[str, str] | None = None,
        *,
        start: bool = True,
        timeout: float = 60.0,
        **kwargs: Any,
    ) -> LocalCluster:
        cluster = LocalCluster(
            tmp_path / f"cluster-{len(clusters)}",
            brokers,
            base_port=0,
            zookeeper_port=0,
            overrides={**TEST_OVERRIDES, **(overrides or {})},
            zookeeper_fsync=False,  # these tests are not about ZooKeeper's durability
            **kwargs,
        )
        clusters.append(cluster)
        if start:
            cluster.start(timeout=timeout)
        return cluster

    yield make
    failures = []
    for cluster in clusters:
        running = [bid for bid in cluster.broker_ids if cluster.is_alive(bid)]
        try:
            cluster.stop(timeout=30.0)
        except Exception as e:
            failures.append(f"stopping {cluster.data_dir} failed: {e!r}\n{cluster.log_tails()}")
            with contextlib.suppress(Exception):
                cluster.kill_all()
            continue
        # The broker's contract: SIGTERM -> controlled shutdown, clean close, exit 0.
        # A miss is worth seeing, but it is the broker's bug, not this test's.
        unclean = {bid: cluster.returncode(bid) for bid in running}
        unclean = {bid: code for bid, code in unclean.items() if code not in (0, None)}
        if unclean:
            warnings.warn(
                f"brokers exited uncleanly on SIGTERM (id: code): {unclean}; "
                f"logs in {cluster.data_dir}",
                stacklevel=1,
            )
    if failures:
        pytest.fail("\n".join(failures), pytrace=False)


@contextlib.contextmanager
def started_cluster(
    data_dir: Path, overrides: Mapping[str, str] | None = None, brokers: int = 3, **kwargs: Any
) -> Iterator[LocalCluster]:
    """A started cluster with the test overrides (yours win), stopped on exit: for a
    fixture shared by a module, where `make_cluster` (function-scoped) cannot serve. Extra
    keyword arguments go to LocalCluster."""
    cluster = LocalCluster(
        data_dir,
        brokers,
        base_port=0,
        zookeeper_port=0,
        overrides={**TEST_OVERRIDES, **(overrides or {})},
        zookeeper_fsync=False,
        **kwargs,
    )
    cluster.start(timeout=60)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster(make_cluster: ClusterFactory) -> LocalCluster:
    """A started 3-broker cluster (every broker registered, a controller elected)."""
    return make_cluster()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call" and report.failed:
        for cluster in item.stash.get(_CLUSTERS, []):
            report.sections.append((f"broker logs ({cluster.data_dir})", cluster.log_tails()))
    return report


def wait_until(
    condition: Callable[[], object], timeout: float = 10.0, what: str = "", interval: float = 0.05
) -> None:
    """Poll `condition` until it is truthy, or fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what or condition}")
        time.sleep(interval)


async def wait_until_async(
    condition: Callable[[], object | Awaitable[object]],
    timeout: float = 10.0,
    what: str = "",
    interval: float = 0.05,
) -> None:
    """`wait_until` for asyncio tests; `condition` may be a coroutine function."""

    async def check() -> object:
        result = condition()
        return await result if inspect.isawaitable(result) else result

    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what or condition}")
        await asyncio.sleep(interval)
