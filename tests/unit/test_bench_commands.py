"""The benchmarks are `kchaos bench ...` commands, not tests: each is listed, and the
checker's runs end to end at a tiny size. Nothing here asserts a time or a ratio."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kchaos.harness.cli import BENCH_COMMANDS, cli


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
