"""The pure parts of the perf tools: Kafka's line formats, property parsing, the throttler
on a fake clock, the histogram, and the end-to-end checks; and the command's refusals, which
happen before anything connects."""

from __future__ import annotations

import random
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner, Result

from minikafka.cli.main import cli
from minikafka.cli.perf import _client_props
from minikafka.client.librdkafka import client_config
from minikafka.perf import (
    CONSUMER_DETAILED_HEADER,
    CONSUMER_HEADER,
    ConsumerPerfResult,
    ConsumerProgress,
    EndToEndError,
    EndToEndResult,
    LatencyHistogram,
    ProducerStats,
    ThroughputThrottler,
    make_payload,
)
from minikafka.perf.end_to_end import check_received
from tests.perf.patterns import (
    CONSUME_DETAILED_ROW,
    CONSUME_ROW,
    E2E_AVG,
    E2E_PERCENTILES,
    PRODUCE_FINAL,
    PRODUCE_PROGRESS,
)

NOWHERE = "127.0.0.1:1"  # nothing listens: a command that got that far would fail to connect

# --- producer stats and lines ---------------------------------------------------------------


def test_a_window_closes_on_the_first_ack_after_the_interval_with_kafkas_line() -> None:
    stats = ProducerStats(start=100.0, reporting_interval_s=5.0)
    assert stats.record(0.010, 1024, now=101.0) is None
    assert stats.record(0.020, 1024, now=104.9) is None
    window = stats.record(0.060, 1024, now=105.0)
    assert window is not None
    assert window.line() == (
        "3 records sent, 0.6 records/sec (0.00 MB/sec), 30.0 ms avg latency, 60.0 ms max latency."
    )
    assert PRODUCE_PROGRESS.match(window.line())
    # The next window starts at that ack.
    assert stats.record(0.001, 1024, now=109.9) is None
    assert stats.record(0.001, 1024, now=110.0) is not None


def test_the_final_line_has_kafkas_format_and_hdr_percentiles() -> None:
    stats = ProducerStats(start=0.0, reporting_interval_s=1e9)
    for ms in range(1, 1001):  # 1..1000 ms, 1 MiB each
        stats.record(ms / 1000.0, 1 << 20, now=1.0)
    result = stats.result(now=4.0, failed=2, first_error="boom")
    assert (result.records, result.failed, result.first_error) == (1000, 2, "boom")
    assert result.line() == (
        "1000 records sent, 250.000000 records/sec (250.00 MB/sec), 500.50 ms avg latency, "
        "1000.00 ms max latency, 500 ms 50th, 950 ms 95th, 990 ms 99th, 999 ms 99.9th."
    )
    assert PRODUCE_FINAL.match(result.line())


def test_no_acks_still_formats() -> None:
    result = ProducerStats(start=0.0).result(now=0.0)
    assert result.line() == (
        "0 records sent, 0.000000 records/sec (0.00 MB/sec), 0.00 ms avg latency, "
        "0.00 ms max latency, 0 ms 50th, 0 ms 95th, 0 ms 99th, 0 ms 99.9th."
    )


def test_histogram_percentiles_are_whole_ms_and_never_above_the_max() -> None:
    h = LatencyHistogram()
    assert (h.percentile_ms(99), h.mean_ms, h.max_ms) == (0, 0.0, 0.0)
    for us in (1500, 2500, 123_456_789):
        h.record_us(us)
    assert h.percentile_ms(0) == 1
    assert h.percentile_ms(50) == 2
    assert h.percentile_us(100) == 123_456_789  # the exact max, not the bucket's top
    assert h.max_ms == pytest.approx(123456.789)
    assert h.mean_ms == pytest.approx((1500 + 2500 + 123_456_789) / 3 / 1000)


def test_histogram_buffered_recording_matches_recording_each_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Values are buffered and recorded in bulk (on a percentile query or a full buffer):
    the percentiles equal those of an HdrHistogram given every value one by one."""
    from hdrh.histogram import HdrHistogram

    from minikafka.perf import histogram as histogram_module

    monkeypatch.setattr(histogram_module, "PENDING_LIMIT", 7)
    rng = random.Random(5)
    values = [rng.choice((0, 1, 999, 1000, 1001)) or rng.randrange(10**7) for _ in range(500)]
    h = LatencyHistogram()
    reference = HdrHistogram(1, 3_600_000_000, 3)
    for i, us in enumerate(values):
        h.record_us(us)
        reference.record_value(max(us, 1))
        if i == 250:  # a query in the middle, then more values
            assert h.percentile_us(50) == reference.get_value_at_percentile(50)
    for p in (0, 10, 50, 90, 99, 99.9, 100):
        assert h.percentile_us(p) == min(reference.get_value_at_percentile(p), max(values))
    assert h.count == len(values)
    assert h.max_us == max(values)


def test_payload_is_upper_case_letters_made_the_same_way_each_time() -> None:
    payload = make_payload(1024)
    assert len(payload) == 1024
    assert set(payload) <= set(range(ord("A"), ord("Z") + 1))
    assert payload == make_payload(1024) != make_payload(1024, seed=1)
    assert make_payload(0) == b""


# --- throttler -------------------------------------------------------------------------------


def run_throttled(target: float, records: int, send_cost_s: float) -> float:
    """Kafka's send loop against a fake clock: returns the seconds it took."""
    now = 1000.0
    throttler = ThroughputThrottler(target, start=now)
    for i in range(records):
        send_start = now
        now += send_cost_s
        if throttler.should_throttle(i, send_start):
            now += throttler.sleep_time()
    return now - 1000.0


