"""A tiny in-process cluster for the replica client's tests (`minikafka.client.replicas`):
per broker, a real SocketServer (the broker's TCP front end) serving Kafka's protocol
through the broker's own Kafka adapter (server/kafka_api/, so librdkafka's
Metadata and DescribeConfigs and the raw Fetch and ListOffsets go through the code a
broker runs), and an HTTP admin endpoint answering `/v1/broker` and `/v1/partitions` as a
broker's does. Behind both, partitions kept in memory, answered like a broker would.

Tests steer it directly: move a leader, stop a broker, change a broker's
`admin.listeners`, have its admin endpoint ask for a token (the broker's own middleware,
`admin_token`), or `inject` a canned answer (or an exception) for the next requests of
some type to some broker. Kafka requests arrive as what the adapter hands the broker's
services (`MetadataQuery`, m.FetchRequest, m.ListOffsetsRequest); admin endpoint requests
as `BrokerGet` and `PartitionsGet`, answered with (HTTP status, JSON body).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aiohttp import web

from minikafka.admin_http.server import token_middleware
from minikafka.config.dynamic import ConfigSource, ConfigType, DescribedConfig
from minikafka.protocol.errors import ErrorCode, InvalidRequestError
from minikafka.rpc import messages as m
from minikafka.rpc.framing import RequestHeader
from minikafka.server.authorization import RequestAuthorizer
from minikafka.server.kafka_api.handler import KafkaApiHandler
from minikafka.server.network import SocketServer
from minikafka.storage.record_batch import (
    build_batch,
    iter_batches,
    stamp,
)

T = TypeVar("T")

DEBUG_REPLICA_ID = m.DEBUG_REPLICA_ID
LATEST_TIMESTAMP = -1


@dataclass
class FakePartition:
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    batches: list[tuple[int, bytes]] = field(default_factory=list)  # (base offset, bytes)
    log_end_offset: int = 0
    log_start_offset: int = 0

    def append(self, batch: bytes) -> int:
        base = self.log_end_offset
        buf = bytearray(batch)
        count = 0
        for pos, h in iter_batches(buf):
            stamp(buf, pos, base + count, self.leader_epoch)
            count += h.record_count
        self.batches.append((base, bytes(buf)))
        self.log_end_offset += count
        return base

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding `offset`; at least one, then up to max_bytes."""
        out = bytearray()
        for base, data in self.batches:
            last = base + _count(data) - 1
            if last < offset:
                continue
            if out and len(out) + len(data) > max_bytes:
                break
            out += data
        return bytes(out)


def _count(data: bytes) -> int:
    return sum(h.record_count for _, h in iter_batches(data))


@dataclass(frozen=True)
class MetadataQuery:
    """A Kafka Metadata request, as the adapter asks BrokerServices.metadata: `topics`, or
    every topic when None."""

    topics: list[str] | None


@dataclass(frozen=True)
class BrokerGet:
    """`GET /v1/broker` on a broker's admin endpoint."""


@dataclass(frozen=True)
class PartitionsGet:
    """`GET /v1/partitions[?topic=T]` on a broker's admin endpoint."""

    topic: str | None


Injected = Callable[[int, Any], Any]


class _NoTopicIds:
    """The metadata cache's topic ids, as the Kafka adapter asks for them: none here."""

    def topic_id(self, topic: str) -> str | None:
        return None

    def topic_name(self, topic_id: str) -> str | None:
        return None

    # What the Metadata handler asks of it to forget deleted topics' answers: it keeps
    # none past a thousand answers here.
    def topic_count(self) -> int:
        return 0

    def contains_topic(self, topic: str) -> bool:
        return False


class _BrokerApis:
    """What the Kafka API handlers call on a broker (BrokerServices), answered by the fake cluster."""

    cluster_id = "fake-cluster-0000000000"

    def __init__(self, cluster: FakeCluster, broker_id: int) -> None:
        self.cluster = cluster
        self.broker_id = broker_id
        self.cache = _NoTopicIds()
        self.admin = self  # DescribeConfigs asks the admin manager
        self.authorizer = RequestAuthorizer(None)  # no authorizer: everything is allowed
        self.acl_store = None

    async def metadata(
        self, topics: list[str] | None, allow_auto_topic_creation: bool, listener: str
    ) -> Any:
        return await self.cluster._handle(self.broker_id, MetadataQuery(topics))

    async def fetch(self, req: m.FetchRequest, readable: Any = None, client: Any = None) -> Any:
        return await self.cluster._handle(self.broker_id, req)

    async def list_offsets(self, req: m.ListOffsetsRequest) -> Any:
        return await self.cluster._handle(self.broker_id, req)

    async def describe_configs(
        self, resource_type: int, name: str, keys: list[str] | None, include_synonyms: bool
    ) -> list[DescribedConfig]:
        """A broker's configs: only `admin.listeners` (none when the test unset it)."""
        if name != str(self.broker_id):
            raise InvalidRequestError(f"Unexpected broker id, expected {self.broker_id}")
        listener = self.cluster.admin_listener(self.broker_id)
        if listener is None:
            return []
        source = ConfigSource.STATIC_BROKER_CONFIG
        return [
            DescribedConfig("admin.listeners", listener, True, source, ConfigType.STRING, None, ())
        ]


