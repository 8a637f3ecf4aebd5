from pathlib import Path

import pytest

from kchaos.harness.errors import ConfigError
from kchaos.harness.scenario import load_scenario, parse_duration

GOOD = """\
name: t1
description: A scenario used by the loader's unit tests, long enough.
cluster:
  brokers: 3
  server_properties:
    replica.lag.time.max.ms: 5000
    auto.create.topics.enable: false
  broker_properties:
    2:
      broker.rack: r2
topics:
  - name: t
    partitions: 2
    replication_factor: 3
    configs:
      min.insync.replicas: 2
workload:
  duration: 1m
  producers:
    count: 2
    acks: all
    configs:
      enable.idempotence: true
nemesis:
  steps:
    - fault: pause
      at: 10s
      for: 500ms
      target: leader:t:1
checks:
  max_offline_seconds: 10
expect:
  valid: false
  anomalies: [lost-write]
"""


def load(text: str, **kw):
    return load_scenario("s.yaml", text=text, **kw)


def error_of(text: str, **kw) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        load(text, **kw)
    return err.value


def test_good_scenario_builds_typed_values():
    sc = load(GOOD, seed=7)
    assert sc.seed == 7
    assert sc.workload.duration == 60.0
    assert sc.cluster.server_properties == {
        "replica.lag.time.max.ms": "5000",
        "auto.create.topics.enable": "false",
    }
    assert sc.cluster.broker_properties == {2: {"broker.rack": "r2"}}
    assert sc.workload.producers.configs == {"enable.idempotence": "true"}
    step = sc.nemesis.steps[0]
    assert (step.fault, step.at, step.for_, step.target) == ("pause", 10.0, 0.5, "leader:t:1")
    assert sc.nemesis.random is None
    assert sc.expect.valid is False and sc.expect.anomalies == ("lost-write",)
    assert sc.to_dict()["topics"][0]["configs"] == {"min.insync.replicas": "2"}


@pytest.mark.parametrize(
    ("old", "new", "line", "field", "words"),
    [
        ("  brokers: 3", "  brokers: three", 4, "cluster.brokers", "not of type"),
        ("    partitions: 2", "    partitions: 2\n    bogus: 1", 14, "topics.0.bogus", "unknown"),
        ("  duration: 1m", "  duration: 1 minute", 18, "workload.duration", "not a duration"),
        ("    acks: all", "    acks: some", 21, "workload.producers.acks", "not one of"),
        ("      target: leader:t:1", "      target: leader:t:2", 29, None, "2 partitions"),
        ("      target: leader:t:1", "      target: leader:u:0", 29, None, "unknown topic"),
        ("      target: leader:t:1", "      target: the-boss", 29, None, "not a target"),
        # behind brokers-except: the inner spec's topic, partition and nodes must exist too
        (
            "      target: leader:t:1",
            "      target: brokers-except:leader:u:0",
            29,
            None,
            "unknown topic",
        ),
        (
            "      target: leader:t:1",
            "      target: brokers-except:leader:t:2",
            29,
            None,
            "2 partitions",
        ),
        (
            "      target: leader:t:1",
            "      target: brokers-except:the-boss",
            29,
            None,
            "not a target",
        ),
        ("    replication_factor: 3", "    replication_factor: 4", 14, None, "> 3 brokers"),
        ("      at: 10s", "      at: 70s", 27, "nemesis.steps.0.at", "after the workload"),
        ("    2:", "    5:", 9, "cluster.broker_properties.5", "no broker 5"),
        ("  anomalies: [lost-write]", "  anomalies: [lost-wrte]", 34, None, "not one of"),
        ("  valid: false", "  valid: true", 33, "expect.valid", "cannot contain"),
        (
            "  anomalies: [lost-write]",
            "  anomalies: [lost-write]\n  forbid: [lost-write]",
            35,
            "expect.forbid",
            "also in anomalies",
        ),
        ("  anomalies: [lost-write]", "  forbid: [lost-wrte]", 34, None, "not one of"),
    ],
)
def test_errors_name_line_and_field(old, new, line, field, words):
    assert old in GOOD
    err = error_of(GOOD.replace(old, new))
    assert err.file == "s.yaml"
    assert err.line == line, str(err)
    if field is not None:
        assert err.field == field
    assert words in str(err)
    assert str(err).startswith(f"s.yaml:{line}: ")


