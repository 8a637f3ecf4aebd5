from __future__ import annotations

import pytest

from harness.errors import ConfigError, WorkloadError
from workloads.bench import Case, parse_perf_output, ratios
from workloads.spec import ConsumerSpec, ProducerSpec, WorkloadSpec

PERF_OUTPUT = """\
499981 records sent, 99976.2 records/sec (9.53 MB/sec), 120.1 ms avg latency, 400.0 ms max.
1000000 records sent, 101214.6 records/sec (9.65 MB/sec), 118.43 ms avg latency, 511.00 ms \
max latency, 90 ms 50th, 300 ms 95th, 450 ms 99th, 500 ms 99.9th.
"""


def test_perf_test_summary_is_the_last_line() -> None:
    assert parse_perf_output(PERF_OUTPUT) == (1000000, 101214.6)
    with pytest.raises(WorkloadError):
        parse_perf_output("Exception in thread main")


def test_ratios_use_medians_per_client_and_size() -> None:
    cases = [
        Case("perf-test", "java", 100, 1000, 1.0),
        Case("recording", "confluent", 100, 1000, 2.0),
        Case("bare", "confluent", 100, 1000, 1.6),
    ]
    (row,) = ratios(cases)
    assert row["client"] == "confluent" and row["size"] == 100
    assert row["recording_vs_perf_test"] == 0.5
    assert row["recording_vs_bare"] == 0.8


def test_specs_reject_bad_values_naming_the_field() -> None:
    WorkloadSpec().validate()
    with pytest.raises(ConfigError, match="client"):
        WorkloadSpec(client="java").validate()  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="acks"):
        WorkloadSpec(producer=ProducerSpec(acks="2")).validate()
    with pytest.raises(ConfigError, match="retries"):
        ProducerSpec(idempotence=True, retries=0).validate()
    with pytest.raises(ConfigError, match=r"consumers\[0\].mode"):
        WorkloadSpec(consumers=(ConsumerSpec(mode="x"),)).validate()  # type: ignore[arg-type]
    assert ProducerSpec(idempotence=False, retries=0).single_attempt
    assert not ProducerSpec().single_attempt
