"""The chaos workload: producers of unique integers, a live consumer, and observers of the
cluster's state in ZooKeeper, all recording into one History. The producers and the
consumer are librdkafka's (confluent-kafka), over Kafka's protocol, as users' clients are.

Recording contract (what makes the checker sound, see minikafka.chaos.checker):
- one attempt per unique value, recorded with one monotonic clock;
- producers run with retries=0 and without idempotence, so an error is the outcome of the
  only try: only NOT_ENOUGH_REPLICAS (checked before the append) is a definite failure,
  everything else (timeouts, network errors, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
  NOT_LEADER_OR_FOLLOWER, which a leader also answers after appending when it loses
  leadership) is in doubt;
- the live consumer never resets its position silently (auto.offset.reset=error): a reset,
  and a rewind after librdkafka detects a log truncation, start a new read sequence under a
  new consumer id;
- leaders, epochs, ISRs and the controller are read from ZooKeeper, not from brokers'
  caches, so an epoch going backwards is a real regression.

librdkafka runs its callbacks inside poll(): the producers poll on the event loop, so every
outcome is recorded there, with the clock read when librdkafka hands it over.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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
from minikafka.common import TopicPartition
from minikafka.zk.client import ZkClient

Clock = Callable[[], float]

STILL_PENDING = "still pending when the run stopped"


def decode_value(value: bytes | None) -> RecordValue:
    """A record value as the workload wrote it (a decimal integer), else its hex."""
    if value is None:
        return None
    if value.isdigit():
        return int(value)
    return value.hex()


# Faults are the point of a chaos run: librdkafka's logs of every refused connection and
# timed-out request would bury the run's own output (the history records each outcome).
QUIET = {"log_level": 2, "log.connection.close": False}


def producer_config(bootstrap: str, request_timeout_ms: int) -> dict[str, Any]:
    """One try per record (retries=0, no idempotence, which would retry), acks=all."""
    from minikafka.client.librdkafka import client_config

    return client_config(
        bootstrap,
        {
            "acks": "all",
            "enable.idempotence": False,
            "retries": 0,
            "linger.ms": 1,
            "request.timeout.ms": request_timeout_ms,
            "delivery.timeout.ms": request_timeout_ms + 1000,
            **QUIET,
        },
    )


def consumer_config(bootstrap: str, auto_offset_reset: str) -> dict[str, Any]:
    from minikafka.client.librdkafka import client_config

    return client_config(
        bootstrap,
        {
            "auto.offset.reset": auto_offset_reset,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": False,
            **QUIET,
        },
    )


@dataclass
class Workload:
    """Producers and a consumer on `topic`; everything they see goes into `history`."""

    bootstrap: str
    topic: str
    partitions: int
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
        from minikafka.client.librdkafka import new_producer

        producer = new_producer(producer_config(self.bootstrap, self.request_timeout_ms))
        pending: dict[int, float] = {}  # value -> invoke time
        stopped = False

        def delivered(value: int, err: Any, msg: Any) -> None:
            invoked = pending.pop(value, None)
            if stopped or invoked is None:
                return  # already recorded as still pending
            self.history.attempts.append(self._outcome(index, value, invoked, err, msg))

        interval = 1.0 / self.rate_per_producer
        max_in_flight = self.max_in_flight or math.ceil(
            self.rate_per_producer * (self.request_timeout_ms / 1000 + 1)
        )
        try:
            next_send = time.monotonic()
            while not self._stop.is_set():
                # At the cap a tick sends nothing (the rate is kept, not made up for later).
                if len(pending) < max_in_flight:
                    value = self._value()
                    pending[value] = self.clock()
                    producer.produce(
                        self.topic,
                        str(value).encode(),
                        on_delivery=functools.partial(delivered, value),
                    )
                producer.poll(0)
                next_send += interval
                delay = next_send - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                else:
                    next_send = time.monotonic()  # behind: do not burst to catch up
            deadline = time.monotonic() + (self.request_timeout_ms + 2000) / 1000
            while pending and time.monotonic() < deadline:
                producer.poll(0)
                await asyncio.sleep(0.01)
        finally:
            stopped = True
            for value, invoked in sorted(pending.items()):
                self.history.attempts.append(
                    ProduceAttempt(
                        value, invoked, Outcome.INFO, None, producer=index, error=STILL_PENDING
                    )
                )
            pending.clear()
            producer.purge()
            producer.poll(0)

    def _outcome(
        self, index: int, value: int, invoked: float, err: Any, msg: Any
    ) -> ProduceAttempt:
        from confluent_kafka import KafkaError

        done = self.clock()
        if err is None:
            return ProduceAttempt(
                value, invoked, Outcome.OK, done, msg.partition(), msg.offset(), producer=index
            )
        # Refused before the append: nothing was written. Anything else may have been.
        outcome = Outcome.FAIL if err.code() == KafkaError.NOT_ENOUGH_REPLICAS else Outcome.INFO
        return ProduceAttempt(
            value, invoked, outcome, done, producer=index, error=f"{err.name()}: {err.str()}"
        )

    async def run_consumer(self) -> None:
        """Reads as it goes, from the start of every partition."""
        from confluent_kafka import OFFSET_BEGINNING, KafkaError
        from confluent_kafka import TopicPartition as RdTopicPartition

        from minikafka.client.librdkafka import consume_ready, new_consumer, position

        consumer_id = 0
        while not self._stop.is_set():
            consumer = new_consumer(consumer_config(self.bootstrap, "error"))
            try:
                consumer.assign(
                    [
                        RdTopicPartition(self.topic, p, OFFSET_BEGINNING)
                        for p in range(self.partitions)
                    ]
                )
                restart = False
                while not self._stop.is_set() and not restart:
                    batch = await asyncio.to_thread(consume_ready, consumer, 500, 0.2)
                    now = self.clock()
                    for msg in batch:
                        err = msg.error()
                        if err is None:
                            p, offset = position(msg)
                            value = decode_value(msg.value())
                            self.history.reads.append(
                                ConsumerRead(now, p, offset, value, consumer_id)
                            )
                        elif err.code() == KafkaError._AUTO_OFFSET_RESET:
                            # Out of range: start over from the beginning as a new read
                            # sequence.
                            self.consumer_resets += 1
                            consumer_id += 1
                            restart = True
                            break
                        elif err.code() == KafkaError._LOG_TRUNCATION:
                            # librdkafka rewinds to where the new leader's log diverges:
                            # what follows is a new read sequence.
                            consumer_id += 1
                        elif err.fatal():
                            consumer_id += 1
                            restart = True
                            break
                        # Other errors (a broker down, a leader moving) are librdkafka's to
                        # retry; the position is kept.
            finally:
                await asyncio.to_thread(consumer.close)


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
