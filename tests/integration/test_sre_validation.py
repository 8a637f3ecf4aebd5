"""SRE validation on real brokers: a safe and an unsafe broker config through a
whole-cluster power loss and a leader cut off from its followers; the go/no-go page in
headless Chromium.

safe: min.insync.replicas=2, unclean election off, a flush per message.
unsafe: min.insync.replicas=1, unclean election on (Kafka's default: no flush).
Both scenarios carry their own settings (the power-loss scenario's topic has min ISR 2,
the leader cut's topic min ISR 2 and unclean off): the validation must replace them with
the config's, so the unsafe config is red in both and the safe one green in both. Four
runs of 25-30 s workloads: 6 min 14 s on 2 cores (2026-11-23).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_report_browser import OUTPUT, browse, console_errors

from kchaos.harness.scenario import library

REPO_ROOT = Path(__file__).resolve().parents[2]
KCHAOS = [sys.executable, "-m", "kchaos.cli"]

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SAFE = (
    "min.insync.replicas=2\nunclean.leader.election.enable=false\nlog.flush.interval.messages=1\n"
)
UNSAFE = "# relaxed for throughput\nmin.insync.replicas=1\nunclean.leader.election.enable=true\n"


def scenarios(tmp_path: Path) -> Path:
    src = tmp_path / "scenarios"
    src.mkdir()
    power = library.resolve("whole-cluster-power-loss").read_text()
    # shortened: the cut 10 s in loses what the kernel has not written back yet (dirty
    # pages go to disk after about 30 s). The unsafe cell of this scenario is also the
    # suite's power-loss negative control: lost writes must be found.
    for old, new in (
        ("duration: 60s", "duration: 25s"),
        ("at: 25s", "at: 10s"),
        ("for: 5s", "for: 3s"),
    ):
        assert old in power
        power = power.replace(old, new, 1)
    (src / "power.yaml").write_text(power)
    leader = library.resolve("leader-cut-from-followers").read_text()
    (src / "leader.yaml").write_text(leader)
    return src


def test_the_unsafe_config_is_red_and_the_safe_one_green(tmp_path: Path) -> None:
    (tmp_path / "safe.properties").write_text(SAFE)
    (tmp_path / "unsafe.properties").write_text(UNSAFE)
    out = tmp_path / "out"
    cmd = [*KCHAOS, "suite", str(scenarios(tmp_path)), "--out", str(out)]
    cmd += ["--broker-config", str(tmp_path / "safe.properties")]
    cmd += ["--broker-config", str(tmp_path / "unsafe.properties")]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=1500)
    log = proc.stdout[-4000:] + proc.stderr[-4000:]
    assert proc.returncode == 1, log  # red cells: runs that did not end as expected
    check_output(out, tmp_path, log)


def check_output(out: Path, tmp_path: Path, log: str = "") -> None:
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failures"] == [], log
    cells = {(r["scenario"], r["sre_config"]): r for r in summary["runs"]}
    assert len(cells) == 4, log
    print({k: (r["verdict"], r["anomalies"], r["sends"]) for k, r in cells.items()})
    for name in ("whole-cluster-power-loss", "leader-cut-from-followers"):
        safe, unsafe = cells[(name, "safe")], cells[(name, "unsafe")]
        # GO: no lost or invalid data (an election after the total power loss is reported,
        # and makes the checker's own verdict "invalid" with unclean election disabled)
        assert safe["expected"] is True, (name, safe["anomalies"], safe["reasons"])
        assert safe["anomalies"].get("lost-write", 0) == 0, (name, safe["anomalies"])
        assert unsafe["verdict"] == "invalid" and unsafe["expected"] is False, (
            name,
            unsafe["anomalies"],
        )
        assert unsafe["anomalies"].get("lost-write", 0) > 0, (name, unsafe["anomalies"])
        assert safe["sends"]["ok"] > 500 and unsafe["sends"]["ok"] > 500
    # the scenario's own topic settings were replaced, and run.json says so
    run = json.loads((out / "leader-cut-from-followers" / "unsafe" / "run.json").read_text())
    assert run["sre"]["label"] == "unsafe" and run["sre"]["profile"] == "safe"
    over = {(o["where"], o["key"]): o for o in run["sre"]["overridden"]}
    assert over[("topic alone", "min.insync.replicas")]["now"] == "1"
    assert over[("topic alone", "unclean.leader.election.enable")]["now"] == "true"
    assert run["scenario"]["topics"][0]["configs"] == {}
    assert run["scenario"]["cluster"]["server_properties"]["min.insync.replicas"] == "1"
    # the page in a real browser: the grid, two green and two red cells, no script error
    page = out / "report.html"
    dom, stderr = browse(page, tmp_path / "profile", "--dump-dom")
    assert console_errors(stderr) == [], stderr[-3000:]
    grid = dom[dom.index('id="go-no-go"') :].split("</table>")[0]
    assert len(re.findall(r'class="ok"', grid)) == 2 and len(re.findall(r'class="bad"', grid)) == 2
    assert "NO-GO: 2/4 cells go" in dom
    assert "leader-cut-from-followers/unsafe/report.html" in grid
    OUTPUT.mkdir(exist_ok=True)
    shot = OUTPUT / "report-sre.png"
    _, stderr = browse(page, tmp_path / "profile-2", f"--screenshot={shot}")
    assert shot.is_file() and shot.stat().st_size > 20_000, stderr[-2000:]
