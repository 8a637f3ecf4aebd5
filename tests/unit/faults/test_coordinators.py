"""Coordinator targets and trigger conditions: Kafka's partition choice, resolved live."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from faults_fakes import FakeCluster, FakeSink

from kchaos.faults import build_nemesis
from kchaos.faults.coordinators import (
    coordinator_partition,
    java_string_hash,
    kafka_abs,
    parse_key,
)
from kchaos.faults.targets import TargetSpec, parse_target, resolve
from kchaos.faults.trigger import TriggerContext, parse_trigger
from kchaos.harness.errors import ConfigError, FaultError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),  # Java: "hello".hashCode()
        ("kchaos-t4", 1309545752),
        ("copier", -1354729774),  # negative: the 32-bit wrap
        ("polygenelubricants", -(2**31)),  # Java's Integer.MIN_VALUE case
        ("\U0001f600", 1772899),  # a surrogate pair counts as two UTF-16 units
        # every value above as printed by Java 17's String.hashCode (checked 2026-11-25)
    ],
)
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_kafka_abs_maps_min_value_to_zero() -> None:
    assert kafka_abs(-(2**31)) == 0 and kafka_abs(-5) == 5 and kafka_abs(7) == 7
    assert coordinator_partition("polygenelubricants", 50) == 0


def test_coordinator_partition_follows_the_hash() -> None:
    assert coordinator_partition("hello", 50) == 99162322 % 50
    assert coordinator_partition("kchaos-t4", 50) == 1309545752 % 50
    assert coordinator_partition("copier", 10) == 1354729774 % 10
    with pytest.raises(ValueError):
        coordinator_partition("x", 0)


@pytest.mark.parametrize(
    ("text", "kind", "key", "topic"),
    [
        ("txn:kchaos-t4", "txn", "kchaos-t4", "__transaction_state"),
        ("group:copier", "group", "copier", "__consumer_offsets"),
        ("txn:a:b", "txn", "a:b", "__transaction_state"),
    ],
)
def test_parse_key(text: str, kind: str, key: str, topic: str) -> None:
    got = parse_key(text)
    assert (got.kind, got.key, got.topic, str(got)) == (kind, key, topic, text)


@pytest.mark.parametrize("text", ["txn", "txn:", "leader:t", "grp:x", ":x"])
def test_parse_key_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_key(text)


def test_target_round_trip_and_errors() -> None:
    spec = parse_target("coordinator:txn:kchaos-t4")
    assert spec == TargetSpec("coordinator", key="txn:kchaos-t4")
    assert parse_target(str(spec)) == spec
    for bad in ("coordinator:", "coordinator:txn", "coordinator:topic:x"):
        with pytest.raises(ConfigError, match="expected coordinator:txn"):
            parse_target(bad)


def test_target_resolves_to_the_leader_of_the_key_partition(tmp_path: Path) -> None:
    cluster = FakeCluster(3, tmp_path)
    cluster.partition_counts = {"__transaction_state": 50, "__consumer_offsets": 10}
    txn_p = coordinator_partition("kchaos-t4", 50)
    group_p = coordinator_partition("copier", 10)
    cluster.leaders = {("__transaction_state", txn_p): 2, ("__consumer_offsets", group_p): 3}
    rng = random.Random(0)
    assert [n.node_id for n in resolve(cluster, "coordinator:txn:kchaos-t4", rng)] == [2]
    assert [n.node_id for n in resolve(cluster, "coordinator:group:copier", rng)] == [3]
    # live: a failover moves the target with it
    cluster.leaders[("__transaction_state", txn_p)] = 1
    assert [n.node_id for n in resolve(cluster, "coordinator:txn:kchaos-t4", rng)] == [1]


def test_target_fails_clearly_before_the_internal_topic_exists(tmp_path: Path) -> None:
    cluster = FakeCluster(3, tmp_path)
    with pytest.raises(FaultError, match=r"coordinator:txn:kchaos-t4: .*__transaction_state"):
        resolve(cluster, "coordinator:txn:kchaos-t4", random.Random(0))


def test_trigger_condition_on_the_coordinator_partition(tmp_path: Path) -> None:
    """isr_below on the transaction coordinator's partition, resolved at each poll."""
    cluster = FakeCluster(3, tmp_path)
    cluster.partition_counts = {"__transaction_state": 50}
    p = coordinator_partition("kchaos-t4", 50)
    cluster.isr[("__transaction_state", p)] = [1, 2, 3]
    other = ("__transaction_state", (p + 1) % 50)
    cluster.isr[other] = [1]  # a shrink elsewhere must not make it hold

    def shrink(c: FakeCluster, n: int) -> None:
        if n == 3:
            c.isr[("__transaction_state", p)] = [1, 2]

    cluster.on_observe = shrink
    when = {"isr_below": {"coordinator": "txn:kchaos-t4", "size": 3}}
    entry = {"at": 0, "for": 0.05, "fault": "pause", "target": "coordinator:txn:kchaos-t4"}
    entry.update({"params": {"mode": "freezer"}, "when": when, "timeout": 5})
    cluster.leaders[("__transaction_state", p)] = 2
    sink = FakeSink()
    nemesis = build_nemesis(cluster, {"type": "scripted", "faults": [entry]}, sink, protect=False)
    nemesis.run()
    assert nemesis.errors() == []
    start = next(e for e in sink.events if e["f"] == "fault" and e["phase"] == "start")
    assert start["trigger"]["condition"] == when
    assert start["targets"] == ["broker-2"]
    assert cluster.observations >= 3


