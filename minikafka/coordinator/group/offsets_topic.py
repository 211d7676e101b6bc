"""The records Kafka's group coordinator keeps in `__consumer_offsets`, byte for byte Kafka's.

The coordinator of a group is the leader of partition `partition_for(group_id, n)` of the
internal topic `__consumer_offsets` (both in rules/consumer_offsets.py, where the tools find
them too). It writes there, keyed records compacted by key:

- an offset commit: key OffsetCommitKey (group, topic, partition), value OffsetCommitValue
  (offset, leader epoch, metadata, commit timestamp, expire timestamp);
- the group's metadata after every rebalance: key GroupMetadataKey (group), value
  GroupMetadataValue (protocol type, generation, protocol, leader, members with their
  subscription and assignment bytes);
- a tombstone (null value) to delete either. Tombstones never reach this codec: a loader
  sees the null value itself.

Layout (Kafka's CoordinatorRecordSerde): key = int16 record type, then the key message;
value = int16 value version, then the value message of that version. The record type is
the key's version: 0 and 1 an OffsetCommitKey (same schema), 2 a GroupMetadataKey; newer
Kafka writes more types (3+: consumer-group and share-group records of KIP-848/KIP-932),
which `decode_key` returns as None for a loader to skip, as Kafka's loader skips a type it
does not know (CoordinatorLoader.UnknownRecordTypeException).

Schemas: group-coordinator/src/main/resources/common/message/{OffsetCommitKey,
OffsetCommitValue,GroupMetadataKey,GroupMetadataValue}.json (core/src/main/resources/...
before Kafka 3.6). Versions 0-3 of the values are the classic encoding (int16-length
strings, -1 for null; int32-length bytes; int32 array counts); version 4 is the first
flexible one (KIP-915: compact strings, bytes and arrays with unsigned-varint lengths, and a
tagged-field section closing every struct), kept so that fields can be added as tagged
fields without a version a downgraded broker could not read.

Versions written, as Kafka 3.x/4.x writes them (GroupCoordinatorRecordHelpers with
MetadataVersion.offsetCommitValueVersion and groupMetadataValueVersion, for any
inter-broker protocol >= 2.3): OffsetCommitKey v1, GroupMetadataKey v2, OffsetCommitValue
v3 (v1 when the commit carries an expire timestamp, the only version with that field),
GroupMetadataValue v3. Kafka does not write the flexible v4 "until a tagged field is
introduced"; it reads it, and so does this module.

Decoding follows Kafka's generated readers: every version Kafka ever wrote is accepted,
fields a version lacks take the values Kafka's loader gives them (-1, None, or a v0
member's session timeout as its rebalance timeout), unknown tagged fields are skipped,
and bytes after the message are ignored (Kafka's deserializer never checks that the
buffer was used up). Anything malformed raises OffsetsRecordError and nothing else. Where
this codec is stricter than Kafka: a string that is not valid UTF-8 is refused (Java
would decode it with replacement characters), and so is a varint wider than 32 bits.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final, NoReturn

__all__ = [
    "GROUP_METADATA_KEY_VERSION",
    "GROUP_METADATA_VALUE_VERSION",
    "OFFSET_COMMIT_KEY_VERSION",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberMetadataValue",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "OffsetsRecordError",
    "decode_group_metadata_value",
    "decode_key",
    "decode_offset_commit_value",
    "encode_group_metadata_key",
    "encode_group_metadata_value",
    "encode_offset_commit_key",
    "encode_offset_commit_value",
    "subscribed_topics",
]

# Key versions double as record types (GroupCoordinatorRecordSerde.apiMessageKeyFor).
OFFSET_COMMIT_KEY_VERSION: Final = 1  # 0 was written by Kafka before 0.10.1; same schema
GROUP_METADATA_KEY_VERSION: Final = 2
# Kafka serializes with the highest non-flexible version (MetadataVersion
# .groupMetadataValueVersion for IBP >= 2.3; GROUP_METADATA_VALUE_VERSION = 3 in 4.0's
# GroupCoordinatorRecordHelpers), not the flexible v4, which it only reads.
GROUP_METADATA_VALUE_VERSION: Final = 3
# OffsetCommitValue: v3 (with leaderEpoch) normally, v1 when an expire timestamp is set
# (MetadataVersion.offsetCommitValueVersion(expireTimestampMs), IBP >= 2.1-IV1).
_OFFSET_COMMIT_VALUE_VERSION: Final = 3
_OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRE: Final = 1

_MAX_VALUE_VERSION: Final = 4  # both values: 0-4, flexible from 4
_FIRST_FLEXIBLE_VERSION: Final = 4
_MAX_STRING_BYTES: Final = 0x7FFF  # Kafka's generated code refuses longer strings both ways

_NO_LEADER_EPOCH: Final = -1  # RecordBatch.NO_PARTITION_LEADER_EPOCH
_NO_TIMESTAMP: Final = -1  # OffsetCommitRequest.DEFAULT_TIMESTAMP

_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")
_INT64: Final = struct.Struct(">q")

Buffer = bytes | bytearray | memoryview


class OffsetsRecordError(ValueError):
    """A `__consumer_offsets` record (or consumer-protocol subscription) that cannot be read
    or written: truncated, a null where the schema forbids one, a length out of range,
    invalid UTF-8, an unknown value version, or a field value out of its type's range."""


