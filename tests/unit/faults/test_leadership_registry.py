"""The leadership operations are a family of kchaos.faults, registered like the others.

They used to live in the runner and reach the registry through an entry point (a lower
layer loading an upper one); now the registry imports their module directly.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from kchaos.faults import registry
from kchaos.faults.leadership import PreferredElection, Reassign

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_the_registry_holds_the_leadership_family() -> None:
    reg = registry()
    assert reg["preferred-election"] is PreferredElection
    assert reg["reassign"] is Reassign
    assert {reg[n].family for n in ("preferred-election", "reassign")} == {"leadership"}


def test_the_registry_loads_nothing_above_the_faults() -> None:
    """A fresh interpreter: asking the registry imports no runner or scenario module."""
    code = (
        "import sys\n"
        "from kchaos.faults import registry\n"
        "reg = registry()\n"
        "print(reg['preferred-election'].__module__, reg['reassign'].name)\n"
        "above = (['kchaos', 'harness', 'run'], ['kchaos', 'harness', 'scenario'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[:3] in above))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, loaded = out.stdout.splitlines()
    assert first.split() == ["kchaos.faults.leadership", "reassign"]
    assert loaded == "[]"


def test_no_fault_arrives_through_an_entry_point() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert "kchaos.faults" not in project.get("entry-points", {})
