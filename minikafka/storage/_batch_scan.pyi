# Stub of the C extension minikafka/storage/_batch_scan.c.
from array import array
from collections.abc import Callable
from typing import Any

from typing_extensions import Buffer

from minikafka.storage.segment import LogAppendInfo

class BatchScanError(ValueError):
    args: tuple[str, int, str]  # (kind, position, detail)

def crc32c(data: Buffer, /) -> int: ...
def set_append_info_type(cls: type[tuple[Any, ...]], /) -> None: ...
def header_fields(
    buf: Buffer, pos: int, limit: int, max_batch_size: int = -1, /
) -> tuple[int, ...]: ...

class SegmentAppender:
    """The append side of a log segment (base class of LogSegment)."""

    _fd: int
    base_offset: int
    size: int
    next_offset: int
    index_interval_bytes: int
    _bytes_since_last_index_entry: int
    _first_batch_timestamp: int | None
    _largest_timestamp: int | None
    _index_offsets: array[int]
    _index_positions: array[int]
    created_ms: int
    def append_leader(
        self,
        buf: bytearray,
        leader_epoch: int,
        max_message_bytes: int,
        segment_bytes: int,
        segment_ms: int,
        now_ms: Callable[[], int],
        check_compressed: Callable[[bytearray, int], None],
        /,
    ) -> LogAppendInfo | None: ...
    def append_follower(
        self,
        buf: Buffer,
        latest_epoch: int,
        max_message_bytes: int,
        segment_bytes: int,
        segment_ms: int,
        now_ms: Callable[[], int],
        /,
    ) -> LogAppendInfo | None: ...
