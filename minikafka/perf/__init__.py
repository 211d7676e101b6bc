"""Performance tools modelled on Kafka's: `kafka-producer-perf-test`, `kafka-consumer-perf-test`
and `EndToEndLatency`, as async functions that return result dataclasses. The result's
`line()` / `lines()` methods give Kafka's exact output; `minikafka perf ...` prints them.

Latency percentiles are HdrHistogram's (the `hdrhistogram` package, a dependency).
"""

from minikafka.perf.consume import (
    CONSUMER_DETAILED_HEADER,
    CONSUMER_HEADER,
    ConsumerPerfResult,
    ConsumerProgress,
    run_consumer_perf,
)
from minikafka.perf.end_to_end import EndToEndError, EndToEndResult, run_end_to_end_latency
from minikafka.perf.histogram import (
    INSTALL_HINT,
    LatencyHistogram,
    MissingDependencyError,
    require_hdrhistogram,
)
from minikafka.perf.offered_load import (
    OfferedLoadError,
    OfferedLoadResult,
    measure_offered_load,
    run_offered_load_latency,
)
from minikafka.perf.produce import (
    ProducerPerfResult,
    ProducerStats,
    ProducerWindow,
    SendCompletions,
    make_payload,
    run_producer_perf,
)
from minikafka.perf.shape import TopicShape, topic_shape
from minikafka.perf.throttle import ThroughputThrottler

__all__ = [
    "CONSUMER_DETAILED_HEADER",
    "CONSUMER_HEADER",
    "INSTALL_HINT",
    "ConsumerPerfResult",
    "ConsumerProgress",
    "EndToEndError",
    "EndToEndResult",
    "LatencyHistogram",
    "MissingDependencyError",
    "OfferedLoadError",
    "OfferedLoadResult",
    "ProducerPerfResult",
    "ProducerStats",
    "ProducerWindow",
    "SendCompletions",
    "ThroughputThrottler",
    "TopicShape",
    "make_payload",
    "measure_offered_load",
    "require_hdrhistogram",
    "run_consumer_perf",
    "run_end_to_end_latency",
    "run_offered_load_latency",
    "run_producer_perf",
    "topic_shape",
]
