# Stub of the C extension minikafka/storage/_record_codec.c (Kafka's v2 records).
from collections.abc import Sequence

from typing_extensions import Buffer

class RecordDecodeError(ValueError): ...

def encode_record(
    out: bytearray,
    pos: int,
    offset_delta: int,
    timestamp_delta: int,
    key: Buffer | None,
    value: Buffer | None,
    headers: Sequence[tuple[str, Buffer | None]],
    /,
) -> int: ...
def decode_records(
    records: Buffer, base_offset: int, first_timestamp: int, log_append_time: int, count: int, /
) -> list[tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]]: ...
def check_records(records: Buffer, count: int, /) -> None: ...
