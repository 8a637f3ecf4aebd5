"""The run directory's contract, owned in one place (``../shared/docs/history-format.md``).

Writers (the runner, the pytest plugin, the synthetic generators) and readers (checker,
reports, Spark job, matrix and suite pages) import what a run directory holds from here:

* :mod:`kchaos.harness.rundir.anomalies`: the anomaly vocabulary and what each kind does
  to a verdict.
* :mod:`kchaos.harness.rundir.runjson`: ``run.json``, one typed model and one reader.

This package depends on nothing else in kchaos but :mod:`kchaos.harness.errors`.
"""
