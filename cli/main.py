"""The ``kchaos`` command.

Each sub-command lives in a module of ``kchaos.cli`` and is imported only when used, so
``kchaos check`` never loads Docker or Spark. The table below is the whole registry.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from kchaos.harness.errors import KchaosError
from kchaos.harness.rundir.names import RUN_JSON

# command name -> ("module:attribute" of a click.Command, one-line help for the listing)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("kchaos.cli.scenario:run_cmd", "Run one scenario against a real cluster."),
    "suite": ("kchaos.cli.scenario:suite_cmd", "Run several scenarios, one report."),
    "matrix": (
        "kchaos.cli.batch:matrix_cmd",
        "Run scenarios on several Kafka versions and seeds, one page.",
    ),
    "merge": (
        "kchaos.cli.batch:merge_cmd",
        "Join the shards of a matrix, suite or soak into one page.",
    ),
    "replay": (
        "kchaos.cli.batch:replay_cmd",
        f"Run a stored run again from its {RUN_JSON}.",
    ),
    "shrink": (
        "kchaos.cli.batch:shrink_cmd",
        "Find a smaller fault schedule that still fails.",
    ),
    "soak": (
        "kchaos.cli.batch:soak_cmd",
        "Seeded random fault schedules on a safe config: count false alarms.",
    ),
    "scenarios": ("kchaos.cli.scenario:scenarios_cmd", "List the incident library."),
    "validate": ("kchaos.cli.scenario:validate_cmd", "Check a scenario file."),
    "known-bugs": (
        "kchaos.cli.scenario:known_bugs_cmd",
        "The known Kafka bugs that affect a release, with catch rates.",
    ),
    "report": ("kchaos.cli.reports:report_cmd", "Write the reports of a run directory."),
    "check": ("kchaos.cli.check:check_cmd", "Judge a run's history."),
    "analyze": ("kchaos.cli.analysis:analyze_cmd", "Spark loss analysis of runs."),
    "export": ("kchaos.cli.analysis:export_cmd", "Write a Parquet copy of a history."),
    "cleanup": ("kchaos.cli.cleanup:cleanup_cmd", "Heal and remove what runs left."),
    "cluster": (
        "kchaos.cli.cluster:cluster_cmd",
        "Bring a cluster up or down.",
    ),
    "images": ("kchaos.cli.images:images_cmd", "Build or fetch the kchaos images."),
}

BENCH_COMMANDS: dict[str, tuple[str, str]] = {
    "produce": ("kchaos.cli.bench:produce_cmd", "Recording producer vs perf-test."),
    "cluster": ("kchaos.cli.bench:bench_cluster_cmd", "Cluster start and set-up time."),
    "check": ("kchaos.cli.bench:bench_check_cmd", "Checker vs plain JSON parsing."),
    "analyze": ("kchaos.cli.bench:bench_analyze_cmd", "Spark job vs DuckDB, same kinds."),
    "faults": ("kchaos.cli.bench:bench_faults_cmd", "Nemesis start/stop lateness vs schedule."),
}


def _load(target: str) -> click.Command:
    module_name, attr = target.split(":")
    module = importlib.import_module(module_name)
    command = getattr(module, attr)
    if not isinstance(command, click.Command):
        raise TypeError(f"{target} is not a click command")
    return command


class LazyGroup(click.Group):
    """A click group whose sub-commands are imported on first use."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._lazy))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._lazy:
            return _load(self._lazy[cmd_name][0])
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # List from the registry's own help lines: `kchaos --help` imports nothing.
        rows = [(name, help_) for name, (_, help_) in sorted(self._lazy.items())]
        rows += [
            (name, cmd.get_short_help_str())
            for name, cmd in sorted(self.commands.items())
            if name not in self._lazy
        ]
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))


@click.group(cls=LazyGroup, lazy=COMMANDS)
@click.version_option(package_name="kchaos")
def cli() -> None:
    """kchaos: chaos testing for Apache Kafka with real brokers and real faults."""


@cli.group(cls=LazyGroup, lazy=BENCH_COMMANDS)
def bench() -> None:
    """Benchmarks, each reported as a ratio to a baseline run side by side."""


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: known errors become one clear line and an exit code.

    A command returns an int to choose its exit code; otherwise success exits 0.
    """
    try:
        result = cli.main(args=argv, prog_name="kchaos", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(3)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except KchaosError as exc:
        click.echo(f"kchaos: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    # A command may return its exit code (e.g. check: 0 valid, 1 invalid, 2 unknown).
    sys.exit(result if isinstance(result, int) else 0)
