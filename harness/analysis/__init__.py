"""Spark loss analysis of kchaos runs (one run or many, embedded or on a cluster).

Public API: ``run_job`` (analyse run directories, write their outputs), ``export_parquet``
(a Parquet copy of a history), ``DATA_KINDS``. Imported lazily, so that
``python -m kchaos.harness.analysis.job`` runs the module once.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DATA_KINDS", "JobResult", "RunSummary", "export_parquet", "run_job"]

_HOMES = {
    "DATA_KINDS": "kchaos.harness.rundir.anomalies",
    "JobResult": "kchaos.harness.analysis.job",
    "RunSummary": "kchaos.harness.analysis.job",
    "run_job": "kchaos.harness.analysis.job",
    "export_parquet": "kchaos.harness.analysis.export",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(name)
    import importlib

    return getattr(importlib.import_module(_HOMES[name]), name)
