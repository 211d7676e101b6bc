from pathlib import Path

import pytest

from minikafka.clock import ManualClock
from minikafka.storage.log import Log
from minikafka.storage.log_config import LogConfig
from minikafka.storage.record_batch import build_batch


def batch(n: int = 3, tag: str = "v", ts: int = 0) -> bytes:
    return build_batch([f"{tag}{i}".encode() for i in range(n)], timestamp=ts)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def small_config() -> LogConfig:
    return LogConfig(segment_bytes=1000, index_interval_bytes=100)


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "topic-0"


@pytest.fixture
def open_log(log_dir, small_config, clock):
    def _open(config: LogConfig | None = None, **kw) -> Log:
        return Log.open(log_dir, config or small_config, clock=clock, **kw)

    return _open
