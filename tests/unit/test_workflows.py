"""The GitHub Actions workflows pass actionlint (with shellcheck on their scripts), and the
nightly workflow fans out as docs/ci.md says: its structure read from the YAML, and its
plan and merge jobs' scripts run here on fake shards (no Docker).

Set-up (compose/setup.sh) builds actionlint into the build cache; a missing actionlint is
a failure, never a skip, so the check cannot silently stop running.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML
from sample_runs import VALID, make_run

from kchaos.harness.paths import cache_dir
from kchaos.harness.run.orchestrate import RunResult
from kchaos.harness.run.shard import ShardSpec
from kchaos.harness.run.suite import run_suite
from kchaos.harness.scenario import library
from kchaos.reports.build import write_run_reports

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((REPO_ROOT / ".github" / "workflows").glob("*.yml"))


def _actionlint() -> str:
    cached = cache_dir() / "go" / "bin" / "actionlint"
    if cached.exists():
        return str(cached)
    on_path = shutil.which("actionlint")
    if on_path is None:
        pytest.fail(
            f"actionlint is missing (looked in {cached} and on PATH): run `make setup`, "
            f"which builds it (log: {cache_dir() / 'logs' / 'go-actionlint.log'})"
        )
    return on_path


def _lint(*files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_actionlint(), "-no-color", *map(str, files)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_there_are_workflows() -> None:
    assert WORKFLOWS, "no .github/workflows/*.yml"


def test_the_workflows_pass_actionlint() -> None:
    done = _lint(*WORKFLOWS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_shellcheck_is_there_for_actionlint() -> None:
    """actionlint checks `run:` scripts only when shellcheck is on PATH (set-up installs it)."""
    assert shutil.which("shellcheck"), "shellcheck is missing: run `make setup`"


BROKEN = """\
name: broken
on: push
jobs:
  one:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: echo $UNQUOTED_VAR
        shell: bash
      - uses: actions/cache@v4
        with:
          path: x
    needs: [missing-job]
"""


def test_a_broken_workflow_is_caught(tmp_path: Path) -> None:
    workflow = tmp_path / ".github" / "workflows" / "broken.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(BROKEN)
    done = _lint(workflow)
    assert done.returncode != 0
    found = done.stdout
    assert "missing-job" in found  # the job graph
    assert 'missing input "key"' in found  # the action's required inputs
    assert "SC2086" in found  # shellcheck on the run: script


# The nightly workflow's fan-out (docs/ci.md): a plan job, one shard job per K, a merge.

NIGHTLY = REPO_ROOT / ".github" / "workflows" / "nightly.yml"


def _nightly() -> dict[str, Any]:
    return YAML(typ="safe", pure=True).load(NIGHTLY.read_text())


def _step(job: dict[str, Any], *, id: str | None = None, name: str | None = None) -> dict[str, Any]:
    for step in job["steps"]:
        if (id is not None and step.get("id") == id) or (
            name is not None and step.get("name") == name
        ):
            return step
    raise AssertionError(f"no step with id {id!r} / name {name!r}")


def _default_shards(workflow: dict[str, Any]) -> int:
    """N when nobody asks for another: the number in SHARDS's expression."""
    found = re.fullmatch(r"\$\{\{ inputs\.shards \|\| '(\d+)' \}\}", workflow["env"]["SHARDS"])
    assert found, workflow["env"]["SHARDS"]
    return int(found.group(1))