@pytest.mark.parametrize(
    ("when", "field", "message"),
    [
        (
            {"in_isr": {"broker": 2, "coordinator": "txn:x", "topic": "t"}},
            "when.in_isr.topic",
            "either coordinator or topic",
        ),
        (
            {"isr_below": {"coordinator": "queue:x", "size": 2}},
            "when.isr_below.coordinator",
            "txn:",
        ),
        (
            {"registered": {"broker": 2, "coordinator": "txn:x"}},
            "when.registered.coordinator",
            "unknown field",
        ),
        ({"in_isr": {"broker": 2}}, "when.in_isr.topic", "missing"),
    ],
)
def test_malformed_coordinator_conditions_name_the_field(
    when: dict, field: str, message: str
) -> None:
    context = TriggerContext(topics={"t": (3, 3)}, brokers={1, 2, 3})
    with pytest.raises(ConfigError) as err:
        parse_trigger(when, None, context=context)
    assert err.value.field == field and message in err.value.detail


def test_coordinator_condition_round_trips() -> None:
    when = {"out_of_isr": {"broker": 3, "coordinator": "group:copier"}}
    trig = parse_trigger(
        when, None, context=TriggerContext(topics={"t": (3, 3)}, brokers={1, 2, 3})
    )
    assert trig.condition_spec() == when
    assert "coordinator partition of group:copier" in trig.describe()


def test_brokers_except_the_coordinator_follows_it(tmp_path: Path) -> None:
    spec = parse_target("brokers-except:coordinator:txn:kchaos-t4")
    assert spec == TargetSpec("except", inner=TargetSpec("coordinator", key="txn:kchaos-t4"))
    assert parse_target(str(spec)) == spec
    cluster = FakeCluster(3, tmp_path)
    cluster.partition_counts = {"__transaction_state": 50}
    txn_p = coordinator_partition("kchaos-t4", 50)
    cluster.leaders = {("__transaction_state", txn_p): 2}
    rng = random.Random(0)
    assert [n.node_id for n in resolve(cluster, spec, rng)] == [1, 3]
    cluster.leaders[("__transaction_state", txn_p)] = 3
    assert [n.node_id for n in resolve(cluster, spec, rng)] == [1, 2]
    assert [n.node_id for n in resolve(cluster, "brokers-except:1,3", rng)] == [2]
    with pytest.raises(FaultError, match="no broker is left"):
        resolve(cluster, "brokers-except:brokers", rng)


@pytest.mark.parametrize(
    "bad", ["brokers-except:", "brokers-except:none", "brokers-except:client:txn:a",
            "brokers-except:brokers-except:1", "brokers-except:leader:t"]
)  # fmt: skip
def test_brokers_except_needs_a_spec_that_names_nodes(bad: str) -> None:
    with pytest.raises(ConfigError):
        parse_target(bad)
