"""The TCP layer: pipelining, one request at a time per connection in arrival order, and bad
frames that must not hurt other clients."""

import asyncio
import random
import struct
import threading

import msgpack
import pytest

from minikafka.protocol.errors import (
    InvalidRequestError,
    NotLeaderOrFollowerError,
    RequestTimedOutError,
)
from minikafka.rpc import messages as m
from minikafka.rpc.connection import BrokerConnection, NetworkError
from minikafka.server.network import NO_RESPONSE, SocketServer


async def handler(header, request):
    if isinstance(request, m.FetchRequest):
        # answer after a random delay: responses must still come back in request order
        await asyncio.sleep(random.random() / 100)
        p = request.topics[0].partitions[0]
        return m.FetchResponse(
            0,
            [
                m.FetchTopicResponse(
                    "t", [m.FetchPartitionResponse(p.partition, 0, p.fetch_offset, 0, 0, None)]
                )
            ],
        )
    if isinstance(request, m.UpdateMetadataRequest):
        return NO_RESPONSE  # as a handler may answer a request that wants none
    if isinstance(request, m.LeaderAndIsrRequest):
        raise NotLeaderOrFollowerError("not me")
    if isinstance(request, m.ControlledShutdownRequest) and request.broker_id < 0:
        raise RuntimeError("handler bug")
    if isinstance(request, m.StopReplicaRequest):
        await asyncio.sleep(3600)  # never answered in time
    if isinstance(request, m.OffsetForLeaderEpochRequest):
        raise RequestTimedOutError("the broker's own timeout")
    return m.ControlledShutdownResponse(0, [])


# A request the handler answers at once (with no error).
PING = m.ControlledShutdownRequest(1, 1)
# One it answers with nothing, sent without waiting for an answer.
UNANSWERED = m.UpdateMetadataRequest(1, 1, 1, [], [])


@pytest.fixture
async def server():
    s = SocketServer(handler, "127.0.0.1", 0, max_frame_bytes=64 * 1024)
    await s.start()
    yield s
    await s.stop()


async def connect(server):
    c = BrokerConnection("127.0.0.1", server.port)
    await c.connect()
    return c


def fetch_request(i):
    """A fetch of partition i from offset i * 10, answered with that offset as its HW."""
    return m.FetchRequest(
        -1, 0, 1, 1 << 20, [m.FetchTopic("t", [m.FetchPartition(i, i * 10, 1 << 20)])]
    )


async def test_pipelined_requests_are_answered_in_order(server):
    c = await connect(server)
    results = await asyncio.gather(*(c.send(fetch_request(i)) for i in range(200)))
    assert [r.topics[0].partitions[0].high_watermark for r in results] == [
        i * 10 for i in range(200)
    ]
    await c.close()


async def test_one_connections_requests_are_handled_one_at_a_time_in_arrival_order():
    """Kafka's guarantee: a request starts only once the one before it on its connection
    has been answered, whatever the handlers' durations; other connections go on meanwhile
    (a request blocked until another connection's arrives is not a deadlock)."""
    started: list[tuple[str, int]] = []
    running: dict[str, int] = {}
    overlaps: list[tuple[str, int]] = []
    other_arrived = asyncio.Event()
    first_started = asyncio.Event()
    a_started_when_b_arrived: list[int] = []

    async def record(header, request):
        who, n = header.client_id, request.topics[0].partitions[0].partition
        running[who] = running.get(who, 0) + 1
        if running[who] > 1:
            overlaps.append((who, n))
        started.append((who, n))
        if who == "b":
            a_started_when_b_arrived.extend(n for w, n in started if w == "a")
            other_arrived.set()
        elif n == 0:
            first_started.set()
            await other_arrived.wait()
        await asyncio.sleep(random.random() / 200)
        running[who] -= 1
        return m.FetchResponse(0, [])

    s = SocketServer(record, "127.0.0.1", 0)
    await s.start()
    a = BrokerConnection("127.0.0.1", s.port, client_id="a")
    b = BrokerConnection("127.0.0.1", s.port, client_id="b")
    await a.connect()
    await b.connect()
    try:
        sent = [asyncio.ensure_future(a.send(fetch_request(i), 10)) for i in range(50)]
        await asyncio.wait_for(first_started.wait(), 10)
        await b.send(fetch_request(0), 10)
        await asyncio.gather(*sent)
    finally:
        await a.close()
        await b.close()
        await s.stop()
    assert a_started_when_b_arrived == [0]  # the rest waited for its answer
    assert overlaps == []
    assert [n for who, n in started if who == "a"] == list(range(50))


