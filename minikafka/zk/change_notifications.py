"""The scan of Kafka's ZkNodeChangeNotificationListener, shared by every change store
(`/config/changes`, `/kafka-acl-changes`, `/kafka-acl-extended-changes`): a store's
sequential children in sequence order, those newer than the last one processed, and
those old enough to purge. What a notification says is the caller's business."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Generic, NamedTuple, TypeVar

T = TypeVar("T")


def notification_sequence(name: str, prefix: str) -> int:
    """The sequence number ZooKeeper appended to `prefix`; -1 if there is none."""
    suffix = name[len(prefix) :]
    return int(suffix) if name.startswith(prefix) and suffix.isdigit() else -1


class NotificationScan(NamedTuple, Generic[T]):
    new: list[tuple[str, T]]  # (name, content) newer than the last processed, in order
    last_sequence: int  # the newest notification processed
    purge: list[str]  # notifications old enough to delete


def scan_notifications(
    notifications: Mapping[str, tuple[T, int]],
    prefix: str,
    last_sequence: int,
    now_ms: int,
    expiration_ms: int,
) -> NotificationScan[T]:
    """`notifications`: name -> (content, ctime in ms)."""
    new: list[tuple[str, T]] = []
    newest = last_sequence
    purge: list[str] = []
    for name in sorted(notifications, key=lambda n: notification_sequence(n, prefix)):
        content, ctime = notifications[name]
        seq = notification_sequence(name, prefix)
        if seq > last_sequence:
            newest = seq
            new.append((name, content))
        if now_ms - ctime > expiration_ms:
            purge.append(name)
    return NotificationScan(new, newest, purge)
