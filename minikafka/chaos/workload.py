"""The chaos workload: producers of unique integers, a live consumer, and observers of the
cluster's state in ZooKeeper, all recording into one History. The producers and the
consumer are librdkafka's (confluent-kafka), over Kafka's protocol, as users' clients are.

Recording contract (what makes the checker sound, see minikafka.chaos.checker):
- one attempt per unique value, recorded with one monotonic clock;
- plain producers (the default) run with retries=0 and without idempotence, so an error is
  the outcome of the only try: only NOT_ENOUGH_REPLICAS (checked before the append) is a
  definite failure, everything else (timeouts, network errors,
  NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER, which a leader also answers
  after appending when it loses leadership) is in doubt;
- idempotent producers (ProducerMode.IDEMPOTENT) run as Kafka users run them:
  enable.idempotence, acks=all, librdkafka's retries (until the delivery timeout) and its
  five requests in flight per connection. librdkafka retries inside one attempt, so a
  value is still attempted once; its outcome is the last try's, which may follow a try that
  was written, so every error is in doubt. The delivery timeout outlasts a fault, and at
  the end the workload waits that long for the outcomes, so a record acknowledged after a
  long retry is recorded acknowledged. A fatal error (the producer's idempotence state
  broken beyond an epoch bump) stops that producer and is recorded in `fatal_errors`;
- the live consumer never resets its position silently (auto.offset.reset=error): a reset,
  and a rewind after librdkafka detects a log truncation, start a new read sequence under a
  new consumer id;
- leaders, epochs, ISRs and the controller are read from ZooKeeper, not from brokers'
  caches, so an epoch going backwards is a real regression.

librdkafka runs its callbacks inside poll(): the producers poll on the event loop, so every
outcome is recorded there, with the clock read when librdkafka hands it over.

The group workload (GroupWorkload): members of one consumer group, each a librdkafka
Consumer subscribed to the topic, committing by hand what they were given:
- a member records every record poll gives it before it counts it processed, and commits
  only offsets just past records it was given (the next offset per partition it owns), so
  a committed offset past a record no member was given is the cluster's doing;
- a commit is recorded acknowledged only when the commit returned (synchronous) or its
  callback reported (asynchronous) every partition asked with no error; an exception or
  any partition's error leaves it failed (a refusal before any write) or in doubt;
- with asynchronous commits, a member commits every few records without waiting, so
  several of its commits are in flight to the coordinator at once, in the order it sent
  them (Kafka processes one connection's requests in that order); an observer reads the
  group's committed offsets back meanwhile, so that a commit applied after a later one
  shows (the checker's commit order);
- revoked partitions are committed in the revoke callback, then forgotten: a member never
  commits a partition it no longer owns (lost partitions are not committed at all);
- every assignment change is recorded as the callbacks report it.
A member's poll, commits and callbacks run in a thread of its own (a synchronous commit
blocks while the coordinator moves); they buffer their events with the clock read when
each happens, and the event loop appends them to the history after each step.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from minikafka.chaos.history import (
    AssignmentChange,
    ConsumerRead,
    ControllerObservation,
    GroupAssignment,
    GroupCommit,
    GroupEvent,
    GroupOffsetRead,
    GroupRead,
    History,
    IsrObservation,
    LeaderObservation,
    Outcome,
    ProduceAttempt,
    ProducerMode,
    RecordValue,
)
from minikafka.common import TopicPartition
from minikafka.rules.consumer_offsets import OFFSETS_TOPIC, partition_for
from minikafka.zk.client import ZkClient

if TYPE_CHECKING:
    from confluent_kafka import Consumer, KafkaError
    from confluent_kafka import TopicPartition as RdTopicPartition

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


# The idempotent producer's delivery timeout: a record rides out a fault window (10 s by
# default, 16 s in the README's longest schedule), the leader elections and ISR recovery
# after it, and is acknowledged by a retry rather than given up in doubt. librdkafka's own
# default (300 s) would only make a stuck run wait longer for its last outcomes.
IDEMPOTENT_DELIVERY_TIMEOUT_MS = 60_000


def delivery_timeout_ms(mode: ProducerMode, request_timeout_ms: int) -> int:
    """How long a record may wait for its outcome: one request (plus a second for the
    queue) with one try, IDEMPOTENT_DELIVERY_TIMEOUT_MS of retries with idempotence."""
    if mode is ProducerMode.IDEMPOTENT:
        return IDEMPOTENT_DELIVERY_TIMEOUT_MS
    return request_timeout_ms + 1000


def producer_config(
    bootstrap: str, request_timeout_ms: int, mode: ProducerMode = ProducerMode.PLAIN
) -> dict[str, Any]:
    """acks=all, and per mode (module docstring): plain, one try per record (retries=0,
    no idempotence, which would retry); idempotent, Kafka's idempotent producer with
    librdkafka's retries and requests in flight."""
    from minikafka.client.librdkafka import client_config

    if mode is ProducerMode.IDEMPOTENT:
        sending: dict[str, Any] = {
            "enable.idempotence": True,
            "retries": 2_147_483_647,  # librdkafka's default: retry until the timeout
            "max.in.flight.requests.per.connection": 5,  # the most idempotence allows
        }
    else:
        sending = {"enable.idempotence": False, "retries": 0}
    return client_config(
        bootstrap,
        {
            "acks": "all",
            **sending,
            "linger.ms": 1,
            "request.timeout.ms": request_timeout_ms,
            "delivery.timeout.ms": delivery_timeout_ms(mode, request_timeout_ms),
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
    # Sends awaiting an answer, per producer. None: enough for a delivery timeout of sends
    # at the full rate, so sends stuck on one dead leader never starve the other partitions
    # (each fault then shows up in its own partitions' availability, as in Kafka).
    max_in_flight: int | None = None
    request_timeout_ms: int = 5000
    producer_mode: ProducerMode = ProducerMode.PLAIN
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _next_value: int = 0
    consumer_resets: int = 0
    # "producer N: error" for each producer stopped by a fatal error (module docstring).
    fatal_errors: list[str] = field(default_factory=list)

    def stop(self) -> None:
        self._stop.set()

    def _value(self) -> int:
        v = self._next_value
        self._next_value += 1
        return v

    async def run_producer(self, index: int) -> None:
        from confluent_kafka import KafkaError, KafkaException

        from minikafka.client.librdkafka import new_producer

        fatal: list[str] = []

        def is_fatal(err: KafkaError) -> bool:
            return bool(err.fatal()) or err.code() == KafkaError._FATAL

        def fatal_error(err: KafkaError) -> None:
            # librdkafka reports a fatal error once, to error_cb (with the error behind
            # it), and refuses every produce() after it with _FATAL.
            if is_fatal(err) and not fatal:
                fatal.append(f"producer {index}: {err.name()}: {err.str()}")
                self.fatal_errors.append(fatal[0])

        timeout_ms = delivery_timeout_ms(self.producer_mode, self.request_timeout_ms)
        producer = new_producer(
            {
                **producer_config(self.bootstrap, self.request_timeout_ms, self.producer_mode),
                "error_cb": fatal_error,
            }
        )
        pending: dict[int, float] = {}  # value -> invoke time
        stopped = False

        def delivered(value: int, err: Any, msg: Any) -> None:
            invoked = pending.pop(value, None)
            if stopped or invoked is None:
                return  # already recorded as still pending
            self.history.attempts.append(self._outcome(index, value, invoked, err, msg))

        interval = 1.0 / self.rate_per_producer
        max_in_flight = self.max_in_flight or math.ceil(
            self.rate_per_producer * (timeout_ms / 1000 + 1)
        )
        try:
            next_send = time.monotonic()
            # After a fatal error every send would fail at once: this producer is done.
            while not self._stop.is_set() and not fatal:
                # At the cap a tick sends nothing (the rate is kept, not made up for later).
                if len(pending) < max_in_flight:
                    value = self._value()
                    pending[value] = invoked = self.clock()
                    try:
                        producer.produce(
                            self.topic,
                            str(value).encode(),
                            on_delivery=functools.partial(delivered, value),
                        )
                    except KafkaException as e:
                        if not is_fatal(e.args[0]):
                            raise
                        # Refused before librdkafka took it: never sent.
                        del pending[value]
                        self.history.attempts.append(
                            ProduceAttempt(
                                value,
                                invoked,
                                Outcome.FAIL,
                                self.clock(),
                                producer=index,
                                error=f"{e.args[0].name()}: {e.args[0].str()}",
                            )
                        )
                        fatal_error(e.args[0])
                        break
                producer.poll(0)
                next_send += interval
                delay = next_send - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                else:
                    next_send = time.monotonic()  # behind: do not burst to catch up
            # Every record still pending gets its outcome within the delivery timeout.
            deadline = time.monotonic() + (timeout_ms + 2000) / 1000
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
        # Refused before the append: nothing was written. Anything else may have been, and
        # with retries so may an earlier try of a refused one.
        definite = (
            self.producer_mode is ProducerMode.PLAIN
            and err.code() == KafkaError.NOT_ENOUGH_REPLICAS
        )
        outcome = Outcome.FAIL if definite else Outcome.INFO
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


def group_member_config(
    bootstrap: str, group: str, client_id: str, session_timeout_ms: int
) -> dict[str, Any]:
    """A member committing by hand from the earliest offset when the group has none (a
    reset to the start can only give records again, never skip them), with a short
    session so that a member cut off by a fault is replaced within the run."""
    from minikafka.client.librdkafka import client_config

    return client_config(
        bootstrap,
        {
            "group.id": group,
            "client.id": client_id,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": False,
            "session.timeout.ms": session_timeout_ms,
            "heartbeat.interval.ms": 500,
            # A request to a frozen coordinator blocks a synchronous commit this long at
            # most (librdkafka's 60 s would outlast a fault window).
            "socket.timeout.ms": 10_000,
            **QUIET,
        },
    )


# Refusals a coordinator answers before it writes anything: the commit definitely failed.
# Every other error (timeouts, a coordinator moving, a write that failed after the append)
# leaves it in doubt.
_COMMIT_REFUSALS = frozenset(
    {
        22,  # ILLEGAL_GENERATION
        25,  # UNKNOWN_MEMBER_ID
        27,  # REBALANCE_IN_PROGRESS
        82,  # FENCED_INSTANCE_ID
    }
)


def _commit_outcome(err: KafkaError) -> Outcome:
    from confluent_kafka import KafkaError

    if err.code() in _COMMIT_REFUSALS or err.code() in (
        KafkaError._NO_OFFSET,  # nothing to commit: librdkafka sent nothing
        KafkaError._WAIT_COORD,  # no coordinator in time: never sent
        KafkaError._ASSIGNMENT_LOST,
        KafkaError._STATE,
    ):
        return Outcome.FAIL
    return Outcome.INFO


class GroupMember:
    """One Consumer of the chaos group (module docstring: the group workload). Blocking:
    every method runs on the member's own thread, one at a time."""

    def __init__(
        self,
        member_id: int,
        config: Mapping[str, Any],
        topic: str,
        clock: Clock,
        commit_every: int,
        commit_interval_s: float,
        drop_every: int = 0,
        asynchronous: bool = False,
    ) -> None:
        from minikafka.client.librdkafka import new_consumer

        self.id = member_id
        self.topic = topic
        self._clock = clock
        self._commit_every = commit_every
        self._commit_interval_s = commit_interval_s
        self._drop_every = drop_every
        self._asynchronous = asynchronous
        if asynchronous:
            config = {**config, "on_commit": self._on_commit}
        self._consumer: Consumer = new_consumer(config)
        self._owned: set[int] = set()
        # Per partition owned: the offset after the last record processed since it was
        # assigned, and the last offset this member's commit of it was acknowledged for.
        self._processed: dict[int, int] = {}
        self._committed: dict[int, int] = {}
        # Asynchronous commits sent and not yet answered, oldest first: (invoked, offsets);
        # and per partition the highest offset among them.
        self._in_flight: list[tuple[float, dict[int, int]]] = []
        self._asked: dict[int, int] = {}
        self._since_commit = 0
        self._last_commit = time.monotonic()
        self._given = 0
        self._events: list[GroupEvent] = []
        self.errors: Counter[str] = Counter()
        self.fatal = False

    def subscribe(self) -> list[GroupEvent]:
        self._consumer.subscribe(
            [self.topic],
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )
        return self._take_events()

    def step(self, poll_s: float = 0.2) -> list[GroupEvent]:
        """Poll once (the rebalance callbacks run inside), record what was given, and
        commit when `commit_every` records or `commit_interval_s` have passed since the
        last commit with something left to commit (a failed commit is asked again)."""
        from minikafka.client.librdkafka import consume_ready, kafka_error_text, position

        batch = consume_ready(self._consumer, 500, poll_s)
        now = self._clock()
        for msg in batch:
            err = msg.error()
            if err is not None:
                self.errors[kafka_error_text(err).split(":", 1)[0]] += 1
                self.fatal = self.fatal or err.fatal()
                continue
            p, offset = position(msg)
            self._given += 1
            if not (self._drop_every and self._given % self._drop_every == 0):
                self._events.append(GroupRead(now, self.id, p, offset, decode_value(msg.value())))
            # A broken member (drop_every, for the checker's negative control) counts the
            # record it did not record as processed, and so commits past it.
            if p in self._owned:
                self._processed[p] = max(self._processed.get(p, 0), offset + 1)
                self._since_commit += 1
                if self._asynchronous and self._since_commit >= self._commit_every:
                    self._commit_async(self._pending())
        if self._asynchronous:
            # What is left of the batch, and nothing waited for.
            if (
                self._since_commit
                or time.monotonic() - self._last_commit >= self._commit_interval_s
            ):
                self._commit_async(self._pending())
            return self._take_events()
        pending = self._pending()
        if pending and (
            self._since_commit >= self._commit_every
            or time.monotonic() - self._last_commit >= self._commit_interval_s
        ):
            self._commit(pending)
        return self._take_events()

    def commit_pending(self) -> list[GroupEvent]:
        """Commit whatever was processed and not yet acknowledged (at the end of the run)."""
        pending = self._pending()
        if pending:
            self._commit(pending)
        return self._take_events()

    def close(self) -> list[GroupEvent]:
        """Leave the group (the revoke callback commits what is left first). Asynchronous
        commits still unanswered then are in doubt."""
        with contextlib.suppress(Exception):
            self._consumer.close()
        for invoked, offsets in self._in_flight:
            self._events.append(
                GroupCommit(self.id, invoked, Outcome.INFO, None, offsets, error=STILL_PENDING)
            )
        self._in_flight.clear()
        return self._take_events()

    def _take_events(self) -> list[GroupEvent]:
        events, self._events = self._events, []
        return events

    def _pending(self) -> dict[int, int]:
        """Processed past what was acknowledged, or is being committed."""
        return {
            p: o
            for p, o in self._processed.items()
            if p in self._owned and o > max(self._committed.get(p, -1), self._asked.get(p, -1))
        }

    def _record_refused(self, invoked: float, offsets: Mapping[int, int], e: Exception) -> None:
        """A commit librdkafka raised for (never sent, or failed as a whole)."""
        from minikafka.client.librdkafka import kafka_error_text

        err = e.args[0]
        self._events.append(
            GroupCommit(
                self.id,
                invoked,
                _commit_outcome(err),
                self._clock(),
                offsets,
                error=kafka_error_text(err),
            )
        )

    def _commit_async(self, offsets: Mapping[int, int]) -> None:
        """Send a commit and go on; `_on_commit` records how it ended."""
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as RdTopicPartition

        self._since_commit = 0
        self._last_commit = time.monotonic()
        if not offsets:
            return
        asked = [RdTopicPartition(self.topic, p, o) for p, o in sorted(offsets.items())]
        invoked = self._clock()
        try:
            self._consumer.commit(offsets=asked, asynchronous=True)
        except KafkaException as e:
            self._record_refused(invoked, offsets, e)
            return
        self._in_flight.append((invoked, dict(offsets)))
        self._asked.update(offsets)

    def _on_commit(self, err: KafkaError | None, partitions: list[RdTopicPartition]) -> None:
        """librdkafka's answer to an asynchronous commit (served by poll, on this member's
        thread): matched to the oldest commit in flight that asked for these offsets."""
        from minikafka.client.librdkafka import kafka_error_text

        answered = {tp.partition: tp.offset for tp in partitions}
        i = next((i for i, (_, o) in enumerate(self._in_flight) if o == answered), None)
        if i is None:
            return  # a synchronous commit's (they are recorded where they return)
        invoked, offsets = self._in_flight.pop(i)
        errors = {
            tp.partition: kafka_error_text(tp.error) for tp in partitions if tp.error is not None
        }
        if err is None and not errors:
            outcome = Outcome.OK
            self._committed.update(offsets)
        else:
            first = err if err is not None else next(tp.error for tp in partitions if tp.error)
            outcome = _commit_outcome(first)
        done = self._clock()
        error = None if err is None else kafka_error_text(err)
        self._events.append(GroupCommit(self.id, invoked, outcome, done, offsets, errors, error))
        # Asked again if it failed; the highest offset still in flight otherwise.
        self._asked = {}
        for _, o in self._in_flight:
            for p, offset in o.items():
                self._asked[p] = max(self._asked.get(p, offset), offset)

    def _commit(self, offsets: Mapping[int, int]) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as RdTopicPartition

        from minikafka.client.librdkafka import kafka_error_text

        asked = [RdTopicPartition(self.topic, p, o) for p, o in sorted(offsets.items())]
        invoked = self._clock()
        self._since_commit = 0
        self._last_commit = time.monotonic()
        try:
            answer: list[RdTopicPartition] | None = self._consumer.commit(
                offsets=asked, asynchronous=False
            )
        except KafkaException as e:
            self._record_refused(invoked, offsets, e)
            return
        done = self._clock()
        got = {tp.partition: tp for tp in answer or []}
        errors: dict[int, str] = {}
        outcome = Outcome.OK
        for p, o in offsets.items():
            tp = got.get(p)
            if tp is None or tp.error is not None or tp.offset != o:
                # Only an answer for exactly what was asked is an acknowledgement.
                errors[p] = (
                    "missing from the answer"
                    if tp is None
                    else kafka_error_text(tp.error)
                    if tp.error is not None
                    else f"answered offset {tp.offset}"
                )
                if tp is None or tp.error is None:
                    outcome = Outcome.INFO
                elif outcome is Outcome.OK:
                    outcome = _commit_outcome(tp.error)
        self._events.append(GroupCommit(self.id, invoked, outcome, done, offsets, errors))
        if outcome is Outcome.OK:
            self._committed.update(offsets)

    def _on_assign(self, _: Consumer, partitions: list[RdTopicPartition]) -> None:
        self._change(AssignmentChange.ASSIGN, [tp.partition for tp in partitions])

    def _on_revoke(self, _: Consumer, partitions: list[RdTopicPartition]) -> None:
        revoked = {tp.partition for tp in partitions}
        pending = {p: o for p, o in self._pending().items() if p in revoked}
        if pending:
            # The standard handover: commit what was processed before giving it up.
            self._commit(pending)
        self._change(AssignmentChange.REVOKE, revoked)

    def _on_lost(self, _: Consumer, partitions: list[RdTopicPartition]) -> None:
        # Others may own them already: a commit now could move their offsets back.
        self._change(AssignmentChange.LOST, [tp.partition for tp in partitions])

    def _change(self, change: AssignmentChange, partitions: Iterable[int]) -> None:
        changed = set(partitions)
        if change is AssignmentChange.ASSIGN:
            self._owned |= changed
        else:
            self._owned -= changed
        for p in changed:
            # Assigned or taken away: what was processed before is another owner's story.
            self._processed.pop(p, None)
            self._committed.pop(p, None)
            self._asked.pop(p, None)
        self._events.append(
            GroupAssignment(self._clock(), self.id, change, tuple(changed), tuple(self._owned))
        )


@dataclass
class GroupWorkload:
    """`members` members of consumer group `group` on `topic`, recording into `history`
    (module docstring: the group workload). `run()` until `finish()`: the members keep
    consuming and committing until the group's acknowledged commits reach the targets (the
    final high watermarks), then commit and leave the group.

    `drop_every` > 0 makes member 0 broken, for the checker's negative control: every
    `drop_every`-th record it is given goes unrecorded, yet it commits past it.

    `asynchronous_commits`: members commit without waiting, every `commit_every` records,
    and the group's committed offsets of `partitions` partitions are read back every
    `offset_read_interval_s` meanwhile (and once after the members left)."""

    bootstrap: str
    topic: str
    history: History
    clock: Clock
    members: int = 2
    group: str = ""  # default: chaos-<topic>
    commit_every: int = 20
    commit_interval_s: float = 0.2
    session_timeout_ms: int = 6000
    drop_every: int = 0
    asynchronous_commits: bool = False
    partitions: int = 0
    offset_read_interval_s: float = 0.1
    errors: Counter[str] = field(default_factory=Counter)
    # partition -> the highest offset an acknowledged commit of any member reached
    acked: dict[int, int] = field(default_factory=dict)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _caught_up: asyncio.Event = field(default_factory=asyncio.Event)
    _targets: dict[int, int] | None = None
    _next_member: int = 0
    _running: int = 0
    _members_left: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.group = self.group or f"chaos-{self.topic}"
        self.history.group = self.group

    async def run(self) -> None:
        # A member that fails stops the others: a run without its group would be judged on
        # what it recorded before, as if the group had stopped consuming.
        async with asyncio.TaskGroup() as tg:
            for i in range(self.members):
                tg.create_task(self._run_member(i))
            if self.asynchronous_commits and self.partitions:
                tg.create_task(self._read_offsets())

    async def _read_offsets(self) -> None:
        """Read the group's committed offsets every `offset_read_interval_s` while the
        members run, and once more after they left (as a client does: OffsetFetch to the
        coordinator, by a consumer of the group that never joins it)."""
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as RdTopicPartition

        from minikafka.client.librdkafka import client_config, new_consumer

        config = client_config(
            self.bootstrap,
            {
                "group.id": self.group,
                "enable.auto.commit": False,
                "socket.timeout.ms": 5000,
                **QUIET,
            },
        )
        asked = [RdTopicPartition(self.topic, p) for p in range(self.partitions)]
        loop = asyncio.get_running_loop()
        executor = ThreadPoolExecutor(1, thread_name_prefix="chaos-group-offsets")

        def read(reader: Consumer) -> None:
            invoked = self.clock()
            try:
                got = reader.committed(asked, timeout=5)
            except KafkaException:
                return  # the coordinator is away: nothing read
            offsets = {tp.partition: tp.offset for tp in got if tp.error is None and tp.offset >= 0}
            self.history.group_offset_reads.append(GroupOffsetRead(invoked, self.clock(), offsets))

        try:
            reader = await loop.run_in_executor(executor, new_consumer, config)
            try:
                while not self._stop.is_set():
                    await loop.run_in_executor(executor, read, reader)
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(self.offset_read_interval_s):
                            await self._stop.wait()
                await self._members_left.wait()
                await loop.run_in_executor(executor, read, reader)
            finally:
                await loop.run_in_executor(executor, reader.close)
        finally:
            executor.shutdown(wait=False)

    def stop(self) -> None:
        self._stop.set()

    async def finish(self, targets: Mapping[int, int], timeout_s: float) -> bool:
        """Wait until, for every partition of `targets`, an acknowledged commit reached its
        target offset (or `timeout_s` has passed), then stop the members. True if the group
        caught up."""
        self._targets = dict(targets)
        self._check_caught_up()
        try:
            async with asyncio.timeout(timeout_s):
                await self._caught_up.wait()
        except TimeoutError:
            pass
        self.stop()
        return self._caught_up.is_set()

    def _record(self, events: Iterable[GroupEvent]) -> None:
        for e in events:
            if isinstance(e, GroupRead):
                self.history.group_reads.append(e)
            elif isinstance(e, GroupCommit):
                self.history.group_commits.append(e)
                if e.outcome is Outcome.OK:
                    for p, o in e.offsets.items():
                        self.acked[p] = max(self.acked.get(p, o), o)
            else:
                self.history.group_assignments.append(e)
        self._check_caught_up()

    def _check_caught_up(self) -> None:
        if self._targets is not None and all(
            self.acked.get(p, 0) >= target for p, target in self._targets.items()
        ):
            self._caught_up.set()

    def _new_member(self) -> GroupMember:
        member_id = self._next_member
        self._next_member += 1
        config = group_member_config(
            self.bootstrap, self.group, f"chaos-member-{member_id}", self.session_timeout_ms
        )
        return GroupMember(
            member_id,
            config,
            self.topic,
            self.clock,
            self.commit_every,
            self.commit_interval_s,
            drop_every=self.drop_every if member_id == 0 else 0,
            asynchronous=self.asynchronous_commits,
        )

    async def _run_member(self, index: int) -> None:
        # A thread of its own: a synchronous commit blocks while the coordinator moves, and
        # must neither stall the loop nor take a thread the other recorders need.
        loop = asyncio.get_running_loop()
        executor = ThreadPoolExecutor(1, thread_name_prefix=f"chaos-group-{index}")
        self._running += 1
        try:
            while not self._stop.is_set():
                member = self._new_member()
                try:
                    self._record(await loop.run_in_executor(executor, member.subscribe))
                    while not self._stop.is_set() and not member.fatal:
                        self._record(await loop.run_in_executor(executor, member.step))
                    if not member.fatal:
                        self._record(await loop.run_in_executor(executor, member.commit_pending))
                finally:
                    self._record(await loop.run_in_executor(executor, member.close))
                    self.errors.update(member.errors)
        finally:
            executor.shutdown(wait=False)
            self._running -= 1
            if self._running == 0:
                self._members_left.set()


class StateObserver:
    """Polls the state znodes, /controller and /controller_epoch; records changes. With a
    consumer `group`, also its coordinator: the leader of its `__consumer_offsets`
    partition (changes go to `coordinators`, for the report's meta)."""

    def __init__(
        self,
        zk: ZkClient,
        topic: str,
        partitions: int,
        history: History,
        clock: Clock,
        group: str | None = None,
    ) -> None:
        self._zk = zk
        self._tps = [TopicPartition(topic, p) for p in range(partitions)]
        self._history = history
        self._clock = clock
        self._last_leader: dict[int, tuple[int, int]] = {}
        self._last_isr: dict[int, tuple[int, ...]] = {}
        self._last_controller: tuple[int, int] | None = None
        self.leaders: dict[int, int] = {}
        self._group = group
        self._offsets_tp: TopicPartition | None = None
        # (time, coordinator broker or -1, leader epoch of its offsets partition)
        self.coordinators: list[tuple[float, int, int]] = []

    def group_coordinator(self) -> int | None:
        """The broker coordinating the group now, read from ZooKeeper (blocking); None
        without a group, before `__consumer_offsets` exists, or with no leader."""
        if self._group is None:
            return None
        if self._offsets_tp is None:
            # Created by the first FindCoordinator; its partition count never changes.
            assignment = self._zk.get_assignment(OFFSETS_TOPIC)
            if not assignment:
                return None
            self._offsets_tp = TopicPartition(
                OFFSETS_TOPIC, partition_for(self._group, len(assignment))
            )
        st = self._zk.get_partition_state(self._offsets_tp)
        if st is None:
            return None
        now = self._clock()
        if not self.coordinators or self.coordinators[-1][1:] != (st.leader, st.leader_epoch):
            self.coordinators.append((now, st.leader, st.leader_epoch))
        return st.leader if st.leader >= 0 else None

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
        self.group_coordinator()

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
