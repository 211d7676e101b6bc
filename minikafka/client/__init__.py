"""The tools' clients: librdkafka (confluent-kafka) for everything Kafka's protocol serves
(`librdkafka.py`), and a small client of minikafka's own RPC for what only minikafka shows,
each replica's state and a follower's log (`replica_views.py`, on the RPC connection of
minikafka/rpc/ the brokers use among themselves too)."""
