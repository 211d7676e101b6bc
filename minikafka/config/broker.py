"""Broker configuration: Kafka's property names and defaults (design §11).

`server.properties` uses Java's properties syntax; `--override key=value` on the command line
wins over the file. An unknown key is refused (Kafka only warns about one): a property
minikafka would silently ignore, such as one of Kafka's it does not implement, must not look
as if it took effect.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from minikafka.config.listeners import ListenerConfigError, Listeners, resolve_listeners
from minikafka.config.security import SecurityConfig, is_security_prop
from minikafka.config.zk_client import is_zk_tls_prop, zk_tls
from minikafka.protocol.errors import InvalidConfigError
from minikafka.rules.read_replica import LEADER_SELECTOR, RACK_AWARE_SELECTOR
from minikafka.storage.log_config import LONG_MAX, LogConfig, parse_bool
from minikafka.storage.open_files import DEFAULT_MAX_OPEN_FILES
from minikafka.zk.auth import ZkTls

log = logging.getLogger(__name__)

# replica.selector.class: Kafka's two ReplicaSelectors (KIP-392), which minikafka implements.
REPLICA_SELECTORS = (LEADER_SELECTOR, RACK_AWARE_SELECTOR)


def parse_properties(text: str) -> dict[str, str]:
    """Java .properties: `key=value` or `key: value`, `#`/`!` comments, `\\` continuations."""
    props: dict[str, str] = {}
    logical: list[str] = []

    def finish() -> None:
        entry = "".join(logical)
        logical.clear()
        cut = min((i for i in (entry.find("="), entry.find(":")) if i >= 0), default=-1)
        if cut < 0:
            key, _, value = entry.partition(" ")
        else:
            key, value = entry[:cut], entry[cut + 1 :]
        if key.strip():
            props[key.strip()] = value.strip()

    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical.append(line[:-1])
            continue
        logical.append(line)
        finish()
    if logical:
        finish()
    return props


def _int(v: str) -> int:
    return int(v.strip())


def parse_admin_listener(listener: str) -> tuple[str, int]:
    """`admin.listeners`: `http://host:port` → (host, port); an empty host binds every
    interface, port 0 any free port."""
    parts = urlsplit(listener.strip())
    if parts.scheme.lower() != "http" or parts.port is None:
        raise ValueError(f"unsupported admin listener {listener!r}: expected http://host:port")
    return parts.hostname or "", parts.port


def _is_token(token: str) -> bool:
    """Whether `token` can be sent as it is in an Authorization header, as a bearer token or
    a basic password: visible ASCII, no spaces."""
    return bool(token) and all("!" <= c <= "~" for c in token)


def _unknown_properties_message(unknown: list[str], known: set[str]) -> str:
    """One line: each unknown name with the closest known one, if any. Not the list of
    every known name: ~70 names would bury the hint."""
    parts = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return (
        f"unknown broker {'property' if len(unknown) == 1 else 'properties'} "
        f"{', '.join(parts)}: minikafka refuses properties it does not implement"
    )


def _parse_field(attr: str, type_: object, raw: str) -> Any:
    """A property's text as the BrokerConfig field `attr` (annotated `type_`) holds it."""
    try:
        if type_ in ("int", int):
            return _int(raw)
        if type_ in ("int | None",):
            return _int(raw) if raw.strip() else None
        if type_ in ("bool", bool):
            return parse_bool(raw)
        if type_ in ("float", float):
            return float(raw)
        return raw or None if type_ == "str | None" else raw
    except ValueError as e:
        name = BrokerConfig.property_name(attr)
        raise InvalidConfigError(f"invalid value for {name}: {raw!r} ({e})") from e


