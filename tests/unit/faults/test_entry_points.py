"""Faults defined outside kchaos.faults arrive through the ``kchaos.faults`` entry points."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

from kchaos.faults.base import ENTRY_POINT_GROUP


def test_runner_faults_are_declared_entry_points() -> None:
    declared = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    assert declared["preferred-election"] == "kchaos.harness.run.moves:PreferredElection"
    assert declared["reassign"] == "kchaos.harness.run.moves:Reassign"


def test_registry_finds_them_without_a_prior_import() -> None:
    """A fresh interpreter: nothing imports kchaos.harness.run before asking the registry."""
    code = (
        "import sys\n"
        "from kchaos.faults import registry\n"
        "assert 'kchaos.harness.run.moves' not in sys.modules\n"
        "reg = registry()\n"
        "print(reg['preferred-election'].__module__, reg['reassign'].name)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["kchaos.harness.run.moves", "reassign"]
