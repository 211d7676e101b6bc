"""What each broker of a local cluster runs: its command line and its `server.properties`.

The cluster writes the keys it manages (id, listeners, log dirs, ZooKeeper) itself; the
user's overrides (`--broker-config key=value`, or `ID:key=value` for one broker) add to
them and are checked as a broker would check them, before anything starts.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from minikafka.config.broker import BrokerConfig
from minikafka.protocol.errors import InvalidConfigError

# The cluster sets these per broker; an override would make cluster.json (ports, dirs) lie.
MANAGED_KEYS = frozenset(
    {"broker.id", "listeners", "admin.listeners", "log.dirs", "log.dir", "zookeeper.connect"}
)
# The cluster's own secret: made by a secured cluster, known to its tools (readiness, the
# replica views) and never written to cluster.json, as an override would be.
SECRET_KEYS = frozenset({"admin.listeners.token"})


def default_broker_command() -> list[str]:
    """The broker's command line without `--config`: the same Python that runs us."""
    return [sys.executable, "-m", "minikafka", "broker"]


def parse_overrides(items: Iterable[str]) -> tuple[dict[str, str], dict[int, dict[str, str]]]:
    """`key=value` (every broker) and `ID:key=value` (broker ID only) -> (all, per broker).

    Raises ValueError for malformed items and for keys the cluster manages itself.
    """
    common: dict[str, str] = {}
    per_broker: dict[int, dict[str, str]] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"expected key=value or ID:key=value, got {item!r}")
        target, colon, name = key.partition(":")
        if colon:
            # Java property names never contain ':', so a prefix can only be a broker id.
            if not target.strip().isdigit():
                raise ValueError(f"expected ID:key=value with a numeric broker id, got {item!r}")
            per_broker.setdefault(int(target), {})[name.strip()] = value.strip()
        else:
            common[key.strip()] = value.strip()
    check_overrides(common)
    for overrides in per_broker.values():
        check_overrides(overrides)
    return common, per_broker


def check_overrides(overrides: Mapping[str, str], base: Mapping[str, str] | None = None) -> None:
    """Refuse, before anything starts, a property the cluster manages or a broker would
    refuse (unknown, or a bad value) on top of `base`, the cluster's own settings of the
    broker (a secured cluster's listeners, which a `listener.name.<l>.` override names)."""
    managed = sorted(MANAGED_KEYS.intersection(overrides))
    if managed:
        raise ValueError(
            f"{', '.join(managed)} cannot be overridden: the cluster sets them per broker"
        )
    secret = sorted(SECRET_KEYS.intersection(overrides))
    if secret:
        raise ValueError(
            f"{', '.join(secret)} cannot be overridden: a secured cluster (--security) makes "
            "its own, in the data dir's security/"
        )
    try:
        BrokerConfig.from_properties({"broker.id": "1", **(base or {}), **overrides})
    except InvalidConfigError as e:
        raise ValueError(e.message) from None  # without the wire protocol's error name


def write_server_properties(path: Path, props: Mapping[str, str]) -> None:
    """Write a broker's `server.properties` (again at every start of the broker), readable
    by its owner only: a secured cluster's hold the admin's password and the admin
    endpoints' token."""
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(
        "# Written by `minikafka cluster` at every start; edit the cluster's overrides "
        "instead.\n" + "".join(f"{k}={v}\n" for k, v in props.items())
    )
