"""The run directory's contract, owned in one place (``../shared/docs/history-format.md``).

Writers (the runner, the pytest plugin, the synthetic generators) and readers (checker,
reports, Spark job, matrix and suite pages) import what a run directory holds from here:

* :mod:`kchaos.harness.rundir.anomalies`: the anomaly vocabulary and what each kind does
  to a verdict.
* :mod:`kchaos.harness.rundir.runjson`: ``run.json``, one typed model (its JSON Schema is
  package data), one reader, one writer.
* :mod:`kchaos.harness.rundir.history`: ``history.jsonl``'s event names and its one
  streaming reader.
* :mod:`kchaos.harness.rundir.controller`: ``controller.jsonl``'s line types and reader.
* :mod:`kchaos.harness.rundir.results`: ``results.json`` with the checker's series the
  reports plot (fault windows, offline windows, time to full ISR).
* :mod:`kchaos.harness.rundir.expect`: did a run end as its ``expect`` block says
  (run.json's ``expect`` against results.json), and the exit code that follows.
* :mod:`kchaos.harness.rundir.where`: ``file:line: field: what`` for the line readers.

This package depends on nothing else in kchaos but :mod:`kchaos.harness.errors`
(docs/architecture.md, "The run-directory package").
"""
