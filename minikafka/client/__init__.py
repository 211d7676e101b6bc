"""The tools' clients: librdkafka (confluent-kafka) for everything Kafka's protocol serves
(`librdkafka.py`), and for what only minikafka shows a small client of its own
(`replicas.py`): each leader's view of its replicas from the brokers' HTTP admin
endpoints, and any replica's records, a follower's too, with Kafka's Fetch as the
debugging consumer (replica id -2) on a raw Kafka connection (`kafka_wire.py`)."""
