"""Kafka's smallest segment size per release (KIP-1030), checked when a scenario loads;
and the known-bug scenarios whose 8 KiB segments are below it (not applicable from 4.1.0),
which ``kchaos matrix --tag known-bug --kafka-version 4.4.0`` still answers for."""

from __future__ import annotations

import pytest
from scenario_variants import BASE

from kchaos.harness.errors import ConfigError
from kchaos.harness.run import matrix
from kchaos.harness.rundir.tickets import KNOWN_BUG_TAG, Ticket
from kchaos.harness.scenario import library
from kchaos.harness.scenario.checks import segment_bytes_minimum
from kchaos.harness.scenario.loader import load_scenario

TOPIC = BASE.replace(
    "      min.insync.replicas: 2\n", "      min.insync.replicas: 2\n      segment.bytes: 8192\n"
)
BROKER = BASE.replace(
    "    replica.lag.time.max.ms: 5000\n",
    "    replica.lag.time.max.ms: 5000\n    log.segment.bytes: 65536\n",
)
ONE_BROKER = BASE.replace(
    "    replica.lag.time.max.ms: 5000\n",
    "    replica.lag.time.max.ms: 5000\n  broker_properties:\n    2: {log.segment.bytes: 65536}\n",
)


def test_the_floor_per_release() -> None:
    assert segment_bytes_minimum("4.0.2", "topic") == 14
    assert segment_bytes_minimum("4.1.0", "topic") == 1024 * 1024
    assert segment_bytes_minimum("3.9.1", "broker") == 14
    assert segment_bytes_minimum("4.0.0", "broker") == 1024 * 1024


def test_a_topics_small_segments_load_before_4_1_and_are_refused_from_it() -> None:
    assert (
        load_scenario("s.yaml", text=TOPIC, kafka_version="4.0.0")
        .topics[0]
        .configs["segment.bytes"]
        == "8192"
    )
    with pytest.raises(ConfigError) as err:
        load_scenario("s.yaml", text=TOPIC, kafka_version="4.1.0")
    assert err.value.field == "topics.0.configs.segment.bytes"
    assert err.value.line == TOPIC.splitlines().index("      segment.bytes: 8192") + 1
    assert "below Kafka 4.1.0's minimum segment.bytes of 1048576" in str(err.value)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (BROKER, "cluster.server_properties.log.segment.bytes"),
        (ONE_BROKER, "cluster.broker_properties.2.log.segment.bytes"),
    ],
)
def test_a_brokers_small_segments_are_refused_from_4_0(text: str, field: str) -> None:
    assert load_scenario("s.yaml", text=text, kafka_version="3.9.1") is not None
    with pytest.raises(ConfigError) as err:
        load_scenario("s.yaml", text=text, kafka_version="4.0.0")
    assert err.value.field == field
    assert "minimum log.segment.bytes of 1048576" in str(err.value)


def test_runs_before_bounds_the_range_and_says_why() -> None:
    t = Ticket.from_mapping(
        {
            "id": "KAFKA-1",
            "title": "t",
            "fixed_in": ["3.7.0"],
            "runs_before": "4.1.0",
            "runs_before_why": "8 KiB segments",
        }
    )
    assert t.covers("4.0.2") and not t.covers("4.1.0")
    assert t.range_note() == "the scenario runs on releases before Kafka 4.1.0: 8 KiB segments"
    with pytest.raises(ConfigError, match="outside that range: 8 KiB segments"):
        t.check_release("4.4.0", "s")


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"runs_before": "4.1.0"}, "ticket.runs_before_why"),
        ({"runs_before": "3.6.0", "runs_before_why": "w"}, "ticket.runs_before"),
        (
            {"runs_before": "4.1.0", "runs_before_why": "w", "compare": ["4.1.0"]},
            "ticket.compare[0]",
        ),
    ],
)
def test_bad_runs_before_names_the_field(extra: dict, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        Ticket.from_mapping({"id": "KAFKA-1", "title": "t", "fixed_in": ["3.7.0"], **extra})
    assert err.value.field == field


@pytest.mark.parametrize(
    "name", ["kafka-15046-fsync-under-log-lock", "kafka-16541-epoch-checkpoint-os-crash"]
)
def test_the_8_kib_known_bugs_are_not_applicable_from_4_1(name: str) -> None:
    with pytest.raises(ConfigError, match="outside that range: its 8 KiB segments"):
        library.load(name, kafka_version="4.4.0")
    assert library.load(name, kafka_version="4.0.0").ticket is not None


def test_the_known_bug_matrix_on_4_4_0_has_a_row_per_ticket() -> None:
    names = library.names_with_tag(KNOWN_BUG_TAG)
    planned = matrix.plan(names, ["4.4.0"], 1, tagged=names)
    ran = [e.scenario.ticket.id for e in planned.entries]
    skipped = [o.ticket.id for o in planned.out_of_range]
    every = {library.load(n, kafka_version="4.0.0").ticket.id for n in names}
    # every ticket once: run on 4.4.0, or listed as outside its scenario's range
    assert sorted(ran + skipped) == sorted(every)
    assert {"KAFKA-15046", "KAFKA-16541"} == set(skipped)
    assert all("8 KiB segments" in o.ticket.range_note() for o in planned.out_of_range)
    assert {e.scenario.cluster.kafka_version for e in planned.entries} == {"4.4.0"}
