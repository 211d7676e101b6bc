"""`minikafka topics`: create, list, describe, alter (add partitions to) and delete topics,
like kafka-topics.sh, on librdkafka's AdminClient (confluent-kafka) over Kafka's protocol.

As Kafka's tool: --list, --describe, --alter and --delete look the topics up in Metadata
first (a missing one "does not exist as expected", unless --if-exists); --create sends
CreateTopics, --alter CreatePartitions, --delete DeleteTopics; --describe's header shows the
configs DescribeConfigs reports as not Kafka's defaults. confluent-kafka is imported inside
the functions (client/librdkafka.py says why).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from minikafka.cli.client_options import (
    bootstrap_server_option,
    parse_key_values,
    require_client,
)
from minikafka.client import reachability
from minikafka.client.controller_calls import ControllerClient, OngoingReassignment
from minikafka.client.librdkafka import (
    AllBrokersDown,
    ClientConfigError,
    client_config,
    new_admin,
    quiet_log_config,
)
from minikafka.common import TopicPartition
from minikafka.protocol.errors import ClusterAuthorizationFailedError
from minikafka.rules.consumer_offsets import OFFSETS_TOPIC

if TYPE_CHECKING:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin._metadata import ClusterMetadata

T = TypeVar("T")
# Kafka's internal topics (Topic.isInternal): --exclude-internal leaves them out.
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC})

# Kafka's default.api.timeout.ms: how long one call may take, retries included.
API_TIMEOUT_S = 60.0
# How long the controller may wait for new topics' (or partitions') metadata to reach every
# broker before it answers: the command returns once any broker's Metadata shows them.
OPERATION_TIMEOUT_S = 30.0
# How often a waiting call looks whether librdkafka has found every broker down: a wrong or
# dead --bootstrap-server fails the command within it, not after API_TIMEOUT_S (librdkafka
# keeps trying until a call's timeout). Also the first wait for Metadata, doubled each try.
POLL_S = 0.25
RETRY_BACKOFF_S = 0.1  # Kafka's retry.backoff.ms, for a topic still being created
# While a call waits: how often metadata is asked for again (a new controller).
REFRESH_S = 1.0


class TopicCommandError(Exception):
    """A user error worth one line on stderr, not a traceback."""


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """Kafka's `--replica-assignment 1:2,2:3`: partitions separated by commas, each a
    colon-separated broker list, partition ids counting from 0."""
    out: dict[int, list[int]] = {}
    for p, part in enumerate(text.split(",")):
        try:
            brokers = [int(b) for b in part.split(":")]
        except ValueError:
            raise TopicCommandError(f"invalid replica assignment {text!r}") from None
        if len(set(brokers)) != len(brokers):
            raise TopicCommandError(f"partition {p} has duplicate replicas: {part}")
        out[p] = brokers
    if len({len(r) for r in out.values()}) > 1:
        raise TopicCommandError("all partitions need the same number of replicas")
    return out


@dataclass(frozen=True)
class PartitionInfo:
    """One partition as Metadata describes it; leader None: it has none."""

    topic: str
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    def unavailable(self, live: set[int]) -> bool:
        """Kafka's rule: no leader, or one that is not a live broker."""
        return self.leader is None or self.leader not in live


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: list[PartitionInfo]  # by partition id

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0


def _ids(ids: tuple[int, ...]) -> str:
    return ",".join(str(i) for i in ids)


def format_partition(
    p: PartitionInfo,
    unanswering: set[int] | None = None,
    reassignment: OngoingReassignment | None = None,
) -> str:
    """kafka-topics.sh's line, with the adding and removing replicas of a partition being
    moved; with `unanswering`, an `Unreachable:` column naming the leader and ISR members
    among them (not Kafka's: what a write with acks=all waits on)."""
    leader = "none" if p.leader is None else str(p.leader)
    line = (
        f"\tTopic: {p.topic}\tPartition: {p.partition}\tLeader: {leader}"
        f"\tReplicas: {_ids(p.replicas)}\tIsr: {_ids(p.isr)}"
    )
    if reassignment is not None:
        line += (
            f"\tAdding Replicas: {_ids(reassignment.adding)}"
            f"\tRemoving Replicas: {_ids(reassignment.removing)}"
        )
    stalled = tuple(
        b for b in dict.fromkeys((p.leader, *p.isr)) if b is not None and b in (unanswering or ())
    )
    return f"{line}\tUnreachable: {_ids(stalled)}" if stalled else line


