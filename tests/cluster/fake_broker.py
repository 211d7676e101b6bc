"""A stand-in broker for LocalCluster's own tests: the process contract of the real one and
nothing else (listen on the port, register in /brokers/ids, take part in the controller
election, answer /v1/broker on the admin endpoint with the metadata clients would be given,
here read from ZooKeeper, exit 0 on SIGTERM). It lets the cluster tooling be tested apart
from broker bugs.

Run as `python fake_broker.py --config server.properties`.
"""

from __future__ import annotations

import json
import signal
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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
    admin = serve_admin(props["admin.listeners"], zk)
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
    admin.shutdown()
    zk.close()
    server.close()
    print(f"fake broker {broker_id} shut down", flush=True)
    return 0


def serve_admin(listener: str, zk: ZkClient) -> ThreadingHTTPServer:
    host, _, port = listener.removeprefix("http://").rpartition(":")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/v1/broker":
                self.send_error(404)
                return
            controller = zk.get_controller_id()
            metadata = {
                "controller_id": -1 if controller is None else controller,
                "live_brokers": sorted(zk.get_broker_ids()),
            }
            body = json.dumps({"metadata": metadata}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer((host, int(port)), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


if __name__ == "__main__":
    sys.exit(main(sys.argv))
