"""`kchaos replay` of run.json files in the forms earlier kchaos versions wrote (the stored
inputs of tests/unit/rundir/fixtures/old_run_json, whose README says where each comes
from): the run is rebuilt from the upgraded run description, not from YAML text.

The b45787f smoke run's own replay (its schedule and targets against its history) is in
tests/unit/rundir/test_old_run.py; here every stored form is replayed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kchaos.harness.errors import HistoryError
from kchaos.harness.run.replay import replay_scenario
from kchaos.harness.scenario import library
from kchaos.harness.scenario.plan import plan_of

FIXTURES = Path(__file__).parents[1] / "rundir" / "fixtures" / "old_run_json"


def _stored(tmp_path: Path, name: str) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(FIXTURES / name, run_dir / "run.json")
    return run_dir


def test_the_transactional_run_before_43e9e04_replays_as_the_scenario_it_ran(
    tmp_path: Path,
) -> None:
    sc, run = replay_scenario(_stored(tmp_path, "txn-smoke-before-43e9e04.json"))
    today = library.load("txn-smoke")
    assert (sc.name, sc.seed) == (today.name, today.seed)
    assert sc.cluster.kafka_version == "4.4.0"
    # the transactional workload came back whole: producers, readers, copier, timeout
    assert sc.workload == today.workload
    assert sc.workload.transactions is not None and sc.workload.transactions.timeout_ms == 10_000
    assert sc.topics == today.topics and sc.expect == today.expect
    # no concrete schedule was stored: the scenario's own steps are replayed
    assert run.schedule is None
    replayed, planned = plan_of(sc).schedule, plan_of(today).schedule
    assert replayed is not None and planned is not None
    assert replayed.to_list() == planned.to_list()


def test_the_smoke_run_of_b45787f_replays_its_stored_schedule(tmp_path: Path) -> None:
    sc, run = replay_scenario(_stored(tmp_path, "smoke-b45787f.json"))
    assert sc.name == "smoke" and run.schedule
    schedule = plan_of(sc).schedule
    assert schedule is not None and schedule.to_list() == list(run.schedule)
    # the steps' length was stored as "duration" then; the replay has it under today's name
    assert all(step.for_ is not None for step in sc.nemesis.steps)


@pytest.mark.parametrize("name", ["histgen.json", "hand-written.json"])
def test_a_settings_only_file_is_refused_by_name_and_field(tmp_path: Path, name: str) -> None:
    """Files that state checker settings but no run (no format, no schedule) cannot be
    replayed: a clear error naming the file and the field, not a traceback."""
    run_dir = _stored(tmp_path, name)
    with pytest.raises(HistoryError, match=r"run\.json: format"):
        replay_scenario(run_dir)
