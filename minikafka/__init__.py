"""minikafka: Kafka's ZooKeeper-era replicated log, rebuilt in Python."""

__version__ = "0.1.0"