# -- records -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    """Key of an offset commit (record types 0 and 1)."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    """Key of a group's metadata (record type 2)."""

    group: str


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    """A committed offset. `leader_epoch` -1 means none (and is all v0-v2 can hold);
    `expire_timestamp` -1 means none: only v1 holds one, written by OffsetCommit v1 requests
    that set a commit timestamp and by v2-v4 requests with a retention time."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = _NO_TIMESTAMP


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    """One member of a classic group as GroupMetadataValue stores it. `subscription` is the
    member's metadata for the group's chosen protocol (for protocol type "consumer", a
    ConsumerProtocolSubscription), `assignment` what the leader assigned it in SyncGroup."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    """A classic group after a rebalance (or emptied). `protocol_type` is "" when the group
    has none, `protocol` and `leader` None when it has no members; `current_state_timestamp`
    -1 means none (before v2)."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberMetadataValue, ...]


# -- writing -------------------------------------------------------------------------------


class _Writer:
    """Kafka's primitive types, classic (`flexible=False`) or compact (`flexible=True`)."""

    __slots__ = ("_out", "flexible", "what")

    def __init__(self, what: str, version: int, flexible: bool) -> None:
        self.what = what
        self.flexible = flexible
        self._out = bytearray(_INT16.pack(version))

    def getvalue(self) -> bytes:
        return bytes(self._out)

    def _fail(self, message: str) -> NoReturn:
        raise OffsetsRecordError(f"{self.what}: {message}")

    def _int(self, packer: struct.Struct, bits: int, value: int, field: str) -> None:
        low = -(1 << (bits - 1))
        if not low <= value < -low:
            self._fail(f"{field} {value} is out of int{bits} range")
        self._out += packer.pack(value)

    def int16(self, value: int, field: str) -> None:
        self._int(_INT16, 16, value, field)

    def int32(self, value: int, field: str) -> None:
        self._int(_INT32, 32, value, field)

    def int64(self, value: int, field: str) -> None:
        self._int(_INT64, 64, value, field)

    def uvarint(self, value: int) -> None:
        while value >= 0x80:
            self._out.append((value & 0x7F) | 0x80)
            value >>= 7
        self._out.append(value)

    def _compact_length(self, length: int) -> None:
        """A compact string's, bytes' or array's length: unsigned varint length+1 (0 = null)."""
        self.uvarint(length + 1)

    def string(self, value: str | None, field: str, *, nullable: bool = False) -> None:
        if value is None:
            if not nullable:
                self._fail(f"non-nullable field {field} is None")
            if self.flexible:
                self.uvarint(0)
            else:
                self._out += _INT16.pack(-1)
            return
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError as e:
            self._fail(f"{field} is not encodable as UTF-8: {e}")
        if len(data) > _MAX_STRING_BYTES:
            self._fail(f"{field} is {len(data)} bytes long, more than Kafka's {_MAX_STRING_BYTES}")
        if self.flexible:
            self._compact_length(len(data))
        else:
            self._out += _INT16.pack(len(data))
        self._out += data

    def bytes_(self, value: bytes, field: str) -> None:
        if self.flexible:
            self._compact_length(len(value))
        else:
            self.int32(len(value), f"length of {field}")
        self._out += value

    def array_count(self, count: int, field: str) -> None:
        if self.flexible:
            self._compact_length(count)
        else:
            self.int32(count, f"count of {field}")

    def no_tagged_fields(self) -> None:
        if self.flexible:
            self.uvarint(0)


