"""librdkafka (confluent-kafka) as the project's tools use it: configs by Kafka's property
names, checked before anything connects (librdkafka's own message for a bad one), metadata
of one topic, and a consumer read that returns as soon as records have arrived.

confluent-kafka is imported inside the functions: the broker image has no Kafka client
(its brokers never need one), and the `minikafka` command must start there all the same.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

from minikafka.client.client_security import client_security
from minikafka.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from concurrent.futures import Future

    from confluent_kafka import Consumer, KafkaError, Message, Producer
    from confluent_kafka.admin._metadata import ClusterMetadata, TopicMetadata

INSTALL_HINT = "pip install confluent-kafka"

T = TypeVar("T")

RETRY_BACKOFF_S = 0.1  # Kafka's retry.backoff.ms
# One try of a call that is asked again after a transient error, at most: a leader killed
# with kill -9 does not answer, and the try waits for it until this has passed.
TRY_TIMEOUT_S = 5.0


# librdkafka's log facilities of a connection failing (each retry logs it again); the
# commands say themselves when no broker answers, so these are INFO (-v shows them).
_CONNECTION_FACILITIES = frozenset({"FAIL", "CONNECT", "BROKERFAIL"})
# Parts of a log line that change between repeats of the same event.
_VOLATILE = re.compile(
    r"\(after \d+ms in state \w+(?:, \d+ identical error\(s\) suppressed)?\)"
    r"|#(?:producer|consumer)-\d+"
)
REPEAT_WINDOW_S = 30.0


class LibrdkafkaLogger(logging.Logger):
    """Where librdkafka's log goes (its `logger` property; confluent-kafka serves it in
    poll()): Python logging under `minikafka.librdkafka`, each distinct line at most once
    per REPEAT_WINDOW_S (the next one says how many were held back), a connection failure
    at INFO. Without it librdkafka prints to stderr, a line per broker per reconnect."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__("minikafka.librdkafka")
        self.parent = logging.getLogger("minikafka")
        self._clock = clock
        self._last: dict[str, tuple[float, int]] = {}  # line -> (shown at, held back since)

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        text = str(msg) % args if args else str(msg)
        facility = text.split(" ", 1)[0]
        if facility in _CONNECTION_FACILITIES and level > logging.INFO:
            level = logging.INFO
        if not self.isEnabledFor(level):
            return
        key = _VOLATILE.sub("", text)
        now = self._clock()
        shown = self._last.get(key)
        if shown is not None and now - shown[0] < REPEAT_WINDOW_S:
            self._last[key] = (shown[0], shown[1] + 1)
            return
        if len(self._last) > 1000:  # a long run's distinct lines: forget the old ones
            self._last.clear()
        held = shown[1] if shown is not None else 0
        self._last[key] = (now, 0)
        if held:
            text += f" ({held} more like it in the last {REPEAT_WINDOW_S:.0f} s)"
        super().log(level, "%s", text, **kwargs)


LIBRDKAFKA_LOGGER: Final = LibrdkafkaLogger()


def with_logger(config: Mapping[str, Any]) -> dict[str, Any]:
    """`config` with librdkafka's log sent to LIBRDKAFKA_LOGGER (unless it names a logger)."""
    return {"logger": LIBRDKAFKA_LOGGER, **config}


def quiet_log_config() -> dict[str, Any]:
    """librdkafka logs every refused connection to stderr, though one dead broker of several
    is no failure; a command says itself what failed. -v (INFO) shows its logs."""
    if logging.getLogger().isEnabledFor(logging.INFO):
        return {}
    return {"log_level": 2, "log.connection.close": False}


class AllBrokersDown:
    """A client's `error_cb`: notes when librdkafka reports every broker down, with the
    last transport error (which broker, and why), so that a command fails at once on a
    wrong or dead --bootstrap-server instead of after its whole timeout."""

    def __init__(self) -> None:
        self._all_down: KafkaError | None = None
        self._transport: KafkaError | None = None

    def __call__(self, error: KafkaError) -> None:
        from confluent_kafka import KafkaError

        if error.code() == KafkaError._ALL_BROKERS_DOWN:
            self._all_down = error
        elif error.code() in (KafkaError._TRANSPORT, KafkaError._RESOLVE):
            self._transport = error

    def unreachable(self, bootstrap_servers: str, waited_ms: int) -> str | None:
        """What to say when a wait of `waited_ms` ended with every broker down: the address
        and why librdkafka could not reach it (None if a broker was up)."""
        if self._all_down is None:
            return None
        why = ""
        if self._transport is not None:
            # "host:port/bootstrap: Failed to resolve ... (after 1ms in state CONNECT)"
            why = _VOLATILE.sub("", self._transport.str().split(": ", 1)[-1]).strip()
            why = f": {why}"
        return f"no broker at {bootstrap_servers} answered within {waited_ms} ms{why}"

    def message(self) -> str | None:
        """What to say if every broker is down (None while one is up)."""
        if self._all_down is None:
            return None
        detail = f" ({self._transport.str()})" if self._transport is not None else ""
        return f"{self._all_down.str()}{detail}"


