"""``load_scenario_data``: a stored scenario (run.json's form) built without YAML text.

Replay and shrink rebuild a run from its run.json; the scenario they get must be the one
the file gave, and a bad stored value is refused naming the field (there are no lines).
"""

from __future__ import annotations

import json

import pytest

from kchaos.harness.errors import ConfigError
from kchaos.harness.scenario import library
from kchaos.harness.scenario.dump import file_data
from kchaos.harness.scenario.loader import load_scenario, load_scenario_data


@pytest.mark.parametrize("name", library.library_names())
def test_a_stored_library_scenario_builds_the_same_scenario(name: str) -> None:
    from_file = load_scenario(library.resolve(name))
    # through JSON, as run.json keeps it
    stored = json.loads(json.dumps(from_file.to_dict()))
    again = load_scenario_data(file_data(stored), "run.json")
    assert again.source == "run.json"
    assert {**again.to_dict(), "source": None} == {**from_file.to_dict(), "source": None}
    assert again.plan is not None and from_file.plan is not None
    assert [str(s.spec) for s in again.plan.schedule.faults] == [
        str(s.spec) for s in from_file.plan.schedule.faults
    ]


def test_the_workloads_runtime_knobs_are_file_fields_and_survive_a_replay() -> None:
    """close_timeout and metrics_interval (WorkloadSpec's own fields before issue 34) are
    the scenario's: a file may give them, run.json keeps them, a replay gets them back;
    the planned workload is the scenario's with its topics filled in."""
    stored = file_data(load_scenario(library.resolve("smoke")).to_dict())
    assert stored["workload"]["close_timeout"] == 10.0  # the defaults, stored
    assert stored["workload"]["metrics_interval"] == 2.0
    stored["workload"].update(close_timeout="5s", metrics_interval="500ms")
    sc = load_scenario_data(stored, "run.json")
    assert (sc.workload.close_timeout, sc.workload.metrics_interval) == (5.0, 0.5)
    again = load_scenario_data(file_data(json.loads(json.dumps(sc.to_dict()))), "run.json")
    assert again.workload == sc.workload
    assert sc.plan is not None and sc.plan.workload.close_timeout == 5.0
    stored["workload"]["metrics_interval"] = 0
    with pytest.raises(ConfigError) as err:
        load_scenario_data(stored, "run.json")
    assert err.value.field == "workload.metrics_interval"


def test_a_bad_stored_value_names_the_file_and_field_without_a_line() -> None:
    stored = file_data(load_scenario(library.resolve("smoke")).to_dict())
    stored["topics"][0]["partitions"] = 0
    with pytest.raises(ConfigError) as err:
        load_scenario_data(stored, "runs/x/run.json")
    assert err.value.file == "runs/x/run.json" and err.value.line is None
    assert err.value.field == "topics.0.partitions"


def test_the_kafka_version_given_is_named_as_its_origin() -> None:
    stored = file_data(load_scenario(library.resolve("smoke")).to_dict())
    with pytest.raises(ConfigError) as err:
        load_scenario_data(stored, "run.json", kafka_version="2.8.0")
    assert err.value.file == "--kafka-version"
