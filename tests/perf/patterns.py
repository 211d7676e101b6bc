"""Kafka's output lines, as regular expressions (ProducerPerformance, ConsumerPerformance,
EndToEndLatency)."""

import re

PRODUCE_PROGRESS = re.compile(
    r"^(\d+) records sent, (\d+\.\d) records/sec \((\d+\.\d\d) MB/sec\), "
    r"(\d+\.\d) ms avg latency, (\d+\.\d) ms max latency\.$"
)
PRODUCE_FINAL = re.compile(
    r"^(\d+) records sent, (\d+\.\d{6}) records/sec \((\d+\.\d\d) MB/sec\), "
    r"(\d+\.\d\d) ms avg latency, (\d+\.\d\d) ms max latency, (\d+) ms 50th, (\d+) ms 95th, "
    r"(\d+) ms 99th, (\d+) ms 99\.9th\.$"
)
DATE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}"
CONSUME_ROW = re.compile(
    rf"^({DATE}), ({DATE}), (\d+\.\d{{4}}), (\d+\.\d{{4}}), (\d+), (\d+\.\d{{4}}), (\d+), "
    r"(\d+), (\d+\.\d{4}), (\d+\.\d{4})$"
)
CONSUME_DETAILED_ROW = re.compile(
    rf"^({DATE}), 0, (\d+\.\d{{4}}), (\d+\.\d{{4}}), (\d+), (\d+\.\d{{4}}), (\d+), "
    r"(\d+), (\d+\.\d{4}), (\d+\.\d{4})$"
)
E2E_PROGRESS = re.compile(r"^(\d+)\t(\d+\.\d+(e-?\d+)?)$")
E2E_AVG = re.compile(r"^Avg latency: (\d+\.\d{4}) ms$")
E2E_PERCENTILES = re.compile(r"^Percentiles: 50th = (\d+), 99th = (\d+), 99\.9th = (\d+)$")
