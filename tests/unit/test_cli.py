"""The command registry: every sub-command named in the listing, lazily imported."""

from __future__ import annotations

import subprocess
import sys

from kchaos.harness import cli
from kchaos.harness.errors import ConfigError, HistoryError, KchaosError


def test_help_lists_every_command_without_importing_them() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import sys; from kchaos.harness.cli import main; main(['--help'])"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    for name in cli.COMMANDS:
        assert name in out.stdout
    # the listing must not pull in Docker, Spark or Kafka clients
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from kchaos.harness import cli\n"
            "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('docker', 'pyspark', 'confluent_kafka') if m in sys.modules]\n"
            "print('heavy=' + ','.join(heavy))",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.stdout.strip().splitlines()[-1] == "heavy=", probe.stdout


def test_known_error_prints_one_line_and_exit_code(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import click

    @click.command()
    def boom() -> None:
        raise ConfigError("must be a positive integer", file="s.yaml", line=7, field="brokers")

    monkeypatch.setitem(cli.cli.commands, "boom", boom)  # type: ignore[attr-defined]
    try:
        cli.main(["boom"])
    except SystemExit as exc:
        assert exc.code == 3
    else:  # pragma: no cover - main always exits
        raise AssertionError("main did not exit")
    err = capsys.readouterr().err
    assert err.strip() == "kchaos: s.yaml:7: brokers: must be a positive integer"
    assert "Traceback" not in err


def test_command_return_value_is_the_exit_code(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import click

    @click.command()
    def verdict() -> int:
        return 2

    monkeypatch.setitem(cli.cli.commands, "verdict", verdict)  # type: ignore[attr-defined]
    try:
        cli.main(["verdict"])
    except SystemExit as exc:
        assert exc.code == 2


def test_error_tree_exit_codes() -> None:
    assert issubclass(HistoryError, KchaosError)
    assert HistoryError("x").exit_code == 3
    assert KchaosError("x").exit_code == 4
    assert str(HistoryError("not JSON", file="h.jsonl", line=3)) == "h.jsonl:3: not JSON"
