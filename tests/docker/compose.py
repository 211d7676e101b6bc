"""What the Docker tests share: the engine check that skips (or fails, in CI) and the
compose cluster of minikafka.cluster.compose."""

from __future__ import annotations

import os

import pytest

from minikafka.cluster.compose import (
    BROKERS,
    GROW_BROKERS,
    GROW_PROFILE,
    REPOSITORY,
    SPARK_PROFILE,
    SPARK_SERVICES,
    SPARK_VOLUME,
    ComposeCluster,
    docker_problem,
    wait_for,
)

CHAOS_SCRIPT = REPOSITORY / "scripts" / "docker-chaos.sh"
# .ci/run sets it: there the engine is part of the machine, and a skip would hide a failure.
REQUIRED_ENV = "MINIKAFKA_DOCKER_TESTS"

__all__ = [
    "BROKERS",
    "CHAOS_SCRIPT",
    "GROW_BROKERS",
    "GROW_PROFILE",
    "SPARK_PROFILE",
    "SPARK_SERVICES",
    "SPARK_VOLUME",
    "ComposeCluster",
    "require_engine",
    "wait_for",
]


def require_engine() -> None:
    problem = docker_problem()
    if problem is None:
        return
    if os.environ.get(REQUIRED_ENV) == "required":
        pytest.fail(f"the Docker tests must run here ({REQUIRED_ENV}=required): {problem}")
    pytest.skip(f"the Docker tests need a Docker Engine with Compose v2: {problem}")
