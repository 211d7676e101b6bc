"""The broker's ACLs in ZooKeeper: the ZooKeeper half of Kafka's AclAuthorizer (2.8), around
the sans-IO cache and decisions of security/authorizer.py.

- **Start** (AclAuthorizer.configure): the ACL znodes are created if missing
  (createAclPaths), every pattern's ACLs are read into the cache with their znode versions
  (loadCache), and both change stores are watched (startZkChangeListeners); the broker does
  all of it before its listeners open, so no request is decided on an empty cache.
- **Changes from elsewhere** (processAclChangeNotification): a persistent sequential znode
  under `/kafka-acl-changes` (LITERAL patterns) or `/kafka-acl-extended-changes` (PREFIXED)
  names a pattern whose ACLs changed; the broker reads that pattern's znode again and puts
  what it holds in its cache. Notifications are handled as ZkNodeChangeNotificationListener
  handles them: every one newer than the last handled, one batch at a time on the event
  loop, starting from the first at start; one that cannot be read is logged and skipped;
  those older than 15 minutes are purged by whichever broker sees them.
- **CreateAcls and DeleteAcls** (createAcls, deleteAcls, updateResourceAcls): per pattern, the
  new ACLs are computed from the current ones (the cache's, at the znode version they were
  read at, or else ZooKeeper's) with the authorizer's planning helpers, then written
  conditionally on that version (the znode created, set, or deleted when no ACL remains).
  A lost race reads the znode again and computes again, up to 10 retries 100-150 ms apart.
  The cache takes what was written at once, then, if the ACLs changed, a change
  notification tells every broker. A pattern that cannot be written fails the creations or
  deletions on it with UNKNOWN_SERVER_ERROR; the others are unaffected.

Kafka holds one lock over a whole CreateAcls, DeleteAcls or notification; here one
asyncio lock does, so that a notification's read never lands in the cache over a newer
write of this broker's.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple, Protocol

from minikafka.protocol.errors import ErrorCode
from minikafka.security.acl_zk import (
    ACL_CHANGE_EXPIRATION_MS,
    ACL_CHANGE_PREFIX,
    AclChangeStore,
    acl_path,
    acl_paths,
    acl_store_path,
    change_notification,
    decode_acls,
    encode_acls,
    pattern_from_notification,
    pattern_from_path,
)
from minikafka.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclError,
    ResourcePattern,
)
from minikafka.security.authorizer import (
    AclAuthorizer,
    acls_after_create,
    acls_after_delete,
    group_by_pattern,
)
from minikafka.security.operations import PatternType
from minikafka.zk import change_notifications
from minikafka.zk.bridge import LoopBridge
from minikafka.zk.change_notifications import scan_notifications
from minikafka.zk.client import Watch, ZkError

log = logging.getLogger(__name__)

# AclAuthorizer.maxUpdateRetries, retryBackoffMs and retryBackoffJitterMs.
MAX_UPDATE_RETRIES: Final = 10
RETRY_BACKOFF_MS: Final = 100
RETRY_BACKOFF_JITTER_MS: Final = 50
# How long to wait before reading the notifications again after ZooKeeper failed us.
_RETRY_READ_S: Final = 1.0


class AclZkStore(Protocol):
    """The ZooKeeper operations the ACL store needs: `ZkClient`'s (zk/acls.py), blocking,
    called from worker threads; in memory in the unit tests."""

    def create_acl_paths(self, paths: Iterable[str]) -> None: ...

    def get_acl_znodes(self, store_roots: Iterable[str]) -> dict[str, tuple[bytes, int]]: ...

    def get_acl_znodes_at(self, paths: Iterable[str]) -> dict[str, tuple[bytes, int]]: ...

    def create_acl_znode(self, path: str, data: bytes) -> bool: ...

    def set_acl_znode(self, path: str, data: bytes, expected_version: int) -> int | None: ...

    def delete_acl_znode(self, path: str, expected_version: int | None) -> bool: ...

    def create_acl_change_notification(self, sequence_prefix: str, data: bytes) -> str: ...

    def get_acl_change_notifications(
        self, change_path: str, prefix: str
    ) -> dict[str, tuple[bytes, int]]: ...

    def delete_acl_change_notifications(self, change_path: str, names: Iterable[str]) -> None: ...

    def watch_children(self, path: str, cb: Callable[[list[str]], None]) -> Watch: ...


class AclUpdateFailedError(Exception):
    """A pattern's znode kept changing under every retry (Kafka's IllegalStateException
    "Failed to update ACLs for ... after trying a maximum of 10 times")."""


@dataclass(frozen=True, slots=True)
class DeletedAcl:
    """An ACL a DeleteAcls filter matched, and the error of its deletion, if any."""

    binding: AclBinding
    error: AclError | None = None


def notification_sequence(name: str) -> int:
    """The sequence number ZooKeeper appended to `acl_changes_`; -1 if there is none."""
    return change_notifications.notification_sequence(name, ACL_CHANGE_PREFIX)


class AclChangePlan(NamedTuple):
    patterns: list[ResourcePattern]  # whose ACLs to read again, in notification order
    last_sequence: int  # the newest notification handled
    purge: list[str]  # notifications old enough to delete


def plan_acl_changes(
    store: AclChangeStore,
    notifications: Mapping[str, tuple[bytes, int]],
    last_sequence: int,
    now_ms: int,
    expiration_ms: int = ACL_CHANGE_EXPIRATION_MS,
) -> AclChangePlan:
    """What to do about a change store's notifications (name -> (data, ctime in ms)), as
    ZkNodeChangeNotificationListener.processNotifications: each one newer than
    `last_sequence` names a pattern (one that does not is logged and skipped, as Kafka
    does); every one older than `expiration_ms` is purged."""
    scan = scan_notifications(
        notifications, ACL_CHANGE_PREFIX, last_sequence, now_ms, expiration_ms
    )
    patterns: dict[ResourcePattern, None] = {}
    for name, data in scan.new:
        try:
            patterns[pattern_from_notification(store, data)] = None
        except ValueError as e:
            log.error(
                "error processing ACL change notification %s/%s (%r): %s",
                store.path,
                name,
                data,
                e,
            )
    return AclChangePlan(list(patterns), scan.last_sequence, scan.purge)


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError both
        return False
    return True


def decode_znode(path: str, data: bytes) -> frozenset[AccessControlEntry]:
    """A pattern's ACLs from its znode's data. Kafka's ResourceZNode.decode reads data that
    is not JSON as no ACLs; anything else it cannot read is a ValueError naming the znode."""
    try:
        return decode_acls(data)
    except ValueError as e:
        if not _is_json(data):
            log.warning("%s does not hold JSON: read as no ACLs, as Kafka reads it", path)
            return frozenset()
        raise ValueError(f"{path}: {e}") from e


def _backoff_s() -> float:
    return (RETRY_BACKOFF_MS + random.randrange(RETRY_BACKOFF_JITTER_MS)) / 1000


class AclStore:
    """The broker's ACL cache (an AclAuthorizer) kept as ZooKeeper has it, and the writes
    of CreateAcls and DeleteAcls."""

    def __init__(
        self,
        zk: AclZkStore,
        authorizer: AclAuthorizer,
        *,
        max_update_retries: int = MAX_UPDATE_RETRIES,
        backoff_s: Callable[[], float] = _backoff_s,
        wall_clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.zk = zk
        self.authorizer = authorizer
        self.max_update_retries = max_update_retries
        self._backoff_s = backoff_s
        self.wall_clock_ms = wall_clock_ms  # ZooKeeper's ctimes are wall-clock times
        # The znode version each cached pattern's ACLs were read or written at (Kafka's
        # VersionedAcls.zkVersion): the version a write from the cache is conditional on.
        self.versions: dict[ResourcePattern, int] = {}
        self.last_sequence: dict[AclChangeStore, int] = dict.fromkeys(AclChangeStore, -1)
        self._lock = asyncio.Lock()
        self._pending: set[AclChangeStore] = set()
        self._wanted = asyncio.Event()
        self._watches: list[Watch] = []
        self._task: asyncio.Task[None] | None = None

    # --- the cache ---------------------------------------------------------------------

    def _update_cache(
        self, pattern: ResourcePattern, acls: frozenset[AccessControlEntry], version: int | None
    ) -> None:
        """Kafka's updateCache: the pattern's ACLs are now `acls`, read or written at
        `version` (None, or no ACLs: the pattern leaves the cache)."""
        if acls and version is not None:
            self.authorizer.update(pattern, acls)
            self.versions[pattern] = version
        else:
            self.authorizer.remove(pattern)
            self.versions.pop(pattern, None)

    async def load(self) -> None:
        """Create the ACL znodes if missing, then read every pattern's ACLs into the cache
        (createAclPaths, loadCache). A znode under an unknown resource type is skipped, as
        Kafka skips it; one whose ACLs cannot be read is a ValueError, and the broker does
        not start, as Kafka's would not."""
        await asyncio.to_thread(self.zk.create_acl_paths, acl_paths())
        roots = [acl_store_path(t) for t in (PatternType.LITERAL, PatternType.PREFIXED)]
        znodes = await asyncio.to_thread(self.zk.get_acl_znodes, roots)
        async with self._lock:
            for path, (data, version) in sorted(znodes.items()):
                try:
                    pattern = pattern_from_path(path)
                except ValueError as e:
                    log.warning("ignoring ACL znode %s: %s", path, e)
                    continue
                self._update_cache(pattern, decode_znode(path, data), version)
        log.info(
            "ACL cache loaded: %d ACLs of %d resource patterns",
            len(self.authorizer.acls()),
            len(self.authorizer),
        )

    async def refresh(self, patterns: Sequence[ResourcePattern]) -> None:
        """Read these patterns' ACLs again, as changed elsewhere (processAclChangeNotification).
        A znode that cannot be read leaves the pattern's cached ACLs as they were."""
        async with self._lock:
            await self._refresh(patterns)

    async def _refresh(self, patterns: Sequence[ResourcePattern]) -> None:
        paths = {acl_path(p): p for p in patterns}
        got = await asyncio.to_thread(self.zk.get_acl_znodes_at, list(paths))
        for path, pattern in paths.items():
            if path not in got:
                acls: frozenset[AccessControlEntry] = frozenset()
                version: int | None = None
            else:
                data, version = got[path]
                try:
                    acls = decode_znode(path, data)
                except ValueError as e:
                    log.error("error processing the ACL change of %s: %s", pattern, e)
                    continue
            log.info(
                "processing ACL change notification for %s: %d ACLs, zk version %s",
                pattern,
                len(acls),
                version,
            )
            self._update_cache(pattern, acls, version)

    # --- the change notifications ------------------------------------------------------

    async def start(self, bridge: LoopBridge) -> None:
        """Watch both change stores; the first batch holds every notification there is."""
        self._task = asyncio.create_task(self._run(), name="acl-changes")
        for store in AclChangeStore:
            self._watches.append(
                await asyncio.to_thread(
                    self.zk.watch_children, store.path, bridge.wrap(self._on_children(store))
                )
            )

    def _on_children(self, store: AclChangeStore) -> Callable[[list[str]], None]:
        def changed(children: list[str]) -> None:
            self._pending.add(store)
            self._wanted.set()

        return changed

    async def stop(self) -> None:
        for watch in self._watches:
            watch.cancel()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            await self._wanted.wait()
            self._wanted.clear()
            while self._pending:
                store = min(self._pending, key=lambda s: s.path)
                self._pending.discard(store)
                try:
                    await self.process_notifications(store)
                except ZkError as e:
                    # The watch fires again when the session is back; until then, try later.
                    log.warning("cannot read the ACL change notifications of %s: %s", store, e)
                    await asyncio.sleep(_RETRY_READ_S)
                    self._pending.add(store)

    async def process_notifications(self, store: AclChangeStore) -> None:
        """One batch: the store's notifications newer than the last handled, then the purge."""
        notifications = await asyncio.to_thread(
            self.zk.get_acl_change_notifications, store.path, ACL_CHANGE_PREFIX
        )
        plan = plan_acl_changes(
            store, notifications, self.last_sequence[store], self.wall_clock_ms()
        )
        if plan.patterns:
            await self.refresh(plan.patterns)
        self.last_sequence[store] = plan.last_sequence
        if plan.purge:
            await asyncio.to_thread(self.zk.delete_acl_change_notifications, store.path, plan.purge)

    # --- CreateAcls and DeleteAcls -----------------------------------------------------

    async def _read(
        self, pattern: ResourcePattern
    ) -> tuple[frozenset[AccessControlEntry], int | None]:
        """getAclsFromZk: the pattern's ACLs and znode version (None: no znode)."""
        path = acl_path(pattern)
        got = (await asyncio.to_thread(self.zk.get_acl_znodes_at, [path])).get(path)
        if got is None:
            return frozenset(), None
        data, version = got
        return decode_znode(path, data), version

    async def _write(
        self,
        pattern: ResourcePattern,
        acls: frozenset[AccessControlEntry],
        expected_version: int | None,
    ) -> tuple[bool, int | None]:
        """One conditional write: (done, the znode's new version, None once deleted)."""
        path = acl_path(pattern)
        if not acls:
            return await asyncio.to_thread(self.zk.delete_acl_znode, path, expected_version), None
        data = encode_acls(acls)
        if expected_version is None:
            return await asyncio.to_thread(self.zk.create_acl_znode, path, data), 0
        version = await asyncio.to_thread(self.zk.set_acl_znode, path, data, expected_version)
        return version is not None, version

    async def update_resource_acls(
        self,
        pattern: ResourcePattern,
        new_acls: Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]],
    ) -> bool:
        """Kafka's updateResourceAcls: write `new_acls(current)` conditionally on the version
        `current` was read at, reading again and retrying on a lost race; then the cache
        takes it, and a change notification goes out if the ACLs changed. Returns whether
        they did. The caller holds the lock."""
        if pattern in self.authorizer:
            current, version = self.authorizer.get(pattern), self.versions.get(pattern)
        else:
            current, version = await self._read(pattern)
        retries = 0
        while True:
            acls = new_acls(current)
            done, new_version = await self._write(pattern, acls, version)
            if done:
                break
            if retries >= self.max_update_retries:
                raise AclUpdateFailedError(
                    f"Failed to update ACLs for {pattern} after trying a maximum of "
                    f"{self.max_update_retries} times"
                )
            retries += 1
            log.debug(
                "failed to update ACLs for %s at version %s; reading them and retrying",
                pattern,
                version,
            )
            await asyncio.sleep(self._backoff_s())
            current, version = await self._read(pattern)
        self._update_cache(pattern, acls, new_version)
        if acls == current:
            log.debug("updated ACLs for %s: no change was made", pattern)
            return False
        log.info("updated ACLs for %s with new version %s", pattern, new_version)
        await asyncio.to_thread(
            self.zk.create_acl_change_notification, *change_notification(pattern)
        )
        return True

    async def create_acls(
        self, creations: Sequence[AclBinding | AclError]
    ) -> list[AclError | None]:
        """CreateAcls, after `validate_acl_creations`: each creation's error, None for one
        created (or there already). Each pattern's znode is written once for all of its
        creations, which succeed or fail together (AclAuthorizer.createAcls)."""
        results: list[AclError | None] = [c if isinstance(c, AclError) else None for c in creations]
        async with self._lock:
            for pattern, indexes in group_by_pattern(creations).items():
                entries = [c.entry for i in indexes if isinstance(c := creations[i], AclBinding)]
                try:
                    await self.update_resource_acls(pattern, _adding(entries))
                except Exception as e:
                    # Kafka: any failure is the ApiException of the pattern's creations, an
                    # UNKNOWN_SERVER_ERROR without a message.
                    log.warning("failed to create ACLs for %s: %s", pattern, e, exc_info=True)
                    for i in indexes:
                        results[i] = AclError(ErrorCode.UNKNOWN_SERVER_ERROR, None)
        return results

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[list[DeletedAcl]]:
        """DeleteAcls, after `check_acl_filters_request`: the ACLs each filter deleted (each
        under the first filter that matched it), each with the error of its pattern's write
        if that failed (AclAuthorizer.deleteAcls)."""
        deleted: dict[AclBinding, int] = {}
        errors: dict[AclBinding, AclError] = {}
        async with self._lock:
            for pattern in self.authorizer.delete_candidates(filters):
                if pattern not in self.authorizer and not _has_znode_path(pattern):
                    continue  # a name no znode can have holds no ACLs
                # Kafka records what each attempt deletes, under the first filter recorded.
                being_deleted: dict[AclBinding, int] = {}
                remaining = _deleting(pattern, filters, (deleted, being_deleted))
                try:
                    await self.update_resource_acls(pattern, remaining)
                except Exception as e:
                    log.warning("failed to delete ACLs of %s: %s", pattern, e, exc_info=True)
                    for binding in being_deleted:
                        errors.setdefault(binding, AclError(ErrorCode.UNKNOWN_SERVER_ERROR, None))
        out: list[list[DeletedAcl]] = [[] for _ in filters]
        for binding in sorted(deleted, key=AclBinding.sort_key):
            out[deleted[binding]].append(DeletedAcl(binding, errors.get(binding)))
        return out


def _adding(
    entries: Sequence[AccessControlEntry],
) -> Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]]:
    return lambda current: acls_after_create(current, entries)


def _deleting(
    pattern: ResourcePattern,
    filters: Sequence[AclBindingFilter],
    records: tuple[dict[AclBinding, int], ...],
) -> Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]]:
    def remaining(current: frozenset[AccessControlEntry]) -> frozenset[AccessControlEntry]:
        left, gone = acls_after_delete(pattern, current, filters)
        for binding, index in gone.items():
            for record in records:
                record.setdefault(binding, index)
        return left

    return remaining


def _has_znode_path(pattern: ResourcePattern) -> bool:
    try:
        acl_path(pattern)
    except ValueError:
        return False
    return True
