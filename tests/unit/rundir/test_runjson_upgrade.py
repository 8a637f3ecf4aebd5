"""run.json of earlier forms: one upgrade step (``rundir.runjson.upgrade``) brings each to
today's form, and the checker settings come from that form alone (``run_settings``).

The inputs are in fixtures/old_run_json (its README says where each comes from)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.loglines import LogLine
from kchaos.harness.rundir.runjson import RunJson, RunSettings, run_settings, upgrade
from kchaos.harness.rundir.scenario_model import Scenario

FIXTURES = Path(__file__).parent / "fixtures" / "old_run_json"

# file -> (the settings the checkers get, the scenario name readers show)
EXPECTED: dict[str, tuple[RunSettings, str | None]] = {
    "smoke-b45787f.json": (
        RunSettings(
            topic_min_insync={"smoke": 2},
            max_offline_seconds=20.0,
            max_time_to_full_isr_seconds=60.0,
        ),
        "smoke",
    ),
    "txn-smoke-before-43e9e04.json": (
        RunSettings(
            topic_min_insync={"txn-a": 2, "txn-b": 2, "txn-out": 2},
            max_offline_seconds=20.0,
            transaction_timeout_ms=10_000,
        ),
        "txn-smoke",
    ),
    "histgen.json": (RunSettings(topic_min_insync={"t": 2}), None),
    "hand-written.json": (
        RunSettings(
            acks_all=False,
            unclean_enabled=True,
            min_insync=2,
            topic_unclean={"t": False},
            max_offline_seconds=5.0,
            min_ok_sends=10,
            transaction_timeout_ms=120_000,
            log_lines=(LogLine(contains="Shrinking ISR"),),
        ),
        "mine",
    ),
}

# keys today's form holds in the scenario only
TOP_LEVEL_COPIES = {"cluster", "topics", "producer", "consumer", "transactions", "checks"}


def _load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def test_every_stored_file_has_an_expectation() -> None:
    assert sorted(p.name for p in FIXTURES.glob("*.json")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_an_earlier_form_loads_with_the_settings_it_states(name: str) -> None:
    settings, scenario_name = EXPECTED[name]
    run = RunJson.from_mapping(_load(name), name)
    assert run.settings == settings
    assert run.scenario_name == scenario_name
    assert dict(run.raw) == _load(name)  # the file itself is kept as written


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_upgrade_leaves_today_s_form_and_is_done_once(name: str) -> None:
    data = _load(name)
    current = upgrade(data, name)
    assert not TOP_LEVEL_COPIES & set(current)
    scenario = current["scenario"]
    steps = scenario.get("nemesis", {}).get("steps", [])
    assert all("duration" not in s for s in steps)  # a step's length is `for`
    assert upgrade(current, name) == current
    assert run_settings(Scenario.from_dict(scenario, name), name) == EXPECTED[name][0]


def test_the_old_run_keeps_its_scenario_and_its_steps_lengths() -> None:
    data = _load("smoke-b45787f.json")
    scenario = upgrade(data)["scenario"]
    before = data["scenario"]
    assert [s["for"] for s in scenario["nemesis"]["steps"]] == [
        s["duration"] for s in before["nemesis"]["steps"]
    ]
    for key in ("name", "cluster", "topics", "workload", "checks", "expect", "seed"):
        assert scenario[key] == before[key], key


def test_today_s_form_is_left_as_it_is() -> None:
    data = _load("smoke-b45787f.json")
    current = upgrade(data)
    again = {**current, "scenario": json.loads(json.dumps(current["scenario"]))}
    assert upgrade(again) == again


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"producer": {"transaction.timeout.ms": "soon"}}, "producer.transaction.timeout.ms"),
        (
            {"scenario": {"workload": {"producer": {"transaction_timeout_ms": 0}}}},
            "scenario.workload.producer.transaction_timeout_ms",
        ),
        (
            {"cluster": {"config": {"min.insync.replicas": "x"}}},
            "cluster.config.min.insync.replicas",
        ),
        ({"transactions": {"timeout": -1}}, "transactions.timeout"),
        ({"checks": {"min_ok_sends": -3}}, "checks.min_ok_sends"),
        ({"expect": {"log_lines": [{"node": 1}]}}, "expect.log_lines.0.contains"),
    ],
)
def test_an_upgrade_error_names_the_file_and_the_field_the_file_used(
    data: dict[str, Any], field: str
) -> None:
    with pytest.raises(HistoryError) as info:
        upgrade(data, "runs/x/run.json")
    assert (info.value.file, info.value.field) == ("runs/x/run.json", field)


def test_older_spellings_inside_a_scenario_are_moved_and_dropped() -> None:
    """Inside the scenario too, the older spellings are upgrade's alone: it moves their
    settings to the model's fields and leaves none of them for the typed model, which
    knows only its own fields."""
    old = {"producer": {"acks": "0"}, "cluster": {"broker_config": {"min.insync.replicas": 3}}}
    current = upgrade({"scenario": old})["scenario"]
    assert "producer" not in current and "broker_config" not in current["cluster"]
    assert current["workload"]["producers"] == {"acks": "0"}
    assert current["cluster"]["server_properties"] == {"min.insync.replicas": 3}
    sc = Scenario.from_dict(current)
    assert sc.cluster.server_properties == {"min.insync.replicas": "3"}  # as Kafka reads it
    assert run_settings(sc) == RunSettings(acks_all=False, min_insync=3)
    with pytest.raises(HistoryError) as info:
        Scenario.from_dict({**current, "producer": {"acks": "0"}}, "r/run.json")
    assert info.value.field == "scenario.producer"
