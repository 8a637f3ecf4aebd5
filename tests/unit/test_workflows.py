"""The GitHub Actions workflows pass actionlint (with shellcheck on their scripts).

Set-up (compose/setup.sh) builds actionlint into the build cache; a missing actionlint is
a failure, never a skip, so the check cannot silently stop running.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kchaos.harness.paths import cache_dir

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
