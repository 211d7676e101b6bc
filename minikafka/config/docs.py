"""The documentation DescribeConfigs (v3+, include_documentation) gives for broker settings.

One entry for every BrokerConfig property (Kafka's name) that is not the broker default of a
topic config: those are documented by their topic config (dynamic.py's TOPIC_CONFIGS). The
wording follows Kafka 2.8's KafkaConfig documentation, shortened, and says where minikafka
differs from Kafka or has a setting Kafka does not.
"""

from __future__ import annotations

from typing import Final

BROKER_CONFIG_DOCS: Final[dict[str, str]] = {
    # --- identity, listeners, storage, ZooKeeper ----------------------------------------------
    "broker.id": "This broker's id, unique in the cluster. It must be set: minikafka does not "
    "generate broker ids.",
    "listeners": "The comma-separated listeners the broker serves, each NAME://host:port (an "
    "empty host binds every interface, port 0 any free port).",
    "advertised.listeners": "The listeners registered in ZooKeeper, the addresses clients and "
    "other brokers connect to, when they differ from listeners (unset: listeners). Each names "
    "one of listeners, and 0.0.0.0 cannot be advertised.",
    "listener.security.protocol.map": "The security protocol of each listener name, as "
    "NAME:PROTOCOL pairs separated by commas (unset: each protocol name is a listener name of "
    "its own): PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.",
    "inter.broker.listener.name": "The listener brokers use to reach one another; it must be "
    "one of advertised.listeners (unset: the listener named after "
    "security.inter.broker.protocol). Only it serves the brokers' requests to each other.",
    "security.inter.broker.protocol": "The security protocol brokers use to reach one another: "
    "the listener of that name is the inter-broker listener (unset: PLAINTEXT). Not together "
    "with inter.broker.listener.name.",
    "sasl.enabled.mechanisms": "The SASL mechanisms SASL listeners enable (a listener's "
    "listener.name.<listener>.sasl.enabled.mechanisms wins). Kafka's default is GSSAPI, which "
    "minikafka lacks: it implements PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512.",
    "sasl.mechanism.inter.broker.protocol": "The SASL mechanism brokers authenticate with to "
    "one another, one the inter-broker listener enables; the credentials are the username "
    "and password of that listener's listener.name.<listener>.<mechanism>.sasl.jaas.config.",
    "sasl.server.max.receive.size": "The largest request a client may send before it has "
    "authenticated; a larger one closes the connection.",
    "connection.failed.authentication.delay.ms": "How long a connection whose authentication "
    "failed is held before it is closed, which slows down password guessing.",
    "connections.max.reauth.ms": "Kafka's re-authentication interval (KIP-368); minikafka "
    "does not re-authenticate and accepts only 0.",
    "authorizer.class.name": "The authorizer: kafka.security.authorizer.AclAuthorizer (ACLs "
    "kept in ZooKeeper, managed with CreateAcls, DescribeAcls and DeleteAcls), the only one "
    "minikafka has; empty: none, every authenticated client may do everything.",
    "super.users": "Principals allowed everything by the authorizer, separated by semicolons "
    "(User:admin;User:broker1).",
    "allow.everyone.if.no.acl.found": "Whether the authorizer allows an operation on a "
    "resource that no ACL names.",
    "log.dirs": "The comma-separated directories in which the broker keeps its log data "
    "(log.dir is read when log.dirs is not set).",
    "zookeeper.connect": "The ZooKeeper connection string, host:port pairs separated by "
    "commas, optionally followed by a chroot path (/path) under which all of the cluster's "
    "znodes live.",
    "zookeeper.session.timeout.ms": "The ZooKeeper session timeout: a broker whose session "
    "expires is taken for dead and its registration removed.",
    "zookeeper.connection.timeout.ms": "How long the broker waits to establish a connection "
    "to ZooKeeper (unset: zookeeper.session.timeout.ms).",
    "zookeeper.set.acl": "Set secure ACLs on the znodes the broker creates: everything for "
    "its ZooKeeper identity (SASL, from the JAAS file's Client section), read for anyone "
    "else, nothing for anyone else under /config/users, /config/brokers and "
    "/delegation_token.",
    "broker.rack": "The rack of the broker, registered in ZooKeeper and reported to clients "
    "in Metadata and DescribeCluster. When every broker has one, new topics and partitions "
    "get Kafka's rack-aware replica assignment (a partition's replicas on as many racks as "
    "can be); when only some have one, creating them fails (UNKNOWN_SERVER_ERROR), as in "
    "Kafka.",
    "replica.selector.class": "How a partition's leader chooses the replica a consumer "
    "reads from (KIP-392): org.apache.kafka.common.replica.RackAwareReplicaSelector sends a "
    "consumer whose client.rack names the rack of a follower that has the fetch offset to "
    "that follower (Fetch's preferred read replica); "
    "org.apache.kafka.common.replica.LeaderSelector, or unset, keeps every consumer on the "
    "leader. No other class: minikafka loads no Java. Whatever the setting, a follower serves "
    "a consumer's Fetch (v11+) up to its high watermark.",
    "admin.listeners": "minikafka's own setting (Kafka has JMX instead): http://host:port of "
    "its HTTP admin endpoint, serving Prometheus metrics, health, JSON views and the "
    "dashboard. Unset: no endpoint.",
    "admin.listeners.token": "minikafka's own setting: a secret the admin endpoint asks of "
    "every request but /health (liveness, which tells nothing of data): sent as "
    "'Authorization: Bearer <token>', or as the password of HTTP basic auth with any user "
    "name (a browser asks for it). The brokers send it to each other's endpoints, so every "
    "broker of a cluster has the same. Printable ASCII without spaces; described as "
    "sensitive, without its value. Unset: the endpoint asks for nothing.",
    # --- replication ---------------------------------------------------------------------------
    "replica.lag.time.max.ms": "A follower that has not fetched up to the leader's log end "
    "offset for this long is removed from the ISR.",
    "replica.lag.disconnected.max.ms": "minikafka's own setting (Kafka has none): a follower "
    "whose fetch connection to the leader closed, and that has fetched nothing since, is "
    "removed from the ISR after this long, without waiting for replica.lag.time.max.ms or "
    "for the controller to see its ZooKeeper session expire; acks=all writes to the "
    "partitions the lost broker followed go on at once. A follower that is alive but "
    "cut off (a paused process, a network partition) keeps its connection open and "
    "is left to replica.lag.time.max.ms. -1, the default, turns it off, as in Kafka; "
    "2000 is a good value.",
    "replica.fetch.wait.max.ms": "The longest a follower's fetch request waits at the leader "
    "for data; it should stay below replica.lag.time.max.ms.",
    "replica.fetch.min.bytes": "The fewest bytes a follower's fetch response should hold; "
    "with less, the leader waits up to replica.fetch.wait.max.ms.",
    "replica.fetch.max.bytes": "The bytes a follower asks for per partition in a fetch; not "
    "an absolute maximum, as a first record batch larger than it is still returned.",
    "replica.fetch.response.max.bytes": "The bytes a follower asks for in a whole fetch "
    "response; not an absolute maximum, as a first record batch larger than it is still "
    "returned.",
    "replica.fetch.backoff.ms": "How long a follower waits before fetching again after a "
    "fetch or partition error.",
    "num.replica.fetchers": "The number of fetchers replicating from each source broker. "
    "minikafka runs one fetcher per source broker, so only 1 is accepted.",
    "leader.replication.throttled.rate": "The upper bound (bytes/s) on the replication "
    "traffic this broker sends, as leader, for the replicas listed in the topic config "
    "leader.replication.throttled.replicas (KIP-73); a follower in the ISR is never held "
    "back. Only set dynamically, per broker (not at the cluster default, whose value Kafka "
    "does not apply). Keep it above 1 MB/s for accurate behaviour.",
    "follower.replication.throttled.rate": "The upper bound (bytes/s) on the replication "
    "traffic this broker fetches, as follower, for the replicas listed in the topic config "
    "follower.replication.throttled.replicas (KIP-73); a replica in sync is never held back. "
    "Only set dynamically, per broker. Keep it above 1 MB/s for accurate behaviour.",
    "replication.quota.window.num": "The number of samples the replication throttles' rates "
    "are measured over.",
    "replication.quota.window.size.seconds": "The time span of each sample of the replication "
    "throttles' rates.",
    "replica.high.watermark.checkpoint.interval.ms": "How often the high watermarks are "
    "saved to disk.",
    "max.incremental.fetch.session.cache.slots": "The most incremental fetch sessions (KIP-227) "
    "the broker keeps; 0: every fetch is a full, sessionless one.",
    "min.incremental.fetch.session.eviction.ms": "How long a fetch session is protected from "
    "eviction by new sessions when the cache is full (a follower's may evict a consumer's "
    "sooner). Kafka fixes it at 2 minutes; minikafka makes it a setting.",
    "isr.change.propagation.check.interval.ms": "minikafka-specific hook for tests (Kafka "
    "hard-codes it to 2.5 s): how often the broker checks whether to tell the controller, "
    "through ZooKeeper, about its ISR changes.",
    "isr.change.propagation.blackout.ms": "minikafka-specific hook for tests (Kafka hard-codes "
    "it to 5 s): ISR changes are propagated once none has happened for this long.",
    "isr.change.propagation.max.delay.ms": "minikafka-specific hook for tests (Kafka "
    "hard-codes it to 60 s): ISR changes are propagated at the latest this long after the "
    "previous propagation, even while changes keep coming.",
    # --- controller, leadership, topics --------------------------------------------------------
    "controller.socket.timeout.ms": "The timeout of the controller's requests to brokers.",
    "auto.leader.rebalance.enable": "Whether the controller moves leadership back to the "
    "preferred replicas when a broker's leader imbalance exceeds "
    "leader.imbalance.per.broker.percentage, checked every "
    "leader.imbalance.check.interval.seconds.",
    "leader.imbalance.check.interval.seconds": "How often the controller checks whether "
    "partition leaders need rebalancing.",
    "leader.imbalance.per.broker.percentage": "The share of a broker's preferred-leader "
    "partitions, in percent, that may be led by another broker before the controller "
    "rebalances them.",
    "default.replication.factor": "The replication factor of automatically created topics, "
    "and of topics created without one.",
    "num.partitions": "The number of partitions of automatically created topics, and of "
    "topics created without one.",
    "auto.create.topics.enable": "Whether a Metadata request for a topic that does not exist "
    "creates it (if the client allows it).",
    "delete.topic.enable": "Whether topics may be deleted; when false, deletion requests are "
    "refused or dropped.",
    "controlled.shutdown.enable": "Whether a broker that shuts down first asks the controller "
    "to move the leadership of its partitions to other brokers.",
    "controlled.shutdown.max.retries": "How many times a broker tries a controlled shutdown "
    "before shutting down anyway.",
    "controlled.shutdown.retry.backoff.ms": "How long a broker waits before retrying a failed "
    "controlled shutdown.",
    # --- log management ------------------------------------------------------------------------
    "log.retention.check.interval.ms": "How often the broker checks whether any log has "
    "segments to delete under its retention settings.",
    "log.flush.scheduler.interval.ms": "How often the log flusher checks whether any log needs "
    "to be flushed to disk.",
    "log.open.files.max": "How many segment files the broker keeps open at once (minikafka's; "
    "Kafka keeps every segment's file open). A segment's file is opened when it is read or "
    "written and the least recently used are closed beyond this number, so that tens of "
    "thousands of partitions fit in the process's limit of file descriptors; keep it well "
    "below that limit, whose rest goes to connections. Files in use at the moment stay open, "
    "and so may exceed it briefly.",
    "producer.id.expiration.ms": "How long a partition leader keeps the state of an "
    "idempotent producer that has not written to it, before forgetting the producer id.",
    "log.cleaner.enable": "Whether the log cleaner runs; without it, topics with "
    "cleanup.policy=compact, the offsets topic among them, are not compacted and keep growing.",
    "log.cleaner.backoff.ms": "How long the log cleaner sleeps when no log needs cleaning.",
    # --- group coordinator and offsets ---------------------------------------------------------
    "group.min.session.timeout.ms": "The shortest session timeout a group member may ask for; "
    "shorter ones detect failures sooner at the cost of more frequent heartbeats.",
    "group.max.session.timeout.ms": "The longest session timeout a group member may ask for; "
    "longer ones give consumers more time between heartbeats but detect failures later.",
    "group.initial.rebalance.delay.ms": "How long the group coordinator waits for more "
    "members to join a new group before its first rebalance.",
    "group.max.size": "The most members a consumer group may have.",
    "offset.metadata.max.bytes": "The largest metadata string an offset commit may carry.",
    "offsets.topic.num.partitions": "The number of partitions of the offsets topic "
    "(__consumer_offsets); it should not change once the topic exists.",
    "offsets.topic.replication.factor": "The replication factor of the offsets topic; it "
    "cannot be created until that many brokers are alive.",
    "offsets.topic.segment.bytes": "The segment size of the offsets topic, kept small for "
    "faster compaction and loading.",
    "offsets.commit.timeout.ms": "How long an offset commit waits for the in-sync replicas of "
    "its offsets topic partition to receive it, as an acks=all produce request does.",
    "offsets.retention.minutes": "How long a group's committed offsets are kept once the group "
    "is empty before they are deleted; for standalone consumers (manual assignment), counted "
    "from each offset's commit.",
    "offsets.retention.check.interval.ms": "How often the group coordinator looks for expired "
    "offsets.",
    # --- network ------------------------------------------------------------------------------
    "request.timeout.ms": "How long the broker waits for the answer to a request it sends to "
    "another broker (a replica fetch also waits replica.fetch.wait.max.ms on top).",
    "socket.request.max.bytes": "The largest request the broker accepts on a socket.",
}
