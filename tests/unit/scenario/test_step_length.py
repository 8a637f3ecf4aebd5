"""A step's length is ``for`` in a scenario file, as in run.json's ``schedule`` and the
pytest plugin (issue 23: one vocabulary). ``duration`` is its old spelling: older scenario
files and the scenarios older run.json files embed still load, to the same scenario; a
step that gives both is refused with the file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from scenario_variants import BASE

from kchaos.harness.errors import ConfigError, HistoryError
from kchaos.harness.run.replay import replay_scenario
from kchaos.harness.rundir.scenario_model import Scenario
from kchaos.harness.scenario import library
from kchaos.harness.scenario.dump import file_data, scenario_yaml
from kchaos.harness.scenario.loader import load_scenario, load_scenario_data, schema
from kchaos.harness.scenario.yamlsrc import load_yaml

# BASE's pause, which has a length, then a step without one
NEW = BASE + "    - fault: kill\n      at: 30s\n      target: broker-2\n"
OLD = NEW.replace("      for: 5s\n", "      duration: 5s\n")
BOTH = NEW.replace("      for: 5s\n", "      for: 5s\n      duration: 5s\n")


def schedule_of(sc: Scenario) -> list[dict]:
    assert sc.plan is not None and sc.plan.schedule is not None
    return sc.plan.schedule.to_list()


def test_the_old_spelling_loads_the_same_scenario_and_schedule() -> None:
    assert OLD != NEW and "duration: 5s" in OLD
    new, old = load_scenario("new.yaml", text=NEW), load_scenario("old.yaml", text=OLD)
    assert old.nemesis == new.nemesis and old.nemesis.steps[0].for_ == 5.0
    assert old.to_dict() == {**new.to_dict(), "source": "old.yaml"}
    assert schedule_of(old) == schedule_of(new)
    assert schedule_of(new)[0]["for"] == 5.0


def test_both_spellings_in_one_step_are_refused_with_file_line_and_field() -> None:
    with pytest.raises(ConfigError) as err:
        load_scenario("both.yaml", text=BOTH)
    line = BOTH.splitlines().index("      duration: 5s") + 1
    assert (err.value.file, err.value.line) == ("both.yaml", line)
    assert err.value.field == "nemesis.steps.0.duration"
    assert "old spelling" in err.value.detail and "for" in err.value.detail


def test_a_bad_old_spelled_length_is_named_as_the_file_spells_it() -> None:
    text = OLD.replace("duration: 5s", "duration: 5 seconds")
    with pytest.raises(ConfigError) as err:
        load_scenario("old.yaml", text=text)
    assert err.value.field == "nemesis.steps.0.duration"
    assert err.value.line == text.splitlines().index("      duration: 5 seconds") + 1


@pytest.mark.parametrize("key", ["for", "duration"])
@pytest.mark.parametrize("text", [NEW, OLD], ids=["new-file", "old-file"])
def test_set_changes_a_steps_length_in_either_spelling(text: str, key: str) -> None:
    sc = load_scenario("s.yaml", text=text, overrides=[f"nemesis.steps.0.{key}=2s"])
    assert sc.nemesis.steps[0].for_ == 2.0
    assert schedule_of(sc)[0]["for"] == 2.0


def test_the_published_schema_takes_either_spelling_but_not_both() -> None:
    validator = jsonschema.Draft202012Validator(schema())
    for text in (NEW, OLD):
        assert list(validator.iter_errors(load_yaml(text, "s.yaml").data)) == []
    assert list(validator.iter_errors(load_yaml(BOTH, "s.yaml").data))
    step = schema()["properties"]["nemesis"]["properties"]["steps"]["items"]
    assert step["properties"]["duration"]["deprecated"] is True
    assert "deprecated" not in step["properties"]["for"]


def test_run_json_and_the_written_yaml_say_for() -> None:
    sc = load_scenario("old.yaml", text=OLD)
    stored = sc.to_dict()["nemesis"]["steps"]
    assert stored[0]["for"] == 5.0 and stored[1]["for"] is None
    assert all("duration" not in s and "for_" not in s for s in stored)
    steps = load_yaml(scenario_yaml(sc), "again.yaml").data["nemesis"]["steps"]
    assert steps[0]["for"] == 5.0 and all("duration" not in s for s in steps)


def old_stored(sc: Scenario) -> dict:
    """``sc`` as a run.json of before issue 23 stored it: steps with ``duration``."""
    data = json.loads(json.dumps(sc.to_dict()))
    for step in data["nemesis"]["steps"]:
        step["duration"] = step.pop("for")
    return data


def test_a_stored_scenario_of_an_older_run_json_still_loads() -> None:
    sc = load_scenario("new.yaml", text=NEW)
    again = load_scenario_data(file_data(old_stored(sc)), "run.json")
    assert again.nemesis == sc.nemesis
    assert file_data(old_stored(sc))["nemesis"]["steps"][0] == {
        "fault": "pause", "at": 10.0, "for": 5.0, "target": "random"
    }  # fmt: skip


def test_a_stored_step_with_both_spellings_is_refused() -> None:
    data = json.loads(json.dumps(load_scenario("new.yaml", text=NEW).to_dict()))
    data["nemesis"]["steps"][0]["duration"] = 5.0
    with pytest.raises(ConfigError) as err:
        load_scenario_data(file_data(data), "runs/x/run.json")
    assert (err.value.file, err.value.line) == ("runs/x/run.json", None)
    assert err.value.field == "nemesis.steps.0.duration"


def write_run(run_dir: Path, scenario: dict, schedule: list | None) -> Path:
    run_dir.mkdir(parents=True)
    data: dict = {"format": 1, "run_id": "old", "kafka_version": "4.4.0", "seed": 0}
    data["scenario"] = scenario
    if schedule is not None:
        data["schedule"] = schedule
    (run_dir / "run.json").write_text(json.dumps(data))
    return run_dir


@pytest.mark.parametrize("with_schedule", [True, False], ids=["schedule", "no-schedule"])
def test_a_replay_of_an_old_run_builds_its_steps_with_for(
    tmp_path: Path, with_schedule: bool
) -> None:
    sc = load_scenario("new.yaml", text=NEW)
    schedule = schedule_of(sc) if with_schedule else None
    replayed, _ = replay_scenario(write_run(tmp_path / "run", old_stored(sc), schedule))
    assert [(s.fault, s.at, s.for_) for s in replayed.nemesis.steps] == [
        ("pause", 10.0, 5.0),
        ("kill", 30.0, None),
    ]
    assert schedule_of(replayed) == schedule_of(sc)
    assert replayed.to_dict()["nemesis"]["steps"][0]["for"] == 5.0


def test_a_replay_of_a_stored_step_with_both_spellings_is_bad_input(tmp_path: Path) -> None:
    data = old_stored(load_scenario("new.yaml", text=NEW))
    data["nemesis"]["steps"][0]["for"] = 5.0
    with pytest.raises(HistoryError) as err:
        replay_scenario(write_run(tmp_path / "run", data, None))
    assert err.value.field == "scenario.nemesis.steps.0.duration"
    assert "gives its length twice" in str(err.value)


@pytest.mark.parametrize("name", library.library_names())
def test_library_steps_say_for(name: str) -> None:
    data = load_yaml(library.resolve(name).read_text(encoding="utf-8"), name).data
    for step in (data.get("nemesis") or {}).get("steps") or ():
        assert "duration" not in step, f"{name}: a step still says duration"
