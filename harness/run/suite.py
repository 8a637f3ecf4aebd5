"""``kchaos suite``: several scenarios one after another, one combined report."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from kchaos.harness.errors import ConfigError, KchaosError, RunInterrupted
from kchaos.harness.paths import runs_dir
from kchaos.harness.run import shard as shards
from kchaos.harness.run.orchestrate import run_scenario
from kchaos.harness.run.progress import Batch, each, run_guess
from kchaos.harness.run.shard import BatchLog, ShardSpec
from kchaos.harness.rundir.expect import worst_exit
from kchaos.harness.rundir.scenario_model import Scenario
from kchaos.harness.scenario.loader import load_scenario
from kchaos.reports.build import RunReport
from kchaos.reports.console import make_console, print_batch
from kchaos.reports.suite import SuiteFailure, write_suite_reports


@dataclass(frozen=True)
class SuiteEntry:
    """One run of a suite: ``label`` names its directory under the suite's (and, where
    several runs share a scenario, tells them apart)."""

    label: str
    scenario: Scenario
    extra: Mapping[str, Any] | None = None  # top-level keys added to the run's run.json


RunFn = Callable[..., Any]  # run_scenario's: (sc, *, out, console, command, prometheus, ...)


def suite_dir_for(name: str, out: Path | None, prefix: str = "suite") -> Path:
    """The suite's output directory: ``out``, or runs/PREFIX-NAME-TIME; it must be new or
    empty."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    suite_dir = out or runs_dir() / f"{prefix}-{name.replace('/', '_')}-{stamp}"
    if suite_dir.exists() and any(suite_dir.iterdir()):
        raise ConfigError("output directory exists and is not empty", file=str(suite_dir))
    return suite_dir


def run_suite(
    name: str,
    files: Sequence[Path],
    *,
    out: Path | None = None,
    overrides: Sequence[str] = (),
    kafka_version: str | None = None,
    seed: int | None = None,
    console: Console | None = None,
    command: list[str] | None = None,
    prometheus: bool = False,
    shard: ShardSpec | None = None,
    durations: Path | None = None,
    dry_run: bool = False,
    run: RunFn | None = None,
) -> int:
    """Run every scenario, each judged by its own ``expect``; 0 when all ended as
    expected, else the worst exit code (``run``: instead of :func:`run_scenario`, for
    tests). ``shard``, ``durations``, ``dry_run``: as
    :func:`kchaos.harness.run.matrix.run_matrix`'s. (With broker configs, SRE validation:
    :func:`kchaos.harness.run.sre.run_validation`.)"""
    console = console or make_console()
    # Validate everything first: a typo in the last file should not cost an hour of runs.
    scenarios = [
        load_scenario(
            f,
            overrides=overrides,
            kafka_version=kafka_version,
            seed=seed,
        )
        for f in files
    ]
    split = shards.split("suite", [SuiteEntry(sc.name, sc) for sc in scenarios], shard, durations)
    if dry_run:
        shards.print_plan(console, split)
        return 0
    suite_dir = suite_dir_for(name, out)
    suite_dir.mkdir(parents=True, exist_ok=True)
    mine = name if split.spec.count == 1 else f"{name} (shard {split.spec})"

    def write(reports: list[RunReport], failures: list[SuiteFailure]) -> None:
        write_suite(suite_dir, mine, reports, failures, console)

    return run_entries(
        suite_dir,
        split.chosen,
        write,
        console=console,
        command=command,
        run=run,
        prometheus=prometheus,
        log=shards.BatchLog(suite_dir, split, {"title": name}, durations),
    )


def run_entries(
    suite_dir: Path,
    entries: Sequence[SuiteEntry],
    write: Callable[[list[RunReport], list[SuiteFailure]], None],
    *,
    console: Console,
    command: list[str] | None = None,
    run: RunFn | None = None,
    prometheus: bool = False,
    log: BatchLog | None = None,
    parallel: int = 1,
    start: Any = None,
) -> int:
    """Run the entries one after another, each on a fresh cluster, into
    ``suite_dir/LABEL``; ``write(reports, failures)`` at the end (also when interrupted).
    ``prometheus``: a Prometheus server for each run; ``log``: shard.json and the
    durations file, kept as runs end. 0 when every run ended as expected, else the worst
    exit code. ``parallel`` > 1: up to that many at once, each in a process of its own
    (:func:`kchaos.harness.run.parallel.run_entries_parallel`; ``start``: its cell
    starter, for tests); the outputs are the same."""
    if parallel != 1:
        from kchaos.harness.run.parallel import run_entries_parallel

        return run_entries_parallel(
            suite_dir,
            entries,
            write,
            console=console,
            command=command,
            prometheus=prometheus,
            log=log,
            parallel=parallel,
            start=start,
        )
    run = run or run_scenario
    if log is not None:
        log.begin()
    reports: list[RunReport] = []
    failures: list[SuiteFailure] = []
    codes: list[int] = []
    b = Batch(len(entries), expected=[run_guess(e.scenario.workload.duration) for e in entries])
    for i, entry in each(b, entries, lambda e: e.label):
        sc = entry.scenario
        console.rule(f"[{i}/{len(entries)}] {entry.label}: {b.times()}")
        run_dir = suite_dir / entry.label
        started = time.monotonic()
        gone = len(failures)
        try:
            more: dict[str, Any] = {} if entry.extra is None else {"extra": dict(entry.extra)}
            result = run(
                sc, out=run_dir, console=console, command=command, prometheus=prometheus, **more
            )
        except RunInterrupted:
            failures.append(failure(sc, run_dir, "interrupted"))
            write(reports, failures)
            raise
        except KchaosError as exc:
            console.print(f"[red]{entry.label}: {exc}[/]")
            failures.append(failure(sc, run_dir, str(exc)))
            codes.append(exc.exit_code)
        except Exception as exc:  # noqa: BLE001 - a harness bug: record it, run the rest
            console.print_exception()
            failures.append(failure(sc, run_dir, f"{type(exc).__name__}: {exc}"))
            codes.append(KchaosError.exit_code)
        else:
            codes.append(result.exit_code)
            if result.report is None:  # the run stands, but its reports failed (printed above)
                failures.append(failure(sc, run_dir, "the run's reports could not be written"))
            else:
                reports.append(result.report)
        if log is not None:
            error = failures[-1].error if len(failures) > gone else None
            log.ran(entry, time.monotonic() - started, codes[-1], error)
    write(reports, failures)
    code = worst_exit(codes)
    if log is not None:
        log.end(code)
    return code


def failure(sc: Scenario, run_dir: Path, error: str) -> SuiteFailure:
    """A run that left no report, as the batch page lists it."""
    return SuiteFailure(
        sc.name, error, str(run_dir), kafka_version=sc.cluster.kafka_version, seed=sc.seed
    )


def write_suite(
    suite_dir: Path,
    name: str,
    reports: list[RunReport],
    failures: list[SuiteFailure],
    console: Console,
    preface: Sequence[str] = (),
) -> None:
    """The suite's page, junit.xml and summary.json; ``preface``: HTML above the table."""
    title = f"kchaos suite {name}"
    paths = write_suite_reports(suite_dir, reports, failures, title=title, sections=preface)
    print_batch(console, title, reports, failures, paths)
