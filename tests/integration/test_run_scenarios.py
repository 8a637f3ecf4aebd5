"""End to end on real brokers: `kchaos run` of library scenarios, exit code by verdict.

The smoke scenario's end-to-end checks run in tests/integration/test_install.py, on the
kchaos installed there with `pip install .` (one smoke run serves both).

Each run starts its own cluster (the scenario decides its shape), so these tests do not
use the shared cluster fixture. Together they take about 5 minutes on 2 cores.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]  # the source tree, not the package


pytestmark = [pytest.mark.docker, pytest.mark.slow]
KCHAOS = [sys.executable, "-m", "kchaos.harness.cli"]


def kchaos_run(out: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    cmd = [*KCHAOS, "run", *args, "--out", str(out), "--quiet"]
    return subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout)


def history(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]


def test_power_loss_negative_control_is_detected(tmp_path: Path):
    # Shortened: the power cut 10 s in loses what was written since the start (the
    # kernel writes dirty pages back only after about 30 s).
    out = tmp_path / "power"
    proc = kchaos_run(
        out,
        "whole-cluster-power-loss",
        "--set",
        "workload.duration=25",
        "--set",
        "nemesis.steps.0.at=10",
        "--set",
        "nemesis.steps.0.duration=3s",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdict"] == "invalid"
    assert summary["anomalies"].get("lost-write", 0) > 0
    results = json.loads((out / "results.json").read_text())
    assert results["valid"] is False
