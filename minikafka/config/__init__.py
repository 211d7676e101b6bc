"""Broker configuration: Kafka's property names, defaults and rules (`broker.py`), and the
listener settings (`listeners.py`). Below the server, the controller and replication, which
all read it."""