UNREACHABLE_NOTE = (
    "Unreachable: a broker that is the partition's leader or in its ISR and did not answer "
    "within {timeout:.0f} s. Writes with acks=all to such a partition wait until the "
    "controller elects another leader or the leader drops the broker from the ISR "
    "(replica.lag.time.max.ms; for a broker that died, once its fetch connections have been "
    "closed for replica.lag.disconnected.max.ms, or when its ZooKeeper session expires: "
    "zookeeper.session.timeout.ms)."
)


def format_description(
    t: TopicInfo,
    configs: dict[str, str] | None = None,
    unanswering: set[int] | None = None,
    reassignments: dict[TopicPartition, OngoingReassignment] | None = None,
) -> list[str]:
    config_text = ",".join(f"{k}={v}" for k, v in sorted((configs or {}).items()))
    moves = reassignments or {}
    rf = t.replication_factor
    first = moves.get(TopicPartition(t.name, 0))
    if first is not None and t.partitions:
        # Kafka's getReplicationFactor: a moving partition's replicas without the ones being
        # added, while any of them is still there.
        changing = {*first.adding, *first.removing}
        if changing & set(t.partitions[0].replicas):
            rf = len([r for r in first.replicas if r not in first.adding])
    header = (
        f"Topic: {t.name}\tPartitionCount: {len(t.partitions)}"
        f"\tReplicationFactor: {rf}\tConfigs: {config_text}"
    )
    return [
        header,
        *(
            format_partition(p, unanswering, moves.get(TopicPartition(p.topic, p.partition)))
            for p in t.partitions
        ),
    ]


def _reassignments(
    bootstrap_server: str, topics: list[TopicInfo]
) -> dict[TopicPartition, OngoingReassignment]:
    """The partitions being moved (ListPartitionReassignments), as Kafka's tool shows them;
    none when the controller refuses to say (CLUSTER_AUTHORIZATION_FAILED)."""
    tps = [TopicPartition(t.name, p.partition) for t in topics for p in t.partitions]
    if not tps:
        return {}

    async def ask() -> dict[TopicPartition, OngoingReassignment]:
        client = ControllerClient(
            bootstrap_server, client_id="minikafka-topics", timeout_s=API_TIMEOUT_S
        )
        try:
            return await client.list_partition_reassignments(tps)
        finally:
            await client.close()

    try:
        return asyncio.run(ask())
    except ClusterAuthorizationFailedError:
        return {}


def _error_of(e: KafkaException) -> KafkaError | None:
    from confluent_kafka import KafkaError

    error = e.args[0] if e.args else None
    return error if isinstance(error, KafkaError) else None


def _message(e: KafkaException) -> str:
    """librdkafka's text: the broker's error message when it sent one."""
    error = _error_of(e)
    return error.str() if error is not None else str(e)


def _code(e: KafkaException) -> int | None:
    error = _error_of(e)
    return None if error is None else error.code()


