from collections.abc import AsyncIterator

import pytest

from tests.client.fake_broker import FakeCluster


@pytest.fixture
async def cluster() -> AsyncIterator[FakeCluster]:
    c = FakeCluster(3)
    await c.start()
    yield c
    await c.stop()