class WatchedAdmin:
    """librdkafka's AdminClient for a command, failing a call as soon as librdkafka reports
    every broker down (a wrong or dead --bootstrap-server) instead of after the call's whole
    timeout. `error` is the command's own error type."""

    poll_s = 0.25

    def __init__(
        self,
        bootstrap_server: str,
        error: type[Exception],
        timeout_s: float,
        props: Mapping[str, Any] | None = None,
    ) -> None:
        self._down = AllBrokersDown()
        self._error = error
        self.timeout_s = timeout_s  # what a command allows a call (it sets the deadlines)
        config = client_config(
            bootstrap_server, {"error_cb": self._down, **quiet_log_config(), **(props or {})}
        )
        self.client: AdminClient = new_admin(config)

    def down_message(self) -> str | None:
        """What to say if librdkafka reported every broker down (None while one is up)."""
        return self._down.message()

    def wait(self, future: Future[T], deadline: float) -> T:
        """A call's result (KafkaException: its error); the command's error when every
        broker is down or `deadline` (time.monotonic) passes."""
        while True:
            try:
                return future.result(timeout=self.poll_s)
            except TimeoutError:
                pass
            self.client.poll(0)  # runs error_cb
            if (message := self._down.message()) is not None:
                raise self._error(message)
            if time.monotonic() >= deadline:
                raise self._error(f"Timed out after {self.timeout_s:.0f} s waiting for the brokers")


def cluster_metadata(bootstrap_server: str, error: type[Exception], timeout_s: float) -> Any:
    """librdkafka's ClusterMetadata (every broker and every topic, internal ones too); the
    command's `error` when no broker answers within `timeout_s`, or as soon as librdkafka
    reports every broker down (short tries, librdkafka's error callback served between)."""
    from confluent_kafka import KafkaException

    admin = WatchedAdmin(bootstrap_server, error, timeout_s)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return admin.client.list_topics(
                timeout=max(0.01, min(WatchedAdmin.poll_s * 2, deadline - time.monotonic()))
            )
        except KafkaException as e:
            admin.client.poll(0)  # runs error_cb
            if (message := admin.down_message()) is not None:
                raise error(message) from None
            if time.monotonic() >= deadline:
                raise error(
                    f"no broker at {bootstrap_server} answered: {e.args[0].str()}"
                ) from None


def kafka_error_text(err: KafkaError) -> str:
    """A librdkafka error with Kafka's name for a broker's error code (librdkafka has its own
    for some, e.g. TOPIC_EXCEPTION for INVALID_TOPIC_EXCEPTION), and librdkafka's text."""
    code = err.code()
    try:
        name = ErrorCode(code).name if code >= -1 else err.name()
    except ValueError:
        name = err.name()
    return f"{name}: {err.str()}"


def permanent_error(err: KafkaError) -> bool:
    """An error that asking again will not change. The source's calls to the cluster give
    up on these at once and ask again after any other (a broker down or gone from the
    metadata, a leader moving, a topic being created: librdkafka has many names for those
    and marks few retriable)."""
    from confluent_kafka import KafkaError

    return err.fatal() or err.code() in {
        KafkaError._DESTROY,
        KafkaError._INVALID_ARG,
        KafkaError._AUTHENTICATION,
        KafkaError._SSL,
        KafkaError._UNSUPPORTED_FEATURE,
        KafkaError._NOT_IMPLEMENTED,
        KafkaError._STATE,
        KafkaError.UNSUPPORTED_VERSION,
        KafkaError.TOPIC_EXCEPTION,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.SASL_AUTHENTICATION_FAILED,
    }


