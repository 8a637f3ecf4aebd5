"""A batch (suite, matrix, soak) whose run stands but whose reports failed: the batch page
lists it as a failure instead of carrying a missing report into its tables."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich.console import Console

from kchaos.harness.run.orchestrate import RunResult
from kchaos.harness.run.suite import SuiteEntry, run_entries
from kchaos.harness.scenario import library


def test_a_run_without_its_report_is_a_failure_of_the_batch(tmp_path: Path) -> None:
    sc = library.load("smoke")
    written: list[tuple[list[Any], list[Any]]] = []

    def run(sc: Any, *, out: Path, **_: Any) -> RunResult:
        return RunResult(out.name, out, 1, {}, {}, report=None)

    code = run_entries(
        tmp_path,
        [SuiteEntry("a", sc)],
        lambda reports, failures: written.append((list(reports), list(failures))),
        console=Console(file=io.StringIO()),
        run=run,
    )
    assert code == 1
    reports, failures = written[-1]
    assert reports == []
    assert [f.error for f in failures] == ["the run's reports could not be written"]