@pytest.mark.parametrize(("target", "cost"), [(200, 0.0001), (1000, 0.0002), (50_000, 0.00001)])
def test_the_throttler_holds_the_target_rate(target: float, cost: float) -> None:
    records = 2000
    elapsed = run_throttled(target, records, cost)
    assert records / elapsed == pytest.approx(target, rel=0.05)


def test_a_sender_slower_than_the_target_is_not_throttled() -> None:
    assert run_throttled(100, 500, send_cost_s=0.02) == pytest.approx(500 * 0.02)


def test_negative_throughput_never_throttles_and_zero_is_refused() -> None:
    throttler = ThroughputThrottler(-1, start=0.0)
    assert not throttler.enabled
    assert not throttler.should_throttle(10**9, now=0.001)
    with pytest.raises(ValueError, match="positive"):
        ThroughputThrottler(0, start=0.0)


def test_sleeps_are_saved_up_until_2_ms_and_then_forgiven() -> None:
    throttler = ThroughputThrottler(2000, start=0.0)  # 0.5 ms owed per throttled record
    assert [throttler.sleep_time() for _ in range(5)] == [0.0, 0.0, 0.0, 0.002, 0.0]


# --- properties ------------------------------------------------------------------------------


def test_property_strings_need_an_equals_sign_and_bootstrap_servers_wins() -> None:
    option = "--producer-property"
    assert _client_props(("a=b=c", " x =1"), option, "b:9") == ({"a": "b=c", "x": "1"}, "b:9")
    props, bootstrap = _client_props(("bootstrap.servers=h:1", "linger.ms=5"), option, "b:9")
    assert (props, bootstrap) == ({"linger.ms": "5"}, "h:1")
    with pytest.raises(click.BadParameter, match="expected key=value") as e:
        _client_props(("linger.ms",), option, "b:9")
    assert e.value.param_hint == option


# --- consumer lines --------------------------------------------------------------------------


def test_consumer_header_and_row_are_kafkas() -> None:
    assert CONSUMER_HEADER == (
        "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
        "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
    )
    assert CONSUMER_DETAILED_HEADER.startswith("time, threadId, data.consumed.in.MB, MB.sec, ")
    result = ConsumerPerfResult(
        start_wall_ms=1_700_000_000_123,
        end_wall_ms=1_700_000_002_123,
        messages=1000,
        bytes=1000 * 1024,
        elapsed_s=2.0,
        timed_out=False,
        timeout_ms=10000,
    )
    line = result.line()
    m = CONSUME_ROW.match(line)
    assert m is not None, line
    assert m.group(1).endswith(":123") and m.group(2).endswith(":123")
    assert m.groups()[2:] == (
        "0.9766", "0.4883", "1000", "500.0000", "0", "2000", "0.4883", "500.0000"
    )  # fmt: skip
    assert result.warning() is None


def test_a_timed_out_consume_warns_like_kafka() -> None:
    result = ConsumerPerfResult(0, 0, 5, 5, 0.0, timed_out=True, timeout_ms=300)
    assert result.warning() == (
        "WARNING: Exiting before consuming the expected number of messages: timeout (300 ms) "
        "exceeded. You can use the --timeout option to increase the timeout."
    )
    assert CONSUME_ROW.match(result.line())  # no division by zero


def test_detailed_row_uses_the_interval_for_rates() -> None:
    row = ConsumerProgress(
        end_wall_ms=1_700_000_000_000,
        bytes=3 << 20,
        messages=3000,
        interval_bytes=1 << 20,
        interval_messages=1000,
        interval_s=0.5,
    )
    m = CONSUME_DETAILED_ROW.match(row.line())
    assert m is not None, row.line()
    assert m.groups()[1:] == (
        "3.0000", "2.0000", "3000", "2000.0000", "0", "500", "2.0000", "2000.0000"
    )  # fmt: skip


# --- end to end ------------------------------------------------------------------------------


