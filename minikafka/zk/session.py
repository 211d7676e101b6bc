"""`ZkSession`: the session under `ZkClient`, a thin synchronous adapter over kazoo.

Every method blocks for a few ZooKeeper round trips; the broker calls them from a worker
thread (`asyncio.to_thread`). Each request waits at most `request_timeout_ms` for its reply
and then raises `ZkConnectionError`, so a broker cut off from ZooKeeper cannot pin its
worker threads forever (a timed-out write may still have been applied, as with any
connection loss). kazoo exceptions never escape: callers see the `Zk*Error` classes of
`minikafka.zk.errors`.

The session connects, reports its connection states, serves the raw reads and writes, and
gives the job modules (brokers, topics, configs, partition states, the controller's
znodes) their requests: single ones, pipelined batches and multis, fenced or not.

Fencing (design §8.1, §8.8): every controller write is one multi that starts with a
version check on `/controller_epoch`; a failed check raises `ControllerMovedError` and
nothing is applied.
"""

from __future__ import annotations

import contextlib
import logging
import struct
import threading
import time
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any, Self, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    AuthFailedError,
    BadArgumentsError,
    KazooException,
    MarshallingError,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
    UnimplementedError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState, KeeperState

from minikafka.zk import multi, paths
from minikafka.zk.auth import ZkClientAuth, default_acls
from minikafka.zk.errors import (
    ControllerMovedError,
    ZkAuthFailedError,
    ZkConnectionError,
    ZkError,
    ZkNodeExistsError,
    ZkNoNodeError,
    ZkRequestTooLargeError,
    kazoo_errors,
    translate,
)
from minikafka.zk.multi import JUTE_MAX_BUFFER, Op
from minikafka.zk.multi_read import MULTI_READ_PATHS, MultiRead

# ZkClient's one logger, whichever of its modules logs.
log = logging.getLogger("minikafka.zk.client")

K = TypeVar("K")

__all__ = ["ZkSession", "ZkState", "expire_session", "parse_connect_string"]


class ZkState(StrEnum):
    """Connection states as kazoo reports them. LOST means the session is gone (its ephemeral
    znodes are deleted); the CONNECTED that follows is a new session, on which a broker must
    register again and re-run the controller election."""

    CONNECTED = "CONNECTED"
    SUSPENDED = "SUSPENDED"
    LOST = "LOST"


def parse_connect_string(connect: str) -> tuple[str, str]:
    """`h1:2181,h2:2181/chroot` -> (`h1:2181,h2:2181`, `/chroot`); no chroot -> ''."""
    hosts, slash, chroot = connect.strip().partition("/")
    if not hosts:
        raise ValueError(f"zookeeper.connect has no host: {connect!r}")
    chroot = ("/" + chroot).rstrip("/") if slash else ""
    if "//" in chroot:
        raise ValueError(f"zookeeper.connect has an invalid chroot: {connect!r}")
    return hosts, chroot


