"""Apache Kafka's own wire protocol, so unmodified Kafka clients can talk to the broker."""
