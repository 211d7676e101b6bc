"""Coordinators: the broker-side state machines behind Kafka's internal topics."""
