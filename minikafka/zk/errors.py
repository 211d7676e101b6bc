"""`ZkClient`'s errors: the `Zk*Error` classes callers see, and the one translation of
kazoo's exceptions into them (kazoo exceptions never escape `ZkClient`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from kazoo.exceptions import (
    AuthFailedError,
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    SessionExpiredError,
    ZookeeperStoppedError,
)
from kazoo.handlers.threading import KazooTimeoutError

__all__ = [
    "ControllerMovedError",
    "ZkAuthFailedError",
    "ZkBadVersionError",
    "ZkConnectionError",
    "ZkError",
    "ZkNoAuthError",
    "ZkNoNodeError",
    "ZkNodeExistsError",
    "ZkNotEmptyError",
    "ZkRequestTooLargeError",
    "kazoo_errors",
    "translate",
]


class ZkError(Exception):
    """Any ZooKeeper failure."""


class ZkConnectionError(ZkError):
    """Not connected, connection lost, session expired or no reply in time.

    Retriable; the outcome of a write that raised it is unknown."""


class ZkNoNodeError(ZkError):
    pass


class ZkNoAuthError(ZkError):
    """The znode's ACL does not let this client's identities do that (ZooKeeper's
    NoAuth): a client without the brokers' identity writing under `zookeeper.set.acl`."""


class ZkAuthFailedError(ZkError):
    """ZooKeeper refused this client's SASL authentication (wrong username or password,
    or a server without SASL). Not retriable: the client stops connecting."""


class ZkNodeExistsError(ZkError):
    pass


class ZkNotEmptyError(ZkError):
    pass


class ZkBadVersionError(ZkError):
    """A conditional write found another version of the znode (someone else wrote it)."""


class ControllerMovedError(ZkError):
    """The `/controller_epoch` version check of a fenced write failed: another controller
    has been elected since (Kafka's ControllerMovedException). Nothing was written."""


class ZkRequestTooLargeError(ZkError):
    """A multi bigger than ZooKeeper accepts (jute.maxbuffer); nothing was sent."""


_CONNECTION_ERRORS = (
    ConnectionLoss,
    SessionExpiredError,
    ConnectionClosedError,
    OperationTimeoutError,
    ZookeeperStoppedError,
    KazooTimeoutError,
)


def translate(exc: BaseException, what: str) -> ZkError:
    """The `ZkError` for kazoo's `exc`, its message starting with `what` was attempted."""
    if isinstance(exc, NoNodeError):
        return ZkNoNodeError(f"{what}: no such znode")
    if isinstance(exc, NodeExistsError):
        return ZkNodeExistsError(f"{what}: znode already exists")
    if isinstance(exc, BadVersionError):
        return ZkBadVersionError(f"{what}: znode version changed")
    if isinstance(exc, NoAuthError):
        return ZkNoAuthError(f"{what}: not allowed by the znode's ACL (NoAuth)")
    if isinstance(exc, AuthFailedError):
        return ZkAuthFailedError(f"{what}: ZooKeeper refused this client's authentication")
    if isinstance(exc, NotEmptyError):
        return ZkNotEmptyError(f"{what}: znode has children")
    if isinstance(exc, _CONNECTION_ERRORS):
        return ZkConnectionError(f"{what}: {type(exc).__name__} {exc}".rstrip())
    return ZkError(f"{what}: {type(exc).__name__} {exc}".rstrip())


@contextlib.contextmanager
def kazoo_errors(what: str) -> Iterator[None]:
    """Raise kazoo's exceptions inside as their `ZkError` (see `translate`)."""
    try:
        yield
    except (KazooException, KazooTimeoutError) as e:
        raise translate(e, what) from e
