"""`kchaos replay` and `kchaos shrink` on real brokers.

One stored failing run is shared: the negative control `unsafe-acks1-unclean-election`,
shortened to a 30 s workload, with two harmless faults added before the decisive ones (a
50 ms latency toxic on follower broker-3, a 2 s SIGSTOP of follower broker-2). Then:

* replay: the replay runs the same schedule (run.json) and its history's fault lines
  match the original's (id, fault, phase, targets; each fault's start within
  TOLERANCE_S). Stop lines are matched by fault id, not by time or order: the nemesis
  writes a stop line when the stop's action has finished, and the kill's stop restarts
  broker-1 and waits for it (the isolate's stop, 3 s later, then works on a broker
  still starting); one CI run had a stop line 3.7 s later than its original, which
  measures the restart, not the schedule.
* shrink with a budget of 2 runs: ddmin's first split tries the two harmless faults alone
  (clean), then the isolation and the kill alone (lost writes), and stops there; the
  shrunk scenario lacks the harmless faults, validates, and was itself run and failed.

Four runs of about a minute each: about 4 to 5 minutes on 2 cores.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
KCHAOS = [sys.executable, "-m", "kchaos.cli"]
TOLERANCE_S = 3.0  # a fault's start, replay vs original (measured: at most 0.5 s apart)

pytestmark = [pytest.mark.docker, pytest.mark.slow]

NEMESIS = """
nemesis:
  steps:
    - fault: latency          # harmless: a short latency toxic on a follower
      at: 2s
      for: 3s
      target: broker-3
      params: {latency_ms: 50}
    - fault: pause            # harmless: a 2 s pause of the other follower
      at: 4s
      for: 2s
      target: broker-2
    - fault: isolate          # decisive: the leader cut off, keeps acknowledging acks=1
      at: 10s
      for: 12s
      target: broker-1
    - fault: kill             # decisive: the leader killed; another replica takes over
      at: 14s
      for: 5s
      target: broker-1
checks: {}
expect:
  valid: false
  anomalies: [lost-write]
  allowed: [offline, unseen, inconsistent-offset, duplicate]
"""


def kchaos(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KCHAOS, *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout
    )


def noisy_scenario(directory: Path) -> Path:
    library = REPO_ROOT / "harness" / "scenarios" / "unsafe-acks1-unclean-election.yaml"
    head = library.read_text().split("\nnemesis:")[0]
    head = head.replace("duration: 60s", "duration: 30s")
    head = head.replace("name: unsafe-acks1-unclean-election", "name: unsafe-acks1-noisy")
    path = directory / "unsafe-acks1-noisy.yaml"
    path.write_text(head + NEMESIS)
    return path


def fault_lines(run_dir: Path) -> list[dict]:
    lines = (run_dir / "history.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines if '"fault"' in line]
    return [e for e in events if e["f"] == "fault" and e["id"].startswith("f-")]


def by_step(lines: list[dict]) -> dict[tuple[str, str], dict]:
    """Fault lines keyed by (fault id, phase): stop lines of overlapping faults may be
    written in either order."""
    return {(e["id"], e["phase"]): e for e in lines}


@pytest.fixture(scope="module")
def noisy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("noisy")
    out = directory / "run"
    proc = kchaos("run", str(noisy_scenario(directory)), "--out", str(out), "--quiet")
    # a negative control: exit 0 means lost writes were found, as expected
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


def test_replay_runs_the_same_schedule(noisy_run: Path, tmp_path: Path):
    out = tmp_path / "replay"
    proc = kchaos("replay", str(noisy_run), "--out", str(out), "--quiet")
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    original = json.loads((noisy_run / "run.json").read_text())
    replay = json.loads((out / "run.json").read_text())
    assert replay["replay_of"]["run_id"] == original["run_id"]
    assert replay["replay_of"]["run_dir"] == str(noisy_run.resolve())
    assert replay["schedule"] == original["schedule"]
    assert replay["kafka_version"] == original["kafka_version"]
    assert replay["image"] == original["image"]
    assert replay["scenario"]["seed"] == original["scenario"]["seed"]
    before, after = by_step(fault_lines(noisy_run)), by_step(fault_lines(out))
    assert set(after) == set(before)
    for step, b in before.items():
        a = after[step]
        assert (a["fault"], a["targets"]) == (b["fault"], b["targets"]), step
        if step[1] == "start":
            assert abs(a["time"] - b["time"]) / 1e9 < TOLERANCE_S, (a, b)
    assert sum(1 for _, phase in before if phase == "start") == NEMESIS.count("- fault:")


def test_shrink_drops_the_harmless_faults(noisy_run: Path, tmp_path: Path):
    out = tmp_path / "shrink"
    proc = kchaos("shrink", str(noisy_run), "--budget", "2", "--out", str(out), timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((out / "shrink.json").read_text())
    assert result["runs"] <= 2
    shrunk = [s["fault"] for s in result["shrunk_steps"]]
    assert "latency" not in shrunk and "pause" not in shrunk
    assert shrunk and set(shrunk) <= {"isolate", "kill"}
    # the shrunk schedule was itself run, and lost acknowledged writes
    last = [a for a in result["attempts"] if a["reproduced"]][-1]
    assert last["steps"] == result["shrunk_steps"]
    assert last["anomalies"].get("lost-write", 0) > 0
    check = kchaos("validate", str(out / "shrunk.yaml"))
    assert check.returncode == 0, check.stderr
    page = (out / "report.html").read_text()
    assert "Attempts" in page and "attempt-01" in page