def encode_offset_commit_key(key: OffsetCommitKey) -> bytes:
    """The key of an offset commit, as record type (key version) 1."""
    w = _Writer("OffsetCommitKey", OFFSET_COMMIT_KEY_VERSION, flexible=False)
    w.string(key.group, "group")
    w.string(key.topic, "topic")
    w.int32(key.partition, "partition")
    return w.getvalue()


def encode_group_metadata_key(key: GroupMetadataKey) -> bytes:
    """The key of a group's metadata, as record type (key version) 2."""
    w = _Writer("GroupMetadataKey", GROUP_METADATA_KEY_VERSION, flexible=False)
    w.string(key.group, "group")
    return w.getvalue()


def _check_version(what: str, version: int) -> None:
    if not 0 <= version <= _MAX_VALUE_VERSION:
        raise OffsetsRecordError(f"{what}: no version {version} (Kafka has 0-{_MAX_VALUE_VERSION})")


def encode_offset_commit_value(value: OffsetCommitValue, *, version: int | None = None) -> bytes:
    """An offset commit's value, in the version Kafka writes: v3, or v1 when the commit has an
    expire timestamp (only v1 holds one). As in Kafka, v1 then drops the leader epoch.

    `version` (0-4) forces another version, e.g. to produce what an older Kafka wrote; fields
    that version lacks are dropped, as Kafka's generated writer drops ignorable fields."""
    if version is None:
        version = (
            _OFFSET_COMMIT_VALUE_VERSION
            if value.expire_timestamp == _NO_TIMESTAMP
            else _OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRE
        )
    _check_version("OffsetCommitValue", version)
    w = _Writer("OffsetCommitValue", version, flexible=version >= _FIRST_FLEXIBLE_VERSION)
    w.int64(value.offset, "offset")
    if version >= 3:
        w.int32(value.leader_epoch, "leaderEpoch")
    w.string(value.metadata, "metadata")
    w.int64(value.commit_timestamp, "commitTimestamp")
    if version == 1:
        w.int64(value.expire_timestamp, "expireTimestamp")
    w.no_tagged_fields()
    return w.getvalue()


def encode_group_metadata_value(value: GroupMetadataValue, *, version: int | None = None) -> bytes:
    """A group's metadata, in the version Kafka writes: v3 (GROUP_METADATA_VALUE_VERSION).

    `version` (0-4) forces another version; fields it lacks (currentStateTimestamp before
    v2, rebalanceTimeout before v1, groupInstanceId before v3) are dropped, as Kafka drops
    ignorable fields."""
    if version is None:
        version = GROUP_METADATA_VALUE_VERSION
    _check_version("GroupMetadataValue", version)
    w = _Writer("GroupMetadataValue", version, flexible=version >= _FIRST_FLEXIBLE_VERSION)
    w.string(value.protocol_type, "protocolType")
    w.int32(value.generation, "generation")
    w.string(value.protocol, "protocol", nullable=True)
    w.string(value.leader, "leader", nullable=True)
    if version >= 2:
        w.int64(value.current_state_timestamp, "currentStateTimestamp")
    w.array_count(len(value.members), "members")
    for member in value.members:
        w.string(member.member_id, "memberId")
        if version >= 3:
            w.string(member.group_instance_id, "groupInstanceId", nullable=True)
        w.string(member.client_id, "clientId")
        w.string(member.client_host, "clientHost")
        if version >= 1:
            w.int32(member.rebalance_timeout_ms, "rebalanceTimeout")
        w.int32(member.session_timeout_ms, "sessionTimeout")
        w.bytes_(member.subscription, "subscription")
        w.bytes_(member.assignment, "assignment")
        w.no_tagged_fields()
    w.no_tagged_fields()
    return w.getvalue()


# -- reading -------------------------------------------------------------------------------