class _Admin:
    """librdkafka's AdminClient, failing a call as soon as librdkafka reports every broker
    down (a wrong or dead --bootstrap-server) instead of after the call's whole timeout."""

    def __init__(self, bootstrap_server: str) -> None:
        self._down = AllBrokersDown()
        config = client_config(bootstrap_server, {"error_cb": self._down, **quiet_log_config()})
        self.client = new_admin(config)

    def _fail_if_all_down(self) -> None:
        self.client.poll(0)  # runs error_cb
        if (message := self._down.message()) is not None:
            raise TopicCommandError(message)

    def wait(self, future: Future[T], deadline: float | None = None) -> T:
        """An admin call's result (KafkaException: its error)."""
        if deadline is None:
            deadline = time.monotonic() + API_TIMEOUT_S
        refresh_at = time.monotonic() + REFRESH_S
        while True:
            try:
                return future.result(timeout=POLL_S)
            except TimeoutError:
                pass
            self._fail_if_all_down()
            now = time.monotonic()
            if now >= deadline:
                raise TopicCommandError(
                    f"Timed out after {API_TIMEOUT_S:.0f} s waiting for the brokers"
                )
            if now >= refresh_at:
                # librdkafka waits for the controller its metadata names, which may have
                # died (it stays registered until its session expires); it asks nobody
                # else meanwhile. Fresh metadata names the new one, and the call goes there.
                self._refresh()
                refresh_at = time.monotonic() + REFRESH_S

    def controller_call(
        self, request: Callable[..., dict[Any, Future[None]]], item: object
    ) -> None:
        """One item's request to the controller (`request` is the AdminClient's
        create_topics, create_partitions or delete_topics), sent again after NOT_CONTROLLER
        (the controller moved) until the API timeout, as Kafka's admin client does."""
        from confluent_kafka import KafkaError, KafkaException

        deadline = time.monotonic() + API_TIMEOUT_S
        while True:
            timeout_s = max(1.0, deadline - time.monotonic())
            (future,) = request(
                [item],
                operation_timeout=min(OPERATION_TIMEOUT_S, timeout_s),
                request_timeout=timeout_s,
            ).values()
            try:
                self.wait(future, deadline)
                return
            except KafkaException as e:
                if _code(e) != KafkaError.NOT_CONTROLLER or time.monotonic() >= deadline:
                    raise
            self._refresh()

    def known_to_zookeeper(self, topic: str, deadline: float) -> bool:
        """Whether `topic` exists though the brokers' listing of all topics lacked it: asked
        by name without auto-creation (Kafka's DescribeTopics), which a broker answers from
        ZooKeeper when its metadata cache does not have the topic yet (LEADER_NOT_AVAILABLE),
        and UNKNOWN_TOPIC_OR_PARTITION only for a topic that does not exist. False once the
        API timeout has passed."""
        from confluent_kafka import KafkaError, KafkaException, TopicCollection

        if time.monotonic() >= deadline:
            return False
        (future,) = self.client.describe_topics(
            TopicCollection([topic]), request_timeout=max(1.0, deadline - time.monotonic())
        ).values()
        try:
            self.wait(future, deadline)
        except KafkaException as e:
            return _code(e) != KafkaError.UNKNOWN_TOPIC_OR_PART
        return True

    def _refresh(self) -> None:
        """Metadata into librdkafka's cache (the controller's id with it)."""
        from confluent_kafka import KafkaException

        with contextlib.suppress(KafkaException):
            self.client.list_topics(timeout=REFRESH_S)

    def metadata(self) -> ClusterMetadata:
        """Metadata of every topic and live broker. All topics, never some: Metadata for a
        named topic may create it (auto.create.topics.enable)."""
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + API_TIMEOUT_S
        wait = POLL_S
        while True:
            try:
                md: ClusterMetadata = self.client.list_topics(
                    timeout=max(0.01, min(wait, deadline - time.monotonic()))
                )
                return md
            except KafkaException:
                if time.monotonic() >= deadline:
                    raise
            self._fail_if_all_down()
            wait *= 2  # a slow broker gets longer each time: each try is a new request


def _topics(admin: _Admin, name: str | None) -> tuple[list[TopicInfo], dict[int, tuple[str, int]]]:
    """The topics (all, sorted, or the one named if it exists) and the live brokers'
    addresses. A topic being created (LEADER_NOT_AVAILABLE) is asked about again until the
    API timeout."""
    deadline = time.monotonic() + API_TIMEOUT_S
    while True:
        md = admin.metadata()
        names = sorted(md.topics) if name is None else [n for n in (name,) if n in md.topics]
        if name is not None and not names and admin.known_to_zookeeper(name, deadline):
            # Created a moment ago: the broker that answered has not had the controller's
            # UpdateMetadata yet (another one had, when the creation was acknowledged).
            time.sleep(RETRY_BACKOFF_S)
            continue
        errors: dict[str, KafkaError] = {
            n: error for n in names if (error := md.topics[n].error) is not None
        }
        retriable = any(e.retriable() for e in errors.values())
        if retriable and time.monotonic() < deadline:
            time.sleep(RETRY_BACKOFF_S)
            continue
        if errors:
            raise TopicCommandError(
                "; ".join(f"Topic '{n}': {e.str()}" for n, e in sorted(errors.items()))
            )
        out = [
            TopicInfo(
                n,
                [
                    PartitionInfo(
                        n,
                        p.id,
                        None if p.leader < 0 else p.leader,
                        tuple(p.replicas),
                        tuple(p.isrs),
                    )
                    for p in sorted(md.topics[n].partitions.values(), key=lambda p: p.id)
                ],
            )
            for n in names
        ]
        return out, {b.id: (b.host or "", b.port) for b in md.brokers.values()}


def _existing(admin: _Admin, topic: str, if_exists: bool) -> TopicInfo | None:
    """`topic`, None if it does not exist and --if-exists allows that (Kafka's
    ensureTopicExists)."""
    found, _ = _topics(admin, topic)
    if not found:
        if if_exists:
            return None
        raise TopicCommandError(f"Topic '{topic}' does not exist as expected")
    return found[0]


