"""The run directory's contract, owned in one place (``../shared/docs/history-format.md``).

Writers (the runner, the pytest plugin, the synthetic generators) and readers (checker,
reports, Spark job, matrix and suite pages) import what a run directory holds from here.
:class:`RunDir` (:mod:`kchaos.harness.rundir.rundir`) is the way in: every file of a run
directory, its path, its reader and its writer. Behind it:

* :mod:`kchaos.harness.rundir.names`: every file's name, one constant each; no module
  outside this package spells one (a unit test scans the code for them).
* :mod:`kchaos.harness.rundir.files`: the one atomic write (:func:`atomic_write`), the
  one "make it JSON" helper (:func:`jsonable`), the JSON object and JSON-lines readers.
* :mod:`kchaos.harness.rundir.anomalies`: the anomaly vocabulary and what each kind does
  to a verdict.
* :mod:`kchaos.harness.rundir.runjson`: ``run.json``, one typed model (its JSON Schema is
  package data), one reader, one writer.
* :mod:`kchaos.harness.rundir.schemagen`: JSON Schema from frozen dataclasses, how
  run.json's and the scenario file's published schemas follow from their models.
* :mod:`kchaos.harness.rundir.history`: ``history.jsonl``'s event names and its one
  streaming reader; :mod:`kchaos.harness.rundir.history_writer` its one writer (with the
  scribe process, :mod:`kchaos.harness.rundir.scribe`) and the in-memory sinks.
* :mod:`kchaos.harness.rundir.parquet`: ``history.parquet``, the one DuckDB conversion
  of the history to Parquet, written atomically.
* :mod:`kchaos.harness.rundir.controller`: ``controller.jsonl``'s line types and reader.
* :mod:`kchaos.harness.rundir.results`: ``results.json`` with the checker's series the
  reports plot (fault windows, offline windows, time to full ISR).
* :mod:`kchaos.harness.rundir.expect`: did a run end as its ``expect`` block says
  (run.json's ``expect`` against results.json), and the exit code that follows.
* :mod:`kchaos.harness.rundir.prometheus`: ``prometheus.json``'s format.
* :mod:`kchaos.harness.rundir.where`: ``file:line: field: what`` for the line readers.

This package depends on nothing else in kchaos but :mod:`kchaos.harness.errors`
(docs/architecture.md, "The run-directory package").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kchaos.harness.rundir.rundir import RunDir

__all__ = ["RunDir"]


def __getattr__(name: str) -> Any:
    # RunDir is loaded on first use: it brings in the JSON Schema validator and the history
    # writer, which the small modules here (the anomaly names, the history reader that the
    # Spark job loads) do not need.
    if name == "RunDir":
        from kchaos.harness.rundir.rundir import RunDir

        return RunDir
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
