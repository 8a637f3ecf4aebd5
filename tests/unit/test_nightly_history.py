""".ci/nightly-history: what the nightly workflow carries from night to night."""

from __future__ import annotations

import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "nightly-history"


def _suite(root: Path) -> Path:
    suite = root / "suite"
    run = suite / "scenario-a"
    (run / "history.parquet" / "f=send").mkdir(parents=True)
    (run / "history.parquet" / "f=send" / "part-0.parquet").write_bytes(b"PAR1")
    (run / "run.json").write_text("{}")
    (run / "results.json").write_text('{"valid": true}')
    (run / "history.jsonl").write_text("{}\n")
    (run / "report.html").write_text("<html/>")
    (suite / "scenario-b").mkdir()  # no Parquet copy: not carried
    (suite / "summary.json").write_text("{}")
    return suite


def _add(suite: Path, history: Path, night: str, *keep: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), str(suite), str(history), night, *keep],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_night_carries_what_analyze_needs_and_nothing_else(tmp_path: Path) -> None:
    suite, history = _suite(tmp_path), tmp_path / "history"
    done = _add(suite, history, "2026-11-23-r000001-a1")
    assert done.returncode == 0, done.stderr
    night = history / "nights" / "2026-11-23-r000001-a1"
    kept = sorted(str(p.relative_to(night)) for p in night.rglob("*") if p.is_file())
    assert kept == [
        "scenario-a/history.parquet/f=send/part-0.parquet",
        "scenario-a/results.json",
        "scenario-a/run.json",
        "suite-summary.json",
    ]


def test_the_newest_nights_stay_in_the_tree(tmp_path: Path) -> None:
    suite, history = _suite(tmp_path), tmp_path / "history"
    for n in range(1, 5):
        assert _add(suite, history, f"2026-11-2{n}-r00000{n}-a1", "2").returncode == 0
    assert sorted(p.name for p in (history / "nights").iterdir()) == [
        "2026-11-23-r000003-a1",
        "2026-11-24-r000004-a1",
    ]


def test_a_night_is_added_once_and_never_empty(tmp_path: Path) -> None:
    suite, history = _suite(tmp_path), tmp_path / "history"
    assert _add(suite, history, "n1").returncode == 0
    again = _add(suite, history, "n1")
    assert again.returncode == 1 and "added once" in again.stderr
    empty = _add(suite / "scenario-b", history, "n2")
    assert empty.returncode == 1 and "kchaos export" in empty.stderr
    assert not (history / "nights" / "n2").exists()


def test_bad_arguments(tmp_path: Path) -> None:
    assert _add(tmp_path, tmp_path, "n", "0").returncode == 3
    assert _add(tmp_path, tmp_path, "n", "x").returncode == 3
