"""Kafka's znode JSON (design §3), as pure encode/decode functions.

Encoders write exactly Kafka's field names and versions, compact, as UTF-8 bytes. Decoders
accept what Kafka itself would read and raise `ValueError` naming the znode kind and the
offending field on anything else, so a corrupt znode is reported, never half-parsed.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minikafka.common import (
    PLAINTEXT,
    Endpoint,
    LeaderAndIsr,
    TopicPartition,
    new_kafka_uuid,
    parse_kafka_uuid,
)
from minikafka.rules.reassignment import ReplicaAssignment

BROKER_INFO_VERSION = 4
TOPIC_ASSIGNMENT_VERSION = 3
REASSIGN_PARTITIONS_VERSION = 1
PARTITION_STATE_VERSION = 1
CONTROLLER_VERSION = 1
ISR_CHANGE_NOTIFICATION_VERSION = 1
PREFERRED_REPLICA_ELECTION_VERSION = 1
TOPIC_CONFIG_VERSION = 1


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """A live broker as registered in `/brokers/ids/<id>`.

    `epoch` is the registration znode's czxid (Kafka's broker epoch); it is not in the
    JSON, so it is -1 until the client fills it in from the znode's stat.
    """

    id: int
    host: str
    port: int
    rack: str | None = None
    epoch: int = -1
    # Every advertised listener. Empty: the one PLAINTEXT listener at host:port. host/port
    # are the PLAINTEXT listener's where there is one (what Kafka's JSON carries), else the
    # first listener's.
    endpoints: tuple[Endpoint, ...] = ()
    # Not Kafka's: `http://host:port` of the broker's HTTP admin endpoint, where the other
    # brokers' dashboards ask for its view (None: it serves none). Kafka's readers ignore
    # fields they do not know.
    admin_url: str | None = None
    # listener -> security protocol, for listeners that are not PLAINTEXT (Kafka's
    # listener_security_protocol_map; a listener missing here is PLAINTEXT).
    protocols: tuple[tuple[str, str], ...] = ()

    def protocol(self, listener: str) -> str:
        return dict(self.protocols).get(listener, PLAINTEXT)

    @classmethod
    def from_endpoints(
        cls, broker_id: int, endpoints: Sequence[Endpoint], rack: str | None = None
    ) -> BrokerInfo:
        primary = next((e for e in endpoints if e.listener == PLAINTEXT), endpoints[0])
        only_plaintext = len(endpoints) == 1 and primary.listener == PLAINTEXT
        return cls(
            broker_id,
            primary.host,
            primary.port,
            rack,
            endpoints=() if only_plaintext else tuple(endpoints),
        )

    def all_endpoints(self) -> tuple[Endpoint, ...]:
        return self.endpoints or (Endpoint(PLAINTEXT, self.host, self.port),)

    def endpoint(self, listener: str) -> Endpoint | None:
        """This broker's address on `listener`, None if it has no such listener."""
        return next((e for e in self.all_endpoints() if e.listener == listener), None)

    def inter_broker_endpoint(self, listener: str) -> Endpoint:
        """Where other brokers reach this one: its address on the inter-broker listener
        (every broker is configured with the same); a broker without that listener is
        reached at its registration's host/port."""
        return self.endpoint(listener) or Endpoint(listener, self.host, self.port)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _dump(obj: Mapping[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _load_object(data: bytes | str | None, what: str) -> dict[str, Any]:
    if data is None:
        raise ValueError(f"{what}: znode has no data")
    try:
        obj = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{what}: not valid JSON ({e}): {data!r:.200}") from e
    if not isinstance(obj, dict):
        raise ValueError(f"{what}: expected a JSON object, got {type(obj).__name__}")
    return obj


def _field(obj: Mapping[str, Any], key: str, what: str) -> Any:
    if key not in obj:
        raise ValueError(f"{what}: missing field {key!r}")
    return obj[key]


def _int(value: Any, what: str, key: str) -> int:
    # bool is an int subclass in Python; JSON true is not a number for Kafka.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what}: field {key!r} must be an integer, got {value!r}")
    return value


def _int_field(obj: Mapping[str, Any], key: str, what: str) -> int:
    return _int(_field(obj, key, what), what, key)


def _str_field(obj: Mapping[str, Any], key: str, what: str) -> str:
    value = _field(obj, key, what)
    if not isinstance(value, str):
        raise ValueError(f"{what}: field {key!r} must be a string, got {value!r}")
    return value


def _int_list(value: Any, what: str, key: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise ValueError(f"{what}: field {key!r} must be a list of integers, got {value!r}")
    return tuple(_int(v, what, key) for v in value)


def _check_version(obj: Mapping[str, Any], what: str, supported: Iterable[int]) -> int:
    version = _int_field(obj, "version", what)
    allowed = tuple(supported)
    if version not in allowed:
        raise ValueError(f"{what}: unsupported version {version} (expected one of {allowed})")
    return version


# --- /brokers/ids/<id> ------------------------------------------------------------------


def encode_broker_info(info: BrokerInfo, timestamp_ms: int | None = None) -> bytes:
    endpoints = info.all_endpoints()
    plaintext = info.endpoint(PLAINTEXT)
    obj: dict[str, Any] = {
        "version": BROKER_INFO_VERSION,
        # As Kafka writes them: host/port only for a listener named PLAINTEXT.
        "host": plaintext.host if plaintext else None,
        "port": plaintext.port if plaintext else -1,
        "endpoints": [str(e) for e in endpoints],
        "listener_security_protocol_map": {
            e.listener: info.protocol(e.listener) for e in endpoints
        },
        "jmx_port": -1,
        "timestamp": str(_now_ms() if timestamp_ms is None else timestamp_ms),
    }
    if info.rack is not None:
        obj["rack"] = info.rack
    if info.admin_url is not None:
        obj["admin_url"] = info.admin_url
    return _dump(obj)


def _parse_endpoint(endpoint: Any, what: str) -> tuple[str, str, int]:
    # "LISTENER://host:port"; host may be empty (bind all) or a bracketed IPv6 address.
    if not isinstance(endpoint, str) or "://" not in endpoint:
        raise ValueError(f"{what}: malformed endpoint {endpoint!r}")
    listener, _, rest = endpoint.partition("://")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"{what}: malformed endpoint {endpoint!r}")
    return listener, host.strip("[]"), int(port)


def decode_broker_info(broker_id: int, data: bytes | str | None, epoch: int = -1) -> BrokerInfo:
    what = f"broker registration /brokers/ids/{broker_id}"
    obj = _load_object(data, what)
    _check_version(obj, what, range(1, 6))
    rack = obj.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise ValueError(f"{what}: field 'rack' must be a string, got {rack!r}")
    host = obj.get("host")
    port = obj.get("port")
    endpoints = obj.get("endpoints")
    # Kafka writes host/port only for a PLAINTEXT listener; otherwise they are null and the
    # endpoints list is authoritative.
    if not isinstance(endpoints, list) or not endpoints:
        if isinstance(host, str) and host and port not in (None, -1):
            admin = obj.get("admin_url")
            return BrokerInfo(
                broker_id,
                host,
                _int(port, what, "port"),
                rack,
                epoch,
                admin_url=admin if isinstance(admin, str) else None,
            )
        _field(obj, "endpoints", what)  # names a missing field
        raise ValueError(f"{what}: no host/port and no endpoints")
    admin_url = obj.get("admin_url")
    if admin_url is not None and not isinstance(admin_url, str):
        raise ValueError(f"{what}: field 'admin_url' must be a string, got {admin_url!r}")
    parsed = [_parse_endpoint(e, what) for e in endpoints]
    info = BrokerInfo.from_endpoints(broker_id, [Endpoint(*p) for p in parsed], rack)
    protocol_map = obj.get("listener_security_protocol_map")
    protocols: tuple[tuple[str, str], ...] = ()
    if isinstance(protocol_map, dict):
        protocols = tuple(
            sorted(
                (str(k), str(v))
                for k, v in protocol_map.items()
                if isinstance(v, str) and v != PLAINTEXT
            )
        )
    return dataclasses.replace(info, epoch=epoch, admin_url=admin_url, protocols=protocols)


# --- /brokers/topics/<t> ----------------------------------------------------------------


def encode_topic_assignment(
    assignment: Mapping[int, Iterable[int] | ReplicaAssignment], topic_id: str | None = None
) -> bytes:
    """Kafka's TopicZNode: version 3 carries the topic id (KIP-516), version 2 has none. A
    partition being reassigned (KIP-455) has its adding and removing replicas beside its
    full replica set."""
    obj: dict[str, Any] = {"version": TOPIC_ASSIGNMENT_VERSION if topic_id else 2}
    if topic_id:
        obj["topic_id"] = topic_id
    full = {
        p: r if isinstance(r, ReplicaAssignment) else ReplicaAssignment.of(tuple(r))
        for p, r in assignment.items()
    }
    obj["partitions"] = {str(p): list(full[p].replicas) for p in sorted(full)}
    obj["adding_replicas"] = {str(p): list(full[p].adding) for p in sorted(full) if full[p].adding}
    obj["removing_replicas"] = {
        str(p): list(full[p].removing) for p in sorted(full) if full[p].removing
    }
    return _dump(obj)


def decode_topic_assignment(topic: str, data: bytes | str | None) -> dict[int, tuple[int, ...]]:
    """The replicas of each partition (the full set RS while one is reassigned)."""
    return {p: a.replicas for p, a in decode_topic_full_assignment(topic, data).items()}


def decode_topic_full_assignment(
    topic: str, data: bytes | str | None
) -> dict[int, ReplicaAssignment]:
    """Each partition's replicas with its adding and removing replicas (Kafka's
    `TopicZNode.decode`; versions 1 and 2 before KIP-455 have none)."""
    what = f"topic assignment /brokers/topics/{topic}"
    obj = _load_object(data, what)
    _check_version(obj, what, (1, 2, 3))
    by_field: dict[str, dict[int, tuple[int, ...]]] = {}
    for name in ("partitions", "adding_replicas", "removing_replicas"):
        parts = obj.get(name, {}) if name != "partitions" else _field(obj, name, what)
        if parts is None:
            parts = {}
        if not isinstance(parts, dict):
            raise ValueError(f"{what}: field {name!r} must be an object, got {parts!r}")
        out: dict[int, tuple[int, ...]] = {}
        for key, replicas in parts.items():
            if not key.isdigit():
                raise ValueError(f"{what}: partition id {key!r} is not a non-negative integer")
            out[int(key)] = _int_list(replicas, what, f"{name}.{key}")
        by_field[name] = out
    return {
        p: ReplicaAssignment(
            replicas,
            by_field["adding_replicas"].get(p, ()),
            by_field["removing_replicas"].get(p, ()),
        )
        for p, replicas in sorted(by_field["partitions"].items())
    }


def decode_topic_id(topic: str, data: bytes | str | None) -> str | None:
    """The topic id in `/brokers/topics/<t>`, None for a topic written without one (the
    controller then gives it one, as Kafka's does)."""
    what = f"topic assignment /brokers/topics/{topic}"
    topic_id = _load_object(data, what).get("topic_id")
    if topic_id is None:
        return None
    try:
        parse_kafka_uuid(topic_id)
    except ValueError as e:
        raise ValueError(f"{what}: field 'topic_id': {e}") from None
    return str(topic_id)


# --- /brokers/topics/<t>/partitions/<p>/state ---------------------------------------------


def encode_partition_state(state: LeaderAndIsr) -> bytes:
    return _dump(
        {
            "version": PARTITION_STATE_VERSION,
            "leader": state.leader,
            "leader_epoch": state.leader_epoch,
            "controller_epoch": state.controller_epoch,
            "isr": list(state.isr),
        }
    )


def decode_partition_state(
    tp: TopicPartition | str, data: bytes | str | None, zk_version: int = -1
) -> LeaderAndIsr:
    what = f"partition state of {tp}"
    obj = _load_object(data, what)
    _check_version(obj, what, (1,))
    return LeaderAndIsr(
        leader=_int_field(obj, "leader", what),
        leader_epoch=_int_field(obj, "leader_epoch", what),
        isr=_int_list(_field(obj, "isr", what), what, "isr"),
        controller_epoch=_int_field(obj, "controller_epoch", what),
        zk_version=zk_version,
    )


# --- /cluster/id --------------------------------------------------------------------------


def new_cluster_id() -> str:
    """A cluster id as Kafka makes one (Uuid.randomUuid in its text form, 22 chars)."""
    return new_kafka_uuid()


def encode_cluster_id(cluster_id: str) -> bytes:
    # Kafka writes the version as a string here ("1"), unlike its other znodes.
    return _dump({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes | str | None) -> str:
    what = "cluster id /cluster/id"
    return _str_field(_load_object(data, what), "id", what)


# --- /latest_producer_id_block -------------------------------------------------------------

PRODUCER_ID_BLOCK_VERSION = 1


def encode_producer_id_block(broker_id: int, block_start: int, block_end: int) -> bytes:
    # Kafka's ProducerIdBlockZNode: the block's ends as strings.
    return _dump(
        {
            "version": PRODUCER_ID_BLOCK_VERSION,
            "broker": broker_id,
            "block_start": str(block_start),
            "block_end": str(block_end),
        }
    )


def decode_producer_id_block(data: bytes | str | None) -> tuple[int, int]:
    """(block start, block end) of the last block any broker took."""
    what = "producer id block /latest_producer_id_block"
    obj = _load_object(data, what)
    _check_version(obj, what, (PRODUCER_ID_BLOCK_VERSION,))
    try:
        return int(_field(obj, "block_start", what)), int(_field(obj, "block_end", what))
    except (TypeError, ValueError) as e:
        raise ValueError(f"{what}: block ends are not integers: {obj}") from e


# --- /controller, /controller_epoch ------------------------------------------------------


def encode_controller(broker_id: int, timestamp_ms: int | None = None) -> bytes:
    return _dump(
        {
            "version": CONTROLLER_VERSION,
            "brokerid": broker_id,
            "timestamp": str(_now_ms() if timestamp_ms is None else timestamp_ms),
        }
    )


def decode_controller(data: bytes | str | None) -> int:
    what = "controller /controller"
    obj = _load_object(data, what)
    _check_version(obj, what, (1,))
    return _int_field(obj, "brokerid", what)


def encode_controller_epoch(epoch: int) -> bytes:
    return str(int(epoch)).encode()


def decode_controller_epoch(data: bytes | str | None) -> int:
    what = "controller epoch /controller_epoch"
    if data is None:
        raise ValueError(f"{what}: znode has no data")
    try:
        text = data.decode() if isinstance(data, bytes) else data
    except UnicodeDecodeError as e:
        raise ValueError(f"{what}: not UTF-8: {data!r:.100}") from e
    text = text.strip()
    if not text.lstrip("-").isdigit():
        raise ValueError(f"{what}: not a decimal integer: {text!r:.100}")
    return int(text)


# --- partition lists: /isr_change_notification/..., /admin/preferred_replica_election ---


def _encode_partition_list(version: int, tps: Iterable[TopicPartition]) -> bytes:
    return _dump(
        {
            "version": version,
            "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in tps],
        }
    )


def _decode_partition_list(data: bytes | str | None, what: str) -> list[TopicPartition]:
    obj = _load_object(data, what)
    _check_version(obj, what, (1,))
    entries = _field(obj, "partitions", what)
    if not isinstance(entries, list):
        raise ValueError(f"{what}: field 'partitions' must be a list, got {entries!r}")
    out: list[TopicPartition] = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise ValueError(f"{what}: partition entry must be an object, got {entry!r}")
        out.append(
            TopicPartition(_str_field(entry, "topic", what), _int_field(entry, "partition", what))
        )
    return out


def encode_isr_change_notification(tps: Iterable[TopicPartition]) -> bytes:
    return _encode_partition_list(ISR_CHANGE_NOTIFICATION_VERSION, tps)


def decode_isr_change_notification(data: bytes | str | None) -> list[TopicPartition]:
    return _decode_partition_list(data, "ISR change notification")


def encode_preferred_replica_election(tps: Iterable[TopicPartition]) -> bytes:
    return _encode_partition_list(PREFERRED_REPLICA_ELECTION_VERSION, tps)


def decode_preferred_replica_election(data: bytes | str | None) -> list[TopicPartition]:
    return _decode_partition_list(data, "preferred replica election")


# --- /admin/reassign_partitions ----------------------------------------------------------


def encode_partition_reassignment(reassignment: Mapping[TopicPartition, Sequence[int]]) -> bytes:
    """Kafka's ReassignPartitionsZNode: the target replicas of each partition to move."""
    return _dump(
        {
            "version": REASSIGN_PARTITIONS_VERSION,
            "partitions": [
                {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas)}
                for tp, replicas in reassignment.items()
            ],
        }
    )


def decode_partition_reassignment(
    data: bytes | str | None,
) -> dict[TopicPartition, tuple[int, ...]]:
    what = "partition reassignment /admin/reassign_partitions"
    obj = _load_object(data, what)
    _check_version(obj, what, (REASSIGN_PARTITIONS_VERSION,))
    entries = _field(obj, "partitions", what)
    if not isinstance(entries, list):
        raise ValueError(f"{what}: field 'partitions' must be a list, got {entries!r}")
    out: dict[TopicPartition, tuple[int, ...]] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise ValueError(f"{what}: partition entry must be an object, got {entry!r}")
        tp = TopicPartition(_str_field(entry, "topic", what), _int_field(entry, "partition", what))
        out[tp] = _int_list(_field(entry, "replicas", what), what, "replicas")
    return out


# --- /config/topics/<t> -----------------------------------------------------------------


def encode_topic_config(config: Mapping[str, str]) -> bytes:
    return _dump(
        {"version": TOPIC_CONFIG_VERSION, "config": {k: str(v) for k, v in config.items()}}
    )


def decode_topic_config(topic: str, data: bytes | str | None) -> dict[str, str]:
    return decode_entity_config(f"topic config /config/topics/{topic}", data)


def decode_entity_config(what: str, data: bytes | str | None) -> dict[str, str]:
    """A `/config/<type>/<entity>` znode (Kafka's ConfigEntityZNode): its config map."""
    obj = _load_object(data, what)
    _check_version(obj, what, (1,))
    config = _field(obj, "config", what)
    if not isinstance(config, dict):
        raise ValueError(f"{what}: field 'config' must be an object, got {config!r}")
    for key, value in config.items():
        if not isinstance(value, str):
            raise ValueError(f"{what}: value of {key!r} must be a string, got {value!r}")
    return dict(config)


# --- /config/changes/config_change_<seq> ---------------------------------------------------

CONFIG_CHANGE_VERSION = 2


def encode_config_change_notification(entity_path: str) -> bytes:
    """Kafka's ConfigEntityChangeNotificationSequenceZNode, version 2: the changed entity's
    path under /config (`topics/<t>`)."""
    return _dump({"version": CONFIG_CHANGE_VERSION, "entity_path": entity_path})


def decode_config_change_notification(data: bytes | str | None) -> str:
    """The changed entity's path under /config (`topics/<t>`); version 1 notifications
    (entity_type, entity_name) are read as Kafka reads them."""
    what = "config change notification"
    obj = _load_object(data, what)
    version = _check_version(obj, what, (1, 2))
    if version == 1:
        return f"{_str_field(obj, 'entity_type', what)}/{_str_field(obj, 'entity_name', what)}"
    return _str_field(obj, "entity_path", what)
