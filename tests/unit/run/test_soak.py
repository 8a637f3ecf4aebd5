"""kchaos soak: the scenarios it generates (safe settings, every fault family, seeded) and
its summary, with the runs replaced by hand-made run directories."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from sample_runs import LOST, VALID, make_run

from kchaos.cli import main as cli
from kchaos.harness.errors import ClusterError, ConfigError
from kchaos.harness.run import soak
from kchaos.harness.run.orchestrate import RunResult
from kchaos.reports.build import write_run_reports


@pytest.fixture(scope="module")
def default_plan() -> list[Any]:
    return soak.plan(soak.DEFAULT_RUNS, soak.DEFAULT_SEED_BASE)


def test_every_run_has_only_safe_settings(default_plan: list[Any]) -> None:
    assert len(default_plan) == 20
    for entry in default_plan:
        sc = entry.scenario
        assert sc.cluster.kafka_version == "4.4.0"
        props = sc.cluster.server_properties
        assert props["min.insync.replicas"] == "2"
        assert props["unclean.leader.election.enable"] == "false"
        assert props["default.replication.factor"] == "3"
        assert sc.cluster.brokers == 3
        for topic in sc.topics:
            assert topic.replication_factor == 3
            assert topic.configs["min.insync.replicas"] == "2"
            assert topic.configs["unclean.leader.election.enable"] == "false"
        producers = sc.workload.producers
        assert producers.acks == "all"
        assert producers.configs["enable.idempotence"] == "true"
        assert sc.expect.valid is True and sc.expect.anomalies == ()
        # only reported-only kinds are allowed: every invalidating kind fails the run
        assert set(sc.expect.allowed) <= {"offline"}


def test_faults_kafka_does_not_promise_to_survive_are_left_out() -> None:
    drawn = {f for faults in soak.FAULTS.values() for f in faults}
    assert not drawn & {"power-loss", "disk-full", "rolling-restart"}


def test_every_family_appears_across_twenty_seeds(default_plan: list[Any]) -> None:
    for base in (soak.DEFAULT_SEED_BASE, 100):
        entries = default_plan if base == soak.DEFAULT_SEED_BASE else soak.plan(20, base)
        families = {soak.FAMILY[f] for e in entries for f in soak.drawn_faults(e.scenario)}
        assert families == {"network", "partition", "pause", "disk", "crash"}, base
    # and every run has faults to inject
    assert all(soak.drawn_faults(e.scenario) for e in default_plan)


def test_same_seed_base_same_schedules(default_plan: list[Any]) -> None:
    again = soak.plan(3, soak.DEFAULT_SEED_BASE)
    assert [e.label for e in again] == ["seed-1", "seed-2", "seed-3"]
    for a, b in zip(again, default_plan[:3], strict=True):
        assert a.scenario == b.scenario
        assert soak.drawn_faults(a.scenario) == soak.drawn_faults(b.scenario)
    schedules = {tuple(soak.drawn_faults(e.scenario)) for e in default_plan}
    assert len(schedules) > 15  # seeds differ, so do their schedules
    assert soak.draw_params(7) == soak.draw_params(7)


def test_the_scenario_files_written_load_again(tmp_path: Path) -> None:
    from kchaos.harness.scenario.loader import load_scenario

    entries = soak.plan(2, 40, scenario_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["soak-40.yaml", "soak-41.yaml"]
    assert load_scenario(tmp_path / "soak-41.yaml") == entries[1].scenario


def known(version: str) -> str | None:
    return None if version == "4.4.0" else f"Maven Central has no kafka_2.13:{version}"


class FakeRuns:
    """Stands in for run_scenario: seed 2 loses writes, seed 3 cannot start a cluster."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, Path]] = []

    def __call__(self, sc: Any, *, out: Path, **_: Any) -> RunResult:
        self.calls.append((sc.seed, out))
        if sc.seed == 3:
            raise ClusterError("cluster did not start")
        make_run(out, results=LOST if sc.seed == 2 else VALID, name=sc.name)
        run = json.loads((out / "run.json").read_text())
        run.update(kafka_version="4.4.0", seed=sc.seed)
        (out / "run.json").write_text(json.dumps(run))
        rep = write_run_reports(out)
        return RunResult(out.name, out, rep.outcome.exit_code, rep.summary, rep.paths, rep)


