"""run.json: one model, one schema, one reader and writer (kchaos.harness.rundir.runjson)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from kchaos.harness.errors import HistoryError
from kchaos.harness.run import record
from kchaos.harness.rundir.runjson import (
    FORMAT,
    SETTINGS_ONLY,
    RunSettings,
    load_run,
    schema,
    write_run,
)
from kchaos.harness.scenario import library


def _runner_data() -> dict:
    sc = library.load("smoke")
    data = record.initial(sc, "20261123-120000-abcd", "4.4.0", ["kchaos", "run", "smoke"])
    # keys later steps of a run add (orchestrate, after-run steps, replay, shrink)
    data.update(
        image={"kafka": "kchaos/kafka:4.4.0", "toxiproxy": "kchaos/toxiproxy:2.12.0"},
        history_start_unix_ns=1_795_000_000_000_000_000,
        schedule=[{"id": "f-0", "fault": "pause", "at": 5.0, "for": 3.0, "target": "random"}],
        nemesis_errors=[{"id": "f-1", "fault": "pause", "phase": "trigger", "error": "never"}],
        after_run={"controller": {"lines": 12}},
        replicas={"error": "RuntimeError: boom"},
        reread={"records": 10},
        replay_of={"run_dir": "/x", "run_id": "r0", "kafka_version": "4.4.0", "image": None},
        wall_seconds=61.5,
        status="completed",
        end=record.utc_now(),
    )
    return data


def test_what_the_runner_writes_loads_typed_and_keeps_every_key(tmp_path: Path) -> None:
    data = _runner_data()
    jsonschema.Draft202012Validator(schema()).validate(record.jsonable(data))
    write_run(tmp_path / "run.json", data)
    run = load_run(tmp_path)
    assert run.format == FORMAT
    assert (run.run_id, run.scenario_name, run.seed) == (
        "20261123-120000-abcd",
        "smoke",
        data["scenario"]["seed"],  # the runner writes the seed once, in the scenario
    )
    assert "seed" not in data and "producer" not in data and "cluster" not in data
    assert (run.kafka_version, run.kafka_image) == ("4.4.0", "kchaos/kafka:4.4.0")
    assert run.schedule is not None and run.schedule[0]["id"] == "f-0"
    assert run.nemesis_errors[0]["phase"] == "trigger"
    assert run.history_start_unix_ns == 1_795_000_000_000_000_000
    assert run.expect == data["scenario"]["expect"]
    assert run.settings.acks_all is True
    # nothing a user sees disappears: the untyped keys are passed through as written
    assert dict(run.raw) == json.loads((tmp_path / "run.json").read_text())
    assert run.get("after_run") == {"controller": {"lines": 12}}


def test_a_newer_format_is_refused_naming_file_and_field(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps({"format": FORMAT + 1}))
    with pytest.raises(HistoryError) as info:
        load_run(tmp_path)
    assert info.value.exit_code == 3
    assert str(info.value).startswith(f"{tmp_path / 'run.json'}: format: format {FORMAT + 1}")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"seed": "forty-two"}, "seed: expected integer, got 'forty-two'"),
        ({"schedule": {"f": 1}}, "schedule: expected array"),
        ({"schedule": [3]}, "schedule.0: expected object, got 3"),
        ({"history_start_unix_ns": 1.5}, "history_start_unix_ns: expected integer"),
        ({"checks": {"max_offline_seconds": "soon"}}, "checks.max_offline_seconds: expected a"),
        (
            {"topics": [{"name": "t", "configs": {"min.insync.replicas": 0}}]},
            "topics.t.min.insync.replicas: expected a positive integer, got 0",
        ),
        (
            {"cluster": {"server_properties": {"broker.session.timeout.ms": "9s"}}},
            "cluster.server_properties.broker.session.timeout.ms: expected an integer",
        ),
    ],
)
def test_a_field_of_the_wrong_type_is_named(tmp_path: Path, data: dict, message: str) -> None:
    (tmp_path / "run.json").write_text(json.dumps(data))
    with pytest.raises(HistoryError) as info:
        load_run(tmp_path / "run.json")
    assert f"run.json: {message}" in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_run_json(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="no run.json"):
        load_run(tmp_path)
    empty = load_run(tmp_path, missing_ok=True)
    assert not empty.present and empty.settings == RunSettings() and empty.schedule is None


def test_a_hand_written_run_json_with_settings_only(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(
        json.dumps({"scenario": "mine", "broker_config": {"min.insync.replicas": "2"}})
    )
    run = load_run(tmp_path)
    assert run.scenario_name == "mine" and run.format is None
    # a scenario of the settings alone, typed like any other, but not one to run again
    assert run.scenario is not None and not run.described
    assert run.scenario.name == "mine" and run.scenario.description == SETTINGS_ONLY
    assert run.scenario.cluster.server_properties == {"min.insync.replicas": "2"}
    assert run.settings.min_insync == 2
    assert run.settings.broker_session_timeout_ms == 9_000  # Kafka's default


def test_the_broker_session_timeout_comes_from_the_server_properties(tmp_path: Path) -> None:
    props = {"broker.session.timeout.ms": "18000"}
    (tmp_path / "run.json").write_text(json.dumps({"cluster": {"server_properties": props}}))
    assert load_run(tmp_path).settings.broker_session_timeout_ms == 18_000
