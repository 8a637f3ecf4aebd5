"""``kchaos suite``: several scenarios one after another, one combined report."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from harness.errors import ConfigError, KchaosError
from harness.paths import runs_dir
from harness.run.orchestrate import RunInterrupted, run_scenario
from harness.scenario.loader import load_scenario
from harness.scenario.model import ExpectConfig, Scenario
from reports.build import RunReport
from reports.console import print_suite
from reports.suite import SuiteFailure, write_suite_reports


def run_suite(
    name: str,
    files: Sequence[Path],
    *,
    out: Path | None = None,
    overrides: Sequence[str] = (),
    broker_config: Path | None = None,
    kafka_version: str | None = None,
    seed: int | None = None,
    console: Console | None = None,
    command: list[str] | None = None,
) -> int:
    """Run every scenario; 0 when all ended as expected, else the worst exit code."""
    console = console or Console()
    suite_dir = (
        out or runs_dir() / f"suite-{name.replace('/', '_')}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    if suite_dir.exists() and any(suite_dir.iterdir()):
        raise ConfigError("output directory exists and is not empty", file=str(suite_dir))
    suite_dir.mkdir(parents=True, exist_ok=True)
    # Validate everything first: a typo in the last file should not cost an hour of runs.
    scenarios = [
        load_scenario(
            f,
            overrides=overrides,
            broker_config=broker_config,
            kafka_version=kafka_version,
            seed=seed,
        )
        for f in files
    ]
    if broker_config is not None:
        scenarios = [sre_judged(sc) for sc in scenarios]
    reports: list[RunReport] = []
    failures: list[SuiteFailure] = []
    codes: list[int] = []
    for i, sc in enumerate(scenarios, 1):
        console.rule(f"[{i}/{len(scenarios)}] {sc.name}")
        run_dir = suite_dir / sc.name
        try:
            result = run_scenario(sc, out=run_dir, console=console, command=command)
        except RunInterrupted:
            failures.append(SuiteFailure(sc.name, "interrupted", str(run_dir)))
            _write(suite_dir, name, reports, failures, broker_config, console)
            raise
        except KchaosError as exc:
            console.print(f"[red]{sc.name}: {exc}[/]")
            failures.append(SuiteFailure(sc.name, str(exc), str(run_dir)))
            codes.append(exc.exit_code)
            continue
        except Exception as exc:  # noqa: BLE001 - a harness bug: record it, run the rest
            console.print_exception()
            failures.append(SuiteFailure(sc.name, f"{type(exc).__name__}: {exc}", str(run_dir)))
            codes.append(KchaosError.exit_code)
            continue
        reports.append(result.report)
        codes.append(result.exit_code)
    _write(suite_dir, name, reports, failures, broker_config, console)
    return 0 if all(c == 0 for c in codes) else max(codes)


def sre_judged(sc: Scenario) -> Scenario:
    """SRE config validation: the question is "does my configuration survive this
    incident?", so every scenario must end valid (negative controls included: lost writes
    under your configuration are a FAIL, not the detection the library expects)."""
    allowed = tuple(k for k in sc.expect.allowed if k in ("offline",)) or ("offline",)
    return replace(
        sc,
        expect=ExpectConfig(valid=True, anomalies=(), allowed=allowed),
        tags=(*sc.tags, "sre-validation"),
    )


def _write(
    suite_dir: Path,
    name: str,
    reports: list[RunReport],
    failures: list[SuiteFailure],
    broker_config: Path | None,
    console: Console,
) -> None:
    title = f"kchaos suite {name}"
    paths = write_suite_reports(
        suite_dir,
        reports,
        failures,
        title=title,
        broker_config=None if broker_config is None else str(broker_config),
    )
    rows = [r.summary for r in reports]
    rows += [
        {"scenario": f.scenario, "verdict": "error", "expected": False, "run_id": ""}
        for f in failures
    ]
    print_suite(rows, console, title)
    console.print(f"suite report: {paths['html']}\njunit: {paths['junit']}")