def test_forbid_and_reported_only_kinds_in_a_valid_expectation():
    text = GOOD.replace(
        "  valid: false\n  anomalies: [lost-write]",
        "  valid: true\n  anomalies: [live-broker-fenced]\n  forbid: [offline]",
    )
    sc = load(text)
    assert sc.expect.anomalies == ("live-broker-fenced",) and sc.expect.forbid == ("offline",)
    assert sc.to_dict()["expect"]["forbid"] == ["offline"]
    per_release = GOOD.replace(
        "  valid: false\n  anomalies: [lost-write]",
        "  valid: true\n  forbid: [live-broker-fenced]\n  before:\n"
        '    "3.7.0": {valid: true, anomalies: [live-broker-fenced]}',
    )
    old = load(per_release, kafka_version="3.6.2").expect
    new = load(per_release, kafka_version="3.7.0").expect
    assert (old.anomalies, old.forbid) == (("live-broker-fenced",), ())
    assert (new.anomalies, new.forbid) == ((), ("live-broker-fenced",))


def test_offline_at_least_per_release():
    per_release = GOOD.replace(
        "  valid: false\n  anomalies: [lost-write]",
        "  valid: true\n  forbid: [offline]\n  before:\n"
        '    "4.0.0": {valid: true, anomalies: [offline], offline_at_least: 20s}',
    )
    old = load(per_release, kafka_version="3.9.1").expect
    new = load(per_release, kafka_version="4.4.0").expect
    assert (old.offline_at_least, old.anomalies, old.forbid) == (20.0, ("offline",), ())
    assert (new.offline_at_least, new.forbid) == (None, ("offline",))
    flat = GOOD.replace("  valid: false\n  anomalies: [lost-write]", "  offline_at_least: 1m")
    assert load(flat).to_dict()["expect"]["offline_at_least"] == 60.0
    err = error_of(flat.replace("offline_at_least: 1m", "offline_at_least: soon"))
    assert err.field is not None and "offline_at_least" in err.field


def test_producer_padding_reaches_the_workload_and_bad_values_are_named():
    import re

    text = re.sub(r"(\n  producers:\n)", r"\1    padding: random\n", GOOD, count=1)
    assert text != GOOD
    sc = load(text)
    assert sc.workload.producers.padding == "random"
    assert sc.to_dict()["workload"]["producers"]["padding"] == "random"
    err = error_of(text.replace("padding: random", "padding: zeros"))
    assert err.field is not None and "padding" in err.field


def test_missing_required_section():
    err = error_of(GOOD.replace("workload:", "workloads:"))
    assert "workloads" in str(err) or "workload" in str(err)
    assert err.line is not None


def test_yaml_syntax_error_has_a_line():
    err = error_of(GOOD.replace("  brokers: 3", "  brokers: [3"))
    assert err.file == "s.yaml" and err.line is not None and "invalid YAML" in str(err)


def test_duplicate_key_rejected():
    err = error_of(GOOD.replace("  brokers: 3", "  brokers: 3\n  brokers: 4"))
    assert err.line is not None


def test_not_a_mapping():
    err = error_of("- a\n- b\n")
    assert "mapping" in str(err)


def test_set_overrides_with_dotted_property_names():
    sc = load(
        GOOD,
        overrides=[
            "workload.duration=30",
            "cluster.server_properties.log.flush.interval.messages=1",
            "topics.0.configs.min.insync.replicas=1",
            "expect.valid=any",
            "cluster.broker_properties.2.broker.rack=x",
        ],
    )
    assert sc.workload.duration == 30.0
    assert sc.cluster.server_properties["log.flush.interval.messages"] == "1"
    assert sc.topics[0].configs["min.insync.replicas"] == "1"
    assert sc.expect.valid is None
    assert sc.cluster.broker_properties[2]["broker.rack"] == "x"


