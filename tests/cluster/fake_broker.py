"""A stand-in broker for LocalCluster's own tests: the process contract of the real one and
nothing else (listen on the port, register in /brokers/ids, take part in the controller
election, exit 0 on SIGTERM). It lets the cluster tooling be tested apart from broker bugs.

Run as `python fake_broker.py --config server.properties`.
"""

from __future__ import annotations

import signal
import socket
import sys
import threading
from pathlib import Path
from types import FrameType

from minikafka.config.broker import parse_properties
from minikafka.zk import paths
from minikafka.zk.client import BrokerInfo, ZkClient, ZkError


def main(argv: list[str]) -> int:
    props = parse_properties(Path(argv[argv.index("--config") + 1]).read_text())
    broker_id = int(props["broker.id"])
    host, _, port = props["listeners"].removeprefix("PLAINTEXT://").rpartition(":")
    session_ms = int(props.get("zookeeper.session.timeout.ms", "18000"))
    stop = threading.Event()

    def on_term(_sig: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    server = socket.create_server((host, int(port)))
    zk = ZkClient(props["zookeeper.connect"], session_timeout_ms=session_ms)
    zk.start()
    zk.ensure_persistent_paths()
    epoch = zk.register_broker(BrokerInfo(broker_id, host, int(port)), 2 * session_ms)
    print(f"fake broker {broker_id} registered with epoch {epoch}", flush=True)
    elect = threading.Event()
    elect.set()
    zk.watch_exists(paths.controller(), lambda exists: None if exists else elect.set())
    while not stop.is_set():
        if elect.wait(0.1):
            elect.clear()
            try:
                won = zk.try_elect_controller(broker_id)
            except ZkError as e:
                print(f"election failed: {e}", flush=True)
                elect.set()
                continue
            if won:
                print(f"fake broker {broker_id} is controller, epoch {won[0]}", flush=True)
    zk.close()
    server.close()
    print(f"fake broker {broker_id} shut down", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