def test_end_to_end_checks_are_kafkas() -> None:
    check_received(b"ABC", [b"ABC"], 60000)
    with pytest.raises(EndToEndError, match=r"poll\(\) timed out .*\(timeout:\[60000\]\)"):
        check_received(b"ABC", [], 60000)
    with pytest.raises(EndToEndError, match=r"read \[ABD\] did not match the message sent \[ABC\]"):
        check_received(b"ABC", [b"ABD"], 60000)
    with pytest.raises(EndToEndError, match=r"read \[None\] did not match"):
        check_received(b"ABC", [None], 60000)
    with pytest.raises(EndToEndError, match=r"We found \[2\]"):
        check_received(b"ABC", [b"ABC", b"ABC"], 60000)


def test_end_to_end_lines() -> None:
    lines = EndToEndResult(10, 2.34567, 2, 9, 12, 12.5).lines()
    assert lines == ["Avg latency: 2.3457 ms", "Percentiles: 50th = 2, 99th = 9, 99.9th = 12"]
    assert E2E_AVG.match(lines[0]) and E2E_PERCENTILES.match(lines[1])


# --- the command refuses before connecting ---------------------------------------------------


def perf(*args: str) -> Result:
    return CliRunner().invoke(cli, ["perf", args[0], "--bootstrap-server", NOWHERE, *args[1:]])


PRODUCE = ["produce", "--topic", "t", "--num-records", "10", "--record-size", "10"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--throughput", "-1", "--producer-property", "linger.mss=5"], "linger.mss"),
        (["--throughput", "-1", "--producer-props", "linger.ms"], "expected key=value"),
        (
            ["--throughput", "-1", "--producer-property", "compression.type=lzo"],
            'producer config: Invalid value "lzo" for configuration property',
        ),
        (["--throughput", "0"], "--throughput"),
        (["--throughput", "-1", "--acks", "1", "--producer-property", "acks=all"], "disagree"),
    ],
)
def test_bad_produce_arguments_are_usage_errors(extra: list[str], message: str) -> None:
    result = perf(*PRODUCE, *extra)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert result.stdout == ""


def test_unknown_consumer_property_is_a_usage_error() -> None:
    result = perf("consume", "--topic", "t", "--messages", "1", "--consumer-property", "x.y=1")
    assert result.exit_code == 2
    assert 'consumer config: No such configuration property: "x.y"' in result.stderr


@pytest.mark.parametrize("tool", ["produce", "e2e"])
def test_without_hdrhistogram_the_command_says_what_to_install(
    tool: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "hdrh", None)  # makes `import hdrh...` fail
    monkeypatch.setitem(sys.modules, "hdrh.histogram", None)
    args = ["--topic", "t", "--num-records", "1", "--record-size", "1"]
    result = perf(tool, *args, *(["--throughput", "-1"] if tool == "produce" else []))
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        "Error: latency percentiles need the hdrhistogram package: pip install hdrhistogram"
    ]


@pytest.mark.parametrize("tool", ["produce", "consume"])
def test_without_confluent_kafka_the_command_says_what_to_install(
    tool: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)  # makes the import fail
    args = ["--topic", "t"]
    if tool == "produce":
        args += ["--num-records", "1", "--record-size", "1", "--throughput", "-1"]
    else:
        args += ["--messages", "1"]
    result = perf(tool, *args)
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        "Error: perf produce and consume run on librdkafka, the confluent-kafka package: "
        "pip install confluent-kafka"
    ]


def test_the_command_line_and_the_broker_import_without_confluent_kafka() -> None:
    """The broker image has no Kafka client: the command line and the broker start there."""
    code = (
        "import sys; sys.modules['confluent_kafka'] = None\n"
        "import minikafka.cli.main, minikafka.perf, minikafka.server.broker"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_tools_librdkafka_config_has_tcp_nodelay_unless_told_otherwise() -> None:
    config = client_config("b:1", {"linger.ms": "5"})
    assert config == {"bootstrap.servers": "b:1", "socket.nagle.disable": True, "linger.ms": "5"}
    assert client_config("b:1", {"socket.nagle.disable": "false"})["socket.nagle.disable"] == (
        "false"
    )


@pytest.mark.parametrize("prop", ["acks=1", "linger.ms=5"])
def test_e2e_refuses_the_producer_properties_it_sets_itself(prop: str) -> None:
    args = ["--topic", "t", "--num-records", "1", "--record-size", "1"]
    result = perf("e2e", *args, "--producer-property", prop)
    assert result.exit_code == 2
    name = prop.split("=")[0]
    assert f"e2e sets {name} itself" in result.stderr


def test_e2e_refuses_an_unknown_consumer_property_before_connecting() -> None:
    args = ["--topic", "t", "--num-records", "1", "--record-size", "1"]
    result = perf("e2e", *args, "--consumer-property", "fetch.max.wait.ms=0")
    assert result.exit_code == 2
    assert 'No such configuration property: "fetch.max.wait.ms"' in result.stderr
