"""Protocol: Kafka's error codes (`errors.py`, shared by both protocols), size-prefixed
frames on streams and zero-copy file regions (`transport.py`, shared too), and Apache
Kafka's wire format (`kafka/`). minikafka's own RPC is in minikafka/rpc/."""
