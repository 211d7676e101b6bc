"""Errors of the local cluster tooling (a module of its own so `netns` and `local` share them)."""

from __future__ import annotations


class ClusterError(RuntimeError):
    """A cluster operation failed; the message says why (with log tails where useful)."""


class BrokerStartError(ClusterError):
    """A broker exited or did not register in time; the message has the tail of its log."""


class PortInUseError(ClusterError):
    """A port the cluster needs is taken; raised before anything starts."""
