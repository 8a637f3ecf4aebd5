from __future__ import annotations

from dataclasses import replace

import pytest

from kchaos.bench.produce import Case, disk_mb, parse_perf_output, ratios
from kchaos.harness.errors import ConfigError, WorkloadError
from kchaos.workloads.spec import (
    ConsumerConfig,
    ProducerConfig,
    WorkloadConfig,
    WorkloadSpec,
    producer_settings,
    validate_producers,
    validate_workload,
    workload_spec_of,
)

PERF_OUTPUT = """\
499981 records sent, 99976.2 records/sec (9.53 MB/sec), 120.1 ms avg latency, 400.0 ms max.
1000000 records sent, 101214.6 records/sec (9.65 MB/sec), 118.43 ms avg latency, 511.00 ms \
max latency, 90 ms 50th, 300 ms 95th, 450 ms 99th, 500 ms 99.9th.
"""


def test_perf_test_summary_is_the_last_line() -> None:
    assert parse_perf_output(PERF_OUTPUT) == (1000000, 101214.6)
    with pytest.raises(WorkloadError):
        parse_perf_output("Exception in thread main")


def test_ratios_are_medians_of_each_rounds_pairs() -> None:
    cases = [
        Case("perf-test", "java", 100, 1000, 1.0, 0),
        Case("recording", "confluent-kafka", 100, 1000, 2.0, 0),
        Case("bare", "confluent-kafka", 100, 1000, 1.6, 0),
        Case("perf-test", "java", 100, 1000, 2.0, 1),  # a slow round: the pair still holds
        Case("bare", "confluent-kafka", 100, 1000, 3.2, 1),
        Case("recording", "confluent-kafka", 100, 1000, 3.6, 1),
        Case("perf-test", "java", 100, 1000, 1.0, 2),
        Case("bare", "confluent-kafka", 100, 1000, 1.0, 2),
        Case("recording", "confluent-kafka", 100, 1000, 1.0, 2),
    ]
    (row,) = ratios(cases)
    assert row["client"] == "confluent-kafka" and row["size"] == 100 and row["rounds"] == 3
    assert row["recording_vs_perf_test"] == 0.556  # median of 0.5, 0.556, 1.0
    assert row["recording_vs_bare"] == 0.889  # median of 0.8, 0.889, 1.0
    assert row["recording_vs_bare_per_round"] == [0.8, 0.889, 1.0]


def test_bench_disks_hold_two_cases_of_the_biggest_size() -> None:
    assert disk_mb([100], {100: 200_000}) == 2048
    assert disk_mb([100, 1024], {100: 600_000, 1024: 600_000}) == 2048  # 1,798 needed
    assert disk_mb([1024], {1024: 2_000_000}) > 4096


def test_specs_reject_bad_values_naming_the_field() -> None:
    ok = WorkloadSpec(duration=60, topics=("kchaos",))
    validate_workload(ok)
    with pytest.raises(ConfigError, match="topic"):
        validate_workload(replace(ok, topics=()))
    with pytest.raises(ConfigError, match="client"):
        validate_workload(replace(ok, client="sarama"))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="client"):  # the old spelling: workload_spec_of
        validate_workload(replace(ok, client="confluent"))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="acks"):
        validate_workload(replace(ok, producers=ProducerConfig(acks="2")))
    with pytest.raises(ConfigError, match="retries"):
        validate_producers(ProducerConfig(configs={"enable.idempotence": "true", "retries": "0"}))
    with pytest.raises(ConfigError, match="producers.count"):
        validate_workload(replace(ok, producers=ProducerConfig(count=-1)))
    with pytest.raises(ConfigError, match=r"must be int") as bad:
        validate_producers(ProducerConfig(configs={"linger.ms": "soon"}))
    assert bad.value.field == "producers.configs.linger.ms"
    with pytest.raises(ConfigError, match=r"consumers.mode"):
        validate_workload(replace(ok, consumers=ConsumerConfig(mode="x")))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"consumers.isolation"):
        validate_workload(replace(ok, consumers=ConsumerConfig(isolation="x")))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="metrics_interval"):
        validate_workload(replace(ok, metrics_interval=0))
    assert producer_settings(ProducerConfig(acks="1", configs={"retries": "0"})).single_attempt
    assert not producer_settings(ProducerConfig()).single_attempt


def test_workload_spec_is_the_scenario_model() -> None:
    """One class, not a mirrored pair (issue 34): what the runner hands the workload is
    the scenario's WorkloadConfig, and no second class declares its fields."""
    assert WorkloadSpec is WorkloadConfig


def test_workload_spec_of_reads_the_old_names_and_client_spelling() -> None:
    """The pytest plugin's keyword fields: a test written for an older kchaos (fields
    with an _s suffix, client "confluent", consumers a sequence) gets today's spec."""
    old = workload_spec_of(
        {"topics": ["t"], "client": "confluent", "duration_s": 30, "drain_deadline_s": 5,
         "monitor_interval_s": 1, "close_timeout_s": 2, "metrics_interval_s": 3,
         "consumers": [ConsumerConfig(count=2, mode="assign")]}
    )  # fmt: skip
    assert old == WorkloadSpec(
        topics=("t",), client="confluent-kafka", duration=30, drain_timeout=5,
        monitor_interval=1, close_timeout=2, metrics_interval=3,
        producers=ProducerConfig(count=2), consumers=ConsumerConfig(count=2, mode="assign"),
    )  # fmt: skip
    assert workload_spec_of({"client": "kafka-python"}).client == "kafka-python"
    # what a test does not give: a minute of two producers and one reader on "kchaos"
    default = workload_spec_of({})
    assert (default.duration, default.topics) == (60.0, ("kchaos",))
    assert (default.producers.count, len(default.consumer_workers())) == (2, 1)
    assert workload_spec_of({"consumers": ()}).consumer_workers() == ()
    with pytest.raises(TypeError, match="transactions.readers"):
        workload_spec_of({"consumers": [ConsumerConfig(), ConsumerConfig(mode="assign")]})
    with pytest.raises(TypeError, match="duration_s is the old name of duration"):
        workload_spec_of({"duration_s": 30, "duration": 30})
    with pytest.raises(TypeError):
        workload_spec_of({"deadline": 30})


def test_producer_settings_type_the_configs_kchaos_reads_and_pass_on_the_rest() -> None:
    s = producer_settings(
        ProducerConfig(configs={"linger.ms": "20", "enable.idempotence": "false", "x.y": "z"})
    )
    assert (s.linger_ms, s.idempotence, s.delivery_timeout_ms) == (20, False, 30000)
    assert s.other == {"x.y": "z"}
    # idempotence needs acks all: off with acks 1 unless the configs turn it on
    assert not producer_settings(ProducerConfig(acks="1")).idempotence
    assert producer_settings(
        ProducerConfig(acks="1", configs={"enable.idempotence": "true"})
    ).idempotence
