#!/usr/bin/env python3
"""Healthcheck of a Spark standalone node of docker-compose.yml's `spark` profile.

    spark-healthcheck master    its web UI's /json/ says ALIVE (it takes workers and apps)
    spark-healthcheck worker    the master's /json/ lists this worker (its host: this
                                container's hostname) as ALIVE: it has registered

Exits 0 when healthy, 1 otherwise (saying why).
"""

import json
import socket
import sys
import urllib.request

MASTER_JSON = "http://spark-master:8080/json/"


def main() -> int:
    role = sys.argv[1] if len(sys.argv) == 2 else ""
    if role not in ("master", "worker"):
        print("usage: spark-healthcheck master|worker", file=sys.stderr)
        return 2
    url = "http://localhost:8080/json/" if role == "master" else MASTER_JSON
    try:
        with urllib.request.urlopen(url, timeout=4) as response:
            state = json.load(response)
    except (OSError, ValueError) as e:
        print(f"{url}: {e}", file=sys.stderr)
        return 1
    if role == "master":
        healthy = state.get("status") == "ALIVE"
    else:
        host = socket.gethostname()
        healthy = any(
            w.get("host") == host and w.get("state") == "ALIVE" for w in state.get("workers", [])
        )
    if not healthy:
        print(f"not {'ALIVE' if role == 'master' else 'registered'} yet", file=sys.stderr)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
