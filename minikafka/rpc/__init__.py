"""minikafka's own RPC, msgpack over TCP: what brokers say to each other (the controller's
LeaderAndIsr, UpdateMetadata and StopReplica, followers' fetches and OffsetForLeaderEpoch,
controlled shutdown, a group coordinator's ListOffsets for its lag metric), and nothing else: clients and tools speak Kafka's protocol.
`messages.py` holds the requests and responses, `schema.py` turns them into
msgpack, `framing.py` puts them in frames, `connection.py` is one client connection to a
broker. The broker serves the RPC on the same listeners as Kafka's protocol
(server/network.py); the size-prefixed frames and file regions both share live in
protocol/transport.py."""
