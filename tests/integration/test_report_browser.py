"""report.html in a real browser (Debian's headless Chromium): plots render, no script error.

Not marked docker: it needs no cluster, only Chromium, and FAILS when Chromium is missing
(`make setup` installs it; by hand: apt-get install -y chromium). The screenshots are
kept in test-output/.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from sample_runs import LOST, VALID, make_run

from kchaos.reports.build import write_run_reports
from kchaos.reports.suite import write_suite_reports

REPO_ROOT = Path(__file__).resolve().parents[2]  # the source tree, not the package

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
    "--virtual-time-budget=15000",
    "--window-size=1280,2600",
]
OUTPUT = REPO_ROOT / "test-output"


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("Chromium is missing: run `make setup` or `apt-get install -y chromium`")


def browse(page: Path, profile: Path, *args: str) -> tuple[str, str]:
    cmd = [chromium(), *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return proc.stdout, proc.stderr


def console_errors(stderr: str) -> list[str]:
    lines = [line for line in stderr.splitlines() if ":CONSOLE" in line]
    return [line for line in lines if re.search(r"error|uncaught|refused|failed", line, re.I)]


def check_page(page: Path, tmp_path: Path, shot: str, plots: int) -> None:
    dom, stderr = browse(page, tmp_path / f"profile-{shot}", "--dump-dom")
    assert console_errors(stderr) == [], stderr[-3000:]
    # Plotly turns each figure div into a js-plotly-plot holding its SVG.
    rendered = re.findall(r"<div[^>]*class=\"[^\"]*\bjs-plotly-plot\b[^>]*>", dom)
    assert len(rendered) == plots, "not every plot was rendered"
    assert dom.count('class="main-svg"') >= plots
    OUTPUT.mkdir(exist_ok=True)
    target = OUTPUT / shot
    _, stderr = browse(page, tmp_path / f"profile-{shot}-2", f"--screenshot={target}")
    assert target.is_file() and target.stat().st_size > 20_000, stderr[-2000:]


def test_run_report_renders_in_chromium(tmp_path: Path):
    run = make_run(tmp_path / "run-lost", results=LOST)
    rep = write_run_reports(run)
    check_page(Path(rep.paths["html"]), tmp_path, "report-run.png", plots=5)


def test_suite_report_renders_in_chromium(tmp_path: Path):
    reps = [
        write_run_reports(make_run(tmp_path / "a", results=VALID)),
        write_run_reports(make_run(tmp_path / "b", results=LOST, name="other")),
    ]
    paths = write_suite_reports(tmp_path / "suite", reps, title="browser test")
    check_page(Path(paths["html"]), tmp_path, "report-suite.png", plots=1)


def test_a_script_error_would_be_caught(tmp_path: Path):
    # The check above must be able to fail: a page with a broken script is flagged.
    page = tmp_path / "broken.html"
    page.write_text("<html><body><script>null.boom();</script></body></html>")
    _, stderr = browse(page, tmp_path / "profile-broken", "--dump-dom")
    assert console_errors(stderr), stderr[-2000:]