class _Reader:
    """Kafka's primitive types read from `data`, checking every length against the bytes
    left before using it (a corrupt count must not make anything allocate or loop on it)."""

    __slots__ = ("_data", "_pos", "flexible", "what")

    def __init__(self, data: Buffer, what: str) -> None:
        self._data = data if isinstance(data, bytes) else bytes(data)
        self._pos = 0
        self.what = what
        self.flexible = False

    def fail(self, message: str) -> NoReturn:
        raise OffsetsRecordError(f"{self.what}: {message} (at byte {self._pos})")

    @property
    def remaining(self) -> int:
        return len(self._data) - self._pos

    def _take(self, n: int, field: str) -> bytes:
        if n > self.remaining:
            self.fail(f"truncated: {field} needs {n} bytes, {self.remaining} left")
        start = self._pos
        self._pos += n
        return self._data[start : self._pos]

    def _unpack(self, packer: struct.Struct, field: str) -> int:
        if packer.size > self.remaining:
            self.fail(f"truncated: {field} needs {packer.size} bytes, {self.remaining} left")
        (value,) = packer.unpack_from(self._data, self._pos)
        self._pos += packer.size
        return int(value)

    def int16(self, field: str) -> int:
        return self._unpack(_INT16, field)

    def int32(self, field: str) -> int:
        return self._unpack(_INT32, field)

    def int64(self, field: str) -> int:
        return self._unpack(_INT64, field)

    def uvarint(self, field: str) -> int:
        """An unsigned varint of at most 5 bytes holding 32 bits (ByteUtils.readUnsignedVarint)."""
        value = 0
        for shift in range(0, 35, 7):
            if self._pos >= len(self._data):
                self.fail(f"truncated: varint {field} runs past the end")
            byte = self._data[self._pos]
            self._pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if value > 0xFFFF_FFFF:
                    self.fail(f"varint {field} {value} does not fit 32 bits")
                return value
        self.fail(f"varint {field} is longer than 5 bytes")

    def _nullable_length(self, field: str) -> int:
        """A string's length, -1 for null: int16 in classic, compact uvarint length+1."""
        if self.flexible:
            return self.uvarint(f"length of {field}") - 1
        return self.int16(f"length of {field}")

    def _decode(self, data: bytes, field: str) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            self.fail(f"{field} is not valid UTF-8: {e}")

    def nullable_string(self, field: str) -> str | None:
        length = self._nullable_length(field)
        if length < 0:
            return None
        if length > _MAX_STRING_BYTES:
            self.fail(f"string field {field} had invalid length {length}")
        return self._decode(self._take(length, field), field)

    def string(self, field: str) -> str:
        value = self.nullable_string(field)
        if value is None:
            self.fail(f"non-nullable field {field} was serialized as null")
        return value

    def nullable_bytes(self, field: str) -> bytes | None:
        length = self.uvarint(f"length of {field}") - 1 if self.flexible else self.int32(field)
        if length < 0:
            return None
        return self._take(length, field)

    def bytes_(self, field: str) -> bytes:
        value = self.nullable_bytes(field)
        if value is None:
            self.fail(f"non-nullable field {field} was serialized as null")
        return value

    def array_count(self, field: str) -> int:
        count = self.uvarint(f"count of {field}") - 1 if self.flexible else self.int32(field)
        if count < 0:
            self.fail(f"non-nullable field {field} was serialized as null")
        # Every element takes at least one byte: a larger count is corrupt, and is refused
        # before anything loops on it (Kafka: "Tried to allocate a collection of size ...").
        if count > self.remaining:
            self.fail(f"{field} claims {count} elements, only {self.remaining} bytes left")
        return count

    def skip_tagged_fields(self) -> None:
        """A flexible struct's tagged-field section; none is known here, so all are skipped."""
        if not self.flexible:
            return
        for _ in range(self.uvarint("tagged field count")):
            self.uvarint("tag")
            self._take(self.uvarint("tagged field size"), "tagged field")

    def version(self, what: str) -> int:
        if self.remaining < 2:
            self.fail(f"{self.remaining} bytes, too short for the {what} version")
        return self.int16(f"{what} version")

    def value_version(self) -> int:
        version = self.version("value")
        if not 0 <= version <= _MAX_VALUE_VERSION:
            self.fail(f"unknown version {version} (Kafka has 0-{_MAX_VALUE_VERSION})")
        self.flexible = version >= _FIRST_FLEXIBLE_VERSION
        return version


