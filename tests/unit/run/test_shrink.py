"""`kchaos shrink` with a fake runner: candidates, pinned targets, outputs, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from kchaos.cli import main as cli
from kchaos.harness.errors import HistoryError
from kchaos.harness.run import record
from kchaos.harness.run.orchestrate import RunResult
from kchaos.harness.run.shrink import (
    fewer_targets,
    invalidating_kinds,
    read_original,
    shorter,
    shrink_run,
)
from kchaos.harness.rundir.scenario_model import Scenario
from kchaos.harness.scenario import library
from kchaos.harness.scenario.loader import load_scenario
from kchaos.harness.scenario.plan import plan_of
from kchaos.harness.scenario.yamlsrc import load_yaml

NOISY = [
    "nemesis.steps=["
    "{fault: latency, at: 2, for: 3, target: broker-3, params: {latency_ms: 50}},"
    "{fault: pause, at: 4, for: 2, target: random},"
    "{fault: isolate, at: 10, for: 12, target: broker-1},"
    "{fault: kill, at: 14, for: 5, target: broker-1}]",
    "workload.duration=30",
]


def noisy() -> Scenario:
    return library.load("unsafe-acks1-unclean-election", overrides=NOISY)


def stored_failing_run(run_dir: Path, sc: Scenario, results: dict[str, Any] | None = None) -> Path:
    run_dir.mkdir(parents=True)
    data = record.initial(sc, "20261123-120000-abcd", "4.4.0", [])
    schedule = plan_of(sc).schedule.to_list()  # type: ignore[union-attr]
    data["schedule"] = schedule
    (run_dir / "run.json").write_bytes(orjson.dumps(record.jsonable(data)))
    results = results or {
        "valid": False,
        "anomalies": {
            "lost-write": {"count": 900, "allowed": 0},
            "unclean-election": {"count": 1, "allowed": 1},
            "offline": {"count": 2},
        },
    }
    (run_dir / "results.json").write_bytes(orjson.dumps(results))
    # the pause's `random` target hit broker-2 in the original run
    lines = [
        {"f": "fault", "phase": "start", "id": f["id"], "fault": f["fault"], "targets": [t]}
        for f, t in zip(schedule, ["broker-3", "broker-2", "broker-1", "broker-1"], strict=False)
    ]
    (run_dir / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    return run_dir


class FakeRunner:
    """Loses writes when the isolation lasts at least 3 s (any kill, latency or pause is
    irrelevant); writes results.json like the checker."""

    def __init__(self) -> None:
        self.runs: list[Scenario] = []

    def __call__(self, sc: Scenario, *, out: Path, **_: Any) -> RunResult:
        self.runs.append(sc)
        out.mkdir(parents=True)
        lost = any(s.fault == "isolate" and (s.for_ or 0) >= 3 for s in sc.nemesis.steps)
        results = {"valid": not lost, "anomalies": {"lost-write": {"count": 5}} if lost else {}}
        (out / "results.json").write_bytes(orjson.dumps(results))
        return RunResult("fake", out, 0, {}, {}, None)


def test_shrink_removes_harmless_steps_and_shortens(tmp_path: Path) -> None:
    original = stored_failing_run(tmp_path / "run", noisy())
    fake = FakeRunner()
    summary = shrink_run(original, budget=20, out=tmp_path / "out", run=fake, console=None)
    assert [s["fault"] for s in summary["shrunk_steps"]] == ["isolate"]
    assert summary["shrunk_steps"][0]["for"] == 3.0  # 12 -> 6 -> 3 (1.5 is clean)
    assert summary["runs"] == len(fake.runs) <= 20
    # the scenario file is valid and is the reproduction
    sc = load_scenario(tmp_path / "out" / "shrunk.yaml")
    assert sc.name == "unsafe-acks1-unclean-election-shrunk"
    assert [(s.fault, s.at, s.for_, s.target) for s in sc.nemesis.steps] == [
        ("isolate", 10.0, 3.0, "broker-1")
    ]
    assert sc.expect.valid is False and sc.expect.anomalies == ("lost-write",)
    assert "unclean-election" in sc.expect.allowed
    # the written steps say for, the one name of a step's length
    text = (tmp_path / "out" / "shrunk.yaml").read_text()
    written = load_yaml(text, "shrunk.yaml").data["nemesis"]["steps"]
    assert written == [{"fault": "isolate", "at": 10.0, "for": 3.0, "target": "broker-1"}]
    assert sc.workload == noisy().workload and sc.cluster.kafka_version == "4.4.0"
    page = (tmp_path / "out" / "report.html").read_text()
    assert "Attempts" in page and "isolate broker-1 at 10s for 3s" in page
    saved = json.loads((tmp_path / "out" / "shrink.json").read_text())
    assert [a["phase"] for a in saved["attempts"]][0] == "steps"
    assert {a["phase"] for a in saved["attempts"]} >= {"steps", "durations"}


def test_every_run_is_the_same_run_apart_from_its_schedule(tmp_path: Path) -> None:
    original = stored_failing_run(tmp_path / "run", noisy())
    fake = FakeRunner()
    shrink_run(original, budget=4, out=tmp_path / "out", run=fake, console=None)
    for sc in fake.runs:
        assert sc.workload == noisy().workload
        assert sc.topics == noisy().topics
        assert sc.cluster.kafka_version == "4.4.0"
        assert sc.seed == noisy().seed


def test_the_budget_bounds_the_runs_and_the_best_so_far_is_written(tmp_path: Path) -> None:
    original = stored_failing_run(tmp_path / "run", noisy())
    fake = FakeRunner()
    summary = shrink_run(original, budget=2, out=tmp_path / "out", run=fake, console=None)
    assert len(fake.runs) == 2
    # first split: [latency, pause] clean, [isolate, kill] reproduces
    assert [s["fault"] for s in summary["shrunk_steps"]] == ["isolate", "kill"]
    sc = load_scenario(tmp_path / "out" / "shrunk.yaml")
    assert [s.fault for s in sc.nemesis.steps] == ["isolate", "kill"]


def test_random_targets_are_pinned_to_what_the_original_hit(tmp_path: Path) -> None:
    original = read_original(stored_failing_run(tmp_path / "run", noisy()))
    targets = [json.loads(s)["target"] for s in original.steps]
    assert targets == ["broker-3", "broker-2", "broker-1", "broker-1"]
    assert original.kinds == ("lost-write",)  # the allowed unclean election is no target


def test_candidate_moves() -> None:
    step = json.dumps({"fault": "isolate", "at": 1, "for": 12, "target": "broker-1,broker-2"})
    kill = json.dumps({"fault": "kill", "at": 3, "target": "random:2"})
    short = shorter((step, kill))
    assert [json.loads(c[0])["for"] for c in short] == [6.0]
    targets = fewer_targets((step, kill))
    assert [json.loads(c[0])["target"] for c in targets[:2]] == ["broker-2", "broker-1"]
    assert json.loads(targets[2][1])["target"] == "random:1"
    tiny = json.dumps({"fault": "isolate", "at": 1, "for": 1.5, "target": "broker-1"})
    assert json.loads(shorter((tiny,))[0][0])["for"] == 1.0
    assert shorter((json.dumps({"fault": "pause", "at": 1, "for": 1.0}),)) == []


def test_invalidating_kinds_skip_allowed_and_reported_ones() -> None:
    results = {
        "anomalies": {
            "lost-write": {"count": 3},
            "unclean-election": {"count": 2, "allowed": 2},
            "offline": {"count": 4},
            "unseen": {"count": 1},
            "duplicate": {"count": 1, "allowed": 0},
        }
    }
    assert invalidating_kinds(results) == ("duplicate", "lost-write")


# ------------------------------------------------------------------ bad input


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(args)
    return int(exit_info.value.code or 0), capsys.readouterr().err


@pytest.mark.parametrize("verdict", [True, "unknown"])
def test_shrink_of_a_run_that_was_not_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], verdict: object
) -> None:
    run_dir = stored_failing_run(
        tmp_path / "run", library.load("smoke"), {"valid": verdict, "anomalies": {}}
    )
    code, err = run_cli(["shrink", str(run_dir)], capsys)
    assert code == 3
    text = "valid" if verdict is True else "unknown"
    assert err == (
        f"kchaos: {run_dir}/results.json: valid: the run's verdict is {text}: "
        "shrink needs a run whose verdict was invalid\n"
    )


def test_shrink_of_a_directory_without_run_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run_cli(["shrink", str(tmp_path)], capsys)
    assert (code, err) == (3, f"kchaos: {tmp_path}: not a run directory: it has no run.json\n")


def test_shrink_of_an_unjudged_run(tmp_path: Path) -> None:
    run_dir = stored_failing_run(tmp_path / "run", noisy())
    (run_dir / "results.json").unlink()
    with pytest.raises(HistoryError, match="no results.json: judge the run first"):
        read_original(run_dir)


def test_shrink_of_a_run_without_faults(tmp_path: Path) -> None:
    sc = library.load("smoke", overrides=["nemesis={}"])
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    data = record.initial(sc, "r", "4.4.0", [])
    (run_dir / "run.json").write_bytes(orjson.dumps(record.jsonable(data)))
    (run_dir / "results.json").write_text('{"valid": false, "anomalies": {"lost-write": {}}}')
    with pytest.raises(HistoryError, match="lists no invalidating anomaly"):
        read_original(run_dir)
    (run_dir / "results.json").write_text(
        '{"valid": false, "anomalies": {"lost-write": {"count": 1}}}'
    )
    with pytest.raises(HistoryError, match="schedule: the run has no concrete fault schedule"):
        read_original(run_dir)


@pytest.mark.parametrize("flag", [[], ["--prometheus"]])
def test_prometheus_reaches_every_trial_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, flag: list[str]
) -> None:
    from click.testing import CliRunner

    from kchaos.cli.batch import shrink_cmd
    from kchaos.harness.run import orchestrate

    asked: list[object] = []
    fake = FakeRunner()

    def run(sc: Scenario, *, out: Path, **kw: Any) -> RunResult:
        asked.append(kw.get("prometheus"))
        return fake(sc, out=out)

    monkeypatch.setattr(orchestrate, "run_scenario", run)
    original = stored_failing_run(tmp_path / "run", noisy())
    args = [str(original), "--budget", "3", "--out", str(tmp_path / "out"), *flag]
    result = CliRunner().invoke(shrink_cmd, args, standalone_mode=False)
    assert result.exception is None, result.output
    assert asked == [bool(flag)] * 3  # one server per trial run
