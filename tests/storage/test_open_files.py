"""The broker's cache of open segment files (storage/open_files.py): never more open than
its limit unless files in use force it, a file in use never closed, bytes read through a
re-opened file the same, EMFILE handled by closing idle files and trying once more."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from minikafka.storage.open_files import (
    FileClosedError,
    OpenFiles,
    TooManyOpenFilesError,
)


class FakeFile:
    """A file the cache manages, with a real descriptor of a real file."""

    def __init__(self, path: Path, fail_opens: int = 0, err: int = errno.EMFILE) -> None:
        self.path = path
        self._fd = -1
        self._closed = False
        self.opened = 0
        self.fail_opens = fail_opens  # fail this many opens with `err` first
        self.err = err

    def _open_file(self) -> int:
        if self.fail_opens:
            self.fail_opens -= 1
            raise OSError(self.err, os.strerror(self.err))
        self.opened += 1
        return os.open(self.path, os.O_RDONLY)

    def __repr__(self) -> str:
        return f"FakeFile({self.path.name})"


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


class CacheMachine(RuleBasedStateMachine):
    """Random pins, unpins, reads and closes of 6 files through a cache of 1 to 4."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp())
        self.files: list[FakeFile] = []
        for i in range(6):
            p = self.tmp / f"f{i}"
            p.write_bytes(f"file {i} ".encode() * (i + 1))
            self.files.append(FakeFile(p))
        self.cache: OpenFiles | None = None
        self.pins: dict[int, int] = {}  # file -> pins held
        self.pinned_fds: dict[int, int] = {}  # file -> descriptor seen when first pinned

    @rule(cap=st.integers(1, 4))
    @precondition(lambda self: self.cache is None)
    def make(self, cap: int) -> None:
        self.cache = OpenFiles(cap)

    @rule(i=st.integers(0, 5))
    @precondition(lambda self: self.cache is not None)
    def pin(self, i: int) -> None:
        assert self.cache is not None
        f = self.files[i]
        if f._closed and not self.pins.get(i):
            with pytest.raises(FileClosedError):
                self.cache.pin(f)
            return
        fd = self.cache.pin(f)
        if self.pins.get(i):
            assert fd == self.pinned_fds[i], "a pinned file kept its descriptor"
        self.pinned_fds[i] = fd
        self.pins[i] = self.pins.get(i, 0) + 1

    @rule(data=st.data())
    @precondition(lambda self: any(self.pins.values()))
    def unpin(self, data: st.DataObject) -> None:
        assert self.cache is not None
        i = data.draw(st.sampled_from(sorted(i for i, n in self.pins.items() if n)))
        self.cache.unpin(self.files[i])
        self.pins[i] -= 1

    @rule(i=st.integers(0, 5))
    @precondition(lambda self: self.cache is not None)
    def read(self, i: int) -> None:
        assert self.cache is not None
        f = self.files[i]
        if f._closed and not self.pins.get(i):
            return
        fd = self.cache.pin(f)
        try:
            assert os.pread(fd, 1 << 16, 0) == f.path.read_bytes()
        finally:
            self.cache.unpin(f)

    @rule(i=st.integers(0, 5))
    @precondition(lambda self: self.cache is not None)
    def close_for_good(self, i: int) -> None:
        assert self.cache is not None
        f = self.files[i]
        f._closed = True
        self.cache.close(f)

    @invariant()
    def bounded(self) -> None:
        if self.cache is None:
            return
        pinned = sum(1 for n in self.pins.values() if n)
        assert self.cache.pinned_count == pinned
        # Over the cap only as far as files in use force it.
        assert self.cache.open_count <= max(self.cache.max_open, pinned)
        really_open = [f for f in self.files if f._fd >= 0]
        assert len(really_open) <= max(self.cache.max_open, pinned)
        for i, n in self.pins.items():
            if n:
                f = self.files[i]
                assert f._fd == self.pinned_fds[i] and _is_open(f._fd), "pinned, never closed"
        for f in self.files:
            if f._closed and not self.pins.get(self.files.index(f)):
                assert f._fd == -1, "closed for good and not in use: no descriptor"

    def teardown(self) -> None:
        for f in self.files:
            if f._fd >= 0:
                os.close(f._fd)
        shutil.rmtree(self.tmp, ignore_errors=True)


CacheMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("MINIKAFKA_HYPOTHESIS_EXAMPLES", "150")),
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestCacheMachine = CacheMachine.TestCase


