"""The tools' clients: librdkafka (confluent-kafka) for everything Kafka's protocol serves
(`librdkafka.py`), and a small client of minikafka's own RPC for what only minikafka shows,
each replica's state and a follower's log (`replica_views.py`). `connection.py` is the RPC
connection the brokers use among themselves too."""
