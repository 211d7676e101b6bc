"""Kafka's rules that both the broker and the tools apply: pure functions on common's
vocabulary (no I/O, no state), so that a tool asks the same question the broker answers
(`minikafka cluster` waits for the controller's own leader-imbalance decision; the chaos
workload finds a group's coordinator as the brokers do)."""