def _create(
    admin: _Admin,
    topic: str,
    partitions: int | None,
    replication_factor: int | None,
    configs: dict[str, str],
    replica_assignment: str | None,
    if_not_exists: bool,
) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.cimpl import NewTopic

    if replica_assignment is not None:
        if partitions is not None or replication_factor is not None:
            raise TopicCommandError(
                "--replica-assignment cannot be combined with --partitions or --replication-factor"
            )
        assignment = parse_replica_assignment(replica_assignment)
        # librdkafka wants the partition count with an assignment, and no replication factor.
        new = NewTopic(
            topic,
            len(assignment),
            -1,
            replica_assignment=[assignment[p] for p in sorted(assignment)],
            config=configs,
        )
    else:
        # -1: the broker's num.partitions / default.replication.factor.
        new = NewTopic(
            topic,
            -1 if partitions is None else partitions,
            -1 if replication_factor is None else replication_factor,
            config=configs,
        )

    try:
        admin.controller_call(admin.client.create_topics, new)
    except KafkaException as e:
        if if_not_exists and _code(e) == KafkaError.TOPIC_ALREADY_EXISTS:
            return
        raise
    click.echo(f"Created topic {topic}.")


def _alter(
    admin: _Admin, topic: str, partitions: int, replica_assignment: str | None, if_exists: bool
) -> None:
    """Kafka's `--alter --partitions N`: add partitions (silent on success, as Kafka). A
    `--replica-assignment` lists every partition's replicas, as for --create; those of the
    partitions the topic already has are left out of the request, as Kafka does."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.cimpl import NewPartitions

    current = _existing(admin, topic, if_exists)
    if current is None:
        return
    new_assignments = None
    if replica_assignment is not None:
        full = parse_replica_assignment(replica_assignment)
        new_assignments = [full[p] for p in sorted(full) if p >= len(current.partitions)]
        if not new_assignments:
            # librdkafka cannot send an empty list: say what the broker would, unless the
            # count is no increase (the broker's INVALID_PARTITIONS says that).
            added = partitions - len(current.partitions)
            if added > 0:
                raise TopicCommandError(
                    f"Increasing the number of partitions by {added} but 0 assignments provided."
                )
            new_assignments = None
    # NewPartitions refuses an explicit None for the assignment: leave it out instead.
    new = (
        NewPartitions(topic, partitions)
        if new_assignments is None
        else NewPartitions(topic, partitions, new_assignments)
    )

    try:
        admin.controller_call(admin.client.create_partitions, new)
    except KafkaException as e:
        if if_exists and _code(e) == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return  # deleted since the lookup
        raise


def _delete(admin: _Admin, topic: str, if_exists: bool) -> None:
    from confluent_kafka import KafkaError, KafkaException

    if _existing(admin, topic, if_exists) is None:
        return

    try:
        admin.controller_call(admin.client.delete_topics, topic)
    except KafkaException as e:
        if _code(e) != KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise
        if not if_exists:  # deleted since the lookup
            raise TopicCommandError(f"Topic '{topic}' does not exist as expected") from None


def _topic_configs(admin: _Admin, names: list[str]) -> dict[str, dict[str, str]]:
    """Each topic's configs that are not Kafka's defaults (Kafka's ConfigEntry.isDefault:
    source DEFAULT_CONFIG), as kafka-topics.sh's describe header shows them: the topic's
    overrides, and broker settings changed from Kafka's defaults that the topic inherits."""
    from confluent_kafka.admin._config import ConfigResource
    from confluent_kafka.admin._resource import ResourceType

    if not names:
        return {}
    futures = admin.client.describe_configs(
        [ConfigResource(ResourceType.TOPIC, n) for n in names], request_timeout=API_TIMEOUT_S
    )
    out: dict[str, dict[str, str]] = {}
    for resource, future in futures.items():
        entries = admin.wait(future)
        out[resource.name] = {
            e.name: "null" if e.value is None else e.value
            for e in entries.values()
            if not e.is_default
        }
    return out


def _describe(
    admin: _Admin,
    bootstrap_server: str,
    topic: str | None,
    if_exists: bool,
    under_replicated: bool,
    unavailable: bool,
    exclude_internal: bool = False,
) -> None:
    found, brokers = _topics(admin, topic)
    live = set(brokers)
    if exclude_internal:
        found = [t for t in found if t.name not in INTERNAL_TOPICS]
    if topic is not None and not found:
        if if_exists:
            return
        raise TopicCommandError(f"Topic '{topic}' does not exist as expected")
    unanswering = reachability.unanswering(brokers)
    lines: list[str] = []
    if under_replicated or unavailable:
        # Kafka prints only the matching partitions, without the topic line (nor its configs).
        for t in found:
            for p in t.partitions:
                if (under_replicated and p.under_replicated) or (
                    unavailable and p.unavailable(live)
                ):
                    lines.append(format_partition(p, unanswering))
    else:
        configs = _topic_configs(admin, [t.name for t in found])
        moves = _reassignments(bootstrap_server, found)
        for t in found:
            lines += format_description(t, configs.get(t.name), unanswering, moves)
    for line in lines:
        click.echo(line)
    if any("\tUnreachable: " in line for line in lines):
        click.echo(UNREACHABLE_NOTE.format(timeout=reachability.PROBE_TIMEOUT_S), err=True)