class FakeCluster:
    def __init__(self, num_brokers: int = 3) -> None:
        self.broker_ids = list(range(1, num_brokers + 1))
        self.servers: dict[int, SocketServer] = {}
        self.ports: dict[int, int] = {}
        self.admin_runners: dict[int, web.AppRunner] = {}
        self.admin_ports: dict[int, int] = {}
        # broker id -> its `admin.listeners` as DescribeConfigs gives it, when a test
        # changed it (None: unset); by default http://127.0.0.1:<its admin port>.
        self.admin_listeners: dict[int, str | None] = {}
        self.alive: set[int] = set()
        # The admin endpoints' admin.listeners.token, for endpoints started from then on.
        self.admin_token: str | None = None
        self.controller_id = 1
        self.topics: dict[str, dict[int, FakePartition]] = {}
        # Topics "being created": in ZooKeeper, not yet in metadata (LEADER_NOT_AVAILABLE,
        # as a real broker answers). Other unknown topics: UNKNOWN_TOPIC_OR_PARTITION, as a
        # real broker with auto.create.topics.enable=false answers.
        self.pending_topics: set[str] = set()
        self.requests: list[tuple[int, Any]] = []  # (broker id, request), in arrival order
        self._injections: list[tuple[type, int | None, Injected, list[int]]] = []
        self._data = asyncio.Condition()

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        for b in self.broker_ids:
            await self.start_broker(b)

    async def start_broker(self, broker_id: int) -> None:
        async def rpc_handler(header: RequestHeader, request: Any) -> Any:
            return await self._handle(broker_id, request)

        server = SocketServer(
            rpc_handler,
            "127.0.0.1",
            self.ports.get(broker_id, 0),
            kafka_handler=KafkaApiHandler(_BrokerApis(self, broker_id), "PLAINTEXT"),  # type: ignore[arg-type]
        )
        await server.start()
        self.servers[broker_id] = server
        self.ports[broker_id] = server.port
        await self.start_admin_endpoint(broker_id)
        self.alive.add(broker_id)

    async def start_admin_endpoint(self, broker_id: int) -> None:
        """Broker `broker_id`'s admin endpoint, on the port it had if it had one."""

        async def broker(request: web.Request) -> web.Response:
            return _json(await self._handle(broker_id, BrokerGet()))

        async def partitions(request: web.Request) -> web.Response:
            topic = request.query.get("topic")
            return _json(await self._handle(broker_id, PartitionsGet(topic)))

        token = self.admin_token
        app = web.Application(middlewares=[] if token is None else [token_middleware(token)])
        app.router.add_get("/v1/broker", broker)
        app.router.add_get("/v1/partitions", partitions)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self.admin_ports.get(broker_id, 0))
        await site.start()
        self.admin_runners[broker_id] = runner
        self.admin_ports[broker_id] = runner.addresses[0][1]

    async def stop_broker(self, broker_id: int) -> None:
        """Kill a broker: its connections drop and metadata stops listing it."""
        self.alive.discard(broker_id)
        await self.servers.pop(broker_id).stop()
        await self.stop_admin_endpoint(broker_id)

    async def stop_admin_endpoint(self, broker_id: int) -> None:
        """Stop broker `broker_id`'s admin endpoint alone (its Kafka listener stays)."""
        runner = self.admin_runners.pop(broker_id, None)
        if runner is not None:
            await runner.cleanup()

    async def stop(self) -> None:
        for b in list(self.servers):
            await self.stop_broker(b)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.ports[b]}" for b in self.broker_ids)

    def admin_listener(self, broker_id: int) -> str | None:
        if broker_id in self.admin_listeners:
            return self.admin_listeners[broker_id]
        return f"http://127.0.0.1:{self.admin_ports[broker_id]}"

    # --- steering -------------------------------------------------------------------------

    def create_topic(
        self, name: str, partitions: int = 1, replication_factor: int = 3, leader: int | None = None
    ) -> None:
        n = len(self.broker_ids)
        parts = {}
        for p in range(partitions):
            replicas = [self.broker_ids[(p + j) % n] for j in range(replication_factor)]
            lead = replicas[0] if leader is None else leader
            parts[p] = FakePartition(lead, 0, replicas, list(replicas))
        self.topics[name] = parts

    def partition(self, topic: str, partition: int) -> FakePartition:
        return self.topics[topic][partition]

    def move_leader(self, topic: str, partition: int, new_leader: int) -> None:
        p = self.topics[topic][partition]
        p.leader = new_leader
        p.leader_epoch += 1

    async def append(
        self, topic: str, partition: int, values: list[bytes], keys: list[bytes] | None = None
    ) -> int:
        base = self.topics[topic][partition].append(build_batch(values, keys=keys, timestamp=5))
        async with self._data:
            self._data.notify_all()
        return base

    def inject(
        self, request_type: type, fn: Injected, *, broker: int | None = None, times: int = 1
    ) -> None:
        """The next `times` requests of `request_type` (to `broker`, or any) are answered by
        `fn(broker_id, request)` instead: it returns a response, or raises."""
        self._injections.append((request_type, broker, fn, [times]))

    def requests_of(self, request_type: type) -> list[tuple[int, Any]]:
        return [(b, r) for b, r in self.requests if isinstance(r, request_type)]

    async def _handle(self, broker_id: int, request: Any) -> Any:
        self.requests.append((broker_id, request))
        for i, (rtype, broker, fn, left) in enumerate(self._injections):
            if isinstance(request, rtype) and broker in (None, broker_id):
                left[0] -= 1
                if left[0] <= 0:
                    del self._injections[i]
                result = fn(broker_id, request)
                if asyncio.iscoroutine(result):
                    result = await result
                return result
        handler = getattr(self, f"_on_{type(request).__name__}")
        return await handler(broker_id, request)

    # --- the admin endpoint -----------------------------------------------------------------

    async def _on_BrokerGet(self, broker_id: int, r: BrokerGet) -> tuple[int, Any]:
        return 200, {
            "broker_id": broker_id,
            "listeners": [f"PLAINTEXT://127.0.0.1:{self.ports[broker_id]}"],
        }

    async def _on_PartitionsGet(self, broker_id: int, r: PartitionsGet) -> tuple[int, Any]:
        return self.partitions_answer(broker_id, r)

    def partitions_answer(self, broker_id: int, r: PartitionsGet) -> tuple[int, Any]:
        """Broker `broker_id`'s `/v1/partitions`: a row per replica it has, the partitions
        it leads with each replica's state (`leader_row`)."""
        rows = [
            self.leader_row(name, i) if p.leader == broker_id else self.follower_row(name, i)
            for name in sorted(self.topics)
            if r.topic is None or name == r.topic
            for i, p in sorted(self.topics[name].items())
            if broker_id in p.replicas
        ]
        if r.topic is not None and not rows:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            message = f"broker {broker_id} has no replica of topic {r.topic!r}"
            return 404, {"error_code": int(code), "error": code.name, "message": message}
        return 200, {"partitions": rows}

    def follower_row(self, topic: str, partition: int) -> dict[str, Any]:
        p = self.partition(topic, partition)
        return {
            "topic": topic,
            "partition": partition,
            "role": "follower",
            "leader": p.leader,
            "leader_epoch": p.leader_epoch,
            "replicas": list(p.replicas),
            "isr": list(p.isr),
            "log_start_offset": p.log_start_offset,
            "log_end_offset": p.log_end_offset,
            "high_watermark": p.log_end_offset - 1,
        }

    def leader_row(self, topic: str, partition: int) -> dict[str, Any]:
        """What the fake leader says: the leader at its LEO, follower i (in the leader's
        order, which here is reversed assignment order) i+1 messages behind, caught up
        (i+1)*100 ms ago, the last one outside the ISR; the HW one below the LEO."""
        p = self.partition(topic, partition)
        followers = [b for b in reversed(p.replicas) if b != p.leader]
        states = [(p.leader, p.log_end_offset, 0, True)]
        for i, b in enumerate(followers):
            states.append((b, p.log_end_offset - i - 1, (i + 1) * 100, i < len(followers) - 1))
        return {
            **self.follower_row(topic, partition),
            "role": "leader",
            "isr": [b for b, _, _, in_isr in states if in_isr],
            "replica_states": [
                {
                    "broker_id": b,
                    "log_end_offset": leo,
                    "lag": p.log_end_offset - leo,
                    "in_isr": in_isr,
                    "last_caught_up_ms_ago": age,
                }
                for b, leo, age, in_isr in states
            ],
        }

    # --- Kafka's protocol -------------------------------------------------------------------

    async def _on_MetadataQuery(self, broker_id: int, r: MetadataQuery) -> Any:
        brokers = [m.BrokerNode(b, "127.0.0.1", self.ports[b]) for b in sorted(self.alive)]
        names = sorted(self.topics) if r.topics is None else r.topics
        topics = []
        for name in names:
            parts = self.topics.get(name)
            if parts is None:
                code = (
                    ErrorCode.LEADER_NOT_AVAILABLE
                    if name in self.pending_topics
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
                topics.append(m.MetadataTopic(code, name, []))
                continue
            topics.append(
                m.MetadataTopic(
                    0,
                    name,
                    [
                        m.MetadataPartition(
                            0 if p.leader in self.alive else ErrorCode.LEADER_NOT_AVAILABLE,
                            i,
                            p.leader if p.leader in self.alive else -1,
                            p.leader_epoch,
                            p.replicas,
                            [b for b in p.isr if b in self.alive],
                            [b for b in p.replicas if b not in self.alive],
                        )
                        for i, p in sorted(parts.items())
                    ],
                )
            )
        return m.MetadataResponse(brokers, self.controller_id, topics)

    def _lookup(
        self, broker_id: int, topic: str, partition: int, replica_id: int
    ) -> FakePartition | int:
        """The partition as broker `broker_id` serves it to `replica_id`: the debugging
        replica (-2) reads any replica the broker has, others the leader's only."""
        p = self.topics.get(topic, {}).get(partition)
        if p is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        has_it = (
            broker_id in p.replicas if replica_id == DEBUG_REPLICA_ID else p.leader == broker_id
        )
        if not has_it:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return p

    async def _on_ListOffsetsRequest(self, broker_id: int, r: m.ListOffsetsRequest) -> Any:
        topics = []
        for t in r.topics:
            parts = []
            for lp in t.partitions:
                p = self._lookup(broker_id, t.name, lp.partition, r.replica_id)
                if isinstance(p, int):
                    parts.append(m.ListOffsetsPartitionResponse(lp.partition, p))
                    continue
                offset = (
                    p.log_end_offset if lp.timestamp == LATEST_TIMESTAMP else p.log_start_offset
                )
                parts.append(
                    m.ListOffsetsPartitionResponse(lp.partition, 0, offset, p.leader_epoch)
                )
            topics.append(m.ListOffsetsTopicResponse(t.name, parts))
        return m.ListOffsetsResponse(topics)

    def _fetch_partition(
        self, broker_id: int, topic: str, fp: m.FetchPartition, replica_id: int
    ) -> Any:
        p = self._lookup(broker_id, topic, fp.partition, replica_id)
        if isinstance(p, int):
            return m.FetchPartitionResponse(fp.partition, p, -1, -1, -1, None)
        code = ErrorCode.NONE
        if fp.current_leader_epoch >= 0 and fp.current_leader_epoch < p.leader_epoch:
            code = ErrorCode.FENCED_LEADER_EPOCH
        elif fp.current_leader_epoch > p.leader_epoch:
            code = ErrorCode.UNKNOWN_LEADER_EPOCH
        elif not p.log_start_offset <= fp.fetch_offset <= p.log_end_offset:
            code = ErrorCode.OFFSET_OUT_OF_RANGE
        if code != ErrorCode.NONE:
            return m.FetchPartitionResponse(fp.partition, code, -1, -1, -1, None)
        data = p.read(fp.fetch_offset, fp.partition_max_bytes)
        return m.FetchPartitionResponse(
            fp.partition,
            0,
            p.log_end_offset,
            p.log_start_offset,
            p.log_end_offset,
            data or None,
        )

    async def _on_FetchRequest(self, broker_id: int, r: m.FetchRequest) -> Any:
        def build() -> tuple[m.FetchResponse, int]:
            size = 0
            topics = []
            for t in r.topics:
                parts = [
                    self._fetch_partition(broker_id, t.name, fp, r.replica_id)
                    for fp in t.partitions
                ]
                size += sum(len(p.records or b"") + (p.error_code != 0) for p in parts)
                topics.append(m.FetchTopicResponse(t.name, parts))
            return m.FetchResponse(0, topics), size

        response, size = build()
        if size >= r.min_bytes or r.max_wait_ms <= 0:
            return response
        # Long poll, as DelayedFetch does: answer when data arrives or max wait passes.
        async with self._data:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._data.wait_for(lambda: build()[1] >= r.min_bytes), r.max_wait_ms / 1000
                )
        return build()[0]


def _json(answer: tuple[int, Any]) -> web.Response:
    status, body = answer
    return web.json_response(body, status=status)


class ThreadedCluster:
    """A FakeCluster on its own event loop thread, for code that runs its own loop (the CLI
    and the sync clients)."""

    def __init__(self, num_brokers: int = 3) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.cluster: FakeCluster = self.run(self._make(num_brokers))

    async def _make(self, num_brokers: int) -> FakeCluster:
        cluster = FakeCluster(num_brokers)
        await cluster.start()
        return cluster

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(30)

    def call(self, fn: Callable[[], T]) -> T:
        async def wrapper() -> T:
            return fn()

        return self.run(wrapper())

    def close(self) -> None:
        self.run(self.cluster.stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