def test_set_reaches_a_transactional_client_property_with_dots() -> None:
    library = Path(__file__).resolve().parents[3] / "harness" / "scenarios"
    sc = load_scenario(
        str(library / "kafka-17754-delayed-end-txn.yaml"),
        overrides=[
            "workload.client=confluent-kafka",
            "workload.transactions.configs.socket.timeout.ms=2000",
        ],
    )
    assert sc.workload.transactions is not None
    assert sc.workload.transactions.configs["socket.timeout.ms"] == "2000"


def test_bad_override_is_attributed_to_set():
    err = error_of(GOOD, overrides=["cluster.brokers=lots"])
    assert err.file == "--set" and err.field == "cluster.brokers"
    assert "--set" in str(err)
    err = error_of(GOOD, overrides=["topics.3.partitions=1"])
    assert err.file == "--set"
    err = error_of(GOOD, overrides=["novalue"])
    assert "KEY=VALUE" in str(err)


def test_broker_config_overlay(tmp_path: Path):
    props = tmp_path / "server.properties"
    props.write_text("replica.lag.time.max.ms=30000\nlog.flush.interval.messages = 1\n")
    sc = load(GOOD, broker_config=props)
    assert sc.cluster.server_properties["replica.lag.time.max.ms"] == "30000"
    assert sc.cluster.server_properties["log.flush.interval.messages"] == "1"


def test_kafka_version_option():
    assert load(GOOD, kafka_version="3.4.1").cluster.kafka_version == "3.4.1"
    err = error_of(GOOD, kafka_version="latest")
    assert err.file == "--kafka-version"


def test_fault_validation_errors_keep_the_scenario_line():
    # The faults package's own checks (registry, parameter specs), placed in this file.
    err = error_of(GOOD.replace("fault: pause", "fault: nope"))
    assert err.line == 26 and "unknown fault 'nope'" in str(err)
    assert err.field == "nemesis.steps.0.fault"
    err = error_of(GOOD.replace("fault: pause", "fault: kill\n      params: {bad: x}"))
    assert err.field == "nemesis.steps.0.params.bad" and err.line == 27
    assert "unknown parameter 'bad'" in err.detail


def test_unreadable_file(tmp_path: Path):
    with pytest.raises(ConfigError, match="cannot read scenario"):
        load_scenario(tmp_path / "missing.yaml")


@pytest.mark.parametrize(
    ("text", "seconds"), [(5, 5.0), (1.5, 1.5), ("250ms", 0.25), ("2m", 120.0), ("1h", 3600.0)]
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


def test_parse_duration_rejects():
    for bad in ("5 s", "abc", True):
        with pytest.raises(ValueError):
            parse_duration(bad)


RANDOM = """\
  random:
    faults: [pause, kill]
    targets: [random, broker-2]
    min_duration: 2s
"""


def test_random_schedule_and_not_both():
    text = GOOD.replace(GOOD[GOOD.index("  steps:") : GOOD.index("checks:")], RANDOM)
    sc = load(text)
    assert sc.nemesis.random is not None and sc.nemesis.random.faults == ("pause", "kill")
    assert sc.nemesis.random.min_duration == 2.0 and not sc.nemesis.steps
    err = error_of(GOOD.replace("checks:", RANDOM + "checks:"))
    assert err.field == "nemesis.random" and "not both" in str(err)
    err = error_of(text.replace("broker-2", "broker-9"))
    assert err.field == "nemesis.random.targets.1" and "no node" in str(err)


def test_expectation_before_a_fix_release_applies_to_older_versions() -> None:
    from kchaos.harness.scenario.loader import expect_for_version

    expect = {
        "valid": True,
        "allowed": ["offline"],
        "before": {
            "3.5.0": {"valid": False, "anomalies": ["lost-write"]},
            "3.4.0": {"valid": "any"},
        },
    }
    assert expect_for_version(expect, "3.4.1") == {"valid": False, "anomalies": ["lost-write"]}
    assert expect_for_version(expect, "3.3.2") == {"valid": "any"}  # the lowest bound above
    assert expect_for_version(expect, "3.5.0") == {"valid": True, "allowed": ["offline"]}
    assert expect_for_version(expect, None)["valid"] is True  # the default, newest release
    assert expect_for_version({"valid": True}, "3.4.1") == {"valid": True}
