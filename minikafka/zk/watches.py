"""Watches on znodes (`ZkClient.watch_*`), re-armed across reconnections and sessions, and
the `Watch` handle that stops them."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from minikafka.zk.errors import ZkNoNodeError, kazoo_errors
from minikafka.zk.session import ZkSession, log

__all__ = ["Watch", "ZnodeWatches"]


class Watch:
    """Handle of a watch set with `ZkClient.watch_*`; `cancel()` stops callbacks."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.cancelled = False

    def cancel(self) -> None:
        # kazoo's recipes stop re-arming when their function returns False, which ours do
        # from the next event on; ZooKeeper watches cannot be removed server-side here.
        self.cancelled = True


class ZnodeWatches(ZkSession):
    """Children, data and existence watches."""

    def watch_children(self, path: str, cb: Callable[[list[str]], None]) -> Watch:
        """`cb(children)` now (in this thread) and after every change (on kazoo's thread),
        re-armed across reconnections and new sessions. The znode must exist."""
        handle = Watch(path)
        fired = threading.Event()

        def on_children(children: list[str]) -> bool | None:
            if handle.cancelled:
                return False
            fired.set()
            try:
                cb(sorted(children))
            except Exception:
                log.exception("children watch callback for %s failed", path)
            return None

        with kazoo_errors(f"watch children of {path}"):
            ChildrenWatch(self._kazoo(), path, on_children)
        if not fired.is_set() and self._stat(path) is None:
            raise ZkNoNodeError(f"watch children of {path}: no such znode")
        return handle

    def watch_data(
        self, path: str, cb: Callable[[bytes | None], None], *, until_deleted: bool = False
    ) -> Watch:
        """`cb(data)` now and after every change, creation (data) or deletion (None).

        `until_deleted`: the watch ends with the znode: after the call for its deletion (or
        the first call, if it does not exist), nothing more, even if it is created again."""
        handle = Watch(path)

        def on_data(data: bytes | None, stat: Any) -> bool | None:
            if handle.cancelled:
                return False
            try:
                cb(None if stat is None else (data or b""))
            except Exception:
                log.exception("data watch callback for %s failed", path)
            if until_deleted and stat is None:
                handle.cancel()
                return False
            return None

        with kazoo_errors(f"watch {path}"):
            DataWatch(self._kazoo(), path, on_data)
        return handle

    def watch_exists(self, path: str, cb: Callable[[bool], None]) -> Watch:
        """`cb(exists)` now and after every creation, deletion or data change."""
        return self.watch_data(path, lambda data: cb(data is not None))