def test_the_least_recently_used_goes_first(tmp_path: Path) -> None:
    files = []
    for i in range(3):
        (tmp_path / str(i)).write_bytes(b"x")
        files.append(FakeFile(tmp_path / str(i)))
    cache = OpenFiles(2)
    for f in files[:2]:
        cache.pin(f)
        cache.unpin(f)
    cache.pin(files[0])  # 0 is now more recent than 1
    cache.unpin(files[0])
    cache.pin(files[2])
    cache.unpin(files[2])
    assert [f._fd >= 0 for f in files] == [True, False, True]
    assert cache.evictions == 1
    cache.pin(files[1])  # opened again
    cache.unpin(files[1])
    assert files[1].opened == 2 and cache.opens == 4


def test_files_in_use_keep_their_place_while_others_are_evicted(tmp_path: Path) -> None:
    files = {}
    for name in "abcde":
        (tmp_path / name).write_bytes(b"x")
        files[name] = FakeFile(tmp_path / name)
    cache = OpenFiles(3)
    cache.pin(files["a"])  # in use: the least recently used, but not to be closed
    for name in "bc":
        cache.pin(files[name])
        cache.unpin(files[name])
    cache.pin(files["d"])
    cache.unpin(files["d"])
    assert [name for name, f in files.items() if f._fd >= 0] == ["a", "c", "d"]
    cache.unpin(files["a"])
    cache.pin(files["e"])  # `a` is still the least recently used: it goes, not `c`
    cache.unpin(files["e"])
    assert [name for name, f in files.items() if f._fd >= 0] == ["c", "d", "e"]
    assert cache.evictions == 2


@pytest.mark.parametrize("err", [errno.EMFILE, errno.ENFILE])
def test_out_of_descriptors_closes_idle_files_and_tries_once_more(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, err: int
) -> None:
    files = []
    for i in range(4):
        (tmp_path / str(i)).write_bytes(b"x")
        files.append(FakeFile(tmp_path / str(i)))
    cache = OpenFiles(10)
    busy = files[0]
    cache.pin(busy)
    for f in files[1:3]:
        cache.pin(f)
        cache.unpin(f)
    files[3].fail_opens, files[3].err = 1, err
    with caplog.at_level(logging.WARNING):
        fd = cache.pin(files[3])
    assert _is_open(fd) and cache.retries == 1
    assert "closed 2 idle segment files" in caplog.text
    assert busy._fd >= 0, "a file in use is not closed"
    assert files[1]._fd == files[2]._fd == -1
    cache.unpin(files[3])

    # Failing again after the retry: the caller gets a clear error, the cache stays usable.
    files[1].fail_opens = 2
    with pytest.raises(TooManyOpenFilesError, match=r"log\.open\.files\.max 10") as e:
        cache.pin(files[1])
    assert e.value.errno == errno.EMFILE
    assert files[1]._fd == -1 and not cache.is_pinned(files[1])
    cache.pin(files[1])
    cache.unpin(files[1])
    cache.unpin(busy)


def test_other_open_errors_are_not_retried(tmp_path: Path) -> None:
    f = FakeFile(tmp_path / "missing")
    cache = OpenFiles(2)
    with pytest.raises(FileNotFoundError):
        cache.pin(f)
    assert cache.retries == 0 and cache.open_count == 0


def test_a_file_closed_in_use_is_closed_at_its_last_unpin(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"data")
    f = FakeFile(tmp_path / "f")
    cache = OpenFiles(1)
    fd = cache.pin(f)
    f._closed = True
    cache.close(f)
    assert os.pread(fd, 4, 0) == b"data", "still readable by the one that pinned it"
    assert cache.pin(f) == fd  # a nested pin of the same user still works
    cache.unpin(f)
    cache.unpin(f)
    assert f._fd == -1 and not _is_open(fd)
    with pytest.raises(FileClosedError):
        cache.pin(f)


def test_limit_must_be_positive() -> None:
    with pytest.raises(ValueError):
        OpenFiles(0)


def test_the_soft_limit_of_open_files_is_raised_to_the_hard_one() -> None:
    # In a child process: the test process's own limit stays as it is.
    code = """
import logging, resource, sys
from minikafka.storage.open_files import raise_open_files_limit
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
before, after = raise_open_files_limit()
print(before, after, resource.getrlimit(resource.RLIMIT_NOFILE)[0], hard)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    log_line, numbers = out.strip().splitlines()
    before, after, now, hard = (int(x) for x in numbers.split())
    assert before == 256 and after == now == hard
    assert f"soft 256 -> {hard}" in log_line
