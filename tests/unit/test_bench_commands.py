"""The benchmarks are `kchaos bench ...` commands, not tests: each is listed, and the
checker's runs end to end at a tiny size. Nothing here asserts a time or a ratio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kchaos.cli.main import BENCH_COMMANDS, cli


def test_every_benchmark_is_a_bench_command() -> None:
    result = CliRunner().invoke(cli, ["bench", "--help"])
    assert result.exit_code == 0, result.output
    assert set(BENCH_COMMANDS) == {"produce", "cluster", "check", "analyze", "faults"}
    for name in BENCH_COMMANDS:
        assert f"  {name} " in result.output


def test_bench_check_runs_small_and_reports_a_valid_verdict(tmp_path: Path) -> None:
    args = ["bench", "check", "--events", "3000", "--repeat", "1", "--memory-events", "2000"]
    result = CliRunner().invoke(cli, [*args, "--dir", str(tmp_path)], standalone_mode=False)
    assert result.exception is None, result.output
    assert result.return_value == 0
    out = result.output
    assert "; verdict True" in out, out
    assert "ratio check/json: " in out
    assert "check of 2000 events: " in out and "peak RSS" in out and "verdict True" in out


def test_bench_check_transactional_runs_small_side_by_side(tmp_path: Path) -> None:
    args = ["bench", "check", "--transactional", "--events", "3000", "--repeat", "1"]
    result = CliRunner().invoke(cli, [*args, "--dir", str(tmp_path)], standalone_mode=False)
    assert result.exception is None, result.output
    out = result.output
    # both histories were checked and found valid; a ratio is printed, not judged here
    assert out.count("; verdict True") == 2, out
    assert "transactional:" in out and "plain        :" in out
    assert "ratio transactional/plain per line: " in out and "per value: " in out


def test_the_transactional_ratios_are_per_line_per_mb_and_per_value() -> None:
    from kchaos.bench.check import Side, TxnBenchResult, txn_report

    r = TxnBenchResult(
        txn=Side(lines=1000, mb=20.0, values=2000, seconds=3.0, cpu=2.9, verdict=True),
        plain=Side(lines=500, mb=5.0, values=500, seconds=1.0, cpu=1.0, verdict=True),
    )
    assert (r.ratio, r.per_mb, r.per_value) == pytest.approx((1.5, 0.75, 0.75))
    text = "\n".join(txn_report(r))
    assert r.cpu_ratio == pytest.approx((2.9 / 1000) / (1.0 / 500))
    assert "per line: 1.50 (cpu 1.45); goal <= 1.3 NOT met" in text and "per MB: 0.75" in text


def test_bench_check_fails_when_the_verdict_is_not_the_generated_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checker that calls the valid generated history invalid: the bench must say so
    and exit non-zero, not print a ratio and exit 0."""
    from types import SimpleNamespace

    from kchaos.bench import check

    real = check.check_history

    def wrong_checker(path: Path) -> object:
        return SimpleNamespace(valid=False, stats=real(path).stats)

    monkeypatch.setattr(check, "check_history", wrong_checker)
    args = ["bench", "check", "--events", "2000", "--repeat", "1", "--dir", str(tmp_path)]
    result = CliRunner().invoke(cli, args, standalone_mode=False)
    assert result.exception is None, result.output
    assert result.return_value == 1
    assert "; verdict False" in result.output
    assert "wrong verdict: the check of the history said False" in result.output
    assert "the generated history is True" in result.output


def test_a_verdict_is_wrong_only_when_it_differs_from_the_generated_one() -> None:
    from kchaos.bench.check import wrong_verdict

    assert wrong_verdict("h", True, True) is None
    assert wrong_verdict("h", "True", True) is None  # the child process prints it
    assert wrong_verdict("h", "unknown", "unknown") is None
    assert wrong_verdict("h", True, False) is not None
    message = wrong_verdict("the history", "unknown", True)
    assert message == (
        "wrong verdict: the check of the history said unknown, the generated history is True"
    )


def _bench_analyze_without_spark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shift: dict[str, int]
) -> tuple[Any, list[Any]]:
    """``kchaos bench analyze`` end to end on a small generated run, the Spark session and
    job replaced by the checker (its counts, plus ``shift``): what the bench does around
    the job (the Parquet copy, DuckDB on both inputs, the comparison) is real."""
    from types import SimpleNamespace

    from kchaos.harness.analysis import job, session
    from kchaos.harness.analysis.runs import resolve_runs
    from kchaos.harness.checker import check_history
    from kchaos.harness.rundir.rundir import RunDir

    seen: list[Any] = []

    def fake_job(runs: list[Path], **_: Any) -> Any:
        run = resolve_runs(runs)[0]
        seen.append(run)
        found = check_history(RunDir(run.path).history).anomalies
        anomalies = {k: {"count": a.count + shift.get(k, 0)} for k, a in found.items()}
        for kind, n in shift.items():
            anomalies.setdefault(kind, {"count": n})
        summary = {"anomalies": anomalies}
        return SimpleNamespace(runs=[SimpleNamespace(run=run, summary=summary)], seconds={})

    monkeypatch.setattr(session, "start_session", lambda *a, **k: SimpleNamespace(stop=list))
    monkeypatch.setattr(job, "run_job", fake_job)
    args = ["bench", "analyze", "--events", "3000", "--dir", str(tmp_path)]
    return CliRunner().invoke(cli, args, standalone_mode=False), seen


def test_bench_analyze_compares_every_kind_on_the_runs_parquet_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, seen = _bench_analyze_without_spark(tmp_path, monkeypatch, {})
    assert result.exception is None, result.output
    assert result.return_value == 0, result.output
    assert [r.fmt for r in seen] == ["parquet"]  # the job read the run-end copy
    assert (seen[0].path / "history.parquet").is_dir()
    out = result.output
    assert "kchaos analyze (whole job, parquet):" in out
    assert (
        "duckdb all kinds, Parquet (2 threads):" in out and "duckdb all kinds, JSON lines:" in out
    )
    assert "ratio analyze / duckdb all kinds:" in out and "(goal <= 3)" in out
    assert "counts: lost-write 1, uncommitted-read 0, aborted-read 0, duplicate 0" in out
    assert "lost-write 1 injected): True" in out


def test_bench_analyze_fails_when_one_kind_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, _ = _bench_analyze_without_spark(tmp_path, monkeypatch, {"duplicate": 1})
    assert result.exception is None, result.output
    assert result.return_value == 1
    assert "injected): False" in result.output
    assert "differs: duplicate: {'analyze': 1, 'duckdb_parquet': 0," in result.output


def test_bench_analyze_requires_the_injected_lost_writes() -> None:
    from kchaos.bench.analyze import disagreements

    same = {"lost-write": 2, "unseen": 0}
    report = {"kinds": {"analyze": same, "duckdb_parquet": same}, "expected_lost_write": 1}
    assert disagreements(report) == ["lost-write: 2 found, 1 injected"]
