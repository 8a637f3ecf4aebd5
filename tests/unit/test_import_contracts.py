"""The layers of docs/architecture.md, enforced by import-linter (``.importlinter``).

The first test checks the real tree. The others copy the tree and the contracts into a
temporary folder, add one import that breaks a contract, and check that ``lint-imports``
catches it there, so a contract that silently matches nothing cannot pass unnoticed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIG = REPO_ROOT / ".importlinter"
FOLDERS = ("harness", "faults", "workloads", "reports", "cli", "bench")


def _lint_imports() -> str:
    found = Path(sys.executable).parent / "lint-imports"
    if found.exists():
        return str(found)
    on_path = shutil.which("lint-imports")
    if on_path is None:
        pytest.fail("lint-imports is missing: install the dev extras (`make setup`)")
    return on_path


def _run(cwd: Path, extra_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if extra_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(extra_path), env.get("PYTHONPATH")]))
    return subprocess.run(
        [_lint_imports(), "--config", str(cwd / ".importlinter"), "--no-cache"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_import_contracts_hold() -> None:
    done = _run(REPO_ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout
    stale = [line for line in done.stdout.splitlines() if "No matches for ignored import" in line]
    if stale:
        warnings.warn(
            "stale ignore_imports entries in .importlinter (delete them): " + "; ".join(stale),
            stacklevel=1,
        )


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """The product packages as ``kchaos.*`` under tmp, found before the editable install."""
    src = tmp_path / "src" / "kchaos"
    for folder in FOLDERS:
        shutil.copytree(
            REPO_ROOT / folder,
            src / folder,
            ignore=shutil.ignore_patterns("__pycache__", "*.yaml", "*.json"),
        )
    shutil.copy2(CONFIG, tmp_path / ".importlinter")
    return tmp_path


def _lint_copy(tree: Path) -> subprocess.CompletedProcess[str]:
    return _run(tree, extra_path=tree / "src")


def test_the_copy_passes_unchanged(tree_copy: Path) -> None:
    """The copy really is what lint-imports reads (else the next tests prove nothing)."""
    (tree_copy / "src" / "kchaos" / "harness" / "checker" / "marker_only_in_copy.py").write_text(
        "from kchaos.harness.errors import KchaosError\n"
    )
    done = _lint_copy(tree_copy)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("module", "source", "contract"),
    [
        # a checker reaching up into the runner
        ("harness/checker/wrong.py", "from kchaos.harness.run import orchestrate\n", "Layers"),
        # the foundation reaching up into the cluster (appended to an existing module)
        ("harness/labels.py", "import kchaos.harness.cluster\n", "Layers"),
        # two siblings of one layer
        ("faults/wrong.py", "import kchaos.workloads.producer\n", "Layers"),
        # a checker talking to Docker
        ("harness/checker/wrong.py", "import docker\n", "read files only"),
        # analysis reaching a Kafka client through the workload package
        ("harness/analysis/wrong.py", "import kchaos.workloads.clients\n", "read files only"),
        # a command outside kchaos.cli (click anywhere else), in a product package and in
        # the benchmarks
        ("harness/run/wrong.py", "import click\n", "no other package imports click"),
        ("bench/wrong.py", "from click import echo\n", "no other package imports click"),
        # a product package reaching up into the commands or the benchmarks
        ("harness/run/wrong.py", "import kchaos.cli.main\n", "Layers"),
        ("faults/wrong.py", "import kchaos.bench.faults\n", "Layers"),
        # the benchmarks reaching up into the commands
        ("bench/wrong.py", "import kchaos.cli.bench\n", "Layers"),
    ],
)
def test_a_wrong_import_is_caught(tree_copy: Path, module: str, source: str, contract: str) -> None:
    with (tree_copy / "src" / "kchaos" / module).open("a") as fh:
        fh.write("\n" + source)
    done = _lint_copy(tree_copy)
    assert done.returncode != 0, done.stdout
    broken = [line for line in done.stdout.splitlines() if " BROKEN" in line]
    assert any(contract in line for line in broken), done.stdout
    wrong = module.removesuffix(".py").replace("/", ".")
    assert f"kchaos.{wrong}" in done.stdout
