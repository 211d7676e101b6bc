"""Replication: partition state (sans-IO), replica manager, replica fetcher, delayed operations (purgatory)."""
