"""ACL znodes and their change notifications: Kafka's KafkaZkClient ACL methods
(createAclPaths, getResourceTypes/getResourceNames with getVersionedAclsForResource,
createAclsForResourceIfNotExists, conditionalSetAclsForResource, conditionalDelete,
createAclChangeNotification) and what its ZkNodeChangeNotificationListener reads and purges.

Which znodes and which bytes are Kafka's layout, decided in `minikafka.security.acl_zk`
(`/kafka-acl/Topic/orders` and the like); this package may not import it (they are
siblings below the broker), so these methods take the paths and bytes it computes. The
writes are conditional on the znode's version and report a lost race as a result, not an
error, so that the caller reads again and retries, as Kafka's updateResourceAcls does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Final

from minikafka.zk.errors import ZkBadVersionError, ZkNodeExistsError, ZkNoNodeError
from minikafka.zk.session import ZkSession, log

__all__ = ["AclZnodes"]

# Kafka's ZkVersion.UnknownVersion: the version a pattern without a znode is read at. A
# conditional delete at it succeeds when the znode is absent and fails (BADVERSION) when
# someone created it meanwhile: no znode has a negative version, and -1 would match any.
UNKNOWN_VERSION: Final = -2


class AclZnodes(ZkSession):
    """ACLs by pattern (`<store root>/<resource type>/<name>`, JSON) and the sequential
    notifications of their changes."""

    def create_acl_paths(self, paths: Iterable[str]) -> None:
        """Create the ACL stores' znodes if missing (KafkaZkClient.createAclPaths)."""
        for path in paths:
            self._ensure_path(self._kazoo(), path)

    def get_acl_znodes(self, store_roots: Iterable[str]) -> dict[str, tuple[bytes, int]]:
        """Every ACL znode under the stores' roots, path -> (data, version): Kafka's loadCache
        (the resource types under each root, the names under each type, their data). One
        pipelined round trip per level."""
        roots = list(store_roots)
        types = self._children_many({r: r for r in roots})
        type_paths = [f"{r}/{t}" for r in roots for t in sorted(types.get(r, ()))]
        names = self._children_many({p: p for p in type_paths})
        znodes = [f"{p}/{n}" for p in type_paths for n in sorted(names.get(p, ()))]
        return self.get_acl_znodes_at(znodes)

    def get_acl_znodes_at(self, paths: Iterable[str]) -> dict[str, tuple[bytes, int]]:
        """path -> (data, version) of each of these ACL znodes that exists (pipelined):
        getVersionedAclsForResource of each."""
        got = self._get_many({p: p for p in paths})
        return {p: (data, int(stat.version)) for p, (data, stat) in got.items()}

    def create_acl_znode(self, path: str, data: bytes) -> bool:
        """Create a pattern's znode (at version 0); False if it exists already
        (createAclsForResourceIfNotExists)."""
        try:
            self._call(f"create {path}", self._create_async(path, data))
        except ZkNodeExistsError:
            return False
        return True

    def set_acl_znode(self, path: str, data: bytes, expected_version: int) -> int | None:
        """Overwrite a pattern's znode if it is still at `expected_version`: its new version,
        or None if it changed or is gone (conditionalSetAclsForResource)."""
        if expected_version < 0:
            raise ValueError(f"invalid version {expected_version} for a conditional update")
        try:
            stat = self._call(f"set {path}", self._kazoo().set_async(path, data, expected_version))
        except (ZkBadVersionError, ZkNoNodeError):
            return None
        return int(stat.version)

    def delete_acl_znode(self, path: str, expected_version: int | None) -> bool:
        """Delete a pattern's znode if it is still at `expected_version` (None: the pattern
        had no znode). True if it is gone, whoever deleted it; False if it changed (or
        appeared) meanwhile (KafkaZkClient.conditionalDelete)."""
        version = UNKNOWN_VERSION if expected_version is None else expected_version
        try:
            self._call(f"delete {path}", self._kazoo().delete_async(path, version))
        except ZkNoNodeError:
            return True
        except ZkBadVersionError:
            return False
        return True

    # --- change notifications ----------------------------------------------------------

    def create_acl_change_notification(self, sequence_prefix: str, data: bytes) -> str:
        """A persistent sequential znode at `sequence_prefix` (e.g.
        `/kafka-acl-changes/acl_changes_`) holding `data`; returns its path."""
        return str(
            self._call(
                f"notify an ACL change at {sequence_prefix}",
                self._create_async(sequence_prefix, data, sequence=True),
            )
        )

    def get_acl_change_notifications(
        self, change_path: str, prefix: str
    ) -> dict[str, tuple[bytes, int]]:
        """The notifications under `change_path` whose names start with `prefix`: name ->
        (data, creation time in ms), in name order (the sequence's)."""
        names = sorted(
            n for n in self._children(change_path, missing_ok=True) if n.startswith(prefix)
        )
        got = self._get_many({n: f"{change_path}/{n}" for n in names})
        # A notification purged between the listing and the read is left out.
        return {n: (got[n][0], int(got[n][1].ctime)) for n in names if n in got}

    def delete_acl_change_notifications(self, change_path: str, names: Iterable[str]) -> None:
        """Purge notifications (ZkNodeChangeNotificationListener.purgeObsoleteNotifications);
        ones already gone are fine."""
        for name in names:
            path = f"{change_path}/{name}"
            with contextlib.suppress(ZkNoNodeError):
                self._call(f"delete {path}", self._kazoo().delete_async(path))
            log.debug("purged ACL change notification %s", path)
