"""The chaos workload: producers of unique integers, a live consumer, and observers of the
cluster's state in ZooKeeper, all recording into one History.

Recording contract (what makes the checker sound, see minikafka.chaos.checker):
- one attempt per unique value, recorded with one monotonic clock;
- producers run with retries=0, so an error is the outcome of the only try: only
  NOT_ENOUGH_REPLICAS (checked before the append) is a definite failure, everything else
  (timeouts, network errors, NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER,
  which a leader also answers after appending when it loses leadership) is in doubt;
- the live consumer never resets its position silently (auto.offset.reset=none): a reset
  starts a new read sequence under a new consumer id;
- leaders, epochs, ISRs and the controller are read from ZooKeeper, not from brokers'
  caches, so an epoch going backwards is a real regression.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from minikafka.chaos.history import (
    ConsumerRead,
    ControllerObservation,
    History,
    IsrObservation,
    LeaderObservation,
    Outcome,
    ProduceAttempt,
    RecordValue,
)
from minikafka.client import Consumer, Producer
from minikafka.client.accumulator import RecordMetadata
from minikafka.client.errors import NoOffsetForPartitionError
from minikafka.common import TopicPartition
from minikafka.protocol.errors import KafkaError, NotEnoughReplicasError
from minikafka.zk.client import ZkClient

Clock = Callable[[], float]


def decode_value(value: bytes | None) -> RecordValue:
    """A record value as the workload wrote it (a decimal integer), else its hex."""
    if value is None:
        return None
    if value.isdigit():
        return int(value)
    return value.hex()


@dataclass
class Workload:
    """Producers and a consumer on `topic`; everything they see goes into `history`."""

    bootstrap: str
    topic: str
    history: History
    clock: Clock
    producers: int = 3
    rate_per_producer: float = 100.0  # sends per second each
    # Sends awaiting an answer, per producer. None: enough for `request_timeout_ms` of sends
    # at the full rate, so sends stuck on one dead leader never starve the other partitions
    # (each fault then shows up in its own partitions' availability, as in Kafka).
    max_in_flight: int | None = None
    request_timeout_ms: int = 5000
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _next_value: int = 0
    consumer_resets: int = 0

    def stop(self) -> None:
        self._stop.set()

    def _value(self) -> int:
        v = self._next_value
        self._next_value += 1
        return v

    async def run_producer(self, index: int) -> None:
        producer = Producer(
            self.bootstrap,
            acks="all",
            retries=0,
            linger_ms=1,
            request_timeout_ms=self.request_timeout_ms,
            delivery_timeout_ms=self.request_timeout_ms + 1000,
            max_block_ms=self.request_timeout_ms,
        )
        pending: set[asyncio.Task[None]] = set()
        interval = 1.0 / self.rate_per_producer
        max_in_flight = self.max_in_flight or math.ceil(
            self.rate_per_producer * (self.request_timeout_ms / 1000 + 1)
        )
        try:
            next_send = time.monotonic()
            while not self._stop.is_set():
                if len(pending) >= max_in_flight:
                    await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    continue
                task = asyncio.create_task(self._send(producer, index, self._value()))
                pending.add(task)
                task.add_done_callback(pending.discard)
                next_send += interval
                delay = next_send - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                else:
                    next_send = time.monotonic()  # behind: do not burst to catch up
            if pending:
                await asyncio.wait(pending, timeout=(self.request_timeout_ms + 2000) / 1000)
        finally:
            for t in pending:
                t.cancel()
            await producer.close()

    async def _send(self, producer: Producer, index: int, value: int) -> None:
        invoked = self.clock()
        outcome, md, error = Outcome.INFO, None, None
        try:
            fut = await producer.send(self.topic, str(value).encode())
            md = await fut
            outcome = Outcome.OK
        except asyncio.CancelledError:
            error = "still pending when the run stopped"
        except NotEnoughReplicasError as e:
            outcome, error = Outcome.FAIL, str(e)
        except KafkaError as e:
            error = f"{type(e).__name__}: {e}"
        except Exception as e:  # anything else: the write may or may not have happened
            error = f"{type(e).__name__}: {e}"
        self.history.attempts.append(self._attempt(value, invoked, outcome, md, index, error))

    def _attempt(
        self,
        value: int,
        invoked: float,
        outcome: Outcome,
        md: RecordMetadata | None,
        producer: int,
        error: str | None,
    ) -> ProduceAttempt:
        done = None if error == "still pending when the run stopped" else self.clock()
        if outcome is Outcome.OK and md is not None:
            return ProduceAttempt(
                value, invoked, outcome, done, md.partition, md.offset, producer=producer
            )
        return ProduceAttempt(value, invoked, outcome, done, producer=producer, error=error)

    async def run_consumer(self) -> None:
        """Reads as it goes, from the start of every partition."""
        consumer_id = 0
        while not self._stop.is_set():
            async with Consumer(self.bootstrap, auto_offset_reset="none") as consumer:
                await consumer.assign_topic(self.topic)
                consumer.seek_to_beginning()
                try:
                    while not self._stop.is_set():
                        for r in await consumer.poll(200):
                            self.history.reads.append(
                                ConsumerRead(
                                    self.clock(),
                                    r.partition,
                                    r.offset,
                                    decode_value(r.value),
                                    consumer_id,
                                )
                            )
                except NoOffsetForPartitionError:
                    # Out of range: start over from the beginning as a new read sequence.
                    self.consumer_resets += 1
                    consumer_id += 1
                except KafkaError:
                    consumer_id += 1
                    await asyncio.sleep(0.2)


class StateObserver:
    """Polls the state znodes, /controller and /controller_epoch; records changes."""

    def __init__(
        self, zk: ZkClient, topic: str, partitions: int, history: History, clock: Clock
    ) -> None:
        self._zk = zk
        self._tps = [TopicPartition(topic, p) for p in range(partitions)]
        self._history = history
        self._clock = clock
        self._last_leader: dict[int, tuple[int, int]] = {}
        self._last_isr: dict[int, tuple[int, ...]] = {}
        self._last_controller: tuple[int, int] | None = None
        self.leaders: dict[int, int] = {}

    def leader_of(self, partition: int) -> int | None:
        return self.leaders.get(partition)

    def isr_of(self, partition: int) -> tuple[int, ...]:
        """The ISR last read from the partition's state znode (empty before the first read)."""
        return self._last_isr.get(partition, ())

    def poll_once(self) -> None:
        """One read of everything (blocking: run it in a thread)."""
        now = self._clock()
        for tp, st in self._zk.get_partition_states(self._tps).items():
            p = tp.partition
            self.leaders[p] = st.leader
            if self._last_leader.get(p) != (st.leader, st.leader_epoch):
                self._last_leader[p] = (st.leader, st.leader_epoch)
                self._history.leaders.append(LeaderObservation(now, p, st.leader, st.leader_epoch))
            if self._last_isr.get(p) != tuple(st.isr):
                self._last_isr[p] = tuple(st.isr)
                self._history.isr.append(IsrObservation(now, p, tuple(st.isr)))
        controller_id = self._zk.get_controller_id()
        epoch = self._zk.get_controller_epoch()
        if controller_id is not None and epoch is not None:
            seen = (controller_id, epoch[0])
            if seen != self._last_controller:
                self._last_controller = seen
                self._history.controllers.append(ControllerObservation(now, *seen))

    async def run(self, stop: asyncio.Event, interval_s: float = 0.1) -> None:
        while not stop.is_set():
            # ZooKeeper itself may be the nemesis' target: keep polling.
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self.poll_once)
            try:
                async with asyncio.timeout(interval_s):
                    await stop.wait()
            except TimeoutError:
                pass