def decode_key(data: Buffer) -> OffsetCommitKey | GroupMetadataKey | None:
    """A `__consumer_offsets` key: record types 0 and 1 an offset commit, 2 a group's metadata.

    Any other type (the consumer-group, share-group and other records of newer Kafka) is
    None, for the loader to skip the record, as Kafka's loader skips types it does not know.
    """
    r = _Reader(data, "__consumer_offsets key")
    record_type = r.version("key")
    if record_type in (0, 1):
        r.what = f"OffsetCommitKey v{record_type}"
        return OffsetCommitKey(
            group=r.string("group"), topic=r.string("topic"), partition=r.int32("partition")
        )
    if record_type == 2:
        r.what = "GroupMetadataKey v2"
        return GroupMetadataKey(group=r.string("group"))
    return None


def decode_offset_commit_value(data: Buffer) -> OffsetCommitValue:
    """An OffsetCommitValue of any version (0-4); a field its version lacks is -1."""
    r = _Reader(data, "OffsetCommitValue")
    version = r.value_version()
    r.what = f"OffsetCommitValue v{version}"
    offset = r.int64("offset")
    leader_epoch = r.int32("leaderEpoch") if version >= 3 else _NO_LEADER_EPOCH
    metadata = r.string("metadata")
    commit_timestamp = r.int64("commitTimestamp")
    expire_timestamp = r.int64("expireTimestamp") if version == 1 else _NO_TIMESTAMP
    r.skip_tagged_fields()
    return OffsetCommitValue(
        offset=offset,
        leader_epoch=leader_epoch,
        metadata=metadata,
        commit_timestamp=commit_timestamp,
        expire_timestamp=expire_timestamp,
    )


def decode_group_metadata_value(data: Buffer) -> GroupMetadataValue:
    """A GroupMetadataValue of any version (0-4). Fields a version lacks take Kafka's values:
    a v0 member's rebalance timeout is its session timeout (as GroupMetadataManager loads
    it), groupInstanceId is None before v3, currentStateTimestamp -1 before v2.

    A v1+ member stored with rebalanceTimeout -1 keeps -1 here (what is on disk); Kafka's
    Java coordinator loads any -1 as the session timeout, and a loader should too."""
    r = _Reader(data, "GroupMetadataValue")
    version = r.value_version()
    r.what = f"GroupMetadataValue v{version}"
    protocol_type = r.string("protocolType")
    generation = r.int32("generation")
    protocol = r.nullable_string("protocol")
    leader = r.nullable_string("leader")
    current_state_timestamp = r.int64("currentStateTimestamp") if version >= 2 else _NO_TIMESTAMP
    members = []
    for _ in range(r.array_count("members")):
        member_id = r.string("memberId")
        group_instance_id = r.nullable_string("groupInstanceId") if version >= 3 else None
        client_id = r.string("clientId")
        client_host = r.string("clientHost")
        rebalance_timeout = r.int32("rebalanceTimeout") if version >= 1 else None
        session_timeout = r.int32("sessionTimeout")
        subscription = r.bytes_("subscription")
        assignment = r.bytes_("assignment")
        r.skip_tagged_fields()
        members.append(
            MemberMetadataValue(
                member_id=member_id,
                group_instance_id=group_instance_id,
                client_id=client_id,
                client_host=client_host,
                rebalance_timeout_ms=(
                    session_timeout if rebalance_timeout is None else rebalance_timeout
                ),
                session_timeout_ms=session_timeout,
                subscription=subscription,
                assignment=assignment,
            )
        )
    r.skip_tagged_fields()
    return GroupMetadataValue(
        protocol_type=protocol_type,
        generation=generation,
        protocol=protocol,
        leader=leader,
        current_state_timestamp=current_state_timestamp,
        members=tuple(members),
    )


# -- the consumer protocol ---------------------------------------------------------------------


def subscribed_topics(subscription: Buffer) -> set[str]:
    """The topics of a consumer-protocol subscription: the metadata a Kafka consumer sends
    in JoinGroup under protocol type "consumer" (int16 version, ConsumerProtocolSubscription).

    Read as Kafka's coordinator reads it (ClassicGroup.computeSubscribedTopics): whatever
    the version, as v0 (Topics, then nullable-bytes UserData), "the based prefix of all
    versions"; the fields of later versions after it are not looked at. Not kio's reader:
    kio 0.6.5 allocates an array from its count before reading it, and a corrupt count of
    2^31-1 aborts the process.
    """
    r = _Reader(subscription, "ConsumerProtocolSubscription")
    r.version("subscription")
    topics = {r.string("topics element") for _ in range(r.array_count("topics"))}
    r.nullable_bytes("userData")
    return topics
