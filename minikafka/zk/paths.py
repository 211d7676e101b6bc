"""Every znode path minikafka uses: Kafka's ZooKeeper layout (design §3, Kafka's `ZkData`).

Paths are relative to the chroot, if any: the client prefixes it.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
ADMIN = "/admin"
DELETE_TOPICS = "/admin/delete_topics"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
CONFIG = "/config"
CONFIG_TOPICS = "/config/topics"
CONFIG_BROKERS = "/config/brokers"
CONFIG_USERS = "/config/users"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
CLUSTER_ID = "/cluster/id"
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"

# Kafka's ZkData.PersistentZkPaths: created at startup so that watches on them can be set
# and children created without `makepath`. (Kafka also lists consumer, seqid and
# log-dir-event paths, which minikafka does not use.)
PERSISTENT_PATHS: tuple[str, ...] = (
    BROKER_IDS,
    BROKER_TOPICS,
    CONFIG_TOPICS,
    CONFIG_BROKERS,
    CONFIG_USERS,
    CONFIG_CHANGES,
    DELETE_TOPICS,
    ISR_CHANGE_NOTIFICATION,
)


def _name(kind: str, name: str) -> str:
    # A name with a slash (or "." / "..") would silently address another znode.
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"invalid {kind} name for a znode path: {name!r}")
    return name


def broker_ids() -> str:
    return BROKER_IDS


def broker(broker_id: int) -> str:
    return f"{BROKER_IDS}/{int(broker_id)}"


def topics() -> str:
    return BROKER_TOPICS


def topic(t: str) -> str:
    return f"{BROKER_TOPICS}/{_name('topic', t)}"


def partitions(t: str) -> str:
    return f"{topic(t)}/partitions"


def partition(t: str, p: int) -> str:
    return f"{partitions(t)}/{int(p)}"


def partition_state(t: str, p: int) -> str:
    return f"{partition(t, p)}/state"


def controller() -> str:
    return CONTROLLER


def controller_epoch() -> str:
    return CONTROLLER_EPOCH


def isr_change_notifications() -> str:
    return ISR_CHANGE_NOTIFICATION


def isr_change_notification_prefix() -> str:
    """Path given to a sequential create; ZooKeeper appends a 10-digit sequence number."""
    return f"{ISR_CHANGE_NOTIFICATION}/{ISR_CHANGE_PREFIX}"


def isr_change_notification(name: str) -> str:
    return f"{ISR_CHANGE_NOTIFICATION}/{_name('notification', name)}"


def delete_topics() -> str:
    return DELETE_TOPICS


def delete_topic(t: str) -> str:
    return f"{DELETE_TOPICS}/{_name('topic', t)}"


def preferred_replica_election() -> str:
    return PREFERRED_REPLICA_ELECTION


def reassign_partitions() -> str:
    """The reassignment kafka-reassign-partitions.sh --zookeeper writes (before KIP-455's
    AlterPartitionReassignments); the controller watches it too."""
    return REASSIGN_PARTITIONS


def topic_configs() -> str:
    return CONFIG_TOPICS


def topic_config(t: str) -> str:
    return f"{CONFIG_TOPICS}/{_name('topic', t)}"


def broker_config(entity: str) -> str:
    """`/config/brokers/<id>`, or `<default>` for the cluster-wide dynamic defaults."""
    return f"{CONFIG_BROKERS}/{_name('broker config entity', entity)}"


def sanitized_user(user: str) -> str:
    """A user name as Kafka's Sanitizer writes it into a znode name: URL-encoded (UTF-8),
    with `*` as %2A and a space as %20, so `/` or `..` cannot name another znode."""
    if not user:
        raise ValueError("empty user name")
    return quote(user, safe="").replace("~", "%7E").replace("*", "%2A")


def desanitized_user(name: str) -> str:
    return unquote(name)


def user_configs() -> str:
    return CONFIG_USERS


def user_config(user: str) -> str:
    """`/config/users/<sanitized user>`: the user's SCRAM credentials (and quotas, in
    Kafka)."""
    return f"{CONFIG_USERS}/{sanitized_user(user)}"


def config_changes() -> str:
    return CONFIG_CHANGES


def config_change_prefix() -> str:
    """Kafka's config change notifications are persistent sequential children of this."""
    return f"{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}"


def config_change(name: str) -> str:
    return f"{CONFIG_CHANGES}/{name}"


def persistent_paths() -> tuple[str, ...]:
    return PERSISTENT_PATHS
