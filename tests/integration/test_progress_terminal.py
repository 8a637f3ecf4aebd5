"""What a person sees in a terminal during long work: `kchaos soak --runs 1` (one short
real run, about 75 s) in a detached tmux session, its screen captured twice a second.

The unit tests (tests/unit/run/test_progress.py) drive the display with a fake clock and
a fake run; this test checks that a real run in a real terminal shows it: the transient
phase line with the batch's position, then the batch bar and the workload bar with
elapsed and remaining time, and under them the sends and the active fault (a freezer
pause of a broker) while the display keeps redrawing.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kchaos.harness.rundir.history import read_events

REPO_ROOT = Path(__file__).resolve().parents[2]
WIDTH = 160
pytestmark = [pytest.mark.docker]


def capture(tmux: list[str], session: str) -> str:
    done = subprocess.run(
        [*tmux, "capture-pane", "-p", "-t", session], capture_output=True, text=True, check=False
    )
    return done.stdout


def pane_environment() -> dict[str, str]:
    """This test's environment for the tmux server, without COLUMNS and LINES.

    pytest imports readline when it starts (its capture plugin does, on every platform),
    and GNU readline then sets COLUMNS and LINES to the screen size it found (80 and 24
    with no terminal) with setenv(): invisible in os.environ, but inherited by every child
    started with the default environment, so by the tmux server, the pane and kchaos. Rich
    prefers COLUMNS to the terminal's own size: the 160-column pane was drawn as 80
    columns, and the workload line, once a fault made it long, lost its end. Passing the
    environment explicitly drops them (and any a shell exported)."""
    return {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}


def test_soak_progress_on_a_terminal(docker_client: Any, tmp_path: Path) -> None:
    binary = shutil.which("tmux")
    if binary is None:
        pytest.fail("tmux is missing: run `make setup` (it installs tmux)", pytrace=False)
    session = f"kchaos-progress-{os.getpid()}"
    tmux = [binary, "-L", session]  # a tmux server of its own, with this test's environment
    out = tmp_path / "soak"
    exit_file = tmp_path / "exit"
    # seed 2, 25 s: one fault, a freezer pause of partition 0's leader from 5 s for 7 s
    cmd = [sys.executable, "-m", "kchaos.cli", "soak", "--runs", "1"]
    cmd += ["--seed-base", "2", "--duration", "25", "--out", str(out)]
    shell = f"{shlex.join(cmd)}; echo $? > {shlex.quote(str(exit_file))}; sleep 600"
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", session, "-x", str(WIDTH), "-y", "45"]
        + ["-c", str(REPO_ROOT), shell],
        check=True,
        env=pane_environment(),
    )
    frames: list[str] = []
    try:
        width = subprocess.run(
            [*tmux, "display-message", "-p", "-t", session, "#{pane_width}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        deadline = time.monotonic() + 400
        while not exit_file.exists() and time.monotonic() < deadline:
            frames.append(capture(tmux, session))
            time.sleep(0.5)
        frames.append(capture(tmux, session))
    finally:
        subprocess.run([*tmux, "kill-server"], check=False)
    (tmp_path / "frames.txt").write_text("\n=====\n".join(frames))  # to look at after a failure
    assert width == str(WIDTH)
    assert exit_file.exists(), "kchaos soak did not finish:\n" + frames[-1]
    code = int(exit_file.read_text().strip())
    assert code in (0, 1), frames[-1]  # 1 would be a finding (an invalid run), not a crash
    assert (out / "soak.json").is_file()
    lines = [line for frame in frames for line in frame.splitlines()]
    # kchaos drew at the pane's width: the rule that opens the run spans it
    assert any("[1/1] seed-2" in line and len(line) >= WIDTH - 2 for line in lines), (
        "kchaos did not draw at the pane's width"
    )
    # a phase in progress: its own elapsed time and the batch's position
    assert any(
        line.lstrip().startswith("cluster (3 brokers) 0:") and "run 1 of 1 (seed-2)" in line
        for line in lines
    ), "no live phase line"
    # the batch bar and the workload bar, the sends below them
    batch = [line for line in lines if line.startswith("runs") and "run 1 of 1," in line]
    assert batch and "elapsed" in batch[-1] and "left" in batch[-1]
    work = [line for line in lines if line.startswith("workload") and "left" in line]
    assert work and "elapsed" in work[-1]
    assert any(line.startswith("  sends ok") for line in lines), "no status line"
    # the active fault, by name and target, while it is in effect; the elapsed time goes on
    # (the broker's container is frozen, the harness is not)
    history = read_events(out / "seed-2" / "history.jsonl", strict=True)
    starts = [e for e in history if e.get("f") == "fault" and e.get("phase") == "start"]
    pause = next(e for e in starts if e["fault"] == "pause")
    shown = f"faults: pause({','.join(pause['targets'])})"
    during: set[str] = set()  # the workload's elapsed time in frames that show the fault
    for frame in frames:
        rows = frame.splitlines()
        if any(row.startswith("  sends ok") and shown in row for row in rows):
            for row in rows:
                if row.startswith("workload") and (m := re.search(r"(\d+:\d\d) elapsed", row)):
                    during.add(m.group(1))
    assert during, f"no frame shows {shown!r} under the workload bar"
    assert len(during) >= 4, f"the display stood still during the pause: {sorted(during)}"
    # at the end: the soak's verdict
    assert "runs invalid" in frames[-1]
