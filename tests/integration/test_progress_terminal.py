"""What a person sees in a terminal during long work: `kchaos soak --runs 1` (one short
real run, about 75 s) in a detached tmux session, its screen captured twice a second.

The unit tests (tests/unit/run/test_progress.py) drive the display with a fake clock and
a fake run; this test checks that a real run in a real terminal shows it: the transient
phase line with the batch's position, then the batch bar and the workload bar with
elapsed and remaining time (the active fault: see the note at the end of the test).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.docker]


def capture(tmux: list[str], session: str) -> str:
    done = subprocess.run(
        [*tmux, "capture-pane", "-p", "-t", session], capture_output=True, text=True, check=False
    )
    return done.stdout


def test_soak_progress_on_a_terminal(docker_client: Any, tmp_path: Path) -> None:
    binary = shutil.which("tmux")
    if binary is None:
        pytest.fail("tmux is missing: run `make setup` (it installs tmux)", pytrace=False)
    session = f"kchaos-progress-{os.getpid()}"
    tmux = [binary, "-L", session]  # a tmux server of its own, with this test's environment
    out = tmp_path / "soak"
    exit_file = tmp_path / "exit"
    # seed 2, 25 s: one fault, a pause of partition 0's leader from 5 s for 7 s
    cmd = [sys.executable, "-m", "kchaos.harness.cli", "soak", "--runs", "1"]
    cmd += ["--seed-base", "2", "--duration", "25", "--out", str(out)]
    shell = f"{shlex.join(cmd)}; echo $? > {shlex.quote(str(exit_file))}; sleep 600"
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", session, "-x", "160", "-y", "45", "-c", str(REPO_ROOT)]
        + [shell],
        check=True,
    )
    frames: list[str] = []
    try:
        deadline = time.monotonic() + 400
        while not exit_file.exists() and time.monotonic() < deadline:
            frames.append(capture(tmux, session))
            time.sleep(0.5)
        frames.append(capture(tmux, session))
    finally:
        subprocess.run([*tmux, "kill-server"], check=False)
    (tmp_path / "frames.txt").write_text("\n=====\n".join(frames))  # to look at after a failure
    assert exit_file.exists(), "kchaos soak did not finish:\n" + frames[-1]
    code = int(exit_file.read_text().strip())
    assert code in (0, 1), frames[-1]  # 1 would be a finding (an invalid run), not a crash
    assert (out / "soak.json").is_file()
    lines = [line for frame in frames for line in frame.splitlines()]
    # a phase in progress: its own elapsed time and the batch's position
    assert any(
        line.lstrip().startswith("cluster (3 brokers) 0:") and "run 1 of 1 (seed-2)" in line
        for line in lines
    ), "no live phase line"
    # the batch bar and the workload bar
    batch = [line for line in lines if line.startswith("runs") and "run 1 of 1," in line]
    assert batch and "elapsed" in batch[-1] and "left" in batch[-1]
    work = [line for line in lines if line.startswith("workload") and "left" in line]
    assert work and "sends ok" in work[-1]
    # Not asserted yet: the active fault on the workload line. In both real runs of this
    # test (2026-11-23) the whole live display stopped redrawing while the freezer pause
    # was in effect (the same frame from 0:05 to 0:13 of the workload) and so never showed
    # it, although without a terminal the same seed's status line names the pause. The
    # unit tests check that the line shows active faults; the stall is to be explained.
    # at the end: the soak's verdict
    assert "runs invalid" in frames[-1]
