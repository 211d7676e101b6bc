"""A broker's segment files open at once, at most `log.open.files.max` of them.

Kafka keeps every segment's file open for the life of the log; at tens of thousands of
partitions per broker that is more descriptors than a process may have. Here a segment opens
its file when it is used and this cache closes the least recently used ones beyond the
limit; the next use opens the file again (the descriptor is all a segment holds of it: its
size, offsets and index live in memory).

A file in use is *pinned* (`pin` / `unpin`, counted, from any thread): a pinned file is
never closed, so no descriptor is closed under a read, a write or an fsync in progress, nor
its number reused for another file meanwhile. While every open file is pinned, the cache
goes over the limit rather than fail; pins last one call (an append, a read, a flush), so
that excess is at most the calls running at once.

Closing an idle file loses nothing. Its writes are in the page cache of the file, not of
the descriptor, and fsync flushes the file whatever descriptor it is called on: the log's
flush policy fsyncs a file written through a descriptor closed since, when it is due, as it
would have through the old one (Linux reports a writeback error to the next fsync of the
file, even through a descriptor opened after the error). So a dirty file is neither fsynced
when it is closed (it would turn the eviction of a busy partition's active segment into a
disk sync on every turn of the cache) nor pinned until its flush (with the default flush
policy, fsync on roll only, every active segment would stay pinned, and the limit would
mean nothing).

When opening fails with EMFILE or ENFILE (the process or the system is out of
descriptors: sockets took them), the cache closes every idle file it holds and tries once
more; if that fails too, the caller gets `TooManyOpenFilesError`, an OSError that the
request paths answer with KAFKA_STORAGE_ERROR. It is not a disk failure: the log stays
as it was.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import threading
from collections import OrderedDict
from typing import Protocol

log = logging.getLogger(__name__)

# A broker's default: far below a usual limit of descriptors, leaving the rest to sockets.
DEFAULT_MAX_OPEN_FILES = 4096
_OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)


class CachedFile(Protocol):
    """What the cache needs of a file: its descriptor (-1 while closed), whether it is
    closed for good (set before `OpenFiles.close`), and how to open it."""

    _fd: int
    _closed: bool

    def _open_file(self) -> int:
        """Open the file; its descriptor (OSError if it cannot be opened)."""
        ...


class TooManyOpenFilesError(OSError):
    """No descriptor to open a segment file with, even after closing idle ones."""


class FileClosedError(OSError):
    """A segment closed for good (deleted, retired, replaced, its log closed) was used."""


class OpenFiles:
    """A bounded LRU cache of open files (see the module docstring). Thread-safe."""

    def __init__(self, max_open: int = DEFAULT_MAX_OPEN_FILES) -> None:
        if max_open < 1:
            raise ValueError(f"at least one open file is needed, not {max_open}")
        self.max_open = max_open
        self._lock = threading.Lock()
        # Open files, least recently used first.
        self._lru: OrderedDict[CachedFile, None] = OrderedDict()
        self._pins: dict[CachedFile, int] = {}
        # Closed for good while pinned: their descriptors go at their last unpin.
        self._closing: set[CachedFile] = set()
        self.opens = 0  # descriptors opened (first opens and re-opens)
        self.evictions = 0  # descriptors closed to stay within max_open
        self.retries = 0  # opens retried after EMFILE / ENFILE

    @property
    def open_count(self) -> int:
        """Descriptors held: the cached files', and those of files closed while in use."""
        return len(self._lru) + len(self._closing)

    @property
    def pinned_count(self) -> int:
        return len(self._pins)

    def is_pinned(self, f: CachedFile) -> bool:
        return f in self._pins

    def pin(self, f: CachedFile) -> int:
        """`f`'s descriptor, opened if it was closed, kept open until the matching `unpin`."""
        with self._lock:
            if f._closed and f not in self._pins:
                raise FileClosedError(errno.EBADF, f"{f} is closed")
            if f._fd < 0:
                f._fd = self._open(f)
                self._lru[f] = None
            elif f not in self._closing:
                self._lru.move_to_end(f)
            self._pins[f] = self._pins.get(f, 0) + 1
            self._evict()
            return f._fd

    def unpin(self, f: CachedFile) -> None:
        with self._lock:
            n = self._pins[f] - 1
            if n:
                self._pins[f] = n
                return
            del self._pins[f]
            if f in self._closing:
                self._closing.discard(f)
                self._close(f)
            else:
                self._evict()

    def close(self, f: CachedFile) -> None:
        """`f` is closed for good: its descriptor goes now, or at its last unpin."""
        with self._lock:
            if f in self._pins:
                self._closing.add(f)
                self._lru.pop(f, None)
            elif f in self._lru:
                del self._lru[f]
                self._close(f)

    def close_idle(self) -> int:
        """Close every open file not pinned; how many were."""
        with self._lock:
            return self._close_idle()

    # --- under the lock ----------------------------------------------------------------

    def _open(self, f: CachedFile) -> int:
        try:
            fd = f._open_file()
        except OSError as e:
            if e.errno not in _OUT_OF_DESCRIPTORS:
                raise
            self.retries += 1
            closed = self._close_idle()
            log.warning(
                "out of file descriptors opening %s (%s): closed %d idle segment files, "
                "trying again",
                f,
                os.strerror(e.errno),
                closed,
            )
            try:
                fd = f._open_file()
            except OSError as e2:
                if e2.errno not in _OUT_OF_DESCRIPTORS:
                    raise
                raise TooManyOpenFilesError(
                    e2.errno,
                    f"cannot open {f}: {os.strerror(e2.errno)}, {len(self._lru)} segment "
                    f"files open and {len(self._pins)} in use (log.open.files.max "
                    f"{self.max_open}); the rest of the process's descriptors are taken",
                ) from e2
        self.opens += 1
        return fd

    def _evict(self) -> None:
        excess = len(self._lru) + len(self._closing) - self.max_open
        if excess <= 0:
            return
        # From the least recently used end, without copying the whole cache: a full cache
        # evicts at every pin of a closed file (each new log's), and a copy of 10,000
        # entries each time was most of the cost of creating a log.
        skipped: list[CachedFile] = []
        while excess > 0 and self._lru:
            f, _ = self._lru.popitem(last=False)
            if f in self._pins:
                skipped.append(f)
                continue
            self._close(f)
            self.evictions += 1
            excess -= 1
        for f in reversed(skipped):  # pinned: back where they were, oldest first
            self._lru[f] = None
            self._lru.move_to_end(f, last=False)

    def _close_idle(self) -> int:
        idle = [f for f in self._lru if f not in self._pins]
        for f in idle:
            del self._lru[f]
            self._close(f)
        return len(idle)

    @staticmethod
    def _close(f: CachedFile) -> None:
        fd, f._fd = f._fd, -1
        if fd >= 0:
            try:
                os.close(fd)
            except OSError as e:  # the descriptor is gone all the same
                log.warning("closing %s: %s", f, e)


def raise_open_files_limit() -> tuple[int, int]:
    """Raise this process's soft limit of open files (RLIMIT_NOFILE) to its hard limit, as
    Kafka's start scripts expect an administrator to; logs and returns (before, after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    after = soft
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard
        if hard == resource.RLIM_INFINITY:
            # An unlimited hard limit cannot be the soft one: the kernel's ceiling can.
            target = _nr_open()
        if target > soft:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
                after = target
            except (ValueError, OSError) as e:
                log.warning("cannot raise the open files limit from %d to %d: %s", soft, target, e)
    log.info(
        "open files limit (RLIMIT_NOFILE): soft %d -> %d (hard %s)",
        soft,
        after,
        "unlimited" if hard == resource.RLIM_INFINITY else hard,
    )
    return soft, after


def _nr_open() -> int:
    try:
        with open("/proc/sys/fs/nr_open") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 1024 * 1024