# Kafka's DynamicConfig.Broker configs that have no server.properties form: only
# `/config/brokers/<id>` sets them.
DYNAMIC_ONLY_PROPERTIES: Final = frozenset(
    {"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
)


@dataclass(frozen=True)
class BrokerConfig:
    broker_id: int = -1
    listeners: str = "PLAINTEXT://:9092"
    advertised_listeners: str | None = None
    listener_security_protocol_map: str | None = None
    inter_broker_listener_name: str | None = None
    log_dirs: tuple[str, ...] = ("/tmp/kafka-logs",)
    zookeeper_connect: str = "localhost:2181"
    zookeeper_session_timeout_ms: int = 18000
    zookeeper_connection_timeout_ms: int | None = None
    # Kafka's: the znodes this broker creates are writable by its ZooKeeper identity only
    # (zk/auth.py); needs SASL to ZooKeeper (config/zk_client.py).
    zookeeper_set_acl: bool = False
    replica_lag_time_max_ms: int = 30000
    # minikafka's own (Kafka waits for the session to expire): a follower whose fetch
    # connection closed and that fetched nothing since leaves the ISR after this; -1 (the
    # default, Kafka's behaviour): never.
    replica_lag_disconnected_max_ms: int = -1
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_max_bytes: int = 1024 * 1024
    replica_fetch_response_max_bytes: int = 10 * 1024 * 1024
    replica_fetch_backoff_ms: int = 1000
    # KIP-227 incremental fetch sessions (0 slots: every fetch is a full, sessionless one).
    max_incremental_fetch_session_cache_slots: int = 1000
    min_incremental_fetch_session_eviction_ms: int = 120000
    num_replica_fetchers: int = 1
    # Replication throttles (KIP-73, rules/replication_quota.py): the bytes/s this broker
    # sends as leader / fetches as follower for throttled replicas. Set only dynamically
    # (`/config/brokers/<id>`), as in Kafka: server.properties refuses them.
    leader_replication_throttled_rate: int = LONG_MAX
    follower_replication_throttled_rate: int = LONG_MAX
    # The throttles' rate windows: this many (the current one and those before it), each
    # this long.
    replication_quota_window_num: int = 11
    replication_quota_window_size_seconds: int = 1
    replica_high_watermark_checkpoint_interval_ms: int = 5000
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10
    default_replication_factor: int = 1
    num_partitions: int = 1
    message_max_bytes: int = 1024 * 1024 + 12
    log_segment_bytes: int = 1024 * 1024 * 1024
    log_roll_ms: int = 7 * 24 * 60 * 60 * 1000
    log_roll_jitter_ms: int = 0
    log_segment_delete_delay_ms: int = 60_000
    log_preallocate: bool = False
    log_index_size_max_bytes: int = 10 * 1024 * 1024
    log_retention_ms: int = 7 * 24 * 60 * 60 * 1000
    log_retention_bytes: int = -1
    log_retention_check_interval_ms: int = 300000
    log_index_interval_bytes: int = 4096
    log_flush_interval_messages: int = LONG_MAX
    log_flush_interval_ms: int = LONG_MAX
    log_flush_scheduler_interval_ms: int = LONG_MAX
    # Segment files open at once (storage/open_files.py); minikafka's, Kafka keeps all open.
    log_open_files_max: int = DEFAULT_MAX_OPEN_FILES
    # Idempotent producers idle this long are forgotten (checked by the log-retention task).
    producer_id_expiration_ms: int = 24 * 60 * 60 * 1000
    # Log compaction: the topic default policy, and the log cleaner (storage/log_cleaner.py;
    # one cleaner, as log.cleaner.threads=1).
    log_cleanup_policy: str = "delete"
    log_cleaner_enable: bool = True
    log_cleaner_backoff_ms: int = 15000
    log_cleaner_delete_retention_ms: int = 24 * 60 * 60 * 1000
    log_cleaner_min_cleanable_ratio: float = 0.5
    log_cleaner_min_compaction_lag_ms: int = 0
    log_cleaner_max_compaction_lag_ms: int = LONG_MAX
    log_message_timestamp_type: str = "CreateTime"
    compression_type: str = "producer"
    log_message_format_version: str = "2.8-IV1"
    log_message_downconversion_enable: bool = True
    log_message_timestamp_difference_max_ms: int = LONG_MAX
    # The group coordinator (coordinator/group) and its offsets topic.
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = 2**31 - 1
    offset_metadata_max_bytes: int = 4096
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    offsets_topic_segment_bytes: int = 100 * 1024 * 1024
    offsets_commit_timeout_ms: int = 5000
    offsets_retention_minutes: int = 7 * 24 * 60
    offsets_retention_check_interval_ms: int = 600_000
    controlled_shutdown_enable: bool = True
    controlled_shutdown_max_retries: int = 3
    controlled_shutdown_retry_backoff_ms: int = 5000
    delete_topic_enable: bool = True
    auto_create_topics_enable: bool = True
    request_timeout_ms: int = 30000
    socket_request_max_bytes: int = 100 * 1024 * 1024
    controller_socket_timeout_ms: int = 30000
    # Kafka hard-codes these three ISR propagation timings (§8.5); tests shorten them.
    isr_change_propagation_check_interval_ms: int = 2500
    isr_change_propagation_blackout_ms: int = 5000
    isr_change_propagation_max_delay_ms: int = 60000
    broker_rack: str | None = None
    # KIP-392: how a partition's leader picks the replica a consumer reads from (unset:
    # Kafka's LeaderSelector, always the leader). Java class names: the two Kafka ships.
    replica_selector_class: str | None = None
    # Not Kafka's (Kafka has JMX): `http://host:port` of the HTTP admin endpoint (Prometheus
    # metrics, health, JSON views; minikafka.admin_http). Unset: no endpoint.
    admin_listeners: str | None = None
    # Not Kafka's either: the secret every admin endpoint request but /health must present
    # (admin_http/server.py). A secret like Kafka's PASSWORD configs: described as sensitive,
    # with no value (config/dynamic.py), and never in this config's repr.
    admin_listeners_token: str | None = field(default=None, repr=False)
    # Security (config/security.py): how listeners authenticate, who the brokers are to each
    # other, and the authorizer. Kafka's defaults: SASL's mechanism is GSSAPI, which
    # minikafka lacks, so a SASL listener needs sasl.enabled.mechanisms set.
    security_inter_broker_protocol: str | None = None
    sasl_enabled_mechanisms: str = "GSSAPI"
    sasl_mechanism_inter_broker_protocol: str = "GSSAPI"
    sasl_server_max_receive_size: int = 524288
    connection_failed_authentication_delay_ms: int = 100
    connections_max_reauth_ms: int = 0
    authorizer_class_name: str = ""
    super_users: str | None = None
    allow_everyone_if_no_acl_found: bool = False
    # ssl.* and listener.name.<listener>.* properties, as given (config/security.py reads them).
    security_props: tuple[tuple[str, str], ...] = ()
    # zookeeper.ssl.* and zookeeper.clientCnxnSocket, as given (config/zk_client.py reads
    # them; a keystore password among them).
    zookeeper_tls_props: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    # Kafka accepts `log.retention.hours` / `minutes`; the most precise one given wins.
    _RETENTION_UNITS = (
        ("log.retention.ms", 1),
        ("log.retention.minutes", 60_000),
        ("log.retention.hours", 3_600_000),
    )
    _ROLL_UNITS = (("log.roll.ms", 1), ("log.roll.hours", 3_600_000))

    @staticmethod
    def property_name(attr: str) -> str:
        return attr.replace("_", ".")

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> BrokerConfig:
        kwargs: dict[str, Any] = {}
        known: set[str] = set()
        for f in fields(cls):
            name = cls.property_name(f.name)
            if f.name == "log_dirs":
                raw = props.get("log.dirs", props.get("log.dir"))
                known.update(("log.dirs", "log.dir"))
                if raw is not None:
                    kwargs["log_dirs"] = tuple(d.strip() for d in raw.split(",") if d.strip())
                continue
            if f.name == "zookeeper_tls_props":
                tls = sorted((k, v) for k, v in props.items() if is_zk_tls_prop(k))
                known.update(k for k, _ in tls)
                kwargs["zookeeper_tls_props"] = tuple(tls)
                continue
            if f.name == "security_props":
                prefixed = sorted((k, v) for k, v in props.items() if is_security_prop(k))
                known.update(k for k, _ in prefixed)
                kwargs["security_props"] = tuple(prefixed)
                continue
            known.add(name)
            if name in props:
                kwargs[f.name] = _parse_field(f.name, f.type, props[name])
        for options, attr in (
            (cls._RETENTION_UNITS, "log_retention_ms"),
            (cls._ROLL_UNITS, "log_roll_ms"),
        ):
            for name, unit in options:
                known.add(name)
                if name in props:
                    kwargs[attr] = _int(props[name]) * unit
                    break
        dynamic_only = sorted(k for k in props if k in DYNAMIC_ONLY_PROPERTIES)
        if dynamic_only:
            raise InvalidConfigError(
                f"{', '.join(dynamic_only)} can only be set dynamically (minikafka configs "
                "--entity-type brokers --entity-name <id> --alter), as in Kafka"
            )
        unknown = sorted(k for k in props if k not in known)
        if unknown:
            raise InvalidConfigError(_unknown_properties_message(unknown, known))
        cfg = cls(**kwargs)
        cfg.validate()
        return cfg

    def with_dynamic(self, props: Mapping[str, str]) -> BrokerConfig:
        """This config with `props` (Kafka property names, checked as in server.properties)
        over it: the dynamic broker configs over the static ones. InvalidConfigError naming
        the property when a value does not parse or the result does not validate."""
        by_name = {self.property_name(f.name): f for f in fields(self)}
        changes: dict[str, Any] = {}
        for name, raw in props.items():
            f = by_name.get(name)
            if f is None or f.name in ("log_dirs", "security_props", "zookeeper_tls_props"):
                raise InvalidConfigError(f"unknown broker property {name!r}")
            changes[f.name] = _parse_field(f.name, f.type, raw)
        cfg = replace(self, **changes)
        cfg.validate()
        return cfg

    @classmethod
    def load(cls, path: Path | None, overrides: Mapping[str, str] | None = None) -> BrokerConfig:
        props = parse_properties(path.read_text()) if path is not None else {}
        props.update(overrides or {})
        return cls.from_properties(props)

    def validate(self) -> None:
        if self.broker_id < 0:
            raise InvalidConfigError("broker.id must be set to a non-negative integer")
        if not self.log_dirs:
            raise InvalidConfigError("log.dirs must name at least one directory")
        if self.min_insync_replicas < 1:
            raise InvalidConfigError("min.insync.replicas must be >= 1")
        if self.num_partitions < 1:
            raise InvalidConfigError("num.partitions must be >= 1")
        if self.default_replication_factor < 1:
            raise InvalidConfigError("default.replication.factor must be >= 1")
        if self.num_replica_fetchers != 1:
            raise InvalidConfigError(
                "num.replica.fetchers must be 1: minikafka runs one fetcher per source broker"
            )
        for name, rate in (
            ("leader.replication.throttled.rate", self.leader_replication_throttled_rate),
            ("follower.replication.throttled.rate", self.follower_replication_throttled_rate),
        ):
            if rate < 0:
                raise InvalidConfigError(
                    f"Invalid value {rate} for configuration {name}: Value must be at least 0"
                )
        for name, value in (
            ("replication.quota.window.num", self.replication_quota_window_num),
            ("replication.quota.window.size.seconds", self.replication_quota_window_size_seconds),
        ):
            if value < 1:
                raise InvalidConfigError(
                    f"Invalid value {value} for configuration {name}: Value must be at least 1"
                )
        if self.replica_selector_class not in (None, "", *REPLICA_SELECTORS):
            raise InvalidConfigError(
                f"replica.selector.class {self.replica_selector_class!r} is not supported: "
                f"minikafka has Kafka's {' and '.join(REPLICA_SELECTORS)}"
            )
        if self.replica_lag_time_max_ms <= 0:
            raise InvalidConfigError("replica.lag.time.max.ms must be positive")
        if self.replica_lag_disconnected_max_ms < -1:
            raise InvalidConfigError(
                "replica.lag.disconnected.max.ms must be -1 (off) or at least 0, not "
                f"{self.replica_lag_disconnected_max_ms}"
            )
        if self.admin_listeners is not None:
            try:
                parse_admin_listener(self.admin_listeners)
            except ValueError as e:
                raise InvalidConfigError(f"admin.listeners: {e}") from e
        if self.admin_listeners_token is not None and not _is_token(self.admin_listeners_token):
            # Never the value in the message: it is a secret.
            raise InvalidConfigError(
                "admin.listeners.token must be printable ASCII without spaces (it is sent in "
                "an HTTP header)"
            )
        self.resolved_listeners()
        self.security()
        self.zookeeper_tls()
        if self.log_cleaner_backoff_ms <= 0:
            raise InvalidConfigError("log.cleaner.backoff.ms must be positive")
        if self.log_open_files_max < 1:
            raise InvalidConfigError(
                f"Invalid value {self.log_open_files_max} for configuration "
                "log.open.files.max: Value must be at least 1"
            )
        if self.max_incremental_fetch_session_cache_slots < 0:
            raise InvalidConfigError("max.incremental.fetch.session.cache.slots must be >= 0")
        self.log_config().validate()
        for name, value in (
            ("offsets.topic.num.partitions", self.offsets_topic_num_partitions),
            ("offsets.topic.replication.factor", self.offsets_topic_replication_factor),
            ("offsets.topic.segment.bytes", self.offsets_topic_segment_bytes),
            ("offsets.commit.timeout.ms", self.offsets_commit_timeout_ms),
            ("offsets.retention.minutes", self.offsets_retention_minutes),
            ("offsets.retention.check.interval.ms", self.offsets_retention_check_interval_ms),
            ("group.min.session.timeout.ms", self.group_min_session_timeout_ms),
            ("group.max.size", self.group_max_size),
        ):
            if value < 1:
                raise InvalidConfigError(f"{name} must be >= 1")
        if self.group_max_session_timeout_ms < self.group_min_session_timeout_ms:
            raise InvalidConfigError(
                "group.max.session.timeout.ms must be >= group.min.session.timeout.ms"
            )
        if self.group_initial_rebalance_delay_ms < 0 or self.offset_metadata_max_bytes < 0:
            raise InvalidConfigError(
                "group.initial.rebalance.delay.ms and offset.metadata.max.bytes must be >= 0"
            )

    def resolved_listeners(self) -> Listeners:
        """listeners, advertised.listeners, the protocol map and the inter-broker listener,
        checked together (InvalidConfigError naming the setting)."""
        try:
            return resolve_listeners(
                self.listeners,
                self.advertised_listeners,
                self.listener_security_protocol_map,
                self.inter_broker_listener_name,
                self.security_inter_broker_protocol,
            )
        except ListenerConfigError as e:
            raise InvalidConfigError(str(e)) from e

    def security(self) -> SecurityConfig:
        """Every listener's security settings and the authorizer's, checked together
        (InvalidConfigError naming the property)."""
        listeners = self.resolved_listeners()
        return SecurityConfig.parse(
            listeners,
            dict(self.security_props),
            sasl_enabled_mechanisms=self.sasl_enabled_mechanisms,
            sasl_mechanism_inter_broker_protocol=self.sasl_mechanism_inter_broker_protocol,
            connections_max_reauth_ms=self.connections_max_reauth_ms,
            authorizer_class_name=self.authorizer_class_name,
            super_users=self.super_users,
        )

    def zookeeper_tls(self) -> ZkTls | None:
        """TLS to ZooKeeper from the zookeeper.ssl.* properties (InvalidConfigError naming
        the property), None for plaintext."""
        return zk_tls(dict(self.zookeeper_tls_props))

    def log_config(self) -> LogConfig:
        """Default topic config derived from the broker's log.* settings."""
        return LogConfig(
            segment_bytes=self.log_segment_bytes,
            segment_ms=self.log_roll_ms,
            segment_jitter_ms=self.log_roll_jitter_ms,
            file_delete_delay_ms=self.log_segment_delete_delay_ms,
            preallocate=self.log_preallocate,
            segment_index_bytes=self.log_index_size_max_bytes,
            index_interval_bytes=self.log_index_interval_bytes,
            retention_ms=self.log_retention_ms,
            retention_bytes=self.log_retention_bytes,
            max_message_bytes=self.message_max_bytes,
            flush_messages=self.log_flush_interval_messages,
            flush_ms=self.log_flush_interval_ms,
            min_insync_replicas=self.min_insync_replicas,
            unclean_leader_election_enable=self.unclean_leader_election_enable,
            producer_id_expiration_ms=self.producer_id_expiration_ms,
            cleanup_policy=self.log_cleanup_policy,
            delete_retention_ms=self.log_cleaner_delete_retention_ms,
            min_cleanable_dirty_ratio=self.log_cleaner_min_cleanable_ratio,
            min_compaction_lag_ms=self.log_cleaner_min_compaction_lag_ms,
            max_compaction_lag_ms=self.log_cleaner_max_compaction_lag_ms,
            message_timestamp_type=self.log_message_timestamp_type,
            message_timestamp_difference_max_ms=self.log_message_timestamp_difference_max_ms,
            compression_type=self.compression_type,
            message_format_version=self.log_message_format_version,
            message_downconversion_enable=self.log_message_downconversion_enable,
        )