def retrying(
    what: str,
    timeout_s: float,
    call: Callable[[float], T],
    before_retry: Callable[[float], object] | None = None,
) -> T:
    """`call(seconds it may take)`, asked again after a transient error (after
    `before_retry(seconds)`) until `timeout_s` has passed (Kafka's default.api.timeout.ms);
    then TimeoutError naming the last error."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return call(max(min(deadline - time.monotonic(), TRY_TIMEOUT_S), 0.001))
        except KafkaException as e:
            err = e.args[0]
            if permanent_error(err):
                raise
            if time.monotonic() + RETRY_BACKOFF_S >= deadline:
                raise TimeoutError(
                    f"{what}: no answer within {round(timeout_s * 1000)} ms (last error: "
                    f"{kafka_error_text(err)})"
                ) from None
        time.sleep(RETRY_BACKOFF_S)
        if before_retry is not None:
            with contextlib.suppress(KafkaException):
                before_retry(max(min(deadline - time.monotonic(), TRY_TIMEOUT_S), 0.001))


def watermarks(consumer: Consumer, topic: str, partition: int, timeout_s: float) -> tuple[int, int]:
    """(log start offset, high watermark) of a partition, from its leader, asked again
    after a transient error (a leader moving) until `timeout_s` has passed."""
    from confluent_kafka import TopicPartition

    def ask(seconds: float) -> tuple[int, int]:
        low, high = consumer.get_watermark_offsets(
            TopicPartition(topic, partition), timeout=seconds, cached=False
        )
        return low, high

    def refresh(seconds: float) -> None:
        # librdkafka asks the leader its metadata names; a consumer that fetches nothing
        # would not learn of a new leader for minutes (topic.metadata.refresh.interval.ms).
        # A metadata request names it.
        consumer.list_topics(topic, timeout=seconds)

    return retrying(f"offsets of {topic}-{partition}", timeout_s, ask, refresh)


def await_group_coordinator(
    consumer: Consumer, topic: str, partition: int, timeout_s: float
) -> None:
    """Return once the consumer's group coordinator has answered (its committed offset of
    one partition read), asked again after a transient error until `timeout_s` has passed.

    confluent-kafka's consumer always has a group.id, and librdkafka looks its coordinator
    up as soon as it starts, even for a consumer that only assigns. In a new cluster that
    first lookup creates the offsets topic (50 partitions, RF 3: a LeaderAndIsr on every
    broker), which a measurement must not time: the perf tools wait here first."""
    from confluent_kafka import TopicPartition

    def ask(seconds: float) -> None:
        consumer.committed([TopicPartition(topic, partition)], timeout=seconds)

    retrying("the consumer's group coordinator", timeout_s, ask)


class ClientConfigError(ValueError):
    """A property librdkafka refuses (unknown name, bad value), with its message."""


class MissingClientError(RuntimeError):
    """confluent-kafka is not installed (the broker image has no Kafka client)."""


def require_librdkafka(what: str) -> None:
    """Raise MissingClientError, naming `what` needs it and the pip command, unless
    confluent-kafka can be imported."""
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        raise MissingClientError(
            f"{what} on librdkafka, the confluent-kafka package: {INSTALL_HINT}"
        ) from None


def client_config(bootstrap_servers: str, props: Mapping[str, Any]) -> dict[str, Any]:
    """librdkafka's config: `bootstrap.servers`, the process's security settings
    (client_security.py: what `--command-config` set, TLS and SASL) and the Kafka-named
    properties, each of these winning over what comes before it (but the security settings'
    own `bootstrap.servers`: the servers asked for win). TCP_NODELAY is on unless a property
    says otherwise, as Kafka's Java client always has it: librdkafka leaves Nagle's algorithm
    on by default, which holds a small request back until the previous one is acknowledged
    (tens of milliseconds with delayed ACKs)."""
    security = client_security()
    security.pop("bootstrap.servers", None)
    return {
        "bootstrap.servers": bootstrap_servers,
        "socket.nagle.disable": True,
        **security,
        **{k: v for k, v in props.items()},
    }


def check_shared_config(props: Mapping[str, Any]) -> None:
    """Raise ClientConfigError (librdkafka's message) unless librdkafka knows every property
    and takes its value, its TLS files read and a key's password tried. For properties
    every client of a command gets (`--command-config`'s): one that only producers or only
    consumers have passes (librdkafka warns when it makes a client of the other kind).
    Nothing connects: the client made to check them has no bootstrap servers, and its log
    goes nowhere."""
    from confluent_kafka import KafkaException, Producer

    logger = logging.Logger(f"{__name__}.check_shared_config")  # not registered
    logger.addHandler(logging.NullHandler())
    config = {k: v for k, v in props.items() if k != "bootstrap.servers"}
    try:
        Producer({**config, "logger": logger})
    except KafkaException as e:
        message = e.args[0].str().strip().removeprefix("Failed to create producer: ")
        raise ClientConfigError(message) from None


def new_producer(config: Mapping[str, Any]) -> Producer:
    from confluent_kafka import KafkaException, Producer

    try:
        return Producer(with_logger(config))
    except KafkaException as e:
        raise ClientConfigError(f"producer config: {e.args[0].str()}") from None


def new_consumer(config: Mapping[str, Any]) -> Consumer:
    from confluent_kafka import Consumer, KafkaException

    # librdkafka wants a group.id even for a consumer that only assigns (no group API).
    try:
        return Consumer(with_logger({"group.id": "minikafka-tools", **dict(config)}))
    except KafkaException as e:
        raise ClientConfigError(f"consumer config: {e.args[0].str()}") from None


def topic_metadata(client: Producer | Consumer, topic: str, timeout_s: float) -> ClusterMetadata:
    """The cluster's metadata once `topic` has partitions, asked again while its error is a
    transient one (a topic just created has no leader for a moment), `timeout_s` at most.
    KafkaException with the topic's error: at once for one that stays (the topic does not
    exist), after `timeout_s` with the last one seen."""
    from confluent_kafka import KafkaException

    try:
        return _await_topic(client, topic, timeout_s)
    except _TopicWaitFailed as e:
        raise KafkaException(e.error) from None


class _TopicWaitFailed(Exception):
    def __init__(self, error: KafkaError, timed_out: bool, last: str | None) -> None:
        super().__init__(error.str())
        self.error, self.timed_out, self.last = error, timed_out, last


def _await_topic(client: Producer | Consumer, topic: str, timeout_s: float) -> ClusterMetadata:
    """The one wait behind topic_metadata and wait_for_topic: asking every 100 ms (Kafka's
    retry.backoff.ms) while the topic is missing from the answer, its error is transient or
    no broker answers; _TopicWaitFailed on a lasting error or after `timeout_s`."""
    from confluent_kafka import KafkaError, KafkaException

    deadline = time.monotonic() + timeout_s
    last: KafkaError | None = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            error = last if last is not None else KafkaError(KafkaError._TIMED_OUT)
            raise _TopicWaitFailed(error, True, last.str() if last is not None else None)
        try:
            md: ClusterMetadata = client.list_topics(topic, timeout=remaining)
        except KafkaException as e:
            last = e.args[0]
            continue
        t = md.topics.get(topic)
        if t is not None and t.error is None and t.partitions:
            return md
        if t is not None and t.error is not None:
            lasting = t.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART  # not auto-created
            if lasting or not transient_metadata_error(t.error):
                raise _TopicWaitFailed(t.error, False, None)
            last = t.error
        time.sleep(min(0.1, max(deadline - time.monotonic(), 0)))


# Kafka's error codes (confluent_kafka.KafkaError's numbers) that pass with time in a topic's
# metadata: LEADER_NOT_AVAILABLE (a topic being created), NOT_LEADER_OR_FOLLOWER,
# REQUEST_TIMED_OUT, BROKER_NOT_AVAILABLE, REPLICA_NOT_AVAILABLE, NETWORK_EXCEPTION,
# KAFKA_STORAGE_ERROR, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH.
_TRANSIENT_METADATA_ERRORS = frozenset({5, 6, 7, 8, 9, 13, 56, 74, 75})


def transient_metadata_error(err: KafkaError) -> bool:
    """A topic's error in Metadata that asking again may clear. librdkafka marks few of
    them retriable (none that come in Metadata), so Kafka's retriable codes are named."""
    return err.retriable() or err.code() in _TRANSIENT_METADATA_ERRORS


class TopicUnavailableError(Exception):
    """A topic's metadata did not come: it does not exist, or (`timed_out`) no broker
    answered in time."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


def wait_for_topic(
    client: Producer | Consumer, topic: str, timeout_s: float, *, auto_create: bool
) -> TopicMetadata:
    """The topic's metadata once it has partitions, asking again every 100 ms (Kafka's
    retry.backoff.ms) while it is being created or no broker answers, for `timeout_s` at
    most (Kafka's max.block.ms). A topic the brokers say does not exist fails at once: they
    answer that only when they will not create it."""
    from confluent_kafka import KafkaError

    try:
        return _await_topic(client, topic, timeout_s).topics[topic]
    except _TopicWaitFailed as e:
        if e.timed_out:
            detail = f" (last error: {e.last})" if e.last is not None else ""
            raise TopicUnavailableError(
                f"Topic {topic} not present in metadata after {round(timeout_s * 1000)} ms.{detail}",
                timed_out=True,
            ) from None
        if e.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            why = (
                "the brokers' auto.create.topics.enable is false"
                if auto_create
                else "this client does not auto-create topics"
            )
            raise TopicUnavailableError(f"Topic {topic} does not exist ({why}).") from None
        raise TopicUnavailableError(f"Topic {topic}: {e.error.name()}: {e.error.str()}") from None


def consume_ready(consumer: Consumer, max_records: int, timeout_s: float) -> list[Message]:
    """Up to `max_records` records as soon as any has arrived (waiting `timeout_s` at
    most): one poll, then whatever else is queued. librdkafka's consume(n, timeout) waits
    for n records or the whole timeout, which would time the wait, not the records."""
    first = consumer.poll(timeout_s)
    if first is None:
        return []
    if max_records <= 1:
        return [first]
    return [first, *consumer.consume(max_records - 1, 0)]


def position(msg: Message) -> tuple[int, int]:
    """(partition, offset) of a record (a message without an error has both)."""
    partition, offset = msg.partition(), msg.offset()
    assert partition is not None and offset is not None, "an error event, not a record"
    return partition, offset


if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient


def new_admin(config: Mapping[str, Any]) -> AdminClient:
    """librdkafka's AdminClient; ClientConfigError with librdkafka's message for a bad
    property."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    try:
        return AdminClient(with_logger(config))
    except KafkaException as e:
        raise ClientConfigError(f"admin client config: {e.args[0].str()}") from None


if TYPE_CHECKING:
    from typing import Literal


def check_config(kind: Literal["producer", "consumer"], props: Mapping[str, Any]) -> None:
    """Raise ClientConfigError (librdkafka's message) unless librdkafka takes `props` for a
    "producer" or "consumer", and uses them all: a property of the other kind, which
    librdkafka would only warn about and ignore, is refused too. Nothing connects: the
    client made to check them has no bootstrap servers; its log goes to a logger of its
    own, which keeps the warnings and drops the rest (the notice that it has no brokers)."""
    import logging

    from confluent_kafka import Consumer, KafkaException, Producer

    class Kept(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self.messages: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.messages.append(record.getMessage())

    kept = Kept()
    logger = logging.Logger(f"{__name__}.check_config")  # not registered: nothing else sees it
    logger.addHandler(kept)
    config = {**props, "logger": logger}
    try:
        if kind == "producer":
            Producer(config).poll(0)  # poll() hands its log over
        else:
            consumer = Consumer({"group.id": "minikafka-tools", **config})
            consumer.poll(0)
            consumer.close()
    except KafkaException as e:
        raise ClientConfigError(f"{kind} config: {e.args[0].str().strip()}") from None
    for message in kept.messages:
        if "will be ignored" in message:
            # "CONFWARN [rdkafka#producer-1] [thrd:app]: Configuration property ..."
            raise ClientConfigError(f"{kind} config: {message.split(']: ', 1)[-1]}")


def read_to_end(
    bootstrap_servers: str, topic: str, timeout_s: float, props: Mapping[str, Any] | None = None
) -> list[Message]:
    """Every record of `topic` from each partition's log start up to its high watermark as of
    the call, partition by partition (TimeoutError if they have not all come in `timeout_s`).
    `props`: more consumer properties by Kafka's names."""
    from confluent_kafka import KafkaException, TopicPartition

    consumer = new_consumer(
        client_config(
            bootstrap_servers,
            {
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                # Kafka's default (librdkafka's is read_committed): read to the high watermark.
                "isolation.level": "read_uncommitted",
                **(props or {}),
            },
        )
    )
    try:
        deadline = time.monotonic() + timeout_s
        md = topic_metadata(consumer, topic, timeout_s)
        # Where each partition's reading starts (its log start) and ends (its high watermark).
        next_offset: dict[int, int] = {}
        ends: dict[int, int] = {}
        for p in sorted(md.topics[topic].partitions):
            next_offset[p], ends[p] = watermarks(
                consumer, topic, p, max(deadline - time.monotonic(), 0.001)
            )
        consumer.assign([TopicPartition(topic, p, next_offset[p]) for p in ends])
        got: dict[int, list[Message]] = {p: [] for p in ends}
        while any(next_offset[p] < end for p, end in ends.items()):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(
                    f"{topic}: read up to {next_offset}, not to the high watermarks {ends}, "
                    f"in {timeout_s} s"
                )
            for msg in consume_ready(consumer, 10_000, min(remaining, 1.0)):
                if (err := msg.error()) is not None:
                    if err.fatal():
                        raise KafkaException(err)
                    continue  # librdkafka retries (a broker down, a leader moving)
                p, offset = position(msg)
                if offset < ends[p]:
                    got[p].append(msg)
                next_offset[p] = max(next_offset[p], offset + 1)
        return [m for p in sorted(got) for m in got[p]]
    finally:
        consumer.close()
