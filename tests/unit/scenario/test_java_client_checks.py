"""`client: java`: the scenario's client configs are checked against the Java client's
own config names before the run, with the file, line and key of the offender."""

from __future__ import annotations

import pytest

from kchaos.harness.errors import ConfigError
from kchaos.harness.scenario import load_scenario
from kchaos.workloads.javaconf import names_for, unknown_keys

JAVA = """\
name: j1
description: A scenario with Kafka's own Java clients, for the loader's tests.
cluster:
  brokers: 3
topics:
  - name: t
workload:
  duration: 20s
  client: java
  producers:
    count: 2
    rate: 50
    configs:
      enable.idempotence: true
      linger.ms: 5
  consumers:
    count: 1
    configs:
      fetch.max.wait.ms: 100
"""


def load(text: str, **kw):
    return load_scenario("s.yaml", text=text, **kw)


def error_of(text: str, **kw) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        load(text, **kw)
    return err.value


def test_a_java_scenario_loads() -> None:
    sc = load(JAVA)
    assert sc.workload.client == "java"


def test_unknown_producer_key_names_file_line_and_key() -> None:
    err = error_of(JAVA.replace("      linger.ms: 5\n", "      linger.ms: 5\n      lingr.ms: 5\n"))
    assert (err.file, err.line) == ("s.yaml", 16)
    assert err.field == "workload.producers.configs.lingr.ms"
    assert "unknown producer config 'lingr.ms'" in str(err) and "kafka-clients 4.3.1" in str(err)
    assert err.exit_code == 3


def test_a_consumer_key_is_checked_against_the_consumer_names() -> None:
    # linger.ms is a producer setting: the consumer does not know it
    err = error_of(JAVA.replace("fetch.max.wait.ms: 100", "linger.ms: 100"))
    assert err.line == 19 and err.field == "workload.consumers.configs.linger.ms"


def test_the_version_in_use_decides(tmp_path) -> None:
    # metadata.recovery.strategy came with Kafka 3.8 (KIP-899): unknown to 3.5's client
    text = JAVA.replace("      linger.ms: 5\n", "      metadata.recovery.strategy: rebootstrap\n")
    assert load(text).workload.client == "java"
    err = error_of(text, kafka_version="3.5.2")
    assert "kafka-clients 3.5.2" in str(err)


def test_other_clients_keep_their_own_keys() -> None:
    # librdkafka's own names are no concern of the Java check
    text = JAVA.replace("  client: java\n", "").replace("linger.ms: 5", "log_level: 3")
    assert load(text).workload.client == "confluent-kafka"


def test_java_needs_a_rate_and_subscribe() -> None:
    assert error_of(JAVA.replace("rate: 50", "rate: 0")).field == "workload.producers.rate"
    err = error_of(
        JAVA.replace(
            "  consumers:\n    count: 1\n", "  consumers:\n    count: 1\n    mode: assign\n"
        )
    )
    assert err.field == "workload.consumers.mode"


def test_names_for_an_unlisted_release_use_the_nearest_older_list() -> None:
    assert names_for("4.4.0", "producer")[0] == "4.3.1"
    assert names_for("4.5.1", "producer") == names_for("4.4.0", "producer")
    assert names_for("3.6.0", "consumer") == names_for("3.5.2", "consumer")
    assert unknown_keys("4.4.0", "producer", ["acks", "nope"]) == ["nope"]


JAVA_TXN = JAVA.replace(
    "      fetch.max.wait.ms: 100\n",
    """      fetch.max.wait.ms: 100
  transactions:
    producers: 1
    topics: [t]
    timeout: 10s
    configs:
      linger.ms: 2
    readers:
      subscribe: 1
""",
)


def test_java_transactions_load_with_subscribing_readers() -> None:
    sc = load(JAVA_TXN)
    assert sc.workload.transactions is not None and sc.workload.client == "java"


def test_java_transactions_check_their_configs_and_readers() -> None:
    err = error_of(JAVA_TXN.replace("      linger.ms: 2\n", "      log_level: 3\n"))
    assert err.field == "workload.transactions.configs.log_level"
    assert "the transactional producers' client" in str(err)
    err = error_of(
        JAVA_TXN.replace("      subscribe: 1\n", "      subscribe: 1\n      assign: 1\n")
    )
    assert err.field == "workload.transactions.readers.assign"


def test_a_java_copier_loads() -> None:
    # the copier's consumer runs in the Java producer's own process (java_txn.BridgeConsumer)
    copier = "    copier:\n      input: t\n      output: t2\n      group: g\n"
    text = JAVA_TXN.replace("    readers:\n", copier + "    readers:\n")
    text = text.replace("  - name: t\n", "  - name: t\n  - name: t2\n")
    sc = load(text)
    assert sc.workload.transactions is not None and sc.workload.transactions.copier is not None
