"""`bootstrap.servers` as every client of the project takes it: `host:port[,host:port]`."""

from __future__ import annotations

from collections.abc import Sequence

DEFAULT_BOOTSTRAP = "localhost:9092"

Address = tuple[str, int]


def parse_bootstrap_servers(servers: str | Sequence[str]) -> list[Address]:
    """`host:port[,host:port]` (or a list of `host:port`) -> addresses; IPv6 as `[::1]:9092`."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out: list[Address] = []
    for raw in items:
        item = raw.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"bootstrap server {item!r} is not host:port")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("no bootstrap servers given")
    return out