async def test_errors_come_back_as_exceptions_and_connection_survives(server):
    c = await connect(server)
    with pytest.raises(NotLeaderOrFollowerError, match="not me"):
        await c.send(m.LeaderAndIsrRequest(1, 1, 1, [], []))
    with pytest.raises(Exception, match="handler bug"):
        await c.send(m.ControlledShutdownRequest(-1, 1))
    assert (await c.send(PING)).error_code == 0
    await c.close()


async def test_an_unanswered_request_times_out_failing_all_in_flight_and_closing(server):
    c = await connect(server)
    slow = asyncio.ensure_future(c.send(m.StopReplicaRequest(1, 1, 1, []), timeout_s=0.2))
    # Behind the unanswered one, so its response can never come first.
    queued = asyncio.ensure_future(c.send(fetch_request(1), timeout_s=30))
    with pytest.raises(RequestTimedOutError, match="no response"):
        await slow
    with pytest.raises(RequestTimedOutError):
        await queued
    assert not c.connected
    with pytest.raises(NetworkError):
        await c.send(fetch_request(2))


async def test_a_brokers_request_timed_out_answer_keeps_the_connection(server):
    c = await connect(server)
    with pytest.raises(RequestTimedOutError, match="broker's own timeout"):
        await c.send(m.OffsetForLeaderEpochRequest(1, []), timeout_s=5)
    assert c.connected
    assert (await c.send(fetch_request(4))).topics[0].partitions[0].high_watermark == 40
    await c.close()


async def test_a_request_answered_with_nothing_leaves_later_answers_matched(server):
    c = await connect(server)
    assert await c.send(UNANSWERED, expect_response=False) is None
    r = await c.send(fetch_request(3))
    assert r.topics[0].partitions[0].high_watermark == 30
    await c.close()


async def raw_exchange(server, payload: bytes, read: bool = True) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(payload)
    await writer.drain()
    data = b""
    if read:
        data = await asyncio.wait_for(reader.read(), 5)  # until the server closes or answers+closes
    writer.close()
    return data


def frame(meta, data=b""):
    packed = msgpack.packb(meta, use_bin_type=True)
    body = struct.pack(">I", len(packed)) + packed + data
    return struct.pack(">I", len(body)) + body


@pytest.mark.parametrize(
    "payload",
    [
        struct.pack(">I", 10 * 1024 * 1024) + b"x" * 100,  # oversized frame
        struct.pack(">I", 5) + b"\x00\x00\x00\x01\xc1",  # not msgpack
        frame({"not": "a list"}),
    ],
    ids=["oversized", "not-msgpack", "bad-meta"],
)
async def test_untrustworthy_frames_close_only_that_connection(server, payload):
    other = await connect(server)
    assert await raw_exchange(server, payload) == b""  # closed without an answer
    assert (await other.send(PING)).error_code == 0
    fresh = await connect(server)
    assert (await fresh.send(PING)).error_code == 0
    await other.close()
    await fresh.close()


async def test_truncated_frame_then_disconnect_does_not_hurt_the_server(server):
    await raw_exchange(server, struct.pack(">I", 1000) + b"partial", read=False)
    c = await connect(server)
    assert (await c.send(PING)).error_code == 0
    await c.close()


async def test_unknown_api_key_gets_invalid_request_and_connection_stays_open(server):
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(frame([[4242, 0, 7, "x"], []]) + frame([[7, 0, 8, "x"], [1, 1]]))
    await writer.drain()
    answers = []
    for _ in range(2):
        (size,) = struct.unpack(">I", await reader.readexactly(4))
        body = await reader.readexactly(size)
        (meta_size,) = struct.unpack(">I", body[:4])
        answers.append(msgpack.unpackb(body[4 : 4 + meta_size], raw=False))
    assert answers[0][0][:2] == [7, int(InvalidRequestError.code)]
    assert "unknown api key 4242" in answers[0][0][2]
    assert answers[1][0] == [8, 0, None]
    writer.close()


