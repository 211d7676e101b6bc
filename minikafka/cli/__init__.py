"""The `minikafka` command."""
