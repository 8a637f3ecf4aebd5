"""``kchaos check RUN_DIR``: exit codes, results.json, summary, run.json settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from checker_hist import H
from click.testing import CliRunner

from kchaos.cli.check import check_cmd
from kchaos.harness.histgen import generate_run
from kchaos.harness.rundir.rundir import RunDir


def _run(run_dir: Path) -> tuple[int, str]:
    result = CliRunner().invoke(check_cmd, [str(run_dir)], standalone_mode=False)
    if result.exception is not None:
        raise result.exception
    return result.return_value, result.output


def test_valid_invalid_unknown(tmp_path: Path) -> None:
    for inject, code, verdict in (
        ((), 0, True),
        (("lost-write",), 1, False),
        (("unseen",), 2, "unknown"),
    ):
        run_dir = tmp_path / f"run-{code}"
        generate_run(run_dir, events=3000, inject=inject, seed=code)
        rc, out = _run(run_dir)
        assert rc == code, out
        data = json.loads((run_dir / "results.json").read_text())
        assert data["valid"] == verdict
        assert set(data["anomalies"]) == set(inject)
        for a in data["anomalies"].values():
            assert a["count"] >= 1 and a["examples"]
            ex = a["examples"][0]
            assert {"value", "topic", "partition", "offset", "index"} <= set(ex)
        assert {"history", "durability", "availability"} <= set(data["stats"])
        assert out.splitlines()[0].startswith({0: "VALID", 1: "INVALID", 2: "UNKNOWN"}[code])


def test_run_json_thresholds_make_it_invalid(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    generate_run(
        run_dir, events=3000, inject=("offline",), run_json={"checks": {"max_offline_seconds": 0.0}}
    )
    rc, out = _run(run_dir)
    assert rc == 1 and "max_offline_seconds: FAIL" in out


def test_unclean_election_allowed_by_run_json(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    generate_run(
        run_dir,
        events=3000,
        inject=("unclean-election",),
        run_json={"broker_config": {"unclean.leader.election.enable": "true"}},
    )
    assert _run(run_dir)[0] == 0


def test_exit_3_through_the_real_command(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    lines = h.write(run_dir / "history.jsonl").read_bytes().splitlines()
    (run_dir / "history.jsonl").write_bytes(lines[0] + b"\nnot json\n" + lines[1] + b"\n")
    proc = subprocess.run(
        [sys.executable, "-m", "kchaos.cli", "check", str(run_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 3, proc.stderr
    assert "history.jsonl:2: not JSON" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (run_dir / "results.json").exists()


def test_exit_3_for_missing_dir_and_bad_run_json(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kchaos.cli", "check", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 3 and "no such run directory" in proc.stderr
    run_dir = tmp_path / "run"
    generate_run(run_dir, events=500)
    (run_dir / "run.json").write_text('{"checks": {"max_offline_seconds": "soon"}}')
    proc = subprocess.run(
        [sys.executable, "-m", "kchaos.cli", "check", str(run_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 3 and "checks.max_offline_seconds" in proc.stderr


def test_exit_codes_of_the_real_command(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    generate_run(run_dir, events=2000, inject=("duplicate",))
    proc = subprocess.run(
        [sys.executable, "-m", "kchaos.cli", "check", str(run_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "duplicate: 1" in proc.stdout


def test_results_json_is_written_by_run_dir_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one writer of results.json (issue 23): the checker hands its results to RunDir
    written: list[tuple[Path, dict]] = []
    real = RunDir.write_results

    def spy(self: RunDir, data: dict) -> None:
        written.append((self.path, dict(data)))
        real(self, data)

    monkeypatch.setattr(RunDir, "write_results", spy)
    run_dir = tmp_path / "run"
    generate_run(run_dir, events=500, seed=4)
    rc, _ = _run(run_dir)
    assert rc == 0
    assert [path for path, _ in written] == [run_dir]
    assert json.loads(RunDir(run_dir).results.read_text()) == json.loads(
        orjson.dumps(written[0][1])
    )
