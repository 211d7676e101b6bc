"""The admin endpoint's HTTP side (aiohttp), served on the broker's event loop:

    GET /metrics           Prometheus text format (metrics.py)
    GET /health            200 once registered in ZooKeeper with a live session, else 503
    GET /v1/broker         id, broker epoch, advertised addresses, controller, counts
    GET /v1/partitions     every replica on this broker (?topic=T for one topic): role,
                           leader, leader epoch, replicas, ISR, log start, LEO, HW, size;
                           on the leader each replica's LEO, lag and caught-up age
    GET /v1/local          this broker's own view, as the other brokers' dashboards ask for
                           it: its facts, the partitions it leads, its throughput rows

The dashboard (dashboard.py assembles, cluster_view.py decides):
    GET /                          the page (static/: plain HTML, JS and CSS)
    GET /v1/cluster                brokers, controller, ZooKeeper, partition counts
    GET /v1/cluster/partitions     every partition, the user's topics' first, worst first
                                   (?topic=T, ?limit=N, ?internal=false: without Kafka's
                                   internal topics, __consumer_offsets...)
    GET /v1/cluster/events         the event timeline, newest first (?after_seq=S, ?limit=N)
    GET /v1/cluster/throughput     per-topic rates of the last minutes (?after_s=T)
    GET /v1/stream                 Server-Sent Events: one `view` a second (?topic=T, ?limit=N,
                                   ?internal=false)

Errors are JSON with Kafka's error names and codes (an unknown topic is
UNKNOWN_TOPIC_OR_PARTITION, 404). Everything is read-only: the endpoint changes nothing.

With `admin.listeners.token` set, every request but `/health` (liveness for orchestrators,
which tells nothing of the data) must present the token (`token_middleware`): as
`Authorization: Bearer <token>`, or as the password of HTTP basic auth with any user name,
which a browser asks for when it opens the dashboard. Otherwise 401 with `WWW-Authenticate:
Basic realm="minikafka"`, logged at INFO without what was presented.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hmac
import logging
import socket
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from minikafka.admin_http.dashboard import Dashboard, as_json
from minikafka.admin_http.metrics import group_offsets, render, take_snapshot
from minikafka.protocol.errors import ErrorCode
from minikafka.replication.partition import Partition

if TYPE_CHECKING:
    # Types only: Debian 12's aiohttp (3.8, the compose image's) has no Middleware.
    from aiohttp.typedefs import Handler, Middleware

    from minikafka.server.admin_endpoint import BrokerView

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent / "static"
# Partition rows a page gets unless it asks for another number (worst first).
DEFAULT_ROWS = 200
MAX_ROWS = 100_000
# The one route open without the token: liveness, which says nothing of the data.
OPEN_PATHS = frozenset({"/health"})
AUTH_REALM = 'Basic realm="minikafka"'


def error_response(status: int, code: ErrorCode, message: str) -> web.Response:
    return web.json_response(
        {"error_code": int(code), "error": code.name, "message": message}, status=status
    )


def partition_view(p: Partition, now_ms: int) -> dict[str, Any]:
    role = "leader" if p.is_leader else ("follower" if p.leader_id >= 0 else "offline")
    view: dict[str, Any] = {
        "topic": p.tp.topic,
        "partition": p.tp.partition,
        "role": role,
        "leader": p.leader_id,
        "leader_epoch": p.leader_epoch,
        "replicas": list(p.assigned_replicas),
        "isr": list(p.isr),
        "log_start_offset": p.log.log_start_offset,
        "log_end_offset": p.log_end_offset,
        "high_watermark": p.high_watermark,
        "size_bytes": p.log.size_in_bytes,
        "segments": len(p.log.segments),
        "min_insync_replicas": p.log.config.min_insync_replicas,
    }
    if p.is_leader:
        leo = p.log_end_offset
        view["replica_states"] = [
            {
                "broker_id": r.broker_id,
                "log_end_offset": r.log_end_offset,
                "lag": leo - r.log_end_offset if r.log_end_offset >= 0 else None,
                "in_isr": r.in_isr,
                "last_caught_up_ms_ago": r.last_caught_up_ms_ago,
            }
            for r in p.replica_states(now_ms)
        ]
    return view


def presented_token(authorization: str | None) -> bytes | None:
    """The token an `Authorization` header presents: a bearer token, or the password of
    basic auth (any user name); None for no header, another scheme or a malformed one."""
    if authorization is None:
        return None
    scheme, _, credentials = authorization.strip().partition(" ")
    credentials = credentials.strip()
    if not credentials:
        return None
    if scheme.lower() == "bearer":
        # Header values are text; anything but ASCII cannot be the token anyway.
        return credentials.encode("utf-8", "backslashreplace")
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(credentials.encode("ascii"), validate=True)
        except (UnicodeEncodeError, binascii.Error):
            return None
        _user, colon, password = decoded.partition(b":")
        return password if colon else None
    return None


def token_middleware(token: str) -> Middleware:
    """Every request but OPEN_PATHS' must present `token` (`presented_token`), compared in
    constant time; else 401 with the basic-auth challenge. Unknown paths are refused too:
    without the token nothing, not even which routes exist, is told."""
    expected = token.encode("ascii")

    @web.middleware
    async def require_token(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in OPEN_PATHS:
            return await handler(request)
        header = request.headers.get("Authorization")
        presented = presented_token(header)
        if presented is not None and hmac.compare_digest(presented, expected):
            return await handler(request)
        # Never what was presented: a wrong token may be a typo of the right one.
        why = (
            "no credentials"
            if header is None
            else "unreadable credentials"
            if presented is None
            else "a wrong token"
        )
        log.info(
            "admin endpoint: %s %s from %s refused (401): %s",
            request.method,
            request.path,
            request.remote,
            why,
        )
        return web.json_response(
            {
                "error": "UNAUTHORIZED",
                "message": "this admin endpoint requires its token (admin.listeners.token): "
                "Authorization: Bearer <token>, or basic auth with the token as the password",
            },
            status=401,
            headers={"WWW-Authenticate": AUTH_REALM},
        )

    return require_token


class AdminHttpServer:
    """A broker's admin endpoint (server/admin_endpoint.py's AdminEndpoint): it reads the
    broker through a BrokerView and changes nothing. With the broker's
    `admin.listeners.token`, every request but /health must present it."""

    def __init__(self, broker: BrokerView, host: str, port: int) -> None:
        self._broker = broker
        self._host = host
        self._requested_port = port
        self._runner: web.AppRunner | None = None
        self.port = port
        self._token = broker.config.admin_listeners_token
        self.dashboard = Dashboard(broker, self._token)

    def app(self) -> web.Application:
        # GET (and HEAD) only: no request can change anything; others get 405.
        app = web.Application(
            middlewares=[] if self._token is None else [token_middleware(self._token)]
        )
        app.router.add_get("/metrics", self.metrics)
        app.router.add_get("/health", self.health)
        app.router.add_get("/v1/broker", self.broker)
        app.router.add_get("/v1/partitions", self.partitions)
        app.router.add_get("/v1/local", self.local)
        app.router.add_get("/v1/cluster", self.cluster)
        app.router.add_get("/v1/cluster/partitions", self.cluster_partitions)
        app.router.add_get("/v1/cluster/events", self.cluster_events)
        app.router.add_get("/v1/cluster/throughput", self.cluster_throughput)
        app.router.add_get("/v1/stream", self.stream)
        app.router.add_get("/", self.index)
        app.router.add_static("/static/", STATIC_DIR, append_version=False)
        return app

    async def start(self) -> None:
        runner = web.AppRunner(self.app(), access_log=None)
        await runner.setup()
        # Our own socket, so that with port 0 (any free port) we know which one we got.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self._host or "0.0.0.0", self._requested_port))
            site = web.SockSite(runner, sock)
            await site.start()
        except BaseException:
            sock.close()
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = sock.getsockname()[1]
        self.dashboard.start()
        log.info("admin endpoint on http://%s:%d", self._host or "0.0.0.0", self.port)

    async def stop(self) -> None:
        await self.dashboard.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # --- handlers ----------------------------------------------------------------------

    async def metrics(self, request: web.Request) -> web.Response:
        # The numbers on the loop that owns them, the text in a thread (see metrics.py).
        snap = take_snapshot(self._broker)
        # Consumer lag needs other brokers' high watermarks: asked after the snapshot.
        snap = replace(snap, group_offsets=await group_offsets(self._broker))
        body = await asyncio.to_thread(render, snap)
        # aiohttp wants the charset apart from the content type.
        content_type, _, charset = CONTENT_TYPE_LATEST.partition("; charset=")
        return web.Response(body=body, content_type=content_type, charset=charset or None)

    async def health(self, request: web.Request) -> web.Response:
        s = self._broker
        problems = []
        if not s.zk.connected:
            problems.append("no ZooKeeper session")
        if s.broker_epoch < 0 or s.zk_session_lost:
            problems.append("not registered in ZooKeeper")
        if s.shutting_down:
            problems.append("shutting down")
        body = {
            "status": "unavailable" if problems else "ok",
            "broker_id": s.broker_id,
            "broker_epoch": s.broker_epoch,
            "problems": problems,
        }
        return web.json_response(body, status=503 if problems else 200)

    async def broker(self, request: web.Request) -> web.Response:
        s = self._broker
        rm = s.replica_manager
        controller = s.controller
        host, port = s.advertised
        return web.json_response(
            {
                "broker_id": s.broker_id,
                "broker_epoch": s.broker_epoch,
                "advertised": f"{host}:{port}",
                "listeners": [str(e) for e in s.advertised_endpoints],
                "zookeeper_connected": s.zk.connected,
                "controller_id": -1 if controller is None else controller.controller_id,
                "is_controller": controller is not None and controller.is_active,
                "controller_epoch": rm.controller_epoch,
                "partitions": len(rm.partitions),
                "leaders": len(rm.leader_partitions()),
                # What this broker tells clients (its metadata cache, fed by UpdateMetadata):
                # until the controller's first update it knows no brokers and no controller.
                "metadata": {
                    "controller_id": s.metadata_cache.controller_id,
                    "live_brokers": sorted(s.metadata_cache.live_brokers),
                },
            }
        )

    async def partitions(self, request: web.Request) -> web.Response:
        topic = request.query.get("topic")
        now = self._broker.clock.now_ms()
        views = [
            partition_view(p, now)
            for tp, p in sorted(self._broker.replica_manager.partitions.items())
            if topic is None or tp.topic == topic
        ]
        if topic is not None and not views:
            return error_response(
                404,
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"broker {self._broker.broker_id} has no replica of topic {topic!r}",
            )
        return web.json_response({"partitions": views})

    # --- the dashboard -------------------------------------------------------------------

    async def index(self, request: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC_DIR / "index.html")

    async def local(self, request: web.Request) -> web.Response:
        after = _int_param(request, "throughput_after_s", 0)
        return _json(self.dashboard.local_view(after))

    async def cluster(self, request: web.Request) -> web.Response:
        view = await self.dashboard.view()
        return _json({**view.header(), "topics": view.topics()})

    async def cluster_partitions(self, request: web.Request) -> web.Response:
        topic = request.query.get("topic") or None
        limit = _int_param(request, "limit", MAX_ROWS, 0, MAX_ROWS)
        internal = _bool_param(request, "internal", True)
        view = await self.dashboard.view()
        selected = view.select(topic, limit, internal)
        if topic is not None and selected["total"] == 0:
            return error_response(
                404, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {topic!r} in the cluster"
            )
        return _json(selected)

    async def cluster_events(self, request: web.Request) -> web.Response:
        after = _int_param(request, "after_seq", 0)
        limit = _int_param(request, "limit", 1000, 0, 100_000)
        log_ = self.dashboard.events
        return _json(
            {
                "served_by": self._broker.broker_id,
                "last_seq": log_.last_seq,
                "events": [e.to_json() for e in log_.newest(after, limit)],
            }
        )

    async def cluster_throughput(self, request: web.Request) -> web.Response:
        after: int | None = _int_param(request, "after_s", -1)
        view = await self.dashboard.view()  # brings the other brokers' rows up to date
        end = self.dashboard.end_second(view)
        return _json(self.dashboard.throughput.series(end, None if after == -1 else after))

    async def stream(self, request: web.Request) -> web.StreamResponse:
        topic = request.query.get("topic") or None
        limit = _int_param(request, "limit", DEFAULT_ROWS, 0, MAX_ROWS)
        internal = _bool_param(request, "internal", True)
        # Events after this one only (a page that has the earlier ones); 0: the latest 1,000.
        last_seq = _int_param(request, "after_seq", 0)
        resp = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            }
        )
        await resp.prepare(request)
        # aclosing: the page's subscription ends as soon as the page goes away.
        try:
            async with contextlib.aclosing(
                self.dashboard.updates(topic, limit, last_seq, internal)
            ) as updates:
                async for payload in updates:
                    await resp.write(b"event: view\ndata: " + as_json(payload) + b"\n\n")
        except ConnectionResetError:
            pass  # the page went away
        return resp


def _int_param(
    request: web.Request, name: str, default: int, low: int = -1, high: int = 2**62
) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise _bad_request(f"{name} must be an integer from {low} to {high}, got {raw!r}")
    return value


_BOOLS = {"true": True, "1": True, "false": False, "0": False}


def _bool_param(request: web.Request, name: str, default: bool) -> bool:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    value = _BOOLS.get(raw.lower())
    if value is None:
        raise _bad_request(f"{name} must be true or false, got {raw!r}")
    return value


def _bad_request(message: str) -> web.HTTPBadRequest:
    return web.HTTPBadRequest(
        text=as_json(
            {
                "error_code": int(ErrorCode.INVALID_REQUEST),
                "error": ErrorCode.INVALID_REQUEST.name,
                "message": message,
            }
        ).decode(),
        content_type="application/json",
    )


def _json(body: dict[str, Any]) -> web.Response:
    return web.Response(body=as_json(body), content_type="application/json")
