"""A regular (not editable) install works from any directory.

``pip install .`` into a fresh virtual environment, then ``kchaos scenarios`` and ``kchaos
run smoke`` from an empty directory: the scenarios, schemas and image build contexts are
found as package data, and the run lands under the current directory, not the package.
The smoke run is also the suite's end-to-end check of `kchaos run smoke` (every file of
the run directory, the schedule, the verdict, the independent reader). About 3 minutes
(pip resolves the dependencies from the registry, then one smoke run).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]  # the source tree being installed

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_pip_install_then_run_smoke_from_an_empty_directory(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", str(REPO_ROOT)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert pip.returncode == 0, pip.stderr[-3000:]
    site = next((venv / "lib").glob("python3*/site-packages"))
    installed = {p.name for p in site.iterdir()}
    assert "kchaos" in installed
    assert not installed & {"harness", "faults", "workloads", "reports", "compose", "cli", "bench"}

    work = tmp_path / "empty"
    work.mkdir()
    kchaos = str(venv / "bin" / "kchaos")
    listed = subprocess.run(
        [kchaos, "scenarios"], cwd=work, capture_output=True, text=True, timeout=120
    )
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "smoke" in listed.stdout

    run = subprocess.run(
        [kchaos, "run", "smoke", "--quiet"], cwd=work, capture_output=True, text=True, timeout=900
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    runs = list((work / "runs").iterdir())
    assert len(runs) == 1, runs
    out = runs[0]
    for name in (
        "run.json",
        "history.jsonl",
        "results.json",
        "report.html",
        "junit.xml",
        "summary.json",
    ):
        assert (out / name).is_file(), name
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "completed" and record["end"]
    assert record["image"]["kafka"].endswith(record["kafka_version"])
    assert [f["fault"] for f in record["schedule"]] == ["pause", "kill"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdict"] == "valid" and summary["expected"] is True
    assert summary["sends"]["ok"] > 1000
    events = [json.loads(line) for line in (out / "history.jsonl").read_text().splitlines()]
    faults = [(e["fault"], e["phase"]) for e in events if e["f"] == "fault"]
    assert ("pause", "start") in faults and ("kill", "stop") in faults
    assert any(e["f"] == "drain-end" for e in events)
    assert "as expected" in run.stdout
    # Kafka's own console consumer read the topics again and agrees with the drain
    reread = (out / "reread.jsonl").read_text().splitlines()
    drained = sum(len(e["records"]) for e in events if e["f"] == "drain")
    assert len(reread) - 1 == drained > 1000
    results = json.loads((out / "results.json").read_text())
    assert results["valid"] is True
    assert results["stats"]["independent_reader"] == {"disagreements": 0}
    assert not results["harness_errors"]
    assert not list(site.joinpath("kchaos").rglob("history.jsonl"))  # nothing in the package