@click.command("topics")
@bootstrap_server_option
@click.option("--create", "action", flag_value="create", help="Create a topic.")
@click.option("--list", "action", flag_value="list", help="List all topics.")
@click.option("--describe", "action", flag_value="describe", help="Describe topics.")
@click.option("--delete", "action", flag_value="delete", help="Delete a topic.")
@click.option(
    "--alter", "action", flag_value="alter", help="Add partitions to a topic (with --partitions)."
)
@click.option("--topic", help="The topic to create, describe, alter or delete.")
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    help="Partitions of a new topic; with --alter, the topic's new (larger) partition count.",
)
@click.option(
    "--replication-factor", type=click.IntRange(min=1), help="Replication factor of a new topic."
)
@click.option(
    "--config",
    "config",
    multiple=True,
    metavar="KEY=VALUE",
    help="Topic config override for --create (repeatable), e.g. min.insync.replicas=2.",
)
@click.option(
    "--replica-assignment",
    metavar="B:B,B:B",
    help="Manual assignment for --create (or, with --alter, of every partition, the new ones "
    "taken): partitions separated by ',', replicas by ':'.",
)
@click.option("--if-not-exists", is_flag=True, help="With --create: no error if it exists.")
@click.option(
    "--if-exists", is_flag=True, help="With --describe/--alter/--delete: no error if absent."
)
@click.option(
    "--under-replicated-partitions",
    "under_replicated",
    is_flag=True,
    help="With --describe: only partitions whose ISR is smaller than their replicas.",
)
@click.option(
    "--unavailable-partitions",
    "unavailable",
    is_flag=True,
    help="With --describe: only partitions without a live leader.",
)
@click.option(
    "--exclude-internal",
    is_flag=True,
    help="With --list/--describe: leave out internal topics (__consumer_offsets).",
)
def topics(
    bootstrap_server: str,
    action: str | None,
    topic: str | None,
    partitions: int | None,
    replication_factor: int | None,
    config: tuple[str, ...],
    replica_assignment: str | None,
    if_not_exists: bool,
    if_exists: bool,
    under_replicated: bool,
    unavailable: bool,
    exclude_internal: bool,
) -> None:
    """Create, list, describe, alter or delete topics (like kafka-topics.sh), on librdkafka's
    admin client."""
    require_client("minikafka topics runs its admin client")
    if action is None:
        raise click.UsageError(
            "Command must include exactly one action: --list, --describe, --create, --alter "
            "or --delete"
        )
    if action in ("create", "alter", "delete") and not topic:
        raise click.UsageError(f"--{action} needs --topic")
    if action == "alter":
        if partitions is None:
            raise click.UsageError("--alter needs --partitions (the new partition count)")
        if replication_factor is not None or config:
            raise click.UsageError(
                "--alter only adds partitions: --replication-factor and --config are not "
                "supported with it"
            )
    configs = parse_key_values(config, "--config")

    from confluent_kafka import KafkaException

    try:
        admin = _Admin(bootstrap_server)
        if action == "create":
            assert topic is not None
            _create(
                admin,
                topic,
                partitions,
                replication_factor,
                configs,
                replica_assignment,
                if_not_exists,
            )
        elif action == "list":
            for name in sorted(admin.metadata().topics):
                if not (exclude_internal and name in INTERNAL_TOPICS):
                    click.echo(name)
        elif action == "describe":
            _describe(
                admin,
                bootstrap_server,
                topic,
                if_exists,
                under_replicated,
                unavailable,
                exclude_internal,
            )
        elif action == "alter":
            assert topic is not None and partitions is not None
            _alter(admin, topic, partitions, replica_assignment, if_exists)
        elif action == "delete":
            assert topic is not None
            _delete(admin, topic, if_exists)
    except KafkaException as e:
        _fail(_message(e))
    except (TopicCommandError, ClientConfigError) as e:
        _fail(str(e))


def _fail(message: str) -> None:
    click.echo(f"Error while executing topic command : {message}", err=True)
    sys.exit(1)
