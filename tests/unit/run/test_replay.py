"""`kchaos replay`: run.json -> scenario, without Docker.

A stored run is simulated the way the runner writes it: record.initial() plus the
schedule the loader built (the scenario's plan).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from kchaos.cli import main as cli
from kchaos.harness.errors import HistoryError
from kchaos.harness.run import record
from kchaos.harness.run.replay import read_run_json, replay_scenario
from kchaos.harness.rundir.scenario_model import Scenario
from kchaos.harness.scenario import library
from kchaos.harness.scenario.dump import scenario_yaml
from kchaos.harness.scenario.loader import load_scenario
from kchaos.harness.scenario.plan import plan_of


def concrete(sc: Scenario) -> list[dict]:
    schedule = plan_of(sc).schedule
    return [] if schedule is None else schedule.to_list()


def stored_run(run_dir: Path, sc: Scenario, *, schedule: bool = True, **extra: object) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    # the scenario's own release when it names one (a known bug past its range on 4.4.0)
    version = str(sc.cluster.kafka_version or "4.4.0")
    data = record.initial(sc, "20261123-120000-abcd", version, ["kchaos", "run"])
    data["image"] = {"kafka": f"kchaos/kafka:{version}", "toxiproxy": "kchaos/toxiproxy:2.12.0"}
    if schedule:
        data["schedule"] = concrete(sc)
    data.update(extra)
    (run_dir / "run.json").write_bytes(orjson.dumps(record.jsonable(data)))
    return run_dir


@pytest.mark.parametrize("name", library.library_names())
def test_replay_runs_the_stored_concrete_schedule(tmp_path: Path, name: str) -> None:
    sc = library.load(name)
    run_dir = stored_run(tmp_path / "run", sc)
    replayed, run = replay_scenario(run_dir)
    # the same concrete faults: times, durations, ids, targets, params, triggers
    assert concrete(replayed) == list(run.schedule or ()) == concrete(sc)
    # and everything else the run depends on
    version = sc.cluster.kafka_version or "4.4.0"
    assert replayed.cluster == dataclasses.replace(sc.cluster, kafka_version=version)
    assert replayed.topics == sc.topics
    assert replayed.workload == sc.workload
    assert replayed.checks == sc.checks
    assert replayed.expect == sc.expect
    assert replayed.seed == sc.seed
    assert replayed.name == sc.name


def test_a_random_schedule_is_replayed_as_its_draws(tmp_path: Path) -> None:
    sc = library.load("acks1-planned-leader-moves")
    assert sc.nemesis.random is not None  # the library's random schedule
    replayed, run = replay_scenario(stored_run(tmp_path / "run", sc))
    assert replayed.nemesis.random is None
    assert len(replayed.nemesis.steps) == len(list(run.schedule or ())) > 1
    assert concrete(replayed) == list(run.schedule or ())


def test_a_changed_random_drawer_cannot_change_the_replay(tmp_path: Path) -> None:
    # the replay runs what run.json says was run, not a new draw from the seed
    sc = library.load("acks1-planned-leader-moves")
    schedule = concrete(sc)
    schedule[0] = {**schedule[0], "at": schedule[0]["at"] + 1.25}
    run_dir = stored_run(tmp_path / "run", sc, schedule=False)
    data = orjson.loads((run_dir / "run.json").read_bytes())
    data["schedule"] = schedule
    (run_dir / "run.json").write_bytes(orjson.dumps(data))
    replayed, _ = replay_scenario(run_dir)
    assert concrete(replayed)[0]["at"] == schedule[0]["at"]


def test_without_a_schedule_the_scenario_nemesis_is_replayed(tmp_path: Path) -> None:
    sc = library.load("acks1-planned-leader-moves")
    replayed, _ = replay_scenario(stored_run(tmp_path / "run", sc, schedule=False))
    assert replayed.nemesis == sc.nemesis
    assert concrete(replayed) == concrete(sc)


def test_kafka_version_option_changes_only_the_release(tmp_path: Path) -> None:
    sc = library.load("smoke")
    replayed, _ = replay_scenario(stored_run(tmp_path / "run", sc), kafka_version="3.9.1")
    assert replayed.cluster.kafka_version == "3.9.1"
    assert concrete(replayed) == concrete(sc)


def test_another_release_gets_the_expectation_the_scenario_gives_it(tmp_path: Path) -> None:
    # kip-903 expects lost writes before 3.5 and a valid run from 3.5 on: a replay of a
    # 3.4.1 run on 3.5.2 must expect valid, not the original's resolved "invalid"
    name = "kip-903-lost-page-cache-rejoin"
    sc = library.load(name, kafka_version="3.4.1")
    assert sc.expect.valid is False
    stored = tmp_path / "run"
    stored_run(stored, sc)
    data = orjson.loads((stored / "run.json").read_bytes())
    data["kafka_version"] = "3.4.1"
    (stored / "run.json").write_bytes(orjson.dumps(data))
    same, _ = replay_scenario(stored)
    assert same.expect == sc.expect
    fixed, _ = replay_scenario(stored, kafka_version="3.5.2")
    assert fixed.expect.valid is True and fixed.expect.anomalies == ()
    assert fixed.expect == library.load(name, kafka_version="3.5.2").expect


def test_overrides_of_the_original_run_are_kept(tmp_path: Path) -> None:
    sc = library.load("smoke", overrides=["workload.duration=25", "nemesis.steps.0.at=3"])
    replayed, _ = replay_scenario(stored_run(tmp_path / "run", sc))
    assert replayed.workload.duration == 25
    assert concrete(replayed)[0]["at"] == 3


def test_scenario_yaml_round_trips_the_library() -> None:
    for name in library.library_names():
        sc = library.load(name)
        back = load_scenario("x.yaml", text=scenario_yaml(sc, "a header"))
        assert dataclasses.replace(back, source=sc.source) == sc, name


# ------------------------------------------------------------------ bad input


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(args)
    err = capsys.readouterr().err
    return int(exit_info.value.code or 0), err


def test_replay_of_a_directory_without_run_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run_cli(["replay", str(tmp_path)], capsys)
    assert code == 3
    assert err.strip() == f"kchaos: {tmp_path}: not a run directory: it has no run.json"


def test_replay_of_a_newer_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = stored_run(tmp_path / "run", library.load("smoke"), format=2)
    code, err = run_cli(["replay", str(run_dir)], capsys)
    assert code == 3
    assert len(err.strip().splitlines()) == 1
    assert "run.json: format: format 2 is newer than this kchaos reads (1)" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2]", "expected a JSON object, got list"),
        (b'{"format": "one"}', "format: expected integer, got 'one'"),
        (b'{"scenario": {}}', "format: must be an integer"),
        (b'{"format": 1}', "scenario: missing"),
        (b'{"format": 1, "scenario": {"name": "x"}}', "scenario: the stored scenario is"),
        (b'{"format": 1, "scenario": {}, "schedule": 3}', "schedule: expected array, got 3"),
    ],
)
def test_unreadable_run_json_is_one_line(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / "run.json").write_bytes(content)
    with pytest.raises(HistoryError) as info:
        replay_scenario(tmp_path)
    assert message in str(info.value)
    assert info.value.exit_code == 3
    assert "\n" not in str(info.value)


def test_a_bad_stored_schedule_names_the_field(tmp_path: Path) -> None:
    run_dir = stored_run(tmp_path / "run", library.load("smoke"))
    data = orjson.loads((run_dir / "run.json").read_bytes())
    data["schedule"] = [{"id": "f-1", "at": 1}]
    (run_dir / "run.json").write_bytes(orjson.dumps(data))
    with pytest.raises(HistoryError, match=r"run.json: schedule.0: not a scheduled fault"):
        replay_scenario(run_dir)


def test_a_bad_kafka_version_is_named_as_the_option(tmp_path: Path) -> None:
    run_dir = stored_run(tmp_path / "run", library.load("smoke"))
    with pytest.raises(Exception, match="--kafka-version") as info:
        replay_scenario(run_dir, kafka_version="four")
    assert getattr(info.value, "exit_code", None) == 3


def test_read_run_json_accepts_what_the_runner_writes(tmp_path: Path) -> None:
    run_dir = stored_run(tmp_path / "run", library.load("smoke"))
    assert read_run_json(run_dir).format == record.FORMAT


@pytest.mark.parametrize("flag", [[], ["--prometheus"]])
def test_prometheus_reaches_the_replay(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, flag: list[str]
) -> None:
    from sample_runs import VALID, make_run

    import kchaos.harness.run
    from kchaos.cli.batch import replay_cmd
    from kchaos.harness.run.orchestrate import RunResult
    from kchaos.reports.build import write_run_reports

    asked: list[object] = []

    def run(sc: Scenario, *, out: Path, **kw: object) -> RunResult:
        asked.append(kw.get("prometheus"))
        make_run(out, results=VALID, name=sc.name)
        rep = write_run_reports(out)
        return RunResult(out.name, out, rep.outcome.exit_code, rep.summary, rep.paths, rep)

    monkeypatch.setattr(kchaos.harness.run, "run_scenario", run)
    stored = stored_run(tmp_path / "run", library.load("smoke"))
    args = [str(stored), "--out", str(tmp_path / "again"), *flag]
    result = CliRunner().invoke(replay_cmd, args, standalone_mode=False)
    assert result.exception is None, result.output
    assert asked == [bool(flag)]