def test_summary_counts_invalid_runs_names_kinds_and_links(tmp_path: Path) -> None:
    runs = FakeRuns()
    out = tmp_path / "soak"
    code = soak.run_soak(runs=4, seed_base=1, out=out, run=runs, resolver=known)
    assert code == 4  # the worst exit code: a harness error; an invalid run alone gives 1
    assert [s for s, _ in runs.calls] == [1, 2, 3, 4]
    assert runs.calls[1][1] == out / "seed-2"
    data = json.loads((out / "soak.json").read_text())
    assert (data["runs"], data["valid"], data["invalid"], data["error"]) == (4, 2, 1, 1)
    assert data["kinds"] == {"duplicate": 1, "lost-write": 1}  # offline is not invalidating
    (bad,) = data["invalid_runs"]
    assert bad["seed"] == 2 and bad["anomalies"] == {"duplicate": 1, "lost-write": 1}
    assert (out / bad["report"]).is_file() and bad["report"] == "seed-2/report.html"
    assert data["errors"][0]["seed"] == 3 and "did not start" in data["errors"][0]["error"]
    assert set(data["faults_by_family"]) == set(soak.FAULTS)
    assert sorted(data["faults_by_seed"]) == ["1", "2", "3", "4"]
    page = (out / "report.html").read_text()
    assert "1 of 4 runs invalid" in page and "seed-2/report.html" in page
    suites = ET.parse(out / "junit.xml").getroot().findall("testsuite")
    names = [s.get("name") for s in suites]
    assert len(set(names)) == 4 and "kchaos.soak.seed-2" in names
    assert sorted(p.name for p in (out / "scenarios").iterdir())[0] == "soak-1.yaml"


def test_all_valid_exits_zero(tmp_path: Path) -> None:
    def valid(sc: Any, *, out: Path, **_: Any) -> RunResult:
        make_run(out, results=VALID, name=sc.name)
        rep = write_run_reports(out)
        return RunResult(out.name, out, rep.outcome.exit_code, rep.summary, rep.paths, rep)

    assert soak.run_soak(runs=2, seed_base=9, out=tmp_path / "s", run=valid, resolver=known) == 0
    data = json.loads((tmp_path / "s" / "soak.json").read_text())
    assert (data["valid"], data["invalid"], data["kinds"]) == (2, 0, {})


def test_an_invalid_run_alone_exits_one(tmp_path: Path) -> None:
    def lossy(sc: Any, *, out: Path, **_: Any) -> RunResult:
        make_run(out, results=LOST, name=sc.name)
        rep = write_run_reports(out)
        return RunResult(out.name, out, rep.outcome.exit_code, rep.summary, rep.paths, rep)

    assert soak.run_soak(runs=1, seed_base=9, out=tmp_path / "s", run=lossy, resolver=known) == 1


def test_a_version_maven_does_not_have_is_refused_before_any_run(tmp_path: Path) -> None:
    runs = FakeRuns()
    with pytest.raises(ConfigError, match="cannot be built"):
        soak.run_soak(runs=1, kafka_version="3.9.9", out=tmp_path / "s", run=runs, resolver=known)
    assert runs.calls == [] and not (tmp_path / "s").exists()


def test_bad_input_is_one_line_and_exit_3(tmp_path: Path, capsys: Any) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["soak", "--kafka-version", "4.x", "--out", str(tmp_path / "a")])
    assert exc.value.code == 3
    assert "kafka" in capsys.readouterr().err.lower()
    assert not (tmp_path / "a").exists()
    with pytest.raises(SystemExit) as exc:
        cli.main(["soak", "--runs", "0"])
    assert exc.value.code == 3


@pytest.mark.parametrize("flag", [[], ["--prometheus"]])
def test_prometheus_reaches_every_run_of_the_soak(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, flag: list[str]
) -> None:
    from click.testing import CliRunner

    from kchaos.cli import batch
    from kchaos.harness.run import matrix, suite

    asked: list[object] = []
    runs = FakeRuns()

    def run(sc: Any, *, out: Path, **kw: Any) -> RunResult:
        asked.append(kw.get("prometheus"))
        return runs(sc, out=out)

    monkeypatch.setattr(suite, "run_scenario", run)
    monkeypatch.setattr(matrix, "maven_resolver", lambda: known)
    args = ["--runs", "2", "--seed-base", "1", "--out", str(tmp_path / "s"), *flag]
    result = CliRunner().invoke(batch.soak_cmd, args, standalone_mode=False)
    assert result.exception is None, result.output
    assert asked == [bool(flag)] * 2
