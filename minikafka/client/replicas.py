"""What the tools see of each replica beyond what consumers see: how each partition's
leader sees its replicas, and any replica's records. For `minikafka replicas --describe`
and chaos's replica check.

- `describe_replicas`: leaders and brokers from Kafka's Metadata (librdkafka), each
  leader's admin endpoint found through Kafka's DescribeConfigs (its `admin.listeners`),
  and its view of every replica from that endpoint's `GET /v1/partitions`
  (`replica_states.py`), with the cluster's `admin.listeners.token` when its endpoints ask
  for one (the caller gives it: a local cluster's, or $MINIKAFKA_ADMIN_TOKEN).
- `fetch_replica_records`: a follower's records as well as a leader's, up to its LEO, with
  Kafka's Fetch as the debugging consumer on the broker's client listener
  (`replica_reads.py`, over `kafka_wire.py`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

import aiohttp

from minikafka.client.bootstrap import DEFAULT_BOOTSTRAP
from minikafka.client.kafka_wire import KafkaConnection, NetworkError
from minikafka.client.librdkafka import (
    AllBrokersDown,
    client_config,
    kafka_error_text,
    new_admin,
    quiet_log_config,
)
from minikafka.client.replica_reads import read_replica
from minikafka.client.replica_states import (
    ADMIN_TOKEN_ENV,
    PartitionReplicas,
    admin_headers,
    admin_url,
    partition_replicas,
    serves_broker,
)
from minikafka.common import NO_LEADER, TopicPartition
from minikafka.protocol.errors import (
    BrokerNotAvailableError,
    ErrorCode,
    KafkaError,
    LeaderNotAvailableError,
    NotLeaderOrFollowerError,
    error_for_code,
)

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

log = logging.getLogger(__name__)

_client_ids = itertools.count(1)

ADMIN_LISTENERS = "admin.listeners"
# The first metadata request's wait; each next one waits twice as long (a dead bootstrap
# server fails the call within a second or two, not after the whole request timeout).
_FIRST_METADATA_TRY_S = 0.25
# The least time a new attempt to describe replicas gets: a metadata request and two HTTP
# requests on a healthy cluster take a few milliseconds.
_MIN_ATTEMPT_MS = 100


class AdminEndpointError(KafkaError):
    """A broker's admin endpoint is not set up, or is not the broker its URL was derived
    for: asking again does not help. Its text is the message alone (no broker sent a
    code)."""

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class _Partition:
    """A partition as Metadata describes it."""

    topic: str
    partition: int
    leader: int  # NO_LEADER: none
    replicas: tuple[int, ...]

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


def _topic_error(name: str, code: int) -> KafkaError:
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        return error_for_code(code, f"Topic '{name}' does not exist.")
    return error_for_code(code, f"topic '{name}'")


class ReplicaClient:
    """Replica views and debug replica reads of the cluster at `bootstrap_servers`.

    `request_timeout_ms` bounds each request, `default_api_timeout_ms` a whole call that
    names no timeout of its own (retries included), `retry_backoff_ms` the wait between
    attempts: Kafka's admin client's settings, with its defaults. `admin_token`: the
    brokers' `admin.listeners.token`, sent to their admin endpoints (None: none sent).
    """

    def __init__(
        self,
        bootstrap_servers: str = DEFAULT_BOOTSTRAP,
        *,
        request_timeout_ms: int = 30000,
        retry_backoff_ms: int = 100,
        default_api_timeout_ms: int = 60000,
        client_id: str | None = None,
        admin_token: str | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self._admin_headers = admin_headers(admin_token)
        self.client_id = client_id or f"replica-client-{next(_client_ids)}"
        self._request_timeout_ms = request_timeout_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._default_api_timeout_ms = default_api_timeout_ms
        self._admin: AdminClient | None = None
        self._all_down = AllBrokersDown()
        self._http: aiohttp.ClientSession | None = None
        self._brokers: dict[int, tuple[str, int]] = {}  # id -> host, port, from Metadata
        self._admin_urls: dict[int, str] = {}  # found and checked (`_admin_url`)
        self._connections: dict[int, KafkaConnection] = {}

    async def __aenter__(self) -> ReplicaClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None
        connections = list(self._connections.values())
        self._connections.clear()
        for conn in connections:
            await conn.close()

    # --- describing replicas ---------------------------------------------------------------

    async def describe_replicas(
        self, topics: Sequence[str] | None = None, timeout_ms: int | None = None
    ) -> list[PartitionReplicas]:
        """Each partition's replicas as its leader sees them: LEO, lag, ISR membership, time
        since each follower last caught up, and the partition's HW (all topics when `topics`
        is None). Sorted by topic and partition for all topics, else in the order asked.

        Each leader is found through metadata and its admin endpoint asked; a partition
        whose leader cannot answer right now (no leader, leadership moved, broker
        unreachable) is asked again after a metadata refresh until `timeout_ms`
        (default.api.timeout.ms), and then comes back with its `error` set. A topic that
        does not exist raises UnknownTopicOrPartitionError.
        """
        timeout = self._default_api_timeout_ms if timeout_ms is None else timeout_ms
        deadline = _now_ms() + timeout
        done: dict[TopicPartition, PartitionReplicas] = {}
        while True:
            parts = await self._partitions(topics)
            failed: dict[TopicPartition, KafkaError] = {}
            by_leader: dict[int, list[_Partition]] = {}
            for p in parts:
                if p.tp in done:
                    continue
                if p.leader == NO_LEADER:
                    failed[p.tp] = LeaderNotAvailableError(f"{p.tp} has no leader")
                else:
                    by_leader.setdefault(p.leader, []).append(p)
            remaining = max(1.0, min(self._request_timeout_ms, deadline - _now_ms())) / 1000
            answers = await asyncio.gather(
                *(
                    self._leader_views(leader, ps, all_topics=topics is None, timeout_s=remaining)
                    for leader, ps in by_leader.items()
                ),
                return_exceptions=True,
            )
            for (leader, ps), answer in zip(by_leader.items(), answers, strict=True):
                if isinstance(answer, KafkaError):
                    for p in ps:
                        failed[p.tp] = answer
                    continue
                if isinstance(answer, BaseException):
                    raise answer
                for p in ps:
                    view = answer.get((p.topic, p.partition))
                    if view is None or view.get("role") != "leader":
                        failed[p.tp] = NotLeaderOrFollowerError(
                            f"broker {leader} does not lead {p.tp} (any more)"
                        )
                    else:
                        done[p.tp] = partition_replicas(view, p.replicas)
            retry = any(e.retriable for e in failed.values())
            # No new attempt that could only start after the backoff with (almost) no time
            # left: its own timeout would then replace the brokers' real answers as the error.
            last = _now_ms() + self._retry_backoff_ms + _MIN_ATTEMPT_MS >= deadline
            if not retry or last:
                return [
                    done.get(p.tp)
                    or PartitionReplicas(
                        p.topic, p.partition, p.leader, -1, -1, -1, [], failed[p.tp]
                    )
                    for p in parts
                ]
            log.info("describe replicas will be retried for %d partitions", len(failed))
            await asyncio.sleep(self._retry_backoff_ms / 1000.0)

    async def _leader_views(
        self, leader: int, partitions: list[_Partition], *, all_topics: bool, timeout_s: float
    ) -> dict[tuple[str, int], Mapping[str, Any]]:
        """(topic, partition) -> the row of `/v1/partitions` of every replica on broker
        `leader` of the topics of `partitions` (every topic's with `all_topics`)."""
        url = await self._admin_url(leader, timeout_s)
        topics = sorted({p.topic for p in partitions})
        names: list[str | None] = [None] if all_topics else list(topics)
        views: dict[tuple[str, int], Mapping[str, Any]] = {}
        for name in names:
            status, body = await self._get(
                leader, url, "/v1/partitions", {} if name is None else {"topic": name}, timeout_s
            )
            code = body.get("error_code") if isinstance(body, dict) else None
            if status == 404 and code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                continue  # no replica of the topic there: it leads none of its partitions
            if status != 200 or not isinstance(body, dict):
                message = body.get("message") if isinstance(body, dict) else None
                raise error_for_code(
                    code if isinstance(code, int) else ErrorCode.UNKNOWN_SERVER_ERROR,
                    f"broker {leader}'s admin endpoint answered HTTP {status}"
                    + (f": {message}" if message else ""),
                )
            for v in body["partitions"]:
                views[(v["topic"], v["partition"])] = v
        return views

    async def _admin_url(self, broker_id: int, timeout_s: float) -> str:
        """Where this client reaches broker `broker_id`'s admin endpoint: its
        `admin.listeners` (DescribeConfigs), with the broker's Metadata host for a
        wildcard one, once that endpoint's `/v1/broker` says it is this broker."""
        known = self._admin_urls.get(broker_id)
        if known is not None:
            return known
        address = self._brokers.get(broker_id)
        if address is None:
            raise BrokerNotAvailableError(f"broker {broker_id} is not in the cluster metadata")
        host, port = address
        listener = await self._admin_listener(broker_id, timeout_s)
        if listener is None:
            raise AdminEndpointError(
                f"broker {broker_id} has no admin endpoint ({ADMIN_LISTENERS} is not set): "
                "only it shows each replica as the leader sees it"
            )
        try:
            url = admin_url(listener, host)
        except ValueError as e:
            raise AdminEndpointError(f"broker {broker_id}'s {ADMIN_LISTENERS}: {e}") from None
        status, body = await self._get(broker_id, url, "/v1/broker", {}, timeout_s)
        if (
            status != 200
            or not isinstance(body, dict)
            or not serves_broker(body, broker_id, host, port)
        ):
            served = body.get("broker_id") if isinstance(body, dict) else None
            raise AdminEndpointError(
                f"broker {broker_id}'s admin endpoint: {url} (from its {ADMIN_LISTENERS} "
                f"{listener}) is not the admin endpoint of broker {broker_id} at {host}:{port}"
                + (f" (broker {served} answered)" if served is not None else "")
            )
        self._admin_urls[broker_id] = url
        return url

    async def _admin_listener(self, broker_id: int, timeout_s: float) -> str | None:
        """Broker `broker_id`'s `admin.listeners`, from DescribeConfigs sent to it."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin._config import ConfigResource
        from confluent_kafka.admin._resource import ResourceType

        resource = ConfigResource(ResourceType.BROKER, str(broker_id))
        (future,) = (
            self._admin_client().describe_configs([resource], request_timeout=timeout_s).values()
        )
        try:
            configs = await asyncio.wait_for(asyncio.wrap_future(future), timeout_s)
        except KafkaException as e:
            raise NetworkError(
                f"broker {broker_id} did not describe its configs: {kafka_error_text(e.args[0])}"
            ) from None
        except TimeoutError:
            raise NetworkError(
                f"broker {broker_id} did not describe its configs within "
                f"{round(timeout_s * 1000)} ms"
            ) from None
        entry = configs.get(ADMIN_LISTENERS)
        value = None if entry is None else entry.value
        return value if isinstance(value, str) and value else None

    async def _get(
        self, broker_id: int, url: str, path: str, params: Mapping[str, str], timeout_s: float
    ) -> tuple[int, Any]:
        """(HTTP status, JSON body) of a GET to broker `broker_id`'s admin endpoint;
        NetworkError (and the URL forgotten, to be found again) when it does not answer."""
        if self._http is None:
            self._http = aiohttp.ClientSession(headers=self._admin_headers)
        try:
            async with self._http.get(
                url + path, params=params, timeout=aiohttp.ClientTimeout(total=timeout_s)
            ) as resp:
                status = resp.status
                body = await resp.read()
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            self._admin_urls.pop(broker_id, None)
            why = str(e) or type(e).__name__
            raise NetworkError(f"broker {broker_id}'s admin endpoint {url}: {why}") from None
        if status == 401:
            # Asking again with the same token does not help.
            raise AdminEndpointError(
                f"broker {broker_id}'s admin endpoint {url} "
                + (
                    "refused the token given"
                    if self._admin_headers
                    else "requires a token (its admin.listeners.token)"
                )
                + f" (HTTP 401); the minikafka commands send ${ADMIN_TOKEN_ENV}'s, or a "
                "local cluster's own"
            )
        try:
            return status, json.loads(body)
        except ValueError as e:
            self._admin_urls.pop(broker_id, None)
            raise NetworkError(f"broker {broker_id}'s admin endpoint {url}: {e}") from None

    # --- metadata ----------------------------------------------------------------------------

    def _admin_client(self) -> AdminClient:
        if self._admin is None:
            props = {"client.id": self.client_id, "error_cb": self._all_down, **quiet_log_config()}
            config = client_config(self.bootstrap_servers, props)
            self._admin = new_admin(config)
        return self._admin

    async def _metadata(self, timeout_s: float) -> Any:
        """librdkafka's ClusterMetadata of every topic, the brokers' addresses noted.
        NetworkError after `timeout_s`, or as soon as librdkafka reports every broker down
        (a wrong or dead bootstrap server): short tries, each longer than the last, with
        librdkafka's error callback served between them."""
        from confluent_kafka import KafkaException

        admin = self._admin_client()
        started = time.monotonic()
        deadline = started + timeout_s
        wait = _FIRST_METADATA_TRY_S
        while True:
            try:
                md = await asyncio.to_thread(
                    admin.list_topics, timeout=max(0.01, min(wait, deadline - time.monotonic()))
                )
                break
            except KafkaException as e:
                if time.monotonic() >= deadline:
                    raise NetworkError(
                        f"no broker at {self.bootstrap_servers} answered a metadata request "
                        f"within {round(timeout_s * 1000)} ms ({kafka_error_text(e.args[0])})"
                    ) from None
            await asyncio.to_thread(admin.poll, 0)  # runs the error callback
            waited_ms = round((time.monotonic() - started) * 1000)
            down = self._all_down.unreachable(self.bootstrap_servers, waited_ms)
            if down is not None:
                raise NetworkError(down)
            wait *= 2  # a slow broker gets longer each time: each try is a new request
        self._brokers = {b.id: (b.host or "", b.port) for b in md.brokers.values()}
        return md

    async def _topic_exists(self, name: str, timeout_s: float) -> bool:
        """Whether a topic missing from the listing of every topic exists all the same: asked
        by name without auto-creation (DescribeTopics), which a broker answers from
        ZooKeeper when its metadata cache does not have the topic yet (LEADER_NOT_AVAILABLE:
        being created), UNKNOWN_TOPIC_OR_PARTITION only for one that does not exist."""
        from confluent_kafka import KafkaError as RdKafkaError
        from confluent_kafka import KafkaException, TopicCollection

        (future,) = (
            self._admin_client()
            .describe_topics(TopicCollection([name]), request_timeout=timeout_s)
            .values()
        )
        try:
            await asyncio.wait_for(asyncio.wrap_future(future), timeout_s)
        except KafkaException as e:
            return bool(e.args[0].code() != RdKafkaError.UNKNOWN_TOPIC_OR_PART)
        except TimeoutError:
            return True  # not known not to exist: asked again
        return True

    async def _partitions(self, topics: Sequence[str] | None) -> list[_Partition]:
        """The partitions of `topics` (all topics when None) from fresh metadata: by topic in
        the order asked (sorted for all), then by partition. A topic being created (a
        transient error such as LEADER_NOT_AVAILABLE) is asked for again every
        retry.backoff.ms, for default.api.timeout.ms at most. A topic that does not exist, or
        whose error stays, raises its KafkaError (an ExceptionGroup when several do)."""
        deadline = _now_ms() + self._default_api_timeout_ms
        wanted = None if topics is None else list(dict.fromkeys(topics))
        while True:
            request_s = max(1.0, min(self._request_timeout_ms, deadline - _now_ms())) / 1000
            # Every topic, never some by name: a Metadata request naming a topic may create it
            # (auto.create.topics.enable).
            md = await self._metadata(request_s)
            order = sorted(md.topics) if wanted is None else wanted
            errors: list[KafkaError] = []
            retry = False
            out: list[_Partition] = []
            for name in order:
                t = md.topics.get(name)
                if t is None:
                    if await self._topic_exists(name, request_s):
                        retry = True
                        errors.append(_topic_error(name, ErrorCode.LEADER_NOT_AVAILABLE))
                    else:
                        errors.append(_topic_error(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                elif t.error is not None:
                    code = t.error.code()
                    err = (
                        _topic_error(name, code)
                        if code >= 0
                        else KafkaError(f"topic '{name}': {t.error.str()}")
                    )
                    retry = retry or err.retriable or t.error.retriable()
                    errors.append(err)
                else:
                    out.extend(
                        _Partition(name, p.id, p.leader, tuple(p.replicas))
                        for p in sorted(t.partitions.values(), key=lambda p: p.id)
                    )
            if not retry or _now_ms() >= deadline:
                if len(errors) == 1:
                    raise errors[0]
                if errors:
                    raise ExceptionGroup(f"{len(errors)} topics failed to describe", errors)
                return out
            # A topic being created answers LEADER_NOT_AVAILABLE for a moment.
            await asyncio.sleep(self._retry_backoff_ms / 1000.0)

    # --- reading replicas ------------------------------------------------------------------

    async def fetch_replica_records(
        self,
        broker_id: int,
        tp: TopicPartition,
        end_offset: int | None = None,
        *,
        max_bytes: int = 1 << 20,
        timeout_ms: int | None = None,
    ) -> dict[int, bytes | None]:
        """offset -> value of every record of `tp` in broker `broker_id`'s replica, leader or
        follower, from its log start to `end_offset` (default: that replica's LEO).

        Read with Kafka's Fetch as the debugging consumer (replica id -2): the broker
        answers it from a follower too and up to its LEO, not the HW, and it counts as no
        follower's fetch. Raises the partition's KafkaError (e.g. the broker has no replica
        of `tp`), or RequestTimedOutError after `timeout_ms` (default.api.timeout.ms).
        """
        timeout = self._default_api_timeout_ms if timeout_ms is None else timeout_ms
        if broker_id not in self._brokers:
            await self._metadata(min(self._request_timeout_ms, timeout) / 1000)  # its address
        address = self._brokers.get(broker_id)
        if address is None:
            raise BrokerNotAvailableError(f"broker {broker_id} is not in the cluster metadata")
        conn = self._connections.get(broker_id)
        if conn is None or (conn.host, conn.port) != address:
            if conn is not None:
                await conn.close()
            conn = KafkaConnection(*address, client_id=self.client_id)
            self._connections[broker_id] = conn
        return await read_replica(
            conn,
            broker_id,
            tp,
            end_offset,
            max_bytes=max_bytes,
            timeout_ms=timeout,
            request_timeout_ms=self._request_timeout_ms,
        )


def _now_ms() -> float:
    """Monotonic milliseconds: for deadlines, never for record timestamps."""
    return time.monotonic() * 1000.0