class ZkSession:
    """A ZooKeeper session and its requests: what `ZkClient`'s jobs are built on."""

    def __init__(
        self,
        connect: str,
        session_timeout_ms: int = 18000,
        connection_timeout_ms: int | None = None,
        request_timeout_ms: int | None = None,
        auth: ZkClientAuth | None = None,
    ) -> None:
        self.connect = connect
        # SASL, TLS and zookeeper.set.acl (zk/auth.py); none: anonymous, open znodes.
        self.auth = auth or ZkClientAuth()
        self.hosts, self.chroot = parse_connect_string(connect)
        self.session_timeout_ms = session_timeout_ms
        # Kafka: zookeeper.connection.timeout.ms defaults to the session timeout.
        self.connection_timeout_ms = connection_timeout_ms or session_timeout_ms
        # Requests queued while disconnected are sent on reconnection or failed when the
        # session expires; by a session timeout one of those has normally happened.
        self.request_timeout_ms = request_timeout_ms or session_timeout_ms
        self._zk: Any = None
        # Whether the server answers multiRead (ZooKeeper 3.6+); None until first tried.
        self._multi_read: bool | None = None
        self._listeners: list[Callable[[ZkState], None]] = []

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Connect (creating the chroot first, as Kafka does) or raise ZkConnectionError."""
        if self._zk is not None:
            return
        if self.chroot:
            self._create_chroot()
        zk = self._new_kazoo(self.hosts + self.chroot)
        zk.add_listener(self._on_state)
        self._zk = zk  # before connecting: listeners may ask for session_id on CONNECTED
        try:
            self._start_kazoo(zk)
        except ZkConnectionError:
            self._zk = None
            raise

    def close(self) -> None:
        """Close the session: its ephemeral znodes (broker registration, /controller) vanish."""
        zk, self._zk = self._zk, None
        if zk is None:
            return
        with contextlib.suppress(Exception):
            zk.stop()
        with contextlib.suppress(Exception):
            zk.close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connected(self) -> bool:
        return self._zk is not None and bool(self._zk.connected)

    @property
    def session_id(self) -> int | None:
        """The current session's id (changes after LOST); None when not connected."""
        if self._zk is None or self._zk.client_id is None:
            return None
        return int(self._zk.client_id[0])

    @property
    def session_credentials(self) -> tuple[int, bytes] | None:
        """(session id, password): lets a test expire this session with `expire_session`."""
        if self._zk is None or self._zk.client_id is None:
            return None
        sid, password = self._zk.client_id
        return int(sid), bytes(password)

    def add_connection_listener(self, cb: Callable[[ZkState], None]) -> None:
        """`cb(state)` on every transition, on kazoo's connection thread: it must not block
        or call ZooKeeper (hand over with LoopBridge)."""
        self._listeners.append(cb)

    def ensure_persistent_paths(self) -> None:
        """Create Kafka's persistent top-level znodes if missing (ZkData.PersistentZkPaths)."""
        for path in paths.persistent_paths():
            self._ensure_path(self._kazoo(), path)

    # --- raw reads (tools, tests) ------------------------------------------------------

    def exists(self, path: str) -> bool:
        return self._stat(path) is not None

    def get_data(self, path: str) -> bytes | None:
        got = self._get(path)
        return None if got is None else got[0]

    def get_children(self, path: str) -> list[str]:
        """Sorted child names; [] if the znode does not exist."""
        return sorted(self._children(path, missing_ok=True))

    def stat(self, path: str) -> Any:
        """The znode's kazoo ZnodeStat (version, cversion, mtime, ...); None if missing."""
        return self._stat(path)

    def set_data(self, path: str, data: bytes, version: int = -1) -> int:
        """Overwrite a znode (conditionally when `version` >= 0); returns its new version."""
        stat = self._call(f"set {path}", self._kazoo().set_async(path, data, version))
        return int(stat.version)

    # --- requests, for ZkClient's jobs -------------------------------------------------

    def _acl(self, path: str) -> list[Any]:
        """The ACLs a znode this client creates at `path` gets (Kafka's defaultAcls)."""
        return default_acls(self.auth.secure_acls, path)

    def _create_async(self, path: str, data: bytes = b"", **kwargs: Any) -> Any:
        """kazoo's create_async with the znode's ACLs. With `makepath`, missing parents get
        the same ACLs: right for every parent minikafka lets kazoo make, since the only
        parent whose ACLs differ from its children's (`/config`) is a persistent path,
        created at start by `ensure_persistent_paths`."""
        return self._kazoo().create_async(path, data, acl=self._acl(path), **kwargs)

    def _ensure_path(self, zk: Any, path: str) -> None:
        """Create `path` and its missing parents, each with its own ACLs (Kafka's
        createRecursive; kazoo's ensure_path would give the parents the leaf's). Which
        levels exist is asked first: ZooKeeper checks the parent's ACL before whether the
        znode exists, so creating an existing znode under a parent this client may not
        write would fail (NoAuth) rather than find it there. Pipelined: two round trips."""
        parts = [p for p in path.split("/") if p]
        levels = ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]
        stats = [(level, zk.exists_async(level)) for level in levels]
        missing = [level for level, result in stats if self._call(f"stat {level}", result) is None]
        pending = [
            (level, zk.create_async(level, b"", acl=default_acls(self.auth.secure_acls, level)))
            for level in missing
        ]
        for level, result in pending:
            with contextlib.suppress(ZkNodeExistsError):
                self._call(f"create {level}", result)

    def _kazoo(self) -> Any:
        if self._zk is None:
            raise ZkConnectionError("ZkClient is not started (or already closed)")
        return self._zk

    def _new_kazoo(self, hosts: str) -> Any:
        return KazooClient(
            hosts=hosts,
            timeout=self.session_timeout_ms / 1000,
            # Reconnect quickly after a ZooKeeper restart (kazoo's default backs off to 60 s).
            connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
            **self.auth.kazoo_options(),
        )

    def _start_kazoo(self, zk: Any) -> None:
        try:
            zk.start(timeout=self.connection_timeout_ms / 1000)
            if self.auth.sasl is not None:
                # kazoo reports CONNECTED before its SASL exchange, and after a refused one
                # stops connecting (AUTH_FAILED) and fails what was queued. A first request,
                # sent once the exchange is over, tells which: a wrong password fails the
                # start at once with its reason, not later as a lost session.
                zk.exists_async("/").get(timeout=self.connection_timeout_ms / 1000)
        except (KazooTimeoutError, KazooException) as e:
            refused = isinstance(e, AuthFailedError) or zk.client_state == KeeperState.AUTH_FAILED
            with contextlib.suppress(Exception):
                zk.stop()
                zk.close()
            if refused:
                raise ZkAuthFailedError(
                    f"ZooKeeper at {self.hosts} refused this client's SASL authentication "
                    f"(DIGEST-MD5 as user {self.auth.username!r}): check the username and "
                    "password in the JAAS file's ZooKeeper client section (Client)"
                ) from e
            raise ZkConnectionError(
                f"cannot connect to ZooKeeper at {self.hosts} within "
                f"{self.connection_timeout_ms} ms"
            ) from e

    def _create_chroot(self) -> None:
        zk = self._new_kazoo(self.hosts)
        self._start_kazoo(zk)
        try:
            # As Kafka's makeSurePersistentPathExists, with the chroot's own ACLs.
            self._ensure_path(zk, self.chroot)
        finally:
            zk.stop()
            zk.close()

    def _on_state(self, state: str) -> None:
        mapped = {
            KazooState.CONNECTED: ZkState.CONNECTED,
            KazooState.SUSPENDED: ZkState.SUSPENDED,
            KazooState.LOST: ZkState.LOST,
        }.get(state)
        if mapped is None or self._zk is None:
            return  # after close(): its LOST is ours, not news for the listeners
        log.info("ZooKeeper connection %s", mapped.value)
        for cb in list(self._listeners):
            try:
                cb(mapped)
            except Exception:
                log.exception("ZooKeeper connection listener failed")

    def _wait(self, async_result: Any) -> Any:
        try:
            return async_result.get(timeout=self.request_timeout_ms / 1000)
        except KazooTimeoutError as e:
            raise ZkConnectionError(
                f"no reply from ZooKeeper within {self.request_timeout_ms} ms"
            ) from e

    def _call(self, what: str, async_result: Any) -> Any:
        with kazoo_errors(what):
            return self._wait(async_result)

    def _get(self, path: str) -> tuple[bytes, Any] | None:
        try:
            data, stat = self._call(f"read {path}", self._kazoo().get_async(path))
        except ZkNoNodeError:
            return None
        return bytes(data or b""), stat

    def _stat(self, path: str) -> Any:
        return self._call(f"stat {path}", self._kazoo().exists_async(path))

    def _children(self, path: str, missing_ok: bool = False) -> list[str]:
        try:
            return list(self._call(f"list {path}", self._kazoo().get_children_async(path)))
        except ZkNoNodeError:
            if missing_ok:
                return []
            raise

    def _int_children(self, path: str, missing_ok: bool = False) -> list[int]:
        out = []
        for name in self._children(path, missing_ok):
            if name.isdigit():
                out.append(int(name))
            else:
                log.warning("ignoring unexpected znode %s/%s", path, name)
        return out

    def _get_many(self, keyed_paths: Mapping[K, str]) -> dict[K, tuple[bytes, Any]]:
        """The data and stat of each znode that exists."""
        if len(keyed_paths) > 1 and self._multi_read is not False:
            got = self._get_many_by_multi_read(keyed_paths)
            if got is not None:
                return got
        # Pipelined: all requests are sent before the first reply is awaited.
        zk = self._kazoo()
        pending = {k: (p, zk.get_async(p)) for k, p in keyed_paths.items()}
        out: dict[K, tuple[bytes, Any]] = {}
        for k, (p, result) in pending.items():
            try:
                data, stat = self._call(f"read {p}", result)
            except ZkNoNodeError:
                continue
            out[k] = (bytes(data or b""), stat)
        return out

    def _get_many_by_multi_read(
        self, keyed_paths: Mapping[K, str]
    ) -> dict[K, tuple[bytes, Any]] | None:
        """`_get_many` in multiReads of MULTI_READ_PATHS paths, pipelined; None if the server
        does not know multiRead (before ZooKeeper 3.6), which is then not tried again."""
        zk = self._kazoo()
        items = list(keyed_paths.items())
        pending = []
        for i in range(0, len(items), MULTI_READ_PATHS):
            chunk = items[i : i + MULTI_READ_PATHS]
            result = zk.handler.async_result()
            # Our paths are absolute and normal: the chroot is a plain prefix.
            root = (zk.chroot or "").rstrip("/")
            zk._call(MultiRead([root + p for _, p in chunk]), result)
            pending.append((chunk, result))
        out: dict[K, tuple[bytes, Any]] = {}
        for chunk, result in pending:
            try:
                replies = self._wait(result)
            except (
                UnimplementedError,
                BadArgumentsError,
                MarshallingError,
                ValueError,
                struct.error,
            ) as e:
                # An older server refuses the op code, or answers it with no results.
                log.info("ZooKeeper does not answer multiRead (%r): reading one by one", e)
                self._multi_read = False
                return None
            except (KazooException, KazooTimeoutError) as e:
                raise translate(e, f"read {chunk[0][1]} and {len(chunk) - 1} more") from e
            self._multi_read = True
            for (k, p), reply in zip(chunk, replies, strict=True):
                if isinstance(reply, NoNodeError):
                    continue
                if isinstance(reply, Exception):
                    raise translate(reply, f"read {p}")
                data, stat = reply
                out[k] = (bytes(data or b""), stat)
        return out

    def _children_many(self, keyed_paths: Mapping[K, str]) -> dict[K, set[str]]:
        """Child names of each znode that exists (pipelined)."""
        zk = self._kazoo()
        pending = {k: (p, zk.get_children_async(p)) for k, p in keyed_paths.items()}
        out: dict[K, set[str]] = {}
        for k, (p, result) in pending.items():
            try:
                out[k] = set(self._call(f"list {p}", result))
            except ZkNoNodeError:
                continue
        return out

    def _exists_many(self, keyed_paths: Mapping[K, str]) -> set[K]:
        zk = self._kazoo()
        pending = {k: (p, zk.exists_async(p)) for k, p in keyed_paths.items()}
        return {k for k, (p, r) in pending.items() if self._call(f"stat {p}", r) is not None}

    def _subtree_leaves_first(self, root: str) -> list[str]:
        """Every znode under `root` (itself included), deepest level first, so that deleting
        them in this order never deletes a parent before its children. One pipelined round
        trip per level (a topic's tree: 4 levels, however many partitions)."""
        zk = self._kazoo()
        levels: list[list[str]] = []
        level = [root]
        while level:
            pending = [(p, zk.get_children_async(p)) for p in level]
            present: list[str] = []
            below: list[str] = []
            for p, result in pending:
                try:
                    children = self._call(f"list {p}", result)
                except ZkNoNodeError:
                    continue
                present.append(p)
                below += [f"{p}/{c}" for c in sorted(children)]
            levels.append(present)
            level = below
        return [p for lvl in reversed(levels) for p in lvl]

    def _chunks(self, ops: list[Op]) -> list[list[Op]]:
        """`ops` cut into multis for writes that need not be atomic (`multi.chunks`)."""
        return multi.chunks(ops, self.chroot)

    def _multi_async(self, ops: list[Op], fence_version: int | None) -> tuple[list[Op], Any]:
        if fence_version is not None:
            ops = [Op("check", paths.controller_epoch(), version=fence_version), *ops]
        size = sum(op.size(self.chroot) for op in ops)
        if size > JUTE_MAX_BUFFER:
            # ZooKeeper would drop the connection (ConnectionLoss, forever on retry).
            raise ZkRequestTooLargeError(
                f"a multi of {len(ops)} operations (about {size} bytes) is larger than "
                f"ZooKeeper's jute.maxbuffer ({JUTE_MAX_BUFFER} bytes); split it"
            )
        txn = self._kazoo().transaction()
        for op in ops:
            op.add_to(txn, self._acl(op.path) if op.kind == "create" else None)
        with kazoo_errors("multi"):
            return ops, txn.commit_async()

    def _finish_multi(self, ops: list[Op], async_result: Any, what: str) -> list[Any]:
        """Results of the multi's own ops (without the fence check), or the first real error:
        ZooKeeper reports the others as rolled back or not attempted."""
        results = self._call(what, async_result)
        fenced = bool(ops) and ops[0].kind == "check" and ops[0].path == paths.controller_epoch()
        for i, (op, result) in enumerate(zip(ops, results, strict=False)):
            if not isinstance(result, Exception) or isinstance(
                result, (RolledBackError, RuntimeInconsistency)
            ):
                continue
            if fenced and i == 0:
                raise ControllerMovedError(
                    f"{what}: {paths.controller_epoch()} is no longer at version {op.version}; "
                    "another controller has been elected"
                )
            raise translate(result, f"{what}: {op.kind} {op.path}")
        if any(isinstance(r, Exception) for r in results):
            raise ZkError(f"{what}: multi failed: {results!r}")
        return list(results[1:] if fenced else results)

    def _multi(self, ops: list[Op], fence_version: int | None, what: str) -> list[Any]:
        all_ops, result = self._multi_async(ops, fence_version)
        return self._finish_multi(all_ops, result, what)

    def _fenced_delete_existing(self, ops: list[Op], controller_epoch_zk_version: int) -> None:
        """Delete in fenced multis (one unless there are thousands), leaving out znodes
        someone already deleted."""
        for chunk in self._chunks(ops):
            remaining = chunk
            while remaining:
                try:
                    self._multi(remaining, controller_epoch_zk_version, "delete")
                    break
                except ZkNoNodeError:
                    present = self._exists_many({op.path: op.path for op in remaining})
                    if len(present) == len(remaining):
                        raise
                    remaining = [op for op in remaining if op.path in present]

    def _await_deletion(self, path: str, deadline: float) -> None:
        gone = threading.Event()

        def on_event(_event: Any) -> None:
            gone.set()

        with kazoo_errors(f"watch {path}"):
            stat = self._wait(self._kazoo().exists_async(path, watch=on_event))
        if stat is not None:
            gone.wait(max(0.0, deadline - time.monotonic()))


def expire_session(connect: str, credentials: tuple[int, bytes], timeout_s: float = 10.0) -> None:
    """Expire another client's session, for fault tests: attach to it with its id and
    password, then close it. The original client's next reconnection finds it expired."""
    hosts, _ = parse_connect_string(connect)
    zk = KazooClient(hosts=hosts, client_id=credentials)
    try:
        with kazoo_errors(f"attach to session 0x{credentials[0]:x}"):
            zk.start(timeout=timeout_s)
    finally:
        with contextlib.suppress(Exception):
            zk.stop()
            zk.close()
