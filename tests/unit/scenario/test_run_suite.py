"""kchaos suite with the runs replaced by hand-made run directories."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from sample_runs import LOST, VALID, make_run

from kchaos.harness.errors import ClusterError, ConfigError
from kchaos.harness.run import suite
from kchaos.harness.run.orchestrate import RunResult
from kchaos.harness.scenario import library
from kchaos.reports.build import write_run_reports

seen_expect: dict[str, Any] = {}


def fake_run(sc: Any, *, out: Path, **_: Any) -> RunResult:
    seen_expect[sc.name] = sc.expect
    if sc.name == "broken":
        raise ClusterError("cluster did not start")
    if sc.name == "buggy":
        raise ValueError("a harness bug")
    make_run(out, results=VALID if sc.name == "smoke" else LOST, name=sc.name)
    rep = write_run_reports(out)
    return RunResult(out.name, out, rep.outcome.exit_code, rep.summary, rep.paths, rep)


def test_suite_of_a_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setattr(suite, "run_scenario", fake_run)
    src = tmp_path / "scenarios"
    src.mkdir()
    smoke = library.resolve("smoke").read_text()
    (src / "a.yaml").write_text(smoke)
    (src / "b.yaml").write_text(smoke.replace("name: smoke", "name: broken"))
    (src / "c.yaml").write_text(smoke.replace("name: smoke", "name: lossy"))
    (src / "d.yaml").write_text(smoke.replace("name: smoke", "name: buggy"))
    out = tmp_path / "out"
    code = suite.run_suite("mine", library.suite_members(str(src)), out=out)
    assert code == 4  # the worst: a scenario that could not run
    assert seen_expect["smoke"].valid is True and seen_expect["smoke"].anomalies == ()
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["passed"], summary["total"]) == (1, 4)
    assert [f["scenario"] for f in summary["failures"]] == ["broken", "buggy"]
    assert "ValueError: a harness bug" in summary["failures"][1]["error"]
    page = (out / "report.html").read_text()
    assert "smoke/report.html" in page
    root = ET.parse(out / "junit.xml").getroot()
    assert {s.get("name") for s in root.findall("testsuite")} == {
        "kchaos.smoke",
        "kchaos.lossy",
        "kchaos.broken",
        "kchaos.buggy",
    }


def test_suite_validates_every_file_before_running(monkeypatch, tmp_path: Path):
    calls: list[str] = []
    monkeypatch.setattr(suite, "run_scenario", lambda sc, **kw: calls.append(sc.name))
    src = tmp_path / "s"
    src.mkdir()
    (src / "a.yaml").write_text(library.resolve("smoke").read_text())
    (src / "z.yaml").write_text("name: z\n")
    with pytest.raises(ConfigError):
        suite.run_suite("s", library.suite_members(str(src)), out=tmp_path / "o")
    assert calls == []


@pytest.mark.parametrize("flag", [[], ["--prometheus"]])
def test_prometheus_reaches_every_run_of_the_suite(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, flag: list[str]
) -> None:
    from click.testing import CliRunner

    from kchaos.cli.scenario import suite_cmd

    asked: list[object] = []

    def run(sc: Any, *, out: Path, **kw: Any) -> RunResult:
        asked.append(kw.get("prometheus"))
        return fake_run(sc, out=out)

    monkeypatch.setattr(suite, "run_scenario", run)
    src = tmp_path / "s"
    src.mkdir()
    smoke = library.resolve("smoke").read_text()
    (src / "a.yaml").write_text(smoke)
    (src / "b.yaml").write_text(smoke.replace("name: smoke", "name: lossy"))
    args = [str(src), "--out", str(tmp_path / "o"), *flag]
    result = CliRunner().invoke(suite_cmd, args, standalone_mode=False)
    assert result.exception is None, result.output
    assert asked == [bool(flag)] * 2  # one server per run, or none: never left unsaid