def _shard_list(tmp_path: Path, shards: str, broker_config: str = "") -> tuple[int, str]:
    """Runs the plan job's list step as the runner would; its exit code and output."""
    script = _step(_nightly()["jobs"]["plan"], id="list")["run"]
    output = tmp_path / "github-output"
    output.write_text("")
    env = {"PATH": "/usr/bin:/bin", "SHARDS": shards, "BROKER_CONFIG": broker_config}
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        env={**env, "GITHUB_OUTPUT": str(output)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.returncode, output.read_text()


def test_the_shard_matrix_has_shards_entries(tmp_path: Path) -> None:
    workflow = _nightly()
    n = _default_shards(workflow)
    plan, shard = workflow["jobs"]["plan"], workflow["jobs"]["shard"]
    assert plan["outputs"]["shards"] == "${{ steps.list.outputs.shards }}"
    assert shard["needs"] == "plan"
    assert shard["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.plan.outputs.shards) }}"
    code, out = _shard_list(tmp_path, str(n))
    assert code == 0
    listed = json.loads(out.strip().removeprefix("shards="))
    assert listed == list(range(1, n + 1))
    assert len(listed) == n
    code, out = _shard_list(tmp_path, "7")
    assert json.loads(out.strip().removeprefix("shards=")) == list(range(1, 8))


def test_sre_validation_is_one_job_and_a_bad_n_stops_the_plan(tmp_path: Path) -> None:
    assert _shard_list(tmp_path, "4", broker_config="prod.properties") == (0, "shards=[1]\n")
    for bad in ("0", "", "four", "-1", "2/4"):
        code, out = _shard_list(tmp_path, bad)
        assert code != 0, bad
        assert out == "", bad


def test_shards_run_to_their_end_and_split_as_n_says() -> None:
    shard = _nightly()["jobs"]["shard"]
    assert shard["strategy"]["fail-fast"] is False
    step = _step(shard, id="suite")
    assert step["env"]["SHARD"] == "${{ matrix.shard }}"
    assert '--shard "$SHARD/$SHARDS"' in step["run"]
    assert '--out "$SHARD_OUT"' in step["run"]
    assert shard["env"]["SHARD_OUT"] == "runs/shard-${{ matrix.shard }}"


def test_every_shard_and_the_merge_read_the_plan_jobs_durations() -> None:
    jobs = _nightly()["jobs"]
    plan_out = jobs["plan"]["outputs"]["durations"]
    assert plan_out == "${{ steps.durations.outputs.durations }}"
    for job, name in (
        ("shard", "The durations file"),
        ("merge", "The durations file the shards split by"),
    ):
        step = _step(jobs[job], name=name)
        assert step["env"]["DURATIONS"] == "${{ needs.plan.outputs.durations }}"
        assert "> runs/durations.json" in step["run"]
    assert "--durations runs/durations.json" in _step(jobs["shard"], id="suite")["run"]
    assert "--durations runs/durations.json" in _step(jobs["merge"], id="merge")["run"]


def test_shard_artifacts_are_unique_and_the_merge_downloads_them() -> None:
    jobs = _nightly()["jobs"]
    upload = _step(jobs["shard"], name="Upload this shard's runs (the merge job joins them)")
    assert upload["if"] == "${{ !cancelled() }}"
    name = upload["with"]["name"]
    for part in ("${{ matrix.shard }}", "${{ github.run_number }}", "${{ github.run_attempt }}"):
        assert part in name
    assert upload["with"]["path"] == "${{ env.SHARD_OUT }}/"
    download = _step(jobs["merge"], name="Download every shard's runs")
    assert download["uses"].startswith("actions/download-artifact@v4")
    # the names of shard 3 in attempts 1 and 2 of run 57 match, another run's do not
    pattern = download["with"]["pattern"].replace("${{ github.run_number }}", "57")

    def named(shard: int, run: int, attempt: int) -> str:
        return (
            name.replace("${{ matrix.shard }}", str(shard))
            .replace("${{ github.run_number }}", str(run))
            .replace("${{ github.run_attempt }}", str(attempt))
        )

    assert fnmatch.fnmatchcase(named(3, 57, 1), pattern)
    assert fnmatch.fnmatchcase(named(3, 57, 2), pattern)
    assert not fnmatch.fnmatchcase(named(3, 58, 1), pattern)
    assert download["with"]["path"] == "shard-artifacts"
    arrange = _step(jobs["merge"], name="Each shard's newest attempt as runs/shard-K")
    assert arrange["run"] == ".ci/nightly-shards shard-artifacts runs"


def test_the_merge_job_joins_every_shard_whatever_their_verdicts() -> None:
    merge = _nightly()["jobs"]["merge"]
    assert "shard" in merge["needs"]
    assert merge["if"] == "${{ !cancelled() }}"
    step = _step(merge, id="merge")
    assert step["if"] == "${{ !cancelled() }}"
    assert "shards=(runs/shard-*)" in step["run"]
    assert '.venv/bin/kchaos merge "$OUT" "${shards[@]}"' in step["run"]
    later = merge["steps"][merge["steps"].index(step) + 1 :]
    assert later, "nothing published after the merge"
    for after in later:
        assert "!cancelled()" in after.get("if", ""), after.get("name", after.get("uses"))
    # no Docker, no images: set-up is the venv alone
    text = json.dumps(merge["steps"])
    assert "compose/setup.sh" not in text
    assert "docker" not in text.lower()
    assert "sudo" not in text


def _valid_run(sc: Any, *, out: Path, **_: Any) -> RunResult:
    """Stands in for run_scenario: a valid run directory with its reports."""
    make_run(out, results=VALID, name=sc.name)
    rep = write_run_reports(out)
    return RunResult(out.name, out, rep.outcome.exit_code, rep.summary, rep.paths, rep)


def _merge_job(work: Path, *steps: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Runs merge-job steps (by name) in ``work`` as the runner would, with the checkout's
    .ci and a .venv/bin/kchaos that is this checkout's."""
    merge = _nightly()["jobs"]["merge"]
    script = "\n".join(_step(merge, name=name)["run"] for name in steps)
    full = {**os.environ, "OUT": "runs/nightly", "BROKER_CONFIG": "", "SHARD_RESULT": "success"}
    return subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=work,
        env={**full, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The merge job's checkout, after its download step: two shards of a three-scenario
    suite as artifacts, shard 2 in two attempts, the first of them cut short."""
    work = tmp_path / "workspace"
    (work / ".venv" / "bin").mkdir(parents=True)
    # the venv's own command, as the job's `.venv/bin/kchaos` (PATH need not hold it)
    kchaos = Path(sys.executable).with_name("kchaos")
    assert kchaos.is_file(), f"no {kchaos}"
    (work / ".venv" / "bin" / "kchaos").symlink_to(kchaos)
    (work / ".ci").symlink_to(REPO_ROOT / ".ci")
    durations = work / "runs" / "durations.json"
    durations.parent.mkdir()
    durations.write_text('{"format": 1, "cells": {}}\n')  # the plan job's first night
    files = [library.resolve(n) for n in ("smoke", "txn-smoke", "leader-cut-from-followers")]
    for k, attempt in ((1, 1), (2, 1), (2, 2)):
        out = work / "shard-artifacts" / f"kchaos-shard-{k}-57-{attempt}"
        spec = ShardSpec(k, 2)
        kw: dict[str, Any] = {"kafka_version": "4.4.0", "durations": durations}
        assert run_suite("nightly", files, out=out, shard=spec, run=_valid_run, **kw) == 0
    cut = work / "shard-artifacts" / "kchaos-shard-2-57-1" / "shard.json"
    record = json.loads(cut.read_text())
    cut.write_text(json.dumps({**record, "complete": False, "done": {}}))
    return work


ARRANGE = "Each shard's newest attempt as runs/shard-K"
MERGE = "Merge the shards"


def test_the_merge_job_joins_the_newest_attempts_as_one_suite(workspace: Path) -> None:
    done = _merge_job(workspace, ARRANGE, MERGE, SHARD_RESULT="failure")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((workspace / "runs" / "nightly" / "summary.json").read_text())
    assert (summary["title"], summary["passed"], summary["total"]) == ("kchaos suite nightly", 3, 3)
    assert summary["failures"] == []
    assert [r["scenario"] for r in summary["runs"]] == [
        "smoke",
        "txn-smoke",
        "leader-cut-from-followers",
    ]
    # what the shards measured is folded into the file the next night's plan hands out
    cells = json.loads((workspace / "runs" / "durations.json").read_text())["cells"]
    assert sorted(cells) == [
        "leader-cut-from-followers@4.4.0",
        "smoke@4.4.0",
        "txn-smoke@4.4.0",
    ]
    assert all(c["runs"] == 1 for c in cells.values())


def test_a_shard_that_never_uploaded_fails_the_merge_job(workspace: Path) -> None:
    for attempt in (1, 2):
        shutil.rmtree(workspace / "shard-artifacts" / f"kchaos-shard-2-57-{attempt}")
    done = _merge_job(workspace, ARRANGE, MERGE)
    assert done.returncode == 4, done.stdout + done.stderr
    summary = json.loads((workspace / "runs" / "nightly" / "summary.json").read_text())
    assert summary["total"] == 3
    assert any("shard 2/2 missing" in f["error"] for f in summary["failures"])


def test_no_shard_at_all_fails_the_merge_job(workspace: Path) -> None:
    shutil.rmtree(workspace / "shard-artifacts")
    arranged = _merge_job(workspace, ARRANGE)
    assert arranged.returncode == 1
    done = _merge_job(workspace, MERGE)
    assert done.returncode == 4
    assert "no shard uploaded its runs" in done.stdout


@pytest.mark.parametrize(("result", "code"), [("success", 0), ("failure", 1)])
def test_sre_validation_is_its_one_jobs_page(workspace: Path, result: str, code: int) -> None:
    # one unsharded job: its directory becomes the night's, its verdict the merge's
    shutil.rmtree(workspace / "shard-artifacts" / "kchaos-shard-2-57-1")
    shutil.rmtree(workspace / "shard-artifacts" / "kchaos-shard-2-57-2")
    assert _merge_job(workspace, ARRANGE).returncode == 0
    done = _merge_job(workspace, MERGE, BROKER_CONFIG="prod.properties", SHARD_RESULT=result)
    assert done.returncode == code, done.stdout + done.stderr
    assert (workspace / "runs" / "nightly" / "shard.json").is_file()
    assert not (workspace / "runs" / "shard-1").exists()