async def test_connection_loss_fails_in_flight_requests():
    async def slow(header, request):
        await asyncio.sleep(10)

    s = SocketServer(slow, "127.0.0.1", 0)
    await s.start()
    c = BrokerConnection("127.0.0.1", s.port)
    await c.connect()
    pending = asyncio.ensure_future(c.send(PING))
    await asyncio.sleep(0.05)
    await s.stop()
    with pytest.raises(NetworkError):
        await asyncio.wait_for(pending, 5)
    with pytest.raises(NetworkError):
        await c.send(PING)


async def test_requests_read_before_a_disconnect_still_run():
    seen = asyncio.Event()

    async def record(header, request):
        await asyncio.sleep(0.05)
        seen.set()
        return NO_RESPONSE

    s = SocketServer(record, "127.0.0.1", 0)
    await s.start()
    c = BrokerConnection("127.0.0.1", s.port)
    await c.connect()
    await c.send(UNANSWERED, expect_response=False)
    await c.close()
    await asyncio.wait_for(seen.wait(), 5)
    await s.stop()


class EchoKafka:
    """A Kafka handler answering any request with an empty frame of its correlation id."""

    def __init__(self) -> None:
        self.versions = {18: (0, 3)}
        self.requests: list[object] = []

    def serves(self, api_key: int) -> bool:
        return api_key in self.versions

    async def handle(self, request, session=None):
        self.requests.append(request)
        return [struct.pack(">ii", 4, request.correlation_id)]


class SlowKafka(EchoKafka):
    """Answers after a random delay, noting any request that began before the previous
    one on its connection had been answered."""

    def __init__(self) -> None:
        super().__init__()
        self.running = 0
        self.overlapped: list[int] = []

    async def handle(self, request, session=None):
        self.running += 1
        if self.running > 1:
            self.overlapped.append(request.correlation_id)
        await asyncio.sleep(random.random() / 200)
        self.running -= 1
        return await super().handle(request, session)


async def test_pipelined_kafka_requests_are_handled_one_at_a_time_and_answered_in_order():
    kafka = SlowKafka()
    server = SocketServer(handler, "127.0.0.1", 0, kafka_handler=kafka)
    await server.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        # ApiVersions v0: header v1 (client id "t"), empty body; 40 of them in one write.
        frames = b""
        for correlation_id in range(40):
            body = struct.pack(">hhih", 18, 0, correlation_id, 1) + b"t"
            frames += struct.pack(">i", len(body)) + body
        writer.write(frames)
        answered = [
            struct.unpack(">ii", await asyncio.wait_for(reader.readexactly(8), 5))[1]
            for _ in range(40)
        ]
        writer.close()
    finally:
        await server.stop()
    assert answered == list(range(40))
    assert [r.correlation_id for r in kafka.requests] == list(range(40))
    assert kafka.overlapped == []


async def test_a_kafka_request_versions_codecs_load_off_the_event_loop(monkeypatch):
    from minikafka.protocol.kafka import codec
    from minikafka.server import network

    loaded_in: list[threading.Thread] = []
    real_load = network.load_codecs

    def load(api_key: int, api_version: int, served: dict[int, tuple[int, int]]) -> None:
        loaded_in.append(threading.current_thread())
        real_load(api_key, api_version, served)

    monkeypatch.setattr(network, "load_codecs", load)
    monkeypatch.setattr(codec, "_loaded", set())  # as in a broker that never met ApiVersions v3
    kafka = EchoKafka()
    server = SocketServer(handler, "127.0.0.1", 0, kafka_handler=kafka)
    await server.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        # ApiVersions v3: header v2 (client id "t", no tags), body: software name and
        # version as compact strings, no tags.
        body = struct.pack(">hhi", 18, 3, 77) + struct.pack(">h", 1) + b"t\x00"
        body += b"\x02a\x02b\x00"
        writer.write(struct.pack(">i", len(body)) + body)
        size, correlation_id = struct.unpack(">ii", await reader.readexactly(8))
        assert (size, correlation_id) == (4, 77)
        writer.close()
    finally:
        await server.stop()
    assert len(loaded_in) == 1 and loaded_in[0] is not threading.main_thread()
    assert codec.codecs_loaded(18, 3, kafka.versions)
    assert [r.api_version for r in kafka.requests] == [3]
