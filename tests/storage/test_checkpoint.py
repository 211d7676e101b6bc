from pathlib import Path

import pytest

from minikafka.common import TopicPartition
from minikafka.storage.checkpoint import (
    CorruptCheckpointError,
    EpochEntry,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
)


def test_offset_checkpoint_kafka_text_format_and_round_trip(tmp_path):
    f = OffsetCheckpointFile(tmp_path / "replication-offset-checkpoint")
    f.write({TopicPartition("orders-eu", 1): 17, TopicPartition("orders-eu", 0): 42})
    assert (tmp_path / "replication-offset-checkpoint").read_text() == (
        "0\n2\norders-eu 0 42\norders-eu 1 17\n"
    )
    assert f.read() == {TopicPartition("orders-eu", 0): 42, TopicPartition("orders-eu", 1): 17}
    assert not list(tmp_path.glob("*.tmp"))


def test_missing_checkpoint_reads_empty(tmp_path):
    assert OffsetCheckpointFile(tmp_path / "nope").read() == {}
    assert LeaderEpochCheckpointFile(tmp_path / "nope").read() == []


def test_leader_epoch_checkpoint_round_trip(tmp_path):
    f = LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint")
    f.write([EpochEntry(0, 0), EpochEntry(3, 120)])
    assert f.path.read_text() == "0\n2\n0 0\n3 120\n"
    assert f.read() == [EpochEntry(0, 0), EpochEntry(3, 120)]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("", 1, "empty"),
        ("x\n", 1, "version"),
        ("1\n0\n", 1, "unsupported version"),
        ("0\n", 2, "count"),
        ("0\nabc\n", 2, "count"),
        ("0\n2\nt 0 1\n", 4, "expected 2 entries"),
        ("0\n1\nt 0\n", 3, "bad entry"),
        ("0\n1\nt x 5\n", 3, "bad entry"),
        ("0\n2\nt 0 1\nt 1 zz\n", 4, "bad entry"),
    ],
)
def test_corrupt_offset_checkpoint_names_file_and_line(tmp_path, text, line, fragment):
    p = tmp_path / "recovery-point-offset-checkpoint"
    p.write_text(text)
    with pytest.raises(CorruptCheckpointError) as ei:
        OffsetCheckpointFile(p).read()
    assert ei.value.line_no == line
    assert str(p) in str(ei.value) and f"line {line}" in str(ei.value)
    assert fragment in str(ei.value)


def test_corrupt_epoch_checkpoint_rejects_negative_entries(tmp_path):
    p = tmp_path / "leader-epoch-checkpoint"
    p.write_text("0\n1\n-1 5\n")
    with pytest.raises(CorruptCheckpointError) as ei:
        LeaderEpochCheckpointFile(p).read()
    assert ei.value.line_no == 3


def test_topic_partition_dir_names_with_dashes():
    assert TopicPartition.parse_dir_name("a-b-c-12") == TopicPartition("a-b-c", 12)
    for bad in ("nodash", "-3", "t-x", "t-"):
        with pytest.raises(ValueError):
            TopicPartition.parse_dir_name(bad)


# --- not rewritten when unchanged; deferred writes ----------------------------------------


def _identity(path):
    st = path.stat()
    return st.st_ino, st.st_mtime_ns


def test_offset_checkpoint_is_not_rewritten_when_unchanged(tmp_path):
    path = tmp_path / "replication-offset-checkpoint"
    f = OffsetCheckpointFile(path)
    offsets = {TopicPartition("t", p): p * 10 for p in range(100)}
    assert f.write(offsets) is True
    before = _identity(path)
    # Same offsets (another dict, as the periodic task builds each time): nothing written,
    # not even a temporary file (a rewrite replaces the inode: rename over the file).
    assert f.write(dict(offsets)) is False
    assert _identity(path) == before
    assert not list(tmp_path.glob("*.tmp"))

    offsets[TopicPartition("t", 7)] = 71
    assert f.write(offsets) is True
    assert _identity(path) != before
    assert f.read()[TopicPartition("t", 7)] == 71

    # Our last write does not count once the file is gone: written again.
    path.unlink()
    assert f.write(offsets) is True
    assert f.read() == offsets


def test_offsets_taken_earlier_never_overwrite_offsets_taken_later(tmp_path: Path) -> None:
    """A periodic checkpoint reads its offsets on the event loop and writes them in a
    thread; a shutdown's write may reach the file first. The later offsets stay."""
    f = OffsetCheckpointFile(tmp_path / "replication-offset-checkpoint")
    tp = TopicPartition("t", 0)
    assert f.write({tp: 20}, taken_ns=2_000)
    assert not f.write({tp: 10}, taken_ns=1_000)  # read before the 20 was
    assert f.read() == {tp: 20}
    assert f.write({tp: 30}, taken_ns=3_000)
    assert f.write({tp: 40})  # taken now
    assert f.read() == {tp: 40}
