"""The command registry: every sub-command named in the listing, lazily imported."""

from __future__ import annotations

import subprocess
import sys

from kchaos.cli import main as cli
from kchaos.harness.errors import ConfigError, HistoryError, KchaosError


def test_help_lists_every_command_without_importing_them() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import sys; from kchaos.cli.main import main; main(['--help'])"],
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
            "from kchaos.cli import main as cli\n"
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


def test_options_several_commands_take_read_alike() -> None:
    """--out, --set, --kafka-version... come from kchaos.cli.options: one type and
    wording everywhere, with only what differs (e.g. where --out defaults to) per command."""
    import click

    names = ("run", "suite", "matrix", "soak", "shrink", "replay", "validate")
    options: dict[str, dict[str, click.Option]] = {}
    for name in names:
        for param in cli._load(cli.COMMANDS[name][0]).params:
            if isinstance(param, click.Option):
                options.setdefault(param.opts[0], {})[name] = param
    outs = options["--out"]
    assert set(outs) == {"run", "suite", "matrix", "soak", "shrink", "replay"}
    for out in outs.values():
        assert isinstance(out.type, click.Path) and not out.type.file_okay
        assert out.help and out.help.startswith("Output directory (default: runs/")
    assert "runs/sre-NAME-TIME" in str(outs["suite"].help)  # the SRE validation's own
    assert len({o.help for o in outs.values()}) == 5  # run and replay: runs/RUN_ID
    sets = options["--set"]
    assert set(sets) == {"run", "suite", "matrix", "validate"}
    for name, opt in sets.items():
        assert opt.name == "overrides" and opt.multiple and opt.metavar == "KEY=VALUE"
        assert "by dotted path, e.g. workload.duration=30" in str(opt.help), name
        every = "of every scenario" in str(opt.help)
        assert every == (name in ("suite", "matrix")), name
    versions = options["--kafka-version"]
    assert versions["matrix"].metavar == "V1,V2,..."  # a list, its own option
    for name in ("run", "suite", "soak", "replay"):
        assert versions[name].metavar == "VERSION" and str(versions[name].help).startswith(
            "Kafka release"
        ), name
    assert versions["soak"].default == "4.4.0"
    assert options["--quiet"]["run"].help == options["--quiet"]["replay"].help
    config = options["--broker-config"]
    assert config["run"].help == config["validate"].help
    prometheus = options["--prometheus"]
    assert set(prometheus) == {"run", "suite", "matrix", "soak", "shrink", "replay"}
    assert len({(o.is_flag, o.help) for o in prometheus.values()}) == 1


def test_run_passes_prometheus_to_the_runner(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Each batch command's own tests check theirs (test_run_suite, test_matrix, ...)."""
    from types import SimpleNamespace

    from click.testing import CliRunner

    import kchaos.harness.run
    from kchaos.cli.scenario import run_cmd

    asked: list[object] = []

    def run(sc, **kw):  # type: ignore[no-untyped-def]
        asked.append(kw.get("prometheus"))
        return SimpleNamespace(exit_code=0)

    monkeypatch.setattr(kchaos.harness.run, "run_scenario", run)
    for flag in ([], ["--prometheus"]):
        args = ["smoke", "--out", str(tmp_path / "r"), *flag]
        result = CliRunner().invoke(run_cmd, args, standalone_mode=False)
        assert result.exception is None, result.output
    assert asked == [False, True]
