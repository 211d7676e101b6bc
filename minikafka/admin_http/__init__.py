"""The broker's HTTP admin endpoint (aiohttp), on when `admin.listeners` is set:
Prometheus metrics under Kafka's metric names (`metrics.py`) and a small JSON view of the
broker and its partitions (`server.py`)."""
