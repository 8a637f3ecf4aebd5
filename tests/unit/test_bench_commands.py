"""The benchmarks are `kchaos bench ...` commands, not tests: each is listed, and the
checker's runs end to end at a tiny size. Nothing here asserts a time or a ratio."""

from __future__ import annotations

from pathlib import Path

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
