"""The operations of a ZooKeeper multi, and the size limits `ZkClient` keeps its multis to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "JUTE_MAX_BUFFER",
    "MULTI_CHUNK_BYTES",
    "MULTI_CHUNK_OPS",
    "Op",
    "chunks",
]

# ZooKeeper's jute.maxbuffer default (1 MiB - 1): a server drops the connection of a client
# whose request is larger, which the client sees as ConnectionLoss, retried forever.
JUTE_MAX_BUFFER = 0xFFFFF
# Writes that need not be atomic (deleting a topic's znodes, processed notifications) go in
# multis of at most this size, well below the limit.
MULTI_CHUNK_BYTES = 256 * 1024
MULTI_CHUNK_OPS = 2000
# Per operation of a multi, on top of its path and data: multi header, lengths, version or
# flags, and for a create the ACL (world:anyone), rounded up.
_OP_OVERHEAD_BYTES = 64


@dataclass(frozen=True, slots=True)
class Op:
    """One operation of a multi, kept so a failure can name its znode."""

    kind: str  # "create" | "set" | "delete" | "check"
    path: str
    data: bytes = b""
    version: int = -1
    ephemeral: bool = False

    def size(self, chroot: str = "") -> int:
        """Upper bound of its bytes in a multi request (kazoo prefixes the chroot)."""
        return _OP_OVERHEAD_BYTES + len(chroot) + len(self.path.encode()) + len(self.data)

    def add_to(self, txn: Any, acl: list[Any] | None = None) -> None:
        """Add to kazoo's transaction `txn`; `acl`: a create's ACLs (zk/auth.py)."""
        if self.kind == "create":
            txn.create(self.path, self.data, acl=acl, ephemeral=self.ephemeral)
        elif self.kind == "set":
            txn.set_data(self.path, self.data, version=self.version)
        elif self.kind == "delete":
            txn.delete(self.path, version=self.version)
        else:
            txn.check(self.path, self.version)


def chunks(ops: list[Op], chroot: str) -> list[list[Op]]:
    """`ops` in order, cut into multis of at most MULTI_CHUNK_OPS operations and about
    MULTI_CHUNK_BYTES (for writes that need not be atomic as a whole)."""
    out: list[list[Op]] = []
    current: list[Op] = []
    size = 0
    for op in ops:
        op_size = op.size(chroot)
        if current and (len(current) >= MULTI_CHUNK_OPS or size + op_size > MULTI_CHUNK_BYTES):
            out.append(current)
            current, size = [], 0
        current.append(op)
        size += op_size
    if current:
        out.append(current)
    return out
